# Punctual: the two commands that must work on a fresh clone are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit e2e clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(PY) -m local

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(STAMP)
	$(PY) -m mypy shared functions local

test: lint typecheck
	$(PY) -m pytest -n 2 --dist loadfile

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/integration

e2e: $(STAMP)
	$(PY) -m pytest tests/e2e

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache cdk.out
