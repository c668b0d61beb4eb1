"""Round 16 of the attacks (the fresh attacker of round 16, on 09 part 1, the instruments).

The probes of 09 hand the student's functions the grader's own model, `TanhNet` (course.runs)
(course.checks.leaks), in the student's kernel. Everything the grader planted in it is a
plain attribute the student's code can read and write:

- gradient_check_model (3 points): the "wrong gradients" of the check are `model.wrong`,
  {name: array added to that gradient}. A check that empties `model.wrong` for one loss
  call gets the model's right analytic gradients, and rel_error(planted, right) is the
  reference's relative error to far better than the rule's 1e-6 of itself (the reference's
  centred differences are about 1e-9 off; this one is exact). No numerical gradient is
  ever computed: one or two loss calls per model instead of 2 * (number of parameters)
  + 1, and 3 of 3 points. Reading `model.wrong` (right = planted - wrong), or the probe's
  own `net` from the call stack, does the same; so does a backward pass written by hand for
  the grader's one model (a tanh network, `params` W1 b1 W2 b2, `reg`), which needs no
  `wrong` at all: the function checks no other model, and earns 3 of 3.
- A function that does nothing earns points: gradient_check_model returning 0.0 for every
  parameter (or any constant, even -1e300) keeps the parameters as given, the `params`
  sub-check's weight (0.5 of 1.5 per model), so 1 of 3 points; activation_stats returning
  a constant 0.0 for every statistic earns the tanh case's `dead` (its share of dead units
  is always 0, a tanh never outputs 0 in a whole column): 1 of 8 sub-checks, 0.25 of 2.

Fixed (all of them now earn nothing): each wrong gradient is planted in the loss, a term
sum(a * sin(b * p)) in `model.hidden` that the gradients leave out, not in a gradient.
Switching the term off (below, `model.hidden` emptied) changes no gradient, and a backward
pass written for the grader's model agrees with its gradients: the agreement is never the
disagreement that centred differences of the loss find. Reading the term and
differentiating it by hand is the README's "Not protected" reading of the grader's code.
The params sub-check is worth nothing alone, and both cases of the activation statistics
have dead units (tanh(0) = 0 where a unit's weights are all 0).

Each is judged in-process (course.authoring.classroom.judge_in_process, the grader's own
probe and judge on the committed public inputs); the slow test grades them for real
(`course grade`, secret seeds, the real kernel) beside the reference.
"""

import functools

import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.authoring.variants import source_notebook

ASSIGNMENT, NOTEBOOK = "09_leaks", "leaks"

# One loss call with the planted errors switched off: the right gradients, no differences.
CLEAR_WRONG = """
def gradient_check_model(model, X, y, h=1e-5):
    _, grads = model.loss(X, y)
    saved = model.hidden
    model.hidden = {}
    try:
        right = model.loss(X, y)[1]
    finally:
        model.hidden = saved
    return {k: rel_error(grads[k], right[k]) for k in model.params}
"""

# The planted errors read, not switched off: right = planted - wrong.
READ_WRONG = """
def gradient_check_model(model, X, y, h=1e-5):
    _, grads = model.loss(X, y)
    wrong = getattr(model, "wrong", {})
    return {k: rel_error(grads[k], grads[k] - wrong[k]) if k in wrong else 0.0
            for k in model.params}
"""

# The probe's own model, found on the call stack (any object passed in could be a proxy).
STACK_WRONG = """
import sys as _sys


def gradient_check_model(model, X, y, h=1e-5):
    _, grads = model.loss(X, y)
    frame, wrong = _sys._getframe(1), None
    while frame is not None and wrong is None:
        net = frame.f_locals.get("net")
        wrong = getattr(net, "wrong", None)
        frame = frame.f_back
    return {k: rel_error(grads[k], grads[k] - wrong[k]) if k in wrong else 0.0
            for k in model.params}
"""

# Neither `wrong` nor the call stack: the grader's model is a tanh network whose loss is
# softmax cross-entropy plus 0.5 * reg * |W|^2 (its `params` keys and `reg` say which); its
# right gradients by a backward pass written for that one model, no differences. A hidden
# `wrong` would not stop this one.
OWN_BACKPROP = """
def gradient_check_model(model, X, y, h=1e-5):
    _, grads = model.loss(X, y)
    P, reg = model.params, float(getattr(model, "reg", 0.0))
    hidden = np.tanh(X @ P["W1"] + P["b1"])
    scores = hidden @ P["W2"] + P["b2"]
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    N = len(X)
    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    dz = (dscores @ P["W2"].T) * (1 - hidden**2)
    right = {"W1": X.T @ dz + reg * P["W1"], "b1": dz.sum(0),
             "W2": hidden.T @ dscores + reg * P["W2"], "b2": dscores.sum(0)}
    return {k: rel_error(grads[k], right[k]) for k in P}
"""

# Nothing computed at all.
ZERO_ERRORS = """
def gradient_check_model(model, X, y, h=1e-5):
    return {k: 0.0 for k in model.params}
"""

CONSTANT_STATS = """
def activation_stats(a):
    return {"mean": 0.0, "std": 0.0, "dead": 0.0, "saturated": 0.0}
"""

ATTACKS = {
    "clear_wrong": ("gradient_check_solution", CLEAR_WRONG, "gradient_check_model"),
    "read_wrong": ("gradient_check_solution", READ_WRONG, "gradient_check_model"),
    "stack_wrong": ("gradient_check_solution", STACK_WRONG, "gradient_check_model"),
    "own_backprop": ("gradient_check_solution", OWN_BACKPROP, "gradient_check_model"),
    "zero_errors": ("gradient_check_solution", ZERO_ERRORS, "gradient_check_model"),
    "constant_stats": ("activation_stats_solution", CONSTANT_STATS, "activation_stats"),
}


@functools.cache
def _notebook():
    return source_notebook(ASSIGNMENT, NOTEBOOK)


def _judge(cell: str, code: str, check: str) -> float:
    nb = _notebook()
    return judge_in_process(nb, {**solution_sources(nb), cell: code}, only={check})[check]


def test_gradient_check_earns_nothing_by_switching_off_the_planted_errors():
    assert _judge(*ATTACKS["clear_wrong"]) == 0.0


def test_gradient_check_earns_nothing_by_reading_the_planted_errors():
    assert _judge(*ATTACKS["read_wrong"]) == 0.0


def test_gradient_check_earns_nothing_from_the_probes_model_on_the_stack():
    assert _judge(*ATTACKS["stack_wrong"]) == 0.0


def test_gradient_check_earns_nothing_from_a_backward_pass_of_the_graders_model():
    assert _judge(*ATTACKS["own_backprop"]) == 0.0


def test_gradient_check_that_computes_nothing_earns_nothing():
    assert _judge(*ATTACKS["zero_errors"]) == 0.0


def test_constant_activation_stats_earn_nothing():
    assert _judge(*ATTACKS["constant_stats"]) == 0.0


def test_the_reference_keeps_its_points():
    """The control: the source solutions earn the full 3 and 2 on the same judging."""
    nb = _notebook()
    scores = judge_in_process(
        nb, solution_sources(nb), only={"gradient_check_model", "activation_stats"}
    )
    assert scores == {"gradient_check_model": 3.0, "activation_stats": 2.0}, scores


@pytest.mark.slow
def test_instrument_attacks_graded_for_real_earn_nothing(tmp_path):
    from tests.harness import Batch

    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    batch.submit("honest", batch.answered(trim=True))
    for name, (cell, code, _) in ATTACKS.items():
        batch.submit(name.replace("_", ""), batch.answered({cell: code}, trim=True))
    done = batch.course_grade()
    if done.returncode not in (0, 1):
        pytest.fail(done.stdout + done.stderr)  # the grading itself failed
    scores = batch.scores()
    if scores["honest"] != batch.max_scores():  # the control
        pytest.fail(f"the reference lost points: {scores['honest']}")
    forged = {name: scores[name.replace("_", "")][check] for name, (_, _, check) in ATTACKS.items()}
    assert all(points == 0.0 for points in forged.values()), forged
