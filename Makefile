# Everything Leaks: one command for each habit. Needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Student mode: a private Jupyter config with nbgrader's instructor tools turned off.
STUDENT_CONFIG := $(CURDIR)/course/jupyter/student
PORT ?= 8888

.PHONY: setup sandbox workspace lab lab-instructor hub test release demo bench format lint clean

setup: $(STAMP) sandbox

# Grading kernels run in bubblewrap (README: "The sandbox"). Installed here when missing
# and this is a Debian-like machine where we are root; elsewhere, a clear message.
sandbox:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } ; } || \
		echo "warning: bubblewrap (bwrap) is missing: install it to grade (see README)"

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "python3 >= 3.11 is needed")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,cluster]'
	touch $(STAMP)

# A learner's working copy of each released assignment lives in work/ (never overwritten).
workspace: setup
	$(BIN)/python -m course.workspace

# Root (as in containers) must say so to Jupyter.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: workspace
	JUPYTER_CONFIG_DIR=$(STUDENT_CONFIG) $(BIN)/jupyter lab --port=$(PORT) $(ALLOW_ROOT) \
		--ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/work/START.ipynb

lab-instructor: setup
	$(BIN)/jupyter lab --port=$(PORT) $(ALLOW_ROOT) --ServerApp.root_dir=$(CURDIR)

# The class on JupyterHub for a try-out, as root (README: "A class on JupyterHub"):
# installs into /opt/everything-leaks, adds an instructor and two students, prints how to
# log in and runs the hub on 127.0.0.1:8000. `hub/try --remove` deletes the accounts.
hub:
	hub/try

test: setup
	$(BIN)/python -m pytest -n 2 --dist loadgroup

release: setup
	$(BIN)/course build

demo: setup
	$(BIN)/course demo

bench: setup
	$(BIN)/course bench

format: setup
	$(BIN)/ruff format course tests nbgrader_config.py source
	$(BIN)/ruff check --fix course tests nbgrader_config.py source

lint: setup
	$(BIN)/ruff check course tests nbgrader_config.py source

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache gradebook.db submitted autograded/*/ feedback .nbgrader
