"""Vision tool-use metrics: crop quality and answer accuracy (call F1 is toolcore.metric, as everywhere).

  iou            intersection over union of a predicted crop box and its reference box: the box the
                 data's call holds (a synthetic tag's box plus the crop margin; a user's own box)
  crop quality   each reference is paired with the predicted box that overlaps it most (a box used once);
                 per case the mean IoU over references (one with no box scores 0), and the share of
                 predicted crops that contain their whole target (the object itself, e.g. the tag)

Why IoU is taken against the reference crop and not the object: the data teaches the padded box, and
against a small tag the taught box itself scores about 0.5 (a 20x19 tag in its 28x27 crop: 0.50).
  answer         exact match after normalising case, spaces and trailing punctuation
"""

from __future__ import annotations

import re
from statistics import mean
from typing import Any, Sequence

Box = Sequence[float]


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def contains(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and outer[2] >= inner[2] and outer[3] >= inner[3]


def match_boxes(predicted: Sequence[Box], targets: Sequence[Box]) -> list[tuple[Box, Box | None, float]]:
    """(target, its predicted box or None, IoU) for every target; greedy by IoU, each box used once."""
    pairs = sorted(((iou(p, t), i, j) for i, t in enumerate(targets) for j, p in enumerate(predicted)), reverse=True)
    used_t: set[int] = set()
    used_p: set[int] = set()
    got: dict[int, tuple[Box, float]] = {}
    for v, i, j in pairs:
        if i not in used_t and j not in used_p and v > 0:
            used_t.add(i)
            used_p.add(j)
            got[i] = (predicted[j], v)
    return [(t, got[i][0] if i in got else None, got[i][1] if i in got else 0.0) for i, t in enumerate(targets)]


def crop_scores(predicted: Sequence[Box], targets: Sequence[Box], references: Sequence[Box] | None = None
                ) -> dict[str, Any]:
    """One case: mean IoU over its reference boxes (`references[i]` is the taught crop of `targets[i]`;
    the targets themselves where not given), and how many of its crops contain their target."""
    refs = list(references) if references is not None else list(targets)
    if len(refs) != len(targets):
        raise ValueError(f"{len(refs)} reference boxes for {len(targets)} targets")
    if not targets:
        return {"iou": None, "crops": len(predicted), "crops_containing_target": 0}
    m = match_boxes(predicted, refs)
    return {"iou": mean(v for _, _, v in m), "crops": len(predicted),
            "crops_containing_target": sum(1 for t, (_, p, _) in zip(targets, m) if p is not None and contains(p, t))}


def reference_boxes(expected_calls: Sequence[dict]) -> list[list[int]]:
    """The boxes a row's expected calls hold, in order (a crop's or a described box tool's `bbox`)."""
    return [c["arguments"]["bbox"] for c in expected_calls if "bbox" in c.get("arguments", {})]


def box_calls(calls: Sequence[Any], names: set[str]) -> list[Box]:
    """The boxes of the predicted calls to the tools in `names` (crop and any described box tool)."""
    return [c.arguments["bbox"] for c in calls if c.name in names and isinstance(c.arguments.get("bbox"), list)]


def normalise(answer: str) -> str:
    return re.sub(r"\s+", " ", answer.strip().lower()).rstrip(".!")


def answer_correct(predicted: str, expected: str) -> bool:
    return normalise(predicted) == normalise(expected)


def summarize_vision(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Over cases' `vision` facts (as runtime.models.ovis writes them in predictions.jsonl)."""
    v = [c["vision"] for c in cases if c.get("vision")]
    with_targets = [x for x in v if x["target_boxes"]]
    crops = sum(x["crops"] for x in v)
    return {
        "cases": len(v),
        "iou_mean": round(mean(x["iou"] for x in with_targets), 4) if with_targets else None,
        "iou_at_0_5": round(mean(x["iou"] >= 0.5 for x in with_targets), 4) if with_targets else None,
        "crops_containing_target": round(sum(x["crops_containing_target"] for x in v) / crops, 4) if crops else None,
        "answer_accuracy": round(mean(x["answer_correct"] for x in v), 4) if v else None,
        "crop_calls_when_none_needed": sum(1 for x in v if not x["target_boxes"] and x["crops"]),
        "feed": v[0].get("feed") if v else None,
    }
