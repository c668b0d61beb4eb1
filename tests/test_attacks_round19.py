"""Round 19 of the attacks (a fresh attacker of 09's `fix`, stop 60).

- nan_grads: a wrong backward pass kept, every gradient but W1's NaN. The gradient test
  reduced the parameters' errors with Python's max(), which drops a NaN after its first
  item, so W1's error alone decided: it passed whenever the term was planted on b1, W2 or b2
  (3 draws in 4), under real grading too (`course check`: 1.33 of 4 against the 0.67 of
  handing every run back).
- combo_nan: honest cheap repairs of the other leaks, and nan_grads for the backward pass
  (4 of 4 under real grading, where its honest part earns 3.33).

Closed at the cause (course/checks/leaks.py, `_fixed_run_reads_healthy`): every number
read must be finite before any test, and the tests that remain are written so that a NaN
fails them (`not x <= tol`, np.max). The same pattern, found beside it, in 05's
`_bias_ratio`: `max(worst, NaN)` kept `worst`, so a NaN bias gradient read as vanishing.
"""

import numpy as np

from course.checks.normalisation import _bias_ratio
from tests.test_attacks_round18 import _judge, _nothing_changed

NAN_MODEL = """
import numpy as np
from course.runs import TanhNet

class _NaNGrads(TanhNet):
    # the planted term still has no gradient; every gradient but W1's is NaN
    def loss(self, X, y=None):
        out = super().loss(X, y)
        if y is None:
            return out
        loss, grads = out
        for name in ("b1", "W2", "b2"):
            grads[name] = np.full_like(grads[name], np.nan)
        return loss, grads
"""

# The backward pass "fixed" by the NaN model; every other run handed to `_otherwise`.
NAN_FIX = """
def fix(run, cause):
    if cause == "a wrong backward pass":
        def new_model():
            m = run.model()
            return _NaNGrads(m.params, m.reg, m.hidden, m.train_mask)
        return run.with_changes(new_model=new_model)
    return _otherwise(run, cause)
"""

NAN_GRADS = NAN_MODEL + "\ndef _otherwise(run, cause):\n    return run\n" + NAN_FIX

HONEST_PART = """
def fix(run, cause):
    # honest, cheap repairs of every leak but the backward pass
    if cause == "initialisation too large":
        def new_model():
            m = run.model()
            (D, H), C = m.params["W1"].shape, m.params["W2"].shape[1]
            g = np.random.default_rng(0)
            m.params.update(W1=g.standard_normal((D, H)) / np.sqrt(D), b1=np.zeros(H),
                            W2=0.1 * g.standard_normal((H, C)), b2=np.zeros(C))
            return m
        return run.with_changes(new_model=new_model)
    if cause in ("learning rate too high", "learning rate too low"):
        return run.with_changes(learning_rate=0.1)
    if cause == "labels that do not match the inputs":
        return run.with_changes(y_train=np.roll(run.y_train, -1))
    return run
"""


def test_nan_gradients_earn_nothing():
    assert _judge(NAN_GRADS) == _nothing_changed()


def test_nan_gradients_beside_honest_repairs_earn_only_the_repairs():
    honest = "import numpy as np\n" + HONEST_PART
    combined = NAN_MODEL + HONEST_PART.replace("def fix(", "def _otherwise(") + NAN_FIX
    assert _nothing_changed() < _judge(honest) < 4
    assert _judge(combined) == _judge(honest)


def test_a_nan_bias_gradient_before_batch_norm_does_not_read_as_vanishing():
    db, dW = np.array([np.nan, 0.0]), np.array([1.0, 2.0, 3.0])
    observation = np.concatenate([[db.size], db, [dW.size], dW])
    assert _bias_ratio(observation, None) == np.inf
    layers = np.concatenate([[1, 0.0, 1, 1.0], observation])  # a NaN after a finite layer
    assert _bias_ratio(layers, None) == np.inf
