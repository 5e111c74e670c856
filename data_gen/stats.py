"""How a dataset's requests and tools look, beside requests people wrote: the yardstick for whether
generated data resembles what users send.

    python -m data_gen.stats data/default --reference benchmarks/reference_requests.txt
    python -m data_gen.stats data/default data/other --split train --sample 2000 --perplexity 200 --json out.json
    python -m data_gen.stats data/default --rows schema --sample 300 --perplexity 300   # schema-driven rows only

Per source, over rows whose last request gets a call (a sample of `--sample` rows):
- request length (median characters) and sentences per request (mean): people give context and spread
  values over sentences; a form-like generator writes one clause;
- form-like share: requests holding a "key set to value" join ("with the date set to", "x = 3", "using 4
  as the guests", "the priority being high"), which people rarely write;
- rows whose offered tools take an array of objects, or an object nested in an object (APIs as built);
- tools per row and prompt tokens (system + tools + the request, the generic format, SmolLM2's
  tokenizer): mean and largest;
- with `--perplexity N`: the base model's median perplexity per token on N requests, a cheap signal of
  how natural a request reads (lower is more like the text the model was trained on).
A reference file (one request a line, # comments) gets the request measures only.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

# the joins a schema-to-text template writes and people rarely do
# (a colon is not among them: people write "into Spanish: the heater stopped working" too)
FORM_LIKE = re.compile(r"\b(?:set to|being)\s|\s=\s|\bwhere the [\w ]{1,30}? is\b|\busing \S+(?: \S+)? as the\b",
                       re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)")


_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|st|approx|no)\.", re.IGNORECASE)


def sentences(text: str) -> int:
    """Sentences with a word in them ("3.5" and "e.g." do not end one)."""
    parts = [p for p in _SENTENCE_END.split(_ABBREVIATIONS.sub("", text.strip())) if re.search(r"[A-Za-z]{2}", p)]
    return max(1, len(parts))


def walk(schema: Any, depth: int = 0) -> Iterable[tuple[dict, int]]:
    """Every sub-schema with its object depth (the parameters object is depth 0)."""
    if not isinstance(schema, dict):
        return
    yield schema, depth
    for sub in (schema.get("properties") or {}).values():
        yield from walk(sub, depth + (schema.get("type") == "object"))
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], depth)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            yield from walk(sub, depth)
    for sub in (schema.get("$defs") or {}).values():
        yield from walk(sub, depth)


def shapes(tool: dict) -> tuple[bool, bool, bool]:
    """(takes an array of objects, takes an object parameter, nests an object inside an object parameter)."""
    params = tool.get("parameters") or {}
    nodes = list(walk(params))
    arr_obj = any(s.get("type") == "array" and isinstance(s.get("items"), dict)
                  and (s["items"].get("type") == "object" or "properties" in s["items"]) for s, _ in nodes)
    objects = [d for s, d in nodes if s.get("type") == "object"]
    return arr_obj, any(d >= 1 for d in objects), any(d >= 2 for d in objects)


def request_measures(texts: Sequence[str]) -> dict[str, Any]:
    if not texts:
        return {"requests": 0}
    return {"requests": len(texts),
            "median_chars": statistics.median(len(t) for t in texts),
            "sentences_mean": round(statistics.fmean(sentences(t) for t in texts), 2),
            "form_like_share": round(sum(bool(FORM_LIKE.search(t)) for t in texts) / len(texts), 3)}


ROW_KINDS = ("all", "builtin", "schema")


def dataset_rows(path: str, split: str, sample: int, seed: int, kind: str = "all") -> list[dict]:
    """Up to `sample` rows with calls; `kind` "builtin" keeps the built-in tools' rows, "schema" the
    schema-driven ones (tools known by their schema: the library and the user's)."""
    from toolcore.suites import load_split

    from .schema_driven.episodes import row_tags

    ds = load_split(path, split)
    rows = [r for r in ds if r["num_calls"] > 0 and
            (kind == "all" or (row_tags(r["id"]) is not None) == (kind == "schema"))]
    random.Random(seed).shuffle(rows)
    return rows[:sample]


def request(row: dict) -> tuple[str, list[dict]]:
    """The row's last request (the one its calls answer) and its offered tools."""
    return row["user_text"], json.loads(row["tools"])


def prompt_tokens(rows: Sequence[dict], tokenizer: Any) -> list[int]:
    from toolcore.conversation import Conversation, Message
    from toolcore.formats import get_format
    from toolcore.suites import ConversationReader
    from toolcore.tokenize import encode_prompt

    fmt, reader = get_format("generic"), ConversationReader()
    out = []
    for row in rows:
        text, tools = request(row)
        conv = Conversation([Message.text("user", text)], [reader.tool(t) for t in tools])
        out.append(len(encode_prompt(tokenizer, fmt, conv)))
    return out


def perplexities(texts: Sequence[str], model: Any, tokenizer: Any) -> list[float]:
    import torch

    out = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"][:, :256]
            if ids.shape[1] < 2:
                continue
            out.append(math.exp(model(input_ids=ids, labels=ids).loss.item()))
    return out


def measure(sources: dict[str, tuple[list[str], list[dict] | None]], *, tokenizer: Any = None, count_tokens: bool = True,
            model: Any = None, perplexity: int = 0, seed: int = 0) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for name, (texts, rows) in sources.items():
        m = request_measures(texts)
        if rows:
            tool_lists = [json.loads(r["tools"]) for r in rows]
            flags = [[shapes(t) for t in tools] for tools in tool_lists]
            for i, key in enumerate(("array_of_objects_share", "object_param_share", "nested_object_share")):
                m[key] = round(sum(any(x[i] for x in f) for f in flags) / len(rows), 3)
            m["tools_per_row_mean"] = round(statistics.fmean(len(t) for t in tool_lists), 2)
            if tokenizer is not None and count_tokens:
                lengths = prompt_tokens(rows, tokenizer)
                m["prompt_tokens_mean"] = round(statistics.fmean(lengths))
                m["prompt_tokens_max"] = max(lengths)
        if model is not None and perplexity:
            chosen = random.Random(seed).sample(list(texts), min(perplexity, len(texts)))
            m["perplexity_median"] = round(statistics.median(perplexities(chosen, model, tokenizer)), 1)
        table[name] = m
    return table


ROWS = [("requests", "requests measured"), ("median_chars", "request length, median characters"),
        ("sentences_mean", "sentences per request, mean"), ("form_like_share", "form-like requests ('key set to value')"),
        ("perplexity_median", "base model perplexity per token, median"),
        ("array_of_objects_share", "rows whose tools take an array of objects"),
        ("object_param_share", "rows whose tools take an object"),
        ("nested_object_share", "rows whose tools nest an object in an object"),
        ("tools_per_row_mean", "tools offered per row, mean"),
        ("prompt_tokens_mean", "prompt tokens (system + tools + request), mean"),
        ("prompt_tokens_max", "prompt tokens, largest")]


def markdown(table: dict[str, dict[str, Any]]) -> str:
    names = list(table)
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for key, label in ROWS:
        if any(key in table[n] for n in names):
            lines.append(f"| {label} | " + " | ".join(str(table[n].get(key, "-")) for n in names) + " |")
    return "\n".join(lines)


def reference_texts(path: str) -> list[str]:
    from toolcore.errors import ToolkitError

    p = Path(path)
    if not p.exists():
        raise ToolkitError("reference file does not exist", file=path, field="--reference",
                           fix="give a text file with one request a line")
    return [line.strip() for line in p.read_text().splitlines() if line.strip() and not line.startswith("#")]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m data_gen.stats", description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="+", help="data_gen output folders")
    ap.add_argument("--split", default="train")
    ap.add_argument("--sample", type=int, default=2000, help="rows with calls measured per dataset")
    ap.add_argument("--reference", action="append", default=[], help="a file of requests people wrote, one a line")
    ap.add_argument("--perplexity", type=int, default=0, help="requests per source scored by the base model (0: off)")
    ap.add_argument("--no-tokens", action="store_true", help="skip prompt token counts (no tokenizer load)")
    ap.add_argument("--rows", choices=ROW_KINDS, default="all",
                    help="which rows of each dataset: all, the built-in tools' (builtin) or the schema-driven (schema)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)

    from toolcore.errors import ToolkitError

    try:
        sources: dict[str, tuple[list[str], list[dict] | None]] = {}
        for path in args.datasets:
            rows = dataset_rows(path, args.split, args.sample, args.seed, args.rows)
            if not rows:
                sys.exit(f"error: {path} ({args.split}): no {'' if args.rows == 'all' else args.rows + ' '}rows with "
                         f"calls to measure (a --rows or --split its data lacks?)")
            label = args.split if args.rows == "all" else f"{args.split}, {args.rows} rows"
            sources[f"{path} ({label})"] = ([request(r)[0] for r in rows], rows)
        for path in args.reference:
            sources[Path(path).name] = (reference_texts(path), None)
    except ToolkitError as e:
        sys.exit(f"error: {e}")
    tokenizer = model = None
    if not args.no_tokens or args.perplexity:
        from toolcore.hub import SMOLLM2, load_tokenizer, resolve_model_path

        tokenizer = load_tokenizer(SMOLLM2)
        if args.perplexity:
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(resolve_model_path(SMOLLM2)).eval()
    table = measure(sources, tokenizer=tokenizer, count_tokens=not args.no_tokens, model=model,
                    perplexity=args.perplexity, seed=args.seed)
    print(markdown(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
