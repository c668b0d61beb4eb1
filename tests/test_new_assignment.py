# ruff: noqa: E501  (nbgrader cell headers are long by nature)
"""Adding an assignment is three files: its source, its checks module, its variants.

A one-exercise toy assignment is written into a temporary course folder (the checks module
beside it, found through `course.checks.__path__`) and the course picks it up with no list
edited by hand: the build makes its notebook and references, the start page lists it,
nbgrader_config.py gives its training cell the longer timeout, the mutation harness finds
its variants, and its hidden check scores the solution full, the blank zero and a mutant
less. It runs in a subprocess, so this test process's registry of checks stays as it was.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course.grader.scratch import ScratchCourse
from course.paths import tool_env
from tests import variant_kinds

SOURCE = """\
# %% [markdown]
# # 99 · Toy
# Write `double(x)`: twice x. (1 point)

# %%
import numpy as np

# %% nbgrader={"grade": false, "grade_id": "double_solution", "locked": false, "schema_version": 3, "solution": true}
def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "double", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): double of an array.
### BEGIN HIDDEN TESTS
from course.grading import check

check("double", globals())
### END HIDDEN TESTS
"""

CHECKS = '''\
"""Hidden checks of the toy assignment."""

from course.grader.model import Assignment, Check, Rule, register

ASSIGNMENT = Assignment(
    id="99_toy",
    notebook="toy",
    title="99 Toy",
    builds="`double`",
    leak="none",
    slow_cells=frozenset({"double"}),
)


def probe_double(student, rng, out):
    x = rng.normal(size=(3, 5))
    out.record("value:of an array", lambda: student.double(x))


register(Check("double", ASSIGNMENT.key, 1, probe_double, {"value": Rule("double")}))
'''

VARIANTS = """\
from tests.variant_kinds import m

ASSIGNMENT, NOTEBOOK = "99_toy", "toy"
MUTANTS = [m("triples", "double_solution", {"double"}, ("return 2 * x", "return 3 * x"))]
ALTERNATES = []
"""

SCRIPT = """
import importlib, sys
from pathlib import Path
root = Path(sys.argv[1])
import course.checks
course.checks.__path__.append(str(root / "checks"))
sys.path.insert(0, str(root / "tests_root"))
from course.authoring import build
from course.authoring.classroom import judge_in_process, mutate, solution_sources
from course.checks import assignment_modules, assignments, slow_grade_cells
from course.workspace import start_page
from traitlets.config import Config

assert "99_toy" in assignments(), sorted(assignments())
build.build_sources(root)
refs = build.compute_references(root)
assert set(refs["99_toy/toy"]) == {"double"}, refs.keys()
build.write_references(root, refs)
assert "double" in slow_grade_cells()
config = Config()
namespace = {"get_config": lambda: config, "__file__": str(root / "nbgrader_config.py")}
exec((root / "nbgrader_config.py").read_text(), namespace)
cell = {"metadata": {"nbgrader": {"grade_id": "double"}}}
assert config.Execute.timeout_func(cell) == 3 * config.Execute.timeout
page = start_page(root / "source", ["99_toy"])
assert "99 Toy" in page
variants = importlib.import_module("tests.variants_toy")
nb = build.notebook_from_text((root / "source/99_toy/toy.pct.py").read_text())
solutions = solution_sources(nb)
assert judge_in_process(nb, solutions) == {"double": 1.0}
assert judge_in_process(nb, {"double_solution": "def double(x):\\n    raise NotImplementedError()"}) == {"double": 0.0}
mutant = variants.MUTANTS[0]
code = solutions[mutant.cell]
for old, new in mutant.edits:
    code = mutate(code, old, new)
assert judge_in_process(nb, {mutant.cell: code})["double"] < 1.0
print("ok")
"""


@pytest.mark.slow
def test_a_new_assignment_is_three_files(tmp_path):
    course = ScratchCourse(tmp_path / "course")
    root = course.root
    (root / "source" / "99_toy").mkdir()
    (root / "source" / "99_toy" / "toy.pct.py").write_text(SOURCE)
    (root / "checks").mkdir()
    (root / "checks" / "toy.py").write_text(CHECKS)
    package = root / "tests_root" / "tests"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "variant_kinds.py").write_text(Path(variant_kinds.__file__).read_text())
    (package / "variants_toy.py").write_text(VARIANTS)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), str(root)],
        env=tool_env(COURSE_ROOT=str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
