"""Round 18 of the attacks (a fresh attacker of 09's `fix`, stop 59).

The hidden check `fix` hands the student's `fix(run, cause)` one run of each kind, with
its true cause. In its first form (five leaks) the kernel read the fixed run with the
instruments (the fixed run's own `step`, its model's loss at nudged parameters, its labels
against a truth held in the probe) and sent the readings, which the grader thresholded.
Every route below earned that run's share (0.8) on every seed tried, the last two 4 of 4 together:

- quiet_loss: a wrong backward pass kept; the model's loss is (0, zeros), so its gradient
  agrees with its loss, while a `step` of the run's class trains with the broken one.
- nudge_liar: a wrong backward pass kept; the model tells the probe's nudges (dict entries
  rebound) from a step's (in place) and answers with its gradient's linearisation.
- clipped: a rate far too high kept, the gradient clipped in the run's `step` (the symptom).
- rescaled_steps: a rate far too small kept, W1 * 0.02 and W2 / 0.02 (W1's ratio inflated),
  and the handed-over run's `steps` raised after `fix` returned.
- loss_scaled: the rate kept, the loss and gradients scaled by 0.1 / rate instead.
- boosted: a saturated W1 kept, W2 shrunk (a start near ln C), W1's step boosted 300 times.
- frame_truth: the labels taken from the probe's frame (its true labels).
- test_rows: a `step` that trains on the digits' public test rows.
- a patch of `course.grader.probe.Outputs.record` that sent healthy readings (4 of 4).

Closed at the cause (course/checks/leaks.py, "fixed runs"): the kernel sends what the
fixed run holds (its start, rate and labels, its model's scores, loss and gradients on a
few rows, the handed run's rate and labels) with the run's index and seed; the grader
rebuilds the run from the reference's seed, checks that only the leaked part changed, puts
it in, and reads every instrument in its own process with plain SGD. So each route below
earns only the healthy run's share (handed back unchanged), and numbers that read healthy
there are a repaired part: a patched probe can only send a fix. Declined (README, "Not
protected", as round 17): the right labels looked up by the rows' bytes in the public
digits.
"""

import functools

import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.authoring.variants import source_notebook

ASSIGNMENT, NOTEBOOK, CELL, CHECK = "09_leaks", "leaks", "fix_solution", "fix"

QUIET_LOSS = """
import numpy as np
from course.runs import Run, TanhNet

class _Quiet(TanhNet):
    # the gradient check reads this: a constant loss and a zero gradient agree exactly
    def loss(self, X, y=None):
        if y is None:
            return super().loss(X)
        return 0.0, {k: np.zeros_like(v) for k, v in self.params.items()}

class _Same(Run):
    # ... while training still runs the broken backward pass, unchanged
    def step(self, model, X, y):
        loss, grads = TanhNet.loss(model, X, y)
        for name, p in model.params.items():
            p -= self.learning_rate * grads[name]
        return float(loss)

def fix(run, cause):
    if cause == "a wrong backward pass":
        def new_model():
            m = run.model()  # the planted term kept: gradients still miss it
            return _Quiet(m.params, m.reg, m.hidden, m.train_mask)
        new = run.with_changes(new_model=new_model)
        new.__class__ = _Same
        return new
    return run
"""

NUDGE_LIAR = """
import numpy as np
from course.runs import TanhNet

class _Params(dict):
    nudged = False
    def __setitem__(self, key, value):  # a nudge rebinds an entry; a step edits in place
        self.nudged = True
        super().__setitem__(key, value)

class _Liar(TanhNet):
    def __init__(self, params, reg, hidden, mask):
        super().__init__(_Params(params), reg, hidden, mask)
        self._start = {k: v.copy() for k, v in params.items()}
    def loss(self, X, y=None):
        if y is None or not self.params.nudged:
            return super().loss(X, y)    # the planted term kept, its gradient still missing
        loss, grads = TanhNet(self._start, self.reg, self.hidden, self.train_mask).loss(X, y)
        moved = sum(np.sum(grads[k] * (self.params[k] - self._start[k])) for k in grads)
        return loss + moved, grads      # under the nudge: the loss the wrong gradient predicts

def fix(run, cause):
    if cause == "a wrong backward pass":
        def new_model():
            m = run.model()
            return _Liar(m.params, m.reg, m.hidden, m.train_mask)
        return run.with_changes(new_model=new_model)   # a plain Run: the course's own step
    return run
"""

CLIPPED = """
import numpy as np
from course.runs import Run

class _Clipped(Run):
    # the rate far too high is kept; the global gradient norm is clipped to 3e-3
    def step(self, model, X, y):
        loss, grads = model.loss(X, y)
        norm = np.sqrt(sum(np.sum(g * g) for g in grads.values()))
        scale = min(1.0, 3e-3 / max(norm, 1e-300))
        for name, p in model.params.items():
            p -= self.learning_rate * scale * grads[name]
        return float(loss)

def fix(run, cause):
    if cause == "learning rate too high":
        new = run.with_changes()  # same rate
        new.__class__ = _Clipped
        return new
    return run
"""

RESCALED_STEPS = """
import numpy as np
from course.runs import TanhNet

S = 0.02  # W1 scaled by S, W2 by 1/S: the same function near tanh's linear part, but
          # W1's update ratio and effective step grow by 1/S**2 = 2500

def fix(run, cause):
    if cause == "learning rate too low":
        def new_model():
            m = run.model()  # the run's own initialisation, rescaled; the rate is kept
            p = dict(m.params)
            p["W1"], p["W2"] = S * p["W1"], p["W2"] / S
            return TanhNet(p, m.reg, m.hidden, m.train_mask)
        run.steps = 1500  # read back by the grader from the run it handed over
        return run.with_changes(new_model=new_model)
    return run
"""

LOSS_SCALED = """
from course.runs import TanhNet

class _Scaled(TanhNet):
    k = 1.0
    def loss(self, X, y=None):
        out = super().loss(X, y)
        if y is None:
            return out
        loss, grads = out
        return self.k * loss, {n: self.k * g for n, g in grads.items()}

def fix(run, cause):
    if cause.startswith("learning rate"):
        k = 0.1 / run.learning_rate       # the rate is kept; the loss is scaled instead
        def new_model():
            m = run.model()
            s = _Scaled(m.params, m.reg, m.hidden, m.train_mask); s.k = k
            return s
        return run.with_changes(new_model=new_model)
    return run
"""

BOOSTED = """
import numpy as np
from course.runs import Run, TanhNet
class _Boost(Run):
    # W1 stays at its saturating scale; its step is boosted so that its update ratio reads healthy
    def step(self, model, X, y):
        loss, grads = model.loss(X, y)
        for name, p in model.params.items():
            p -= self.learning_rate * (300.0 if name == "W1" else 1.0) * grads[name]
        return float(loss)
def fix(run, cause):
    if cause == "initialisation too large":
        m0 = run.model()
        k = 0.1 * np.sqrt(m0.params["W2"].size) / np.linalg.norm(m0.params["W2"])
        def new_model():
            m = run.model(); p = dict(m.params); p["W2"] = k * p["W2"]
            return TanhNet(p, m.reg, m.hidden, m.train_mask)
        new = run.with_changes(new_model=new_model); new.__class__ = _Boost
        return new
    return run
"""

FRAME_TRUTH = """
import sys
def fix(run, cause):
    if cause == "labels that do not match the inputs":
        f = sys._getframe(1)
        while "truth" not in f.f_locals:   # up to the probe's compute(): its own right labels
            f = f.f_back
        return run.with_changes(y_train=f.f_locals["truth"].copy())
    return run
"""

TEST_ROWS = """
import numpy as np
from course.data import digits
from course.runs import Run
_d = digits()
class _Cheat(Run):
    # the rate far too high kept for W1's first steps' look; trains on the public test rows
    def step(self, model, X, y):
        count = len(self.__dict__.setdefault("_n", []))
        rows = np.random.default_rng(count).choice(len(_d.X_test), 64, replace=False)
        self._n.append(1)
        loss, grads = model.loss(_d.X_test[rows], _d.y_test[rows])
        for name, p in model.params.items():
            p -= 0.1 * grads[name]
        return float(loss)
def fix(run, cause):
    if cause in ("learning rate too high", "learning rate too low"):
        new = run.with_changes(); new.__class__ = _Cheat; return new
    return run
"""

LOOKED_UP_LABELS = """
import numpy as np
from course.data import digits

_d = digits()
_LABEL = {x.tobytes(): int(y) for x, y in zip(_d.X_train, _d.y_train)}


def fix(run, cause):
    if cause == "labels that do not match the inputs":
        return run.with_changes(y_train=np.array([_LABEL[x.tobytes()] for x in run.X_train]))
    return run
"""

ATTACKS = {
    "quiet_loss": QUIET_LOSS,
    "nudge_liar": NUDGE_LIAR,
    "clipped": CLIPPED,
    "rescaled_steps": RESCALED_STEPS,
    "loss_scaled": LOSS_SCALED,
    "boosted": BOOSTED,
    "frame_truth": FRAME_TRUTH,
    "test_rows": TEST_ROWS,
}


@functools.cache
def _notebook():
    return source_notebook(ASSIGNMENT, NOTEBOOK)


def _judge(code: str) -> float:
    nb = _notebook()
    return judge_in_process(nb, {**solution_sources(nb), CELL: code}, only={CHECK})[CHECK]


NOTHING_CHANGED = """
def fix(run, cause):
    return run
"""


@functools.cache
def _nothing_changed() -> float:
    """The healthy run's share: each route hands every other run back as it was."""
    return _judge(NOTHING_CHANGED)


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_fix_that_hides_its_leak_from_the_kernel_earns_nothing(attack):
    assert 0 < _nothing_changed() < 1
    assert _judge(ATTACKS[attack]) == _nothing_changed()


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="declined (README, 'Not protected'): reading a run's data, as round 17's diagnose",
)
def test_labels_looked_up_in_the_public_digits_earn_nothing():
    assert _judge(LOOKED_UP_LABELS) == _nothing_changed()


def test_the_reference_keeps_its_fix_points():
    """The control: the source solution earns the full 4 on the same judging."""
    nb = _notebook()
    assert judge_in_process(nb, solution_sources(nb), only={CHECK}) == {CHECK: 4.0}
