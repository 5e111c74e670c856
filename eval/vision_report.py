"""The vision part of an eval report (runs of runtime.models.ovis): crop quality and answer accuracy, and
the worst cases as images with the target box (green) and the predicted crops (red)."""

from __future__ import annotations

import html
from typing import Any

from toolcore.vision_metric import summarize_vision


def vision_section(run: Any, worst: int) -> str:
    cases = [c for c in run.cases if c.get("vision")]
    if not cases:
        return ""
    s = summarize_vision(cases)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in s)
    row = "".join(f"<td class=num>{'-' if v is None else v}</td>" for v in s.values())
    bad = sorted(cases, key=lambda c: (c["vision"]["answer_correct"], c["vision"]["iou"] if c["vision"]["iou"] is not None else 1))
    out = [f"<h4>vision: crops and answers</h4><table class=vision><tr>{head}</tr><tr>{row}</tr></table>",
           "<table class=vision-cases><tr><th>case</th><th>image (green target, red crop)</th><th>IoU</th>"
           "<th>answer / expected</th></tr>"]
    for c in bad[:worst]:
        v = c["vision"]
        img = f"<img alt='{html.escape(str(c['id']))}' src='data:image/png;base64,{v['thumb_png']}'>" if v.get("thumb_png") else ""
        iou = "-" if v["iou"] is None else f"{v['iou']:.2f}"
        out.append(f"<tr><td>{html.escape(str(c['id']))}<br>{html.escape(c.get('user_text', ''))}</td><td>{img}</td>"
                   f"<td class=num>{iou}</td><td class={'good' if v['answer_correct'] else 'bad'}>"
                   f"{html.escape(v['answer'])}<br><span class=muted>{html.escape(v['expected_answer'])}</span></td></tr>")
    out.append("</table>")
    return "".join(out)
