"""`python -m serve model=<any eval model config> [model.adapter=...] host=127.0.0.1 port=8000
[server_tools=[calculate,web_search]]`: an OpenAI-compatible server (see serve/app.py, configs/serve.yaml)."""

from __future__ import annotations

import sys

from hydra.core.config_store import ConfigStore
from hydra.utils import instantiate
from omegaconf import OmegaConf

from runtime.generation import GenerationConfig
from toolcore.cli import hydra_main

from .config import ServeConfig

ConfigStore.instance().store(name="serve_schema", node=ServeConfig)
# model.generation of configs/model/hf.yaml: the engine's dataclass, so its defaults live there only
ConfigStore.instance().store(name="generation_schema", node=GenerationConfig)


def run(cfg) -> None:
    import uvicorn

    from .app import create_app

    config: ServeConfig = OmegaConf.to_object(cfg)
    model = instantiate(cfg.model)
    app = create_app(model, config)
    name = config.served_name or model.name
    print(f"serving {name!r} on http://{config.host}:{config.port}/v1", file=sys.stderr, flush=True)
    uvicorn.run(app, host=config.host, port=config.port, log_level=config.log_level)


def main() -> None:
    """The console entry point (toolcall-serve), the same as `python -m serve`."""
    hydra_main("serve", run)


if __name__ == "__main__":
    main()
