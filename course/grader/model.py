"""The data model of hidden checks: a Check (probe and rules), Rules, Results, Broken values,
the registry that checks modules fill (course.checks finds them), and the JSON form in which
outputs travel."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


class MissingName(Exception):
    """The notebook does not define a name the check needs."""


@dataclass(frozen=True)
class Broken:
    """A sub-check with no usable value, and why: what the code raised, or what it broke."""

    why: str


# The largest difference that rounding alone makes between two processors, or two BLAS
# kernels or thread counts, computing the same thing: 1e-12 relative is thousands of ulps,
# and no real mistake is that small.
ROUNDING_RTOL = 1e-12


# What a self-check's measure says when the student's forward values at the nudged inputs
# are not a correct forward pass's (course.checks.common.centred_error); the judge then
# says whether the forward is off anyway or answers otherwise only while nudged.
NUDGED_FORWARD_OFF = "your forward values at the nudged inputs are not a correct forward pass's"


@dataclass(frozen=True)
class Rule:
    """How the outputs whose key starts with a prefix are judged.

    kind: "close" (the student's observation against the reference's, within rtol),
    "true" (an invariant), "below" (an error measure, at most rtol).
    measure: for "true" and "below", the grader-side function that decides, from
    (the student's observation, the reference's observation) of that key: a float (or a
    reason to fail, str) for "below", True or a reason (str) for "true". The kernel only
    observes (raw results, arrays after a call, forward values at nudged inputs); it never
    sends a conclusion, and nothing it sends is read as a boolean or an error
    (tests/test_observations.py).
    what: the words used in messages, e.g. "gradient"; hint: the likely mistake.
    A "close" rule is never tighter than ROUNDING_RTOL, whatever its rtol: the references
    come from another process, often another processor, whose last bits differ (rtol=0
    stays exact for what is not rounded: shapes, counts, booleans, exact zeros). An
    unchanged input is judged by a snapshot of the same process instead (course.checks.
    common.left_as_given).
    """

    what: str
    kind: str = "close"
    rtol: float = 1e-9
    hint: str = ""
    weight: float = 1.0
    # Credit only if the output "<requires>:<same detail>" passed (each of them, for a
    # tuple): a self-consistency check of a degenerate implementation (all zeros agree with
    # all zeros) earns nothing alone.
    requires: str | tuple[str, ...] | None = None
    # Credit only if every sub-check whose key starts with "<prefix>:" passed, whatever its
    # detail (each prefix of the tuple): a requirement of the whole check, such as its
    # large case (course.checks.common.LARGE_RULE), which a gradient of any case needs.
    requires_every: tuple[str, ...] = ()
    picture: str | None = None  # "curve": if it fails, draw it over the reference band
    measure: Callable[[object, object], object] | None = None
    # The measure reads the student's observation "<uses>:<same detail>" instead of this
    # key's (whose reference value is then a trusted quantity the probe computed, such as
    # an analytic gradient): measure(student's <uses> observation, reference of this key).
    uses: str | None = None
    # If any sub-check of this rule fails, the cell earns at most this share of its points:
    # a wrong forward or a wrong gradient must not earn most of its cell, however many
    # other sub-checks pass (course.grader.judge.score).
    cap: float | None = None
    # An error contract: the observation must be the call raising this exception (its
    # Broken record, "raised ValueError ..."), as the reference does.
    raises: str | None = None
    # ((prefix, hint), ...): while the sub-check "<prefix>:<same detail>" fails too, the
    # likely mistake is the first such hint, not `hint` (a dk hint about the transpose is
    # wrong when dq, computed from the same softmax Jacobian, is off as well). A prefix
    # with a ":" is a whole key, of any case (the block's output without a mask). For a
    # per-gradient sub-check "grad:dWx, <case>" with no "<prefix>:dWx, <case>", the one of
    # its case, "<prefix>:<case>" (a forward output). Such failures come last in the report,
    # after the failure that explains them.
    hint_unless: tuple[tuple[str, str], ...] = ()
    # ((what a sub-check's detail starts with, its likely mistake), ...): said instead of
    # `hint` for those sub-checks (one parameter's own gradient, "grad:b1, <case>").
    hints: tuple[tuple[str, str], ...] = ()
    # For a "close" rule: entries smaller than this share of the reference's largest are
    # judged at that scale. Where a result is a cancellation (a saturated softmax's
    # Jacobian: p * (dp - sum(dp * p)) with p near 0 or 1), its tiny entries are rounding
    # noise that differs between correct implementations (max-shift or log-sum-exp) by far
    # more than rtol of themselves, while a real mistake moves the large ones.
    noise_floor: float = 0.0
    # For a "close" rule: factors(reference) -> {k: (words, hint)}: a value k times the
    # reference's (to noise_floor) is said to be `words`, with that likely mistake, before
    # any of course.grader.judge.CLASSIC_FACTORS: a factor the student knows from the
    # shapes, such as sqrt(d) of a gradient (d, q's last axis), reveals no expected value.
    factors: Callable[[np.ndarray], dict[float, tuple[str, str]]] | None = None
    # For a "close" rule: slips(got, want, case) -> (words, likely mistake) or None, where
    # case is {prefix: the reference's observation "<prefix>:<same detail>"}: a known slip
    # recognised grader-side from a failing value (each column of a batch norm's dx off by
    # one factor, 1 / |gamma|, read from the reference's output), said before the generic
    # words; never an expected value.
    slips: Callable[[np.ndarray, np.ndarray, dict], tuple[str, str] | None] | None = None
    # For a "close" rule: the likely mistake of right values in a shape that only adds
    # leading axes of length 1 to the reference's ((1, D) for (D,): keepdims=True). It fails,
    # without capping the cell (cap is for wrong values; these broadcast to the right ones).
    shape_hint: str = ""

    def __post_init__(self):
        if self.kind not in ("close", "true", "below"):
            raise ValueError(f"unknown rule kind {self.kind!r}")
        if self.kind != "close" and self.measure is None:
            raise ValueError(
                f"a {self.kind!r} rule ({self.what!r}) needs a grader-side `measure`: the "
                "kernel reports observations, never conclusions"
            )


@dataclass(frozen=True)
class Result:
    key: str
    passed: bool
    weight: float
    message: str = ""
    caps: bool = True  # False: a failure that caps nothing (Rule.shape_hint)


@dataclass
class Check:
    name: str
    notebook: str  # "<assignment>/<notebook stem>", where its reference values live
    points: float
    # probe(student, rng, outputs): call the student's code (a course.grader.probe.Student),
    # record into `outputs` (a course.grader.probe.Outputs; this module is below that one).
    probe: Callable[[object, np.random.Generator, dict], None]
    rules: dict[str, Rule]
    # {earlier check: the functions it grades}: code this check runs through, written in an
    # earlier exercise of the same notebook or carried forward from an earlier assignment
    # (course.carry). The kernel probes those checks too, so that a failure caused by one
    # of them names the function (and its assignment) instead of blaming this exercise's
    # code. The functions: their names in words (every failure of that check counts), or
    # {what a sub-check's key, or its detail after "prefix:", starts with: the function it
    # runs}, listing only what this check runs, the most basic first: then only those
    # sub-checks count, and only the functions whose sub-checks fail are named.
    builds_on: dict[str, str | dict[str, str]] = field(default_factory=dict)
    # timed(seconds) -> {key: observation}: what the grader observes itself, outside the
    # kernel, from the seconds its grade cell took (measured by the grader's executor); it
    # replaces the kernel's values of those keys in a grading run. Only 06's speed.
    timed: Callable[[float | None], dict] | None = None
    # The checks of the same notebook whose backward passes this one trains through (a
    # training check): it is credited only if each of them passed the sub-checks every one
    # of its gradients requires (Rule.requires_every: written by hand, the large case), as
    # judged from that check's own grade cell (course.grader.judge.by_hand_failure); else a
    # numerical gradient, which those sub-checks refuse, would earn the training's points.
    trains_through: tuple[str, ...] = ()

    def seed(self) -> int:
        """The public seed: inputs of `course check` and of the committed references/.
        A grading run uses a secret one instead (course.grader.inputs)."""
        return public_seed(self.name)


def functions_of(spec: str | dict[str, str], keys: list[str]) -> list[str]:
    """The functions that the failing sub-checks `keys` of an earlier check run (see
    Check.builds_on), in the order `spec` lists them (the most basic first); [] when none
    of those sub-checks is one that this check runs through."""
    if isinstance(spec, str):
        return [spec] if keys else []
    named = [
        function
        for start, function in spec.items()
        if any(key.startswith(start) or key.partition(":")[2].startswith(start) for key in keys)
    ]
    return list(dict.fromkeys(named))


def public_seed(name: str) -> int:
    return zlib.crc32(name.encode())


@dataclass(frozen=True)
class Assignment:
    """What an assignment is, declared once in its checks module as `ASSIGNMENT`.

    The start page, nbgrader_config.py's timeouts, the README's table (a
    test compares them) and the mutation tests all read this declaration, so adding an
    assignment is three files: its source, its checks module, its variants.
    """

    id: str  # the folder under source/ and release/, e.g. "04_optimisers"
    notebook: str  # the notebook's name in that folder, without .ipynb
    title: str
    builds: str  # what the learner builds, in words
    leak: str  # the leak it shows, in words
    slow_cells: frozenset[str] = frozenset()  # grade cells that train: a longer timeout

    @property
    def key(self) -> str:
        """ "<assignment>/<notebook>": how checks and references name the notebook."""
        return f"{self.id}/{self.notebook}"


CHECKS: dict[str, Check] = {}


def register(check: Check) -> Check:
    if check.name in CHECKS:
        raise ValueError(f"two checks named {check.name!r}")
    CHECKS[check.name] = check
    return check


def rule_for(check: Check, key: str) -> Rule:
    prefix = key.partition(":")[0]
    if prefix not in check.rules:
        raise KeyError(f"check {check.name!r} has no rule for outputs named {prefix!r}")
    return check.rules[prefix]


def encode(value):
    if isinstance(value, Broken):
        return {"broken": value.why}
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "shape": list(value.shape)}
    return value


def decode(value):
    if isinstance(value, dict) and "broken" in value:
        return Broken(str(value["broken"]))
    if isinstance(value, dict) and "array" in value:
        return np.array(value["array"], dtype=np.float64).reshape(value["shape"])
    return value
