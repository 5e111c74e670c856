"""The evaluation config; fields marked (*) are the ones people change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcore.errors import ToolkitError


@dataclass
class EvalConfig:
    # (*) a built-in suite name (hackathon30), a JSONL file, a generated dataset folder, or a BFCL v3/v4
    # single-turn question file (BFCL_v3_simple.json...: one object a line with question and function)
    suite: str = "hackathon30"
    # (*) a BFCL suite's possible-answer file (same ids, ground_truth); irrelevance files need none
    answers: str | None = None
    # (*) call_f1: the hackathon's call matching (always reported); bfcl_ast: also BFCL's AST checker on a
    # BFCL suite (summary.json gains accuracy and accuracy_by_category)
    metric: str = "call_f1"
    # which split to score when `suite` is a dataset folder
    split: str = "test"
    # (*) which model predicts (a config group: configs/model/*.yaml, built with _target_)
    model: Any = field(default_factory=lambda: {"_target_": "runtime.models.SymbolicModel", "name": "symbolic"})
    # (*) where predictions.jsonl and summary.json go; default runs/eval/<model>-<suite>
    output_dir: str = ""
    # (*) apply the repair post-processor to the model's calls (both variants are always in summary.json)
    repair: bool = False
    # score only the first N cases (quick looks); null = all
    limit: int | None = None
    # cases answered again one at a time for the single-request latency (p50/p95 and the score's latency
    # term: the hackathon's one request alone, until its calls); 0 = skip (then a batch's wall time is charged)
    latency_cases: int = 30
    # cases handed to the model at a time; each finished batch is saved under <output_dir>/partial/, and a
    # killed run started again with the same settings predicts only the cases after its last saved batch
    batch_cases: int = 64
    # show a progress bar (on stderr)
    progress: bool = True
    # extra tool schema files/folders, for suites that name tools instead of defining them
    tool_paths: list[str] = field(default_factory=list)
    # (*) also write <output_dir>/report.html + report.md (with the symbolic baseline beside the model)
    report: bool = False
    # Weights & Biases logging of the summary and per-case table when report=true:
    # offline (written under output_dir, sync later), online, or disabled
    wandb_mode: str = "offline"
    wandb_project: str = "toolcall-toolkit"

    def __post_init__(self) -> None:
        if self.metric not in ("call_f1", "bfcl_ast"):
            raise ToolkitError(f"unknown metric {self.metric!r}", file="configs/eval.yaml", field="metric",
                               fix="use call_f1 or bfcl_ast")
        if self.batch_cases <= 0:
            raise ToolkitError("must be positive", file="configs/eval.yaml", field="batch_cases")
        if self.latency_cases < 0:
            raise ToolkitError("must be 0 or more", file="configs/eval.yaml", field="latency_cases")
        if self.limit is not None and self.limit <= 0:
            raise ToolkitError("must be positive or null", file="configs/eval.yaml", field="limit")
        if self.wandb_mode not in ("offline", "online", "disabled"):
            raise ToolkitError(f"unknown wandb_mode {self.wandb_mode!r}", file="configs/eval.yaml", field="wandb_mode",
                               fix="use offline, online or disabled")
        if self.split not in ("train", "validation", "test"):
            raise ToolkitError(f"unknown split {self.split!r}", file="configs/eval.yaml", field="split",
                               fix="use train, validation or test")
