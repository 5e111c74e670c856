"""Qwen 2.5 / Qwen 3 (Hermes style): tools as JSON in the system prompt, calls as
`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, results in a user turn inside
`<tool_response>` tags. These markers are already single tokens in Qwen's tokenizer.
The text mirrors Qwen's own chat template so the adapter sees what the base model was tuned on.
"""

from __future__ import annotations

from typing import Sequence

from ..conversation import Message
from ..schema import Tool, ToolCall
from .base import ChatFormat, ParseResult, Segment, dumps, parse_json_call, split_blocks
from .grammar import json_calls_ebnf

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


class HermesFormat(ChatFormat):
    name = "qwen2_5"
    tool_tokens = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
    call_start, call_end = "<tool_call>", "</tool_call>"
    default_system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

    def system_text(self, system: str, tools: Sequence[Tool]) -> str:
        if not tools:
            return system
        listing = "".join("\n" + dumps(t.to_openai()) for t in tools)
        head = f"{system}\n\n" if system else ""
        return head + TOOLS_PREAMBLE + listing + TOOLS_POSTAMBLE

    def render_call(self, call: ToolCall) -> str:
        return f"{self.call_start}\n{dumps(call.to_dict())}\n{self.call_end}"

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return "\n".join(self.render_call(c) for c in calls)

    def render_result(self, result: Message) -> str:
        return f"\n<tool_response>\n{result.content}\n</tool_response>"

    def render_tool_turn(self, results: Sequence[Message]) -> list[Segment]:
        # Qwen's template puts tool results in a *user* turn, all results of one step together.
        body = "".join(self.render_result(r) for r in results)
        return [Segment(f"<|im_start|>user{body}{self.turn_end}\n", role="tool")]

    def call_grammar(self, tools: Sequence[Tool]) -> str | None:
        return json_calls_ebnf(tools, prefix="\n", suffix="\n")

    def parse_call_body(self, body: str) -> tuple[ToolCall | None, str | None]:
        return parse_json_call(body.strip())

    def parse(self, text: str) -> ParseResult:
        bodies, content, failures = split_blocks(text, self.call_start, self.call_end)
        result = ParseResult(content=content, failures=failures)
        for body in bodies:
            call, err = self.parse_call_body(body)
            if call is not None:
                result.calls.append(call)
            else:
                result.failures.append(err or "unparseable call")
        return result


class Qwen3Format(HermesFormat):
    """Qwen 3: no default system prompt; thinking switched off with an empty think block, which
    Qwen3's template writes before every answer when `enable_thinking=False`."""

    name = "qwen3"
    default_system = ""

    def assistant_header(self) -> str:
        return "<|im_start|>assistant\n<think>\n\n</think>\n\n"
