"""The hybrid of the playbook (ideas 9B/9C): rules first, the tuned model for the rest.

The symbolic pre-parser answers when its parse is complete (every intent recognised, for an offered
tool it has rules for, with calls that validate: `SymbolicParse.complete`); every other request goes
to the inner model, batched. Both run on the device. Each prediction records its route, so reports
can say how often each part answered.

With a tool detector (`detector=<folder>`, toolcore/detector.py, trained by `python -m train.detector`)
the model's calls are vetoed where the detector finds the request very unlikely to want that tool:
small tuned models call *something* for requests no tool serves ("order a pizza" -> play_music).

    python -m eval model=router model.inner.adapter=runs/demo/adapter model.detector=runs/detector suite=handwritten
    python -m eval model=router model.rules=false model.inner.adapter=... model.detector=...   # the veto alone

With a fallback endpoint (`fallback.url`, `fallback.model`: any OpenAI-compatible server), the model's
answers the detector is least sure of go to it instead (the hackathon's cloud fallback): confidence is
the detector's probability of the least likely tool called, or, when nothing was called, one minus
the probability of the likeliest offered tool; below `fallback.threshold` the request leaves the
device. Its predictions say `on_device: false`, which the hackathon score counts.

    python -m eval model=router model.inner.adapter=... model.detector=... \
        model.fallback.url=http://127.0.0.1:8000/v1 model.fallback.model=big-model
"""

from __future__ import annotations

import json
import time
from typing import Any, Mapping, Sequence

from toolcore.detector import ToolDetector
from toolcore.errors import ToolkitError
from toolcore.suites import Case

from ..baselines.symbolic import SymbolicParser
from .base import Model, Prediction
from .fallback import OpenAIFallback


class RouterModel:
    def __init__(self, inner: Model, name: str | None = None, detector: str | None = None, rules: bool = True,
                 fallback: Mapping[str, Any] | None = None):
        if not rules and not detector:
            raise ToolkitError("a router with neither rules nor a detector is just its inner model",
                               field="model.rules", fix="give model.detector=<folder>, or use the inner model")
        fallback = dict(fallback or {})
        self.fallback = None
        self.threshold = float(fallback.pop("threshold", 0.5))
        if fallback.get("url"):
            if not detector:
                raise ToolkitError("the fallback is chosen by the detector's confidence", field="model.fallback.url",
                                   fix="give model.detector=<folder> (python -m train.detector) or drop the fallback")
            if not 0 <= self.threshold <= 1:
                raise ToolkitError(f"threshold {self.threshold} is not a probability", field="model.fallback.threshold",
                                   fix="use a value in [0, 1]")
            self.fallback = OpenAIFallback(**fallback)
        self.inner = inner
        parts = ([] if rules else ["no rules"]) + (["detector"] if detector else []) + \
            ([f"fallback {self.fallback.model}"] if self.fallback else [])
        self.name = name or f"router({', '.join([inner.name, *parts])})"
        self.parser = SymbolicParser() if rules else None
        self.detector = ToolDetector.load(detector) if detector else None

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        out: list[Prediction | None] = [None] * len(cases)
        rule_ms: list[float] = []
        hand_over: list[int] = []
        for i, case in enumerate(cases):
            if self.parser is None:                # the model answers everything; the detector vetoes
                rule_ms.append(0.0)
                hand_over.append(i)
                out[i] = Prediction([], details={"route": "model"})
                continue
            t0 = time.perf_counter()
            parse = self.parser.parse(case.user_text, case.tools)
            rule_ms.append((time.perf_counter() - t0) * 1000)
            if parse.complete:
                out[i] = Prediction(parse.calls, raw_text=json.dumps([c.to_dict() for c in parse.calls]),
                                    latency_ms=rule_ms[i], details={"route": "symbolic"})
            else:
                hand_over.append(i)
                out[i] = Prediction([], details={"route": "model", "symbolic_gap": parse.reason})
        if hand_over:
            for i, pred in zip(hand_over, self.inner.predict([cases[i] for i in hand_over])):
                pred.latency_ms += rule_ms[i]           # the rules ran first
                pred.details = {**out[i].details, **pred.details}
                out[i] = self._maybe_fallback(cases[i], self._veto(cases[i], pred))
        return out  # type: ignore[return-value]

    def confidence(self, case: Case, pred: Prediction) -> float | None:
        """How sure the detector is of the model's answer (None: it cannot judge this request)."""
        if self.detector is None or not case.user_text:
            return None
        probs = self.detector.probabilities_many([(case.user_text, [t.name for t in case.tools])])[0]
        if pred.calls:
            known = [probs[c.name] for c in pred.calls if c.name in probs]
            return min(known) if known else None
        return 1.0 - max(probs.values(), default=0.0)

    def _maybe_fallback(self, case: Case, pred: Prediction) -> Prediction:
        if self.fallback is None:
            return pred
        conf = self.confidence(case, pred)
        pred.details["confidence"] = None if conf is None else round(conf, 4)
        if conf is None or conf >= self.threshold:
            return pred
        remote = self.fallback.predict(case)
        if "fallback_error" in remote.details:          # keep the device's answer, say what happened
            pred.details["fallback_error"] = remote.details["fallback_error"]
            return pred
        remote.latency_ms += pred.latency_ms          # the device ran first
        remote.details = {**pred.details, **remote.details, "route": "fallback",
                          "device_calls": [c.to_dict() for c in pred.calls]}
        return remote

    def _veto(self, case: Case, pred: Prediction) -> Prediction:
        if self.detector is None or not pred.calls or not case.user_text:
            return pred      # (a spoken turn has no text to judge: its calls stand)
        t0 = time.perf_counter()
        vetoed = self.detector.vetoes(case.user_text, [t.name for t in case.tools])
        pred.latency_ms += (time.perf_counter() - t0) * 1000
        dropped = [c for c in pred.calls if c.name in vetoed]
        if dropped:
            pred.calls = [c for c in pred.calls if c.name not in vetoed]
            pred.details["vetoed_calls"] = [c.to_dict() for c in dropped]
        return pred

    @property
    def timing(self) -> dict[str, float] | None:
        return getattr(self.inner, "timing", None)
