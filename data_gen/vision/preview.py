"""preview.html: a sample of the vision dataset with each image's target boxes drawn (green) and the
question, the calls and the answer beside it. Images are embedded (the page is one file); the body
carries data-images-loaded / data-images-total so a headless browser (and the test) can check that
every picture decoded."""

from __future__ import annotations

import base64
import html
import io
import json
import random
from pathlib import Path

from PIL import ImageDraw

from toolcore.files import write_text_atomic

CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:6px;vertical-align:top;text-align:left}th{background:#f4f4f4}
img{max-width:420px;border:1px solid #ccc}.muted{color:#777;font-size:12px}code{font-size:12px}"""


def png_with_boxes(image, boxes, color=(0, 200, 0), others=(), other_color=(220, 0, 0)) -> str:
    """A base64 PNG of `image` with `boxes` outlined (and `others`, e.g. predicted boxes, in another colour)."""
    im = image.convert("RGB").copy()
    d = ImageDraw.Draw(im)
    width = max(2, min(im.size) // 150)
    for b in boxes:
        d.rectangle(list(b), outline=color, width=width)
    for b in others:
        d.rectangle(list(b), outline=other_color, width=width)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def write_preview(folder: str | Path, n: int = 24, seed: int = 0) -> Path:
    from datasets import load_from_disk

    folder = Path(folder)
    ds = load_from_disk(str(folder))
    m = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else {}
    parts = ["<!doctype html><html><head><meta charset=utf-8><title>vision dataset preview</title>",
             f"<style>{CSS}</style></head><body><h1>Vision tool-use data: {html.escape(folder.name)}</h1>",
             f"<p>{html.escape(json.dumps(m.get('splits', {})))} examples; kinds {html.escape(json.dumps(m.get('kinds', {})))}; "
             f"rejections {html.escape(json.dumps(m.get('rejections', {})))}. Green: target boxes.</p>"]
    rng = random.Random(seed)
    for split in ds:
        idx = sorted(rng.sample(range(len(ds[split])), min(len(ds[split]), max(1, n // len(ds)))))
        parts.append(f"<h2>{html.escape(split)}</h2><table><tr><th>image (targets)</th><th>question</th>"
                     "<th>assistant turn</th></tr>")
        for i in idx:
            r = ds[split][i]
            turn = json.loads(r["messages"])[1]["content"]
            shown = "".join(html.escape(p["text"]) if p["type"] == "text" else "<span class=muted>[crop fed back]</span>"
                            for p in turn)
            parts.append(f"<tr><td><img alt='{html.escape(r['id'])}' src='data:image/png;base64,"
                         f"{png_with_boxes(r['image'], json.loads(r['target_boxes']))}'><div class=muted>"
                         f"{r['width']}x{r['height']} {html.escape(r['kind'])}</div></td>"
                         f"<td>{html.escape(r['question'])}</td><td><code>{shown}</code></td></tr>")
        parts.append("</table>")
    parts.append("<script>addEventListener('load',()=>{const I=[...document.images];document.body.dataset.imagesTotal="
                 "I.length;document.body.dataset.imagesLoaded=I.filter(i=>i.complete&&i.naturalWidth>0).length})</script>"
                 "</body></html>")
    out = folder / "preview.html"
    write_text_atomic(out, "".join(parts))
    return out
