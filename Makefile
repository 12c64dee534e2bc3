# `make run`: set up .venv from nothing and run the main job (Wang et al. reproduction).
# `make test`: set up .venv and run lint + the whole test suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean chromium

BASE := $(VENV)/.installed-base

# `make run` needs only the package (about half the set-up time of the test extras).
# uv (a PyPI package) installs several times faster than pip and skips byte-compiling whole
# packages. The venv is made without pip (3 s less) and the system's pip (≥ 22.3, `--python`)
# puts uv into it; where that cannot be done, the venv gets its own pip (ensurepip), which
# installs uv or, failing that, the package itself. The warm-up then writes the byte-code of
# what the runs import and compiles the numba kernel, on both cores at once.
QUIET := --quiet --disable-pip-version-check
PIP := $(BIN)/python -m pip install $(QUIET)
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python
ENSUREPIP := $(BIN)/python -m ensurepip --default-pip >/dev/null

$(BASE): pyproject.toml
	$(PY) -m venv --without-pip $(VENV)
	($(PY) -m pip --python $(BIN)/python install $(QUIET) uv 2>/dev/null && $(UV) -e .) || \
	  ($(ENSUREPIP) && (($(PIP) uv && $(UV) -e .) || $(PIP) -e .))
	$(BIN)/python -m ddlsched.warmup
	touch $(BASE)

# the test set-up also gives the venv its own pip (`.venv/bin/pip install …` as users expect)
$(STAMP): $(BASE)
	$(UV) -e '.[test]' || ($(ENSUREPIP) && $(PIP) -e '.[test]')
	[ -x $(BIN)/pip ] || $(ENSUREPIP)
	touch $(STAMP)

run: $(BASE)
	$(BIN)/ddlsched reproduce wang20-table4 --out results/wang20-table4
	$(BIN)/ddlsched reproduce wang20-table5 --out results/wang20-table5
	@echo "compiling the Pollux search for later runs (once per checkout, about 15 s)"
	$(BIN)/python -m ddlsched.warmup --pollux

# Headless Chromium for tests/test_report_browser.py (Debian's `chromium`), installed when
# missing and we are root with apt-get; never fatal: without it that test skips and says why.
chromium:
	@if ! [ -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the HTML report browser test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
	      >/dev/null) || echo "warning: chromium install failed; the browser test will skip"; \
	  else \
	    echo "note: no chromium (needs root + apt-get to install); the browser test will skip"; \
	  fi; \
	fi

# The suite on every core (pytest-xdist): Ray's test files share one worker (tests/conftest.py);
# the few tests marked `solo` compare real processes' timings and run alone afterwards. One
# worker more than cores (at least 3, at most 4): many tests wait on real processes, and a third
# worker on 2 cores fills those waits (docs/performance.md, "Test suite"). `pytest` with no
# options runs everything in one process as before. Byte-code is written even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, as warmup.py does): else every pytest process
# rewrote all test files' asserts (14 s → 5 s to collect) and every job, service and Ray worker
# the tests start compiled ray and pandas from source (≈ 1.5 s each → 0.6 s).
PYTEST := OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
WORKERS := $(shell $(PY) -c "import os; print(min(max(len(os.sched_getaffinity(0)) + 1, 3), 4))" 2>/dev/null || echo 3)
test: $(STAMP) chromium
	$(BIN)/ruff check src tests benchmarks examples
	$(PYTEST) -n $(WORKERS) --dist loadgroup -m "not solo"
	$(PYTEST) -m solo

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_wang20.py
	$(BIN)/python benchmarks/bench_yu22.py
	$(BIN)/python benchmarks/bench_luo24.py
	$(BIN)/python benchmarks/bench_pollux.py
	$(BIN)/python benchmarks/bench_philly.py
	$(BIN)/python benchmarks/bench_report.py
	$(BIN)/python benchmarks/bench_traces.py
	$(BIN)/python benchmarks/bench_service.py
	$(BIN)/python benchmarks/bench_live.py
	$(BIN)/python benchmarks/bench_gavel.py

clean:
	rm -rf $(VENV) results build *.egg-info src/*.egg-info
