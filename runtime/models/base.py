"""The interface between the evaluator and anything that predicts calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from toolcore.schema import ToolCall
from toolcore.suites import Case


@dataclass
class Prediction:
    calls: list[ToolCall]
    raw_text: str = ""
    parse_failures: list[str] = field(default_factory=list)
    latency_ms: float = 0.0
    on_device: bool = True
    details: dict = field(default_factory=dict)   # engine facts: tokens, first-call time, tool results


class Model(Protocol):
    name: str

    def predict(self, cases: Sequence[Case]) -> list[Prediction]: ...
