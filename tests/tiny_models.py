"""Tiny real models for tests: a byte-level BPE trained in milliseconds and from-config models.

No mocks: these are real tokenizers and real transformers models, just small enough to train in
seconds on 2 CPU cores.
"""

from __future__ import annotations

from typing import Iterable

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]


def tiny_tokenizer(texts: Iterable[str], extra_special: Iterable[str] = (), vocab_size: int = 600):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL + list(extra_special),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHATML
    return fast


def tiny_llama(vocab_size: int, seed: int = 0, hidden: int = 64, layers: int = 2):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


def train_chats(convs, fmt, steps: int = 150, hidden: int = 128, vocab_size: int = 400, lr: float = 3e-3,
                max_loss: float = 0.2):
    """A tiny llama (and its tokenizer) trained on `convs` rendered by `fmt`, one full batch a step, loss
    on the assistant's turns only; the final loss must fall below `max_loss`."""
    import torch

    from toolcore.tokenize import encode_conversation

    tok = tiny_tokenizer([fmt.render_text(c) for c in convs] * 3, extra_special=fmt.tool_tokens, vocab_size=vocab_size)
    model = tiny_llama(len(tok), hidden=hidden)   # 64 wide could not learn to copy a city (measured 3/12)
    data = [encode_conversation(tok, fmt, c) for c in convs]
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    width = max(len(i) for i, _ in data)
    ids = torch.full((len(data), width), tok.pad_token_id)
    labels = torch.full((len(data), width), -100)
    for k, (i, lab) in enumerate(data):
        ids[k, :len(i)], labels[k, :len(lab)] = torch.tensor(i), torch.tensor(lab)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert loss.item() < max_loss, loss.item()
    return model, tok


def assert_same_safetensors(a_path, b_path, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Two saved adapters hold the same tensors (the resume-equals-uninterrupted checks)."""
    import torch
    from safetensors.torch import load_file

    a, b = load_file(str(a_path)), load_file(str(b_path))
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=rtol, atol=atol)
