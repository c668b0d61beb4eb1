# Everything Leaks: one command for each habit. Needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp
PORT ?= 8888
ARGS ?=

.PHONY: setup dev sandbox workspace lab lab-instructor hub test test-fast test-cpu sweep release demo bench \
	format lint clean

# Learners get the runtime only (JupyterLab, nbgrader, NumPy, Matplotlib, ...); the test
# tools (pytest, Playwright, ...) and the cluster extra (Dask, psycopg) come with `make test`
# or `make dev`. pip prints what it installs: the first set-up takes a minute or two.
setup: $(STAMP) sandbox

dev: $(DEV_STAMP) sandbox

# Grading kernels run in bubblewrap (README: "The sandbox"). Installed here when missing
# and this is a Debian-like machine where we are root; elsewhere, a clear message.
sandbox:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } ; } || \
		echo "warning: bubblewrap (bwrap) is missing: install it to grade (see README); \
	a learner can still use 'course check --unsandboxed'"

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "python3 >= 3.11 is needed")'
	$(PYTHON) -m venv $(VENV)
	@echo "Installing the course's runtime into $(VENV)/ (about 1-2 minutes the first time)..."
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on \
		-c constraints.txt -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	@echo "Installing the test tools and the cluster extra into $(VENV)/..."
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on \
		-c constraints.txt -e '.[dev,cluster]'
	touch $(DEV_STAMP)

# A learner's working copy of each released assignment lives in work/ (never overwritten).
workspace: setup
	$(BIN)/python -m course.workspace

# `course lab` also puts .venv/bin on PATH: the formgrader runs `alembic` by name.
# ARGS go to `jupyter lab` as they are; PORT is only the default (JUPYTER_PORT), so a
# --port in ARGS wins, e.g.
# make lab ARGS="--no-browser --port 9999 --ip 0.0.0.0"
lab: setup
	JUPYTER_PORT=$(PORT) $(BIN)/course lab -- $(ARGS)

lab-instructor: setup
	JUPYTER_PORT=$(PORT) $(BIN)/course lab --instructor -- $(ARGS)

# The class on JupyterHub for a try-out, as root (README: "A class on JupyterHub"):
# installs into /opt/everything-leaks, adds an instructor and two students, prints how to
# log in and runs the hub on 127.0.0.1:8000. `hub/try --remove` deletes the accounts.
hub:
	hub/try

# Four test processes on two cores: a test waits on kernels, servers and subprocesses
# for a fifth to a third of its time, and the extra workers fill it (a fresh clone's suite:
# 1284 s with two, 939 s with three; one checkout at stop 44: 874 s with three, 806 s with
# four). One BLAS thread each, as grading kernels have (a notebook took
# 138 s instead of 33 s with BLAS threads fighting on a loaded machine).
# `--dist loadgroup` keeps the tests that share a graded class on one worker
# (tests/conftest.py); the 25 slowest tests are printed at the end, so a slow new one shows.
PYTEST := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	$(BIN)/python -m pytest -n 4 --dist loadgroup

test: dev lint
	$(PYTEST) --durations=25

# The loop while working: unit, property and in-process tests (mutants judged in-process,
# references, figures); no browser, no hub, no notebook run, no real grading run.
test-fast: dev lint
	$(PYTEST) -m "not slow" --durations=10

# Where the suite's CPU goes (issue 30): the whole suite with each test's CPU, sandboxed
# kernels included (a cpuacct cgroup per worker, as root; tests/cpu_profile.py), then the
# costliest files and tests. The log is cpu-by-test.jsonl.
test-cpu: dev
	rm -f cpu-by-test.jsonl
	CPU_LOG=$(CURDIR)/cpu-by-test.jsonl $(PYTEST) -p tests.cpu_profile
	$(BIN)/python tests/cpu_profile.py cpu-by-test.jsonl

# Before a release: every check on 1000 secret seeds (make test draws 300, 150 for the
# nine costliest), every probe helper patched, called or not (make test patches those
# the honest probe calls), and trivial answers (zeros, ones, the input, nothing, a blank)
# judged on those 1000 seeds (make test: 24, fewer for the costliest; issue 55).
sweep: dev
	SWEEP_SEEDS=1000 EVERY_PATCH=1 $(PYTEST) tests/test_inputs_sweep.py \
		tests/test_observations.py tests/test_trivial_answers.py \
		-k "any_seed or patching" --durations=10

release: setup
	$(BIN)/course build

demo: setup
	$(BIN)/course demo

# PyTorch (the `bench` extra) is optional: without it, the convolution is timed alone.
bench: setup
	@$(BIN)/python -c 'import torch' 2>/dev/null || \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[bench]' || \
		echo "warning: PyTorch (the bench extra) did not install: the convolution is timed without it"
	$(BIN)/course bench

format: dev
	$(BIN)/ruff format course tests nbgrader_config.py source
	$(BIN)/ruff check --fix course tests nbgrader_config.py source

lint: dev
	$(BIN)/ruff check course tests nbgrader_config.py source
	$(BIN)/ruff format --check course tests nbgrader_config.py source

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache gradebook.db submitted autograded/*/ feedback .nbgrader
