# The two set-up commands of the README. Each one creates the project virtual environment
# (.venv) on first use and re-installs only when setup.cfg changed, so both are idempotent
# and work from a clean clone on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench docs clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,fast,metrics]'
	touch $(STAMP)

## run: the main job (the endpoint controller on the embedded API server by default).
run: $(STAMP)
	$(BIN)/python -m controllers.endpoint $(ARGS)

## test: linter, type checker and the whole test suite.
test: $(STAMP) lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check informers controllers tests benchmarks examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

## docs: the documentation site (MkDocs, warnings are errors), in build/site/index.html.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
