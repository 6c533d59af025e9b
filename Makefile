# The GPU Survival Kit: set-up and checks. Every target installs what it needs into .venv.
#
#   make docs      build and serve the site on http://127.0.0.1:8000
#   make test      the whole test suite (CPU; GPU tests are skipped with a reason)
#   make test-gpu  the same suite on an NVIDIA GPU machine: a skipped `gpu` test fails the run
#   make site      the static site in site/ (mkdocs build --strict)
#   make results   run every benchmark here and record it under results/<this machine>/
#
# On a machine that already has the packages (a GPU box with no internet, say),
# `make test-gpu GPUKIT_SYSTEM_PYTHON=1` uses the current python3 instead of .venv.

PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?=
# pytest-xdist workers: the 2-core CI machine runs two, a GPU machine eight (tests share the GPU)
WORKERS ?= 2
GPU_WORKERS ?= 8

ifeq ($(GPUKIT_SYSTEM_PYTHON),1)
BIN :=
PY := $(PYTHON)
TEST_DEPS :=
DOCS_DEPS :=
GPU_DEPS :=
else
BIN := $(VENV)/bin/
PY := $(VENV)/bin/python
TEST_DEPS := $(VENV)/.test-installed
DOCS_DEPS := $(VENV)/.docs-installed
GPU_DEPS := $(VENV)/.gpu-installed
endif

.PHONY: docs site test test-gpu results clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(DOCS_DEPS): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

$(TEST_DEPS): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[test,docs,torch]'
	touch $@

$(GPU_DEPS): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[test,docs,torch,cuda]'
	touch $@

export NO_MKDOCS_2_WARNING := 1

docs: $(DOCS_DEPS)
	$(BIN)mkdocs serve --dev-addr 127.0.0.1:8000

site: $(DOCS_DEPS)
	$(BIN)mkdocs build --strict

test: $(TEST_DEPS)
	$(PY) -m pytest tests docs --codeblocks -n $(WORKERS) --dist worksteal $(PYTEST_ARGS)

test-gpu: $(GPU_DEPS)
	GPUKIT_REQUIRE_GPU=1 $(PY) -m pytest tests docs --codeblocks -n $(GPU_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Every benchmark and every example, recorded under results/<this machine>/ (GPU parts need an
# NVIDIA GPU), with a summary table at the end.
results: $(GPU_DEPS)
	$(PY) -m gpukit results

clean:
	rm -rf $(VENV) site .cache .pytest_cache
