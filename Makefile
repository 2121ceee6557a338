# Two commands after cloning: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo stop test test-fast lint bench bench-queue bench-react bench-ramp clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# a checkout installed before the rename (distribution `steward`, four top-level packages)
	$(BIN)/pip uninstall --quiet --yes steward 2>/dev/null || true
	rm -rf steward.egg-info
	$(BIN)/pip install --quiet -e ".[dev,flow]"
	touch $(STAMP)

DEMO := demo-workspace

# A real eval set, end to end, on the embedded Temporal dev server and the offline model.
demo: setup
	rm -rf $(DEMO)
	$(BIN)/steward init $(DEMO)
	cd $(DEMO) && ../$(BIN)/steward launch
	cd $(DEMO) && ../$(BIN)/steward status --wait
	cd $(DEMO) && ../$(BIN)/steward collect
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
# e2e tests spend much of their time waiting on runs (offline-model delays, timers): three
# processes, each with its own Temporal server and worker, keep two cores busier than two do
# (measured: 11:54 against 12:27 for the whole suite).
TEST_PROCESSES ?= 3

test: setup
	$(PYTEST) -n $(TEST_PROCESSES) --dist worksteal --durations=15 tests/e2e tests/integration tests/unit

test-fast: setup
	$(PYTEST) -n 2 tests/unit

lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench.tend

bench-queue: setup
	$(BIN)/python -m bench.queue

bench-react: setup
	$(BIN)/python -m bench.react

bench-ramp: setup
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python -m bench.ramp

clean:
	rm -rf $(VENV) build *.egg-info
