# The two set-up commands of the README. Each one creates the project virtual environment
# (.venv) on first use and re-installs only when setup.cfg changed, so both are idempotent
# and work from a clean clone on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench docs clean

$(STAMP): setup.cfg pyproject.toml
	@echo "make: setting up $(VENV) (first use, or setup.cfg changed; takes a minute or two)"
	@test -x $(BIN)/python || { echo "make: creating the virtual environment $(VENV) with $(PYTHON)" \
		&& $(PYTHON) -m venv $(VENV); }
	@echo "make: upgrading pip in $(VENV)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "make: installing kube-informers and its extras: pip install -e '.[test,fast,metrics]'"
	@$(BIN)/python -m pip install --quiet -e '.[test,fast,metrics]'
	@touch $(STAMP)
	@echo "make: $(VENV) is ready"

## run: the main job (the endpoint controller on the embedded API server by default).
run: $(STAMP)
	@echo "make: running $(strip endpoint-controller $(ARGS)) (Ctrl-C stops it)"
	@$(BIN)/python -m controllers.endpoint $(ARGS)

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
