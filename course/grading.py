"""Hidden checks: probe a student's functions on grader-chosen inputs, judge the results.

A check has two halves, kept apart on purpose:
- `probe(student, rng, outputs)` calls the student's functions on inputs drawn from a
  generator seeded by the check's name, and records what they return (floats, float64
  arrays, or `Broken` with the reason), one key per sub-check. An exception fails only the
  keys it touches.
- `judge(check, outputs, reference)` compares those outputs with the same probe run on
  the source solutions (`references/`, computed by `course references`), key by key,
  under the `Rule` that the key's prefix names.

The halves run in different places. A grade cell calls `check(name, globals())` in the
student's kernel, which only probes and displays the outputs; `verdict` judges them in
the grader's process (course.nbgrader_ext.JudgeHiddenChecks), so student code never sees
a reference value and cannot write its own score. Reports say what went wrong and the
likely mistake, never an expected value.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from course.paths import references_dir


class MissingName(Exception):
    """The notebook does not define a name the check needs."""


@dataclass(frozen=True)
class Broken:
    """A sub-check with no usable value, and why: what the code raised, or what it broke."""

    why: str


@dataclass(frozen=True)
class Rule:
    """How the outputs whose key starts with a prefix are judged.

    kind: "close" (to the reference, within rtol), "true" (an invariant the student's
    outputs must satisfy), "below" (the student's value, an error measure, under rtol).
    what: the words used in messages, e.g. "gradient"; hint: the likely mistake.
    """

    what: str
    kind: str = "close"
    rtol: float = 1e-9
    hint: str = ""
    weight: float = 1.0
    # Credit only if the output "<requires>:<same detail>" passed: a self-consistency check
    # of a degenerate implementation (all zeros agree with all zeros) earns nothing alone.
    requires: str | None = None
    picture: str | None = None  # "curve": if it fails, draw it over the reference band


@dataclass(frozen=True)
class Result:
    key: str
    passed: bool
    weight: float
    message: str = ""


@dataclass
class Check:
    name: str
    notebook: str  # "<assignment>/<notebook stem>", where its reference values live
    points: float
    # probe(student, rng, outputs): call the student's code, record into `outputs`.
    probe: Callable[[Student, np.random.Generator, Outputs], None]
    rules: dict[str, Rule]

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())


CHECKS: dict[str, Check] = {}


def register(check: Check) -> Check:
    if check.name in CHECKS:
        raise ValueError(f"two checks named {check.name!r}")
    CHECKS[check.name] = check
    return check


def _load_checks() -> None:
    # Importing the assignment modules registers their checks.
    from course.checks import load_all

    load_all()


def checks_by_name() -> dict[str, Check]:
    _load_checks()
    return CHECKS


def get_check(name: str) -> Check:
    _load_checks()
    if name not in CHECKS:
        raise KeyError(f"no hidden check named {name!r}; known: {sorted(CHECKS)}")
    return CHECKS[name]


class Student:
    """The notebook's namespace, as a check sees it."""

    def __init__(self, namespace: dict):
        self._ns = namespace

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._ns[name]
        except KeyError:
            raise MissingName(f"the notebook defines no `{name}`") from None


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
    """Student results as plain data: floats, booleans, float64 arrays, or Broken."""
    if isinstance(value, Broken | bool | np.bool_):
        return value if isinstance(value, Broken) else bool(value)
    if value is None:
        return Broken("returned None (is a `return` missing?)")
    if isinstance(value, str | bytes):
        return Broken(f"returned a {type(value).__name__}, not a number or an array")
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return Broken(f"returned {type(value).__name__}, not a number or an array")
    return float(array) if array.ndim == 0 else array


# ---------------------------------------------------------------- judging


CLASSIC_FACTORS = {
    -1.0: "has the right size but the wrong sign",
    2.0: "is twice the expected value (a contribution counted twice? h instead of 2h?)",
    0.5: "is half the expected value (a contribution missing?)",
    -2.0: "is twice the expected value, with the wrong sign",
    -0.5: "is half the expected value, with the wrong sign",
}


def _describe_mismatch(got: np.ndarray, want: np.ndarray, rtol: float) -> str:
    """Say how `got` differs from `want` without revealing `want`."""
    if got.shape != want.shape:
        if got.shape == want.shape[::-1] and got.ndim == 2:
            return f"has shape {got.shape}, the transpose of the expected {want.shape}"
        return f"has shape {got.shape}, expected {want.shape}"
    if not np.all(np.isfinite(got)):
        return "contains NaN or infinity (an overflow, or a log or division of zero?)"
    if want.size and np.all(got == 0) and np.any(want != 0):
        return "is all zeros (nothing was propagated or accumulated here?)"
    # A classic factor (a sign, a doubled or halved gradient) is worth naming; any other
    # ratio, or one of a single number, would tell the student the expected value.
    if np.sum(np.abs(want) > 1e-12) > 1:
        for k, words in CLASSIC_FACTORS.items():
            if np.allclose(got, k * want, rtol=1e-6, atol=0):
                return words
    if want.size == 1:
        # With one number, its relative error and the student's own value give the
        # expected value away: say only that it is off.
        return f"is off, beyond the tolerance ({rtol:.0e})"
    errors = np.abs(got - want) / np.maximum(1e-8, np.abs(got) + np.abs(want))
    wrong = int(np.sum(errors > rtol))
    where = f" at {wrong} of {want.size} entries"
    return f"is off: relative error {float(errors.max()):.1e}{where} (tolerance {rtol:.0e})"


def judge_one(key: str, got, want, rule: Rule) -> Result:
    label = f"{rule.what} {key.partition(':')[2]}".strip()
    if isinstance(got, Broken):
        return Result(key, False, rule.weight, f"{label}: {got.why}")
    if got is None:
        return Result(key, False, rule.weight, f"{label}: not computed")
    hint = f" Likely mistake: {rule.hint}" if rule.hint else ""
    if rule.kind == "true":
        ok = bool(got) is True
        return Result(key, ok, rule.weight, "" if ok else f"{label}: does not hold.{hint}")
    if rule.kind == "below":
        value = float(got) if not isinstance(got, bool) else float("nan")
        ok = value <= rule.rtol
        msg = f"{label}: {value:.1e}, above {rule.rtol:.0e}.{hint}"
        return Result(key, ok, rule.weight, "" if ok else msg)
    got_a = np.asarray(got, dtype=np.float64)
    want_a = np.asarray(want, dtype=np.float64)
    ok = (
        got_a.shape == want_a.shape
        and bool(np.all(np.isfinite(got_a)))
        and bool(
            np.all(
                np.abs(got_a - want_a)
                <= rule.rtol * np.maximum(1e-8, np.abs(got_a) + np.abs(want_a))
            )
        )
    )
    if ok:
        return Result(key, True, rule.weight)
    return Result(
        key, False, rule.weight, f"{label} {_describe_mismatch(got_a, want_a, rule.rtol)}.{hint}"
    )


def rule_for(check: Check, key: str) -> Rule:
    prefix = key.partition(":")[0]
    if prefix not in check.rules:
        raise KeyError(f"check {check.name!r} has no rule for outputs named {prefix!r}")
    return check.rules[prefix]


def judge(check: Check, outputs: dict, reference: dict) -> list[Result]:
    """One Result per reference key; a key the student's probe never reached fails."""
    stopped = outputs.get("_stopped")  # why the probe ended early, e.g. a missing name
    results = {
        key: judge_one(key, outputs.get(key, stopped), want, rule_for(check, key))
        for key, want in reference.items()
    }
    for key, result in results.items():
        rule = rule_for(check, key)
        detail = key.partition(":")[2]
        needed = results.get(f"{rule.requires}:{detail}") if rule.requires else None
        if rule.requires and result.passed and not (needed and needed.passed):
            label = f"{rule.what} {detail}".strip()
            why = f"{label}: not credited while the {rule.requires} check of it fails"
            results[key] = Result(key, False, rule.weight, why)
    return list(results.values())


def score(check: Check, results: list[Result]) -> float:
    """Points earned: the passed share of the weights, floored to hundredths."""
    total = sum(r.weight for r in results)
    if total == 0:
        return 0.0
    earned = check.points * sum(r.weight for r in results if r.passed) / total
    return math.floor(earned * 100 + 1e-9) / 100


def report(check: Check, results: list[Result], points: float, limit: int = 8) -> str:
    """The verdict in words: the score, then each failure (one line for the many that share
    a cause, such as every sub-check raising NotImplementedError)."""
    passed = sum(r.passed for r in results)
    lines = [
        f"{check.name}: {points:g} of {check.points:g} points "
        f"({passed} of {len(results)} sub-checks passed)"
    ]
    groups: dict[str, list[Result]] = {}
    for r in results:
        if not r.passed:
            cause = r.message.partition(": ")[2]
            groups.setdefault(cause if cause.startswith(SHARED_CAUSES) else r.message, []).append(r)
    for shown, (cause, members) in enumerate(groups.items()):
        if shown == limit:
            lines.append(f"  ... and {len(groups) - limit} more failures")
            break
        if len(members) == 1:
            lines.append(f"  FAIL {members[0].message}")
        else:
            first = members[0].message.partition(": ")[0]
            lines.append(f"  FAIL {len(members)} sub-checks ({first}, ...): {cause}")
    return "\n".join(lines)


# Causes that many sub-checks share; reported once.
SHARED_CAUSES = ("raised ", "the notebook defines no", "not credited while")


# ---------------------------------------------------------------- references


def reference_path(notebook: str) -> Path:
    return references_dir() / f"{notebook}.json"


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


def load_reference(check: Check) -> dict:
    path = reference_path(check.notebook)
    if not path.exists():
        raise FileNotFoundError(f"no reference values at {path}: run `course references`")
    data = json.loads(path.read_text())
    if check.name not in data:
        raise KeyError(f"{path} has no reference for {check.name!r}: run `course references`")
    return {key: decode(v) for key, v in data[check.name].items()}


def probe(check: Check, namespace: dict) -> dict:
    outputs = Outputs()
    try:
        check.probe(Student(namespace), np.random.default_rng(check.seed()), outputs)
    except Exception as exc:  # noqa: BLE001 (a probe stops at the first unrecorded error)
        why = str(exc) if isinstance(exc, MissingName) else f"raised {type(exc).__name__}: {exc}"
        outputs.setdefault("_stopped", Broken(why))
    return dict(outputs)


# ---------------------------------------------------------------- in a grade cell

PROBE_MIME = "application/vnd.everything-leaks.probe+json"


def check(name: str, namespace: dict) -> float:
    """Probe hidden check `name` on the notebook's namespace, and emit what it recorded.

    This runs in the student's kernel, so it decides nothing: it displays the outputs under
    PROBE_MIME, and the grader's `JudgeHiddenChecks` step (course.nbgrader_ext), outside
    the kernel, compares them with the references and writes the verdict into the cell.
    It evaluates to 0.0, so that a grading set-up without that step scores zero, not full.
    """
    from IPython.display import display

    chk = get_check(name)
    outputs = probe(chk, namespace)
    payload = {"check": name, "outputs": {k: encode(v) for k, v in outputs.items()}}
    summary = f"{name}: {len(outputs)} results recorded; the grader judges them (0 until then)."
    display({PROBE_MIME: payload, "text/plain": summary}, raw=True)
    return 0.0


def verdict(name: str, payload: dict | None, why_missing: str = "") -> tuple[float, str]:
    """Grader side: (points, report) for the probe payload a grade cell emitted (or None)."""
    points, text, _ = verdict_with_pictures(name, payload, why_missing, pictures=False)
    return points, text


def verdict_with_pictures(
    name: str, payload: dict | None, why_missing: str = "", pictures: bool = True
) -> tuple[float, str, list[bytes]]:
    """(points, report, PNGs for the feedback): see course.feedback_figures."""
    chk = get_check(name)
    if payload is None:
        reason = why_missing or "the hidden check did not run"
        return 0.0, f"{name}: 0 of {chk.points:g} points ({reason})", []
    outputs = {key: decode(value) for key, value in payload.get("outputs", {}).items()}
    reference = load_reference(chk)
    results = judge(chk, outputs, reference)
    points = score(chk, results)
    pngs = []
    if pictures:
        from course.feedback_figures import pictures as draw

        pngs = draw(chk, outputs, reference, results)
    return float(points), report(chk, results, points), pngs
