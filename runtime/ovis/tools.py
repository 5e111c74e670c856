"""Vision tools of the Ovis2.5 tool system (design: ovis2_5_tool_system.md).

A call is written `<tool_call>Name [args]</tool_call>`: the trained Crop tool takes a pixel box
`[x1,y1,x2,y2]` of the image in view (x1 < x2, y1 < y2, inside the image). Other tools are
"LLM-driven": registered at run time by a description (name, description, usage, example), listed
in the prompt, and executed by the same loop. A tool returns an image (fed back into the context
right after the call) or text.

Arguments are parsed with regexes, never evaluated: model output is data.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from toolcore.errors import ToolkitError
from toolcore.schema import ToolCall

CALL_START, CALL_END = "<tool_call>", "</tool_call>"
BOX_RE = re.compile(r"^\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*$")
CALL_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*(\[.*\])\s*$", re.S)


def box_problem(box: Any, width: int, height: int) -> str | None:
    """Why `box` is not a crop box of a width x height image (None when it is one)."""
    if not (isinstance(box, (list, tuple)) and len(box) == 4 and all(type(v) is int for v in box)):
        return "a box is four integers [x1,y1,x2,y2]"
    x1, y1, x2, y2 = box
    if not (x1 < x2 and y1 < y2):
        return f"box {list(box)} has no area (needs x1 < x2 and y1 < y2)"
    if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        return f"box {list(box)} is outside the {width}x{height} image"
    return None


def clamp_box(box: list[int], width: int, height: int) -> list[int] | None:
    """A predicted box clipped to the image; None when nothing of it is left."""
    x1, y1, x2, y2 = max(0, box[0]), max(0, box[1]), min(width, box[2]), min(height, box[3])
    return [x1, y1, x2, y2] if x1 < x2 and y1 < y2 else None


@dataclass
class VisionTool:
    """One tool. `arg` says how the bracket is read: "box" (four integers) or "text" (free text).
    `run(image, arguments) -> PIL image or str`."""

    name: str                  # as written in calls (Crop, Draw); the ToolCall name is name.lower()
    description: str
    run: Callable[[Any, dict], Any]
    arg: str = "box"
    usage: str = ""
    example: str = ""
    trained: bool = False      # the model learned it in training (no description needed in the prompt)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", self.name):
            raise ToolkitError(f"tool name {self.name!r} is not a word", field="name", fix="e.g. Draw")
        if self.arg not in ("box", "text"):
            raise ToolkitError(f"unknown argument kind {self.arg!r}", field="arg", fix="use box or text")
        self.usage = self.usage or (f"{CALL_START}{self.name} [x1,y1,x2,y2]{CALL_END}" if self.arg == "box"
                                    else f"{CALL_START}{self.name} [text]{CALL_END}")

    def describe(self) -> str:
        line = f"- {self.name}: {self.description} Usage: {self.usage}"
        return line + (f" Example: {self.example}" if self.example else "")


def crop(image: Any, arguments: dict) -> Any:
    x1, y1, x2, y2 = arguments["bbox"]
    return image.crop((x1, y1, x2, y2))


def draw_box(image: Any, arguments: dict, color: str = "red") -> Any:
    from PIL import ImageDraw

    out = image.convert("RGB").copy()
    ImageDraw.Draw(out).rectangle(arguments["bbox"], outline=color, width=max(2, min(out.size) // 100))
    return out


CROP = VisionTool("Crop", "Crop a region of the image to look at it more closely.", crop, trained=True)


@dataclass
class ToolSet:
    """The tools a conversation offers, keyed by their lower-case name."""

    tools: dict[str, VisionTool] = field(default_factory=lambda: {"crop": CROP})

    def register(self, tool: VisionTool) -> "ToolSet":
        self.tools[tool.name.lower()] = tool
        return self

    @classmethod
    def from_descriptions(cls, described: list[dict], *, with_crop: bool = True) -> "ToolSet":
        """Tools described as {name, description, arg?, usage?, example?}: each runs as a box drawer
        (arg box) or echoes its text (arg text) - what an LLM-driven tool without code does here."""
        ts = cls() if with_crop else cls({})
        for i, d in enumerate(described):
            if not isinstance(d, dict) or not d.get("name") or not d.get("description"):
                raise ToolkitError("a described tool needs a name and a description", field=f"tools[{i}]",
                                   fix="e.g. {name: Draw, description: Draw a box on the image, arg: box}")
            arg = d.get("arg", "box")
            run = draw_box if arg == "box" else (lambda image, a: f"noted: {a['text']}")
            ts.register(VisionTool(d["name"], d["description"], run, arg, d.get("usage", ""), d.get("example", "")))
        return ts

    def system_text(self, describe_trained: bool = True) -> str:
        listed = [t for t in self.tools.values() if describe_trained or not t.trained]
        if not listed:
            return ""
        return ("You can use tools while you answer. Write a call as <tool_call>Name [arguments]</tool_call>; "
                "its result appears right after it.\nTools:\n" + "\n".join(t.describe() for t in listed))

    def parse(self, body: str) -> tuple[ToolCall | None, str | None]:
        """One call body (between the markers) -> a ToolCall, or why not."""
        m = CALL_RE.match(body)
        if not m:
            return None, "malformed call: expected Name [arguments]"
        tool = self.tools.get(m.group(1).lower())
        if tool is None:
            return None, f"unknown tool {m.group(1)!r}"
        inner = m.group(2)
        if tool.arg == "box":
            b = BOX_RE.match(inner)
            if not b:
                return None, f"malformed {tool.name} call: expected {tool.name} [x1,y1,x2,y2]"
            return ToolCall(tool.name.lower(), {"bbox": [int(v) for v in b.groups()]}), None
        return ToolCall(tool.name.lower(), {"text": inner[1:-1].strip()}), None

    def render(self, call: ToolCall) -> str:
        tool = self.tools[call.name]
        inner = ",".join(str(v) for v in call.arguments["bbox"]) if tool.arg == "box" else call.arguments["text"]
        return f"{CALL_START}{tool.name} [{inner}]{CALL_END}"

    def execute(self, call: ToolCall, image: Any, timeout_s: float | None = None) -> tuple[Any, str | None]:
        """(result, error). A box outside the image is clipped (a model's box is a guess: the crop of
        what is inside is still the useful answer); nothing left, a timeout or an exception is an error,
        reported back to the model as text."""
        tool = self.tools[call.name]
        args = dict(call.arguments)
        if tool.arg == "box":
            box = clamp_box(args["bbox"], *image.size)
            if box is None:
                return f"error: box {args['bbox']} is outside the {image.size[0]}x{image.size[1]} image", "outside"
            args["bbox"] = box
        if not timeout_s:
            try:
                return tool.run(image, args), None
            except Exception as e:   # a user tool's failure is the model's problem to read, not a crash
                return f"error: {type(e).__name__}: {e}", "exception"
        pool = cf.ThreadPoolExecutor(max_workers=1)
        try:
            return pool.submit(tool.run, image, args).result(timeout=timeout_s), None
        except cf.TimeoutError:
            return f"error: {tool.name} timed out after {timeout_s}s", "timeout"
        except Exception as e:
            return f"error: {type(e).__name__}: {e}", "exception"
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def toolset_from_schemas(schemas: list[dict]) -> ToolSet:
    """The tools a dataset row offers (toolcore schemas: crop, plus described box tools whose
    description carries their usage) as a ToolSet: `crop` is the trained Crop, any other tool with a
    `bbox` parameter draws its box, any other one takes text."""
    ts = ToolSet({})
    for s in schemas:
        if s["name"] == "crop":
            ts.register(CROP)
            continue
        desc = s.get("description", "")
        m = re.search(r"<tool_call>([A-Za-z][A-Za-z0-9_]*) \[", desc)
        written = m.group(1) if m else s["name"].capitalize()
        is_box = "bbox" in (s.get("parameters") or {}).get("properties", {})
        ts.register(VisionTool(written, desc.split(" Usage:")[0], draw_box if is_box else (lambda im, a: f"noted: {a['text']}"),
                               "box" if is_box else "text"))
    return ts
