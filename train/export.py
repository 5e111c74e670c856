"""Export a trained run to GGUF, the file llama.cpp, Ollama, LM Studio and Cactus load on a device.

    python -m train.export runs/demo                       # runs/demo/gguf/: f16, q8_0, q4_k_m + Modelfile
    python -m train.export runs/demo --types f16 q8_0 --out exported/
    python -m eval model=llamacpp model.path=runs/demo/gguf/model-q8_0.gguf suite=hackathon30

The run's adapter is merged into its base (train/merge.py: tool tokens and the family's chat template
included), llama.cpp's own converter writes the f16 GGUF, and llama.cpp's quantizer (through the
llama-cpp-python binding) the smaller types. The converter is llama.cpp's Python script, taken from the
llama.cpp source tree: `--llama-cpp <checkout>`, $LLAMA_CPP_DIR, or else the source distribution of the
installed llama-cpp-python (the same llama.cpp version as the binding), fetched once into the toolkit
cache. Beside the files: the merged model's tokenizer (the llama.cpp backend prompts with the exact ids
training used), `export.json` (format, files, sizes) and an Ollama `Modelfile`.

Families: llama (SmolLM2), Qwen2/Qwen3 and LFM2 text models convert; LFM2-Audio and Ovis2.5 do not
(llama.cpp has no converter for liquid-audio's model or for Ovis's vision tower): they stay on the
transformers engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from toolcore.errors import ToolkitError
from toolcore.files import folder_written_atomically, write_text_atomic
from toolcore.hub import cache_dir
from toolcore.run_record import read_family_record

from .merge import merge

TYPES = ("f16", "q8_0", "q4_k_m")
# llama.cpp's quantization type ids (enum llama_ftype in llama.h)
FTYPE = {"q8_0": 7, "q4_k_m": 15, "q5_k_m": 17, "q4_0": 2, "q6_k": 18}
UNSUPPORTED = {"lfm2_audio": "liquid-audio's speech model", "ovis2_5": "Ovis2.5's vision tower"}
CONVERTER = "convert_hf_to_gguf.py"


def llama_cpp_source(given: str | None = None) -> Path:
    """A llama.cpp source tree holding the converter (convert_hf_to_gguf.py with conversion/ and gguf-py/)."""
    for candidate in (given, os.environ.get("LLAMA_CPP_DIR")):
        if candidate:
            root = Path(candidate)
            if not (root / CONVERTER).exists():
                raise ToolkitError(f"no {CONVERTER} in {root}", field="--llama-cpp",
                                   fix="point it at a llama.cpp checkout (github.com/ggml-org/llama.cpp)")
            return root
    try:
        from importlib.metadata import version

        ver = version("llama-cpp-python")
    except Exception:
        raise ToolkitError("llama-cpp-python is not installed", field="--llama-cpp",
                           fix="pip install 'toolcall-toolkit[llamacpp]', or give --llama-cpp <llama.cpp checkout>") from None
    root = cache_dir() / "llama.cpp" / ver
    if (root / CONVERTER).exists():
        return root
    download = cache_dir() / "llama.cpp" / f"sdist-{ver}"
    download.mkdir(parents=True, exist_ok=True)
    print(f"export: fetching llama.cpp's converter (the llama-cpp-python {ver} source distribution)", flush=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={ver}", "-d", str(download)], capture_output=True, text=True)
    archives = sorted(download.glob("llama_cpp_python-*.tar.gz"))
    if not archives:
        raise ToolkitError(f"could not fetch the llama-cpp-python {ver} source: {(r.stderr.strip().splitlines() or ['?'])[-1]}",
                           field="--llama-cpp", fix="give --llama-cpp <llama.cpp checkout> (or set LLAMA_CPP_DIR)")
    prefix = f"{archives[0].name.removesuffix('.tar.gz')}/vendor/llama.cpp/"
    keep = (CONVERTER, "conversion/", "gguf-py/")
    with folder_written_atomically(root) as tmp, tarfile.open(archives[0]) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix(prefix)
            if member.name.startswith(prefix) and name.startswith(keep) and member.isfile():
                member.name = name
                tar.extract(member, tmp, filter="data")
    return root


def convert(merged: Path, out_file: Path, source: Path) -> None:
    """llama.cpp's converter, with its own gguf-py (the version it was written against)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    r = subprocess.run([sys.executable, str(source / CONVERTER), str(merged), "--outfile", str(out_file),
                        "--outtype", "f16"], capture_output=True, text=True, env=env)
    if r.returncode != 0 or not out_file.exists():
        last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["no output"])[-1]
        raise ToolkitError(f"llama.cpp's converter failed: {last}", file=str(merged),
                           fix="see the converter's output above; the model's architecture may be one llama.cpp does not convert")


def quantize(f16: Path, out_file: Path, kind: str, threads: int = 0) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPE[kind]
    params.nthread = threads
    rc = llama_cpp.llama_model_quantize(str(f16).encode(), str(out_file).encode(), params)
    if rc != 0 or not out_file.exists():
        raise ToolkitError(f"llama.cpp could not quantize to {kind} (code {rc})", file=str(f16))


def modelfile(gguf_name: str, template_note: str) -> str:
    # Ollama reads the chat template embedded in the GGUF (tokenizer.chat_template); greedy decoding as
    # the toolkit evaluates it
    return (f"# ollama create my-tool-model -f Modelfile   ({template_note})\n"
            f"FROM ./{gguf_name}\nPARAMETER temperature 0\n")


def export(run: str | Path, out: str | Path | None = None, types: tuple[str, ...] = TYPES,
           llama_cpp: str | None = None) -> Path:
    run = Path(run)
    adapter = run / "adapter" if (run / "adapter").exists() else run
    if not (adapter / "adapter_config.json").exists():
        raise ToolkitError("not a training run (no adapter/adapter_config.json)", file=str(run),
                           fix="give the run folder python -m train wrote (it holds adapter/)")
    family = read_family_record(adapter) or {}
    if family.get("name") in UNSUPPORTED or family.get("kind") in UNSUPPORTED:
        what = UNSUPPORTED.get(family.get("name")) or UNSUPPORTED[family.get("kind")]
        raise ToolkitError(f"llama.cpp cannot run {what}", file=str(adapter),
                           fix="evaluate and serve it with the transformers engine (model=lfm2_audio / ovis2_5)")
    unknown = [t for t in types if t != "f16" and t not in FTYPE]
    if unknown:
        raise ToolkitError(f"unknown GGUF type {unknown[0]!r}", field="--types", fix=f"use f16 or {sorted(FTYPE)}")
    source = llama_cpp_source(llama_cpp)
    out = Path(out) if out else run / "gguf"
    with folder_written_atomically(out) as tmp:
        merged = tmp / "merged"
        print(f"export: merging {adapter} into its base", flush=True)
        merge(adapter, merged)
        f16 = tmp / "model-f16.gguf"
        print("export: converting to GGUF (f16) with llama.cpp's converter", flush=True)
        convert(merged, f16, source)
        files = {"f16": f16.name}
        for kind in types:
            if kind != "f16":
                print(f"export: quantizing to {kind}", flush=True)
                quantize(f16, tmp / f"model-{kind}.gguf", kind)
                files[kind] = f"model-{kind}.gguf"
        if "f16" not in types:
            f16.unlink()
            del files["f16"]
        tokenizer = tmp / "tokenizer"          # the ids training used, for the llama.cpp backend's prompts
        tokenizer.mkdir()
        for p in merged.iterdir():
            if p.name.startswith(("tokenizer", "special_tokens", "chat_template", "added_tokens", "vocab", "merges",
                                  "toolcall_family")):
                shutil.copy2(p, tokenizer / p.name)
        shutil.rmtree(merged)
        record = {"format": family.get("format", "generic"), "family": family.get("name"), "files": files,
                  "bytes": {k: (tmp / v).stat().st_size for k, v in files.items()},
                  "source_run": str(run.resolve()), "tokenizer": "tokenizer"}
        write_text_atomic(tmp / "export.json", json.dumps(record, indent=2) + "\n")
        first = files.get("q8_0") or next(iter(files.values()))
        write_text_atomic(tmp / "Modelfile", modelfile(first, "the exported chat template is in the GGUF"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m train.export", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a training run folder (holding adapter/)")
    ap.add_argument("--out", default=None, help="output folder (default: <run>/gguf)")
    ap.add_argument("--types", nargs="+", default=list(TYPES), help=f"GGUF types (default: {' '.join(TYPES)})")
    ap.add_argument("--llama-cpp", default=None, help="a llama.cpp source tree for the converter")
    args = ap.parse_args()
    try:
        folder = export(args.run, args.out, tuple(args.types), args.llama_cpp)
    except ToolkitError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(json.dumps(json.loads((folder / "export.json").read_text()) | {"folder": str(folder)}, indent=2))


if __name__ == "__main__":
    main()
