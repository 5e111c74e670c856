"""Evaluation suites: JSONL files, one case a line, in the hackathon's format.

Each line: `id`, `difficulty` (a free label, or none; easy / medium / hard are the levels the hackathon
score weighs), `messages` (OpenAI style), `tools` (function definitions offered, or names of
registered tools), `expected_calls` ([{"name", "arguments"}]).
Built-in suites are referred to by name (`hackathon30`); anything else is a path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .conversation import Conversation, Message, Part
from .errors import ToolkitError
from .files import read_jsonl
from .metric import LEVEL_WEIGHTS
from .registry import ToolRegistry, load_registry
from .schema import Tool, ToolCall

BUILTIN_SUITES = {p.stem: p for p in (Path(__file__).parent / "suites").glob("*.jsonl")}
# the levels the hackathon score weighs (toolcore.metric); a case may carry any other label, or none
DIFFICULTIES = tuple(LEVEL_WEIGHTS)
# built-in spoken suites: name -> (text suite spoken, SNRs in dB of the noisy copies; none = clean only).
# Synthesised on first use by data_gen.speech.suites, which the evaluator imports only for these names.
SPOKEN_SUITES = {"hackathon30_spoken": ("hackathon30", ()), "hackathon30_spoken_noisy": ("hackathon30", (20.0, 10.0, 5.0))}
# bump when the spoken suites' recipe (data_gen/speech/suites.py) changes: the cache folder name carries it
SPOKEN_SUITE_VERSION = 1


def spoken_suite_path(name: str, root: Path | None = None) -> Path:
    """Where a built-in spoken suite lives once `python -m data_gen.speech.suites` has synthesised it."""
    from .hub import cache_dir

    return (root or cache_dir() / "suites") / f"{name}-v{SPOKEN_SUITE_VERSION}" / "suite.jsonl"


@dataclass
class Case:
    id: str
    difficulty: str
    conversation: Conversation
    expected_calls: list[ToolCall]
    raw: dict[str, Any]

    @property
    def user_text(self) -> str:
        """The last user turn's text ("" for a turn that is only audio: models must not see its transcript)."""
        return self.conversation.user_texts()[-1]

    @property
    def transcript(self) -> str:
        """What the last user turn says: its text, or for a spoken turn its clip's transcript (for reports)."""
        audio = self.user_audio
        return self.user_text or (str(audio.meta.get("transcript", "")) if audio else "")

    @property
    def user_audio(self) -> Part | None:
        """The audio part of the last user turn (spoken suites and speech datasets), if any."""
        last = [m for m in self.conversation.messages if m.role == "user"][-1]
        return next((p for p in last.parts if p.type == "audio"), None)

    @property
    def tools(self) -> list[Tool]:
        return self.conversation.tools


def resolve_suite_path(suite: str | Path) -> Path:
    if str(suite) in BUILTIN_SUITES:
        return BUILTIN_SUITES[str(suite)]
    path = Path(suite)
    if not path.exists():
        raise ToolkitError("suite file does not exist", file=str(path),
                           fix=f"give a JSONL path or a built-in suite name ({', '.join(sorted(BUILTIN_SUITES))})")
    return path


def _case_from_line(d: Any, *, file: str, line: int, registry: ToolRegistry | None) -> Case:
    if not isinstance(d, dict):
        raise ToolkitError("a case must be a JSON object", file=file, line=line)
    for key in ("id", "messages", "tools", "expected_calls"):
        if key not in d:
            raise ToolkitError("missing key", file=file, line=line, field=key)
    difficulty = d.get("difficulty")      # a free label (BFCL's categories, ...); absent or null: none
    if difficulty is not None and not isinstance(difficulty, str):
        raise ToolkitError(f"difficulty {difficulty!r} is not a label", file=file, line=line, field="difficulty",
                           fix=f'write a string such as {", ".join(map(repr, DIFFICULTIES))}, or leave it out')
    tools = []
    for i, t in enumerate(d["tools"]):
        try:
            if isinstance(t, str):
                registry = registry or load_registry()
                tools.append(registry[t])
            else:
                tools.append(Tool.from_schema(t, source=file))
        except ToolkitError as e:
            raise ToolkitError(str(e).removeprefix(f"{file}: "), file=file, line=line, field=f"tools[{i}]") from e
    offered = {t.name for t in tools}
    expected = []
    for i, c in enumerate(d["expected_calls"]):
        call = ToolCall.from_dict(c, where=f"expected_calls[{i}]")
        if call.name not in offered:
            raise ToolkitError(f"unknown tool {call.name!r}: not among the case's tools ({', '.join(sorted(offered))})",
                               file=file, line=line, field=f"expected_calls[{i}].name",
                               fix="add its schema to `tools` or fix the name")
        expected.append(call)
    messages = [_with_local_media(Message.from_dict(m, where=f"messages[{i}]"), Path(file).parent)
                for i, m in enumerate(d["messages"])]
    if not any(m.role == "user" for m in messages):
        raise ToolkitError("no user message", file=file, line=line, field="messages")
    return Case(str(d["id"]), difficulty or "", Conversation(messages, tools), expected, d)


def _with_local_media(message: Message, folder: Path) -> Message:
    """Audio/image refs relative to the suite file become absolute paths."""
    if all(p.type == "text" or "://" in p.ref or Path(p.ref).is_absolute() for p in message.parts):
        return message
    parts = [p if p.type == "text" or "://" in p.ref or Path(p.ref).is_absolute()
             else replace(p, ref=str((folder / p.ref).resolve())) for p in message.parts]
    return replace(message, parts=parts)


def load_suite(suite: str | Path, registry: ToolRegistry | None = None) -> list[Case]:
    """All cases of a suite; a bad line stops with an error naming file, line and field."""
    path = resolve_suite_path(suite)
    cases, seen = [], set()
    for n, d in read_jsonl(path):
        case = _case_from_line(d, file=str(path), line=n, registry=registry)
        if case.id in seen:
            raise ToolkitError(f"duplicate case id {case.id!r}", file=str(path), line=n, field="id")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise ToolkitError("suite has no cases", file=str(path))
    return cases


def difficulty_for(num_calls: int) -> str:
    """Generated data has no hand-set difficulty: more calls in one request is harder."""
    return "easy" if num_calls <= 1 else ("medium" if num_calls == 2 else "hard")


class ConversationReader:
    """Dataset rows (messages and tools as JSON strings) -> Conversations. Tool objects are cached by
    schema: a dataset offers the same few tools thousands of times, and building one compiles a
    JSON-schema validator."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def tool(self, schema: dict) -> Tool:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._tools:
            self._tools[key] = Tool.from_schema(schema)
        return self._tools[key]

    def __call__(self, row: dict[str, Any]) -> Conversation:
        where = f"row {row.get('id', '?')}"
        msgs = [Message.from_dict(m, where=f"{where}.messages[{i}]") for i, m in enumerate(json.loads(row["messages"]))]
        return Conversation(msgs, [self.tool(t) for t in json.loads(row["tools"])])


def load_split(path: str | Path, split: str, *, field: str = "split"):
    """One split of a generated dataset folder (data_gen / data_gen.speech output), with clear errors."""
    from datasets import load_from_disk

    path = Path(path)
    if not (path / "dataset_dict.json").exists():
        raise ToolkitError("not a dataset folder (no dataset_dict.json)", file=str(path), field=field,
                           fix="run `make data` first, or give a data_gen output folder (or a suite JSONL file)")
    dd = load_from_disk(str(path))
    if split not in dd:
        raise ToolkitError(f"no split {split!r} (has {', '.join(dd)})", file=str(path), field=field)
    return dd[split]


def cases_from_dataset(path: str | Path, split: str = "test", limit: int | None = None,
                       shuffle_seed: int | None = None) -> list[Case]:
    """A split of a generated dataset (data_gen's output folder) as eval cases: the conversation up
    to its last user turn (earlier turns included) and the calls that answer it. With a seed, the
    split is shuffled before the first `limit` rows are taken."""
    path = Path(path)
    ds = load_split(path, split)
    ds = ds if shuffle_seed is None else ds.shuffle(seed=shuffle_seed)
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    read = ConversationReader()
    cases = []
    for row in ds:
        expected = [ToolCall.from_dict(c) for c in json.loads(row["expected_calls"])]
        conv = read(row).up_to_last_user()
        if row.get("user_audio"):   # a spoken dataset (data_gen.speech): the turn is the clip alone,
            # as in the spoken suites (a text model must not read what it is meant to hear)
            clip = Part("audio", ref=str((path / row["user_audio"]).resolve()), meta={
                "transcript": row["user_text"], "spoken_text": row.get("spoken_text", ""),
                "snr_db": row.get("snr_db"), "voice": row.get("voice", "")})
            conv.messages[-1] = replace(conv.messages[-1], parts=[clip])
        cases.append(Case(row["id"], difficulty_for(len(expected)), conv, expected, dict(row)))
    return cases


def is_suite_file(path: str | Path) -> bool:
    """A JSONL file in the suite format (above): its first row has `expected_calls`."""
    p = Path(path)
    if not (p.is_file() and p.name.endswith(".jsonl")):
        return False
    with p.open("rb") as f:
        first = next((line for line in f if line.strip()), b"")
    try:
        row = json.loads(first)
    except ValueError:
        return False
    return isinstance(row, dict) and "expected_calls" in row


def load_cases(suite: str | Path, *, split: str = "test", limit: int | None = None,
               registry: ToolRegistry | None = None) -> list[Case]:
    """Cases from a built-in suite name, a suite JSONL file, a dataset folder, or any source the
    converter reads (an OpenAI / ShareGPT / xLAM / Hermes file, a folder of them, a hub dataset id:
    converted once into the cache train's data.path shares, so a file trained on is scored on the very
    test split training left out)."""
    if str(suite) in BUILTIN_SUITES or is_suite_file(suite):
        cases = load_suite(suite, registry)
        return cases[:limit] if limit else cases
    from .convert import resolve_dataset

    return cases_from_dataset(resolve_dataset(suite, field="suite"), split, limit)
