"""`python -m data_gen.speech [overrides]`: spoken versions of the text dataset (configs/speech.yaml)."""

from __future__ import annotations

import json

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main

from .config import SpeechConfig

ConfigStore.instance().store(name="speech_schema", node=SpeechConfig)


def run(cfg) -> None:
    from .generate import generate

    config: SpeechConfig = OmegaConf.to_object(cfg)
    m = generate(config)
    print(json.dumps({k: m.get(k) for k in ("splits", "total", "rejections", "attempts", "wer", "voices",
                                             "audio_hours", "timing", "reused")} | {"output_dir": config.output_dir},
                     indent=2))


if __name__ == "__main__":
    hydra_main("speech", run)
