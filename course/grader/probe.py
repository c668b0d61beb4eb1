"""The kernel side of a hidden check: call the student's functions, record what they return.

This is the only grading module that runs inside a student's kernel. It decides nothing:
`check` displays the recorded outputs, and the grader judges them (course.grader.judge).
"""

from __future__ import annotations

import contextlib
import functools
import io
import types
import warnings
from collections.abc import Callable

import numpy as np

from course.grader.model import Broken, Check, MissingName, encode, get_check


class Student:
    """The notebook's namespace, as a check sees it."""

    def __init__(self, namespace: dict):
        self._ns = namespace

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self._ns[name]
        except KeyError:
            raise MissingName(f"the notebook defines no `{name}`") from None
        return _student_function(value) if isinstance(value, types.FunctionType) else value


# How many of the student's functions the probe is inside: `nudged` is for the probe's own
# gradient observations, not a numerical gradient a student's function may borrow (01
# grades the one they write). Code that resets this on purpose is tampering, and still
# only computes a slow, right answer: the README says so.
_IN_STUDENT = [0]


def _student_function(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        _IN_STUDENT[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            _IN_STUDENT[0] -= 1

    return call


@contextlib.contextmanager
def quiet():
    """Run student code with its prints, warnings and stderr swallowed."""
    with (
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        yield


class Outputs(dict):
    """A probe's outputs; `record` runs one piece of student code and keeps what it gave."""

    def record(self, keys: str | list[str], compute: Callable[[], object]) -> None:
        """Store compute() under `keys`; with a list of keys, compute returns one value each.

        If the student's code raises, every one of those keys records what it raised.
        """
        names = [keys] if isinstance(keys, str) else list(keys)
        try:
            with quiet():
                value = compute()
            values = [value] if isinstance(keys, str) else list(value)
            if len(values) != len(names):
                raise ValueError(f"expected {len(names)} results, got {len(values)}")
        except MissingName as exc:
            values = [Broken(str(exc))] * len(names)
        except Exception as exc:  # noqa: BLE001 (any student error fails these keys only)
            text = str(exc).splitlines()[0][:120] if str(exc) else ""
            why = f"raised {type(exc).__name__}" + (f": {text}" if text else "")
            values = [Broken(why)] * len(names)
        for name, value in zip(names, values, strict=True):
            self[name] = _plain(value)


def _plain(value):
    """Student results as plain data: floats, float64 arrays, or Broken (observations: a
    boolean is recorded as the number it is, never read as a verdict)."""
    if isinstance(value, Broken):
        return value
    if value is None:
        return Broken("returned None (is a `return` missing?)")
    if isinstance(value, str | bytes):
        return Broken(f"returned a {type(value).__name__}, not a number or an array")
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return Broken(f"returned {type(value).__name__}, not a number or an array")
    return float(array) if array.ndim == 0 else array


def nudged(f: Callable[[np.ndarray], object], x: np.ndarray, df=None, h: float = 1e-5):
    """Observations for a gradient check: f at copies of x nudged by +h and by -h, one
    element at a time (each value projected on df when f returns an array).

    Returns (plus, minus), each shaped like x. The grader, not the kernel, turns them into
    a centred difference and compares it with the student's gradient (course.checks.common).
    """
    if _IN_STUDENT[0]:
        raise PermissionError(
            "course.grader.probe.nudged is the grader's own: a graded function must compute "
            "its gradient itself"
        )
    x = np.array(x, dtype=np.float64)
    plus, minus = np.zeros_like(x), np.zeros_like(x)
    for ix in np.ndindex(x.shape):
        for sign, into in ((1.0, plus), (-1.0, minus)):
            moved = x.copy()
            moved[ix] = x[ix] + sign * h
            value = np.array(f(moved), dtype=np.float64)
            into[ix] = float(value) if df is None else float(np.sum(value * df))
    return plus, minus


# The seed of each check's inputs in this kernel: set by the grader before a grade cell
# runs (course.grader.inputs.SeedHiddenChecks); the public seed otherwise (`course check`).
# The grader never reads it back: it judges against references it computed itself for
# the seed it chose, so a kernel that changes this only gets inputs nobody graded.
_SEEDS: dict[str, int] = {}


def use_seed(name: str, seed: int) -> None:
    _SEEDS[name] = int(seed)


def probe(check: Check, namespace: dict, seed: int | None = None) -> dict:
    outputs = Outputs()
    seed = check.seed() if seed is None else seed
    try:
        check.probe(Student(namespace), np.random.default_rng(seed), outputs)
    except Exception as exc:  # noqa: BLE001 (a probe stops at the first unrecorded error)
        why = str(exc) if isinstance(exc, MissingName) else f"raised {type(exc).__name__}: {exc}"
        outputs.setdefault("_stopped", Broken(why))
    return dict(outputs)


# ---------------------------------------------------------------- in a grade cell

PROBE_MIME = "application/vnd.everything-leaks.probe+json"


def check(name: str, namespace: dict) -> float:
    """Probe hidden check `name` on the notebook's namespace, and emit what it recorded.

    This runs in the student's kernel, so it decides nothing: it displays the outputs under
    PROBE_MIME, and the grader's `JudgeHiddenChecks` step (course.grader.nbgrader_ext), outside
    the kernel, compares them with the references and writes the verdict into the cell.
    It evaluates to 0.0, so that a grading set-up without that step scores zero, not full.
    """
    from IPython.display import display

    chk = get_check(name)
    outputs = probe(chk, namespace, _SEEDS.get(name))
    payload = {"check": name, "outputs": {k: encode(v) for k, v in outputs.items()}}
    if chk.builds_on:  # the carried functions this check runs through, probed on their own
        payload["carried"] = {
            earlier: {k: encode(v) for k, v in probe(get_check(earlier), namespace).items()}
            for earlier in chk.builds_on
        }
    summary = f"{name}: {len(outputs)} results recorded; the grader judges them (0 until then)."
    display({PROBE_MIME: payload, "text/plain": summary}, raw=True)
    return 0.0
