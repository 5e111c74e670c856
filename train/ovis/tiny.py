"""A tiny, real Ovis2 (transformers' native Ovis2ForConditionalGeneration from a config: Qwen2 LLM,
ViT tower, visual embedding table) and a tokenizer trained in milliseconds, saved as a checkpoint
folder that `runtime.ovis.adapter.load_ovis` and `python -m train +recipe=ovis_lora family.path=...`
load like any other. Used by the tests and by benchmarks/prove_vision_learning.py; no download.

Digits are single tokens (as in Qwen's tokenizer), so coordinates are written digit by digit."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from runtime.ovis.adapter import IMG_TOKENS

CHAT = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
TOOL = ["<tool_call>", "</tool_call>"]


def tiny_vision_tokenizer(texts: Iterable[str], vocab_size: int = 400):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=CHAT + list(IMG_TOKENS) + TOOL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)


def tiny_ovis2(tokenizer, *, seed: int = 0, hidden: int = 64, layers: int = 2, image_size: int = 32,
               patch_size: int = 8, vision_hidden: int = 32, vision_layers: int = 1, visual_vocab: int = 64,
               hidden_stride: int = 1, initializer_range: float = 0.02):
    import torch
    from transformers import Ovis2Config, Ovis2ForConditionalGeneration

    torch.manual_seed(seed)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in IMG_TOKENS}
    cfg = Ovis2Config(
        text_config={"model_type": "qwen2", "vocab_size": len(tokenizer), "hidden_size": hidden,
                     "intermediate_size": hidden * 2, "num_hidden_layers": layers, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "max_position_embeddings": 2048, "tie_word_embeddings": True},
        vision_config={"hidden_size": vision_hidden, "intermediate_size": vision_hidden * 2,
                       "num_hidden_layers": vision_layers, "num_attention_heads": 2, "image_size": image_size,
                       "patch_size": patch_size, "vocab_size": visual_vocab, "hidden_stride": hidden_stride,
                       "num_visual_indicator_tokens": 5},
        image_token_id=ids["<IMG_ATOM>"],
        visual_indicator_token_ids=[ids[t] for t in ("<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")],
        vocab_size=len(tokenizer), hidden_size=hidden, tie_word_embeddings=True)
    # transformers' N(0, 0.02) is scaled for hidden sizes in the thousands; a model this small trained from
    # scratch sits on a plateau with it (benchmarks/prove_vision_learning.py: --init)
    for c in (cfg, cfg.text_config, cfg.vision_config):
        c.initializer_range = initializer_range
    return Ovis2ForConditionalGeneration(cfg).eval()


def save_tiny(folder: str | Path, texts: Iterable[str], **kw) -> Path:
    """Build and save a tiny Ovis2 + tokenizer checkpoint folder (loads with from_pretrained)."""
    folder = Path(folder)
    tok = tiny_vision_tokenizer(texts)
    model = tiny_ovis2(tok, **kw)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
