"""Models the evaluator can score. Each takes cases and returns one `Prediction` per case.
Configs under `configs/model/` build them with `_target_`."""

from .base import Model, Prediction
from .router import RouterModel
from .symbolic import SymbolicModel


def __getattr__(name: str):
    if name == "HFModel":   # imports torch: only when a config asks for it
        from .hf import HFModel
        return HFModel
    if name == "LFM2AudioModel":   # imports torch and liquid_audio: only when a config asks for it
        from .lfm2_audio import LFM2AudioModel
        return LFM2AudioModel
    raise AttributeError(name)


__all__ = ["HFModel", "LFM2AudioModel", "Model", "Prediction", "RouterModel", "SymbolicModel"]
