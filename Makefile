# Two commands: `make demo` installs the package (not the test extras) and derives the thresholds from the
# bundled recordings; `make test` installs and runs the whole test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install browser js-tools demo test stress-test figures clean

install: $(VENV)/.installed

# The package and the test extras (what `make test` needs); the package alone is what the demo needs.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-package

$(VENV)/.installed-package: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

demo: $(VENV)/.installed-package
	$(BIN)/speechclock derive recordings/
	$(BIN)/speechclock check recordings/

# The browser tests run Debian's chromium; install it where we can (as root, with apt).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "note: could not install chromium; the browser tests will be skipped"; \
	  else echo "note: chromium is not installed; the browser tests will be skipped"; fi; }

# The JavaScript tools the page-clock tests run (esbuild, Rollup with terser, TypeScript), at the versions
# tests/js/package-lock.json pins, from the npm registry; node and npm from apt where they are missing (as root).
JS_TOOLS := tests/js/node_modules/.installed
js-tools: $(JS_TOOLS)

$(JS_TOOLS): tests/js/package.json tests/js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } \
	      || echo "note: could not install npm; the bundler and TypeScript tests will be skipped"; \
	  else echo "note: npm is not installed; the bundler and TypeScript tests will be skipped"; fi; }
	@if command -v npm >/dev/null 2>&1; then \
	  cd tests/js && npm ci --no-audit --no-fund --silent && touch node_modules/.installed; fi

# Bytecode (the package's, and pytest's rewritten test modules) is kept in the venv, out of the source tree, and
# compiled once: every `python -m clock` a test starts would otherwise compile the package again.
PYTEST := env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$$(cd "$(VENV)" && pwd)/pycache" "$(BIN)/python" -m pytest

# Three workers on two cores: the browser, WebRTC and subprocess tests wait on real time, and a third worker keeps
# the cores busy meanwhile (and, beside other work, the suite's share of them). A module's tests stay on one worker,
# so its shared fixtures are built once. Modules go out in the order they are collected (tests/conftest.py puts the
# longest first), not sorted by how many tests they hold: the browser's modules, few tests waiting on real time,
# came last that way.
WORKERS := -n 3 --dist loadscope --no-loadscope-reorder

test: install browser js-tools
	$(PYTEST) $(WORKERS) --durations=10

# The suite beside three CPU-bound processes per core, three times in a row; any failure fails the target.
# The busy loops are this recipe's own children, killed by their ids when it ends (or is interrupted).
STRESS_RUNS ?= 3
stress-test: install browser js-tools
	@set -u; pids=""; \
	stop() { [ -z "$$pids" ] || kill $$pids 2>/dev/null; wait $$pids 2>/dev/null; pids=""; }; \
	trap 'stop; exit 130' INT TERM; trap stop EXIT; \
	n=$$(( 3 * $$(nproc) )); i=0; \
	while [ $$i -lt $$n ]; do $(BIN)/python -c 'while True: pass' & pids="$$pids $$!"; i=$$((i + 1)); done; \
	echo "stress-test: $$n CPU-bound processes beside the suite"; start=$$(date +%s); run=1; \
	while [ $$run -le $(STRESS_RUNS) ]; do \
	  echo "stress-test: run $$run of $(STRESS_RUNS)"; \
	  $(PYTEST) $(WORKERS) -q -p no:cacheprovider \
	    || { echo "stress-test: run $$run failed"; exit 1; }; \
	  run=$$((run + 1)); \
	done; \
	echo "stress-test: $(STRESS_RUNS) runs, 0 failures, $$(( $$(date +%s) - start )) s in all ($$(date -u +%Y-%m-%dT%H:%MZ))"

# The README's and docs' pictures, from the bundled recordings. Each PNG holds the digest of the data it draws;
# tests/report/test_figures.py runs these commands and fails when a committed picture was drawn from other data.
SAMPLE := recordings/sample-session-48k.webm
figures: $(VENV)/.installed-package
	$(BIN)/speechclock plot $(SAMPLE) -o docs/img/sample-session.png
	$(BIN)/speechclock plot $(SAMPLE) --view beats -o docs/img/sample-session-beats.png
	$(BIN)/speechclock plot $(SAMPLE) --beat 5 -o docs/img/sample-session-paused.png
	$(BIN)/speechclock sweep recordings/ --floors 0.002:0.005:0.0005 --quiet-times 1.5:3.0:0.1 \
	  --tradeoff docs/img/tradeoff.png --heatmap docs/img/heatmap.png >/dev/null

clean:
	rm -rf $(VENV)
