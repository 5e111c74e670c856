"""`python -m data_gen.vision [overrides]`: vision tool-use data for Ovis2.5's crop tool (configs/vision.yaml)."""

from __future__ import annotations

import json

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main

from .config import VisionConfig

ConfigStore.instance().store(name="vision_schema", node=VisionConfig)


def run(cfg) -> None:
    from .generate import generate

    config: VisionConfig = OmegaConf.to_object(cfg)
    m = generate(config)
    print(json.dumps({k: m.get(k) for k in ("splits", "total", "kinds", "rejections", "timing", "reused")}
                     | {"output_dir": config.output_dir}, indent=2))


if __name__ == "__main__":
    hydra_main("vision", run)
