"""Round 8 of the attacks on the grader (issue 31): each test reproduces one attack and
asserts what a defended grader gives. Most are judged in this process (`judge_in_process`,
as tests/test_mutants.py does); the ones that need a real kernel or nbgrader say so, and
share one real grading run of a class.
"""

from __future__ import annotations

import functools

import pytest

from course.authoring.build import notebook_from_text
from course.authoring.classroom import solution_sources
from course.checks import get_check
from course.grader.judge import verdict
from course.grader.model import encode
from course.grader.probe import probe
from course.grader.sources import solution_namespace
from course.paths import course_root


@functools.cache
def source_notebook(assignment: str, notebook: str):
    text = course_root() / "source" / assignment / f"{notebook}.pct.py"
    return notebook_from_text(text.read_text())


def solution(assignment: str, notebook: str, cell: str) -> str:
    return solution_sources(source_notebook(assignment, notebook))[cell]


# ----------------------------------------------- backward passes by finite differences

# A learner's numerical gradient handed in as the backward pass: the forward is wrapped so
# that its cache also holds its inputs, and the backward differentiates the learner's own
# forward at them. Every way of taking the difference the issue names.
NUMERICAL = """
import numpy as np


def _numerical(forward, args, douts, count, method, h):
    def value(moved):
        outs = forward(*[dict(a) if isinstance(a, dict) else a for a in moved])[:-1]
        return sum(np.sum(o * d) for o, d in zip(outs, douts))

    def at(i, ix, step):
        moved = list(args)
        a = np.array(args[i], dtype=complex if method == "complex" else float)
        a[ix] += step
        moved[i] = a
        return value(moved)

    if method == "nan":  # the baseline: right shapes, no gradient
        return tuple(np.full(np.shape(a), np.nan) for a in args[:count])
    grads = []
    for i in range(count):
        g = np.zeros(np.shape(args[i]))
        for ix in np.ndindex(g.shape):
            if method == "complex":
                g[ix] = np.imag(at(i, ix, 1j * h)) / h
            elif method == "richardson":
                one = at(i, ix, h) - at(i, ix, -h)
                two = at(i, ix, 2 * h) - at(i, ix, -2 * h)
                g[ix] = np.real(8 * one - two) / (12 * h)
            else:
                g[ix] = np.real(at(i, ix, h) - at(i, ix, -h)) / (2 * h)
        grads.append(g)
    return tuple(grads)
"""

WRAPPED = """
import inspect

_forward_{forward} = {forward}


def {forward}(*args, **kwargs):
    args = tuple(inspect.signature(_forward_{forward}).bind(*args, **kwargs).arguments.values())
    *outs, cache = _forward_{forward}(*args)
    return (*outs, (cache, args))


def {backward}(*douts_and_cache):
    *douts, (cache, args) = douts_and_cache
    grads = _numerical(_forward_{forward}, args, douts, {count}, "{method}", {h})
    return grads
"""

# (assignment, notebook, grade cell, solution cell, forward, backward, how many leading
# arguments the backward returns gradients for)
BACKWARDS = [
    ("05_normalisation", "normalisation", "batchnorm_backward", "batchnorm_backward_solution",
     "batchnorm_forward", "batchnorm_backward", 3),
    ("05_normalisation", "normalisation", "batchnorm_backward_alt",
     "batchnorm_backward_alt_solution", "batchnorm_forward", "batchnorm_backward_alt", 3),
    ("05_normalisation", "normalisation", "layernorm_backward", "layernorm_backward_solution",
     "layernorm_forward", "layernorm_backward", 3),
    ("07_recurrent", "recurrent", "rnn_step", "rnn_step_solution",
     "rnn_step_forward", "rnn_step_backward", 5),
    ("07_recurrent", "recurrent", "rnn_sequence", "rnn_sequence_solution",
     "rnn_forward", "rnn_backward", 5),
    ("07_recurrent", "recurrent", "lstm_step", "lstm_step_solution",
     "lstm_step_forward", "lstm_step_backward", 6),
    ("07_recurrent", "recurrent", "lstm_sequence", "lstm_sequence_solution",
     "lstm_forward", "lstm_backward", 5),
    ("08_attention", "attention", "attention_backward", "attention_solution",
     "attention_forward", "attention_backward", 3),
    ("08_attention", "attention", "multihead_backward", "multihead_solution",
     "multihead_attention_forward", "multihead_attention_backward", 5),
]  # fmt: skip
METHODS = [("centred", 1e-5), ("centred", 1e-4), ("centred", 1e-6), ("complex", 1e-20),
           ("richardson", 1e-3)]  # fmt: skip


def numerical_backward(case, method, h) -> dict[str, str]:
    assignment, notebook, _, cell, forward, backward, count = case
    code = WRAPPED.format(forward=forward, backward=backward, count=count, method=method, h=h)
    return {cell: solution(assignment, notebook, cell) + NUMERICAL + code}


def scores_and_report(case, answers) -> tuple[float, str]:
    assignment, notebook, grade_id = case[:3]
    namespace = solution_namespace(source_notebook(assignment, notebook), "variant", answers)
    outputs = probe(get_check(grade_id), namespace)
    payload = {"check": grade_id, "outputs": {k: encode(v) for k, v in outputs.items()}}
    return verdict(grade_id, payload)


@pytest.mark.parametrize("case", BACKWARDS, ids=[c[2] for c in BACKWARDS])
@pytest.mark.parametrize("method", METHODS, ids=[f"{m}-{h:g}" for m, h in METHODS])
def test_a_numerical_gradient_handed_in_as_the_backward_pass_earns_no_backward_points(case, method):
    """Round 8 measured 2.76 of 3 for batchnorm_backward, 2.89-3 of 3 for the RNN and LSTM
    (centred differences, h = 1e-5); now no more than a backward pass that raises."""
    points, report = scores_and_report(case, numerical_backward(case, *method))
    assert "raised" not in report, report  # the numerical gradient itself works
    assert points <= no_backward(case), report
    assert "backward pass by hand" in report, report


@functools.cache
def no_backward(case) -> float:
    """The points of the same forward with a backward pass that returns NaN everywhere."""
    return scores_and_report(case, numerical_backward(case, "nan", 0))[0]


INLINE_BATCHNORM = '''
import numpy as np


def batchnorm_backward(dout, cache):
    """Differences of the forward pass written again inside the backward, no call to it."""
    x_hat, centred, std, gamma = cache
    x = centred + (x_hat * 0)  # the mean is lost; batch norm does not depend on it
    beta = np.zeros_like(gamma)

    def loss(x, gamma, beta):
        c = x - x.mean(axis=0)
        return np.sum((gamma * c / np.sqrt(np.mean(c**2, axis=0) + 1e-5) + beta) * dout)

    grads = []
    for i, a in enumerate((x, gamma, beta)):
        g = np.zeros_like(a)
        for ix in np.ndindex(a.shape):
            up, down = [x.copy(), gamma.copy(), beta.copy()], [x.copy(), gamma.copy(), beta.copy()]
            up[i][ix] += 1e-5
            down[i][ix] -= 1e-5
            g[ix] = (loss(*up) - loss(*down)) / 2e-5
        grads.append(g)
    return tuple(grads)
'''


def test_a_finite_difference_written_inline_in_the_backward_earns_no_backward_points():
    case = BACKWARDS[0]
    points, report = scores_and_report(case, {case[3]: INLINE_BATCHNORM})
    assert "raised" not in report, report
    assert points <= no_backward(case), report
    assert "backward pass by hand" in report, report
    assert "backward pass by hand" in report, report


# ------------------------------------------------------------- 06: speed, timed by the grader

# The round's attack: a fast pair too slow for the speed points (here the reference's,
# made to sleep 40 ms a call: twice the most the grader allows on any machine this suite
# runs on) and a NumPy whose `pad` sleeps only when the yardstick calls it, so that
# loops timed in the kernel look slower still (24 of 24 in a real grading before).
SLOWED_PAIR_AND_PATCHED_PAD = """

import sys as _sys
import time as _time

_pad = np.pad


def _pad_slowly_for_the_grader(*args, **kwargs):
    if _sys._getframe(1).f_code.co_name == "loop_conv_pair":
        _time.sleep(2.0)
    return _pad(*args, **kwargs)


np.pad = _pad_slowly_for_the_grader
_fast_forward = conv_forward_fast


def conv_forward_fast(x, w, b, conv_param):
    # 5 ms of CPU, not of sleep: the grader's yardstick is CPU work, and on a loaded
    # machine a sleep stayed 5 ms while the yardstick slowed, so the slowed pair passed
    # for fast (issue 55: one fresh clone's run gave it the speed's 2 points).
    started = _time.process_time()
    while _time.process_time() - started < 0.005:  # 1501 runs: within the probe's budget
        pass
    return _fast_forward(x, w, b, conv_param)
"""


def speed_cell_graded(answers: dict[str, str], monkeypatch) -> tuple[float, float]:
    """(points the kernel's own times give, points JudgeHiddenChecks gives) for the speed
    check of 06 with `answers`, its grade cell run in this process as a graded kernel runs
    it (its seed set by the grader: here the public one, whose references are committed),
    timed by the wall clock around it as GuardedExecute times a cell."""
    import json
    import time

    import numpy as np
    from nbformat.v4 import new_code_cell, new_output

    from course import grading
    from course.grader import probe as probe_module
    from course.grader.nbgrader_ext import judge_cell

    name = "conv_fast_speed"
    pad = np.pad
    try:
        namespace = solution_namespace(
            source_notebook("06_convolution", "convolution"), "variant", answers
        )
        kernel_payload = grading.payload(name, namespace)  # `course check`: loops here
        monkeypatch.setitem(probe_module._SEEDS, name, get_check(name).seed())
        started = time.monotonic()
        graded_payload = grading.payload(name, namespace, get_check(name).seed())
        seconds = time.monotonic() - started
    finally:
        np.pad = pad  # the attack patched this process's NumPy
    kernels = verdict(name, json.loads(json.dumps(kernel_payload)))[0]
    cell = new_code_cell(f"check({name!r}, globals())")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": name, "points": 2, "solution": False}
    data = {probe_module.PROBE_MIME: json.loads(json.dumps(graded_payload)), "text/plain": ""}
    cell.outputs = [new_output("display_data", data=data)]
    judge_cell(cell, None, seconds)
    return kernels, float(cell.outputs[-1]["data"]["text/plain"])


@pytest.mark.slow
def test_06_speed_is_not_earned_by_a_numpy_that_slows_the_yardstick(monkeypatch):
    """Round 8: the yardstick ran in the student's kernel and looked NumPy up at call time.
    Now the grader times the grade cell from outside and the yardstick in its own process,
    and the kernel's times count for nothing: the grader gives only the right pair's share.
    (The kernel's own times, now CPU seconds, are no longer fooled by the sleeping pad
    either: issue 55 moved judging in one process off the wall clock.)"""
    code = solution("06_convolution", "convolution", "conv_fast_solution")
    answers = {"conv_fast_solution": code + SLOWED_PAIR_AND_PATCHED_PAD}
    kernels, graders = speed_cell_graded(answers, monkeypatch)
    assert kernels == 0.66  # the slowed pair is too slow by CPU seconds too
    assert graders == 0.66  # the pair is right (a third); the speed's two thirds are lost


def test_06_speed_of_the_reference_timed_by_the_grader_earns_its_points(monkeypatch):
    assert speed_cell_graded({}, monkeypatch) == (2, 2)


def test_06_speed_a_forged_time_from_the_kernel_is_not_read():
    """A payload that claims any times: the grader replaces them by its own (and a cell it
    did not time earns nothing for speed)."""
    from nbformat.v4 import new_code_cell, new_output

    from course.checks.convolution import SPEED_LABEL
    from course.grader.nbgrader_ext import judge_cell
    from course.grader.probe import PROBE_MIME
    from course.grading import payload

    namespace = solution_namespace(source_notebook("06_convolution", "convolution"), "v", {})
    found = payload("conv_fast_speed", namespace)
    found["outputs"][f"time:{SPEED_LABEL}"] = encode(
        __import__("numpy").array([[1.0, 1.0, 1.0], [1e-9, 1e-9, 1e-9]])
    )
    for seconds, expected in ((None, 0.66), (3600.0, 0.66)):  # the pair's points only
        cell = new_code_cell("check('conv_fast_speed', globals())")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": "conv_fast_speed", "points": 2}
        cell.outputs = [new_output("display_data", data={PROBE_MIME: found, "text/plain": ""})]
        judge_cell(cell, None, seconds)
        assert float(cell.outputs[-1]["data"]["text/plain"]) == expected, cell.outputs[0]["text"]


# ------------------------------------- one real grading of a class: 06, attacks 1, 3 and 4

MAGICS_LANGUAGE = {"magics_language": {"name": "python"}, "slideshow": {"x": []}}
MANY_FILES = 4000  # empty my_*.py files: each was a mount of the sandbox


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Two real runs of `course grade` on 06 (sandbox on), then `nbgrader generate_feedback`:
    {"batch", "first", "second" (the processes), "feedback" (its process)}. Every
    submission is the release with a few exercises answered, so that it is cheap."""
    from nbformat.v4 import new_code_cell

    from tests.harness import Batch

    batch = Batch(tmp_path_factory.mktemp("round8") / "course", "06_convolution", "convolution")
    pair = {c: batch.solutions[c] for c in ("conv_naive_solution", "conv_fast_solution")}
    slowed = pair["conv_fast_solution"] + SLOWED_PAIR_AND_PATCHED_PAD
    batch.submit("mallory", batch.answered({**pair, "conv_fast_solution": slowed}, trim=True))
    batch.submit("henry", batch.answered(pair, trim=True))
    nb = batch.answered(trim=True)
    nb.cells.insert(1, new_code_cell("x = 1", metadata=MAGICS_LANGUAGE))
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": "</script>"}
    batch.submit("trent", nb)
    many = {f"my_{i:04d}.py": "" for i in range(MANY_FILES)}
    batch.submit("walter", {batch.filename: batch.answered(pair, trim=True), **many})
    for student, spoil in (("dave", _duplicate_grade_cell), ("pat", _string_points)):
        batch.submit(student, spoil(batch.answered(pair, trim=True)))
    batch.submit("victor", batch.answered(pair, trim=True))
    first = batch.course_grade()
    before = batch.scores()["victor"]
    batch.submit("victor", _dict_grade_id(batch.answered(pair, trim=True)))
    second = batch.course_grade()
    feedback = batch.course.nbgrader("generate_feedback", "06_convolution", "--force", check=False)
    return {"batch": batch, "first": first, "second": second, "feedback": feedback,
            "victor before": before}  # fmt: skip


def _grade_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def _duplicate_grade_cell(nb):
    import copy

    first = _grade_cells(nb)[0]
    nb.cells.insert(nb.cells.index(first) + 1, copy.deepcopy(first))
    return nb


def _string_points(nb):
    _grade_cells(nb)[0].metadata["nbgrader"]["points"] = "4"
    return nb


def _dict_grade_id(nb):
    _grade_cells(nb)[0].metadata["nbgrader"]["grade_id"] = {"$ne": None}
    return nb


def _table_line(proc, student: str) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith(f"{student} "))


def _feedback_page(batch, student: str) -> str:
    folder = batch.course.root / "feedback" / student / "06_convolution"
    return (folder / "convolution.html").read_text()


@pytest.mark.slow
def test_06_speed_in_a_real_grading_is_timed_by_the_grader(graded_class):
    """Finding 1, graded for real: the slowed pair with the patched NumPy earns the pair's
    points (it is right) but not the speed (24 of 24 before); the reference's fast pair,
    timed by the grader from outside the kernel, keeps its 2 points."""
    scores = graded_class["batch"].scores()
    assert scores["mallory"]["conv_fast"] == 4
    assert scores["mallory"]["conv_fast_speed"] == 0.66  # the pair's share, not the speed
    assert scores["henry"]["conv_fast_speed"] == 2


@pytest.mark.slow
def test_cell_metadata_of_another_type_breaks_no_feedback_page(graded_class):
    """Finding 3: a code cell whose `magics_language` is a dict graded fine, but
    `nbgrader generate_feedback` exited 1 (AttributeError: lower) and the formgrader's page
    of that submission failed alike. The autograded notebook's metadata is now what the
    pages read, typed; the feedback and the formgrader page render."""
    from tests.test_attacks_round5 import formgrader_page

    batch = graded_class["batch"]
    assert graded_class["feedback"].returncode == 0, graded_class["feedback"].stderr[-2000:]
    assert "trent" in _table_line(graded_class["first"], "trent")
    assert "widget-state" not in _feedback_page(batch, "trent")
    path = batch.course.root / "autograded" / "trent" / "06_convolution" / "convolution.ipynb"
    html = formgrader_page(batch.course.root, path)
    assert "</html>" in html


@pytest.mark.slow
def test_thousands_of_carried_files_do_not_stop_the_kernel(graded_class):
    """Finding 4: 4,000 empty my_*.py files were each a mount of the sandbox, and the kernel
    never started (NOT GRADED). Only one module per assignment is carried now."""
    line = _table_line(graded_class["first"], "walter")
    assert "NOT GRADED" not in line, line
    assert graded_class["batch"].scores()["walter"]["conv_fast"] == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    "student, why",
    [("dave", "a second cell with grade id"), ("pat", "points is a string")],
)
def test_a_malformed_submission_is_recorded_as_zero_with_the_reason(graded_class, student, why):
    """Finding 4: a duplicate grade cell or string points ended as NOT GRADED, with nothing
    recorded. Now the released notebook is graded in its place, opening with the reason:
    0 in the gradebook, the reason in the table and on the student's feedback page."""
    line = _table_line(graded_class["first"], student)
    assert "graded as 0" in line and why in line, line
    assert "as 0: could not be graded as submitted" in graded_class["first"].stdout
    assert sum(graded_class["batch"].scores()[student].values()) == 0
    assert why in _feedback_page(graded_class["batch"], student)


@pytest.mark.slow
def test_a_malformed_resubmission_leaves_no_earlier_grade_standing(graded_class):
    """Finding 4: victor's first submission earned points; his second has a grade id that is
    an object. Before, it was NOT GRADED and the first grade stood; now it is 0, with why."""
    assert sum(graded_class["victor before"].values()) > 0
    line = _table_line(graded_class["second"], "victor")
    assert "graded as 0" in line and "grade_id is an object" in line, line
    assert sum(graded_class["batch"].scores()["victor"].values()) == 0
    assert "grade_id is an object" in _feedback_page(graded_class["batch"], "victor")


def test_cell_metadata_is_reduced_to_what_the_pages_read_with_its_types():
    """Finding 3, in this process: the HTML exporter that generate_feedback and the
    formgrader use fails on a `magics_language` that is not a string; SanitizeStudentCells'
    metadata policy keeps nbgrader's keys of their types, tags and display flags only."""
    import nbformat
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_code_cell, new_notebook

    from course.grader.sanitize import clean_cell_metadata

    metadata = {
        **MAGICS_LANGUAGE,
        "nbgrader": {"grade": True, "grade_id": "x", "points": 2, "solution": "yes"},
        "tags": ["keep", {"not": "a tag"}],
        "jupyter": {"source_hidden": True, "outputs_hidden": "no"},
        "scrolled": "auto",
    }
    nb = new_notebook(cells=[new_code_cell("x = 1", metadata=MAGICS_LANGUAGE)])
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    with pytest.raises(AttributeError):
        HTMLExporter().from_notebook_node(nbformat.from_dict(nb))
    cleaned = clean_cell_metadata(metadata)
    assert cleaned == {
        "nbgrader": {"grade": True, "grade_id": "x", "points": 2},
        "tags": ["keep"],
        "jupyter": {"source_hidden": True},
        "scrolled": "auto",
    }
    nb.cells[0].metadata = cleaned
    assert "</html>" in HTMLExporter().from_notebook_node(nbformat.from_dict(nb))[0]


# ---------------------------------------------------------------- the exchange, on the hub


def test_collect_survives_a_date_at_the_end_of_the_calendar_and_refuses_sparse_weight(
    tmp_path,
):
    """Round 8 on the hub (a hostile classmate):
    - `mkdir 'me+01_backprop+9999-12-31 23:59:59.999999 UTC+x'` in the inbound made collect
      raise OverflowError (its date + the copy's slack) and collect nobody; a date later than
      the collect itself is not believed either: such a folder is dated by its last change;
    - twenty `truncate -s 90M` files weigh 52 KB in a student's home and 1.8 GB once copied
      into the instructor's: a submission whose files' apparent sizes add up to more than a
      grading reads (MAX_SUBMISSION_BYTES) is refused before anything is copied."""
    import os

    import nbformat

    from tests.harness import Batch
    from tests.test_attacks_round6 import STAMP, _inbound, _needs_root, _own

    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    folders = {
        "daemon": "daemon+01_backprop+9999-12-31 23:59:59.999999 UTC+far",
        "nobody": f"nobody+01_backprop+{STAMP}+sparse",
        "bin": f"bin+01_backprop+{STAMP}+plain",
    }
    for owner, name in folders.items():
        folder = _inbound(batch) / name
        folder.mkdir()
        nbformat.write(batch.answered(), folder / "backprop.ipynb")
        (folder / "timestamp.txt").write_text(STAMP)
        if owner == "nobody":
            with open(folder / "weightless.bin", "wb") as out:
                out.truncate(90 * 2**20)  # sparse: no block written
        for path in (*folder.iterdir(), folder):
            _own(path, owner)
    done = batch.course.nbgrader("collect", "01_backprop", check=False)
    submitted = batch.course.root / "submitted"
    assert done.returncode == 0, done.stderr
    assert (submitted / "bin" / "01_backprop" / "backprop.ipynb").exists()
    assert (submitted / "daemon" / "01_backprop" / "backprop.ipynb").exists()
    stamp = (submitted / "daemon" / "01_backprop" / "timestamp.txt").read_text()
    assert not stamp.startswith("9999"), stamp
    assert not (submitted / "nobody").exists()
    assert "weigh more than" in done.stderr + done.stdout
    assert os.path.getsize(_inbound(batch) / folders["nobody"] / "weightless.bin") > 0
