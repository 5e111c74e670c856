"""An intent is one tool's `generation` section compiled: slots, phrasings by mood, argument
templates, answer templates and extra value checks. Everything here comes from the tool's YAML
file, so a user adds a tool (and its phrasings) without writing code.

Phrasings are held out by hash for the eval splits (like slot values), so the test split measures
how a model does on wordings it never trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from toolcore.errors import ToolkitError
from toolcore.schema import Tool
from toolcore.vocab import Vocabulary

from .slots import Slot, SlotValue, build_slot, stable_fraction
from .surface import Piece, join_list
from .templates import Seq, SlotRef, compile_template, sample, slot_names

MOODS = ("imperative", "question", "statement")


@dataclass
class Phrasing:
    text: str
    tree: Seq
    slots: set[str]


@dataclass
class Intent:
    tool: Tool
    slots: dict[str, Slot]
    arguments: dict[str, Seq]
    phrasings: dict[str, dict[bool, list[Phrasing]]]     # mood -> eval_pool -> phrasings
    followups: list[Phrasing]
    answers: list[Seq]
    capability: str
    checks: jsonschema.Draft202012Validator | None
    arg_slots: dict[str, set[str]] = field(default_factory=dict)
    coordinate: list[str] = field(default_factory=list)     # slots one ask may list ("in Oslo and Bergen")

    @property
    def name(self) -> str:
        return self.tool.name

    def draw_slots(self, rng: random.Random, eval_pool: bool) -> dict[str, SlotValue]:
        return {name: slot.draw(rng, eval_pool) for name, slot in self.slots.items()}

    def moods(self) -> list[str]:
        return [m for m in MOODS if self.phrasings[m][False]]


def render_pieces(tree: Seq, values: dict[str, SlotValue], rng: random.Random,
                  listed: dict[str, list[SlotValue]] | None = None) -> tuple[list[Piece], set[str]]:
    """User-side rendering: slot surfaces flagged as slots; returns the slots actually used. `listed`:
    further values of a slot, said with its own as one list ("in Oslo and Bergen")."""
    pieces, used = [], set()
    for item in sample(tree, rng, []):
        if isinstance(item, SlotRef):
            used.add(item.name)
            said = []
            for v in [values[item.name], *(listed or {}).get(item.name, [])]:
                text = str(v.field_value(item.field)) if item.field else v.surface(item.style, rng)
                said.append([Piece(text, is_slot=True, free_text=v.free_text and not item.field)])
            pieces += join_list(said, rng)
        else:
            pieces.append(Piece(item))
    return pieces, used


def render_canonical(tree: Seq, values: dict[str, Any], rng: random.Random) -> str:
    """Assistant-side rendering (arguments, answers): canonical values, styled where asked."""
    out = []
    for item in sample(tree, rng, []):
        if isinstance(item, SlotRef):
            v = values[item.name]
            if isinstance(v, SlotValue):
                if item.style and item.style != "cap":
                    out.append(v.forms.get(item.style, [str(v.value)])[0])
                else:
                    out.append(str(v.field_value(item.style or item.field)))
            elif isinstance(v, dict):
                out.append(str(v.get(item.field, "")))
            else:
                out.append(str(v))
        else:
            out.append(item)
    return "".join(out)


def compile_intent(tool: Tool, vocab: Vocabulary, *, holdout: float) -> Intent | None:
    gen = tool.generation
    if not gen:
        return None
    where = f"{tool.source}: generation"
    slots = {name: build_slot(dict(spec), vocab, holdout, where=f"{where}.slots.{name}")
             for name, spec in (gen.get("slots") or {}).items()}

    def compile_list(key: str) -> list[Phrasing]:
        out = []
        for i, text in enumerate(gen.get(key) or []):
            tree = compile_template(str(text), where=f"{where}.{key}[{i}]")
            unknown = slot_names(tree) - set(slots)
            if unknown:
                raise ToolkitError(f"phrasing uses undeclared slot {sorted(unknown)[0]!r}", file=tool.source,
                                   field=f"generation.{key}[{i}]", fix="declare it under generation.slots")
            out.append(Phrasing(str(text), tree, slot_names(tree)))
        return out

    phrasings: dict[str, dict[bool, list[Phrasing]]] = {}
    for mood in MOODS:
        items = compile_list(mood)
        held = [p for p in items if stable_fraction(tool.name + p.text) < holdout]
        kept = [p for p in items if p not in held]
        if not kept or not held:          # too few phrasings to hold any out
            kept = held = items
        phrasings[mood] = {False: kept, True: held}
    if not any(phrasings[m][False] for m in MOODS):
        raise ToolkitError("no phrasings", file=tool.source, field="generation.imperative",
                           fix="add phrasings under imperative / question / statement")
    arguments = {k: compile_template(str(v), where=f"{where}.arguments.{k}")
                 for k, v in (gen.get("arguments") or {}).items()}
    for k in arguments:
        if k not in tool.properties:
            raise ToolkitError(f"argument {k!r} is not a parameter of the tool", file=tool.source,
                               field=f"generation.arguments.{k}")
    missing = [k for k in tool.required if k not in arguments]
    if missing:
        raise ToolkitError(f"required parameter {missing[0]!r} has no argument template", file=tool.source,
                           field="generation.arguments")
    coordinate = [str(c) for c in gen.get("coordinate") or []]
    for c in coordinate:
        if c not in slots or slots[c].free_text:
            raise ToolkitError(f"coordinate names {c!r}, which is not a slot" if c not in slots else
                               f"coordinate names the free-text slot {c!r}: a list of them has no boundary",
                               file=tool.source, field="generation.coordinate",
                               fix="name slots from generation.slots whose values are names, places, times or amounts")
    checks = None
    if gen.get("checks"):
        schema = {"type": "object", "properties": gen["checks"]}
        try:
            checks = jsonschema.Draft202012Validator(schema)
            checks.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise ToolkitError(f"invalid checks schema: {e.message}", file=tool.source, field="generation.checks") from e
    return Intent(
        tool=tool, slots=slots, arguments=arguments, phrasings=phrasings, followups=compile_list("followup"),
        answers=[compile_template(str(a), where=f"{where}.answer") for a in gen.get("answer") or [f"Done: {tool.name}."]],
        capability=str(gen.get("capability", f"use {tool.name}")), checks=checks,
        arg_slots={k: slot_names(v) for k, v in arguments.items()}, coordinate=coordinate,
    )
