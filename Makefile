# privgate — the two commands a new user needs are `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# anonymeter (the reference for core/attacks) needs numpy < 1.27 and pyarrow < 22: its own venv,
# used only by tests/core/attacks/test_anonymeter_crosscheck.py through a subprocess.
ANON_VENV := .venv-anonymeter
UV_VERSION := 0.13.8

# Quiet, offline runs: no telemetry; without the first two Prefect prints a
# "database is locked" traceback when it runs with its temporary local server.
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export GX_ANALYTICS_ENABLED := false

.PHONY: help install demo test test-fast lint bench lock clean

help:
	@echo 'make demo       the whole pipeline on built-in synthetic census data'
	@echo 'make test       every test: what CI runs (-n 2 pytest-xdist workers; TEST_WORKERS=N to change)'
	@echo 'make test-fast  the inner loop: every test not marked slow (-m "not slow", -n 2)'
	@echo '                slow = a Prefect or PostgreSQL server, the adult fixture (whole Adult),'
	@echo '                a browser, child processes, JAX, an exhaustive reference or a search'
	@echo '                over another real dataset (tests/conftest.py)'
	@echo 'make lint       ruff check and format check'
	@echo 'make bench      the benchmarks (results in benchmarks/BENCHMARKS.md)'
	@echo 'make lock       re-resolve the lock files after editing pyproject.toml'
	@echo 'make clean      remove the virtual environments'

# --compile-bytecode: the installed packages' .pyc are written once here. Python never writes
# them where PYTHONDONTWRITEBYTECODE is set (as on the shared machine), and every test process,
# worker and child process then compiled prefect, pandas, sklearn ... from source again.
install: $(STAMP)

$(STAMP): requirements.lock requirements-pycanon.lock requirements-anonymeter.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --require-hashes -r requirements-pycanon.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	$(PYTHON) -m venv --without-pip $(ANON_VENV)
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(ANON_VENV)/bin/python --require-hashes requirements-anonymeter.lock
	touch $(STAMP)

demo: install
	$(BIN)/privgate demo

# Every test (what CI runs), on TEST_WORKERS pytest-xdist workers (2 by default): each has its
# own Prefect test server, PostgreSQL server, result storage and data folders (tests/conftest.py).
# Two on this 2-core machine: with two the tests leave a core idle a sixth to a quarter of the
# time (servers starting, flow-run processes, Prefect's heartbeat clock), but a third worker's
# own servers, fixtures and caches cost more CPU than it fills: `CI=true bash .ci/run` on fresh
# clones of the same code at idle, one after the other (2026-11-26): -n 3 690.9 s of pytest,
# 1329 s CPU (180 % of 200 %); -n 2 668.8 s, 1153 s CPU (165 %).
# --dist loadfile keeps a file on one worker, so its module fixtures (a real Prefect server, an
# MST draw) start once; the files are handed out longest first from tests/file_durations.json
# (tests/file_order.py; --no-loadscope-reorder keeps that order instead of xdist's
# largest-file-first by test count). Serial: .venv/bin/python -m pytest -q
#
# PYTHONDONTWRITEBYTECODE is cleared for the test run so that the project's modules and the
# assertion-rewritten test modules are compiled once (into __pycache__/, git-ignored), not in
# every worker and child process on every run: it halves the collection time.
TEST_WORKERS ?= 2
test: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The inner loop: the unit tests, on small tables; everything marked slow is left out (it still
# runs in make test and CI), on two pytest-xdist workers. Every test that requests the Prefect
# test server, the whole Adult table (the `adult` fixture and those built on it) or PostgreSQL
# is slow (tests/conftest.py), others are marked by hand with the reason. Every test in tests/flows,
# tests/tasks and tests/bad_inputs runs on the Prefect test server: those folders are not even
# collected here (importing them costs each worker ~15 s).
test-fast: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 -m "not slow" \
		--ignore=tests/flows --ignore=tests/tasks --ignore=tests/bad_inputs

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Benchmarks print their tables; add --write to a script's command to update BENCHMARKS.md.
bench: install
	$(BIN)/python benchmarks/datafly_vs_multi.py
	$(BIN)/python benchmarks/optimal_vs_arx.py
	$(BIN)/python benchmarks/utility_adult.py
	$(BIN)/python benchmarks/rfka_vs_hamdist.py
	$(BIN)/python benchmarks/tiered_release.py
	$(BIN)/python benchmarks/dpheter_adult.py --quick
	$(BIN)/python benchmarks/felp.py

# Re-resolve the lock files after changing pyproject.toml.
lock:
	$(BIN)/uv pip compile pyproject.toml --extra dev --python-version 3.11 --generate-hashes -q -o requirements.lock
	$(BIN)/uv pip compile requirements-anonymeter.in --python-version 3.11 --generate-hashes -q -o requirements-anonymeter.lock

clean:
	rm -rf $(VENV) $(ANON_VENV) releases .pytest_cache
