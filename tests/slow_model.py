"""A symbolic model that takes its time, so a test can kill an eval run in the middle (tests/test_bfcl.py).

    python -m eval model=symbolic model._target_=tests.slow_model.SlowSymbolicModel +model.delay_s=0.01 ...

With `log`, every case id it predicts is appended to that file, so the test can tell which cases a
resumed run predicted again.
"""

from __future__ import annotations

import time
from typing import Sequence

from runtime.models import SymbolicModel
from runtime.models.base import Prediction
from toolcore.suites import Case


class SlowSymbolicModel(SymbolicModel):
    def __init__(self, name: str = "symbolic", delay_s: float = 0.01, log: str | None = None):
        super().__init__(name)
        self.delay_s, self.log = delay_s, log

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        time.sleep(self.delay_s * len(cases))
        if self.log:
            with open(self.log, "a") as f:
                f.write("".join(f"{c.id}\n" for c in cases))
        return super().predict(cases)
