"""`python -m data_gen [overrides]`: generate the verified tool-calling dataset (see configs/data_gen.yaml)."""

from __future__ import annotations

import json

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main

from .config import DataGenConfig

ConfigStore.instance().store(name="data_gen_schema", node=DataGenConfig)


def run(cfg) -> None:
    from .generate import generate

    config: DataGenConfig = OmegaConf.to_object(cfg)
    manifest = generate(config)
    if "shard_index" in manifest:   # one job of a sharded run (data_gen/sharding.py): its blocks are in place
        print(json.dumps({k: manifest[k] for k in ("shard_index", "num_shards", "kept", "attempts", "seconds")}
                         | {"blocks": sorted(map(int, manifest["blocks"]))}))
        return
    total = manifest["total"]
    print(json.dumps({
        "output_dir": config.output_dir, "reused": manifest.get("reused", False), "splits": manifest["splits"],
        "no_tool_share": total["no_tool_share"], "distinct_user_utterances": total["distinct_user_utterances"],
        "rejection_rate": manifest["rejection_rate"], "decontamination_dropped": manifest["decontamination"]["dropped"],
        "conversations_per_second": manifest["conversations_per_second"],
    }, indent=2))


def main() -> None:
    """The console entry point (toolcall-data-gen), the same as `python -m data_gen`."""
    hydra_main("data_gen", run)


if __name__ == "__main__":
    main()
