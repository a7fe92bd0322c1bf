# perflab: `make demo` sets up a fresh Debian machine and runs the main job; `make test` sets up
# and runs the tests.  Everything the project needs is installed from here.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-stamp
SYSDEPS := .perflab-sysdeps-stamp

.PHONY: setup bytecode system-deps workloads flamegraphs check test test-busy test-tiers lint demo bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,fleet]'
	touch $@

# System tools (perf, valgrind, hyperfine, chromium for the report check): apt-get as root,
# otherwise one line naming what to install.  Each stage may add its own step in scripts/setup.d/
# (CoreCLR: the venv's `coreclr` extra, after the venv exists).
system-deps:
	@bash scripts/install-system-deps.sh
	@for f in scripts/setup.d/*.sh; do [ -e "$$f" ] || continue; bash "$$f" || exit 1; done

# perflab's own modules compiled once: the editable install runs them from src/, where Python
# writes no bytecode when PYTHONDONTWRITEBYTECODE is set (as in these machines' shells), so each
# command compiled every module it imports again (stat -r 1: 1.74 s of CPU instead of 1.25 s).
# Python still reads bytecode under that setting; compileall writes it whatever the setting, and
# recompiles only the files changed since.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src

setup: $(STAMP) bytecode system-deps

workloads: setup
	$(BIN)/perflab workloads build

# inferno (flame graphs) for the profile tests: built once per machine into perflab's cache.
flamegraphs: setup
	@bash scripts/build-inferno.sh

lint: setup
	$(BIN)/ruff check src tests benchmarks

# The tiers (tests/tiers.py): unit (pure, parallel), system (real processes, parallel), measure
# (real measurements, one at a time).  `make check` is the fast loop; `make test` is everything
# and what CI runs.  One file: .venv/bin/pytest tests/core/test_stats.py (any tier).
PYTEST := $(BIN)/pytest -q
check: setup lint
	$(PYTEST) --tier unit -n 2

test: setup workloads flamegraphs lint test-tiers

# The whole suite beside two CPU-bound neighbours (load about 4 on 2 CPUs).
test-busy: setup workloads flamegraphs lint
	$(BIN)/python benchmarks/neighbours.py --count 2 -- $(MAKE) --no-print-directory test-tiers

test-tiers:
	$(PYTEST) --tier unit,system -n 2
	$(PYTEST) --tier measure

demo: setup workloads
	$(BIN)/python scripts/demo.py

bench: setup workloads
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/fleet.py
	$(BIN)/python benchmarks/fleet_scale.py
	$(BIN)/python benchmarks/soak.py
	$(BIN)/python benchmarks/study_axes.py
	$(BIN)/python benchmarks/estimate.py
	$(BIN)/python benchmarks/harness_interleaved.py
	$(BIN)/python benchmarks/startup.py --busy
	$(BIN)/python benchmarks/launch_cost.py --cli --conditions quiet,busy
	$(BIN)/python benchmarks/sim_verdicts.py
	$(BIN)/python benchmarks/sim_pooled.py
	$(BIN)/python benchmarks/sim_pooled_margin.py
	$(BIN)/python benchmarks/sim_stop.py
	$(BIN)/python benchmarks/import_memory.py

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
	find workloads -name build -type d -prune -exec rm -rf {} +
