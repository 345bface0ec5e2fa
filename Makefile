# nl2sql-eval: the two commands of a fresh machine are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export NL2SQL_HOME ?= $(CURDIR)/.nl2sql
export DAGSTER_HOME ?= $(NL2SQL_HOME)/dagster_home
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install lock run test test-fast lint format ui bench clean

install: $(STAMP)

## Install with the tested versions of constraints.txt (the Dagster core + integration pins of pyproject.toml).
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

## Rewrite constraints.txt from the installed environment (after changing pins and testing).
lock: install
	@{ echo "# The tested versions of every installed package (make install applies them with pip -c); tested on CPython $$($(BIN)/python -c "import platform; print(platform.python_version())"), $$(uname -sm)."; \
	   echo "# Regenerate after changing pins in pyproject.toml: make lock"; \
	   $(BIN)/python -m pip freeze --exclude-editable | grep -v '^nl2sql-eval'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	@touch $(STAMP)

## Build the sample database if missing, run multidomain-v1 on the offline models, print the scores.
run: install
	$(BIN)/nl2sql-eval run --gold-set multidomain-v1 --model gold-echo --model sql-mutant

## The whole test suite (integration and e2e tests included). Tests never use the storage exported above:
## tests/conftest.py points them at temporary roots and fails the session if .nl2sql/ changed.
## Three workers on two cores: the whole suite waits on servers and subprocesses a quarter of its time, and a
## third worker fills it (quiet 2-core machine: 9 min 26 s against 10 min 0 s with two; benchmarks/README.md).
test: install
	$(BIN)/python -m pytest -n 3 -q

## Fast tests only: no whole evaluations or multi-process runs (e2e), no webserver / PostgreSQL (integration).
test-fast: install
	$(BIN)/python -m pytest -n 2 -q -m "not e2e and not integration"

## Lint, format check and types, each at zero findings (.ci/run runs this before the tests).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## Apply the formatter and ruff's safe fixes.
format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## The Dagster UI on http://127.0.0.1:3000 (same instance and storage as `make run`); `dg dev` supersedes
## `dagster dev` (dagster-dg-cli is pinned beside dagster).
ui: install
	@mkdir -p $(DAGSTER_HOME)
	$(BIN)/python -m resources.instance
	$(BIN)/dg dev -w workspace.yaml -h 127.0.0.1 -p 3000

## Benchmarks (figures go to benchmarks/README.md).
bench: install
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(NL2SQL_HOME)
