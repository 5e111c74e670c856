"""Write a merged full model (base + LoRA, tool tokens included) that loads without peft.

    python -m train.merge runs/demo/adapter runs/demo/merged
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolcore.errors import ToolkitError
from toolcore.files import folder_written_atomically
from toolcore.run_record import read_family_record, write_family_record


def merge(adapter: str | Path, out: str | Path, base: str | None = None) -> Path:
    from runtime.models.hf import load_model_and_tokenizer

    adapter = Path(adapter)
    record = read_family_record(adapter) or {}
    if base is None:
        base = record.get("path") or json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
    model, tok = load_model_and_tokenizer(base, adapter=str(adapter), merge_adapter=True)
    meta = adapter.parent / "metrics.json"
    fmt = json.loads(meta.read_text()).get("format") if meta.exists() else None
    if fmt:   # the format's chat template (an adapter saved before templates were written has the base's)
        from toolcore.chat_template import attach_chat_template

        attach_chat_template(tok, fmt)
    out = Path(out)
    with folder_written_atomically(out) as tmp:
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        # the merged folder is its own base now; its format and dtype carry over (model=hf model.path=<out>)
        write_family_record(tmp, record, whole_model=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m train.merge", description=__doc__.split("\n\n")[0])
    ap.add_argument("adapter")
    ap.add_argument("out")
    ap.add_argument("--base", default=None, help="base model (default: the one the adapter was trained on)")
    args = ap.parse_args()
    try:
        print(merge(args.adapter, args.out, args.base))
    except ToolkitError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
