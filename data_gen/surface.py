"""Everything about *how* a request is said, shared by all tools: politeness, fillers, spoken
disfluencies, casing, small typos and final punctuation. Slot values are never touched by noise
(a typo inside "San Francisco" would make the target call wrong), so text travels as pieces
flagged slot / not-slot until the very end.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# Openers and closers by mood: "could you" fits "set an alarm" but not "what's the weather".
PREFIX = {
    "imperative": ["", "", "", "", "please ", "can you ", "could you ", "could you please ", "would you ",
                   "can you please ", "hey, ", "hey assistant, ", "ok, ", "okay so ", "quick favor, ",
                   "I'd like you to ", "I want you to ", "go ahead and ", "do me a favor and ", "hi, ",
                   "alright, ", "yo, ", "hey there, can you "],
    "question": ["", "", "", "", "hey, ", "quick question, ", "so ", "hi, ", "ok, ", "hey assistant, ",
                 "just wondering, ", "um, "],
    "statement": ["", "", "", "", "hey, ", "so ", "ok so ", "listen, ", "hi, ", "well, ", "alright, "],
}
SUFFIX = {
    "imperative": ["", "", "", "", " please", " thanks", ", thank you", " for me", " for me please",
                   " when you get a chance", " right away", " asap", ", thanks a lot", " real quick"],
    "question": ["", "", "", "", " please", " thanks"],
    "statement": ["", "", "", "", " please", ", thanks", ", thank you"],
}
END = {"imperative": ["", "", ".", ".", "!"], "question": ["?", "?", "?", ""], "statement": ["", ".", ".", "!"]}
ASKING = ("can you", "could you", "would you", "hey there, can you")
FILLERS = ["um", "uh", "er", "like", "you know", "I mean", "hmm", "so"]
KEYBOARD = dict(zip("qwertyuiopasdfghjklzxcvbnm", [
    "wa", "qes", "wrd", "etf", "ryg", "tuh", "yij", "uok", "ipl", "ol", "qsz", "adx", "sfc", "dgv", "fhb",
    "gjn", "hkm", "jl", "kl", "zxc", "xsc", "zcd", "xvf", "cbg", "vnh", "bmj"]))
_A_END = re.compile(r"(^|\s)([Aa]) $")
# vowel sounds: "an 8-minute", "an eleven", "an hour-long"... but "a one-minute" ("one" starts with a w sound)
_VOWEL_START = re.compile(r"(?:8|11|18|80|eight|eleven|eighteen|eighty)\b|(?!one\b|one-|once)[aeio][a-z]", re.I)
_SPACES = re.compile(r"\s+")
_SPACE_PUNCT = re.compile(r"\s+([,.;:!?])")


@dataclass
class Piece:
    text: str
    is_slot: bool = False
    free_text: bool = False


def fix_articles(pieces: list[Piece]) -> list[Piece]:
    """ "a 8-minute timer" -> "an 8-minute timer": templates write "a" before any slot. Only the
    template's article changes; slot values stay exactly as drawn."""
    out = list(pieces)
    for i in range(len(out) - 1):
        if not out[i].is_slot and _A_END.search(out[i].text) and _VOWEL_START.match(out[i + 1].text):
            out[i] = Piece(_A_END.sub(lambda m: f"{m.group(1)}{m.group(2)}n ", out[i].text))
    return out


def tidy(text: str) -> str:
    return _SPACE_PUNCT.sub(r"\1", _SPACES.sub(" ", text)).strip(" ,")


def typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word) - 1)
    kind = rng.random()
    if kind < 0.3:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]        # swap
    if kind < 0.55:
        return word[:i] + word[i + 1:]                                 # drop
    if kind < 0.75:
        return word[:i] + word[i] + word[i:]                           # double
    near = KEYBOARD.get(word[i].lower())
    return word[:i] + (rng.choice(near) if near else word[i]) + word[i + 1:]  # neighbour key


@dataclass
class SurfaceConfig:
    """Shares of each kind of noise (fractions of utterances)."""

    politeness: float = 0.55
    typo: float = 0.12
    filler: float = 0.10
    lowercase: float = 0.35
    uppercase: float = 0.01


def add_noise(pieces: list[Piece], rng: random.Random, cfg: SurfaceConfig, *, spoken: bool) -> list[Piece]:
    """Fillers/disfluencies (more in spoken style) and typos (text style only), outside slots."""
    out = list(pieces)
    if rng.random() < (cfg.filler * 3 if spoken else cfg.filler):
        idx = [i for i, p in enumerate(out) if not p.is_slot and " " in p.text.strip()]
        if idx:
            i = rng.choice(idx)
            words = out[i].text.split(" ")
            # only before a word that follows a space (or opens the utterance): a piece that starts
            # mid-word or right after a slot ("'s number", " on the clock") would glue the filler
            # to the slot value before it ("maroon 5um, on the clock")
            spots = [k for k, w in enumerate(words) if w and (k > 0 or i == 0)]
            if spots:
                k = rng.choice(spots)
                if spoken and rng.random() < 0.3:
                    words.insert(k, words[k] + ",")       # repetition: "set an, an alarm"
                else:
                    words.insert(k, rng.choice(FILLERS) + ",")
                out[i] = Piece(" ".join(words))
    if not spoken and rng.random() < cfg.typo:
        idx = [i for i, p in enumerate(out) if not p.is_slot and re.search(r"[a-z]{4,}", p.text)]
        if idx:
            i = rng.choice(idx)
            words = out[i].text.split(" ")
            long = [k for k, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
            if long:
                k = rng.choice(long)
                words[k] = typo(words[k], rng)
                out[i] = Piece(" ".join(words))
    return out


def wrap(pieces: list[Piece], mood: str, rng: random.Random, cfg: SurfaceConfig, *, spoken: bool) -> str:
    """Opener + request + closer, cased and punctuated; returns the final utterance."""
    prefix = suffix = ""
    if rng.random() < cfg.politeness:
        prefix = rng.choice(PREFIX[mood])
        # "text Bob saying I'm late thanks": is "thanks" part of the message? Don't make it a riddle.
        suffix = "" if pieces and pieces[-1].free_text else rng.choice(SUFFIX[mood])
    ends_question = mood == "question" or prefix.strip().startswith(ASKING)
    end = rng.choice(END["question"] if ends_question else END[mood])
    if spoken:
        end = ""
    pieces = fix_articles(add_noise(pieces, rng, cfg, spoken=spoken))
    body = tidy(prefix + "".join(p.text for p in pieces) + suffix)
    r = rng.random()
    if r < cfg.uppercase:
        body = body.upper()
    elif r < cfg.uppercase + cfg.lowercase or spoken:
        # people typing in lowercase lowercase names too; transcripts keep proper nouns
        body = body.lower() if not spoken and rng.random() < 0.5 else lower_outside_slots(body, pieces)
    else:
        body = body[:1].upper() + body[1:]
    return body + end


def lower_outside_slots(body: str, pieces: list[Piece]) -> str:
    """Lowercase the template words but keep slot values as written ("weather in San Francisco")."""
    out = body.lower()
    for p in pieces:
        if p.is_slot and p.text.strip():
            out = out.replace(p.text.lower(), p.text, 1)
    return out


def join_list(parts: list[list[Piece]], rng: random.Random) -> list[Piece]:
    """Items said as one list: "Oslo, Bergen and Tromsø"."""
    if len(parts) == 1:
        return parts[0]
    # items that hold commas themselves ("Austin, TX") are kept apart by semicolons, as people write them
    inner = any("," in piece.text for p in parts for piece in p if piece.is_slot) or \
        any(piece.text == ", " for p in parts for piece in p)       # objects said with commas inside
    sep = "; " if inner else ", "
    last = rng.choice([" and ", f"{sep.strip()} and ", " and ", " & "])
    out: list[Piece] = []
    for k, p in enumerate(parts):
        if k:
            out.append(Piece(last if k == len(parts) - 1 else sep))
        out += p
    return out
