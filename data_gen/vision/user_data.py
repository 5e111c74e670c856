"""Your own images: a JSONL file, one object a line:

  {"image": "shots/001.png", "question": "What is the price?", "boxes": [[410, 220, 470, 250]], "answer": "$12"}

`image` is a path (relative to the JSONL file's folder); `boxes` holds 0, 1 or 2 pixel boxes [x1,y1,x2,y2]
(none: answerable without a crop). Every row is checked - the file exists and decodes, each box is four
integers inside the image with positive area - and a bad row stops with an error naming the line and field.
Rows become the same examples as the synthetic ones (crops cut from your image)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from runtime.ovis.tools import box_problem, crop
from toolcore.errors import ToolkitError
from toolcore.files import read_jsonl

from .questions import CROP_SCHEMA


def read_user_rows(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    rows = []
    for n, d in read_jsonl(path):
        def bad(field: str, msg: str, fix: str | None = None) -> ToolkitError:
            return ToolkitError(msg, file=str(path), line=n, field=field, fix=fix)

        for key, kind in (("image", str), ("question", str), ("answer", str), ("boxes", list)):
            if key not in d:
                raise bad(key, "missing", 'each line needs "image", "question", "boxes" and "answer"')
            if not isinstance(d[key], kind):
                raise bad(key, f"must be a {'list of boxes' if kind is list else 'string'}")
        img_path = Path(d["image"]) if Path(d["image"]).is_absolute() else path.parent / d["image"]
        if not img_path.is_file():
            raise bad("image", f"file {img_path} does not exist", "paths are relative to the JSONL file")
        try:
            with Image.open(img_path) as im:
                image = im.convert("RGB")
        except (UnidentifiedImageError, OSError) as e:
            raise bad("image", f"{img_path} does not decode as an image ({type(e).__name__})") from e
        w, h = image.size
        if len(d["boxes"]) > 2:
            raise bad("boxes", f"{len(d['boxes'])} boxes: at most 2 crops per question")
        for i, box in enumerate(d["boxes"]):
            problem = box_problem(box, w, h)
            if problem:
                raise bad(f"boxes[{i}]", problem, f"pixel boxes [x1,y1,x2,y2] inside the {w}x{h} image, x1 < x2, y1 < y2")
        boxes = [list(b) for b in d["boxes"]]
        assistant: list[dict] = []
        for k, b in enumerate(boxes):
            assistant += [{"type": "text", "text": f"<tool_call>Crop [{','.join(map(str, b))}]</tool_call>"},
                          {"type": "image", "image": f"crops/{k}"}]
        assistant.append({"type": "text", "text": (" " if boxes else "") + d["answer"]})
        rows.append({"kind": ("zoom", "two_crops")[len(boxes) - 1] if boxes else "no_crop", "image": image,
                     "crops": [crop(image, {"bbox": b}) for b in boxes], "width": w, "height": h,
                     "question": d["question"], "answer": d["answer"], "target_boxes": boxes,
                     "messages": [{"role": "user", "content": [{"type": "image", "image": "image"},
                                                               {"type": "text", "text": f"({w}x{h}) {d['question']}"}]},
                                  {"role": "assistant", "content": assistant}],
                     "tools": [CROP_SCHEMA], "expected_calls": [{"name": "crop", "arguments": {"bbox": b}} for b in boxes],
                     "source": f"{path.name}:{n}"})
    if not rows:
        raise ToolkitError("no rows", file=str(path), fix="one JSON object a line")
    return rows
