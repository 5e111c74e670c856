"""Ovis2.5: Qwen3's chat with the crop tool written as `<tool_call>Crop [x1,y1,x2,y2]</tool_call>`,
followed at once by the cropped image inside the same assistant turn (the visual feedback loop of
the Ovis tool design). Other tools use Qwen3's Hermes JSON calls. Coordinates are plain text tokens.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..conversation import Message
from ..schema import Tool, ToolCall
from .base import Segment
from .hermes import Qwen3Format

CROP_RE = re.compile(r"^\s*Crop\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*$")
CROP_TOOL = "crop"


def is_box(arguments: dict) -> bool:
    """Only a box of four integers has the Crop form; any other crop call is written as JSON."""
    box = arguments.get("bbox") if list(arguments) == ["bbox"] else None
    return isinstance(box, list) and len(box) == 4 and all(type(v) is int for v in box)


class OvisFormat(Qwen3Format):
    name = "ovis2_5"

    def media_placeholder(self, kind: str) -> str:
        return "<image>" if kind == "image" else f"<{kind}>"

    def render_call(self, call: ToolCall) -> str:
        if call.name == CROP_TOOL and is_box(call.arguments):
            x1, y1, x2, y2 = call.arguments["bbox"]
            return f"{self.call_start}Crop [{x1},{y1},{x2},{y2}]{self.call_end}"
        return super().render_call(call)

    def parse_call_body(self, body: str) -> tuple[ToolCall | None, str | None]:
        if body.lstrip().startswith("Crop"):
            m = CROP_RE.match(body)
            if not m:
                return None, "malformed Crop call: expected Crop [x1,y1,x2,y2]"
            return ToolCall(CROP_TOOL, {"bbox": [int(v) for v in m.groups()]}), None
        return super().parse_call_body(body)

    def call_grammar(self, tools: Sequence[Tool]) -> str | None:
        # a crop body ("Crop [x1,y1,x2,y2]") is not JSON: with the crop tool offered, calls stay free
        return None if any(t.name == CROP_TOOL for t in tools) else super().call_grammar(tools)

    def pauses_after(self, call: ToolCall) -> bool:
        return call.name == CROP_TOOL

    def is_inline(self, results: Sequence[Message]) -> bool:
        return all(r.name == CROP_TOOL and any(p.type == "image" for p in r.parts) for r in results)

    def render_inline(self, results: Sequence[Message]) -> list[Segment]:
        return [Segment(self.user_body(r), role="tool") for r in results]
