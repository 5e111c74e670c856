"""`python -m data_gen.convert source=... output_dir=...`: your own tool-calling data (OpenAI / ShareGPT /
xLAM / Hermes files, a `datasets` folder, a hub dataset id) -> the toolkit dataset (DatasetDict +
manifest.json with counts, rejections by reason and examples). See configs/convert.yaml; the work is
done in toolcore.convert, which train (`data.path`) and eval (`suite=`) also call."""

from __future__ import annotations

import json

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main
from toolcore.convert import ConvertConfig

ConfigStore.instance().store(name="convert_schema", node=ConvertConfig)


def run(cfg) -> None:
    from toolcore.convert import convert

    config: ConvertConfig = OmegaConf.to_object(cfg)
    manifest = convert(config, progress=True)
    print(json.dumps({
        "output_dir": config.output_dir, "reused": manifest.get("reused", False),
        "layout": manifest["source"]["layout"], "rows_read": manifest["rows_read"], "kept": manifest["kept"],
        "splits": manifest["splits"], "no_tool_share": manifest["total"]["no_tool_share"],
        "rejections": manifest["rejections"], "decontamination_dropped": manifest["decontamination"]["dropped"],
    }, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    hydra_main("convert", run)
