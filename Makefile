# Fresh machine: `make render STACK=prod` (the main job, offline) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := venv
PY := $(VENV)/bin/python
STACK ?= prod
STACKS := $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml))
# Pinned Helm charts for render/check, searched before the user's cache and the chart repositories: the
# repo's CI and tests use ../shared/charts when it sits beside the clone; elsewhere CHART_DIRS is empty.
CHART_DIRS ?= $(wildcard ../shared/charts)
CHART_ARGS := $(addprefix --chart-dir ,$(CHART_DIRS))

.PHONY: test test-e2e engine test-engine lint typecheck unit plan render check verify scan ci-stacks bench bench-cpu bench-update dist dist-check mutation clean

# Requirements are (re)installed into the venv whenever a requirements file changes; requirements.txt
# installs this repository's gpushare distribution in editable mode, so venv/bin/gpushare runs this tree.
$(VENV)/.installed: requirements.txt requirements-dev.txt policies/requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

test: $(VENV)/.installed lint typecheck unit

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/shellcheck gpushare/mig/node_files/*.sh tests/fixtures/fake_node/* .ci/run .ci/dist-check engine/build.sh
	$(VENV)/bin/actionlint .github/workflows/*.yml

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

# Two workers (the machines have 2 cores); a test file stays on one worker, so its module fixtures
# (one render, one fake API server) are built once.
unit: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadfile -m "not e2e and not engine"

# The tests that start whole processes (the policy pack over gRPC, the CLI, the component host, the
# benchmarks' renders): slower, so outside `make test`'s minute; CI runs them right after it.
test-e2e: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadfile -m "e2e and not engine"

# The real tools in .engine/bin/ (gitignored): the Pulumi CLI, pulumi-resource-kubernetes,
# pulumi-language-yaml, etcd and kube-apiserver, built with Go from the module proxy at engine/versions.env's
# pins (engine/build.sh; idempotent; Go's default GOMODCACHE/GOCACHE). A cold build takes long:
# docs/performance.md.
engine:
	engine/build.sh

# The tests that need those tools (pytest marker `engine`): a real API server on loopback.
test-engine: $(VENV)/.installed engine
	$(PY) -m pytest -m engine

plan: $(VENV)/.installed
	$(PY) -m gpushare plan --stack $(STACK)

# Run the real program under Pulumi's mocks and write every resource and manifest to out/<stack>/.
render: $(VENV)/.installed
	$(PY) -m gpushare render --stack $(STACK) --out out/$(STACK) $(CHART_ARGS)

# Render the stack and run the policy pack over it as `pulumi preview --policy-pack policies` would.
check: $(VENV)/.installed
	$(PY) -m gpushare check --stack $(STACK) $(CHART_ARGS)

# Check the live cluster against the stack, read-only (KUBECONFIG / ~/.kube/config; VERIFY_ARGS=--json).
verify: $(VENV)/.installed
	$(PY) -m gpushare verify --stack $(STACK) $(VERIFY_ARGS)

# checkov gets a venv of its own: its pins and pulumi's cannot be resolved together.
SCAN_VENV := $(VENV)/scanners
$(SCAN_VENV)/.installed: requirements-scan.txt $(VENV)/.installed
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-scan.txt
	touch $@

# checkov over the objects gpushare writes for one rendered stack (patches and Helm releases aside).
scan: $(SCAN_VENV)/.installed
	$(PY) -m gpushare.cli.scan out/$(STACK)/manifests --checkov $(SCAN_VENV)/bin/checkov

# Render, policy-check (inside the charts too) and scan every stack in the repo (CI does this after the tests).
ci-stacks: $(VENV)/.installed $(SCAN_VENV)/.installed
	set -e; for stack in $(STACKS); do \
	  $(PY) -m gpushare render --stack $$stack --out out/$$stack $(CHART_ARGS); \
	  $(PY) -m gpushare check --stack $$stack --inside-charts $(CHART_ARGS); \
	  $(PY) -m gpushare.cli.scan out/$$stack/manifests --checkov $(SCAN_VENV)/bin/checkov; \
	done

# Speed and memory against Pulumi's own floor, and scaling to 500 pools (~9 min; BENCH_ARGS=--quick for a smoke run,
# ~5 min on shared cores); exits 1 when a measured target is MISSED;
# then verify against cluster size and advise --fleet against fleet size (BENCH_ARGS=--live-only: only those).
# Writes out/bench/ (untracked); `make bench-update` also copies the figures over the committed ones in bench/.
$(VENV)/.bench-installed: $(VENV)/.installed bench/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	touch $@

bench: $(VENV)/.bench-installed bench-cpu
	GPUSHARE_CHART_DIRS="$(CHART_DIRS)" $(PY) -m bench $(BENCH_ARGS)

# CPU of whole `render` processes against a process that only imports the SDKs (bench/process_cpu.py).
bench-cpu: $(VENV)/.installed
	$(PY) -m bench.process_cpu $(CHART_ARGS) $(BENCH_CPU_ARGS)

# The committed figures change only on request, and only after a whole run succeeded: the old outputs are
# removed first, so a failed run (make stops at it) leaves nothing stale to copy.
BENCH_FIGURES := results.json scaling.png process_cpu.json
bench-update:
	rm -f $(addprefix out/bench/,$(BENCH_FIGURES))
	$(MAKE) bench
	cp $(addprefix out/bench/,$(BENCH_FIGURES)) bench/

# The wheel (dist/gpushare-<version>-py3-none-any.whl) and the policy pack as `pulumi policy publish`
# uploads it (dist/gpushare-policy-pack-<version>.tar.gz: the pack directory alone, no venv or caches).
PACK_VERSION = $(shell sed -n 's/^version: *//p' policies/PulumiPolicy.yaml)
dist: $(VENV)/.installed
	rm -rf dist && mkdir dist
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .
	rm -rf build  # setuptools' staging copy of the package, not a second source tree
	tar -czf dist/gpushare-policy-pack-$(PACK_VERSION).tar.gz --exclude=venv --exclude=__pycache__ policies

# What CI adds after the tests: the wheel (with its `all` extra) in a fresh venv outside the repo (catalog, tune, advise, validate,
# plan/render/check --dir from another directory), and the pack copied alone into an empty directory with
# a venv from only its requirements.txt and the wheel (gpushare's core: at most 150 MB), over every stack and a foreign program.
dist-check: dist
	.ci/dist-check dist $(CHART_DIRS)

# Mutation testing of the decision logic, not part of `make test` (~1 h on 2 cores; docs/mutation-testing.md).
# MUTATION_ARGS="--seed N --sample 200 --jobs 2"; survivors in out/mutation/survivors.md.
mutation: $(VENV)/.installed
	$(PY) -m mutation $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) out dist build gpushare.egg-info .mypy_cache .ruff_cache .pytest_cache
