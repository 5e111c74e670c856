"""The vision data config (configs/vision.yaml composes it). Every field says what it does; (*) marks the
ones people change. Bad values and combinations fail in __post_init__."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from toolcore.errors import ToolkitError

WHERE = "configs/vision.yaml"
KINDS = ("zoom", "two_crops", "no_crop", "described")
TEXT_KINDS = ("number", "price", "word", "digit")


@dataclass
class VisionConfig:
    # (*) where the DatasetDict, manifest.json and preview.html go
    output_dir: str = "data/vision"
    # (*) every image and question is a pure function of (seed, split, index)
    seed: int = 0
    # (*) synthetic examples per split
    examples: dict[str, int] = field(default_factory=lambda: {"train": 2000, "validation": 100, "test": 200})
    # (*) shares of question kinds: zoom (one crop needed), two_crops (two regions), no_crop (answerable
    # from the whole image: no call expected), described (a tool described in the prompt, not trained:
    # the model learns to read tool descriptions)
    kinds: dict[str, float] = field(default_factory=lambda: {"zoom": 0.5, "two_crops": 0.15, "no_crop": 0.2,
                                                             "described": 0.15})
    # image sides in pixels: the longer side is drawn from [min_side, max_side], the shorter from an aspect
    min_side: int = 192
    max_side: int = 512
    # width / height ratios drawn from
    aspects: list[float] = field(default_factory=lambda: [1.0, 1.33, 0.75, 1.78, 0.56])
    # how many labelled tags (the zoom targets) an image has: [min, max]
    tags: list[int] = field(default_factory=lambda: [1, 3])
    # text height on the tags in pixels [min, max]: small, so that reading it needs a crop
    text_px: list[int] = field(default_factory=lambda: [9, 14])
    # what the tags say, drawn with equal chance per kind: number (0-99), price ($1-$99), word (SALE, EXIT...),
    # digit (0-9: ten answers, the easiest reading)
    texts: list[str] = field(default_factory=lambda: ["number", "price", "word"])
    # pixels of plate around a tag's text [min, max]; null: half the text height, at least 3. A wide plate
    # with small text is a sign: easy to find in the whole image, its text readable only in a crop
    tag_padding: list[int] | None = None
    # distractor shapes per image [min, max]
    distractors: list[int] = field(default_factory=lambda: [2, 8])
    # background clutter: strokes per 10,000 pixels
    clutter: float = 2.0
    # pixels of margin around a tag in its target crop box
    crop_margin: int = 4
    # write the image size in the question ("(320x240) ..."): the box is in pixels of the original image,
    # which a model that sees a resized view cannot know otherwise
    size_hint: bool = True
    # (*) your own images: a JSONL of {"image": path, "question", "boxes": [[x1,y1,x2,y2], ...], "answer"}
    # (paths relative to the file); every row is validated, errors name the line and the field
    user_data: str | None = None
    # the split your rows go to
    user_split: str = "train"
    # examples per shard: the unit of parallel work and of resuming
    shard_size: int = 100
    # worker processes (0: one per CPU)
    workers: int = 0
    # replace an existing dataset of another config at output_dir
    overwrite: bool = False
    # images with their target boxes drawn in preview.html
    preview_examples: int = 24

    def __post_init__(self) -> None:
        def bad(f: str, msg: str, fix: str | None = None) -> ToolkitError:
            return ToolkitError(msg, file=WHERE, field=f, fix=fix)

        if set(self.examples) - {"train", "validation", "test"} or any(v < 0 for v in self.examples.values()):
            raise bad("examples", "splits are train / validation / test with counts >= 0")
        if set(self.kinds) - set(KINDS) or any(v < 0 for v in self.kinds.values()) or sum(self.kinds.values()) <= 0:
            raise bad("kinds", f"kinds are {', '.join(KINDS)} with weights >= 0 and a positive sum")
        if not 64 <= self.min_side <= self.max_side:
            raise bad("min_side", "need 64 <= min_side <= max_side")
        if not self.aspects or any(not 0.25 <= a <= 4 for a in self.aspects):
            raise bad("aspects", "aspects are width/height ratios between 0.25 and 4")
        for name in ("tags", "text_px", "distractors"):
            v = getattr(self, name)
            if len(v) != 2 or v[0] > v[1] or v[0] < 0:
                raise bad(name, "give [min, max] with 0 <= min <= max")
        if self.tag_padding is not None and (len(self.tag_padding) != 2 or not 1 <= self.tag_padding[0] <= self.tag_padding[1]):
            raise bad("tag_padding", "give [min, max] with 1 <= min <= max, or null")
        if not self.texts or set(self.texts) - set(TEXT_KINDS):
            raise bad("texts", f"tag texts are some of {', '.join(TEXT_KINDS)}", "e.g. texts=[number,word]")
        if self.tags[0] < 1:
            raise bad("tags", "every image needs at least one tag (the zoom target)")
        if self.kinds.get("two_crops", 0) > 0 and self.tags[1] < 2:
            raise bad("kinds.two_crops", "two-crop questions need images with two tags", "set tags=[1,3] or kinds.two_crops=0")
        if self.text_px[0] < 6:
            raise bad("text_px", "text under 6 px cannot be read even in a crop")
        if self.user_split not in ("train", "validation", "test"):
            raise bad("user_split", "use train, validation or test")
        if self.shard_size <= 0 or self.workers < 0:
            raise bad("shard_size", "shard_size > 0 and workers >= 0")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
