"""Round 15 of the attacks (the fresh attacker of round 15): what a grade cell displays can
be rewritten by a later cell, after the grader stopped timing the grade cell.

nbclient keeps a map of every output displayed with a `display_id` (IPython's
`display(..., display_id=...)`), across the whole notebook, and an `update_display_data`
message from any later cell replaces that output's data in place, in the earlier cell. The
grader reads a grade cell's probe payload from its outputs after the whole notebook ran
(JudgeHiddenChecks), but times the grade cell alone (GuardedExecute: 06's speed is judged
from those seconds, course.checks.convolution.grader_timing).

The attack (06, conv_fast_speed, 2 points): a solution cell rebinds `course.grading.check`
(the grade cell's `from course.grading import check` reads the module's attribute when it
runs). For conv_fast_speed it only notes the seed the grader gave the cell
(`course.grader.probe.grader_seed`) and displays an empty payload with a display id: the
grade cell takes milliseconds. A code cell added after it runs the real probe
(`course.grading.payload`) on that seed with the slow pair, its run budget lifted
(`course.checks.convolution.RUNS_BUDGET`), and sends the payload with
`IPython.display.update_display` under the same display id: nbclient writes it into the
grade cell's output. The judge finds one well-formed payload whose pair and digests are
right (the slow pair computed them, on the grader's inputs), and the grader's own time of
the grade cell is a few milliseconds: 2 of 2 points, where the same pair without the
attack earns the pair's 0.66 (round 8's slowed pair: the reference plus 5 ms of CPU a
call).
"""

import pytest
from nbformat.v4 import new_code_cell

SLOWED_PAIR = """

import time as _time
_fast_forward = conv_forward_fast


def conv_forward_fast(x, w, b, conv_param):
    started = _time.process_time()
    while _time.process_time() - started < 0.005:
        pass
    return _fast_forward(x, w, b, conv_param)
"""

# In the solution cell: the grade cell of the speed displays an empty payload, fast.
DEFERRED_CHECK = """

import course.grading as _grading
from IPython.display import display as _display
_real_check = _grading.check
_LATER = {}


def _check(name, namespace):
    if name != "conv_fast_speed":
        return _real_check(name, namespace)
    from course.grader.probe import PROBE_MIME, grader_seed
    _LATER.update(seed=grader_seed(name), namespace=namespace)
    _display({PROBE_MIME: {"check": name, "outputs": {}}, "text/plain": "..."},
             raw=True, display_id="speed-later")
    return 0.0


_grading.check = _check
"""

# A cell added after the speed's grade cell: the real payload, untimed, written back into it.
LATER_CELL = """
import course.checks.convolution as _conv
from course.grader.probe import PROBE_MIME as _MIME
from IPython.display import update_display as _update
_conv.RUNS_BUDGET = 1e9
_found = _grading.payload("conv_fast_speed", _LATER["namespace"], _LATER["seed"])
_update({_MIME: _found, "text/plain": "..."}, display_id="speed-later", raw=True)
"""

# The same with a plain display under the same display id: nbclient updates every earlier
# output of that id from a display_data message too, not only from update_display_data.
LATER_DISPLAY_CELL = LATER_CELL.replace(
    "from IPython.display import update_display as _update",
    "from IPython.display import display as _display",
).replace("_update(", "_display(")


def _with_later_cell(nb, grade_id: str, source: str):
    at = next(
        i for i, c in enumerate(nb.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    )  # fmt: skip
    nb.cells.insert(at + 1, new_code_cell(source))
    return nb


@pytest.fixture(scope="module")
def graded_speed(tmp_path_factory):
    """One real `course grade` of 06: the slowed pair as is (henry), and with the deferred
    payload sent by update_display (mallory) or by a display of the same id (trudy)."""
    from tests.harness import Batch

    batch = Batch(tmp_path_factory.mktemp("round15") / "course", "06_convolution", "convolution")
    pair = {c: batch.solutions[c] for c in ("conv_naive_solution", "conv_fast_solution")}
    slowed = pair["conv_fast_solution"] + SLOWED_PAIR
    batch.submit("henry", batch.answered({**pair, "conv_fast_solution": slowed}, trim=True))
    attack = batch.answered({**pair, "conv_fast_solution": slowed + DEFERRED_CHECK}, trim=True)
    batch.submit("mallory", _with_later_cell(attack, "conv_fast_speed", LATER_CELL))
    attack = batch.answered({**pair, "conv_fast_solution": slowed + DEFERRED_CHECK}, trim=True)
    batch.submit("trudy", _with_later_cell(attack, "conv_fast_speed", LATER_DISPLAY_CELL))
    done = batch.course_grade()
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return batch.scores()


@pytest.mark.slow
def test_the_slowed_pair_alone_earns_only_the_pairs_share(graded_speed):
    assert graded_speed["henry"]["conv_fast_speed"] == 0.66, graded_speed["henry"]


@pytest.mark.slow
@pytest.mark.parametrize("student", ["mallory", "trudy"])
def test_a_payload_written_back_by_a_later_cell_earns_no_speed(graded_speed, student):
    """A grade cell's outputs are final when it ends (GuardedExecute._final): the judge
    reads the empty payload the cell showed, never the one a later cell sent."""
    assert graded_speed[student]["conv_fast_speed"] <= 0.66, graded_speed[student]
