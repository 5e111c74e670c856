"""Ovis2.5 (and native Ovis2) LoRA training on vision tool-use data (family.kind=ovis): data.py turns
dataset rows into sequences with image placeholders and an assistant-only label mask, run.py trains,
tiny.py builds the tiny from-config Ovis2 the tests and the proof of learning use. Image handling that
differs between native Ovis2 and Ovis2.5's remote code is runtime/ovis/adapter.py (eval shares it)."""
