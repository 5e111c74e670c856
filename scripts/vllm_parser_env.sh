#!/usr/bin/env bash
# vLLM's Python side (no CUDA kernels), enough to import its tool-parser classes on a CPU-only machine:
# tests/test_vllm_tool_parser.py loads serve/vllm_tool_parser.py through vLLM's own plugin loader.
# A side folder on PYTHONPATH, never the project's venv: vLLM pins a torch of its own.
#   scripts/vllm_parser_env.sh .venv/vllm-parser        (make vllm-parser-env)
set -euo pipefail
DEST=${1:-.venv/vllm-parser}
PY=${PY:-.venv/bin/python}
VLLM_VERSION=0.33.0      # the version the plugin was written against (vllm.tool_parsers layout)
mkdir -p "$DEST/wheel" "$DEST/site" "$DEST/deps"
"$PY" -m pip download -q --no-deps --only-binary=:all: "vllm==$VLLM_VERSION" -d "$DEST/wheel"
# the Python modules only (the compiled kernels are most of the 336 MB wheel and need CUDA)
(cd "$DEST/site" && unzip -q -o ../wheel/vllm-"$VLLM_VERSION"-*.whl 'vllm/*' -x 'vllm/*.so' 'vllm/third_party/*')
# what importing vllm.tool_parsers needs beyond the project's own packages
"$PY" -m pip install -q --no-deps --upgrade --target "$DEST/deps" cbor2 pyzmq aiohttp multidict yarl propcache \
  aiohappyeyeballs aiosignal frozenlist openai-harmony pybase64 cachetools prometheus_client msgspec uvloop \
  py-cpuinfo partial-json-parser
rm -rf "$DEST/wheel" "$DEST/ready"
PYTHONPATH="$DEST/site:$DEST/deps" "$PY" -c "import vllm.tool_parsers" 2>/dev/null
touch "$DEST/ready"       # the test runs only against a folder that imported once
echo "vLLM $VLLM_VERSION tool parsers importable with PYTHONPATH=$DEST/site:$DEST/deps"
