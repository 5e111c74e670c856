"""The runtime under the stages: what eval, train (validation F1, merging) and serve all run.

  engine.py        batched generation with a live tool loop (KV cache, stop markers, tool execution)
  kv_cache.py      cache extension and row selection for the engine
  constrained.py   schema-constrained tool calls (xgrammar masks while a call is generated)
  models/          the models a config names (`_target_: runtime.models...`): HF + adapter, symbolic,
                   router, ASR cascade, LFM2-Audio; each answers cases with `Prediction`s
  baselines/       the symbolic pre-parser and the call repair pass
  lfm2_audio/      LFM2-Audio loaders and chat mapping (liquid-audio)

Stages import this package and toolcore, never one another.
"""
