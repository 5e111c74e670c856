"""A tiny, real LFM2-Audio checkpoint folder built from a config, for tests and CPU smoke runs.

The folder has exactly the files `liquid_audio` reads for LiquidAI/LFM2-Audio-1.5B:

  config.json                                     LFM2AudioConfig (preprocessor, encoder, lfm, depthformer)
  model.safetensors                               the random LFM2AudioModel (metadata {"format": "pt"})
  tokenizer.json / tokenizer_config.json / ...    a byte-level BPE trained here in milliseconds
  tokenizer-e351c8d8-checkpoint125.safetensors    a random Mimi codec (full size: Mimi has no config)
  audio_detokenizer/                              optional: LFM2.5-Audio's LFM-based audio decoder

Only the sizes are small: the LFM2 backbone (2 layers, one conv + one attention), the conformer
encoder and the depthformer. What liquid_audio hard-codes is kept as in the real checkpoint: 8
codebooks of 2048 codes (+1 end-of-audio), 128 mel features, and the special token ids its generation
loops compare against (`<|im_end|>` = 7, `<|audio_start|>` = 128, `<|text_end|>` = 130). The tokenizer
therefore lays out ids 0..132 as LFM2's tokenizer does (pad, startoftext, endoftext, fim x3,
im_start, im_end, the six tool markers, reserved slots, then the audio markers); the byte-level BPE
merges come after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

MIMI_FILE = "tokenizer-e351c8d8-checkpoint125.safetensors"

# LFM2's first special tokens, in id order (its tokenizer: 0 <|pad|> ... 13 <|tool_response_end|>)
LFM2_SPECIAL = ["<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|fim_pre|>", "<|fim_mid|>", "<|fim_suf|>",
                "<|im_start|>", "<|im_end|>", "<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>",
                "<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>"]
# LFM2-Audio's markers at the ids liquid_audio's generation loops hard-code
AUDIO_SPECIAL = {128: "<|audio_start|>", 129: "<|text_start|>", 130: "<|text_end|>", 131: "<|mixed_start|>",
                 132: "<|mixed_end|>"}


def special_tokens() -> list[str]:
    """Ids 0..132 in LFM2-Audio's order; the gaps are LFM2's `<|reserved_N|>` slots (id = N + 10)."""
    out = list(LFM2_SPECIAL)
    for i in range(len(out), 133):
        out.append(AUDIO_SPECIAL.get(i, f"<|reserved_{i - 10}|>"))
    return out


def default_texts() -> list[str]:
    """Text the BPE merges are learned from when the caller gives none: the built-in tool schemas
    rendered the LFM2 way, and a few calls and answers."""
    from toolcore.formats import get_format
    from toolcore.registry import load_registry
    from toolcore.schema import ToolCall

    fmt = get_format("lfm2")
    tools = list(load_registry())
    texts = [fmt.system_text("Respond with interleaved text and audio.", tools)]
    texts += [fmt.render_calls([ToolCall("get_weather", {"location": city})]) for city in ("Paris", "Berlin", "Tokyo")]
    texts += ["The weather in Paris is sunny and 21 degrees.", "Your alarm is set for 7:30 AM.", "Message sent."]
    return texts


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 800):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = special_tokens()
    trainer = trainers.BpeTrainer(vocab_size=max(vocab_size, len(specials) + 300), special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|startoftext|>", eos_token="<|im_end|>",
                                   pad_token="<|pad|>", unk_token=None)
    fast.chat_template = ("{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                          "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    for i, name in enumerate(specials):
        assert tok.token_to_id(name) == i, (name, tok.token_to_id(name), i)
    return fast


def tiny_config(vocab_size: int, *, hidden: int = 64, layers: int = 2, depth_dim: int = 64) -> dict:
    """config.json of a tiny LFM2-Audio (same keys as the real one)."""
    layer_types = (["conv", "full_attention"] * layers)[:layers]
    return {
        "architectures": ["LFM2AudioModel"],
        "codebooks": 8,
        "tie_audio_embeddings": False,
        "semantic_codebook_factor": 100,
        "codebook_weight": "log",
        "interleaved_n_text": 6,
        "interleaved_n_audio": 12,
        "preprocessor": {"sample_rate": 16000, "normalize": "per_feature", "window_size": 0.025,
                         "window_stride": 0.01, "window": "hann", "features": 128, "n_fft": 512, "log": True,
                         "frame_splicing": 1, "dither": 1e-05, "pad_to": 0, "pad_value": 0.0},
        "encoder": {"feat_in": 128, "feat_out": -1, "n_layers": 1, "d_model": 32, "subsampling": "dw_striding",
                    "subsampling_factor": 8, "subsampling_conv_channels": 32, "causal_downsampling": False,
                    "reduction": None, "reduction_position": None, "reduction_factor": 1, "ff_expansion_factor": 2,
                    "self_attention_model": "rel_pos", "n_heads": 4, "att_context_size": [[-1, -1]], "xscaling": False,
                    "untie_biases": True, "pos_emb_max_len": 5000, "conv_kernel_size": 9,
                    "conv_norm_type": "batch_norm", "conv_context_size": None, "dropout": 0.0,
                    "dropout_pre_encoder": 0.0, "dropout_emb": 0.0, "dropout_att": 0.0},
        "lfm": {"vocab_size": vocab_size, "hidden_size": hidden, "intermediate_size": hidden * 2,
                "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2,
                "layer_types": layer_types, "block_auto_adjust_ff_dim": False, "max_position_embeddings": 4096,
                "conv_L_cache": 3, "norm_eps": 1e-5, "rope_theta": 1000000.0, "tie_word_embeddings": True,
                "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 7},
        "depthformer": {"layers": 1, "dim": depth_dim, "tie": False},
    }


def build_tiny_lfm2_audio(out: str | Path, texts: Iterable[str] | None = None, *, seed: int = 0,
                          hidden: int = 64, vocab_size: int = 800, mimi: bool = True,
                          detokenizer: bool = False) -> Path:
    """Write a tiny LFM2-Audio folder to `out` (see the module docstring) and return its path.
    detokenizer: also write an `audio_detokenizer/` folder, as LFM2.5-Audio ships (its LFM-based audio
    decoder; liquid_audio fixes its width at 512, the backbone here has one layer)."""
    import torch
    from safetensors.torch import save_file
    from transformers import Lfm2Config

    from liquid_audio import LFM2AudioModel
    from liquid_audio.model.conformer.encoder import ConformerEncoderConfig
    from liquid_audio.model.lfm2_audio import DepthformerConfig, LFM2AudioConfig

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = tiny_tokenizer(list(texts) if texts is not None else default_texts(), vocab_size)
    tok.save_pretrained(out)
    config = tiny_config(len(tok), hidden=hidden)
    (out / "config.json").write_text(json.dumps(config, indent=2))

    torch.manual_seed(seed)
    c = json.loads(json.dumps(config))
    conf = LFM2AudioConfig(lfm=Lfm2Config(**c.pop("lfm")), encoder=ConformerEncoderConfig(**c.pop("encoder")),
                           depthformer=DepthformerConfig(**c.pop("depthformer")), **c)
    model = LFM2AudioModel(conf)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})

    if mimi:
        # liquid_audio builds Mimi from moshi's fixed full-size config: only its weights can be random
        from liquid_audio.moshi.models.loaders import get_mimi

        codec = get_mimi(None, device="cpu")
        save_file({k: v.detach().contiguous() for k, v in codec.state_dict().items()}, str(out / MIMI_FILE),
                  metadata={"format": "pt"})
    if detokenizer:
        from liquid_audio.detokenizer import LFM2AudioDetokenizer

        folder = out / "audio_detokenizer"
        detok_config = Lfm2Config(vocab_size=16, hidden_size=512, intermediate_size=512, num_hidden_layers=2,
                                  num_attention_heads=8, num_key_value_heads=4, layer_types=["conv", "full_attention"],
                                  block_auto_adjust_ff_dim=False, max_position_embeddings=4096, sliding_window=30)
        detok_config.save_pretrained(folder)
        detok = LFM2AudioDetokenizer(detok_config)
        save_file({k: v.detach().contiguous() for k, v in detok.state_dict().items()},
                  str(folder / "model.safetensors"), metadata={"format": "pt"})
    return out


if __name__ == "__main__":
    import sys

    print(build_tiny_lfm2_audio(sys.argv[1] if len(sys.argv) > 1 else "runs/tiny_lfm2_audio"))
