"""Turns a model answered in words that name one of its offered tools (the engine's `recall_declines`).

A small adapter sometimes answers a request its tools serve in prose: it declines ("I'm afraid I don't
have a tool to search the web", with web_search offered) or makes the answer up ("The weather in Buenos
Aires is mostly cloudy", with get_weather offered). Its own words then name the tool it should have
called. Such a turn is decoded again with a call forced, written only with the tools its words name, and
that call is grounded like any other (runtime/grounding.py): where the request does not state its
required values it is withdrawn, and the turn is written in words once more.

A tool is named when at least half of the word stems of its name, less the words that say what kind of
action it is ("get", "calculate", "search", "info", ...), occur in the turn's words: "weather" names
get_weather, "search the web" names web_search, "trademarks" names trademark_search; "calculate" alone
names no calculate_* tool. A tool that requires no value cannot be judged by grounding, so the request
itself must name it as well ("you can start running at any time" for "how do I start running?" does not
call get_time; "time check, please" does). The engine keeps a recalled call only where the model gave
each of its tokens at least `recall_min_p` (0.1) before the grammar's mask: on the CPU default's g49
seeds 0 and 1 that floor took back 3 of 5 and 4 of 7 made-up BFCL irrelevance calls against 2 and 1
right multiple calls (README, Stop 52's rows).
"""

from __future__ import annotations

from typing import Sequence

from toolcore.schema import Tool

from .leftover import _stems, name_words

# name words that say what kind of action a tool does, not what it acts on
ACTION_WORDS = frozenset(
    "get set find search calculate calc compute check create make list fetch retrieve update add remove delete "
    "info information data details detail tool api lookup look query run new by of for the and to".split())


def _name_content_stems(name: str) -> set[str]:
    """The 4-letter stems of a tool name's words (3 letters or more, not filler), less action words."""
    return {w[:4] for w in name_words(name) - ACTION_WORDS}


def tools_named_in(text: str, tools: Sequence[Tool]) -> list[Tool]:
    """The offered `tools` whose names' content stems `text` (the model's words) says at least half of."""
    said = _stems(text)
    named = []
    for tool in tools:
        stems = _name_content_stems(tool.name)
        if stems and 2 * len(stems & said) >= len(stems):
            named.append(tool)
    return named


def recall_tools(words: str, request: str, tools: Sequence[Tool]) -> list[Tool]:
    """The tools a turn answered in `words` is taken back for: those the words name, less those that
    require no value and that the user's `request` does not name too."""
    return [t for t in tools_named_in(words, tools) if t.required or tools_named_in(request, [t])]
