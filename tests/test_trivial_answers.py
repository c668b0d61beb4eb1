"""A trivial answer earns nothing in any hidden check, on any secret seed (issue 55).

A hidden check draws its secret inputs from a seed (course.grader.inputs). A draw that makes
the expected value trivial (zero, a constant, the input itself) credits a trivial answer on
the seeds where it happens: 09's activation_stats drew a tanh scale from 0.5, where nothing
saturates, and constant zeros earned the saturated share's sub-check on 211 of 2000 seeds;
the round-16 test that it "earns nothing" failed one CI run in three. A lottery like that
is a bug of the draw (or of the rule), never of the test: this file finds it on every check.

For each check, every function the probe reads from the learner's notebook (a class: each
method it defines but __init__, kept as the solution's) is replaced at once, everything
else staying the solution's, by:

- zeros / ones: the solution's result (run on copies of the arguments: its side effects,
  such as a bn_param's running averages, are not the trivial answer's) with every number
  and array mapped to zeros (ones) of its shape, a decision to always False (True), a
  string to the first the answer returned (a constant diagnosis); tuples, lists, dicts and
  the class's own objects mapped element by element;
- first: the first array (or number) argument, unchanged, where the result has its shape
  (zeros elsewhere);
- nothing: returns None without doing anything (a `backward` that sets no gradient);
- blank: raises NotImplementedError, as the released stub does.

Judged as the grader judges, against the solutions' outputs on the same seed (computed
trusted), on the seeds of tests/test_inputs_sweep.py: a trivial answer earns no more than
the blank, which earns 0 (a graded class's own __init__, kept, earns the same on every
seed). TRULY_TRIVIAL lists the answers right on every seed by the check's design (the same
points on every seed, or it fails). What this found, and fixed at the draw or the rule:
adam's and rmsprop's epsilon case (weights left as given were within 1e-6: 200 of 200
seeds), attention's masks (one key attended: dq and dk exactly 0 on 10 of 50 seeds), and
the `inputs` sub-check of two_layer_net and fully_connected_net (X, y and params left
alone, credited without a loss: every seed).

`make test` draws SEEDS (8) seeds a check, fewer for the costliest (FEW_SEEDS: about 45 s
of CPU for the file); `make sweep` (SWEEP_SEEDS=1000) that many for every check but those
that train, which draw SLOW_CHECKS' count of tests/test_inputs_sweep.py, its COSTLY_CHECKS
(a quarter) and value_accumulation (SWEEP_FEW).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os

import numpy as np
import pytest

from course.checks import checks_by_name, common, convolution
from course.grader import judge, probe
from tests.test_inputs_sweep import COSTLY_CHECKS, SLOW_CHECKS, namespace

SWEEP = "SWEEP_SEEDS" in os.environ
SEEDS = int(os.environ.get("SWEEP_SEEDS", "8"))
# In `make test` (under a minute of CPU, measured with --durations on a loaded 2-core
# machine: 24 seeds of every check took 390 s): the costliest checks draw these few, and
# three none at all (a trivial Value's graph, a whole MLP's training, eight diagnosed runs:
# 9 to 72 s a seed); `make sweep` draws SWEEP_SEEDS, or SLOW_CHECKS' count for the checks
# that train.
FEW_SEEDS = {
    "value_accumulation": 0,
    "mlp_training": 0,
    "diagnose": 0,
    "normalised_training": 1,
    "convnet_training": 1,
    "conv_fast_speed": 1,
    "finished_net": 1,
    "attention_backward": 1,
    "lstm_step": 1,
    "block": 1,
    "batchnorm_backward_alt": 2,
    "conv_backward_naive": 1,
    "temporal_softmax_loss": 1,
    "multihead_backward": 1,
    "transformer_training": 1,
    "fully_connected_net": 1,
    "two_layer_net": 2,
    "affine_backward": 2,
    "batchnorm_backward": 2,
    "rnn_step": 2,
    "layernorm_backward": 2,
    "value_backward": 2,
    "conv_forward_naive": 2,
    "lstm_sequence": 2,
    "dropout_forward": 2,
}
# The large case of the by-hand backward passes (course.checks.common.record_large): plain
# normal draws no trivial answer is near; judged on the first seed only.
LARGE_SEEDS = 1
# In `make sweep`: a trivial Value's probe takes about 9 s a seed (value_accumulation);
# the costliest checks of tests/test_inputs_sweep.py (COSTLY_CHECKS, 1 to 2 s a seed here)
# draw a quarter of SWEEP_SEEDS.
SWEEP_FEW = {"value_accumulation": 50}
KINDS = ("blank", "zeros", "ones", "first", "nothing")
CHECKS = sorted(checks_by_name().values(), key=lambda c: c.name)


def seeds_of(name: str) -> list[int]:
    """The fixed secret seeds one check draws (those of tests/test_inputs_sweep.py)."""
    if SWEEP:
        count = SLOW_CHECKS.get(name) or SWEEP_FEW.get(name) or SEEDS
        count = count // 4 if name in COSTLY_CHECKS else count
    else:
        count = FEW_SEEDS.get(name, SEEDS)
    return [int(s) for s in np.random.default_rng(2026).integers(0, 2**63, max(SEEDS, 1000))][
        :count
    ]


# ---------------------------------------------------------------- the trivial answers


def _mapped(value, how, first, cls, memo):
    """value with every number and array replaced as `how` says (zeros, ones, first), and
    every string by the first this answer returned (a constant: "no leak" to every run)."""
    if isinstance(value, str):
        return memo.setdefault("str", value)
    if isinstance(value, bool | np.bool_):  # a decision: always no (zeros), always yes
        return how == "ones"
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "bfciu":
        if how == "first" and np.shape(first) == value.shape:
            return np.array(first, dtype=value.dtype)
        return (np.ones_like if how == "ones" else np.zeros_like)(value)
    if isinstance(value, float | int | np.number):
        if how == "first" and np.ndim(first) == 0 and first is not None:
            return type(value)(first)
        return type(value)(1 if how == "ones" else 0)
    if isinstance(value, tuple | list):
        return type(value)(_mapped(v, how, first, cls, memo) for v in value)
    if isinstance(value, dict):
        return {k: _mapped(v, how, first, cls, memo) for k, v in value.items()}
    if cls is not None and isinstance(value, cls):  # the class's own objects (a Value)
        twin = copy.copy(value)
        for attr, v in vars(value).items():
            if isinstance(v, float | int | np.ndarray) and not isinstance(v, bool):
                setattr(twin, attr, _mapped(v, how, first, cls, memo))
        return twin
    return value


def _plain(value) -> bool:
    """A value _mapped maps: a number, array, string, container, or None."""
    return value is None or isinstance(
        value, str | bytes | bool | float | int | np.number | np.ndarray | tuple | list | dict
    )


def _first(args) -> object:
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind in "fciu":
            return a
        if isinstance(a, float | int | np.number) and not isinstance(a, bool):
            return a
    return None


def _detached(args: tuple, method: bool) -> tuple:
    """Copies of a call's arguments; `self` (method) shallow, with copies of its arrays,
    dicts and lists (a net's parameters, its normalisation state), not of other objects
    (a Value's graph)."""
    if not method or not args:
        return copy.deepcopy(args)
    self = copy.copy(args[0])
    for attr, v in vars(args[0]).items():
        if isinstance(v, np.ndarray | dict | list):
            setattr(self, attr, copy.deepcopy(v))
    return (self, *copy.deepcopy(args[1:]))


def trivial(function, how: str, cls=None, method: bool = False):
    """The trivial answer `how` in place of `function` (the solution's)."""

    memo: dict = {}

    def answer(*args, **kwargs):
        if how == "blank":
            raise NotImplementedError("a blank answer")
        if how == "nothing":
            return None
        # The solution runs on copies: its side effects (running averages kept in a
        # bn_param, state in a config, a net's parameters) are not the trivial answer's.
        first = _first(args[1:] if method else args)
        value = function(*_detached(args, method), **copy.deepcopy(kwargs))
        handed = [a for a in args if type(a) is type(value) and not _plain(value)]
        if handed:  # an object of the course's (09's fixed Run): the one handed, unchanged
            return handed[0]
        return _mapped(value, how, first, cls, memo)

    return answer


def own_methods(cls) -> list[str]:
    """The methods a learner writes in a graded class: all it defines but __init__."""
    return [
        name
        for name, value in vars(cls).items()
        if callable(value) and not isinstance(value, type) and name != "__init__"
    ]


@functools.cache
def _graded(name: str) -> tuple[str, ...]:
    check = checks_by_name()[name]
    return tuple(graded_names(check, namespace(check.notebook)))


def graded(check) -> list[str]:
    """The graded names of a check, found once per process."""
    return list(_graded(check.name))


def graded_names(check, ns: dict) -> list[str]:
    """The names the check's probe reads from the notebook (its graded functions)."""
    read = []

    class Recording(dict):
        def __getitem__(self, key):
            read.append(key)
            return dict.__getitem__(self, key)

    with contextlib.redirect_stdout(io.StringIO()):
        probe.probe(check, Recording(ns), seeds_of(check.name)[0])
    return sorted({n for n in read if callable(ns.get(n))})


@contextlib.contextmanager
def replaced(ns: dict, names: list[str], how: str):
    """The namespace with `names` replaced by the trivial answer `how` (a class: its methods
    patched in place, for the objects its methods create; restored afterwards)."""
    namespace_ = dict(ns)
    undo = []
    try:
        for name in names:
            value = ns[name]
            if isinstance(value, type):
                for attr in own_methods(value):
                    undo.append((value, attr, vars(value)[attr]))
                    setattr(value, attr, trivial(vars(value)[attr], how, value, method=True))
            else:
                namespace_[name] = trivial(value, how)
        yield namespace_
    finally:
        for cls, attr, original in reversed(undo):
            setattr(cls, attr, original)


# ---------------------------------------------------------------- judged as the grader does


def points(check, outputs: dict, reference: dict) -> float:
    seen = {k: judge.observation(v) for k, v in outputs.items()}
    return judge.score(check, judge.judge(check, seen, reference))


def probed(check, ns: dict, seed: int, trusted: bool = False) -> dict:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with probe.trusted() if trusted else contextlib.nullcontext():
            return probe.probe(check, ns, seed)


def trivial_points(check, seed: int, index: int = 0, alone: bool = False) -> dict:
    """{(names replaced, how): (points, blank's points)} of one check on one seed: every
    graded name at once ("*"); with `alone`, also each name alone beside that name left
    blank (measured by hand, not asserted: the rest of the check is rightly earned)."""
    ns = namespace(check.notebook)
    names = graded(check)
    common.LARGE_CASES[0] = index < LARGE_SEEDS
    try:
        reference = probed(check, ns, seed, trusted=True)
        reference = {k: judge.observation(v) for k, v in reference.items()}
        found = {}
        groups = [("*", names)] + ([(n, [n]) for n in names] if alone and len(names) > 1 else [])
        for label, group in groups:
            blank = None
            for how in KINDS:
                with replaced(ns, group, how) as variant:
                    got = points(check, probed(check, variant, seed), reference)
                blank = got if how == "blank" else blank
                found[(label, how)] = (got, blank)
        return found
    finally:
        common.LARGE_CASES[0] = True


# ---------------------------------------------------------------- the tests

# Trivial answers right on every seed by the check's design, not a draw's: {(check, how):
# why}. Their points must be the same on every seed (a lottery is still a failure).
TRULY_TRIVIAL = {
    ("dropout_backward", "first"): "in test mode dropout's backward pass is the identity: "
    "dout returned as it came is dx (0.28 of 1 point, the test-mode sub-check)",
    ("causal_mask", "ones"): "the causal mask of T = 1 is [[True]]: all ones is right for "
    "that case (0.25 of 1 point)",
    **{
        ("fix", how): "09's healthy run needs no change: the run handed back is its fix "
        "(0.67 of 4 points, one run of six)"
        for how in ("zeros", "ones", "first")
    },
}


@pytest.fixture
def no_yardstick(monkeypatch):
    """The speed check's yardstick runs for as long as it needs to time (up to 3 s a call):
    the verdict on a trivial answer does not depend on it."""
    monkeypatch.setattr(convolution, "YARDSTICK_SECONDS", (0.0, 0.0))


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_a_trivial_answer_earns_nothing_on_any_seed(check, no_yardstick):
    """Every graded name of the check trivial at once: no more points than blanks (0, or
    what a graded class's own __init__, kept, earns: the same on every seed)."""
    seeds = seeds_of(check.name)
    if not seeds:
        pytest.skip(f"{check.name}: in `make sweep` only (FEW_SEEDS)")
    classes = any(isinstance(namespace(check.notebook).get(n), type) for n in graded(check))
    earned: dict[str, dict[float, list[int]]] = {}
    for index, seed in enumerate(seeds):
        for (_, how), (got, blank) in trivial_points(check, seed, index).items():
            more = got if how == "blank" else round(got - blank, 2)
            earned.setdefault(how, {}).setdefault(more, []).append(seed)
    bad = []
    for how, by_points in earned.items():
        allowed = (check.name, how) in TRULY_TRIVIAL or (how == "blank" and classes)
        if len(by_points) > 1 or (not allowed and set(by_points) != {0.0}):
            shares = ", ".join(f"{p} on {len(s)} (seed {s[0]})" for p, s in by_points.items())
            bad.append(f"{how}: {shares} of {len(seeds)} seeds")
    assert not bad, f"{check.name}, every graded name trivial, points:\n" + "\n".join(bad)
