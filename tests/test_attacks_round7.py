"""Round 7 of the attacks on the grader: each test reproduces one attack and asserts what a
defended grader would give. A test that fails is a finding; one that passes, a defence.

Most are judged in this process (`judge_in_process`, as tests/test_mutants.py does: the
probe runs the submitted cells, the judge decides against the references), which is what
a grading kernel does with the same code; the ones that need a real kernel say so.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from course.authoring.build import notebook_from_text
from course.authoring.classroom import judge_in_process, mutate, solution_sources
from course.paths import course_root


@functools.cache
def source_notebook(assignment: str, notebook: str):
    text = course_root() / "source" / assignment / f"{notebook}.pct.py"
    return notebook_from_text(text.read_text())


def graded(assignment: str, notebook: str, answers: dict[str, str]) -> dict[str, float]:
    return judge_in_process(source_notebook(assignment, notebook), answers)


def solution(assignment: str, notebook: str, cell: str) -> str:
    return solution_sources(source_notebook(assignment, notebook))[cell]


# ------------------------------------------------------------------- 06: the grader's loops

CONV_FROM_THE_GRADER = """
import numpy as np
from course.checks.convolution import loop_conv_pair


def _zeros_out(x, w, conv_param):
    F, _, HH, WW = w.shape
    s, p = conv_param["stride"], conv_param["pad"]
    return np.zeros((x.shape[0], F, 1 + (x.shape[2] + 2 * p - HH) // s,
                     1 + (x.shape[3] + 2 * p - WW) // s))


def conv_forward_naive(x, w, b, conv_param):
    out = loop_conv_pair(x, w, b, conv_param, _zeros_out(x, w, conv_param))[0]
    return out, (x, w, b, conv_param)


def conv_backward_naive(dout, cache):
    x, w, b, conv_param = cache
    return loop_conv_pair(x, w, b, conv_param, dout)[1:]
"""


def test_conv_naive_borrowed_from_the_checks_module_earns_nothing():
    """Attack: `course.checks.convolution.loop_conv_pair` (the speed check's yardstick) is a
    complete, correct naive convolution forward AND backward, importable in the grading
    kernel (the course package is mounted). The submission writes no convolution at all:
    conv_forward_naive / conv_backward_naive are three-line wrappers around it (not the
    package's function bound to the graded name, so README item 10's identity test does
    not see it). Earned: conv_forward_naive 3/3 and conv_backward_naive 4/4."""
    scores = graded("06_convolution", "convolution", {"conv_naive_solution": CONV_FROM_THE_GRADER})
    assert scores["conv_forward_naive"] < 3 and scores["conv_backward_naive"] < 4, scores


CONV_FAST_BY_MEMO = '''
import numpy as np


def _loops(x, w, b, conv_param, dout=None):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = 1 + (H + 2 * pad - HH) // stride, 1 + (W + 2 * pad - WW) // stride
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out, dxp, dw = np.zeros((N, F, Ho, Wo)), np.zeros_like(xp), np.zeros_like(w)
    for n in range(N):
        for f in range(F):
            for i in range(Ho):
                for j in range(Wo):
                    win = (n, slice(None), slice(i * stride, i * stride + HH),
                           slice(j * stride, j * stride + WW))
                    out[n, f, i, j] = np.sum(xp[win] * w[f]) + b[f]
                    if dout is not None:
                        dw[f] += xp[win] * dout[n, f, i, j]
                        dxp[win] += w[f] * dout[n, f, i, j]
    if dout is None:
        return out
    return dxp[:, :, pad:pad + H, pad:pad + W], dw, dout.sum(axis=(0, 2, 3))


_memo = {}


def _key(*arrays):
    return tuple((a.shape, np.ascontiguousarray(a).tobytes()) for a in arrays)


def conv_forward_fast(x, w, b, conv_param):
    """Python loops over n, f, i, j, remembered: the same inputs again cost a lookup."""
    k = _key(x, w, b) + (conv_param["stride"], conv_param["pad"])
    if k not in _memo:
        _memo[k] = _loops(x, w, b, conv_param)
    return _memo[k].copy(), (k, x, w, b, conv_param)


def conv_backward_fast(dout, cache):
    k, x, w, b, conv_param = cache
    k = k + _key(dout)
    if k not in _memo:
        _memo[k] = _loops(x, w, b, conv_param, dout)
    return tuple(a.copy() for a in _memo[k])
'''


@pytest.mark.slow
def test_conv_fast_speed_not_earned_by_remembering_the_answer():
    """Attack: the speed check times the same x, w, b, dout over and over (the fast pair once,
    then 3 rounds of 5 calls), and takes the fastest. A "fast" pair that is the naive
    Python loops over n, f, i, j plus a dictionary keyed by the inputs' bytes pays the loops
    once and a lookup afterwards. Earned: conv_fast 4/4 (expected: its values are right)
    and conv_fast_speed 2/2 with no vectorisation at all."""
    scores = graded("06_convolution", "convolution", {"conv_fast_solution": CONV_FAST_BY_MEMO})
    assert scores["conv_fast_speed"] < 2, scores


# ------------------------------------------------------------------- 05: dropout in the net


def test_finished_net_that_ignores_dropout_loses_points():
    """Wrong implementation: FullyConnectedNet that never applies dropout (neither forward
    nor backward: `dropout_keep_ratio` is accepted and ignored). finished_net judges the
    dropout settings only by test-mode scores (dropout off: right) and by the gradient's
    agreement with the student's own train-mode loss (consistent: there is no dropout in
    either). Earned: finished_net 4/4 (every other check full too)."""
    code = solution("05_normalisation", "normalisation", "fully_connected_net_solution")
    code = mutate(
        code,
        "            if self.use_dropout:\n                out, drop_cache",
        "            if False:\n                out, drop_cache",
    )
    code = mutate(
        code,
        "            if self.use_dropout:\n                dout = dropout_backward",
        "            if False:\n                dout = dropout_backward",
    )
    scores = graded("05_normalisation", "normalisation", {"fully_connected_net_solution": code})
    assert scores["finished_net"] < 4, scores


# ------------------------------------------------------------------- feedback: picture sizes

PICTURE_WITH_A_HANDLER = """
from IPython.display import display
display(
    {"image/png": "AAAA", "text/plain": "my figure"},
    metadata={"image/png": {"width": "1 onerror=document.title='pwned-by-student'"}},
    raw=True,
)
"""


PICTURE_FROM_ELSEWHERE = """
from IPython.display import display
display(
    {"image/png": "AAAA", "text/plain": "my figure"},
    metadata={"filenames": {"image/png": "https://attacker.example/opened-by-the-grader.png"}},
    raw=True,
)
"""


MATH_WITH_A_LINK = (
    "My derivation: $\\href{https://attacker.example/sign-in}"
    "{\\text{see the full grade breakdown (sign in)}}$"
)


@pytest.fixture(scope="module")
def feedback(tmp_path_factory):
    """One real grading run (`course grade`, sandbox on) and `nbgrader generate_feedback`
    of 01 for the feedback attacks; {student: feedback page's HTML}."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    from tests.harness import Batch

    batch = Batch(tmp_path_factory.mktemp("round7") / "course", "01_backprop", "backprop")
    nb = batch.answered(trim=True)
    nb.cells.insert(1, new_code_cell(PICTURE_WITH_A_HANDLER))
    batch.submit("mallory", nb)
    nb = batch.answered(trim=True)
    nb.cells.insert(1, new_code_cell(PICTURE_FROM_ELSEWHERE))
    batch.submit("eve", nb)
    nb = batch.answered(trim=True)
    nb.cells.insert(1, new_markdown_cell(MATH_WITH_A_LINK))
    batch.submit("peggy", nb)
    proc = batch.course_grade()
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    batch.course.nbgrader("generate_feedback", "01_backprop", "--force")
    root = batch.course.root / "feedback"
    return {
        student: root / student / "01_backprop" / "backprop.html"
        for student in ("mallory", "eve", "peggy")
    }


def test_picture_metadata_cannot_add_an_event_handler_to_the_feedback_page(feedback):
    """Attack (real `course grade`, sandbox on, then `nbgrader generate_feedback`): a
    student's code cell displays a PNG (kept: PNG is on the safe list) whose OUTPUT METADATA
    says width = "1 onerror=...". SanitizeStudentCells cleans the data of an output, not its
    metadata, and nbconvert's classic and lab templates write the width unquoted
    (`width={{ width | escape_html }}`: escaping quotes does not stop a space), so the page
    gets `<img ... onerror="document.title='pwned-by-student'">`; the broken PNG fires it.
    Earned: script in the feedback page and, with the same autograded notebook, in the
    instructor's formgrader (nbgrader's formgrade template extends the same classic one;
    the instructor's own Jupyter session: a script there can call the server's API as the
    instructor, e.g. edit grades)."""
    handlers = re.findall(r"<img[^>]*\son\w+=[^>]*>", feedback["mallory"].read_text())
    assert not handlers, handlers


# ------------------------------------------------------------------- 08: "am I being nudged?"

ZERO_BACKWARD_THAT_HIDES_FROM_THE_SELFCHECK = '''

import sys as _sys


def _being_nudged():
    """Whether the grader's centred differences are calling: a frame named `nudged`."""
    frame = _sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "nudged":
            return True
        frame = frame.f_back
    return False


_right_forward = multihead_attention_forward


def multihead_attention_forward(x, Wq, Wk, Wv, Wo, num_heads, mask=None):
    out, _ = _right_forward(x, Wq, Wk, Wv, Wo, num_heads, mask)
    if _being_nudged():
        out = np.zeros_like(out)  # a constant: its centred differences are all 0
    return out, [np.shape(a) for a in (x, Wq, Wk, Wv, Wo)]


def multihead_attention_backward(dout, cache):
    return tuple(np.zeros(shape) for shape in cache)  # no backward pass written
'''


def test_a_backward_pass_of_zeros_earns_nothing_by_hiding_from_the_selfcheck():
    """Attack ("am I being graded?"): no multi-head backward pass at all (every gradient
    zeros). The forward pass is right, except when a frame named `nudged` is on the stack
    (the grader's centred differences): then it returns zeros, so the student's "own
    forward values at nudged inputs" are constant, their centred differences are 0, and a
    zero gradient agrees with them exactly (relative error 0 / 0.5e-8 = 0). The self-check,
    weight 2 of 7.5 per case, is credited because the (un-nudged) forward is right.
    Earned: multihead_backward 1.0 / 3 (0.2 without the trick). The same trick works for
    every check with a `centred_error` self-check (05, 06, 07, 08)."""
    code = solution("08_attention", "attention", "multihead_solution")
    scores = graded(
        "08_attention",
        "attention",
        {"multihead_solution": code + ZERO_BACKWARD_THAT_HIDES_FROM_THE_SELFCHECK},
    )
    assert scores["multihead_backward"] <= 0.2, scores


CONV_FAST_THAT_SLOWS_THE_YARDSTICK = (
    CONV_FAST_BY_MEMO.split("_memo = {}")[0]
    + '''

def conv_forward_fast(x, w, b, conv_param):
    """Python loops over n, f, i, j: as slow as the naive pair."""
    return _loops(x, w, b, conv_param), (x, w, b, conv_param)


def conv_backward_fast(dout, cache):
    return _loops(*cache, dout)

import time as _time

import course.checks.convolution as _checks

_yardstick = _checks.loop_conv_pair


def _slower_yardstick(*args):
    _time.sleep(1.0)
    return _yardstick(*args)


_checks.loop_conv_pair = _slower_yardstick  # the probe looks it up by name at each call
'''
)


@pytest.mark.slow
def test_conv_fast_speed_not_earned_by_slowing_the_grader_down(monkeypatch):
    """Attack (monkeypatching the probe from a student cell): the "fast" pair is plain
    loops over n, f, i, j, and the solution cell replaces `course.checks.convolution.
    loop_conv_pair`, the yardstick the speed probe times in the same kernel, by itself plus
    a 1 s sleep. The probe looks the yardstick up by name at each call, so the loops look
    over 20 times faster than the yardstick. Earned: conv_fast_speed 2/2 (in a real kernel
    the same: the probe module is an ordinary module of the student's interpreter)."""
    import course.checks.convolution as checks

    monkeypatch.setattr(checks, "loop_conv_pair", checks.loop_conv_pair)  # restored after
    scores = graded(
        "06_convolution", "convolution", {"conv_fast_solution": CONV_FAST_THAT_SLOWS_THE_YARDSTICK}
    )
    assert scores["conv_fast_speed"] < 2, scores


def test_picture_metadata_cannot_make_the_feedback_page_load_a_remote_picture(feedback):
    """Attack (same real run): a displayed PNG whose output metadata carries nbconvert's
    `filenames` entry, {"image/png": "https://attacker.example/..."}. The templates then
    write `<img src="https://attacker.example/...">` instead of the embedded data: the
    policy allows pictures only as embedded PNG or JPEG. Earned: the instructor's browser
    (formgrader) and the student's (feedback) fetch an address the student chose (a beacon
    saying when, and from where, the page was opened)."""
    remote = re.findall(r"<img[^>]*src=.https?://attacker[^>]*>", feedback["eve"].read_text())
    assert not remote, remote


# ------------------------------------------------------------------- 05: one-setting predictions


def points_over_seeds(assignment, notebook, check_name, answers, seeds) -> list[float]:
    """The points a variant earns on one check at each of `seeds`, as a grading run with
    that (secret) seed would judge it: the references probed from the source solutions at
    the same seed, both through the JSON the kernel would send."""
    import json

    from course.checks import get_check
    from course.grader.judge import verdict
    from course.grader.model import decode, encode
    from course.grader.probe import probe
    from course.grader.sources import solution_namespace

    nb = source_notebook(assignment, notebook)
    trusted = solution_namespace(nb, "reference")
    student = solution_namespace(nb, "variant", answers)
    check = get_check(check_name)
    found = []
    for seed in seeds:
        reference = {k: encode(v) for k, v in probe(check, trusted, seed).items()}
        reference = json.loads(json.dumps(reference))
        reference = {k: decode(v) for k, v in reference.items()}
        outputs = {k: encode(v) for k, v in probe(check, student, seed).items()}
        payload = json.loads(json.dumps({"check": check_name, "outputs": outputs}))
        found.append(verdict(check_name, payload, "", reference)[0])
    return found


PREDICTIONS_05 = """
def predicted_running_fraction(k, momentum):
    return {running}


def predicted_test_scale(p):
    return 1 / p


def predicted_batch_of_one_output(gamma, beta):
    return beta
"""


def test_05_predictions_are_not_earned_by_a_constant_or_a_wrong_formula():
    """Wrong answers that pass (05 asks each prediction at ONE secret setting, judged at
    2%; 06, 07 and 08 now ask three settings judged together): over 200 secret seeds,
    `predicted_running_fraction` answered by the constant 0.978 earns its point in about
    1 grading in 5, by the off-by-one `1 - momentum**(k + 1)` in about 1 in 2, and by
    PyTorch's convention `1 - (1 - momentum)**k` (the mistake the hint names) in about 1
    in 9 (measured with NumPy over the probe's ranges: k in [3, 30), momentum in
    [0.8, 0.97); 1 - m**k is near 1 for most of them). Earned: 1 of 3 points (the other two
    answers are right here), by chance, in that share of gradings."""
    seeds, lucky = range(200), {}
    for wrong in ("0.978", "1 - momentum ** (k + 1)", "1 - (1 - momentum) ** k"):
        answers = {"predictions_solution": PREDICTIONS_05.format(running=wrong)}
        points = points_over_seeds(
            "05_normalisation", "normalisation", "predictions", answers, seeds
        )
        lucky[wrong] = sum(p == 3 for p in points) / len(points)
    assert max(lucky.values()) < 0.01, f"share of 200 secret seeds with full marks: {lucky}"


# ------------------------------------------------------------------- one curve stops the class

HUGE_LOSS = """

_right_loss = FullyConnectedNet.loss


def _huge_loss(self, X, y=None):
    found = _right_loss(self, X, y)
    if y is None:
        return found
    return 1.7e308, found[1]  # finite, and the gradients are right: training goes on


FullyConnectedNet.loss = _huge_loss
"""


def test_a_huge_loss_curve_does_not_stop_the_grading_of_the_whole_class():
    """Attack (a denial of service on every other student): the network's loss reports
    1.7e308 (finite) at every training step. normalised_training's curve fails, so the
    grader draws it for the feedback (figures.curve_picture); matplotlib cannot lay out an
    axis spanning such values (ValueError "arange: cannot compute length"); JudgeHiddenChecks
    then calls it "its feedback pictures failed": a GraderFault, which stops `course grade`
    for the whole class with exit status 2 ("the grader failed, not the students", grading
    stopped at this student; every submission after it is left ungraded, and a rerun stops
    again). Any check with a curve picture will do (05 normalised_training, 06
    convnet_training, 07 char_training, 08 transformer_training). Earned: nobody's grades.
    Judged here as JudgeHiddenChecks judges a cell (with the pictures), on public seeds."""
    import json

    from nbformat.v4 import new_code_cell, new_output

    from course.checks import get_check
    from course.grader.model import encode
    from course.grader.nbgrader_ext import judge_cell
    from course.grader.probe import PROBE_MIME, probe
    from course.grader.sources import solution_namespace

    code = solution("05_normalisation", "normalisation", "fully_connected_net_solution")
    namespace = solution_namespace(
        source_notebook("05_normalisation", "normalisation"),
        "variant",
        {"fully_connected_net_solution": code + HUGE_LOSS},
    )
    outputs = probe(get_check("normalised_training"), namespace)
    payload = json.loads(
        json.dumps(
            {"check": "normalised_training", "outputs": {k: encode(v) for k, v in outputs.items()}}
        )
    )
    cell = new_code_cell("check('normalised_training', globals())")
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "normalised_training",
        "locked": True,
        "points": 3,
        "schema_version": 3,
        "solution": False,
    }
    cell.outputs = [new_output("display_data", data={PROBE_MIME: payload, "text/plain": "x"})]
    judge_cell(cell)  # a GraderFault here stops the class's grading
    # Graded by the check's own rules, pictures or not: the loss curves fail (2 of 4
    # sub-checks); the test-mode scores after training are right (the gradients are): 1 of 3.
    from course.grader.judge import verdict

    points, _ = verdict("normalised_training", payload)
    assert points < 3
    assert cell.outputs[-1]["data"]["text/plain"] == repr(points)


# ------------------------------------------------------------------- the exchange: dates


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """One real `nbgrader collect` of 01 (OwnerCheckedCollect, as nbgrader_config.py sets
    it) from an inbound folder holding: alice's honest submission, a late one dated by its
    own timestamp.txt ("late"), and one nested 1,100 folders deep ("mallory"). Each folder
    is made as its student would (here by the collecting account, which the collector
    takes as its own). A first collect without mallory's folder (the dates), a second with
    it (the denial of service)."""
    import datetime
    import os
    import shutil
    import subprocess

    from course.grader.scratch import ScratchCourse

    course = ScratchCourse(tmp_path_factory.mktemp("round7-exchange") / "course")
    course.register("01_backprop")
    release = (course.root / "release" / "01_backprop" / "backprop.ipynb").read_text()
    inbound = course.root / ".nbgrader" / "exchange" / "everything-leaks" / "inbound"
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    for student in ("alice", "late", "mallory"):
        name = f"{student}+01_backprop+{now:%Y-%m-%d %H:%M:%S.%f} UTC+0123456789abcdef"
        (inbound / name).mkdir(parents=True)
        (inbound / name / "backprop.ipynb").write_text(release)
        (inbound / name / "timestamp.txt").write_text(f"{now:%Y-%m-%d %H:%M:%S.%f} UTC")
    (next(inbound.glob("late+*")) / "timestamp.txt").write_text("2020-01-01 00:00:00.000000 UTC")
    deep = next(inbound.glob("mallory+*"))
    aside = deep.rename(deep.parent.parent / deep.name)  # out of inbound for the first collect
    first = course.nbgrader("collect", "01_backprop", check=False)
    late = (course.root / "submitted" / "late" / "01_backprop" / "timestamp.txt").read_text()
    shutil.rmtree(course.root / "submitted")
    deep, here = aside.rename(deep), os.getcwd()
    try:
        os.chdir(deep)
        for _ in range(1100):  # os.makedirs itself recurses: one level at a time
            os.mkdir("a")
            os.chdir("a")
    finally:
        os.chdir(here)
    try:
        second = course.nbgrader("collect", "01_backprop", check=False)
        yield {"course": course, "first": first, "late": late, "second": second}
    finally:
        # Removed level by level: a tree this deep also breaks shutil.rmtree (pytest's own
        # clean-up of old temporary folders included).
        for root in (deep, course.root / "submitted" / "mallory"):
            subprocess.run(["find", str(root), "-depth", "-delete"], check=False)


@pytest.mark.slow
def test_collect_does_not_believe_the_students_own_timestamp_file(collected):
    """Attack (a late submission graded as on time): the student makes their inbound folder
    by hand, named truthfully with the time they submit (so its name agrees with its
    ctime and the collector does not redate it), but with a `timestamp.txt` of their own
    saying 2020-01-01. OwnerCheckedCollect checks the folder's NAME against its ctime and
    rewrites timestamp.txt only when it redates; otherwise nbgrader copies the student's
    timestamp.txt as it is, and autograde reads the submission's date (and so its late
    penalty) from that file (nbgrader's CourseDirectory.get_existing_timestamp). Earned:
    any late submission dated whenever its author likes (here 2020: no late penalty)."""
    assert collected["first"].returncode == 0, collected["first"].stderr[-1500:]
    dated = collected["late"]
    assert not dated.startswith("2020"), f"collected as submitted at {dated}"


@pytest.mark.slow
def test_one_deep_submission_does_not_stop_the_collect_of_the_class(collected):
    """Attack (a denial of service on the whole class): one student's inbound folder holds
    1,100 folders nested in each other (each an ordinary folder: `irregular_entry` allows
    them). `irregular_entry` and `last_change` walk it with os.walk, which recurses once
    per level on Python 3.11: RecursionError, raised in `_make_record` outside its
    try, ends `nbgrader collect` with a traceback before anything is copied. Round 6 made
    one odd entry skipped instead of stopping the collect; this one still stops it.
    Earned: nobody's submission is collected (every student's grade waits)."""
    root, proc = collected["course"].root, collected["second"]
    assert (root / "submitted" / "alice" / "01_backprop" / "backprop.ipynb").exists(), proc.stderr[
        -1500:
    ]


def test_math_in_a_markdown_cell_cannot_link_outside_the_page(feedback):
    """Attack (same real run; the page then opened in chromium): a student's markdown cell
    holds `$\\href{https://attacker.example/sign-in}{\\text{see the full grade breakdown
    (sign in)}}$`. The sanitizer renders the markdown and judges the HTML, where maths is
    plain text, so the cell is kept as it is; in the page, MathJax (loaded with its Safe
    extension, which blocks javascript: but allows http and https) turns it into
    `<a href="https://attacker.example/sign-in">`. The policy: links only to a place in
    the same page. Earned: a link of the student's choosing, styled as part of the page,
    in the feedback page and the instructor's formgrader (phishing for the instructor's
    password, a beacon when clicked)."""
    playwright = pytest.importorskip("playwright.sync_api")
    import shutil

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("no chromium")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(feedback["peggy"].as_uri())
            page.wait_for_function(
                "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0",
                timeout=30000,
            )
            page.wait_for_timeout(1000)
            links = page.evaluate(
                "() => Array.from(document.querySelectorAll('a[href]'))"
                ".map(a => a.getAttribute('href')).filter(h => !h.startsWith('#'))"
            )
        finally:
            browser.close()
    assert not links, links


# ------------------------------------------------------------------- 05: credit for nothing

NET_WITHOUT_A_LOSS = """
    def loss(self, X, y=None):
        {body}
"""

FAKE_LOSS = """C = self.params[f"b{self.num_layers}"].shape[0]
        if y is None:
            return np.zeros((len(X), C))
        grads = {k: np.ones_like(v) for k, v in self.params.items()}
        if self.normalization == "batchnorm":  # the biases before batch norm: 0, "right"
            for layer in range(1, self.num_layers):
                grads[f"b{layer}"] = np.zeros_like(self.params[f"b{layer}"])
        return 0.0, grads"""


def test_finished_net_gives_no_credit_to_a_loss_that_computes_nothing():
    """Wrong implementation that earns: FullyConnectedNet's constructor right, and a loss
    that computes nothing (scores of zeros, loss 0, every gradient ones, the biases before
    batch norm zeros). The "inputs" sub-checks (X, y and the parameters left unchanged,
    5 settings) have no `requires`, and "bias" (the biases before batch norm get no
    gradient, 3 settings) requires only "inputs": 8 of the 59 weights for nothing. Earned:
    finished_net 0.94 / 4, against 0.40 for the same constructor with the loss left as
    the stub (raise NotImplementedError)."""
    code = solution("05_normalisation", "normalisation", "fully_connected_net_solution")
    head = code.split("    def loss(self, X, y=None):")[0]
    stub = head + NET_WITHOUT_A_LOSS.format(body='raise NotImplementedError("loss")')
    fake = head + NET_WITHOUT_A_LOSS.format(body=FAKE_LOSS)
    stub_points = graded(
        "05_normalisation", "normalisation", {"fully_connected_net_solution": stub}
    )
    fake_points = graded(
        "05_normalisation", "normalisation", {"fully_connected_net_solution": fake}
    )
    assert fake_points["finished_net"] <= stub_points["finished_net"], (stub_points, fake_points)
