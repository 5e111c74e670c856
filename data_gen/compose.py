"""Episodes: one or more user turns, the assistant's calls with their real (or simulated) results,
and a final answer in prose.

All calls a request needs come in one assistant turn, then all their results, then the answer
(parallel calls, as OpenAI, Qwen and LFM2 write them). At inference the live tool loop runs the
tools when that turn ends and appends their results before the answer. (Measured: with one call
per turn, SmolLM2 after 120 steps stopped after the first result in 10 of 13 multi-call misses.)

A conversation holds one to a few independent requests over one tool list, as people ask an
assistant one thing after another (`requests_per_conversation`): every earlier request is a finished
exchange with its calls, results and answer, so the model learns calls in context, and the tool list,
about half of a one-request row's tokens, is paid for once for several requests.

Categories of a request (weights in the config):
  single      one call
  multi       2-3 calls joined by "and / then / also"; a person named once may come back as
              "him/her/them" (coreference); the same tool may be asked twice, in two clauses or
              (`coordinate_share`) as one ask listing the values that differ ("in Oslo and Bergen")
  chitchat    small talk, no call
  knowledge   a question no tool answers, answered from memory, no call
  unavailable the request needs a tool that is not offered: the assistant says so, no call
  ask_back    the request names what to do but none of the required values ("I need to set an alarm"):
              the assistant asks for them without calling; the user's next turn gives them, then the calls

Near misses (`contrast_share`): a later call in a conversation may take a tool whose kind of value an
earlier call set, with that value's near miss (6 AM then 6 PM, 2 minutes then 2 hours; Slot.contrast).
The two calls differ in one word of the request and in the value, side by side in one row, to show which
word sets the value (the 24-hour `hour` from AM/PM is what the small demo adapter gets wrong most). The
config says why it is off by default.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from toolcore.conversation import Conversation, Message
from toolcore.executors import ExecutionContext, ToolResult, execute
from toolcore.schema import Tool, ToolCall
from toolcore.vocab import Vocabulary

from .discourse import with_context
from .intents import Intent, render_canonical, render_pieces
from .slots import PersonSlot, SlotValue, split_pool
from .surface import Piece, SurfaceConfig, tidy, wrap
from .templates import compile_template

CONNECT_2 = [" and ", ", and ", ", then ", " and then ", ". Also, ", ", also ", " and also ", "; ", ". Then ",
             " and after that ", ", plus ", ". And ", ". Oh, and ", ", and can you also ", ", and could you ",
             ". After that, ", " and once that's done, ", ", and please ", " & ", ". Second, ", ", and while you're at it, "]
CONNECT_3 = [(", ", ", and "), (", ", " and "), (", then ", ", and then "), (". Also ", ". And "),
             (", ", ", and finally "), (" and ", " and also ")]
UNAVAILABLE = [
    "Sorry, I can't {cap} right now: none of my tools can do that.",
    "I'm afraid I don't have a tool to {cap}.",
    "Sorry, I'm not able to {cap} with the tools I have here.",
    "I can't {cap} at the moment, that tool isn't available to me.",
]
UNAVAILABLE_TREES = [compile_template(t.replace("{cap}", "{cap}")) for t in UNAVAILABLE]
# a request with what to do and none of its values; {cap} is the tool's capability ("set alarms")
VAGUE = ["(I want|I need|I'd like) to {cap}", "(can|could) you help me {cap}", "help me {cap}( please|)",
         "I('d| would) like you to {cap}", "(please |){cap} for me", "I need you to {cap}( for me|)"]
ASK = ["(Sure|Of course|Happy to help)(.|,) (What|Which) {keys} should I use?",
       "I can do that. (Could|Can) you tell me the {keys}?", "(Sure|Okay), I just need the {keys} first.",
       "(Sure|Of course). What {be} the {keys}?", "I can {cap}, but I need the {keys}. What should {pron} be?"]
VAGUE_TREES = [compile_template(t) for t in VAGUE]
ASK_TREES = [compile_template(t) for t in ASK]


class Rejected(Exception):
    """An example the generator could not build; `reason` is counted in the manifest."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class CallInfo:
    intent: Intent
    call: ToolCall
    values: dict[str, SlotValue]
    result: ToolResult


@dataclass
class Draft:
    conversation: Conversation
    user_text: str
    category: str
    style: str
    calls: list[CallInfo]               # calls answering the last user turn
    ctx: ExecutionContext
    history: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    # every request of the conversation, the last one included: (user text, its calls), each verified
    requests: list[tuple[str, list[CallInfo]]] = field(default_factory=list)

    @property
    def expected_calls(self) -> list[ToolCall]:
        return [c.call for c in self.calls]


def coerce(raw: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if kind == "boolean":
        return raw.lower() == "true"
    return raw


class Composer:
    def __init__(self, intents: list[Intent], all_tools: list[Tool], vocab: Vocabulary, *, holdout: float,
                 category_weights: dict[str, float], max_distractors: int, spoken_share: float,
                 requests_per_conversation: dict[int, float], coref_share: float, no_tools_offered_share: float, surface: SurfaceConfig,
                 contrast_share: float = 0.0, context_share: float = 0.0, coordinate_share: float = 0.0):
        self.intents = intents
        self.by_name = {i.name: i for i in intents}
        self.all_tools = all_tools
        self.vocab = vocab
        self.categories = list(category_weights)
        self.weights = list(category_weights.values())
        self.max_distractors = max_distractors
        self.spoken_share = spoken_share
        self.request_counts = [int(k) for k in requests_per_conversation]
        self.request_weights = list(requests_per_conversation.values())
        self.coref_share = coref_share
        self.no_tools_offered_share = no_tools_offered_share
        self.surface = surface
        self.contrast_share = contrast_share
        self.context_share = context_share
        self.coordinate_share = coordinate_share
        self.small_talk = {flag: {name: split_pool(vocab[name], holdout, eval_pool=flag)
                                  for name in ("chitchat", "knowledge_questions")} for flag in (False, True)}
        self.result_vocab = {name: [e.value for e in entries] for name, entries in vocab.lists.items()}
        self.person_intents = [i for i in intents if any(isinstance(s, PersonSlot) for s in i.slots.values())]

    # ----- pieces ----------------------------------------------------------------------------
    def clause(self, intent: Intent, rng: random.Random, eval_pool: bool, mood: str | None,
               values: dict[str, SlotValue] | None = None, followup: bool = False,
               listed: dict[str, list[SlotValue]] | None = None
               ) -> tuple[list[Piece], list[tuple[ToolCall, dict[str, SlotValue]]]]:
        """One ask and its calls with the values each was made from: one, or with `listed` (further
        values of a slot said in the same ask, "the weather in Oslo and Bergen") one per value."""
        values = values or intent.draw_slots(rng, eval_pool)
        if followup:
            phrasing = rng.choice(intent.followups)
        else:
            phrasing = rng.choice(intent.phrasings[mood][eval_pool])
        pieces, used = render_pieces(phrasing.tree, values, rng, listed)
        alternatives = [{**values, name: v} for name, more in (listed or {}).items() for v in more]
        calls = []
        for vals in [values, *alternatives]:
            args = {}
            for key, tree in intent.arguments.items():
                if intent.arg_slots[key] <= used:
                    args[key] = coerce(render_canonical(tree, vals, rng), intent.tool.properties[key])
                elif key in intent.tool.required:
                    raise Rejected(f"template_missing_required:{intent.name}.{key}")
            calls.append((ToolCall(intent.name, args), vals))
        return pieces, calls

    def pick_mood(self, intent: Intent, rng: random.Random, first: bool) -> str:
        moods = intent.moods()
        weights = {"imperative": 0.55 if first else 0.8, "question": 0.25 if first else 0.1,
                   "statement": 0.2 if first else 0.1}
        return rng.choices(moods, [weights[m] for m in moods])[0]

    def offered_tools(self, needed: list[str], rng: random.Random, *, exclude: set[str] = frozenset()) -> list[Tool]:
        pool = [t for t in self.all_tools if t.name not in needed and t.name not in exclude]
        k = min(len(pool), rng.randint(0, self.max_distractors))
        tools = [t for t in self.all_tools if t.name in needed] + rng.sample(pool, k)
        rng.shuffle(tools)
        return tools

    def run(self, call: ToolCall, tool: Tool, ctx: ExecutionContext) -> ToolResult:
        result = execute(tool, call.arguments, ctx)
        if not result.ok:
            raise Rejected(f"execution_error:{call.name}")
        return result

    # ----- episodes --------------------------------------------------------------------------
    def tool_episode(self, rng: random.Random, eval_pool: bool, spoken: bool, ctx: ExecutionContext,
                     n_calls: int, said: dict[type, SlotValue] | None = None) -> tuple[str, list[CallInfo], str]:
        """`said`: the last value of each kind of slot set in this conversation so far (updated here),
        what a near miss is drawn against."""
        said = {} if said is None else said
        again = [i for i in self.intents if any(type(s) in said for s in i.slots.values())] if self.contrast_share else []
        near_miss = bool(again) and rng.random() < self.contrast_share
        intents = self.choose_intents(rng, n_calls, first=rng.choice(again) if near_miss else None)
        clauses: list[list[Piece]] = []
        infos: list[CallInfo] = []
        mood = ""
        mentioned: dict[str, SlotValue] = {}
        k = 0
        while k < len(intents):
            intent = intents[k]
            followup = k > 0 and intent is intents[k - 1] and intent.followups and rng.random() < 0.6
            values = intent.draw_slots(rng, eval_pool)
            if (k == 0 and near_miss) or (k > 0 and intent is intents[k - 1] and self.contrast_share > 0
                                           and rng.random() < self.contrast_share):
                for name, slot in intent.slots.items():
                    near = slot.contrast(said[type(slot)]) if type(slot) in said else None
                    if near is not None:
                        values[name] = near
            for name, slot in intent.slots.items():        # "... and send him a message"
                if (isinstance(slot, PersonSlot) and mentioned.get("person") and intent is not intents[k - 1]
                        and rng.random() < self.coref_share):
                    prev = mentioned["person"]
                    values[name] = SlotValue(prev.value, prev.forms, dict(prev.fields), prev.gender, pronoun=True)
            listed = self.listed(intent, intents[k + 1:k + 2], values, rng, eval_pool)
            m = self.pick_mood(intent, rng, first=k == 0)
            mood = mood or m
            pieces, calls = self.clause(intent, rng, eval_pool, m, values, followup=bool(followup), listed=listed)
            for call, vals in calls:
                for name, slot in intent.slots.items():
                    if isinstance(slot, PersonSlot):
                        mentioned["person"] = vals[name]
                    if self.contrast_share and slot.contrast(vals[name]) is not None:
                        said[type(slot)] = vals[name]
                infos.append(CallInfo(intent, call, vals, self.run(call, intent.tool, ctx)))
            clauses.append(pieces)
            k += len(calls)
        pieces = self.join(clauses, rng)
        text = with_context(wrap(pieces, mood, rng, self.surface, spoken=spoken), intents[0].name, rng,
                            self.context_share, spoken=spoken)
        answer = " ".join(self.answer(info, rng) for info in infos)
        return text, infos, answer

    def listed(self, intent: Intent, following: list[Intent], values: dict[str, SlotValue], rng: random.Random,
               eval_pool: bool) -> dict[str, list[SlotValue]] | None:
        """When the same tool comes next, sometimes (`coordinate_share`) one ask lists a second value of a
        slot the tool's `generation.coordinate` names: "set alarms for 6 and 6:30", one call each."""
        if not (self.coordinate_share and intent.coordinate and following and following[0] is intent
                and rng.random() < self.coordinate_share):
            return None
        name = rng.choice(intent.coordinate)
        if values[name].pronoun:
            return None
        for _ in range(8):
            other = intent.slots[name].draw(rng, eval_pool)
            if other.value != values[name].value:
                return {name: [other]}
        return None

    def choose_intents(self, rng: random.Random, n: int, first: Intent | None = None) -> list[Intent]:
        if first is not None:       # a near miss of an earlier call leads
            return [first] + rng.sample([i for i in self.intents if i is not first], min(n - 1, len(self.intents) - 1))
        if n >= 2 and self.person_intents and rng.random() < 0.15:
            # favour pairs that share a person, so coreference shows up often enough to learn
            first = rng.choice(self.person_intents)
            rest = rng.sample([i for i in self.person_intents if i is not first] or self.intents, 1)
            chosen = [first] + rest
            return chosen + rng.sample(self.intents, n - 2) if n > 2 else chosen
        if n >= 2 and (rng.random() < 0.12 or len(self.intents) < n):
            twice = rng.choice(self.intents)                  # the same tool twice
            others = [i for i in self.intents if i is not twice]
            return [twice, twice] + [rng.choice(others or [twice]) for _ in range(n - 2)]
        return rng.sample(self.intents, n)

    def join(self, clauses: list[list[Piece]], rng: random.Random) -> list[Piece]:
        if len(clauses) == 1:
            return clauses[0]
        if len(clauses) == 2:
            glue = [rng.choice(CONNECT_2)]
            if glue[0] == ", then " and rng.random() < 0.3:
                clauses[0] = [Piece("first ")] + clauses[0]
        else:
            a, b = rng.choice(CONNECT_3)
            glue = [a, b] + [b] * (len(clauses) - 3)
        out = list(clauses[0])
        for g, c in zip(glue, clauses[1:]):
            out += [Piece(g)] + c
        return out

    def answer(self, info: CallInfo, rng: random.Random) -> str:
        values: dict[str, Any] = dict(info.values)
        values["result"] = info.result.content
        return tidy(render_canonical(rng.choice(info.intent.answers), values, rng))

    def small_talk_episode(self, rng: random.Random, eval_pool: bool, spoken: bool, kind: str) -> tuple[str, str]:
        entry = rng.choice(self.small_talk[eval_pool][kind])
        mood = "question" if kind == "knowledge_questions" else "statement"
        text = wrap([Piece(entry.value)], mood, rng, self.surface, spoken=spoken)
        return text, str(entry.extra.get("reply", "Okay."))

    def build(self, rng: random.Random, eval_pool: bool) -> Draft:
        spoken = rng.random() < self.spoken_share
        style = "spoken" if spoken else "text"
        # the clock is pinned per example so get_time really runs and datasets stay reproducible
        ctx = ExecutionContext(now=datetime(2026, 1, 1) + timedelta(minutes=rng.randrange(365 * 24 * 60)),
                               rng=rng, vocab=self.result_vocab)
        n_requests = rng.choices(self.request_counts, self.request_weights)[0]
        messages: list[Message] = []
        requests: list[tuple[str, list[CallInfo]]] = []
        needed: list[str] = []          # tools some request calls: offered
        excluded: set[str] = set()      # tools an "unavailable" request asks for: never offered
        calls_made = False
        said: dict[type, SlotValue] = {}     # values set so far, for near misses
        starts: list[int] = []               # where each request's messages begin
        for _ in range(n_requests):
            starts.append(len(messages))
            category = rng.choices(self.categories, self.weights)[0]
            turns, text, infos, missing = self.request(category, rng, eval_pool, spoken, ctx, said)
            calls_made = calls_made or bool(infos)
            needed += [i.call.name for i in infos if i.call.name not in needed]
            excluded |= missing
            if excluded & set(needed):
                raise Rejected("session_conflict")     # one request asks for a tool another one used
            messages += turns
            requests.append((text, infos))
        if calls_made or excluded or rng.random() >= self.no_tools_offered_share:
            tools = self.offered_tools(needed, rng, exclude=excluded)
            if not tools:          # an "unavailable" request is still offered some other tool
                tools = [t for t in self.all_tools if t.name not in excluded][:1]
        else:
            tools = []
        text, infos = requests[-1]
        history = sum(m.role == "user" for m in messages) > 1     # as the converter of outside data counts it
        return Draft(Conversation(messages, tools), text, category, style, infos, ctx, history,
                     meta={"requests": n_requests, "request_starts": starts}, requests=requests)

    def request(self, category: str, rng: random.Random, eval_pool: bool, spoken: bool, ctx: ExecutionContext,
                said: dict[type, SlotValue] | None = None) -> tuple[list[Message], str, list[CallInfo], set[str]]:
        """One request of a category: its turns, its (last) user text, its calls, the tools it must not be
        offered."""
        if category == "single" or category.startswith("multi"):
            n = 1 if category == "single" else (3 if category == "multi3" else 2)
            text, infos, answer = self.tool_episode(rng, eval_pool, spoken, ctx, n, said)
            return self.turns(text, infos, answer), text, infos, set()
        if category in ("chitchat", "knowledge"):
            text, answer = self.small_talk_episode(rng, eval_pool, spoken,
                                                   "chitchat" if category == "chitchat" else "knowledge_questions")
            return self.turns(text, [], answer), text, [], set()
        if category == "unavailable":
            intent = rng.choice(self.intents)
            mood = self.pick_mood(intent, rng, True)
            pieces, _ = self.clause(intent, rng, eval_pool, mood)
            text = with_context(wrap(pieces, mood, rng, self.surface, spoken=spoken), intent.name, rng,
                                self.context_share, spoken=spoken)
            answer = render_canonical(rng.choice(UNAVAILABLE_TREES), {"cap": intent.capability}, rng)
            return self.turns(text, [], answer), text, [], {intent.name}
        if category == "ask_back":
            asking = [i for i in self.intents if i.tool.required]
            if not asking:
                raise Rejected("ask_back_without_required_values")
            intent = rng.choice(asking)
            vague = render_canonical(rng.choice(VAGUE_TREES), {"cap": intent.capability}, rng)
            vague = wrap([Piece(vague)], "question" if vague.startswith(("can", "could")) else "imperative",
                         rng, self.surface, spoken=spoken)
            keys = [k.replace("_", " ") for k in intent.tool.required]
            keys_text = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
            one = len(keys) == 1
            ask = tidy(render_canonical(rng.choice(ASK_TREES), {"cap": intent.capability, "keys": keys_text,
                                                                 "be": "is" if one else "are",
                                                                 "pron": "it" if one else "they"}, rng))
            mood = self.pick_mood(intent, rng, True)
            pieces, [(call, values)] = self.clause(intent, rng, eval_pool, mood)
            text = wrap(pieces, mood, rng, self.surface, spoken=spoken)
            info = CallInfo(intent, call, values, self.run(call, intent.tool, ctx))
            turns = [Message.text("user", vague), Message.text("assistant", ask)]
            return turns + self.turns(text, [info], self.answer(info, rng)), text, [info], set()
        raise Rejected(f"unknown_category:{category}")

    def turns(self, text: str, infos: list[CallInfo], answer: str) -> list[Message]:
        msgs = [Message.text("user", text)]
        if infos:   # parallel calls: every call of the request in one turn, then all their results
            msgs.append(Message("assistant", [], [info.call for info in infos]))
            msgs += [Message.text("tool", info.result.to_json(), name=info.call.name) for info in infos]
        msgs.append(Message.text("assistant", answer))
        return msgs
