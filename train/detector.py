"""`python -m train.detector data.path=data/default output_dir=runs/detector`

Fits the tool detector (toolcore/detector.py) on a dataset's train split and sets its veto threshold
on the validation split; the router loads the folder (`model=router model.detector=runs/detector`).
Seconds on a CPU: no model is loaded.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main
from toolcore.detector import Example, ToolDetector
from toolcore.suites import Case, cases_from_dataset


@dataclass
class DetectorData:
    path: str = "data/default"     # a data_gen dataset folder (train and validation splits)


@dataclass
class DetectorConfig:
    data: DetectorData = field(default_factory=DetectorData)
    output_dir: str = "runs/detector"
    c: float = 4.0                 # inverse L2 strength of each tool's logistic regression
    recall: float = 0.98           # share of the validation split's real calls the veto must keep

    def __post_init__(self) -> None:
        if not 0.5 <= self.recall < 1:
            raise ValueError(f"recall={self.recall}: give a share in [0.5, 1)")


ConfigStore.instance().store(name="detector_schema", node=DetectorConfig)


def examples(cases: list[Case]) -> list[Example]:
    return [Example(c.user_text, frozenset(t.name for t in c.tools), frozenset(k.name for k in c.expected_calls))
            for c in cases]


def run(cfg) -> dict:
    config: DetectorConfig = OmegaConf.to_object(cfg)
    t0 = time.perf_counter()
    train = examples(cases_from_dataset(config.data.path, "train"))
    validation = examples(cases_from_dataset(config.data.path, "validation"))
    detector, facts = ToolDetector.fit(train, validation, c=config.c, recall=config.recall)
    facts |= {"dataset": config.data.path, "train_examples": len(train), "fit_seconds": round(time.perf_counter() - t0, 1)}
    detector.save(config.output_dir, facts)
    print(json.dumps(facts | {"tools": detector.tools, "output_dir": config.output_dir}, indent=2))
    return facts


if __name__ == "__main__":
    hydra_main("detector", run)
