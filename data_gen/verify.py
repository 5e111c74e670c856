"""Verification before anything is kept, in three layers (as APIGen does):

format     no call is made twice in one turn (`toolcore.verify`); every call names an offered tool
           and validates against its JSON schema (shared with the converter of outside data), plus
           the tool's own normalisation checks (`generation.checks`: no trailing punctuation in messages,
           "3:00 PM" times, ...); every target format renders and parses the calls back unchanged.
execution  executable tools are run again and must give exactly the result the conversation shows.
semantics  every quoted string argument (a city, a name, a song...) is grounded in what the user
           said: its value or a known alias appears in the user's words.

`check(draft)` returns the first failure reason (counted in the manifest) or None.
"""

from __future__ import annotations

from typing import Sequence

from toolcore.executors import EXECUTORS, execute
from toolcore.formats import ChatFormat
from toolcore.verify import call_problem, repeated_call_problem, roundtrip_problem
from toolcore.vocab import Vocabulary

from .compose import Draft
from .slots import VocabSlot


class Verifier:
    def __init__(self, formats: Sequence[ChatFormat], vocab: Vocabulary):
        self.formats = list(formats)
        self.aliases = vocab.aliases

    def check(self, draft: Draft) -> str | None:
        for text, calls in draft.requests or [(draft.user_text, draft.calls)]:
            problem = self.check_request(draft, text, calls)
            if problem:
                return problem
        return None

    def check_request(self, draft: Draft, user_text: str, calls: list) -> str | None:
        """One request's calls against the offered tools and the words of that request."""
        offered = {t.name: t for t in draft.conversation.tools}
        user = user_text.lower()
        repeated = repeated_call_problem([info.call for info in calls])
        if repeated:
            return repeated
        for info in calls:
            call = info.call
            problem = call_problem(call, offered)
            if problem:
                return f"{problem}:{call.name}"
            tool = offered[call.name]
            if info.intent.checks is not None:
                for err in info.intent.checks.iter_errors(call.arguments):
                    return f"check:{call.name}.{'.'.join(map(str, err.absolute_path)) or 'arguments'}"
            if tool.executor in EXECUTORS:
                again = execute(tool, call.arguments, draft.ctx)
                if again.content != info.result.content:
                    return f"execution_mismatch:{call.name}"
            for key, slots in info.intent.arg_slots.items():
                value = call.arguments.get(key)
                if not isinstance(value, str) or not any(isinstance(info.intent.slots[s], VocabSlot) for s in slots):
                    continue
                forms = self.aliases.get(value.lower(), set()) | {value.lower()}
                if not any(f in user for f in forms):
                    return f"ungrounded:{call.name}.{key}"
        return roundtrip_problem([info.call for info in calls], self.formats)
