"""A vision conversation as pieces: text or image, trainable or not. Training (labels), the prompt and
the live loop all render through `pieces()`, so what the model learns and what it is served match.

Layout (ChatML as Qwen3 / Ovis2.5 write it), the assistant turn being exactly the design's sequence
[text, tool_call, cropped image, remaining text]:

  <|im_start|>system\\n{tool list}<|im_end|>\\n            (only when tools are offered)
  <|im_start|>user\\n<IMAGE>\\n{question}<|im_end|>\\n
  <|im_start|>assistant\\n<tool_call>Crop [x1,y1,x2,y2]</tool_call><CROP IMAGE> 7<|im_end|>

Only the assistant's own text (calls, answer, the end-of-turn marker) is trainable: images - the
question's and the crops fed back - never are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .tools import ToolSet

TURN_END = "<|im_end|>"


@dataclass
class Piece:
    kind: str                  # "text" or "image"
    text: str = ""
    image: Any = None          # a PIL image
    trainable: bool = False


def _content(m: dict) -> list[dict]:
    c = m.get("content") or ""
    return [{"type": "text", "text": c}] if isinstance(c, str) else list(c)


def pieces(messages: Sequence[dict], toolset: ToolSet | None, resolve: Callable[[str], Any], *,
           add_generation_prompt: bool = False, describe_trained: bool = True) -> list[Piece]:
    """OpenAI-style messages whose image parts name their image (`{"type": "image", "image": ref}`,
    `resolve(ref)` gives the PIL image) -> pieces. Assistant messages are rendered trainable."""
    out: list[Piece] = []
    system = toolset.system_text(describe_trained) if toolset else ""
    msgs = list(messages)
    if msgs and msgs[0]["role"] == "system":
        own = "".join(p.get("text", "") for p in _content(msgs.pop(0)))
        system = f"{own}\n\n{system}" if system and own else (own or system)
    if system:
        out.append(Piece("text", f"<|im_start|>system\n{system}{TURN_END}\n"))
    for m in msgs:
        if m["role"] == "assistant":
            out.append(Piece("text", "<|im_start|>assistant\n"))
            for p in _content(m):
                out.append(Piece("image", image=resolve(p["image"])) if p["type"] == "image"
                           else Piece("text", p["text"], trainable=True))
            out.append(Piece("text", TURN_END, trainable=True))
            out.append(Piece("text", "\n"))
        else:
            out.append(Piece("text", f"<|im_start|>{m['role']}\n"))
            for p in _content(m):
                if p["type"] == "image":
                    out += [Piece("image", image=resolve(p["image"])), Piece("text", "\n")]
                else:
                    out.append(Piece("text", p["text"]))
            out.append(Piece("text", f"{TURN_END}\n"))
    if add_generation_prompt:
        out.append(Piece("text", "<|im_start|>assistant\n"))
    return out


def merged(ps: list[Piece]) -> list[Piece]:
    """Neighbouring text pieces of the same trainability joined (fewer tokenizer calls, and a
    tokenization that does not depend on how the rendering happened to cut the text)."""
    out: list[Piece] = []
    for p in ps:
        if out and p.kind == "text" and out[-1].kind == "text" and out[-1].trainable == p.trainable:
            out[-1] = Piece("text", out[-1].text + p.text, trainable=p.trainable)
        elif p.kind != "text" or p.text:
            out.append(p)
    return out


def row_resolver(row: dict) -> Callable[[str], Any]:
    """Image refs of a vision dataset row: "image" (the picture asked about) and "crops/<k>" (the k-th
    tool result), both stored in the row so save_to_disk / push_to_hub carry them."""
    def resolve(ref: str) -> Any:
        if ref == "image":
            return row["image"]
        if ref.startswith("crops/"):
            return row["crops"][int(ref.split("/", 1)[1])]
        from PIL import Image

        return Image.open(ref)      # a path (suites and user data)
    return resolve


def encode(ps: Sequence[Piece], tokenizer: Any, adapter: Any) -> tuple[list[int], list[int], list[Any]]:
    """(input ids, labels, images in order). Labels are -100 everywhere but the trainable text: image
    placeholders (question image and fed-back crops) and the prompt are never learned."""
    ids: list[int] = []
    labels: list[int] = []
    images: list[Any] = []
    for p in merged(list(ps)):
        if p.kind == "image":
            span = adapter.image_ids(p.image)
            images.append(p.image)
            ids += span
            labels += [-100] * len(span)
        else:
            span = tokenizer.encode(p.text, add_special_tokens=False)
            ids += span
            labels += span if p.trainable else [-100] * len(span)
    return ids, labels, images
