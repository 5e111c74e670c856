"""The tool registry: tool definitions loaded from YAML/JSON schema files.

Built-in tools live in `toolcore/tools/*.yaml`, one file per tool. A user adds tools by pointing
`tools.paths` at more files or folders; a file may hold one tool, a list of them, or an OpenAPI 3
document (one tool per operation, `toolcore.openapi`). The `generation` section of a file
(phrasings, slots) is read by data_gen; slot vocabularies live beside it in `vocab/` folders (see
`toolcore.vocab`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import yaml

from .errors import ToolkitError
from .openapi import is_openapi, openapi_tools
from .schema import Tool

BUILTIN_DIR = Path(__file__).parent / "tools"


def _load_file(path: Path) -> list[dict]:
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, json.JSONDecodeError, yaml.YAMLError) as e:
        raise ToolkitError(f"cannot read tool file: {e}".replace("\n", " "), file=str(path)) from e
    if is_openapi(data):
        return openapi_tools(data, file=str(path))
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    return data if isinstance(data, list) else [data]


def load_tools(path: str | Path) -> list[Tool]:
    """All tools in one schema file, or in every *.yaml / *.yml / *.json file of a folder."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    elif path.exists():
        files = [path]
    else:
        raise ToolkitError("tool schema path does not exist", file=str(path),
                           fix="point tools.paths at a .yaml/.json file or a folder of them")
    return [Tool.from_schema(d, source=str(f)) for f in files for d in _load_file(f)]


class ToolRegistry:
    """Name -> Tool. Later files may not silently redefine a tool: that is almost always a mistake."""

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        if tool.name in self._tools and not replace:
            raise ToolkitError(f"tool {tool.name!r} is defined twice (also in {self._tools[tool.name].source})",
                               file=tool.source, field="name", fix="rename one of them")
        self._tools[tool.name] = tool

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolkitError(f"unknown tool {name!r}", field="name",
                               fix=f"register it with a schema file; known tools: {', '.join(self.names)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def subset(self, names: Sequence[str]) -> list[Tool]:
        return [self[n] for n in names]


def load_registry(paths: Iterable[str | Path] = (), *, builtin: bool = True) -> ToolRegistry:
    """The built-in tools plus every tool in `paths`."""
    reg = ToolRegistry(load_tools(BUILTIN_DIR) if builtin else ())
    for p in paths:
        for t in load_tools(p):
            reg.add(t)
    return reg
