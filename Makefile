# Two commands: `make demo` installs and derives the thresholds from the
# bundled recordings; `make test` installs and runs the whole test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: install
	$(BIN)/speechclock derive recordings/
	$(BIN)/speechclock check recordings/

test: install
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV)
