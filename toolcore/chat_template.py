"""Jinja chat templates that render exactly what a format renders (`ChatFormat.render_text`).

Every adapter, merged model and converted base the toolkit writes carries one (`chat_template.jinja`,
also `tokenizer.chat_template`), so any server that applies the tokenizer's template - transformers'
`apply_chat_template`, vLLM, llama.cpp `llama-server --jinja`, Ollama (through a Modelfile) - gives the
model the text it was trained on: the same system prompt with the same tool listing, the same call
markers, the same tool-result turns.

The templates take what `apply_chat_template(messages, tools=...)` passes: OpenAI-style messages
(`content` a string or a list of parts; assistant `tool_calls` as `{"type": "function", "function":
{"name", "arguments"}}` or plain `{"name", "arguments"}`; tool messages with their `name`) and `tools`
as OpenAI function definitions. `tests/test_chat_template.py` checks, over random conversations, that
the template's text and token ids equal the format's own rendering for every format.

Limits (Jinja has no JSON parser): call `arguments` should be objects, as transformers and vLLM pass
them. A JSON-string `arguments` is written verbatim in the JSON formats (equal to the format's text when
it is `json.dumps` spacing) and refused by the lfm2 template (its calls are Python literals). `$ref`s
inside tool parameters are resolved for local `#/...` pointers without %-escapes.

The text is built from the format's own constants (markers, headers, default system prompt, the tool
instructions), so a change there reaches the template too; the structure below mirrors
`ChatFormat.render` and each format's overrides (see toolcore/formats/*.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ToolkitError
from .formats import ChatFormat, get_format
from .formats.generic import INSTRUCTION, GenericFormat
from .formats.hermes import TOOLS_POSTAMBLE, TOOLS_PREAMBLE, HermesFormat
from .formats.lfm2 import LFM2Format
from .formats.ovis import CROP_TOOL, OvisFormat

TEMPLATE_FILE = "chat_template.jinja"


def lit(text: str) -> str:
    """A Jinja string literal (JSON's escaping is valid Jinja: \\n, \\", \\uXXXX)."""
    return json.dumps(text)


# Shared macros. Every tag strips the whitespace around it ({%- -%}): the only text a template writes is
# the output of {{ }} expressions, so the file's own line breaks never reach the prompt.
COMMON = r"""
{#- the text of a message (Message.content): a string, or the text parts of a list -#}
{%- macro text_of(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}
{%- for p in c -%}{%- if p['type'] == 'text' -%}{{ p['text'] }}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{#- a user turn's body (ChatFormat.user_body): text parts, and <image>/<audio> for media parts -#}
{%- macro body_of(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}
{%- for p in c -%}{%- if p['type'] == 'text' -%}{{ p['text'] }}{%- else -%}{{ '<' ~ p['type'] ~ '>' }}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
"""

# A tool definition's three fields, the way Tool.from_schema fills them in. Inlined where needed (a macro
# can only return text, not a dict).
FN = ("{%- set f = t['function'] if (t.get('type') == 'function' and 'function' in t) else t -%}"
      "{%- set fdesc = f.get('description', '') -%}"
      "{%- set fparams = f.get('parameters') or {'type': 'object', 'properties': {}} -%}")

# The generic format's one-line signatures (formats/generic.py: type_text, signature).
GENERIC_MACROS = r"""
{%- macro type_text(spec, root, seen) -%}
{%- if spec is not mapping -%}{{ 'any' }}
{%- elif '$ref' in spec -%}
{%- set ref = spec['$ref'] -%}
{%- set ns = namespace(node=root, ok=(ref is string and (ref == '#' or ref.startswith('#/')))) -%}
{%- if ns.ok and ref != '#' -%}
{%- for part in ref[2:].split('/') -%}
{%- set key = part.replace('~1', '/').replace('~0', '~') -%}
{%- if ns.ok and ns.node is mapping and key in ns.node -%}{%- set ns.node = ns.node[key] -%}
{%- elif ns.ok and ns.node is iterable and ns.node is not string and ns.node is not mapping and key.isdigit() and (key|int) < (ns.node|length) -%}{%- set ns.node = ns.node[key|int] -%}
{%- else -%}{%- set ns.ok = false -%}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- if not ns.ok or not (ns.node is mapping or ns.node is boolean) or ref in seen -%}{{ 'any' }}
{%- else -%}{{ type_text(ns.node, root, seen + [ref]) }}
{%- endif -%}
{%- elif 'const' in spec -%}{{ spec['const']|tojson }}
{%- elif 'enum' in spec -%}{%- for v in spec['enum'] -%}{{ '|' if not loop.first else '' }}{{ v|tojson }}{%- endfor -%}
{%- else -%}
{%- set alts = spec.get('anyOf') or spec.get('oneOf') -%}
{%- if alts is iterable and alts is not string and alts is not mapping -%}
{%- for s in alts -%}{{ '|' if not loop.first else '' }}{{ type_text(s, root, seen) }}{%- endfor -%}
{%- else -%}
{%- set kind = spec.get('type', 'any') -%}
{%- if kind is iterable and kind is not string and kind is not mapping -%}{{ kind|join('|') }}
{%- elif kind == 'array' -%}{{ 'array of ' ~ type_text(spec.get('items', {}), root, seen) }}
{%- elif kind == 'object' and spec.get('properties') -%}{{ spec|tojson }}
{%- else -%}{{ kind }}
{%- endif -%}
{%- endif -%}
{%- endif -%}
{%- endmacro -%}
{%- macro signature(t) -%}
""" + FN + r"""
{%- set props = fparams.get('properties', {}) -%}
{%- set req = fparams.get('required', []) -%}
{{ f['name'] ~ '(' }}
{%- for k, v in props.items() -%}{{ ', ' if not loop.first else '' }}{{ k ~ ('' if k in req else '?') ~ ': ' ~ type_text(v, fparams, []) }}{%- endfor -%}
{{ '): ' }}{{ fdesc }}
{%- set ns = namespace(notes=[]) -%}
{%- for k, v in props.items() -%}{%- if v is mapping and v.get('description') -%}{%- set ns.notes = ns.notes + [k ~ ': ' ~ v['description']] -%}{%- endif -%}{%- endfor -%}
{%- if ns.notes -%}{{ ' | ' ~ ns.notes|join('; ') }}{%- endif -%}
{%- endmacro -%}
"""

# LFM2's Python literals (formats/lfm2.py: py_literal).
PY_LITERAL = r"""
{%- macro py_literal(v) -%}
{%- if v is boolean -%}{{ 'True' if v else 'False' }}
{%- elif v is none -%}{{ 'None' }}
{%- elif v is string or v is number -%}{{ v|tojson }}
{%- elif v is mapping -%}{{ '{' }}{%- for k, x in v.items() -%}{{ ', ' if not loop.first else '' }}{{ (k|string)|tojson ~ ': ' ~ py_literal(x) }}{%- endfor -%}{{ '}' }}
{%- elif v is iterable -%}{{ '[' }}{%- for x in v -%}{{ ', ' if not loop.first else '' }}{{ py_literal(x) }}{%- endfor -%}{{ ']' }}
{%- endif -%}
{%- endmacro -%}
"""

CALL_FIELDS = ("{%- set fc = c['function'] if 'function' in c else c -%}"
               "{%- set args = fc.get('arguments', {}) -%}")


def _json_call() -> str:
    """`{"name": ..., "arguments": {...}}` as json.dumps writes ToolCall.to_dict()."""
    return ("{%- if args is string -%}{{ '{\"name\": ' ~ fc['name']|tojson ~ ', \"arguments\": ' ~ args ~ '}' }}"
            "{%- else -%}{{ {'name': fc['name'], 'arguments': args}|tojson }}{%- endif -%}")


def _system_text(fmt: ChatFormat) -> str:
    """Sets `sys_text` from `system` and `tool_list` (the format's `system_text`)."""
    if isinstance(fmt, GenericFormat):
        return ("{%- set ns = namespace(listing=" + lit(INSTRUCTION) + ") -%}"
                "{%- for t in tool_list -%}{%- set ns.listing = ns.listing ~ '\\n- ' ~ signature(t) -%}{%- endfor -%}"
                "{%- set sys_text = (system ~ '\\n' ~ ns.listing if system else ns.listing) if tool_list else system -%}")
    if isinstance(fmt, HermesFormat):
        return ("{%- set ns = namespace(listing='') -%}"
                "{%- for t in tool_list -%}" + FN +
                "{%- set ns.listing = ns.listing ~ '\\n' ~ {'type': 'function', 'function': {'name': f['name'], "
                "'description': fdesc, 'parameters': fparams}}|tojson -%}{%- endfor -%}"
                "{%- set sys_text = ((system ~ '\\n\\n' if system else '') ~ " + lit(TOOLS_PREAMBLE) +
                " ~ ns.listing ~ " + lit(TOOLS_POSTAMBLE) + ") if tool_list else system -%}")
    if isinstance(fmt, LFM2Format):
        return ("{%- set ns = namespace(items=[]) -%}"
                "{%- for t in tool_list -%}" + FN +
                "{%- set ns.items = ns.items + [{'name': f['name'], 'description': fdesc, 'parameters': fparams}|tojson] -%}"
                "{%- endfor -%}"
                "{%- set listing = 'List of tools: <|tool_list_start|>[' ~ ns.items|join(', ') ~ ']<|tool_list_end|>' -%}"
                "{%- set sys_text = (system ~ '\\n' ~ listing if system else listing) if tool_list else system -%}")
    raise ToolkitError(f"no chat template for format {fmt.name!r}", field="format")


def _calls(fmt: ChatFormat) -> str:
    """Writes `calls` (a message's tool_calls) as the format's render_calls."""
    if isinstance(fmt, GenericFormat):
        return ("{%- for c in calls -%}" + CALL_FIELDS + lit(fmt.call_start).join(["{{ ", " }}"]) + _json_call()
                + lit(fmt.call_end).join(["{{ ", " }}"]) + "{%- endfor -%}")
    if isinstance(fmt, HermesFormat):
        crop = ""
        if isinstance(fmt, OvisFormat):   # a box of four integers is written `Crop [x1,y1,x2,y2]`
            crop = ("{%- set box = args.get('bbox') if (args is mapping and args|list == ['bbox']) else none -%}"
                    "{%- if fc['name'] == " + lit(CROP_TOOL) + " and box is iterable and box is not string "
                    "and box is not mapping and box|length == 4 and box|select('integer')|list|length == 4 -%}"
                    "{{ '<tool_call>Crop [' ~ box|join(',') ~ ']</tool_call>' }}{%- else -%}")
        return ("{%- for c in calls -%}" + CALL_FIELDS + "{{ '\\n' if not loop.first else '' }}" + crop
                + "{{ '<tool_call>\\n' }}" + _json_call() + "{{ '\\n</tool_call>' }}"
                + ("{%- endif -%}" if crop else "") + "{%- endfor -%}")
    if isinstance(fmt, LFM2Format):
        return ("{{ '<|tool_call_start|>[' }}{%- for c in calls -%}" + CALL_FIELDS +
                "{%- if args is string -%}{{ raise_exception('the lfm2 template needs tool call arguments as "
                "objects, not JSON strings') }}{%- endif -%}"
                "{{ ', ' if not loop.first else '' }}{{ fc['name'] ~ '(' }}"
                "{%- for k, v in args.items() -%}{{ ', ' if not loop.first else '' }}{{ k ~ '=' ~ py_literal(v) }}"
                "{%- endfor -%}{{ ')' }}{%- endfor -%}{{ ']<|tool_call_end|>' }}")
    raise ToolkitError(f"no chat template for format {fmt.name!r}", field="format")


def _tool_result(fmt: ChatFormat) -> tuple[str, str, str]:
    """(turn opening, one result from `m`, turn closing) of the format's render_tool_turn; LFM2 writes one
    turn per result, the others one turn for a run of consecutive results."""
    end = fmt.turn_end
    if isinstance(fmt, LFM2Format):
        return ("", "{{ '<|im_start|>tool\\n<|tool_response_start|>' ~ text_of(m['content']) ~ '<|tool_response_end|>"
                + end + "\\n' }}", "")
    if isinstance(fmt, HermesFormat):
        return ("{{ '<|im_start|>user' }}", "{{ '\\n<tool_response>\\n' ~ text_of(m['content']) ~ '\\n</tool_response>' }}",
                "{{ '" + end + "\\n' }}")
    return ("{{ '<|im_start|>tool\\n' }}",
            "{{ '<|tool_response_start|>' ~ text_of(m['content']) ~ '<|tool_response_end|>' }}", "{{ '" + end + "\\n' }}")


def chat_template(fmt: ChatFormat | str) -> str:
    """The Jinja chat template that renders what `fmt.render_text` renders."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    header, end = fmt.assistant_header(), fmt.turn_end
    ovis = isinstance(fmt, OvisFormat)
    open_turn, result, close_turn = _tool_result(fmt)
    # Ovis feeds a crop's image back inside the assistant's turn (OvisFormat.is_inline): a run of tool
    # results is inline when every one is a crop result holding an image; an assistant turn is left
    # open when the single message after it is such a result (ChatFormat.render checks just that one)
    inline_test = ("m2['role'] == 'tool' and m2.get('name') == " + lit(CROP_TOOL) + " and m2['content'] is iterable "
                   "and m2['content'] is not string and m2['content']|selectattr('type', 'equalto', 'image')|list|length > 0")
    parts = [
        f"{{#- generated by toolcore/chat_template.py for the {fmt.name} format: edit the format, not this file -#}}",
        COMMON, GENERIC_MACROS if isinstance(fmt, GenericFormat) else "",
        PY_LITERAL if isinstance(fmt, LFM2Format) else "",
        "{%- set tool_list = tools if (tools is defined and tools) else [] -%}",
        "{%- set first_system = messages and messages[0]['role'] == 'system' -%}",
        "{%- set system = text_of(messages[0]['content']) if first_system else " + lit(fmt.default_system) + " -%}",
        _system_text(fmt),
        "{{ " + lit(fmt.bos) + " }}" if fmt.bos else "",
        "{%- if sys_text -%}{{ '<|im_start|>system\\n' ~ sys_text ~ " + lit(end + "\n") + " }}{%- endif -%}",
        "{%- set st = namespace(inline=false) -%}",
        "{%- set msgs = messages[1:] if first_system else messages -%}",
        "{%- for m in msgs -%}",
        "{%- set prev = loop.previtem if not loop.first else none -%}",
        "{%- set nxt = loop.nextitem if not loop.last else none -%}",
        "{%- if m['role'] == 'tool' -%}",
    ]
    if ovis:
        parts += [
            "{%- if prev is none or prev['role'] != 'tool' -%}",     # the first of a run: is the run inline?
            "{%- set scan = namespace(going=true, inline=true) -%}",
            "{%- for m2 in msgs[loop.index0:] -%}",
            "{%- if scan.going and m2['role'] == 'tool' -%}{%- if not (" + inline_test + ") -%}"
            "{%- set scan.inline = false -%}{%- endif -%}{%- else -%}{%- set scan.going = false -%}{%- endif -%}",
            "{%- endfor -%}{%- set st.inline = scan.inline -%}{%- endif -%}",
            "{%- if st.inline -%}{{ body_of(m['content']) }}{%- else -%}",
        ]
    parts += [
        "{%- if prev is none or prev['role'] != 'tool' -%}" if open_turn else "",
        open_turn, "{%- endif -%}" if open_turn else "",
        result,
        "{%- if nxt is none or nxt['role'] != 'tool' -%}" + close_turn + "{%- endif -%}" if close_turn else "",
        "{%- endif -%}" if ovis else "",
        "{%- else -%}",
        "{%- if m['role'] == 'assistant' -%}",
        "{%- if not st.inline -%}{{ " + lit(header) + " }}{%- endif -%}",
        "{%- set calls = m.get('tool_calls') or [] -%}",
        "{%- if calls -%}" + _calls(fmt) + "{%- endif -%}",
        "{{ text_of(m['content']) }}",
    ]
    if ovis:
        parts.append("{%- set m2 = nxt -%}{%- if not (nxt is not none and " + inline_test + ") -%}")
    parts.append("{{ " + lit(end + "\n") + " }}")
    if ovis:
        parts.append("{%- endif -%}")
    parts += [
        "{%- else -%}{{ '<|im_start|>' ~ m['role'] ~ '\\n' ~ body_of(m['content']) ~ " + lit(end + "\n") + " }}",
        "{%- endif -%}",
        "{%- set st.inline = false -%}",
        "{%- endif -%}",
        "{%- endfor -%}",
        "{%- if add_generation_prompt -%}{{ " + lit(header) + " }}{%- endif -%}",
    ]
    text = "\n".join(p.strip("\n") for p in parts if p) + "\n"
    # every output comes from an expression; `{{-`/`-}}` drop the template file's own line breaks between them
    return text.replace("{{ ", "{{- ").replace(" }}", " -}}")


def attach_chat_template(tokenizer: Any, fmt: ChatFormat | str) -> str:
    """Set the format's template on a tokenizer before `save_pretrained` (transformers then writes it to
    chat_template.jinja beside the tokenizer files). Returns the template."""
    template = chat_template(fmt)
    tokenizer.chat_template = template
    return template


def write_chat_template(folder: str | Path, fmt: ChatFormat | str) -> Path:
    """Write chat_template.jinja into a saved model/adapter folder (for folders saved without a tokenizer)."""
    path = Path(folder) / TEMPLATE_FILE
    path.write_text(chat_template(fmt))
    return path


__all__ = ["TEMPLATE_FILE", "attach_chat_template", "chat_template", "write_chat_template"]
