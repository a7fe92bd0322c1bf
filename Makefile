# perflab: `make demo` sets up a fresh Debian machine and runs the main job; `make test` sets up
# and runs the tests.  Everything the project needs is installed from here.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-stamp
SYSDEPS := .perflab-sysdeps-stamp

.PHONY: setup system-deps workloads test lint demo bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,fleet]'
	touch $@

# System tools (perf, valgrind, hyperfine, chromium for the report check): apt-get as root,
# otherwise one line naming what to install.  Each stage may add its own step in scripts/setup.d/.
system-deps:
	@bash scripts/install-system-deps.sh
	@for f in scripts/setup.d/*.sh; do [ -e "$$f" ] || continue; bash "$$f" || exit 1; done

setup: $(STAMP) system-deps

workloads: setup
	$(BIN)/perflab workloads build

lint: setup
	$(BIN)/ruff check src tests benchmarks

test: setup workloads lint
	$(BIN)/pytest -q

demo: setup workloads
	$(BIN)/python scripts/demo.py

bench: setup workloads
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/fleet.py
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
	find workloads -name build -type d -prune -exec rm -rf {} +
