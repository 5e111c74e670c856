"""From a dataset to token ids and labels (the stages meet at the dataset on disk: data_gen's, or any
source toolcore.convert reads, converted once; several sources mix by share with `data.mix`).

Labels come from the format's segments: only the assistant's own text (calls, answers, end-of-turn
markers) is learned, never system, user or tool-result tokens.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat
from toolcore.suites import Case, ConversationReader, cases_from_dataset
from toolcore.tokenize import IGNORE, encode_conversation, encode_packed

from .config import DataConfig


def dataset_folder(path: str | Path) -> Path:
    """The dataset folder for a data source: a dataset folder as it is, anything else converted once
    (toolcore.convert, cached by content)."""
    from toolcore.convert import resolve_dataset

    return resolve_dataset(path, field="data.path")


def manifest_hash(path: str | Path) -> str:
    manifest = dataset_folder(path) / "manifest.json"
    return hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]


def data_hash(cfg: DataConfig) -> str:
    """What a run trained on: data.path's manifest hash, combined with each data.mix source's (and its
    weight) when there are any, so a run folder's fingerprint changes when a mixed-in file does."""
    if not cfg.mix:
        return manifest_hash(cfg.path)
    parts = [manifest_hash(cfg.path)] + [f"{m.weight}:{manifest_hash(m.path)}" for m in cfg.mix]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def load_split(cfg: DataConfig, split: str, path: str | None = None):
    from toolcore.suites import load_split as load

    return load(dataset_folder(path or cfg.path), split, field="data.path")


def source_rows(cfg: DataConfig, split: str, limit: int | None) -> list[tuple[str, int | None]]:
    """(source, rows wanted) for each training source: data.path alone (`limit` rows, or all), or the
    mix, whose shares set each source's rows (as many as the shares allow when `limit` is None)."""
    if split != "train" or not cfg.mix:
        return [(cfg.path, limit)]
    shares = [(cfg.path, 1 - sum(m.weight for m in cfg.mix))] + [(m.path, m.weight) for m in cfg.mix]
    shares = [(p, w) for p, w in shares if w > 0]
    sizes = {p: len(load_split(cfg, split, p)) for p, _ in shares}
    total = limit if limit is not None else min(sizes[p] / w for p, w in shares)
    wanted = [(p, round(total * w) if limit is not None else int(total * w + 1e-9)) for p, w in shares]
    short = {p: f"{n} wanted, {sizes[p]} there" for p, n in wanted if n > sizes[p]}
    if short:
        raise ToolkitError(f"not enough training rows for the mix: {short}", field="data.mix",
                           fix="lower data.train_examples or those weights (data.train_examples=null takes what the shares allow)")
    return wanted


def category_mix(cfg: DataConfig, path: str, categories: list[str]) -> tuple[dict[str, float], bool]:
    """The category weights for one source, and whether a short category is an error. A converted
    source's categories (single / multi2 / multi3 / no_call) are not data_gen's: it follows weights that
    name no_call (weights written for such data), as far as its rows allow, and keeps its own mix under
    weights that do not (a recipe's data_gen mix)."""
    if not cfg.category_weights:
        return {}, True
    manifest = json.loads((dataset_folder(path) / "manifest.json").read_text())
    if manifest.get("origin") != "convert":
        return cfg.category_weights, True
    if "no_call" not in cfg.category_weights:
        return {}, False
    have = set(categories)
    weights = {c: w for c, w in cfg.category_weights.items() if c in have}
    if not any(w > 0 for w in weights.values()):
        raise ToolkitError(f"category_weights give no share to any of its categories {sorted(have)}", file=path,
                           field="data.category_weights", fix="give a share to at least one of them")
    return weights, False


def tokenize_split(cfg: DataConfig, split: str, tokenizer: Any, fmt: ChatFormat, limit: int | None = None):
    """A `datasets.Dataset` of input_ids / labels / length, shuffled (seeded), over-long rows dropped."""
    from datasets import concatenate_datasets

    parts = []
    for path, n in source_rows(cfg, split, limit):
        ds = load_split(cfg, split, path).shuffle(seed=cfg.shuffle_seed)
        weights, strict = category_mix(cfg, path, ds["category"])
        if weights and not strict:      # as many as the weights allow, up to n
            most = len(weighted_rows(ds["category"], weights, None, where=f"{path}/{split}"))
            n = most if n is None else min(n, most)
        if weights:
            ds = ds.select(weighted_rows(ds["category"], weights, n, where=f"{path}/{split}"))
        elif n is not None:
            ds = ds.select(range(min(n, len(ds))))
        keep = ["id", "messages", "tools"] + (["request_starts"] if cfg.pack_requests and
                                              "request_starts" in ds.column_names else [])
        parts.append(ds.select_columns(keep))
    ds = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    read = ConversationReader()

    def encode(row: dict[str, Any]) -> dict[str, Any]:
        if cfg.pack_requests:       # every row gets the packed columns (one branch where it has one request)
            packed = encode_packed(tokenizer, fmt, read(row), row.get("request_starts") or [0])
            return packed | {"length": len(packed["input_ids"])}
        ids, labels = encode_conversation(tokenizer, fmt, read(row))
        return {"input_ids": ids, "labels": labels, "length": len(ids)}

    before = len(ds)
    ds = ds.map(encode, remove_columns=ds.column_names, desc=f"tokenizing {split}")
    ds = ds.filter(lambda r: r["length"] <= cfg.max_length and any(l != IGNORE for l in r["labels"]))
    return ds, before - len(ds)


def weighted_rows(categories: list[str], mix: dict[str, float], limit: int | None, where: str) -> list[int]:
    """Row indices (in the given, shuffled order) whose categories follow `mix`'s shares: `limit` rows,
    or as many as the scarcest category allows when `limit` is None."""
    have: dict[str, list[int]] = {}
    for i, c in enumerate(categories):
        have.setdefault(c, []).append(i)
    unknown, unnamed = sorted(set(mix) - set(have)), sorted(set(have) - set(mix))
    if unknown or unnamed:
        raise ToolkitError(f"category_weights names {unknown or 'no unknown category'}; leaves out {unnamed or 'none'}",
                           file=where, field="data.category_weights",
                           fix=f"give a share to each of {sorted(have)} (0 leaves one out)")
    total = sum(mix.values())
    n = limit if limit is not None else int(min(len(have[c]) * total / w for c, w in mix.items() if w > 0))
    take = {c: round(n * w / total) for c, w in mix.items()}
    short = {c: f"{k} wanted, {len(have[c])} there" for c, k in take.items() if k > len(have[c])}
    if short:
        raise ToolkitError(f"not enough rows for category_weights: {short}", file=where, field="data.category_weights",
                           fix="lower those shares or data.train_examples")
    return sorted(i for c, k in take.items() for i in have[c][:k])


def eval_cases(cfg: DataConfig, split: str = "validation") -> list[Case]:
    """Validation conversations as eval cases (prompt up to the last user turn, its expected calls)."""
    load_split(cfg, split)   # the training config's own error (field data.path) for a bad folder
    return cases_from_dataset(dataset_folder(cfg.path), split, cfg.eval_cases, shuffle_seed=cfg.shuffle_seed)


class Collator:
    """Right-pads a batch to its longest row (length-grouped batches keep that short), rounded up to
    a multiple of `pad_to_multiple_of`: fewer distinct shapes for the CPU kernels and the allocator."""

    def __init__(self, pad_id: int, pad_to_multiple_of: int = 1):
        self.pad_id = pad_id
        self.multiple = pad_to_multiple_of

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = -(-max(len(r["input_ids"]) for r in rows) // self.multiple) * self.multiple
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for k, r in enumerate(rows):
            n = len(r["input_ids"])
            ids[k, :n] = torch.tensor(r["input_ids"])
            labels[k, :n] = torch.tensor(r["labels"])
            mask[k, :n] = 1
        batch = {"input_ids": ids, "labels": labels, "attention_mask": mask}
        if "branch" in rows[0]:
            batch |= packed_inputs(rows, width)
        return batch


def packed_inputs(rows: list[dict[str, Any]], width: int) -> dict[str, Any]:
    """Position ids and the 4D attention mask of packed rows (toolcore.tokenize.encode_packed): a token sees
    the earlier tokens of its own branch and of the shared part (branch 0), never another branch or
    padding. A padding position sees itself only (an all-masked row would give NaNs; it has no label)."""
    import torch

    pos = torch.zeros((len(rows), width), dtype=torch.long)
    branch = torch.full((len(rows), width), -1, dtype=torch.long)
    for k, r in enumerate(rows):
        n = len(r["input_ids"])
        pos[k, :n] = torch.tensor(r["position_ids"])
        branch[k, :n] = torch.tensor(r["branch"])
    q, kv = branch[:, :, None], branch[:, None, :]
    causal = torch.ones((width, width), dtype=torch.bool).tril()
    allowed = causal & (kv >= 0) & ((kv == 0) | (kv == q))
    allowed |= torch.eye(width, dtype=torch.bool) & (q < 0)
    return {"position_ids": pos, "packed_mask": allowed[:, None]}
