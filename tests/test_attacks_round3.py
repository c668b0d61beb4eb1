"""Round-3 red-team findings against `course grade` (sandbox on), each a failing test that
documents an attack which works today. Written from the outside: a student's submission,
graded for real in a scratch course, as the instructor runs it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from course.paths import tool_env
from tests.harness import Batch, released_points

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
PGPASSWORD, HUB_TOKEN = "fake-pg-password-r3", "fake-hub-token-r3"

# A solution cell that replaces the kernel's `check` with one that runs the real probe and
# then rewrites every recorded output through `_mut` before displaying it.
FAKE_CHECK = r"""
import course.grader.probe as _P
from course.checks import get_check as _gc
from course.grader.model import encode as _enc
from IPython.display import display as _disp
MUTATION
def _fake(name, ns):
    outs = {k: _enc(v) for k, v in _P.probe(_gc(name), ns, _P._SEEDS.get(name)).items()}
    _disp({_P.PROBE_MIME: {"check": name, "outputs": _mut(outs)}, "text/plain": "x"}, raw=True)
    return 0.0
_P.check = _fake
import course.grading as _G
_G.check = _fake
"""


def with_code(nb, code: str):
    """The notebook with `code` run at the top of its first solution cell."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "value_core":
            cell.source = code + "\n\n" + cell.source
            return nb
    raise AssertionError("no value_core cell")


def outputs_text(path: Path) -> str:
    """Every text a notebook's cells printed or displayed."""
    nb = json.loads(path.read_text())
    return json.dumps([c.get("outputs", []) for c in nb["cells"]])


def grade_class(root: Path, submissions) -> tuple[Batch, object]:
    """Submit {student: notebook (built from the batch)} and run `course grade` with fake
    secrets in the grader's environment."""
    batch = Batch(root / "course", ASSIGNMENT, NOTEBOOK)
    for student, build in submissions.items():
        batch.submit(student, build(batch))
    env = tool_env(
        COURSE_ROOT=str(batch.course.root), PGPASSWORD=PGPASSWORD, JUPYTERHUB_API_TOKEN=HUB_TOKEN
    )
    return batch, batch.course_grade(env=env)


@pytest.fixture(scope="module")
def bool_class(tmp_path_factory):
    """Finding 1: every observation sent as JSON `true`, by a student whose name sorts
    before an honest one's."""
    mutation = "def _mut(o):\n    return {k: True for k in o}"
    return grade_class(
        tmp_path_factory.mktemp("r3bool"),
        {
            "aa_bool": lambda b: with_code(
                b.answered(trim=True), FAKE_CHECK.replace("MUTATION", mutation)
            ),
            "honest": lambda b: b.answered(trim=True),
        },
    )


@pytest.fixture(scope="module")
def environ_class(tmp_path_factory):
    """Finding 2: a blank notebook that prints the sandbox's pid 1 environment."""
    code = (
        "for _p in ('/proc/1/environ', '/proc/self/environ'):\n    print(_p, open(_p, 'rb').read())"
    )
    return grade_class(
        tmp_path_factory.mktemp("r3env"), {"ab_environ": lambda b: with_code(b.release, code)}
    )


def test_true_observations_do_not_stop_the_class(bool_class):
    """FOUND: a kernel that displays its probe outputs as JSON `true` makes the grader's
    feedback pictures raise (TypeError: len() of unsized object); `course grade` reports
    "the grader failed, not the students" and stops: everyone after that student is left
    ungraded. Fix: decode/validate each observation's type (float or array) in the judge
    before any rule or picture reads it, and fail only that check of that student."""
    batch, proc = bool_class
    scores = batch.scores()
    assert "grader failed" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert sum(scores.get("honest", {}).values()) == released_points("01_backprop", "backprop"), (
        scores,
        proc.stdout,
        proc.stderr,
    )
    assert sum(scores.get("aa_bool", {}).values()) == 0.0, scores


def test_grader_environment_not_readable_from_the_sandbox(environ_class):
    """FOUND: the kernel is cleared of the environment (--clearenv), but bwrap itself is
    pid 1 of the sandbox and started with the grader's whole environment; the student
    reads /proc/1/environ and prints PGPASSWORD and JUPYTERHUB_API_TOKEN into its own
    notebook (and feedback). Fix: start bwrap itself with a minimal env (env={...} in the
    Popen), or pass --unshare-pid with a procfs that hides pid 1 (e.g. `--as-pid-1` is not
    enough: exec bwrap with an empty environment)."""
    batch, proc = environ_class
    nb = batch.course.root / "autograded" / "ab_environ" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    assert nb.exists(), proc.stdout + proc.stderr
    text = outputs_text(nb)
    assert "/proc/1/environ" in text  # the attack ran
    assert PGPASSWORD not in text and HUB_TOKEN not in text


MEMORY_SPLIT = """
import os
import numpy as _np
_kids = []
for _i in range(3):
    _r, _w = os.pipe()
    _pid = os.fork()
    if _pid == 0:
        try:
            _a = _np.ones(2 * 1024**3 // 8)  # 2 GB, every page written
            os.write(_w, b"1")
        except MemoryError:
            os.write(_w, b"0")
        import time
        time.sleep(5)  # hold it while the others allocate
        os._exit(0)
    os.close(_w)  # a child killed before it writes reads as end of file, not a hang
    _kids.append((_pid, _r))
_held = sum(os.read(_r, 1) == b"1" for _pid, _r in _kids)
for _pid, _r in _kids:
    os.waitpid(_pid, 0)
print("GB_HELD_AT_ONCE", 2 * _held)
"""


@pytest.fixture(scope="module")
def memory_class(tmp_path_factory):
    """Finding 3: the kernel's memory cap is per process (RLIMIT_AS 4 GB), and the kernel
    may fork about 50 processes: 3 children hold 2 GB each at once."""
    return grade_class(
        tmp_path_factory.mktemp("r3mem"),
        {"ac_memory": lambda b: with_code(b.release, MEMORY_SPLIT)},
    )


def test_memory_is_capped_for_the_whole_sandbox(memory_class):
    """Was FOUND: a kernel's memory was bounded per process only, so forked children
    multiplied it (about 50 x 4 GB: the grading machine's OOM killer picks among everyone's
    processes). Fixed by a memory cgroup per kernel (sandbox.kernel_cgroups, 4 GiB for all
    its processes): the children past it are killed, and the kernel reports at most 4 GB."""
    batch, proc = memory_class
    nb = batch.course.root / "autograded" / "ac_memory" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    assert nb.exists(), proc.stdout + proc.stderr
    text = outputs_text(nb)
    held = [int(n) for n in re.findall(r"GB_HELD_AT_ONCE (\d+)", text)]
    assert held, text[:2000]
    assert held[0] <= 4, f"{held[0]} GB held at once by one kernel's processes"
