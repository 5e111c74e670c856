"""Synthetic scenes drawn with Pillow, fully offline: a cluttered background, distractor shapes, and small
labelled tags (digits, prices, short words) at known boxes - the regions a question needs a zoom for.
`scene(cfg, split, index)` is a pure function of (seed, split, index): any shard, any worker, any rerun
draws the same picture."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from .config import VisionConfig

# named colours: a question names a tag by its colour, so the names must be ones people use
COLORS = {"red": (220, 40, 40), "blue": (40, 80, 220), "green": (30, 150, 60), "yellow": (235, 200, 30),
          "orange": (240, 130, 20), "purple": (140, 60, 180), "pink": (240, 120, 180), "gray": (128, 128, 128)}
SHAPES = ("circle", "square", "triangle")
WORDS = ("SALE", "OPEN", "EXIT", "STOP", "GATE", "ROOM", "LIFT", "DOCK", "BOX", "LAB")


@dataclass
class Tag:
    color: str
    text: str
    box: list[int]        # the tag's rectangle [x1, y1, x2, y2]


@dataclass
class Scene:
    image: Image.Image
    tags: list[Tag]
    big_shape: tuple[str, str]      # (shape, colour) of the one large shape (no-crop questions)
    rejected: str | None = None     # why the scene cannot be used (reason counted in the manifest)
    facts: dict = field(default_factory=dict)


@lru_cache(maxsize=64)
def font(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=px)


def tag_text(rng: random.Random, kinds: list[str] | None = None) -> str:
    if not kinds or list(kinds) == ["number", "price", "word"]:
        r = rng.random()        # the default mix, 40/30/30 (the draws the default data was made with)
        kind = "number" if r < 0.4 else "price" if r < 0.7 else "word"
    else:
        kind = rng.choice(list(kinds))
    if kind == "number":
        return str(rng.randint(0, 99))
    if kind == "price":
        return f"${rng.randint(1, 99)}"
    if kind == "digit":
        return str(rng.randint(0, 9))
    return rng.choice(WORDS)


def _overlaps(a: list[int], b: list[int], pad: int) -> bool:
    return not (a[2] + pad <= b[0] or b[2] + pad <= a[0] or a[3] + pad <= b[1] or b[3] + pad <= a[1])


def _shape(d: ImageDraw.ImageDraw, kind: str, box: list[int], fill) -> None:
    x1, y1, x2, y2 = box
    if kind == "circle":
        d.ellipse(box, fill=fill)
    elif kind == "square":
        d.rectangle(box, fill=fill)
    else:
        d.polygon([((x1 + x2) // 2, y1), (x2, y2), (x1, y2)], fill=fill)


def scene(cfg: VisionConfig, split: str, index: int) -> Scene:
    rng = random.Random(f"vision:{cfg.seed}:{split}:{index}")
    long_side = rng.randint(cfg.min_side, cfg.max_side)
    aspect = rng.choice(cfg.aspects)
    w, h = (long_side, max(64, round(long_side / aspect))) if aspect >= 1 else (max(64, round(long_side * aspect)), long_side)
    bg = tuple(rng.randint(200, 250) for _ in range(3))
    img = Image.new("RGB", (w, h), bg)
    d = ImageDraw.Draw(img)
    for _ in range(int(cfg.clutter * w * h / 10_000)):      # clutter: thin strokes in muted colours
        x, y = rng.randrange(w), rng.randrange(h)
        d.line([x, y, x + rng.randint(-20, 20), y + rng.randint(-20, 20)],
               fill=tuple(rng.randint(150, 210) for _ in range(3)), width=1)
    # one big shape, readable without zooming
    big_kind, big_color = rng.choice(SHAPES), rng.choice(list(COLORS))
    side = min(w, h) // 3
    bx, by = rng.randint(0, w - side), rng.randint(0, h - side)
    big = [bx, by, bx + side, by + side]
    _shape(d, big_kind, big, COLORS[big_color])
    # tags: distinct colours (a question names one), not overlapping one another or the big shape
    n_tags = rng.randint(cfg.tags[0], cfg.tags[1])
    colors = rng.sample([c for c in COLORS if c != big_color], n_tags)
    tags: list[Tag] = []
    placed = [big]
    for color in colors:
        px = rng.randint(cfg.text_px[0], cfg.text_px[1])
        text = tag_text(rng, cfg.texts)
        tw, th = d.textbbox((0, 0), text, font=font(px))[2:]
        pad = max(3, px // 2) if cfg.tag_padding is None else rng.randint(*cfg.tag_padding)
        tw_box, th_box = tw + 2 * pad, th + 2 * pad
        for _ in range(40):
            x, y = rng.randint(0, w - tw_box - 1), rng.randint(0, h - th_box - 1)
            box = [x, y, x + tw_box, y + th_box]
            if not any(_overlaps(box, p, cfg.crop_margin + 2) for p in placed):
                break
        else:
            return Scene(img, tags, (big_kind, big_color), rejected="no_room_for_tag")
        placed.append(box)
        d.rectangle(box, fill=COLORS[color], outline=(30, 30, 30))
        # light text on dark tags, dark text on light ones
        ink = (255, 255, 255) if sum(COLORS[color]) < 400 else (20, 20, 20)
        d.text((x + (tw_box - tw) // 2, y + (th_box - th) // 2), text, font=font(px), fill=ink)
        tags.append(Tag(color, text, box))
    for _ in range(rng.randint(cfg.distractors[0], cfg.distractors[1])):   # distractors: small shapes
        s = rng.randint(6, max(8, min(w, h) // 10))
        x, y = rng.randint(0, w - s - 1), rng.randint(0, h - s - 1)
        box = [x, y, x + s, y + s]
        if any(_overlaps(box, p, 2) for p in placed):
            continue
        placed.append(box)
        _shape(d, rng.choice(SHAPES), box, tuple(rng.randint(0, 255) for _ in range(3)))
    return Scene(img, tags, (big_kind, big_color), facts={"width": w, "height": h})
