"""Round 17 of the attacks (the fresh attacker of round 17, on 09 part 9, `diagnose`).

The hidden check `diagnose` hands the student's `diagnose(run)` eight runs made by
`course.runs.make_run` in the student's kernel, and credits 4 points only if all eight
diagnoses equal each run's true leak (the truth is read from the reference's run of the
probe). What was tried, without measuring the runs:

- read_run: the run's objects say what it is. A wrong backward pass is the only kind whose
  model has a non-empty `hidden` (the planted term is a plain attribute of every model
  `run.model()` makes); labels that do not match are the only ones that differ from the
  public digits' labels of the same rows (`course.data.digits()`, looked up by the row's
  bytes: `make_run` takes its rows from that split, then rolls the labels). The rest from
  the run's public numbers (its learning rate against HEALTHY_RATE, W1's scale): no step of
  training, no gradient check, no loss computed. 4 of 4 in about a millisecond a run.
- closure_run: the same from `run.new_model.__closure__` (cells `hidden` and `scale`), for
  a run whose model would hide its `hidden` attribute.
- labels_by_fingerprint, backward_by_attribute: the reference's diagnosis with one of its
  instruments replaced by the reading above (each alone is enough).
- tag_make_run: the student's cell wraps `course.checks.leaks.make_run` and
  `make_edge_run` (the names the probe calls) to tag each run with its kind; `diagnose`
  returns the tag. 4 of 4.
- forge_record: the student's cell wraps `course.grader.probe.Outputs.record` so that the
  diagnoses key records the probe's own truth (the second value of its compute). 4 of 4.
- marked_digits: the student's cell replaces `course.checks.leaks.digits` by the split with
  each label written into a corner pixel; the runs' kinds do not change (the draws do not
  depend on the data's values) and a moved label shows without training. 4 of 4.
- causes_spy: the student's cell replaces `course.checks.leaks.CAUSES` with a tuple subclass
  whose `index` remembers its argument; the probe computes the truth (`CAUSES.index(kind)`
  for each run, in order) before its first call of `diagnose`, which returns them in
  turn. 4 of 4.
- referrers: `gc.get_referrers(run)` finds the probe's (kind, run) tuple (diagnose_runs'
  list): neither the stack nor the seed nor a patch. 4 of 4.
- eq_always: a str subclass whose __eq__ is always True (passes `isinstance(answer, str)`
  and `answer in CAUSES`, and CAUSES.index gives 0 for it): "no leak" seven times, 0.

Closed (the probe computes the true kinds only in the grader's own run, and drops them in
a kernel before the learner's code runs): forge_record, causes_spy, referrers. Declined,
strict xfails (README, "Not protected"): reading the run's code and data (read_run,
closure_run, labels_by_fingerprint, backward_by_attribute), which the assignment hands the
learner on purpose, and patching the grader's code in the kernel to see the inputs it
builds (tag_make_run, marked_digits), as reading the check's seed there. Each is judged
in-process (course.authoring.classroom.judge_in_process, public inputs); the patches of
the grader's modules are undone after each test (in-process they would otherwise stay in
the test process). The slow test grades them for real (`course grade`).
"""

import functools

import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.authoring.variants import source_notebook

ASSIGNMENT, NOTEBOOK, CELL, CHECK = "09_leaks", "leaks", "diagnose_solution", "diagnose"
READING_DECLINED = (
    "declined (README, 'Not protected'): reading a run's code and data is a diagnosis the "
    "assignment allows"
)
PATCHING_DECLINED = (
    "declined (README, 'Not protected'): patching the grader's code in the kernel to see "
    "the inputs it builds, as reading the check's seed there"
)

# Nothing measured: the model's planted term, the digits' own labels, the public numbers.
READ_RUN = """
import numpy as _np
from course.data import digits as _digits
from course.runs import HEALTHY_RATE as _HEALTHY

_split = _digits()
_LABEL_OF = {row.tobytes(): int(lab) for row, lab in zip(_split.X_train, _split.y_train)}


def _labels_moved(run):
    known = _np.array([_LABEL_OF.get(row.tobytes(), -1) for row in run.X_train])
    return _np.mean(known != run.y_train) > 0.5


def diagnose(run):
    model = run.model()
    if getattr(model, "hidden", None):
        return "a wrong backward pass"
    if _labels_moved(run):
        return "labels that do not match the inputs"
    if run.learning_rate > 10 * _HEALTHY[1]:
        return "learning rate too high"
    if run.learning_rate < _HEALTHY[0] / 10:
        return "learning rate too low"
    if _np.std(model.params["W1"]) * _np.sqrt(model.params["W1"].shape[0]) > 5:
        return "initialisation too large"
    return "no leak"
"""

# The same from the closure of run.new_model: what make_run decided, by name.
CLOSURE_RUN = """
import numpy as _np
from course.data import digits as _digits

_split = _digits()
_LABEL_OF = {row.tobytes(): int(lab) for row, lab in zip(_split.X_train, _split.y_train)}


def diagnose(run):
    f = run.new_model
    cells = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__)))
    if cells.get("hidden"):
        return "a wrong backward pass"
    if cells.get("scale", 1.0) != 1.0:
        return "initialisation too large"
    known = _np.array([_LABEL_OF.get(row.tobytes(), -1) for row in run.X_train])
    if _np.mean(known != run.y_train) > 0.5:
        return "labels that do not match the inputs"
    if run.learning_rate > 1.0:
        return "learning rate too high"
    if run.learning_rate < 1e-3:
        return "learning rate too low"
    return "no leak"
"""

_REFERENCE_HEAD = """
def diagnose(run):
    model = run.model()
    ln_c = expected_initial_loss(model.loss(run.X_val[:1]).shape[1])
    if dataset_loss(model, run.X_train, run.y_train, 256) > ln_c + 1:
        return "initialisation too large"
    order, ratios = np.random.default_rng(0), []
    for _ in range(10):
        batch = order.choice(len(run.X_train), run.batch_size, replace=False)
        before = {"W1": model.params["W1"].copy()}
        run.step(model, run.X_train[batch], run.y_train[batch])
        ratios.append(update_ratios(before, {"W1": model.params["W1"]})["W1"])
    if max(ratios) > 0.1:
        return "learning rate too high"
    if max(ratios) < 1e-4:
        return "learning rate too low"
"""

# The reference, its last instrument (a whole training run and a validation loss) replaced
# by a look-up of the rows' labels in the public digits.
LABELS_BY_FINGERPRINT = (
    """
from course.data import digits as _digits

_split = _digits()
_LABEL_OF = {row.tobytes(): int(lab) for row, lab in zip(_split.X_train, _split.y_train)}
"""
    + _REFERENCE_HEAD
    + """
    errors = gradient_check_model(run.model(), run.X_train[:5], run.y_train[:5])
    if max(errors.values()) > 1e-3:
        return "a wrong backward pass"
    known = np.array([_LABEL_OF.get(row.tobytes(), -1) for row in run.X_train])
    if np.mean(known != run.y_train) > 0.5:
        return "labels that do not match the inputs"
    return "no leak"
"""
)

# The reference, its gradient check replaced by reading the model's planted term.
BACKWARD_BY_ATTRIBUTE = (
    _REFERENCE_HEAD
    + """
    if run.model().hidden:
        return "a wrong backward pass"
    trained, _ = run.train()
    if dataset_loss(trained, run.X_val, run.y_val, 256) > 0.8 * ln_c:
        return "labels that do not match the inputs"
    return "no leak"
"""
)

# The probe's makers of runs, wrapped: each run carries its kind.
TAG_MAKE_RUN = """
import course.checks.leaks as _leaks


def _tagging(name):
    make = getattr(getattr(_leaks, name), "__wrapped__", getattr(_leaks, name))

    def tagged(kind, rng, data):
        run = make(kind, rng, data)
        run._kind = kind
        return run

    tagged.__wrapped__ = make
    setattr(_leaks, name, tagged)


_tagging("make_run")
_tagging("make_edge_run")


def diagnose(run):
    return getattr(run, "_kind", "no leak")
"""

# The probe's recorder, wrapped: the diagnoses key records the probe's own truth.
FORGE_RECORD = """
import numpy as _np
import course.grader.probe as _probe

_record = getattr(_probe.Outputs.record, "__wrapped__", _probe.Outputs.record)


def _forging(self, keys, compute):
    if isinstance(keys, list) and keys and str(keys[0]).startswith("diagnoses:"):
        def forged():
            _, truth = compute()
            return [_np.array(truth), _np.array(truth)]
        return _record(self, keys, forged)
    return _record(self, keys, compute)


_forging.__wrapped__ = _record
_probe.Outputs.record = _forging


def diagnose(run):
    return "no leak"
"""

# The probe's digits, replaced by the same split with each row's label written into its
# first pixel (a corner, 0 in nearly every digit) over 1000: the runs are as before but for
# that pixel, their kinds the same (the draws do not depend on the data's values), and a
# moved label shows without training. The backward pass by the student's own gradient
# check, the rest by the public numbers.
MARKED_DIGITS = """
import course.checks.leaks as _leaks
from course.data import digits as _digits
from course.runs import HEALTHY_RATE as _HEALTHY


def _marked():
    split = _digits()
    split.X_train[:, 0] = split.y_train / 1000
    return split


_leaks.digits = _marked


def diagnose(run):
    if np.mean(np.round(run.X_train[:, 0] * 1000) != run.y_train) > 0.5:
        return "labels that do not match the inputs"
    if run.learning_rate > 10 * _HEALTHY[1]:
        return "learning rate too high"
    if run.learning_rate < _HEALTHY[0] / 10:
        return "learning rate too low"
    W1 = run.model().params["W1"]
    if np.std(W1) * np.sqrt(W1.shape[0]) > 5:
        return "initialisation too large"
    errors = gradient_check_model(run.model(), run.X_train[:5], run.y_train[:5])
    if max(errors.values()) > 1e-3:
        return "a wrong backward pass"
    return "no leak"
"""

# The probe's CAUSES, replaced by a tuple that remembers what it was asked: the probe
# computes each run's truth (CAUSES.index(kind), in the runs' order) before it calls
# diagnose once.
CAUSES_SPY = """
import course.checks.leaks as _leaks

_ASKED = []


class _Spy(tuple):
    def index(self, value, *args):
        _ASKED.append(value)
        return tuple.index(self, value, *args)


_leaks.CAUSES = _Spy(tuple(_leaks.CAUSES))


def diagnose(run):
    return str(_ASKED.pop(0)) if _ASKED else "no leak"
"""

# Neither the stack nor the seed nor a patch: the probe keeps each run in a (kind, run)
# tuple, and the garbage collector lists the objects that refer to the run.
REFERRERS = """
import gc as _gc


def diagnose(run):
    for holder in _gc.get_referrers(run):
        if isinstance(holder, tuple) and len(holder) == 2 and holder[1] is run:
            return str(holder[0])
    return "no leak"
"""

# A str that equals everything: passes `isinstance(answer, str) and answer in CAUSES`.
EQ_ALWAYS = """
class _Every(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def diagnose(run):
    return _Every("over-fitting")
"""

ATTACKS = {
    "read_run": READ_RUN,
    "closure_run": CLOSURE_RUN,
    "labels_by_fingerprint": LABELS_BY_FINGERPRINT,
    "backward_by_attribute": BACKWARD_BY_ATTRIBUTE,
    "tag_make_run": TAG_MAKE_RUN,
    "forge_record": FORGE_RECORD,
    "marked_digits": MARKED_DIGITS,
    "causes_spy": CAUSES_SPY,
    "referrers": REFERRERS,
    "eq_always": EQ_ALWAYS,
}


@functools.cache
def _notebook():
    return source_notebook(ASSIGNMENT, NOTEBOOK)


@pytest.fixture(autouse=True)
def _undo_patches():
    """In-process, a student's patch of the grader's modules would stay in this process."""
    import course.checks.leaks as leaks
    import course.grader.probe as probe

    saved = leaks.make_run, leaks.make_edge_run, leaks.digits, leaks.CAUSES, probe.Outputs.record
    yield
    (leaks.make_run, leaks.make_edge_run, leaks.digits, leaks.CAUSES, probe.Outputs.record) = saved


def _judge(code: str) -> float:
    nb = _notebook()
    return judge_in_process(nb, {**solution_sources(nb), CELL: code}, only={CHECK})[CHECK]


def _declined(reason: str, *attacks: str) -> list:
    mark = pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)
    return [pytest.param(name, marks=mark, id=name) for name in attacks]


# Declined routes (README, "Not protected"): each still earns 4, a strict xfail.
DECLINED = _declined(
    READING_DECLINED, "read_run", "closure_run", "labels_by_fingerprint", "backward_by_attribute"
) + _declined(PATCHING_DECLINED, "tag_make_run", "marked_digits")


@pytest.mark.parametrize("attack", DECLINED)
def test_a_declined_route_earns_nothing(attack):
    assert _judge(ATTACKS[attack]) == 0.0


def test_diagnose_earns_nothing_by_recording_the_probes_truth():
    assert _judge(FORGE_RECORD) == 0.0


def test_diagnose_earns_nothing_by_spying_on_the_probes_causes():
    assert _judge(CAUSES_SPY) == 0.0


def test_diagnose_earns_nothing_from_the_runs_referrers():
    assert _judge(REFERRERS) == 0.0


def test_diagnose_earns_nothing_from_a_str_equal_to_everything():
    assert _judge(EQ_ALWAYS) == 0.0


def test_the_reference_keeps_its_diagnose_points():
    """The control: the source solution earns the full 4 on the same judging."""
    nb = _notebook()
    assert judge_in_process(nb, solution_sources(nb), only={CHECK}) == {CHECK: 4.0}


@pytest.mark.slow
def test_diagnose_attacks_graded_for_real_earn_nothing(tmp_path):
    """The routes closed in round 17 (and eq_always), through `course grade` with secret
    seeds in the sandboxed kernel, beside an honest submission."""
    from tests.harness import Batch

    closed = {
        name: ATTACKS[name] for name in ("forge_record", "causes_spy", "referrers", "eq_always")
    }
    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    batch.submit("honest", batch.answered(trim=True))
    for name, code in closed.items():
        batch.submit(name.replace("_", ""), batch.answered({CELL: code}, trim=True))
    done = batch.course_grade()
    if done.returncode not in (0, 1):
        pytest.fail(done.stdout + done.stderr)  # the grading itself failed
    scores = batch.scores()
    if scores["honest"] != batch.max_scores():  # the control
        pytest.fail(f"the reference lost points: {scores['honest']}")
    forged = {name: scores[name.replace("_", "")][CHECK] for name in closed}
    assert all(points == 0.0 for points in forged.values()), forged
