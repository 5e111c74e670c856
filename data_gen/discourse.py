"""Requests in more than one sentence, as people write them: a sentence of context before the ask ("We're
moving the office next month."), and, for schema-driven requests, details given after it in sentences of
their own ("The delivery address is 12 Elm Street, Leeds. Make it 40 units."). The ask itself comes from
`compose` (built-in tools) or `schema_driven.realise`; this module only adds sentences around it.
Context sentences carry no digits and no names, so they can never ground a value the request does not say.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Sequence

from .surface import Piece

if TYPE_CHECKING:
    from .schema_driven.samplers import Kind

GENERIC_CONTEXT = [
    "Quick one.", "I've been meaning to sort this out.", "Something came up and I need a hand.",
    "Hoping you can help with this.", "I'm trying to get a few things done before the weekend.",
    "This is for work.", "Not urgent, but I'd like it done today.", "I keep forgetting to do this.",
    "Can you help me out with something?", "Okay, next thing on my list.", "My manager asked me to take care of this.",
    "I'm on my phone so I'll keep it short.", "One more thing while I think of it.",
    "I'm helping a friend with this.", "I tried doing this myself but couldn't figure it out.",
]
DOMAIN_CONTEXT = {
    "maths": ["I'm checking my homework.", "This came up in a problem set.", "I want to double-check a calculation."],
    "finance": ["I'm going over my budget.", "I'm trying to plan my savings.", "I'm looking at my investments."],
    "travel": ["We're planning a trip.", "I'm sorting out travel for the team.", "I'm finally taking some time off."],
    "sports": ["I'm catching up on the season.", "I'm trying to get back into training.", "We were arguing about this at lunch."],
    "science": ["I'm working on a lab report.", "This is for a class assignment.", "I'm curious about something."],
    "media": ["I'm looking for something to watch tonight.", "I'm putting together some things for the weekend.",
              "A friend recommended this."],
    "devices": ["I'm not at home right now.", "I'm about to go to bed.", "Guests are coming over soon."],
    "lookup": ["I'm writing something and need a fact.", "I'm curious.", "Settle an argument for me."],
    "food": ["I'm planning dinner.", "We're having people over.", "I'm trying to eat better."],
    "health": ["I'm trying to keep better track of my health.", "My doctor asked me to keep a log.",
               "I'm not feeling great."],
    "shopping": ["I'm doing some shopping.", "I ordered something recently.", "I'm looking for a gift."],
    "productivity": ["I'm organising my week.", "I have a lot going on at work.", "I'm trying to stay on top of things."],
    "education": ["I'm studying for exams.", "I'm helping my kid with school.", "I'm taking a course this term."],
    "environment": ["I'm planning to be outside.", "I have allergies.", "I care about the environment."],
    "transport": ["I'm heading out soon.", "I don't want to be late.", "My car is in the shop."],
    "communication": ["I'm running late.", "I need to get in touch with some people.", "I'm organising a get-together."],
    "real_estate": ["We're thinking about moving.", "I'm looking at apartments.", "We're buying our first home."],
    "events": ["I'm planning a night out.", "We're looking for something to do.", "It's a special occasion."],
    "commerce": ["We're restocking.", "A customer just called about this.", "I'm processing orders this morning.",
                 "We're running low on a few products."],
    "crm": ["We just met a new client.", "I'm updating the sales pipeline.", "I had a good call this morning."],
    "logistics": ["We have parcels going out today.", "I'm planning tomorrow's deliveries.",
                  "The warehouse asked me to set this up."],
    "people_ops": ["I'm handling some HR admin.", "We're growing the team.", "One of my reports asked me about this."],
    "devops": ["We're getting ready for a release.", "Something looks off in production.", "I'm on call this week."],
    "banking": ["I'm sorting out my finances.", "I'm paying a few bills.", "I'm closing the books for the month."],
    "scheduling": ["I'm organising a meeting.", "My calendar is a mess this week.", "We're planning the next sprint."],
    # the built-in tools, by name
    "get_weather": ["I'm heading out soon.", "We're thinking of going for a walk.", "I need to decide what to wear."],
    "set_alarm": ["I have an early start.", "I can't be late for work again.", "I have a flight to catch."],
    "set_timer": ["I'm cooking.", "I'm about to start a workout.", "I'm taking a quick nap."],
    "create_reminder": ["I keep forgetting things lately.", "I don't want to miss this.", "My week is packed."],
    "send_message": ["I'm running behind.", "I need to let someone know something.", "Plans changed."],
    "search_contacts": ["I need someone's details.", "I'm trying to reach someone."],
    "play_music": ["I'm about to go for a run.", "I'm working and need some background noise.", "It's too quiet in here."],
    "calculate": ["I'm splitting costs with friends.", "I want to double-check a calculation."],
    "web_search": ["I'm curious about something.", "I'm reading up on something."],
}
# a detail given in a sentence of its own, after the ask; {n} its noun, {v} its value
SCALAR_FOLLOW = ["The {n} is {v}.", "The {n} should be {v}.", "Use {v} for the {n}.", "Make the {n} {v}.",
                 "For the {n}, {v}.", "Oh, and the {n} is {v}.", "{v} for the {n}, please."]
GROUP_FOLLOW = ["Here's the {n}: {v}.", "For the {n}: {v}.", "The {n} would be {v}.", "As for the {n}, {v}."]
FOLLOW_SKIPPED = {"bool", "const", "message"}


def context(domain: str, rng: random.Random) -> str:
    """A sentence of context for a request in `domain` (a generic one for domains it does not know)."""
    pool = DOMAIN_CONTEXT.get(domain, [])
    return rng.choice(pool if pool and rng.random() < 0.7 else GENERIC_CONTEXT)


def with_context(ask: str, domain: str, rng: random.Random, share: float, *, spoken: bool,
                 follow: Sequence[list[Piece]] = ()) -> str:
    """`ask` with a sentence of context before it, with probability `share`, and the `follow` sentences after
    it (no draw at share 0; speech gets neither)."""
    if spoken:
        return ask
    lead = context(domain, rng) if share and rng.random() < share else ""
    if not lead and not follow:
        return ask
    return around(ask, lead, list(follow), lower=ask == ask.lower())


def movable(kind: Kind) -> bool:
    return kind.sem not in FOLLOW_SKIPPED


def follow_sentence(kind: Kind, said: list[Piece], rng: random.Random) -> list[Piece]:
    """One detail as a sentence of its own: its noun always named, so the sentence says which parameter."""
    group = kind.sem in ("array", "csv", "object")
    template = rng.choice(GROUP_FOLLOW if group else SCALAR_FOLLOW)
    before, _, after = template.partition("{v}")
    out = [Piece(before.replace("{n}", kind.noun))] if before else []
    out += said
    out.append(Piece(after.replace("{n}", kind.noun)))
    if not before:        # the sentence opens with the value: capitalise nothing of it
        return out
    out[0] = Piece(out[0].text[:1].upper() + out[0].text[1:])
    return out


def render(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces)


def around(ask: str, lead: str, follow: list[list[Piece]], *, lower: bool) -> str:
    """The final request: context, the ask as `surface.wrap` made it, then the follow-up sentences.
    `lower`: the ask was written in lowercase, so the sentences around it are too (values keep their case)."""
    parts = [lead] if lead else []
    parts.append(ask if ask.rstrip()[-1:] in ".?!" else ask.rstrip() + ".")
    for f in follow:
        text = render(f)
        if lower:
            text = "".join(p.text if p.is_slot else p.text.lower() for p in f)
        parts.append(text)
    if lower and lead:
        parts[0] = lead.lower()
    return " ".join(p.strip() for p in parts if p.strip())


def pick_follow(details: list[tuple[Kind, Any]], rng: random.Random, share: float) -> list[int]:
    """Indices of the details to say in sentences of their own: one or two, never all of them (the ask keeps
    at least one), with probability `share` per request."""
    candidates = [i for i, (kind, _) in enumerate(details) if movable(kind)]
    if len(details) < 2 or not candidates or rng.random() >= share:
        return []
    k = min(len(candidates), len(details) - 1, rng.choice([1, 1, 2]))
    return sorted(rng.sample(candidates, k))
