"""The symbolic pre-parser as a model: rules, no weights (see runtime/baselines/symbolic.py)."""

from __future__ import annotations

import json
import time
from typing import Sequence

from toolcore.suites import Case

from ..baselines.symbolic import SymbolicParser
from .base import Prediction


class SymbolicModel:
    def __init__(self, name: str = "symbolic"):
        self.name = name
        self.parser = SymbolicParser()

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        out = []
        for case in cases:
            t0 = time.perf_counter()
            calls = self.parser(case.user_text, case.tools)
            ms = (time.perf_counter() - t0) * 1000
            out.append(Prediction(calls, raw_text=json.dumps([c.to_dict() for c in calls]), latency_ms=ms))
        return out
