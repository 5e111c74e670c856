"""Run in a subprocess by tests/test_vllm_tool_parser.py, with vLLM's Python side on PYTHONPATH (vLLM
sets process-wide state on import, so it stays out of the pytest process). Loads the plugin file the
way `vllm serve --tool-parser-plugin` does, parses outputs whole and streamed token by token with the
real SmolLM2 tokenizer, and prints what it got as JSON."""

from __future__ import annotations

import json
import sys

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParserManager

from toolcore.formats.generic import GenericFormat
from toolcore.hub import load_tokenizer


def stream(parser_cls, tok, text: str, request) -> dict:
    """Feed the output as vLLM does: the text decoded so far, one more token each time."""
    parser = parser_cls(tok)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    content, calls, previous = "", {}, ""
    for n in range(1, len(ids) + 1):
        current = tok.decode(ids[:n], skip_special_tokens=False)
        delta = parser.extract_tool_calls_streaming(previous, current, current[len(previous):], ids[:n - 1],
                                                    ids[:n], ids[n - 1:n], request)
        previous = current
        if delta is None:
            continue
        content += delta.content or ""
        for d in delta.tool_calls:
            entry = calls.setdefault(d.index, {"id": d.id, "name": "", "arguments": ""})
            entry["name"] += d.function.name or ""
            entry["arguments"] += d.function.arguments or ""
    return {"content": content, "calls": [calls[k] for k in sorted(calls)],
            "unstreamed": parser.get_remaining_unstreamed_args()}


def main() -> None:
    ToolParserManager.import_tool_parser(sys.argv[1])
    parser_cls = ToolParserManager.get_tool_parser("toolkit_generic")
    fmt = GenericFormat()
    tok = load_tokenizer("smollm2")
    tok.add_special_tokens({"additional_special_tokens": list(fmt.tool_tokens)}, replace_extra_special_tokens=False)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                               "parameters": {"type": "object", "properties": {
                                                   "location": {"type": "string"}}, "required": ["location"]}}}]
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)
    adjusted = parser_cls(tok).adjust_request(
        ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools))
    out = {"registered": "toolkit_generic" in ToolParserManager.list_registered(),
           "keeps_special_tokens": adjusted.skip_special_tokens is False, "cases": []}
    for text in json.loads(sys.stdin.read()):
        whole = parser_cls(tok).extract_tool_calls(text, request)
        out["cases"].append({
            "whole": {"tools_called": whole.tools_called, "content": whole.content,
                      "calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                                for c in whole.tool_calls]},
            "stream": stream(parser_cls, tok, text, request)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
