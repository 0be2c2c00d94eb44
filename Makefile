# citegraph — the README's two commands are `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 2031
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export ANONYMIZED_TELEMETRY=False
export LANGGRAPH_CLI_NO_ANALYTICS=1
export LANGGRAPH_NO_VERSION_CHECK=1
# llama.cpp built for a portable x86-64 baseline (AVX2/FMA/F16C): a -march=native build picks up
# AMX/AVX-512 where the CPU reports them, and those paths crash inside these VMs.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: demo test studio install install-dev server clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip wheel setuptools
	# the CPU wheel on disk; an unpinned torch would pull gigabytes of CUDA
	$(BIN)/pip install -q torch==2.13.0

$(VENV)/.installed-local: $(BIN)/python pyproject.toml
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q -e ".[local]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-local $(BIN)/llama-server
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

## llama.cpp's server, built from the source llama-cpp-python vendors (cached per machine): the
## `server:local` model spec, several sequences decoded per step (docs/operations.md#llama-server).
$(BIN)/llama-server: $(VENV)/.installed-local scripts/build_llama_server.sh
	PYTHON=$(BIN)/python bash scripts/build_llama_server.sh $@

install: $(VENV)/.installed-local
install-dev: $(VENV)/.installed-dev
server: $(BIN)/llama-server

## The main job: install with the embedded model and answer the bundled example, every sentence
## checked by the attribution stage (cited with its evidence sentence, or flagged), saved for `show`.
demo: install
	@mkdir -p runs && rm -f runs/demo.json
	$(BIN)/citegraph ask vanilla --example --set attribution=repair --verifier default+checks --save runs/demo.json

## The whole test suite (embedded-model tests included).
test: install-dev
	$(BIN)/python -m pytest -q

## LangGraph Studio, offline, on an explicit port.
studio: install-dev
	$(BIN)/langgraph dev --no-browser --port $(PORT)

clean-venv:
	rm -rf $(VENV)
