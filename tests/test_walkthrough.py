"""The README's walkthrough, as written: its tool file, then its five commands (data_gen with the user's
tool, train, eval, serve, the OpenAI client), run in a fresh folder on the real SmolLM2. Only the sizes
shrink (conversations, steps, cases) and the port is a free one; every other word is the README's."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def walkthrough() -> tuple[str, list[str]]:
    """(the tool file's YAML, the commands): the YAML block and the bash block that follow the section's title."""
    section = README[README.index("## From your own tools to a served model"):]
    section = section[:section.index("\n## ", 5)]
    tool = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    bash = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [c.strip() for c in bash.replace("\\\n", " ").splitlines() if c.strip() and not c.startswith("#")]
    return tool, commands


SMALLER = {"data_gen": lambda a: [re.sub(r"^num_conversations=\d+", "num_conversations=160", x) for x in a],
           "train": lambda a: a + ["training.time_budget_minutes=null", "training.max_steps=2", "data.eval_cases=2",
                                   "training.eval_max_new_tokens=8", "wandb_mode=disabled"],
           "eval": lambda a: a + ["limit=3", "model.generation.max_new_tokens=24", "latency_cases=0"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readme_walkthrough_runs_as_written(tmp_path):
    tool, commands = walkthrough()
    first_line = tool.splitlines()[0]
    assert first_line.startswith("# ") and len(commands) == 5
    path = tmp_path / first_line[2:].strip()
    path.parent.mkdir(parents=True)
    path.write_text(tool)
    env = {**os.environ, "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "disabled"}
    port = str(free_port())
    server = None
    try:
        for command in commands:
            argv = shlex.split(command.replace("8000", port))
            assert argv[0] == "python"
            argv[0] = sys.executable
            if argv[1] == "-m" and argv[2] in SMALLER:
                argv = argv[:3] + SMALLER[argv[2]](argv[3:])
            if argv[1:3] == ["-m", "serve"]:
                server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True)
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    assert server.poll() is None, server.stdout.read()[-3000:]
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                            break
                    except OSError:
                        time.sleep(0.5)
                else:
                    pytest.fail("the server did not start")
                continue
            r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
            assert r.returncode == 0, (command, r.stderr[-3000:])
        assert (tmp_path / "data/lights/manifest.json").exists()
        assert (tmp_path / "runs/lights/adapter/adapter_model.safetensors").exists()
        # the client's answer: the model's calls, or None where the 2-step adapter answered in words
        assert r.stdout.strip() == "None" or "set_lights" in r.stdout, r.stdout
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
