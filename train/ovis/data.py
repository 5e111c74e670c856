"""Vision rows -> model inputs. Each row renders through runtime.ovis.chat (the rendering the live loop
uses): the question image and every fed-back crop become the adapter's placeholder ids, filled from the
batch's pixels in order; labels cover the assistant's text only (calls, answer, end of turn) - never an
image placeholder, never the prompt. Rows longer than max_length are dropped (an image span cannot be cut)."""

from __future__ import annotations

import json
from typing import Any

from runtime.ovis.chat import encode, pieces, row_resolver
from runtime.ovis.tools import toolset_from_schemas


def encode_row(row: dict[str, Any], tokenizer: Any, adapter: Any, describe_trained: bool = True
               ) -> tuple[list[int], list[int], list[Any]]:
    """describe_trained=False leaves the trained Crop tool out of the prompt's tool list (the design's
    use_tool_descriptions=False: the model knows it from training); described tools are always listed."""
    ts = toolset_from_schemas(json.loads(row["tools"]))
    return encode(pieces(json.loads(row["messages"]), ts, row_resolver(row), describe_trained=describe_trained),
                  tokenizer, adapter)


class OvisCollator:
    def __init__(self, tokenizer: Any, adapter: Any, max_length: int, describe_trained: bool = True):
        self.tok, self.adapter, self.max_length = tokenizer, adapter, max_length
        self.describe_trained = describe_trained
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.dropped = 0

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        encoded = [encode_row(r, self.tok, self.adapter, self.describe_trained) for r in rows]
        kept = [e for e in encoded if len(e[0]) <= self.max_length] or [min(encoded, key=lambda e: len(e[0]))]
        self.dropped += len(encoded) - len(kept)
        width = max(len(e[0]) for e in kept)
        ids = torch.full((len(kept), width), self.pad, dtype=torch.long)
        labels = torch.full((len(kept), width), -100, dtype=torch.long)
        mask = torch.zeros((len(kept), width), dtype=torch.long)
        images = []
        for i, (x, y, ims) in enumerate(kept):
            ids[i, :len(x)] = torch.tensor(x)
            labels[i, :len(y)] = torch.tensor(y)
            mask[i, :len(x)] = 1
            images += ims
        return {"input_ids": ids, "attention_mask": mask, "labels": labels, **self.adapter.pixel_inputs(images)}
