"""Conversations in every shape BFCL tests, for tools known only by their schema, and their checks.

Shapes (weights in `schema_data.shapes`):
  simple             one tool offered, one call
  multiple           2..max_offered tools offered (a same-domain one among them half the time), one fits
  parallel           the same tool 2-3 times, up to `max_calls` ("... in Paris, and the same for Rome")
  parallel_multiple  2-3 calls over 2+ tools, up to `max_calls`
  irrelevance        the request needs a tool that is not offered: no call, a short answer saying so

Rows keep data_gen's categories, so recipes' category weights apply to them unchanged: simple and
multiple are `single`, parallel shapes `multi2`/`multi3` by their number of calls (3 or more: `multi3`),
irrelevance `unavailable`. The shape, the source (library or user) and masking are in the row id
(`<seed>-<i>-g.<shape>.<source>[.masked]`) and counted in the manifest.

`check(draft)` is data_gen's verification for these rows: every call names an offered tool and
validates against its schema; every value is grounded in the request (`grounding_problem`: the value
or one of its documented forms, `samplers.forms`); the calls round-trip through every format.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from toolcore.conversation import Conversation, Message
from toolcore.executors import ExecutionContext, ToolResult, execute
from toolcore.formats import ChatFormat
from toolcore.schema import Tool, ToolCall, flag_phrases
from toolcore.verify import call_problem, repeated_call_problem, roundtrip_problem

from .. import discourse as D
from ..compose import CONNECT_2, CONNECT_3, UNAVAILABLE_TREES, Rejected
from ..intents import render_canonical
from ..surface import Piece, SurfaceConfig, tidy, wrap
from . import library as L
from .config import SHAPES  # noqa: F401  (re-exported: the shapes this module builds)
from .realise import actions, anchor, arrange, inline, mention, request, tell_apart, value_pieces
from .samplers import Kind, Sampler, Unsupported, classify, forms, list_items

ANSWERS = ["Done.", "All done.", "That's taken care of.", "Okay, done.", "Here you go.", "Finished, all set."]
# after a connector ("and", ", then"): the second call of the same tool, said by what changes
SAME_FOR = ["the same for ", "do the same for ", "same thing for ", "again for ", "also for ", "one more for "]


@dataclass
class Prepared:
    """A tool compiled once: the Kind of each parameter it can draw, and what a request opens with."""

    tool: Tool
    domain: str
    family: str
    source: str                          # "library" or "user"
    kinds: dict[str, Kind]
    imperatives: list[str]
    questions: list[str]
    maskable: bool
    # the kinds its required parameters take, one count each (a const is fixed by the schema): what a
    # request must say for this tool to be a look-alike of it (`EpisodeBuilder.fits`)
    needs: Counter


def prepare(tool: Tool, domain: str, family: str, source: str) -> Prepared:
    """Raises Unsupported when a required parameter has a schema no sampler can draw for."""
    kinds = {}
    for key, spec in tool.properties.items():
        try:
            kinds[key] = classify(key, spec, tool.parameters)
        except Unsupported as u:
            if key in tool.required:
                raise Unsupported(f"{u.reason}") from None
    tell_apart(kinds)
    imps, qs = actions(tool.description, tool.name)
    if not imps and not qs:                     # no description to speak from: the name, read as words
        words = " ".join(re.findall(r"[A-Za-z]+", tool.name)).lower()
        imps = [f"run {words or tool.name}"]
    needs = Counter(kinds[k].sem for k in tool.required if k in kinds and kinds[k].sem != "const")
    return Prepared(tool, domain, family, source, kinds, imps, qs, L.maskable(tool), needs)


@dataclass
class GCall:
    prepared: Prepared
    call: ToolCall                    # as the schema names it
    shown: ToolCall                   # as the conversation shows it (renamed when masked)
    result: ToolResult


@dataclass
class GDraft:
    conversation: Conversation
    user_text: str
    category: str
    style: str
    calls: list[GCall]
    ctx: ExecutionContext
    shape: str
    source: str
    masked: bool
    history: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_calls(self) -> list[ToolCall]:
        return [c.shown for c in self.calls]


# Library families of one domain whose tools can do much of each other's job: never offered in place of
# each other in an irrelevance row ("how much is 200 dollars in euros?" with only get_exchange_rate is not a
# request no tool can serve)
NEAR_FAMILIES = [frozenset(s) for s in (
    {"convert_currency", "get_exchange_rate"}, {"send_sms", "schedule_message"}, {"create_task", "create_note"},
    {"get_local_time", "convert_timezone"}, {"find_events", "find_concerts"}, {"track_package", "get_order_status"},
    {"search_movies", "get_movie_showtimes"}, {"search_products", "compare_prices"},
    {"get_match_score", "get_league_standings"}, {"convert_temperature", "convert_units"})]


def near(a: str, b: str) -> bool:
    return a == b or any(a in s and b in s for s in NEAR_FAMILIES)


class EpisodeBuilder:
    def __init__(self, sampler: Sampler, surface: SurfaceConfig, *, shapes: dict[str, float],
                 max_offered: int, optional_share: float, mask_share: float, spoken_share: float,
                 aliases: dict[str, list[str]], hard_irrelevance: float = 0.0, inline_share: float = 0.0,
                 bare_share: float = 0.0, lookalike: float = 0.0, context_share: float = 0.0,
                 follow_share: float = 0.0, long_list_share: float = 0.0, long_list_max: int = 16,
                 structured_weight: float = 1.0, coordinate_share: float = 0.0, max_calls: int = 3):
        self.sampler = sampler
        self.surface = surface
        self.shapes, self.shape_weights = list(shapes), list(shapes.values())
        self.max_offered = max_offered
        self.optional_share = optional_share
        self.mask_share = mask_share
        self.spoken_share = spoken_share
        self.aliases = aliases
        self.hard_irrelevance = hard_irrelevance
        self.inline_share = inline_share
        self.bare_share = bare_share
        self.lookalike = lookalike
        self.context_share = context_share
        self.follow_share = follow_share
        self.long_list_share = long_list_share
        self.long_list_max = long_list_max
        self.structured_weight = structured_weight
        self.coordinate_share = coordinate_share
        self.max_calls = max_calls

    # ----- one call --------------------------------------------------------------------------------
    def draw_args(self, p: Prepared, rng: random.Random, eval_pool: bool) -> dict[str, Any]:
        # optional parameters are often left out, and then absent from the call
        try:
            args = self.sampler.draw_fields(p.kinds, p.tool.required, rng, eval_pool, self.optional_share,
                                            skip_optional_const=True)
        except Unsupported as u:
            raise Rejected(f"general:unsupported:{u.reason}") from None
        return order_ranges(args)

    def clause(self, p: Prepared, args: dict[str, Any], rng: random.Random, *, first: bool,
               follow: list[list[Piece]] | None = None, also: dict[str, list[Any]] | None = None
               ) -> tuple[list[Piece], str]:
        """The ask for one call. With `follow` (a one-call request), some details may be said in sentences of
        their own after the ask (`discourse.pick_follow`); they are appended to it. `also`: a parameter's
        further values, said with its own as one list, one call each ("the weather in Oslo and Bergen")."""
        also = also or {}
        if p.questions and rng.random() < (0.3 if first else 0.1):
            action, mood = rng.choice(p.questions), "question"
        else:
            mood = "statement" if rng.random() < (0.2 if first else 0.05) else "imperative"
            action = rng.choice(p.imperatives or p.questions)
        said = dict(args)
        act: str | list[Piece] = action
        # the value in the place the description names it, as people ask: "what is the capital of Brazil?"
        # rather than "... of a country, country: Brazil"
        # (off, no draw is taken: the default data stays what it was without this option)
        places = [(k, pl) for k in args if self.inline_share and k not in also and k in p.kinds
                  and (pl := anchor(action, k, p.kinds[k]))]
        if places and rng.random() < self.inline_share:
            key, place = rng.choice(places)
            act = inline(action, place, value_pieces(p.kinds[key], said.pop(key), rng, self.aliases))
        if follow is not None and self.follow_share:      # no draw at 0: the rows stay as they were
            items = [(p.kinds[k], k) for k in said if k in p.kinds]
            for i in D.pick_follow([(kind, said[k]) for kind, k in items], rng, self.follow_share):
                kind, key = items[i]
                follow.append(D.follow_sentence(kind, value_pieces(kind, said.pop(key), rng, self.aliases), rng))
        details = arrange([(p.kinds[k], mention(p.kinds[k], v, rng, self.aliases, bare=self.bare_share,
                                                also=also.get(k, ())))
                           for k, v in said.items()], rng)
        return request(act, mood, details, rng)

    def long_list_size(self, rng: random.Random) -> int:
        """How many tools a long list offers, with probability `long_list_share` (else 0; no draw at 0)."""
        if not self.long_list_share or rng.random() >= self.long_list_share:
            return 0
        return rng.randint(self.max_offered + 1, self.long_list_max)

    # ----- offered tools ---------------------------------------------------------------------------
    def distractors(self, needed: list[Prepared], k: int, rng: random.Random, pool: Sequence[Prepared], *,
                    other_domains: bool = False, same_domain: float = 0.5,
                    said: Counter | None = None, same_count: int = 1) -> list[Prepared]:
        """Up to k tools that cannot serve the request (another family, not a near one; another domain when
        asked), the first from the request's own domain with probability same_domain (a hard negative), and
        that one a look-alike with probability `lookalike` when the request has one (`fits`: its required
        parameters take the kinds of values the request `said`).
        A long list (`same_count` > 1) takes up to that many from the request's domain, as an app's own
        tools crowd one domain. Drawn from the split's own pool, so tools held out for validation/test
        never appear in training rows."""
        domains = {p.domain for p in needed}
        pool = [p for p in pool if not any(near(p.family, n.family) for n in needed)
                and (not other_domains or p.domain not in domains)]
        out: list[Prepared] = []
        same = [p for p in pool if p.domain in domains]
        if same and not other_domains and k and rng.random() < same_domain:
            # no draw at lookalike 0: the same rows as before the option
            alike = [p for p in same if self.fits(p, said)] if self.lookalike and said else []
            out.append(rng.choice(alike if alike and rng.random() < self.lookalike else same))
            for _ in range(min(same_count, k) - 1):
                rest = [p for p in same if p.family not in {o.family for o in out}]
                if not rest:
                    break
                out.append(rng.choice(rest))
        while len(out) < k and pool:
            c = rng.choice(pool)
            if c.family not in {o.family for o in out}:
                out.append(c)
            pool = [p for p in pool if p is not c]
        return out

    def fits(self, p: Prepared, said: Counter) -> bool:
        """Every required parameter of `p` could take one of the values the request says (by kind, each
        value once): fibonacci_number(n) for "is 17 prime?", calculate_loan_payment(principal, rate, years)
        for a compound-interest request. Such a tool cannot be told from the right one by its arguments,
        only by its description: the near misses BFCL's irrelevance cases offer, and the distractors that
        make a "multiple" row read the descriptions."""
        return bool(p.needs) and not p.needs - said

    # ----- episodes --------------------------------------------------------------------------------
    def pick(self, pool: Sequence[Prepared], rng: random.Random, k: int = 1) -> list[Prepared]:
        """k distinct tools to call, those taking objects or arrays of objects `structured_weight` times as
        often (at 1, the plain draw: the rows stay what they were without the option)."""
        if self.structured_weight == 1.0:
            return [rng.choice(pool)] if k == 1 else rng.sample(list(pool), min(len(pool), k))
        left = list(pool)
        out: list[Prepared] = []
        while left and len(out) < k:
            c = rng.choices(left, [self.structured_weight if structured(p) else 1.0 for p in left])[0]
            out.append(c)
            left = [p for p in left if p is not c]
        return out

    def build(self, rng: random.Random, eval_pool: bool, pool: Sequence[Prepared], ctx: ExecutionContext) -> GDraft:
        if not pool:
            raise Rejected("general:no_tools")
        shape = rng.choices(self.shapes, self.shape_weights)[0]
        spoken = rng.random() < self.spoken_share
        if shape == "irrelevance":
            return self.irrelevance(rng, eval_pool, pool, ctx, spoken)
        if shape in ("simple", "multiple"):
            plan = self.pick(pool, rng)
        elif shape == "parallel":
            plan = self.pick(pool, rng) * self.parallel_count(rng)
        else:
            plan = self.parallel_multiple_plan(pool, rng)
        clauses: list[list[Piece]] = []
        calls: list[tuple[Prepared, dict[str, Any]]] = []
        follow: list[list[Piece]] = []
        mood = ""
        # no draw at 0: the rows stay what they were without the option
        together = shape == "parallel" and self.coordinate_share and rng.random() < self.coordinate_share
        listed = self.coordinated(plan[0], len(plan), rng, eval_pool, calls) if together else None
        for k, p in enumerate([] if listed else plan):
            if k and p is plan[k - 1]:            # the same tool again: change at least one value
                args, pieces = self.again(p, calls[-1][1], rng, eval_pool)
            else:
                args = self.draw_args(p, rng, eval_pool)
                # details in sentences of their own only where one call is asked: with several, "the date
                # is ..." would not say which call it belongs to
                pieces, m = self.clause(p, args, rng, first=k == 0, follow=follow if len(plan) == 1 and not spoken else None)
                mood = mood or m
            calls.append((p, args))
            clauses.append(pieces)
        if listed:
            clauses.append(listed[0])
            mood = listed[1]
        text = D.with_context(wrap(join(clauses, rng), mood, rng, self.surface, spoken=spoken), plan[0].domain, rng,
                              self.context_share, spoken=spoken, follow=follow)
        said = [p.text for c in clauses + follow for p in c if p.is_slot]
        needed = list({id(p): p for p, _ in calls}.values())
        extra, same_count = 0, 1
        size = self.long_list_size(rng) if shape != "simple" else 0
        if size:
            # a long tool list, as apps offer them: many tools, several of the request's own domain
            extra = max(0, size - len(needed))
            same_count = rng.randint(2, 4)
        elif shape == "multiple":
            extra = rng.randint(1, max(1, self.max_offered - 1))
        elif shape != "simple":
            extra = rng.randint(0, max(0, min(2, self.max_offered - len(needed))))
        offered = needed + self.distractors(needed, extra, rng, pool, said=kinds_said(calls), same_count=same_count)
        rng.shuffle(offered)
        if shape == "multiple" and len(offered) < 2:
            raise Rejected("general:too_few_tools")
        draft = self.finish(text, offered, calls, shape, spoken, rng, ctx)
        draft.meta["said"] = said
        return draft

    def parallel_count(self, rng: random.Random) -> int:
        """Calls of a "parallel" row: 2 or 3 (the draw of before) at max_calls 3, else 2..max_calls alike."""
        return rng.choice([2, 2, 3]) if self.max_calls == 3 else rng.randint(2, self.max_calls)

    def parallel_multiple_plan(self, pool: Sequence[Prepared], rng: random.Random) -> list[Prepared]:
        """2 or 3 tools, then (max_calls above 3) up to max_calls calls in all, the extra ones asking a tool
        again right after itself ("quotes for Lyon and for Nice, then book ..."), so that each repeat reads
        as "the same for X" or a clause of its own next to its first call."""
        firsts = self.pick(pool, rng, rng.choice([2, 2, 3]))
        if len(firsts) < 2:
            raise Rejected("general:too_few_tools")
        if self.max_calls == 3:
            return firsts + ([rng.choice(firsts)] if len(firsts) == 2 and rng.random() < 0.25 else [])
        repeats = Counter(rng.randrange(len(firsts)) for _ in range(rng.randint(0, self.max_calls - len(firsts))))
        return [p for i, p in enumerate(firsts) for _ in range(1 + repeats[i])]

    def coordinated(self, p: Prepared, n: int, rng: random.Random, eval_pool: bool,
                    calls: list[tuple[Prepared, dict[str, Any]]]) -> tuple[list[Piece], str] | None:
        """One ask for n calls of the same tool that differ in one parameter, its values said as one list
        ("the forecast for Oslo, Bergen and Tromsø", "convert 20 and 45 euros"): how people ask for the
        same thing several times. The calls are appended to `calls`, in the order the values are said.
        None when no parameter of the call can be listed (the caller says each call on its own)."""
        args = self.draw_args(p, rng, eval_pool)
        keys = [k for k in args if coordinable(k, p.kinds[k])]
        if not keys:
            return None
        key = rng.choice(keys)
        values = [args[key]]
        for _ in range(n - 1):
            values.append(self.other_value(p.kinds[key], values, rng, eval_pool))
        calls += [(p, {**args, key: v}) for v in values]
        return self.clause(p, args, rng, first=True, also={key: values[1:]})

    def other_value(self, kind: Kind, taken: list[Any], rng: random.Random, eval_pool: bool) -> Any:
        """A value of `kind` none of `taken` is (eight draws at most): the next call of a parallel request."""
        for _ in range(8):
            try:
                value = self.sampler.draw(kind, rng, eval_pool, self.optional_share)
            except Unsupported as u:
                raise Rejected(f"general:unsupported:{u.reason}") from None
            if value not in taken:
                return value
        raise Rejected("general:parallel_no_variation")

    def again(self, p: Prepared, prev: dict[str, Any], rng: random.Random, eval_pool: bool
              ) -> tuple[dict[str, Any], list[Piece]]:
        """A second call of the same tool: one or two values changed, said as "the same for X" or in full."""
        keys = [k for k in prev if p.kinds[k].sem != "const"]
        if not keys:
            raise Rejected("general:parallel_nothing_to_vary")
        changed = rng.sample(keys, 1 if len(keys) == 1 or rng.random() < 0.8 else 2)
        args = dict(prev)
        for key in changed:
            args[key] = self.other_value(p.kinds[key], [prev[key]], rng, eval_pool)
        args = order_ranges(args)
        if rng.random() < 0.6:
            details = arrange([(p.kinds[k], mention(p.kinds[k], args[k], rng, self.aliases, bare=self.bare_share))
                               for k in changed], rng)
            out: list[Piece] = [Piece(rng.choice(SAME_FOR).lstrip(" ,"))]
            lead = details[0][0]
            if not lead.is_slot and (m := re.match(r"(?:for|of) ", lead.text)):
                # "the same for" + "for Köln" / "of 40 km": one "for" is enough
                details[0] = ([Piece(lead.text[m.end():])] if lead.text[m.end():] else []) + details[0][1:]
            for d_i, d in enumerate(details):
                out += ([Piece(" ")] if d_i else []) + d
            return args, out
        pieces, _ = self.clause(p, args, rng, first=False)
        return args, pieces

    def irrelevance(self, rng: random.Random, eval_pool: bool, pool: Sequence[Prepared], ctx: ExecutionContext,
                    spoken: bool) -> GDraft:
        wanted = self.pick(pool, rng)[0]
        args = self.draw_args(wanted, rng, eval_pool)
        follow: list[list[Piece]] = []
        pieces, mood = self.clause(wanted, args, rng, first=True, follow=None if spoken else follow)
        text = D.with_context(wrap(pieces, mood, rng, self.surface, spoken=spoken), wanted.domain, rng,
                              self.context_share, spoken=spoken, follow=follow)
        hard = self.hard_irrelevance > 0 and rng.random() < self.hard_irrelevance   # no draw at 0: same rows as before
        size = self.long_list_size(rng)
        count = size or rng.randint(1, max(1, self.max_offered - 1))
        offered = self.distractors([wanted], count, rng, pool, other_domains=not hard, same_domain=1.0,
                                   said=kinds_said([(wanted, args)]), same_count=rng.randint(2, 4) if size and hard else 1)
        if not offered:
            raise Rejected("general:too_few_tools")
        cap = rng.choice(wanted.imperatives) if wanted.imperatives else "do that"
        draft = self.finish(text, offered, [], "irrelevance", spoken, rng, ctx)
        draft.meta["said"] = [p.text for c in [pieces] + follow for p in c if p.is_slot]
        draft.meta["wanted"] = GCall(wanted, ToolCall(wanted.tool.name, args), ToolCall(wanted.tool.name, args),
                                     ToolResult(True, {}))     # not offered, not called: its values still grounded
        answer = tidy(render_canonical(rng.choice(UNAVAILABLE_TREES), {"cap": cap}, rng))
        draft.conversation.messages[-1] = Message.text("assistant", answer)
        return draft

    def finish(self, text: str, offered: list[Prepared], calls: list[tuple[Prepared, dict[str, Any]]], shape: str,
               spoken: bool, rng: random.Random, ctx: ExecutionContext) -> GDraft:
        tools = [p.tool for p in offered]
        masked = bool(tools) and all(p.maskable for p in offered) and rng.random() < self.mask_share
        renames: dict[str, tuple[str, dict[str, str]]] = {}
        if masked:
            tools, renames = L.mask(tools, rng)
        gcalls = []
        for p, args in calls:
            call = ToolCall(p.tool.name, args)
            shown = L.rename_call(call, renames) if masked else call
            shown_tool = next(t for t in tools if t.name == shown.name)
            result = execute(shown_tool, shown.arguments, ctx)
            gcalls.append(GCall(p, call, shown, result))
        messages = [Message.text("user", text)]
        if gcalls:
            messages.append(Message("assistant", [], [g.shown for g in gcalls]))
            messages += [Message.text("tool", g.result.to_json(), name=g.shown.name) for g in gcalls]
        messages.append(Message.text("assistant", rng.choice(ANSWERS)))
        n = len(gcalls)
        category = {0: "unavailable", 1: "single", 2: "multi2"}.get(n, "multi3")
        source = "user" if any(p.source == "user" for p in offered) else "library"
        return GDraft(Conversation(messages, tools), text, category, "spoken" if spoken else "text", gcalls, ctx,
                      shape, source, masked)


def structured(p: Prepared) -> bool:
    """The tool takes an object or an array of objects (the shapes APIs are built with)."""
    return any(k.sem == "object" or (k.sem == "array" and k.items is not None and k.items.sem == "object")
               for k in p.kinds.values())


def kinds_said(calls: list[tuple[Prepared, dict[str, Any]]]) -> Counter:
    """The kinds of the values a request says (one count per value), for `EpisodeBuilder.fits`."""
    return Counter(p.kinds[k].sem for p, args in calls for k in args if k in p.kinds)


def join(clauses: list[list[Piece]], rng: random.Random) -> list[Piece]:
    if len(clauses) == 1:
        return clauses[0]
    if len(clauses) == 2:
        glue = [rng.choice(CONNECT_2)]
    else:
        a, b = rng.choice(CONNECT_3)
        glue = [a, b] + [b] * (len(clauses) - 3)
    out = list(clauses[0])
    for g, c in zip(glue, clauses[1:]):
        if c and c[0].text.startswith(("and ", ", and")) and g.strip(" ,.;").lower() in ("and", "and then", "and also"):
            g = ", "                              # "X and and the same for Y"
        out += [Piece(g)] + c
    return out


# a range's two ends as parameter names say them (min_price / max_price, start_date / end_date)
RANGE_PAIRS = [("min", "max"), ("start", "end"), ("from", "to"), ("lower", "upper"), ("low", "high")]
RANGE_ENDS = tuple(f"{end}_" for pair in RANGE_PAIRS for end in pair)


def coordinable(key: str, kind: Kind) -> bool:
    """Whether several values of this parameter read as one list meaning one call each: a scalar said in a
    few words; not a flag, free text (its own "and"s), an object or list, or one end of a range."""
    return kind.sem not in ("const", "bool", "object", "array", "csv", "message") and not key.startswith(RANGE_ENDS)


def order_ranges(args: dict[str, Any]) -> dict[str, Any]:
    """min_x <= max_x, start <= end: a range the user asks for is never upside down."""
    for a, b in RANGE_PAIRS:
        for key in list(args):
            other = b + key[len(a):]
            if not key.startswith(a + "_") or other not in args:
                continue
            x, y = args[key], args[other]
            numbers = isinstance(x, (int, float)) and not isinstance(x, bool) and type(x) is type(y)
            iso = isinstance(x, str) and isinstance(y, str) and bool(re.match(r"\d", x)) and bool(re.match(r"\d", y))
            if (numbers or iso) and x > y:
                args[key], args[other] = y, x
    return args


# ----- row ids -----------------------------------------------------------------------------------------
ROW_MARK = "-g."     # a schema-driven row's id: <seed>-<i>-g.<shape>.<source>[.masked]


def row_id_suffix(shape: str, source: str, masked: bool) -> str:
    return f"{ROW_MARK}{shape}.{source}" + (".masked" if masked else "")


def row_tags(row_id: str) -> list[str] | None:
    """[shape, source(, "masked")] of a schema-driven row's id; None for a built-in tools' row."""
    return row_id.split(ROW_MARK, 1)[1].split(".") if ROW_MARK in row_id else None


# ----- verification -----------------------------------------------------------------------------------
def _present(form: str, text: str) -> bool:
    """`form` appears in `text` as a whole token run (case-insensitive): "5" is not in "15", "5%" or
    "2025-05-14"."""
    return re.search(r"(?<![\w.:/-])" + re.escape(form.lower()) + r"(?![\w/%]|[.:-]\d)", text) is not None


def grounding_problem(kind: Kind, value: Any, text: str, aliases: dict[str, list[str]], *, alone: bool = True) -> bool:
    """True when `value` (of `kind`) is not said in `text` (lowercased) in any of its accepted forms.
    `alone`: no other call of the request has this parameter, so a boolean said both ways is a contradiction."""
    if kind.sem == "const":
        return False               # fixed by the schema: nothing for the user to say
    if kind.sem in ("array", "csv"):
        return any(grounding_problem(kind.items, v, text, aliases, alone=alone)   # type: ignore[arg-type]
                   for v in list_items(kind, value))
    if kind.sem == "object":
        return any(k not in kind.fields or grounding_problem(kind.fields[k], v, text, aliases, alone=alone)
                   for k, v in value.items())
    if isinstance(value, bool):
        said = any(_present(f, text) for f in flag_phrases(kind.noun, value))
        contradicted = alone and any(_present(f, text) for f in flag_phrases(kind.noun, not value))
        return not said or contradicted
    return not any(_present(f, text) for f in forms(kind, value, aliases))


def check(draft: GDraft, text: str, formats: Sequence[ChatFormat], aliases: dict[str, list[str]]) -> str | None:
    """The first reason `draft` (with user request `text`) must not be kept, or None."""
    offered = {t.name: t for t in draft.conversation.tools}
    low = text.lower()
    uses = [g.call.name for g in draft.calls]
    if repeated_call_problem([g.call for g in draft.calls]):
        return "general:repeated_call"
    wanted = [draft.meta["wanted"]] if "wanted" in draft.meta else []
    for g in draft.calls + wanted:
        problem = call_problem(g.shown, offered) if g not in wanted else None
        if problem:
            return f"general:{problem}"
        for key, value in g.call.arguments.items():
            kind = g.prepared.kinds.get(key)
            if kind is None or grounding_problem(kind, value, low, aliases, alone=uses.count(g.call.name) <= 1):
                return "general:ungrounded"
    return roundtrip_problem(draft.expected_calls, formats) and "general:roundtrip"
