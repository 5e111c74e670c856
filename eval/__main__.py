"""`python -m eval suite=<name|file.jsonl|dataset dir|BFCL file> model=<name> output_dir=<dir> [repair=true]
[answers=<BFCL possible_answer file> metric=bfcl_ast]`."""

from __future__ import annotations

import json
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.utils import instantiate
from omegaconf import OmegaConf

from runtime.generation import GenerationConfig
from toolcore.cli import hydra_main
from toolcore.extras import wandb_mode

from .config import EvalConfig

ConfigStore.instance().store(name="eval_schema", node=EvalConfig)
# model.generation of configs/model/hf.yaml: the engine's dataclass, so its defaults live there only
ConfigStore.instance().store(name="generation_schema", node=GenerationConfig)


def run(cfg) -> dict:
    from .runner import evaluate

    config: EvalConfig = OmegaConf.to_object(cfg)
    model = instantiate(cfg.model)
    out = config.output_dir or f"runs/eval/{model.name}-{Path(config.suite).stem}"
    summary = evaluate(model, config.suite, out, split=config.split, repair=config.repair, limit=config.limit,
                       tool_paths=config.tool_paths, latency_cases=config.latency_cases, answers=config.answers,
                       metric=config.metric, batch_cases=config.batch_cases, progress=config.progress,
                       model_config=OmegaConf.to_container(cfg.model, resolve=True))
    keys = ("model", "suite", "cases", "accuracy", "accuracy_by_category", "f1", "score", "f1_by_difficulty",
            "tool_name_f1", "argument_accuracy", "parse_failure_rate", "errors")
    print(json.dumps({k: summary[k] for k in keys if k in summary} | {
        "f1_with_repair": summary["variants"]["repaired"]["f1"], "latency": summary["latency"],
        "routes": summary["routes"], "invalid_calls": summary["invalid_calls"], "assists": summary["assists"],
        "output_dir": out}, indent=2))
    if config.report:
        from runtime.models import SymbolicModel
        from .report import load_run, log_wandb, write_report

        folders = [out]
        if model.name != "symbolic":   # the model-free baseline stands beside every model
            base = str(Path(out) / "baseline_symbolic")
            evaluate(SymbolicModel(), config.suite, base, split=config.split, limit=config.limit,
                     tool_paths=config.tool_paths, answers=config.answers, metric=config.metric,
                     batch_cases=config.batch_cases, progress=config.progress)
            folders.append(base)
        print(f"report: {write_report(folders, Path(out) / 'report.html')}")
        mode = wandb_mode(config.wandb_mode, "eval")
        if mode != "disabled":
            log_wandb(load_run(out), project=config.wandb_project, mode=mode)
    return summary


def main() -> None:
    """The console entry point (toolcall-eval), the same as `python -m eval`."""
    hydra_main("eval", run)


if __name__ == "__main__":
    main()
