"""Turning rendered segments into token ids, the same way for training and for inference.

Each segment is tokenized on its own and the ids are concatenated. A segment boundary is then also
a token boundary, so the ids the evaluator feeds as a prompt (or as a tool response in the live
loop) are exactly a prefix of the ids the trainer feeds for the same conversation - no BPE merge
can straddle "<|im_start|>assistant\\n" and what follows.
"""

from __future__ import annotations

from typing import Any, Sequence

from .conversation import Conversation, Message
from .formats.base import ChatFormat, Segment

IGNORE = -100


def encode_segments(tokenizer: Any, segments: Sequence[Segment]) -> tuple[list[int], list[int]]:
    """(input_ids, labels): labels copy the ids of trainable segments and are IGNORE elsewhere."""
    ids: list[int] = []
    labels: list[int] = []
    for seg in segments:
        if not seg.text:
            continue
        t = tokenizer(seg.text, add_special_tokens=False)["input_ids"]
        ids += t
        labels += t if seg.trainable else [IGNORE] * len(t)
    return ids, labels


def encode_conversation(tokenizer: Any, fmt: ChatFormat, conv: Conversation) -> tuple[list[int], list[int]]:
    """Training ids and labels (loss only on the assistant's calls, answers and end-of-turn)."""
    return encode_segments(tokenizer, fmt.render(conv))


def encode_packed(tokenizer: Any, fmt: ChatFormat, conv: Conversation, starts: Sequence[int]) -> dict[str, list[int]]:
    """A conversation of independent requests over one tool list as one training row: the system prompt
    and tools once, then each request (messages from `starts[k]` up to the next start) as a branch that
    sees the shared part and itself only. `position_ids` restart after the shared part in every branch and
    `branch` is 0 on the shared part, k on the k-th request, so with the mask `Collator` builds from it
    every branch is computed exactly as the row [system + tools + that request] alone would be: the same
    loss and gradients for fewer tokens (the tools are not repeated)."""
    msgs = list(conv.messages)
    lead = msgs[:1] if msgs and msgs[0].role == "system" else []
    bounds = sorted({max(s, len(lead)) for s in starts} | {len(lead)}) + [len(msgs)]
    out: dict[str, list[int]] = {"input_ids": [], "labels": [], "position_ids": [], "branch": []}
    shared: list[int] | None = None
    for k, (a, b) in enumerate(zip(bounds, bounds[1:]), start=1):
        segs = fmt.render(Conversation(lead + msgs[a:b], list(conv.tools)))
        cut = shared_segments(segs)
        head, _ = encode_segments(tokenizer, segs[:cut])
        ids, labels = encode_segments(tokenizer, segs[cut:])
        if shared is None:
            shared = head
            out["input_ids"] += head
            out["labels"] += [IGNORE] * len(head)
            out["position_ids"] += list(range(len(head)))
            out["branch"] += [0] * len(head)
        elif head != shared:
            raise ValueError("requests of one conversation render different system prompts")
        out["input_ids"] += ids
        out["labels"] += labels
        out["position_ids"] += range(len(shared), len(shared) + len(ids))
        out["branch"] += [k] * len(ids)
    return out


def shared_segments(segments: Sequence[Segment]) -> int:
    """How many leading segments are the system prompt and tools: the part every request over the same
    tools starts with."""
    return next((i for i, s in enumerate(segments) if s.role not in ("", "system")), len(segments))


def encode_prompt(tokenizer: Any, fmt: ChatFormat, conv: Conversation) -> list[int]:
    """The ids a model is given to answer the last user turn of `conv`."""
    return encode_prompt_parts(tokenizer, fmt, conv)[0]


def encode_prompt_parts(tokenizer: Any, fmt: ChatFormat, conv: Conversation) -> tuple[list[int], int]:
    """`encode_prompt`'s ids and how many of them are the system prompt and tools."""
    segs = fmt.render(conv.up_to_last_user(), add_generation_prompt=True)
    cut = shared_segments(segs)
    head, _ = encode_segments(tokenizer, segs[:cut])
    rest, _ = encode_segments(tokenizer, segs[cut:])
    return head + rest, len(head)


def encode_continuation(tokenizer: Any, fmt: ChatFormat, results: Sequence[Message]) -> list[int]:
    """The ids appended after an emitted call in the live tool loop."""
    return encode_segments(tokenizer, fmt.continuation_segments(results))[0]
