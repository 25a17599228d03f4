# Two set-up commands for a fresh machine: `make demo` and `make test`.
# The demo needs trajkit's core install only; the tests need the dev extras
# (pytest, transformers, datasets, ...), which include the core.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORE := $(VENV)/.installed-core

.PHONY: demo test bench clean

$(CORE): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(CORE)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP) $(CORE)

demo: $(CORE)
	$(BIN)/trajkit detect examples/openhands-v0-trial --why
	$(BIN)/trajkit steps examples/openhands-v0-trial

# The suite starts hundreds of trajkit processes; where the environment sets
# PYTHONDONTWRITEBYTECODE (as here and in CI) each would compile every module
# it imports. A bytecode cache of the suite's own, inside the venv, lets them
# share one compile and writes nothing into the source tree.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache $(BIN)/python -m pytest -q -n 2

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
