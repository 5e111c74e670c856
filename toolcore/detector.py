"""A small learned tool detector: how likely a request is to call each tool it is offered.

One logistic regression per tool, on character n-grams of the last user turn (hashed, so the
file holds no vocabulary), trained only on the rows that offered that tool: "what's it like in
Oslo" and "blues, please" are learned as weather and music without those words, and a request the
generated data never pairs with a tool (book a table, order a pizza) scores low for all of them.

The router (runtime/models/router.py) uses it as a veto on the tuned model's calls: a call to a tool
the detector knows, with a probability under the detector's threshold, is dropped. The threshold
is set when fitting, from the validation split alone: the `recall` quantile of the probabilities
of the calls that really were made there (so the veto drops at most ~2% of right calls on data
like the training data). Tools the detector never saw are never vetoed: it has nothing to say.

    python -m train.detector data.path=data/default output_dir=runs/detector
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ToolkitError
from .files import write_text_atomic

# char n-grams within word boundaries: robust to inflections and typos, no tokenizer needed
VECTORIZER = {"analyzer": "char_wb", "ngram_range": (2, 5), "n_features": 2 ** 16, "alternate_sign": False,
              "lowercase": True, "norm": "l2"}


def _vectorizer():
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(**VECTORIZER)


@dataclass
class Example:
    text: str
    offered: frozenset[str]
    called: frozenset[str]


@dataclass
class ToolDetector:
    tools: list[str]
    coef: np.ndarray           # tools x features
    intercept: np.ndarray      # tools
    threshold: float

    # ----- fitting -----------------------------------------------------------------------------
    @classmethod
    def fit(cls, train: Sequence[Example], validation: Sequence[Example], *, c: float = 4.0,
            recall: float = 0.98) -> tuple["ToolDetector", dict[str, Any]]:
        from sklearn.linear_model import LogisticRegression

        tools = sorted({t for e in train for t in e.offered})
        vec = _vectorizer()
        x = vec.transform([e.text for e in train])
        coef = np.zeros((len(tools), x.shape[1]), dtype=np.float32)
        intercept = np.zeros(len(tools), dtype=np.float32)
        for k, tool in enumerate(tools):
            rows = [i for i, e in enumerate(train) if tool in e.offered]
            y = np.array([tool in train[i].called for i in rows])
            if y.all() or not y.any():          # nothing to tell apart: a constant answer
                intercept[k] = 6.0 if y.all() else -6.0
                continue
            lr = LogisticRegression(C=c, max_iter=1000).fit(x[rows], y)
            coef[k], intercept[k] = lr.coef_[0], lr.intercept_[0]
        det = cls(tools, coef, intercept, threshold=0.0)
        det.threshold, facts = det._calibrate(validation, recall)
        return det, facts

    def _calibrate(self, validation: Sequence[Example], recall: float) -> tuple[float, dict[str, Any]]:
        """The threshold that keeps `recall` of the validation split's real calls, and what it costs."""
        true_p, false_p = [], []
        for e, probs in zip(validation, self.probabilities_many([(e.text, e.offered) for e in validation])):
            for tool, p in probs.items():
                (true_p if tool in e.called else false_p).append(p)
        if not true_p:
            raise ToolkitError("the validation split has no calls to calibrate the detector on", field="data.path")
        threshold = float(min(0.5, np.quantile(true_p, 1 - recall, method="lower")))   # >= recall kept
        return threshold, {
            "threshold": round(threshold, 4), "validation_calls": len(true_p), "validation_non_calls": len(false_p),
            "kept_calls": round(float(np.mean(np.array(true_p) >= threshold)), 4),
            "vetoed_non_calls": round(float(np.mean(np.array(false_p) < threshold)), 4) if false_p else None,
        }

    # ----- use ---------------------------------------------------------------------------------
    def probabilities_many(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[dict[str, float]]:
        """Per request: P(called) for each offered tool the detector knows."""
        if not requests:
            return []
        x = _vectorizer().transform([text for text, _ in requests])
        logits = np.asarray(x @ self.coef.T) + self.intercept
        index = {t: k for k, t in enumerate(self.tools)}
        return [{t: float(1 / (1 + np.exp(-row[index[t]]))) for t in offered if t in index}
                for row, (_, offered) in zip(logits, requests)]

    def vetoes(self, text: str, offered: Sequence[str]) -> set[str]:
        """The offered tools this request almost surely does not call."""
        return {t for t, p in self.probabilities_many([(text, offered)])[0].items() if p < self.threshold}

    # ----- files -------------------------------------------------------------------------------
    def save(self, folder: str | Path, facts: dict[str, Any]) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / ".weights.tmp.npz"
        np.savez_compressed(tmp, coef=self.coef, intercept=self.intercept)
        tmp.replace(folder / "weights.npz")
        meta = {"tools": self.tools, "threshold": self.threshold, "vectorizer": VECTORIZER, **facts}
        write_text_atomic(folder / "detector.json", json.dumps(meta, indent=2))   # written last: marks it complete
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "ToolDetector":
        folder = Path(folder)
        meta_path = folder / "detector.json"
        if not meta_path.exists() or not (folder / "weights.npz").exists():
            raise ToolkitError("not a tool detector folder (no detector.json / weights.npz)", file=str(folder),
                               field="detector", fix="train one: python -m train.detector data.path=data/default "
                                                     f"output_dir={folder}")
        meta = json.loads(meta_path.read_text())
        if meta.get("vectorizer", {}).get("n_features") != VECTORIZER["n_features"]:
            raise ToolkitError("detector was trained with other features", file=str(meta_path), field="vectorizer",
                               fix="train it again with this version")
        with np.load(folder / "weights.npz") as w:   # arrays only: no pickle
            return cls(list(meta["tools"]), w["coef"], w["intercept"], float(meta["threshold"]))
