"""Speech dataset rows -> toolcore Conversations -> liquid_audio ChatMessages -> its mapper and collator.

A speech dataset (data_gen's speech output: a DatasetDict + manifest.json) has the text columns of
the default dataset (`messages`, `tools`, `expected_calls`) plus the user's clip (`user_audio`, 16 kHz)
and, when the final answer is spoken, the reply clip (`reply_audio`, 24 kHz), both relative to the
dataset folder. One row becomes one LFM2-Audio chat:

  system     the instruction + the tool list, rendered by toolcore's lfm2 format (the text model's
             `List of tools: <|tool_list_start|>[...]<|tool_list_end|>`)
  user       earlier user turns as text; the last user turn is the audio clip (AudioSegment)
  assistant  a call turn is text: `<|tool_call_start|>[name(arg=...)]<|tool_call_end|>`, from the same
             format object the eval model parses with
  tool       `<|tool_response_start|>{result}<|tool_response_end|>` (the format's render_result)
  assistant  the final answer: with a reply clip, text and audio interleaved (InterleavedSegment: the
             mapper alternates 6 text tokens and 12 audio frames, as LFM2-Audio's chat mode
             generates); without one, text only

The system instruction says which: "Respond with interleaved text and audio." is the one
LFM2-Audio's own speech-to-speech demo uses. Call turns stay text in both cases: a tool call must
not be cut by audio frames, and the eval loop keeps a turn that opens with `<|tool_call_start|>` in
text (see runtime/models/lfm2_audio.py). The mapper supervises every assistant turn, text and audio,
and nothing else; the model's loss reports text and audio separately.

Where the mapper differs from the text format: it supervises the "\n" after an assistant's
`<|im_end|>` (toolcore's lfm2 rendering does not), and its ChatMessage role is typed
user/system/assistant only - a `tool` role goes through unchanged (`<|im_start|>tool\n...`), which is
what LFM2's template writes, so tool turns are passed as such.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from toolcore.audio import sha256_file
from toolcore.conversation import Conversation, Message, Part
from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat
from toolcore.suites import Case, ConversationReader

from runtime.lfm2_audio.chat import to_chat

SPEECH_COLUMNS = ("messages", "tools", "expected_calls", "user_audio", "reply_audio")
# the columns liquid_audio's preprocess_dataset writes (LFM2DataLoader reads them), plus two of ours
FIELDS = ("text", "audio_in", "audio_in_lens", "audio_out", "modality_flag", "supervision_mask")


# ----- rows -> conversations -----------------------------------------------------------------------
def check_speech_split(ds: Any, path: str | Path) -> None:
    missing = [c for c in SPEECH_COLUMNS if c not in ds.column_names]
    if missing:
        raise ToolkitError(f"not a speech dataset: no column(s) {', '.join(missing)}", file=str(path),
                           field="data.path", fix="generate one with data_gen's speech output (data/speech)")


def _clip(root: Path, rel: str, sha: str | None, column: str, row_id: str) -> str:
    if not rel:
        raise ToolkitError(f"row {row_id}: empty {column}", file=str(root), field=column)
    path = root / rel
    if sha and path.is_file() and sha256_file(path) != sha:
        raise ToolkitError(f"row {row_id}: {column} does not match its {column}_sha256", file=str(path),
                           field=column, fix="the clip changed after the dataset was written: regenerate it")
    return str(path)


def row_conversation(row: dict[str, Any], root: str | Path, reader: ConversationReader | None = None,
                     *, check_sha: bool = True) -> Conversation:
    """The row's conversation with the last user turn as its audio clip (the written request is
    dropped: the model hears it) and, when there is a reply clip, the final answer's audio."""
    root = Path(root)
    conv = (reader or ConversationReader())(row)
    rid = str(row.get("id", "?"))
    users = [i for i, m in enumerate(conv.messages) if m.role == "user"]
    if not users:
        raise ToolkitError(f"row {rid}: no user message", file=str(root), field="messages")
    ref = _clip(root, row["user_audio"], row.get("user_audio_sha256") if check_sha else None, "user_audio", rid)
    clip = Part("audio", ref=ref, meta={"transcript": row.get("spoken_text", "")})
    conv.messages[users[-1]] = Message("user", [clip])
    reply = row.get("reply_audio") or ""
    last = conv.messages[-1]
    if reply and last.role == "assistant" and not last.tool_calls:
        ref = _clip(root, reply, row.get("reply_audio_sha256") if check_sha else None, "reply_audio", rid)
        text = row.get("reply_text") or last.content
        conv.messages[-1] = Message("assistant", [Part("text", text=text), Part("audio", ref=ref)])
    conv.meta["speak"] = bool(reply)
    return conv


def speech_cases(path: str | Path, split: str = "validation", limit: int | None = None,
                 shuffle_seed: int | None = None) -> list[Case]:
    """Eval cases of a speech dataset: the conversation up to the spoken user turn (the clip only),
    its expected calls. The same cases `python -m eval suite=data/speech` scores."""
    from toolcore.suites import cases_from_dataset, load_split

    check_speech_split(load_split(path, split), path)
    return cases_from_dataset(path, split, limit, shuffle_seed)


# ----- preprocessing (mapper output cached on disk) ------------------------------------------------
def _features():
    from datasets import Features, Sequence, Value

    # liquid_audio.data.preprocess.preprocess_dataset's schema, plus `length` (positions, for
    # length-grouped batches) and `speak`
    return Features({
        "text": Sequence(Sequence(Value("int64"))), "audio_in": Sequence(Sequence(Value("float32"))),
        "audio_in_lens": Sequence(Value("int64")), "audio_out": Sequence(Sequence(Value("int64"))),
        "modality_flag": Sequence(Sequence(Value("int64"))), "supervision_mask": Sequence(Sequence(Value("bool"))),
        "length": Value("int64"), "speak": Value("bool"),
    })


def preprocess_rows(rows: Iterable[dict[str, Any]], root: Path, fmt: ChatFormat, mapper: Any, out: Path,
                    max_length: int, fingerprint: str) -> tuple[Any, int]:
    """Map rows with liquid_audio's mapper and save them like its preprocess_dataset does. (That
    helper itself cannot be used: it hashes its generator closure for the datasets cache, which fails
    for a generator and would pickle the processor and Mimi for a list.) Returns (dataset, dropped)."""
    from datasets import Dataset, load_from_disk

    if (out / "dataset_info.json").exists():
        ds = load_from_disk(str(out))
        return ds, json.loads((out / "dropped.json").read_text())["dropped"]
    read = ConversationReader()
    dropped = [0]

    def gen() -> Iterator[dict[str, Any]]:
        for row in rows:
            conv = row_conversation(row, root, read)
            sample = mapper(to_chat(conv, fmt))
            n = int(sample.modality_flag.shape[-1])
            if n > max_length or not bool(sample.supervision_mask.any()):
                dropped[0] += 1
                continue
            yield {f: getattr(sample, f).tolist() for f in FIELDS} | {"length": n, "speak": conv.meta["speak"]}

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    ds = Dataset.from_generator(gen, features=_features(), cache_dir=str(tmp / "cache"), fingerprint=fingerprint)
    ds.save_to_disk(str(tmp / "data"))
    (tmp / "data" / "dropped.json").write_text(json.dumps({"dropped": dropped[0]}))
    del ds
    try:
        os.replace(tmp / "data", out)
    except OSError:
        # another data-parallel rank finished the same (content-keyed) folder first: use theirs
        if not (out / "dataset_info.json").exists():
            raise
    shutil.rmtree(tmp, ignore_errors=True)
    return load_from_disk(str(out)), dropped[0]


def preprocess_split(data_cfg: Any, split: str, fmt: ChatFormat, proc: Any, mapper: Any, cache_root: Path,
                     *, limit: int | None = None, model_key: str = "") -> tuple[Any, int]:
    """A shuffled (seeded) split, limited to `limit` rows, mapped and cached under `cache_root` by a key
    of everything that changes the result (dataset manifest, split, selection, tokenizer, mapper)."""
    from ..data import load_split, manifest_hash

    ds = load_split(data_cfg, split)
    check_speech_split(ds, data_cfg.path)
    ds = ds.shuffle(seed=data_cfg.shuffle_seed)
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    vocab = hashlib.sha256(json.dumps(proc.text.get_vocab(), sort_keys=True).encode()).hexdigest()[:12]
    key = hashlib.sha256(json.dumps([manifest_hash(data_cfg.path), split, limit, data_cfg.shuffle_seed,
                                     data_cfg.max_length, vocab, mapper.codebooks, mapper.interleaved_text_tokens,
                                     mapper.interleaved_audio_tokens, fmt.name, model_key]).encode()).hexdigest()[:16]
    return preprocess_rows(ds, Path(data_cfg.path), fmt, mapper, cache_root / f"{split}-{key}",
                           data_cfg.max_length, key)


# ----- batches --------------------------------------------------------------------------------------
class AudioCollator:
    """Preprocessed rows -> right-padded LFM2AudioRows -> liquid_audio's lfm2_collator -> a dict of
    tensors (the Trainer moves it to the device; compute_loss rebuilds LFM2AudioModelInput).

    liquid_audio's LFM2DataLoader pads every row to a fixed context length (4096); here a batch is
    padded to its longest row only (length-grouped batches keep that short). Padding is text
    `<|pad|>` (id 0), unsupervised - as LFM2DataLoader pads."""

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import torch
        import torch.nn.functional as F

        from liquid_audio.data.dataloader import lfm2_collator
        from liquid_audio.data.types import LFM2AudioRow
        from liquid_audio.utils import LFMModality

        width = max(len(r["modality_flag"][0]) for r in rows)
        padded = []
        for r in rows:
            modality = torch.as_tensor(r["modality_flag"], dtype=torch.long)
            pad = width - int(modality.shape[1])
            padded.append(LFM2AudioRow(
                text=F.pad(torch.as_tensor(r["text"], dtype=torch.long), (0, pad)),
                audio_in=torch.as_tensor(r["audio_in"], dtype=torch.float32),
                audio_in_lens=torch.as_tensor(r["audio_in_lens"], dtype=torch.long),
                audio_out=torch.as_tensor(r["audio_out"], dtype=torch.long),
                modality_flag=F.pad(modality, (0, pad), value=int(LFMModality.TEXT)),
                supervision_mask=F.pad(torch.as_tensor(r["supervision_mask"], dtype=torch.bool), (0, pad), value=False),
            ))
        batch = lfm2_collator(padded)
        return {f: getattr(batch, f) for f in FIELDS}


def model_input(inputs: dict[str, Any]):
    from liquid_audio.data.types import LFM2AudioModelInput

    return LFM2AudioModelInput(**{f: inputs[f] for f in FIELDS})
