"""LFM2-Audio (liquid-audio) as an eval model: speech in, tool calls out, the live tool loop, a spoken answer.

For each case the conversation up to the spoken user turn goes through the same chat mapping as
training (train/lfm2_audio/data.py: system = instruction + LFM2 tool list, the user turn = its audio
clip), then one assistant turn at a time is generated:

* a turn that opens with `<|tool_call_start|>` stays text (as call turns are trained); its calls are
  parsed with toolcore's lfm2 parser (`ast.literal_eval` of the arguments: nothing the model writes
  is executed), run with toolcore.executors (registered executables really run, other tools return
  their simulated result, each in a worker thread with a timeout), and the results go back as tool
  turns `<|tool_response_start|>...<|tool_response_end|>`; then the next assistant turn is generated;
* any other turn is the answer: with `speak`, text and audio interleave as liquid_audio's
  `generate_interleaved` does (6 text tokens, 12 audio frames, ... until `<|text_end|>`, then audio
  until the end-of-audio frame); the frames are decoded to 24 kHz audio (Mimi for LFM2-Audio, the
  LFM detokenizer for LFM2.5-Audio) and written to a WAV whose path goes to
  `Prediction.details["answer_audio"]`.

liquid_audio's generate_* loops cannot be used as they are: they switch to audio after 6 text tokens
whatever the text is (a call would be cut), and they cannot take a tool result mid-answer. The loop
below is theirs with those two changes, built on the model's own pieces (`_prefill`, `lfm`,
`_sample_text_token`, `_sample_audio_frame`, `audio_embedding`). Each turn re-prefills the whole
chat (LFM2's convolution state would otherwise need splicing; prompts are short).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from toolcore.conversation import Conversation, Message, Part
from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat, get_format
from toolcore.schema import ToolCall
from toolcore.suites import Case

from ..engine import ToolEvent, default_context, run_tool
from .base import Prediction

EOA = 2048   # liquid_audio's end-of-audio code (the audio vocabulary is 2048 codes + 1)


@dataclass
class LoopOutput:
    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""                       # everything the model wrote, tool responses included
    answer_text: str = ""                # the final turn's text, markers removed
    answer_codes: Any = None             # (8, T) audio codes of the final turn, end-of-audio removed
    parse_failures: list[str] = field(default_factory=list)
    tool_events: list[ToolEvent] = field(default_factory=list)
    stop_reason: str = ""
    prompt_positions: int = 0
    new_tokens: int = 0                  # text tokens + audio frames
    first_call_ms: float | None = None
    latency_ms: float = 0.0


class _Chat:
    """The packed model input (liquid_audio's ChatState fields) that grows turn by turn."""

    def __init__(self, sample: Any, proc: Any):
        import torch

        self.torch, self.proc = torch, proc
        self.text: list[int] = sample.text[0].tolist()
        self.modality: list[int] = sample.modality_flag[0].tolist()
        self.audio_in, self.audio_in_lens = sample.audio_in, sample.audio_in_lens
        self.audio_out: list[Any] = list(sample.audio_out.T)      # frames of 8 codes

    def add_text(self, s: str) -> None:
        from liquid_audio.utils import LFMModality

        ids = self.proc.text.encode(s, add_special_tokens=False)
        self.text += ids
        self.modality += [int(LFMModality.TEXT)] * len(ids)

    def add_generated(self, text: list[int], frames: list[Any], modality: list[int]) -> None:
        self.text += text
        self.audio_out += frames
        self.modality += modality

    def inputs(self, device: Any, codebooks: int) -> dict[str, Any]:
        torch = self.torch
        audio_out = torch.stack(self.audio_out, 1) if self.audio_out else torch.empty((codebooks, 0), dtype=torch.long)
        return {"text": torch.tensor([self.text], dtype=torch.long, device=device),
                "audio_in": self.audio_in.to(device), "audio_in_lens": self.audio_in_lens.to(device),
                "audio_out": audio_out.to(device), "modality_flag": torch.tensor([self.modality], device=device)}


class ToolLoop:
    """Generate, run tools, feed results back, generate the answer (see the module docstring)."""

    def __init__(self, model: Any, proc: Any, fmt: ChatFormat, *, speak: bool | None = True, audio: bool = True,
                 max_new_tokens: int = 512,
                 max_tool_calls: int = 4, tool_timeout_s: float = 5.0, text_temperature: float | None = None,
                 text_top_k: int | None = None, audio_temperature: float | None = None,
                 audio_top_k: int | None = None, context: Any = None):
        from ..lfm2_audio.chat import make_mapper

        # speak: ask for spoken answers (the system instruction, and interleaved answer turns); None takes
        # each conversation's own `meta["speak"]` (how its training row was prompted). audio=False stops an
        # answer turn where its first audio frame would come (enough to score calls, much cheaper).
        self.model, self.proc, self.fmt, self.speak, self.audio = model, proc, fmt, speak, audio
        conf = model.conf
        self.codebooks, self.n_text, self.n_audio = conf.codebooks, conf.interleaved_n_text, conf.interleaved_n_audio
        self.mapper = make_mapper(proc, {"codebooks": conf.codebooks, "interleaved_n_text": self.n_text,
                                         "interleaved_n_audio": self.n_audio})
        self.max_new_tokens, self.max_tool_calls, self.tool_timeout_s = max_new_tokens, max_tool_calls, tool_timeout_s
        self.sampling = dict(text_temperature=text_temperature, text_top_k=text_top_k,
                             audio_temperature=audio_temperature, audio_top_k=audio_top_k)
        tok = proc.text
        ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|text_end|>", fmt.call_start)}
        self.im_end, self.text_end, self.call_start = ids["<|im_end|>"], ids["<|text_end|>"], ids[fmt.call_start]
        self.context = context or default_context
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tool")

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def run(self, conv: Conversation, prefix_turns: Sequence[str] = ()) -> LoopOutput:
        """One conversation. `prefix_turns`: assistant turns to take as given instead of generating them
        (in order; e.g. a call, to see what the model answers after its result)."""
        import torch

        from liquid_audio.utils import LFMModality

        from ..lfm2_audio.chat import to_chat

        t_start = time.perf_counter()
        out = LoopOutput()
        speak = self.speak if self.speak is not None else bool(conv.meta.get("speak", True))
        chat = _Chat(self.mapper(to_chat(conv.up_to_last_user(), self.fmt, speak=speak)), self.proc)
        chat.add_text("<|im_start|>assistant\n")
        out.prompt_positions = len(chat.modality)
        with torch.inference_mode():
            forced = list(prefix_turns)
            while True:
                if forced:
                    text_ids = self.proc.text.encode(forced.pop(0), add_special_tokens=False)
                    frames, modality, reason = [], [int(LFMModality.TEXT)] * len(text_ids), "end_of_turn"
                else:
                    text_ids, frames, modality, reason = self._turn(chat, self.max_new_tokens - out.new_tokens, speak)
                    out.new_tokens += len(modality)
                text = self.proc.text.decode(text_ids, skip_special_tokens=False)
                parsed = self.fmt.parse(text.replace("<|text_end|>", ""))
                out.parse_failures += parsed.failures
                if parsed.calls and reason == "end_of_turn":
                    if out.first_call_ms is None:
                        out.first_call_ms = (time.perf_counter() - t_start) * 1000
                    results = []
                    for call in parsed.calls:
                        out.calls.append(call)
                        ev = self._execute(call, conv)
                        out.tool_events.append(ev)
                        results.append(Message.text("tool", json.dumps(ev.result, ensure_ascii=False), name=call.name))
                    out.text += text + self.fmt.turn_end + self.fmt.continuation(results)
                    if len(out.calls) >= self.max_tool_calls:
                        reason = "max_tool_calls"
                    else:
                        # the same pieces the mapper tokenizes for a tool turn in training
                        chat.add_generated(text_ids, frames, modality)
                        chat.add_text("<|im_end|>\n")
                        for r in results:
                            chat.add_text("<|im_start|>tool\n")
                            chat.add_text(self.fmt.render_result(r))
                            chat.add_text("<|im_end|>\n")
                        chat.add_text("<|im_start|>assistant\n")
                        continue
                else:
                    out.calls += parsed.calls   # calls in a cut-off turn still count, as in the text engine
                    out.text += text + (self.fmt.turn_end if reason == "end_of_turn" else "")
                    out.answer_text = _strip_markers(text)
                    codes = [f for f in frames if int(f[0]) != EOA]
                    out.answer_codes = torch.stack(codes, 1).clamp(0, EOA - 1).cpu() if codes else None
                out.stop_reason = reason
                break
        out.latency_ms = (time.perf_counter() - t_start) * 1000
        return out

    def _turn(self, chat: _Chat, budget: int, speak: bool) -> tuple[list[int], list[Any], list[int], str]:
        """One assistant turn: liquid_audio's generate_interleaved (or text only), except that a turn
        opening with the call marker stays text. Returns text ids, audio frames, their modality order
        and why it stopped."""
        import torch

        from liquid_audio.utils import LFMModality

        m = self.model
        in_emb = m._prefill(**chat.inputs(self.device, self.codebooks))
        cache = None
        text_ids: list[int] = []
        frames: list[Any] = []
        modality: list[int] = []
        audio_mode, left, text_done, call_turn = False, self.n_text, False, None
        for _ in range(max(budget, 0)):
            left -= 1
            lfm_out = m.lfm(inputs_embeds=in_emb, past_key_values=cache, use_cache=True)
            h, cache = lfm_out.last_hidden_state[0, -1], lfm_out.past_key_values
            if not audio_mode:
                logits = torch.nn.functional.linear(h, m.lfm.embed_tokens.weight)
                token = m._sample_text_token(logits, temperature=self.sampling["text_temperature"],
                                             top_k=self.sampling["text_top_k"])
                tid = int(token)
                if tid == self.im_end:
                    return text_ids, frames, modality, "end_of_turn"
                text_ids.append(tid)
                modality.append(int(LFMModality.TEXT))
                if call_turn is None:
                    call_turn = tid == self.call_start
                if tid == self.text_end:
                    if not speak:
                        return text_ids, frames, modality, "text_end"
                    text_done = True
                if speak and not call_turn and (left <= 0 or text_done):
                    if not self.audio:
                        return text_ids, frames, modality, "audio_skipped"
                    audio_mode, left = True, self.n_audio
                in_emb = m.lfm.embed_tokens(token)[None, :]
            else:
                frame = m._sample_audio_frame(h, temperature=self.sampling["audio_temperature"],
                                              top_k=self.sampling["audio_top_k"])
                if left <= 0 and not text_done:
                    audio_mode, left = False, self.n_text
                if int(frame[0]) == EOA:
                    frame[:] = EOA
                    audio_mode = False
                frames.append(frame)
                modality.append(int(LFMModality.AUDIO_OUT))
                in_emb = m.audio_embedding(frame + m.codebook_offsets).sum(0)[None, None, :]
        return text_ids, frames, modality, "max_new_tokens"

    def _execute(self, call: ToolCall, conv: Conversation) -> ToolEvent:
        return run_tool(call, conv, self.pool, self.context, self.tool_timeout_s)


def _strip_markers(text: str) -> str:
    return re.sub(r"<\|(text_end|audio_start|text_start|im_end)\|>", "", text).strip()


class LFM2AudioModel:
    """An LFM2-Audio checkpoint (hub id or folder), optionally with a LoRA adapter from
    `python -m train +recipe=lfm2_audio_lora`. Cases must carry the user's speech: an audio part in the
    last user message, or (for a speech dataset loaded as text cases) the row's `user_audio` column
    resolved against `audio_root`."""

    def __init__(self, path: str | None = None, name: str | None = None, adapter: str | None = None,
                 merge_adapter: bool = True, format: str | None = None, device: str = "auto",
                 dtype: str | None = None, speak: bool = True,
                 max_new_tokens: int = 512, max_tool_calls: int = 4, tool_timeout_s: float = 5.0,
                 text_temperature: float | None = None, text_top_k: int | None = None,
                 audio_temperature: float | None = None, audio_top_k: int | None = None,
                 audio_dir: str | None = None, audio_root: str | None = None, seed: int = 0,
                 threads: int | None = None, family: Any = None):
        import torch

        from toolcore.hub import resolve_device
        from ..lfm2_audio import audio_decoder, load_model, load_processor, resolve_dtype
        from .source import resolve_source

        if threads:
            torch.set_num_threads(threads)
        self.device = resolve_device(device)
        # the family (configs/family/lfm2_audio.yaml, also training's) names the checkpoint, format and dtype
        src = resolve_source(family=family, path=path, format=format, dtype=dtype, adapter=adapter, default_dtype="auto")
        path, dtype = src.path, src.dtype
        self.fmt = get_format(src.format)
        self.name = name or Path(str(path)).name + ("+adapter" if adapter else "")
        self.proc = load_processor(path, device=self.device, field="model.path")
        self.model = load_model(path, device=self.device, dtype=resolve_dtype(dtype, self.device), adapter=adapter,
                                merge=merge_adapter, field="model.path")
        self.speak = speak
        self.decode = audio_decoder(self.proc) if speak else None
        self.loop = ToolLoop(self.model, self.proc, self.fmt, speak=speak, max_new_tokens=max_new_tokens,
                             max_tool_calls=max_tool_calls, tool_timeout_s=tool_timeout_s,
                             text_temperature=text_temperature, text_top_k=text_top_k,
                             audio_temperature=audio_temperature, audio_top_k=audio_top_k)
        self.audio_dir = Path(audio_dir) if audio_dir else None
        self.audio_root = Path(audio_root) if audio_root else None
        self.seed = seed
        self._timing = {"generate_s": 0.0, "decode_audio_s": 0.0}

    @property
    def timing(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self._timing.items()}

    def conversation(self, case: Case) -> Conversation:
        """The case's conversation with the user's speech as the last user turn - only the speech: spoken
        suites and speech datasets carry the written request beside the clip, and a model that is
        scored on listening must not read it (training shows it the clip alone too)."""
        conv = case.conversation
        last = max(i for i, m in enumerate(conv.messages) if m.role == "user")
        audio = [p for p in conv.messages[last].parts if p.type == "audio"]
        if not audio:
            rel = case.raw.get("user_audio") if isinstance(case.raw, dict) else None
            if not rel or self.audio_root is None:
                raise ToolkitError(f"case {case.id}: the last user message has no audio", field="model.audio_root",
                                   fix="evaluate a spoken suite or a speech dataset (or set model.audio_root)")
            audio = [Part("audio", ref=str(self.audio_root / rel))]
        msgs = list(conv.messages)
        msgs[last] = Message("user", audio)
        return Conversation(msgs, conv.tools, dict(conv.meta))

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        import torch

        from toolcore.audio import REPLY_RATE, write_wav_atomic

        preds = []
        for case in cases:
            torch.manual_seed(self.seed)   # sampled audio (top-k) is reproducible per case
            t0 = time.perf_counter()
            o = self.loop.run(self.conversation(case))
            self._timing["generate_s"] += time.perf_counter() - t0
            details: dict[str, Any] = {
                "answer_text": o.answer_text, "stop_reason": o.stop_reason, "prompt_positions": o.prompt_positions,
                "new_tokens": o.new_tokens, "first_call_ms": o.first_call_ms,
                "tool_events": [{"name": e.call.name, "result": e.result, "simulated": e.simulated, "error": e.error,
                                 "ms": round(e.ms, 3)} for e in o.tool_events],
                "answer_audio": None,
                "answer_audio_frames": 0 if o.answer_codes is None else int(o.answer_codes.shape[1]),
            }
            if o.answer_codes is not None and self.decode is not None:
                t1 = time.perf_counter()
                with torch.inference_mode():
                    wave = self.decode(o.answer_codes[None].to(self.device))
                folder = self.audio_dir or Path(tempfile.mkdtemp(prefix="lfm2_audio_"))
                self.audio_dir = folder
                path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', str(case.id))}.wav"
                samples = wave.float().cpu().numpy().reshape(-1)
                details["answer_audio_sha256"] = write_wav_atomic(path, samples, REPLY_RATE)
                details["answer_audio"] = str(path)
                self._timing["decode_audio_s"] += time.perf_counter() - t1
            preds.append(Prediction(o.calls, raw_text=o.text, parse_failures=o.parse_failures, latency_ms=o.latency_ms,
                                    details=details))
        return preds
