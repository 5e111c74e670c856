"""Ovis2.5 (or a native Ovis2 checkpoint) with the live crop loop, for `python -m eval model=ovis2_5`.

Each case's image is the one its last user turn shows: a vision dataset row's `image` column
(suite=data/vision) or an image part's file path (a suite JSONL). The loop generates, runs each
`<tool_call>Crop [..]</tool_call>` (and any tool described in `described_tools`), feeds the result back
mid-generation and continues from the KV cache. Predictions carry the calls (call F1 as everywhere) and,
under details["vision"], the predicted and target boxes, IoU, whether each crop contains its target, the
answer and whether it is right, and a small thumbnail with both boxes drawn (the report shows the worst).
`feed: full` answers with the whole image fed back instead of every crop: the same model without zoom.
"""

from __future__ import annotations

import base64
import io
import json
import time
from typing import Any, Sequence

from toolcore.errors import ToolkitError
from toolcore.suites import Case
from toolcore.vision_metric import answer_correct, box_calls, crop_scores, reference_boxes

from .base import Prediction


class OvisModel:
    def __init__(self, path: str | None = None, name: str = "ovis2_5", adapter: str | None = None,
                 dtype: str | None = None, device: str = "auto", trust_remote_code: bool = False, family: Any = None, max_new_tokens: int = 64, max_tool_calls: int = 3,
                 tool_timeout_s: float = 15.0, batch_size: int = 8, feed: str = "tool",
                 describe_trained: bool | None = None, described_tools: Sequence[dict] = (), thumbnails: bool = True):
        if feed not in ("tool", "full"):
            raise ToolkitError(f"unknown feed {feed!r}", field="model.feed", fix="use tool (crops) or full (no zoom)")
        from runtime.ovis.adapter import adapter_for, load_ovis
        from toolcore.hub import resolve_device, resolve_dtype_name, resolve_model_path

        from .source import resolve_source

        # the family (configs/family/ovis2_5.yaml, also training's) names the checkpoint and dtype
        src = resolve_source(family=family, path=path, format="ovis2_5", dtype=dtype, adapter=adapter,
                             default_dtype="auto")
        path, dtype = src.path, src.dtype
        self.name = name
        device = resolve_device(device)       # a missing GPU fails before minutes of loading
        dtype = resolve_dtype_name(dtype, device)   # auto: bfloat16 on the GPU, float32 on the CPU
        self.model, self.tok = load_ovis(resolve_model_path(path), dtype=dtype, trust_remote_code=trust_remote_code,
                                         field="model")
        if adapter:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, adapter)
        self.model.to(device).eval()
        self.adapter = adapter_for(self.model, self.tok)
        if describe_trained is None:        # the family's (training rendered its prompts that way)
            describe_trained = bool((family or {}).get("describe_trained", True))
        self.describe_trained = describe_trained
        self.kw = dict(max_new_tokens=max_new_tokens, max_tool_calls=max_tool_calls, tool_timeout_s=tool_timeout_s,
                       feed=feed)
        self.batch_size, self.feed, self.described, self.thumbnails = batch_size, feed, list(described_tools), thumbnails

    def _image(self, case: Case):
        from PIL import Image

        last = [m for m in case.conversation.messages if m.role == "user"][-1]
        part = next((p for p in last.parts if p.type == "image"), None)
        if part is None:
            raise ToolkitError(f"case {case.id} has no image in its last user turn", field="suite")
        if part.ref == "image" and "image" in case.raw:
            return case.raw["image"]
        return Image.open(part.ref).convert("RGB")

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        from runtime.ovis.chat import pieces
        from runtime.ovis.loop import CropLoop
        from runtime.ovis.tools import ToolSet, toolset_from_schemas

        out: list[Prediction] = []
        for start in range(0, len(cases), self.batch_size):
            batch = cases[start:start + self.batch_size]
            prompts, images = [], []
            for c in batch:
                image = self._image(c)
                ts = toolset_from_schemas([t.to_schema() for t in c.tools]) if c.tools else ToolSet()
                for d in ToolSet.from_descriptions(self.described, with_crop=False).tools.values():
                    ts.register(d)
                msgs = [m.to_dict() for m in c.conversation.messages]
                prompts.append((pieces(msgs, ts, lambda ref, im=image: im, add_generation_prompt=True,
                                       describe_trained=self.describe_trained), image))
                images.append(image)
            loop = CropLoop(self.model, self.tok, self.adapter, toolset=ts, **self.kw)
            t0 = time.perf_counter()
            results = loop.run(prompts)
            ms = (time.perf_counter() - t0) * 1000 / max(1, len(batch))
            for c, r, image in zip(batch, results, images):
                out.append(Prediction(r.calls, r.text, r.failures, ms, True,
                                      {"vision": self._facts(c, r, image), "tool_events": r.events}))
        return out

    def _facts(self, case: Case, r: Any, image: Any) -> dict[str, Any]:
        targets = json.loads(case.raw["target_boxes"]) if isinstance(case.raw.get("target_boxes"), str) \
            else case.raw.get("target_boxes") or []
        # boxes of the tools the case expects (crop, or a described box tool such as Outline), scored
        # against the boxes those expected calls hold (the taught crop: the target plus its margin)
        refs = reference_boxes([c.to_dict() for c in case.expected_calls])
        boxes = box_calls(r.calls, {c.name for c in case.expected_calls} or {"crop"})
        answer = r.text.rsplit("</tool_call>", 1)[-1].strip()
        expected = str(case.raw.get("answer", ""))
        scores = crop_scores(boxes, targets, refs if len(refs) == len(targets) else None)
        facts = {"target_boxes": targets, "reference_boxes": refs, "pred_boxes": boxes, **scores, "answer": answer,
                 "expected_answer": expected, "answer_correct": answer_correct(answer, expected), "feed": self.feed}
        if self.thumbnails:
            from PIL import ImageDraw

            im = image.convert("RGB").copy()
            d = ImageDraw.Draw(im)
            for b in targets:
                d.rectangle(b, outline=(0, 200, 0), width=2)
            for b in boxes:
                d.rectangle(b, outline=(220, 0, 0), width=2)
            im.thumbnail((256, 256))
            buf = io.BytesIO()
            im.save(buf, format="PNG")
            facts["thumb_png"] = base64.b64encode(buf.getvalue()).decode()
        return facts
