"""Bring your own data: other tool-calling layouts -> the toolkit dataset (DatasetDict + manifest.json).

Layouts (one reader module each): `openai` (TRL, axolotl), `sharegpt` (LLaMA-Factory), `xlam`
(APIGen), `hermes` (`<tool_call>` in assistant text); `detect` picks one from a source's columns and
rows; `source` opens files, folders and hub datasets with `datasets`; `rows` holds the checks every
kept conversation passes; `writer` writes the folder (data_gen writes its datasets with it too);
`pipeline` runs it all. `python -m data_gen.convert` is the CLI; train's `data.path` / `data.mix` and
eval's `suite=` call `resolve_dataset`.
"""

from .config import LAYOUTS, ConvertConfig
from .detect import detect_layout
from .pipeline import convert, resolve_dataset, split_layout

__all__ = ["LAYOUTS", "ConvertConfig", "convert", "detect_layout", "resolve_dataset", "split_layout"]
