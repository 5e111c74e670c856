"""vLLM tool-parser plugin for the toolkit's generic format (SmolLM2 and other ChatML models).

    vllm serve runs/demo/merged --enable-auto-tool-choice \
        --tool-parser-plugin serve/vllm_tool_parser.py --tool-call-parser toolkit_generic

Qwen (hermes) and LFM2 (lfm2) need no plugin: vLLM ships parsers for those formats. Calls in the
generic format are JSON between `<|tool_call_start|>` and `<|tool_call_end|>`, two special tokens that
vLLM would strip from the text before a parser sees it, so `adjust_request` keeps special tokens
whenever tools are offered. Parsing is `GenericFormat.parse`, the same function training, eval and
`python -m serve` use; this file only maps its result onto vLLM's classes. As in `python -m serve`, a
malformed call stays in the text: the reply is content, never an error. Streaming sends prose as it
comes (holding back a tail that may be the start of a call marker) and each call as one delta once
its end marker arrives. Written against vLLM 0.33 (`vllm.tool_parsers`); checked by
tests/test_vllm_tool_parser.py with vLLM's own classes (`make vllm-parser-env`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import (DeltaFunctionCall, DeltaMessage, DeltaToolCall,
                                                     ExtractedToolCallInformation, FunctionCall, ToolCall)
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager

from toolcore.formats.base import partial_marker
from toolcore.formats.generic import GenericFormat


@ToolParserManager.register_module("toolkit_generic")
class ToolkitGenericToolParser(ToolParser):
    def __init__(self, tokenizer: Any, tools: list | None = None):
        super().__init__(tokenizer, tools)
        self.fmt = GenericFormat()
        self.start, self.end = self.fmt.call_start, self.fmt.call_end
        self.consumed = 0        # characters of the output already turned into deltas

    def adjust_request(self, request: Any) -> Any:
        request = super().adjust_request(request)
        if request.tools and request.tool_choice != "none":
            request.skip_special_tokens = False      # the call markers are special tokens
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        parsed = self.fmt.parse(model_output)
        if not parsed.calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        calls = [ToolCall(type="function", function=FunctionCall(name=c.name, arguments=_arguments(c)))
                 for c in parsed.calls]
        return ExtractedToolCallInformation(tools_called=True, tool_calls=calls, content=parsed.content or None)

    def extract_tool_calls_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                     previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                     delta_token_ids: Sequence[int], request: Any) -> DeltaMessage | None:
        content: list[str] = []
        calls: list[DeltaToolCall] = []
        text, pos = current_text, self.consumed
        while True:
            i = text.find(self.start, pos)
            if i < 0:       # prose to the end, less a tail that may still become a call marker
                safe = len(text) - partial_marker(text, [self.start])
                content.append(text[pos:safe])
                pos = max(pos, safe)
                break
            content.append(text[pos:i])
            j = text.find(self.end, i + len(self.start))
            if j < 0:       # a call still being written: wait for its end marker
                pos = i
                break
            block = text[i:j + len(self.end)]
            parsed = self.fmt.parse(block)
            if parsed.calls:
                for c in parsed.calls:
                    calls.append(self._delta(c))
            else:           # malformed: it stays text, as in python -m serve
                content.append(block)
            pos = j + len(self.end)
        self.consumed = pos
        prose = "".join(content)
        if not prose and not calls:
            return None
        return DeltaMessage(content=prose or None, tool_calls=calls)

    def _delta(self, call: Any) -> DeltaToolCall:
        """One whole call as a delta; the bookkeeping vLLM reads at the end of a stream
        (`prev_tool_call_arr`, `streamed_args_for_tool`) says nothing is left unsent."""
        arguments = _arguments(call)
        self.current_tool_id += 1
        self.prev_tool_call_arr.append({"name": call.name, "arguments": call.arguments})
        self.streamed_args_for_tool.append(arguments)
        return DeltaToolCall(index=self.current_tool_id, id=make_tool_call_id(), type="function",
                             function=DeltaFunctionCall(name=call.name, arguments=arguments))


def _arguments(call: Any) -> str:
    return json.dumps(call.arguments, ensure_ascii=False)
