"""preview.html: a static page beside a spoken dataset to listen to a sample of it - players for the
user clip and the spoken reply, the transcript, what was spoken, what the ASR heard, its WER, the voice
and augmentation, and the target calls. Audio is referenced by relative path (the page lives in the
dataset folder), so the page stays small."""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

from toolcore.files import write_text_atomic

CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:6px;vertical-align:top;text-align:left}th{background:#f4f4f4}
.muted{color:#777;font-size:12px}.bad{color:#b00}.good{color:#070}code{font-size:12px}audio{width:220px}"""


def write_preview(folder: str | Path, n: int = 24, seed: int = 0) -> Path:
    from datasets import load_from_disk

    folder = Path(folder)
    ds = load_from_disk(str(folder))
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else {}
    parts = ["<!doctype html><html><head><meta charset=utf-8><title>spoken dataset preview</title>",
             f"<style>{CSS}</style></head><body><h1>Spoken tool-calling data: {html.escape(folder.name)}</h1>"]
    if manifest:
        w = manifest.get("wer", {})
        parts.append(f"<p>{manifest.get('total', 0)} conversations {html.escape(json.dumps(manifest.get('splits', {})))}; "
                     f"WER mean {w.get('mean', 0):.3f}, p90 {w.get('p90', 0):.3f} (max allowed {w.get('max_allowed')}); "
                     f"rejections {html.escape(json.dumps(manifest.get('rejections', {})))}</p>")
    rng = random.Random(seed)
    for split in ds:
        rows = list(range(len(ds[split])))
        pick = sorted(rng.sample(rows, min(len(rows), max(1, n // len(ds)))))
        parts.append(f"<h2>{html.escape(split)}</h2><table><tr><th>user</th><th>transcript / spoken / heard</th>"
                     "<th>WER</th><th>target calls</th><th>spoken reply</th></tr>")
        for i in pick:
            r = ds[split][i]
            calls = "<br>".join(html.escape(f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})")
                                for c in json.loads(r["expected_calls"])) or "<span class=muted>(no call)</span>"
            reply = (f"<audio controls preload=metadata src='{html.escape(r['reply_audio'])}'></audio><br>"
                     f"{html.escape(r['reply_text'])}") if r["reply_audio"] else "<span class=muted>(none)</span>"
            wer_class = "good" if r["wer"] == 0 else "bad" if r["wer"] > 0.2 else ""
            parts.append(
                f"<tr><td><audio controls preload=metadata src='{html.escape(r['user_audio'])}'></audio>"
                f"<div class=muted>{html.escape(r['voice'])} {r['user_seconds']:.1f}s<br>{html.escape(r['augment'])}</div></td>"
                f"<td>{html.escape(r['user_text'])}<br><span class=muted>spoken:</span> {html.escape(r['spoken_text'])}"
                f"<br><span class=muted>heard:</span> {html.escape(r['asr_text'])}</td>"
                f"<td class={wer_class}>{r['wer']:.2f}</td><td><code>{calls}</code></td><td>{reply}</td></tr>")
        parts.append("</table>")
    # a headless browser (and the test) reads how many players loaded their clip: <body data-audio-loaded=N>
    parts.append("<script>const A=[...document.querySelectorAll('audio')];let k=0;A.forEach(a=>{"
                 "const f=()=>{if(a.duration>0){k++;document.body.dataset.audioLoaded=k}};"
                 "a.readyState>=1?f():a.addEventListener('loadedmetadata',f)});"
                 "document.body.dataset.audioTotal=A.length</script></body></html>")
    out = folder / "preview.html"
    write_text_atomic(out, "".join(parts))
    return out
