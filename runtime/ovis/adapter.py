"""What differs between native Ovis2 (transformers' Ovis2ForConditionalGeneration) and Ovis2.5 (the hub's
remote code, `trust_remote_code=True`): everything else - rendering, label masks, the crop loop, LoRA -
is one code path. An adapter answers four questions:

  image_ids(image)   the placeholder token ids one image occupies in the sequence
  pixel_inputs(imgs) the forward keyword arguments that carry those images' pixels
  forward(...)       one forward pass (with an optional KV cache), returning logits and the cache
  image_token_ids    the ids that stand for image content (never labels)

Native Ovis2: images are resized to the vision tower's square (`vision_config.image_size`); one image
is `<IMG_START> <IMG_ATOM> x n <IMG_GRID> <IMG_END>` with n = (image_size / patch_size / hidden_stride)^2
(the single-tile layout of transformers' Ovis2Processor); atoms are filled from `pixel_values`.

Ovis2.5 (NOT run here: no weights offline; written against AIDC-AI/Ovis2.5-2B's modeling_ovis2_5.py):
a NaViT tower at native resolution. `model.visual_tokenizer.preprocess(image=...)` gives
(pixel_values, grid_thws); one image is INDICATOR_IDS[0], VISUAL_ATOM_ID x n, INDICATOR_IDS[1]
(negative ids: -301, -300, -302) with n = prod(grid_thw) // hidden_stride^2; `model.merge_multimodal`
turns ids + pixels into input embeddings that `model.llm` (Qwen3) runs with its KV cache. Check those
names against the checkpoint's remote code when it changes: this class is the only place they appear.
"""

from __future__ import annotations

from typing import Any, Sequence

from toolcore.errors import ToolkitError
from toolcore.hub import resolve_device, resolve_dtype_name

IMG_TOKENS = ("<IMG_START>", "<IMG_ATOM>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")
# CLIP's normalisation, which transformers' Ovis2 image processor uses
MEAN, STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


def on_model(model: Any, tensors: dict) -> dict:
    """The forward's tensors on the model's device, floating ones (pixels) in its dtype: the loop builds
    them on the CPU in float32, the model may sit on a GPU in bfloat16."""
    import torch

    p = next(model.parameters())
    return {k: (v.to(p.device, p.dtype) if v.is_floating_point() else v.to(p.device)) if torch.is_tensor(v) else v
            for k, v in tensors.items()}


def unwrap(model: Any) -> Any:
    """The underlying transformers model under peft / DDP wrappers."""
    while hasattr(model, "module"):
        model = model.module
    if hasattr(model, "get_base_model"):
        model = model.get_base_model()
    return model


class NativeOvis2:
    kind = "ovis2"

    def __init__(self, model: Any, tokenizer: Any):
        base = unwrap(model)
        cfg = base.config
        self.size = int(cfg.vision_config.image_size)
        grid = self.size // int(cfg.vision_config.patch_size)
        stride = int(cfg.vision_config.hidden_stride)
        self.atoms = (-(-grid // stride)) ** 2
        ids = {t: tokenizer.convert_tokens_to_ids(t) for t in IMG_TOKENS}
        if ids["<IMG_ATOM>"] != cfg.image_token_id:
            raise ToolkitError(f"the tokenizer's <IMG_ATOM> is {ids['<IMG_ATOM>']}, the model's image_token_id "
                               f"{cfg.image_token_id}", field="family.path",
                               fix="load the tokenizer saved with this model")
        self.start, self.atom, self.grid_id, self.end = ids["<IMG_START>"], ids["<IMG_ATOM>"], ids["<IMG_GRID>"], ids["<IMG_END>"]
        self.image_token_ids = frozenset(ids.values())

    def image_ids(self, image: Any) -> list[int]:
        return [self.start, *[self.atom] * self.atoms, self.grid_id, self.end]

    def pixels(self, image: Any):
        import numpy as np
        import torch

        a = np.asarray(image.convert("RGB").resize((self.size, self.size), resample=3), dtype=np.float32) / 255.0
        a = (a - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
        return torch.from_numpy(a).permute(2, 0, 1).contiguous()

    def pixel_inputs(self, images: Sequence[Any]) -> dict[str, Any]:
        import torch

        if not images:
            return {}
        return {"pixel_values": torch.stack([self.pixels(im) if not torch.is_tensor(im) else im for im in images])}

    def forward(self, model: Any, input_ids, attention_mask, *, position_ids=None, past_key_values=None,
                pixel_inputs: dict | None = None, labels=None, logits_to_keep: int = 0):
        t = on_model(model, dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                 labels=labels, **(pixel_inputs or {})))
        return model(**t, past_key_values=past_key_values, use_cache=past_key_values is not None,
                     logits_to_keep=logits_to_keep)


class RemoteOvis25:
    """Ovis2.5's remote code (see the module docstring: not run here)."""

    kind = "ovis2_5"
    VISUAL_ATOM_ID, INDICATOR_IDS = -300, (-301, -302, -303, -304)

    def __init__(self, model: Any, tokenizer: Any):
        self.base = unwrap(model)
        self.vt = self.base.visual_tokenizer
        self.stride = int(getattr(self.vt.config, "hidden_stride", 2))
        self.image_token_ids = frozenset({self.VISUAL_ATOM_ID, *self.INDICATOR_IDS})
        self._cache: dict[int, tuple[Any, Any]] = {}

    def _prep(self, image: Any):
        key = id(image)
        if key not in self._cache:
            pv, grid = self.vt.preprocess(image=image)
            self._cache[key] = (pv, grid)
        return self._cache[key]

    def image_ids(self, image: Any) -> list[int]:
        _, grid = self._prep(image)
        n = int(grid.prod()) // (self.stride ** 2)
        return [self.INDICATOR_IDS[0], *[self.VISUAL_ATOM_ID] * n, self.INDICATOR_IDS[1]]

    def pixel_inputs(self, images: Sequence[Any]) -> dict[str, Any]:
        import torch

        if not images:
            return {}
        pv, grids = zip(*(self._prep(im) for im in images))
        return {"pixel_values": torch.cat(pv, 0), "grid_thws": torch.cat(grids, 0)}

    def forward(self, model: Any, input_ids, attention_mask, *, position_ids=None, past_key_values=None,
                pixel_inputs: dict | None = None, labels=None, logits_to_keep: int = 0):
        p = pixel_inputs or {}
        # ids on the LLM's device; pixels in the visual tokenizer's dtype (it may differ from the LLM's)
        t = on_model(self.base, dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                     labels=labels, grid_thws=p.get("grid_thws")))
        t |= on_model(self.vt, {"pixel_values": p.get("pixel_values")})
        embeds = self.base.merge_multimodal(input_ids=t["input_ids"], pixel_values=t.get("pixel_values"),
                                            grid_thws=t.get("grid_thws"))
        return self.base.llm(inputs_embeds=embeds, attention_mask=t["attention_mask"], position_ids=t["position_ids"],
                             past_key_values=past_key_values, use_cache=past_key_values is not None, labels=t["labels"],
                             logits_to_keep=logits_to_keep)


def adapter_for(model: Any, tokenizer: Any):
    base = unwrap(model)
    if getattr(base.config, "model_type", "") == "ovis2":
        return NativeOvis2(model, tokenizer)
    if hasattr(base, "visual_tokenizer") and hasattr(base, "merge_multimodal"):
        return RemoteOvis25(model, tokenizer)
    raise ToolkitError(f"not an Ovis model (model_type {getattr(base.config, 'model_type', '?')!r})",
                       field="family.path", fix="use AIDC-AI/Ovis2.5-2B / -9B or a native Ovis2 checkpoint")


def load_ovis(path: str, *, dtype: str = "float32", trust_remote_code: bool = False, field: str = "family"):
    """(model, tokenizer) of an Ovis checkpoint. Ovis2.5 is remote code: it loads only when the config
    turns trust_remote_code on, and the error names that field otherwise."""
    import json
    import os

    cfg_file = os.path.join(path, "config.json")
    model_type = json.load(open(cfg_file)).get("model_type", "") if os.path.isfile(cfg_file) else ""
    remote = model_type != "ovis2"      # hub ids (AIDC-AI/Ovis2.5-*) and folders of remote-code checkpoints
    if remote and not trust_remote_code:
        raise ToolkitError(f"{path} is Ovis2.5 remote code, which runs only with trust_remote_code on",
                           field=f"{field}.trust_remote_code",
                           fix=f"set {field}.trust_remote_code=true once you have read the checkpoint's code")
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

    # auto: bf16 where the model will run on a GPU, fp32 on a CPU (bf16 is slow there without AVX-512 BF16)
    torch_dtype = getattr(torch, resolve_dtype_name(dtype, resolve_device()))
    if remote:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, trust_remote_code=True)
        tok = model.text_tokenizer
    else:
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch_dtype)
        tok = AutoTokenizer.from_pretrained(path)
    return model, tok
