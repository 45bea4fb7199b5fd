# Fresh machine: `make plan STACK=prod` (the main job, offline) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := venv
PY := $(VENV)/bin/python
STACK ?= prod
STACKS := $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml))

.PHONY: test lint typecheck unit plan render check ci-stacks bench clean

# The venv is rebuilt whenever a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-dev.txt policies/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

test: $(VENV)/.installed lint typecheck unit

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

unit: $(VENV)/.installed
	$(PY) -m pytest

plan: $(VENV)/.installed
	$(PY) -m gpushare plan --stack $(STACK)

clean:
	rm -rf $(VENV) out .mypy_cache .ruff_cache .pytest_cache
