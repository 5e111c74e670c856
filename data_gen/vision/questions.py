"""Questions about a scene and the assistant turn that answers them, in the design's exact sequence:
[text, tool_call, cropped image, remaining text]. Kinds:

  zoom       "What is written on the red tag?"  -> Crop [tag box + margin] -> the crop -> " 42"
  two_crops  two tags named                      -> two crops, each fed back  -> " 42 and SALE"
  no_crop    the big shape's colour / the number of tags: readable from the whole image -> no call
  described  a tool described in the prompt (not trained), e.g. Outline [x1,y1,x2,y2]: the model reads
             the description and calls it; the loop feeds back its image

Messages are OpenAI-style JSON; image parts name the row's columns ("image", "crops/<k>").
"""

from __future__ import annotations

import random
from typing import Any

from runtime.ovis.tools import box_problem

from .config import KINDS, VisionConfig
from .draw import Scene

# described (LLM-driven) tools the data offers: name, description; each takes a box and draws it
DESCRIBED = [("Outline", "Draw a rectangle around a region of the image."),
             ("Highlight", "Mark a region of the image with a coloured frame."),
             ("Circle", "Circle a region of the image to point at it."),
             ("Mark", "Put a frame around a region so the user can see it.")]
CROP_SCHEMA = {"name": "crop", "description": "Crop a region of the image to look at it more closely. "
               "Usage: <tool_call>Crop [x1,y1,x2,y2]</tool_call>",
               "parameters": {"type": "object", "properties": {"bbox": {
                   "type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4,
                   "description": "Pixel box [x1, y1, x2, y2] with x1 < x2 and y1 < y2"}}, "required": ["bbox"]}}


def box_schema(name: str, description: str) -> dict:
    return {**CROP_SCHEMA, "name": name.lower(),
            "description": f"{description} Usage: <tool_call>{name} [x1,y1,x2,y2]</tool_call>"}


def pick_kind(cfg: VisionConfig, rng: random.Random, n_tags: int) -> str:
    kinds = [k for k in KINDS if cfg.kinds.get(k, 0) > 0 and (k != "two_crops" or n_tags >= 2)]
    return rng.choices(kinds, [cfg.kinds[k] for k in kinds])[0]


def padded(box: list[int], margin: int, w: int, h: int) -> list[int]:
    return [max(0, box[0] - margin), max(0, box[1] - margin), min(w, box[2] + margin), min(h, box[3] + margin)]


def example(cfg: VisionConfig, sc: Scene, split: str, index: int) -> tuple[dict[str, Any] | None, str | None]:
    """(row, None) or (None, rejection reason)."""
    rng = random.Random(f"question:{cfg.seed}:{split}:{index}")
    w, h = sc.image.size
    kind = pick_kind(cfg, rng, len(sc.tags))
    hint = f"({w}x{h}) " if cfg.size_hint else ""
    tools = [CROP_SCHEMA]
    calls: list[tuple[str, list[int]]] = []         # (written tool name, box)
    targets: list[list[int]] = []
    if kind in ("zoom", "described"):
        tag = rng.choice(sc.tags)
        targets = [tag.box]
        if kind == "zoom":
            question = rng.choice(["What is written on the {c} tag?", "Read the {c} tag.",
                                   "What does the {c} label say?"]).format(c=tag.color)
            calls = [("Crop", padded(tag.box, cfg.crop_margin, w, h))]
            answer = tag.text
        else:
            name, desc = rng.choice(DESCRIBED)
            tools = [CROP_SCHEMA, box_schema(name, desc)]
            question = f"{name} the {tag.color} tag."
            calls = [(name, padded(tag.box, cfg.crop_margin, w, h))]
            answer = "Done."
    elif kind == "two_crops":
        a, b = rng.sample(sc.tags, 2)
        targets = [a.box, b.box]
        question = f"What is written on the {a.color} tag and on the {b.color} tag?"
        calls = [("Crop", padded(a.box, cfg.crop_margin, w, h)), ("Crop", padded(b.box, cfg.crop_margin, w, h))]
        answer = f"{a.text} and {b.text}"
    else:
        if rng.random() < 0.5:
            question, answer = "What colour is the big shape?", sc.big_shape[1]
        else:
            question, answer = "How many tags are there?", str(len(sc.tags))
    for _, box in calls:            # the document's convention, checked against the image
        problem = box_problem(box, w, h)
        if problem:
            return None, "box_outside_image"
    # every crop must hold its whole tag, and no other tag's centre (else the answer is ambiguous)
    for (_, box), target in zip(calls, targets):
        if not (box[0] <= target[0] and box[1] <= target[1] and box[2] >= target[2] and box[3] >= target[3]):
            return None, "crop_misses_target"
        others = [t.box for t in sc.tags if t.box != target]
        if any(box[0] <= (o[0] + o[2]) / 2 <= box[2] and box[1] <= (o[1] + o[3]) / 2 <= box[3] for o in others):
            return None, "ambiguous_crop"
    from runtime.ovis.tools import crop, draw_box

    results = [crop(sc.image, {"bbox": b}) if name == "Crop" else draw_box(sc.image, {"bbox": b}) for name, b in calls]
    assistant: list[dict] = []
    for k, (name, box) in enumerate(calls):
        assistant.append({"type": "text", "text": f"<tool_call>{name} [{','.join(map(str, box))}]</tool_call>"})
        assistant.append({"type": "image", "image": f"crops/{k}"})
    assistant.append({"type": "text", "text": (" " if calls else "") + answer})
    messages = [{"role": "user", "content": [{"type": "image", "image": "image"}, {"type": "text", "text": hint + question}]},
                {"role": "assistant", "content": assistant}]
    return {"kind": kind, "image": sc.image, "crops": results, "width": w, "height": h, "question": question,
            "answer": answer, "target_boxes": targets, "messages": messages, "tools": tools,
            "expected_calls": [{"name": n.lower(), "arguments": {"bbox": b}} for n, b in calls]}, None
