# `make run`: set up .venv from nothing and run the main job (Wang et al. reproduction).
# `make test`: set up .venv and run lint + the whole test suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/ddlsched reproduce wang20-table4 --out results/wang20-table4
	$(BIN)/ddlsched reproduce wang20-table5 --out results/wang20-table5

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_wang20.py
	$(BIN)/python benchmarks/bench_yu22.py
	$(BIN)/python benchmarks/bench_luo24.py

clean:
	rm -rf $(VENV) results build *.egg-info src/*.egg-info
