# hz: one command to set up and test, one to run the demo.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck unit bench demo lock clean

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

## make test: set up (venv, exact dependencies from the lock), then lint, type-check and test.
test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check ledger machines heinzel tests
	$(BIN)/ruff format --check ledger machines heinzel tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

## make bench: performance figures, each against a baseline measured in the same run.
bench: $(STAMP)
	$(BIN)/python tests/bench/run.py

## make demo: the worked example (Priya's weekly report), offline, narrated.
demo: $(STAMP)
	$(BIN)/hz demo

## make lock: regenerate requirements.lock from requirements.in (needs uv).
lock:
	uv pip compile requirements.in --python-version 3.11 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
