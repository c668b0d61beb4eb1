"""The grader side of a hidden check: judge a probe's outputs against the references.

Runs in the grader's process, never in a student's kernel. Reports say what went wrong and
the likely mistake, never an expected value.
"""

from __future__ import annotations

import math
import re

import numpy as np

from course.checks import get_check
from course.gradcheck import relative_errors
from course.grader.model import (
    NUDGED_FORWARD_OFF,
    ROUNDING_RTOL,
    Broken,
    Check,
    Result,
    Rule,
    decode,
    functions_of,
    rule_for,
)
from course.grader.references import load_reference

# ---------------------------------------------------------------- judging


CLASSIC_FACTORS = {
    -1.0: "has the right size but the wrong sign",
    2.0: "is twice the expected value (a contribution counted twice? h instead of 2h?)",
    0.5: "is half the expected value (a contribution missing?)",
    -2.0: "is twice the expected value, with the wrong sign",
    -0.5: "is half the expected value, with the wrong sign",
}


def close_errors(got: np.ndarray, want: np.ndarray, noise_floor: float = 0.0) -> np.ndarray:
    """The relative error of each entry (course.gradcheck.relative_errors); with a noise
    floor (Rule.noise_floor), an entry smaller than that share of want's largest is
    measured against that instead of against itself."""
    errors = relative_errors(got, want)
    if noise_floor and want.size and got.shape == want.shape:
        scale = noise_floor * float(np.max(np.abs(want)))
        with np.errstate(all="ignore"):
            floored = np.abs(got / 2 - want / 2) / (scale / 2)
        small = (np.abs(got) + np.abs(want)) < scale
        errors = np.where(small, floored, errors)
    return errors


def _describe_mismatch(
    got: np.ndarray, want: np.ndarray, rtol: float, noise_floor: float = 0.0
) -> str:
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
    errors = close_errors(got, want, noise_floor)
    wrong = int(np.sum(errors > rtol))
    where = f" at {wrong} of {want.size} entries"
    return f"is off: relative error {float(errors.max()):.1e}{where} (tolerance {rtol:.0e})"


def _named_factor(got: np.ndarray, want: np.ndarray, rule: Rule) -> tuple[str, str] | None:
    """(words, likely mistake) of the rule's own factor (Rule.factors) that got is of want,
    if any: judged like the rule, entry by entry to 1e-6 (a factor of one number would give
    the expected value away)."""
    if rule.factors is None or got.shape != want.shape or np.sum(np.abs(want) > 1e-12) < 2:
        return None
    if not np.all(np.isfinite(got)):
        return None
    for k, named in rule.factors(want).items():
        if np.all(close_errors(got, k * want, rule.noise_floor) <= 1e-6):
            return named
    return None


def _keepdims_of(got: np.ndarray, want: np.ndarray, rule: Rule) -> bool:
    """Whether got is want's values in a shape with extra leading axes of length 1 only."""
    if not rule.shape_hint or got.shape == want.shape or got.size != want.size:
        return False
    if np.broadcast_shapes(got.shape, want.shape) != got.shape:
        return False  # (D, 1) for (D,) would broadcast to (D, D)
    flat = got.reshape(want.shape)
    rtol = max(rule.rtol, ROUNDING_RTOL)
    return bool(np.all(np.isfinite(flat)) and np.all(close_errors(flat, want) <= rtol))


def judge_one(key: str, got, want, rule: Rule, case: dict | None = None) -> Result:
    label = f"{rule.what} {key.partition(':')[2]}".strip()
    if rule.raises:
        if isinstance(got, Broken) and got.why.startswith(f"raised {rule.raises}"):
            return Result(key, True, rule.weight)
        did = got.why if isinstance(got, Broken) else "returned a value"
        hint = f" Likely mistake: {rule.hint}" if rule.hint else ""
        return Result(key, False, rule.weight, f"{label}: {did}, not a {rule.raises}.{hint}")
    if isinstance(got, Broken):
        return Result(key, False, rule.weight, f"{label}: {got.why}")
    if got is None:
        return Result(key, False, rule.weight, f"{label}: not computed")
    detail = key.partition(":")[2]
    own = next((h for start, h in rule.hints if detail.startswith(start)), rule.hint)
    hint = f" Likely mistake: {own}" if own else ""
    if rule.kind in ("true", "below"):
        # Decided here, from the observations, by the rule's grader-side measure.
        try:
            value = rule.measure(got, want)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
            value = "the observation could not be read" if rule.kind == "true" else math.inf
        if rule.kind == "true":
            ok = isinstance(value, bool | np.bool_) and bool(value)
            why = value if isinstance(value, str) else "does not hold"
            return Result(key, ok, rule.weight, "" if ok else f"{label}: {why}.{hint}")
        if isinstance(value, str):  # the measure's own reason to fail
            return Result(key, False, rule.weight, f"{label}: {value}.{hint}")
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.floating):
            value = math.inf
        value = float(value)
        ok = value <= rule.rtol  # NaN fails
        msg = f"{label}: {value:.1e}, above {rule.rtol:.0e}.{hint}"
        return Result(key, ok, rule.weight, "" if ok else msg)
    got_a = np.asarray(got, dtype=np.float64)
    want_a = np.asarray(want, dtype=np.float64)
    # Never tighter than rounding: a reference from another processor differs in its last
    # bits, and a difference that small is never the student's mistake (Rule).
    rtol = max(rule.rtol, ROUNDING_RTOL)
    ok = (
        got_a.shape == want_a.shape
        and bool(np.all(np.isfinite(got_a)))
        and bool(np.all(close_errors(got_a, want_a, rule.noise_floor) <= rtol))
    )
    if ok:
        return Result(key, True, rule.weight)
    if _keepdims_of(got_a, want_a, rule):
        why = f"has shape {got_a.shape}, expected {want_a.shape}; its values are right"
        return Result(
            key, False, rule.weight, f"{label} {why}. Likely mistake: {rule.shape_hint}", False
        )
    named = _named_factor(got_a, want_a, rule)
    if named is None and rule.slips is not None and got_a.shape == want_a.shape:
        named = rule.slips(got_a, want_a, case or {})
    if named is not None:
        words, likely = named
        return Result(key, False, rule.weight, f"{label} {words}. Likely mistake: {likely}")
    why = _describe_mismatch(got_a, want_a, rtol, rule.noise_floor)
    return Result(key, False, rule.weight, f"{label} {why}.{hint}")


def judge(check: Check, outputs: dict, reference: dict) -> list[Result]:
    """One Result per reference key; a key the student's probe never reached fails."""
    stopped = outputs.get("_stopped")  # why the probe ended early, e.g. a missing name
    results = {}
    for key, want in reference.items():
        rule = rule_for(check, key)
        read = f"{rule.uses}:{key.partition(':')[2]}" if rule.uses else key
        case = None
        if rule.slips is not None:  # the reference's other observations of the same case
            detail = key.partition(":")[2]
            split = (k.partition(":") for k in reference)
            case = {p: reference[f"{p}:{d}"] for p, _, d in split if d == detail}
        results[key] = judge_one(key, outputs.get(read, stopped), want, rule, case)
    # Gradients whose likely mistake is their case's forward pass (Rule.hint_unless, matched
    # through _same_case's fallback): reported after the forward failure that explains them.
    upstream = []
    for key, result in results.items():
        rule = rule_for(check, key)
        for prefix, hint in rule.hint_unless if rule.hint and not result.passed else ():
            detail = key.partition(":")[2]
            whole = ":" in prefix  # a whole key, of any case
            other_key = prefix if whole else _same_case(results, prefix, detail)
            other = results.get(other_key)
            if other is not None and not other.passed:
                message = result.message.replace(rule.hint, hint)
                if message != result.message:  # not when the failure named its own cause
                    results[key] = Result(key, False, rule.weight, message)
                    if not whole and other_key != f"{prefix}:{detail}":
                        upstream.append(key)
                break
    # The failures that explain the others come first in the report (a wrong forward pass
    # before the gradients computed from its cache).
    # A check-wide sub-check (one that others require whatever their case: Rule.
    # requires_every) comes last: a small case's failure names the mistake more precisely.
    wide = {p for k in results for p in rule_for(check, k).requires_every}
    last = [k for k in results if k.partition(":")[0] in wide and k not in upstream]
    results = {
        **{k: r for k, r in results.items() if k not in upstream and k not in last},
        **{k: results[k] for k in upstream},
        **{k: results[k] for k in last},
    }
    changed = True
    while changed:  # requirements chain (a selfcheck requires the loss, which requires ...)
        changed = False
        for key, result in results.items():
            rule = rule_for(check, key)
            detail = key.partition(":")[2]
            needs = (rule.requires,) if isinstance(rule.requires, str) else rule.requires or ()
            failing = [
                n for n in needs if not getattr(results.get(f"{n}:{detail}"), "passed", False)
            ]
            failing_every = [
                p
                for p in rule.requires_every
                if any(k.startswith(f"{p}:") and not r.passed for k, r in results.items())
            ]
            if needs and NUDGED_FORWARD_OFF in result.message:
                label = f"{rule.what} {detail}".strip()
                forward = needs[0]  # a self-check's first requirement is its forward pass
                if forward not in failing:
                    # Right at x, otherwise at x +- h: evidence of answering differently
                    # under observation, and what differed.
                    why = result.message.replace(
                        NUDGED_FORWARD_OFF,
                        f"your {forward} is right, yet your values at the nudged "
                        "inputs are not a correct forward pass's",
                    ).partition(" Likely mistake:")[0]
                    why += (
                        " Does your code answer differently when it is called again, or "
                        "while it is being checked?"
                    )
                else:
                    why = f"{label}: not credited while the {forward} check of it fails"
                if why != result.message:
                    results[key] = Result(key, False, rule.weight, why)
                    changed = True
                continue
            if result.passed and failing:
                label = f"{rule.what} {detail}".strip()
                why = f"{label}: not credited while the {failing[0]} check of it fails"
                results[key] = Result(key, False, rule.weight, why)
                changed = True
            elif result.passed and failing_every:
                label = f"{rule.what} {detail}".strip()
                why = f"{label}: not credited while the {failing_every[0]} check fails"
                results[key] = Result(key, False, rule.weight, why)
                changed = True
    # Raising is easy: an error contract (Rule.raises) is credited only beside a right answer
    # of the same check (a function of the package that raises on any input earned it).
    answered = any(
        r.passed and not rule_for(check, k).raises and rule_for(check, k).weight > 0
        for k, r in results.items()
    )
    for key, result in results.items():
        rule = rule_for(check, key)
        if rule.raises and result.passed and not answered:
            why = f"{rule.what} {key.partition(':')[2]}".strip()
            results[key] = Result(key, False, rule.weight, f"{why}: not credited alone")
    return list(results.values())


def _same_case(results: dict, prefix: str, detail: str) -> str:
    """The key of the sub-check `prefix` of the same case as one whose detail is `detail`:
    "<prefix>:<detail>", or, for a per-gradient detail "<gradient>, <case>" (grad:dWx, N, D,
    H all different) where no such key exists, "<prefix>:<case>" (out:N, D, H all
    different)."""
    key = f"{prefix}:{detail}"
    if key in results or ", " not in detail:
        return key
    return f"{prefix}:{detail.partition(', ')[2]}"


def _caps(check: Check, results: list[Result]) -> list[tuple[float, str]]:
    """(share, what) for each capped rule (Rule.cap) with a failing sub-check."""
    found = {}
    for r in results:
        rule = check.rules.get(r.key.partition(":")[0])
        if rule is not None and rule.cap is not None and not r.passed and r.caps:
            found[rule.what] = rule.cap
    return [(share, what) for what, share in found.items()]


def score(check: Check, results: list[Result]) -> float:
    """Points earned: the passed share of the weights, at most the smallest cap of a
    capped rule that fails (Rule.cap), floored to hundredths."""
    total = sum(r.weight for r in results)
    if total == 0:
        return 0.0
    share = sum(r.weight for r in results if r.passed) / total
    share = min([share] + [cap for cap, _ in _caps(check, results)])
    return math.floor(check.points * share * 100 + 1e-9) / 100


def credit_rule(check: Check, results: list[Result] | None = None) -> str:
    """The cell's partial-credit rule, in words (the last line of a report with failures),
    with the share of the weights that passed here, so the score can be worked out (the walk
    of issue 33: 16 of 28 sub-checks passed and 1.15 of 3 points did not add up)."""
    capped = {}
    for rule in check.rules.values():
        if rule.cap is not None:
            what = rule.what.strip(" ,:")
            for tail in (" for", " of", " with", " in", " on"):  # " on": walk 60's 09
                what = what.removesuffix(tail)
            what = what.strip(" ,:")  # "relative error per parameter, on": no comma left
            capped.setdefault(rule.cap, []).append(what)
    words = "  Credit: the passed share of the sub-checks' weights"
    total = sum(r.weight for r in results or [])
    if total > 0:
        passed = sum(r.weight for r in results if r.passed) / total
        words += f" (here {math.floor(passed * 100 + 1e-9):g}%)"
    for cap, whats in sorted(capped.items()):
        words += f"; a failing {' or '.join(whats)} caps the cell at {cap:.0%} of its points"
    return words + "."


def report(check: Check, results: list[Result], points: float, limit: int = 8) -> str:
    """The verdict in words: the score, then each failure (one line for the many that share
    a cause, such as every sub-check raising NotImplementedError)."""
    # Counted: the sub-checks that carry weight. One worth nothing alone (a precondition, as
    # "each answer one of CAUSES") would read as credit: "1 of 2 sub-checks passed" over a
    # cell of 0 points (review 34).
    weighted = [r for r in results if r.weight > 0] or results
    passed = sum(r.passed for r in weighted)
    lines = [
        f"{check.name}: {points:g} of {check.points:g} points "
        f"({passed} of {len(weighted)} sub-checks passed)"
    ]
    groups: dict[str, list[Result]] = {}
    for r in results:
        if not r.passed:
            cause = r.message.partition(": ")[2]
            groups.setdefault(cause if cause.startswith(SHARED_CAUSES) else r.message, []).append(r)
    previous = [""]

    def once(text: str) -> str:
        """The text, its likely mistake replaced by "as above" when the line before gave
        the same (four cases of one wrong dx repeated the same three lines four times)."""
        head, found, hint = text.partition(" Likely mistake: ")
        if not found or hint != previous[0]:
            previous[0] = hint if found else ""
            return text
        return f"{head} Likely mistake: as above."

    for shown, (cause, members) in enumerate(groups.items()):
        if shown == limit:
            lines.append(f"  ... and {len(groups) - limit} more failures")
            break
        if len(members) == 1:
            lines.append(f"  FAIL {once(members[0].message)}")
        else:
            first = members[0].message.partition(": ")[0]
            lines.append(f"  FAIL {len(members)} sub-checks ({first}, ...): {once(cause)}")
    if passed < len(results):
        lines.append(credit_rule(check, results))
    return "\n".join(lines)


def observation(value):
    """What a kernel may send for one output: a float, a float64 array, or Broken. Anything
    else (true, a string, a nested list) was not written by the probe: it fails that key
    only, before any rule or picture reads it."""
    if isinstance(value, Broken):
        return value
    if isinstance(value, float | int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value
    return Broken("its result is not a number or an array: tampered output")


def same_for_the_judge(stored, fresh, rule: Rule) -> bool:
    """Whether two reference values (one stored, one recomputed) are the same to the judge.

    Each is compared at the precision its rule judges a student with, never tighter: a
    "below" value (the error of a numerical check) is rounding noise by construction and
    differs from one processor or BLAS kernel to the next, so only its verdict must agree;
    a "close" value must agree within the rule's tolerance, so a real change still shows.
    """
    if isinstance(stored, Broken) or isinstance(fresh, Broken):
        return stored == fresh
    if rule.kind in ("below", "true") and rule.uses is None:
        # An observation judged by a measure (forward values at nudged inputs, sample
        # moments): the stored value stays while the fresh one passes against it (a measure
        # that reads the reference, such as the forward values at nudged inputs, then
        # still agrees with it), and only the verdict the grader draws from it must agree.
        return (
            judge_one("", fresh, stored, rule).passed
            and judge_one("", stored, stored, rule).passed
            == judge_one("", fresh, fresh, rule).passed
        )
    if rule.kind in ("below", "true"):  # a trusted value the probe computed
        return judge_one("", fresh, stored, Rule("", rtol=1e-9)).passed
    return judge_one("", fresh, stored, rule).passed


# Causes that many sub-checks share; reported once.
SHARED_CAUSES = ("raised ", "the notebook defines no", "not credited while", "it ran many times")


def verdict(
    name: str, payload: dict | None, why_missing: str = "", reference: dict | None = None
) -> tuple[float, str]:
    """Grader side: (points, report) for the probe payload a grade cell emitted (or None).

    reference: the run's reference outputs of this check (course.grader.inputs); None for
    the committed references/ (public seeds: `course check`, tests).
    """
    points, text, _ = verdict_with_pictures(name, payload, why_missing, False, reference)
    return points, text


def verdict_with_pictures(
    name: str,
    payload: dict | None,
    why_missing: str = "",
    pictures: bool = True,
    reference: dict | None = None,
) -> tuple[float, str, list[bytes]]:
    """(points, report, PNGs for the feedback): see course.grader.figures."""
    chk = get_check(name)
    if payload is None:
        reason = why_missing or "the hidden check did not run"
        return 0.0, f"{name}: 0 of {chk.points:g} points ({reason})", []
    outputs = {key: observation(decode(value)) for key, value in payload.get("outputs", {}).items()}
    reference = load_reference(chk) if reference is None else reference
    results = judge(chk, outputs, reference)
    points = score(chk, results)
    text = report(chk, results, points)
    causes = []
    if points < chk.points:
        try:
            causes = carried_causes(chk, payload.get("carried"))
        except Exception:  # noqa: BLE001 (forged carried outputs lose only the explanation)
            causes = []
    if causes:
        # The failures' own hints would blame this exercise's code: the cause comes first.
        head, _, rest = text.partition("\n")
        rest = "\n".join(line.partition(" Likely mistake:")[0] for line in rest.splitlines())
        text = "\n".join([head, *causes, *([rest] if rest else [])])
    pngs = []
    if pictures:
        from course.grader.figures import pictures as draw

        notes: list[str] = []
        pngs = draw(chk, outputs, reference, results, notes)
        text = "\n".join([text, *notes])
    return float(points), text, pngs


def by_hand_failure(check: Check, payload: dict | None, reference: dict | None = None):
    """Why `check`'s code is not credited as written by hand: its first failing sub-check
    that every gradient of it requires (Rule.requires_every), or that its check did not
    run; None when it passed them, or has none. `payload` as for `verdict`."""
    wide = {p for rule in check.rules.values() for p in rule.requires_every}
    if not wide:
        return None
    if payload is None:
        return f"its check {check.name} did not run"
    outputs = {key: observation(decode(value)) for key, value in payload.get("outputs", {}).items()}
    results = judge(check, outputs, load_reference(check) if reference is None else reference)
    for result in results:
        if result.key.partition(":")[0] in wide and not result.passed:
            why = result.message.partition(" Likely mistake:")[0].rstrip(".")
            return f"its check {check.name} finds {why}"
    return None


def withheld(chk: Check, failures: dict[str, str | None]) -> str | None:
    """Why a check that trains through earlier backward passes (Check.trains_through) earns
    nothing: the first of them not credited as written by hand (failures: {check: its
    by_hand_failure}, a check absent from it did not run), else None."""
    for earlier in chk.trains_through:
        why = failures.get(earlier, f"its check {earlier} did not run")
        if why is not None:
            return why
    return None


def withhold(chk: Check, points: float, text: str, why: str | None) -> tuple[float, str]:
    """(points, report) with the points withheld, and why, when `why` (withheld) says so."""
    if why is None or points <= 0:
        return points, text
    head = (
        f"{chk.name}: 0 of {chk.points:g} points (not credited: it trains through code "
        f"whose gradients are not credited as written by hand: {why})"
    )
    return 0.0, "\n".join([head, *text.splitlines()[1:]])


# A failure that ran into a released stub: "raised NotImplementedError ...: Exercise 1.4:
# write Value.backward" (course.authoring.stubs.stub_message).
UNWRITTEN = re.compile(r"raised NotImplementedError\b.*?(Exercise [\w.]+): write ([\w.]+)")


def carried_causes(chk: Check, carried: dict | None) -> list[str]:
    """One line per function this check runs through (Check.builds_on: an earlier exercise
    of the notebook, or code carried from an earlier assignment) that fails its own check
    (or one line for an earlier assignment whose code is missing): the likely cause of this
    check's failures. An earlier check whose failure its own earlier checks explain is not
    named again (two_layer_net fails with relu_backward: only relu_backward is named)."""
    if not isinstance(carried, dict):  # judged in process (classroom): nothing carried
        return []
    own = chk.notebook.partition("/")[0]
    failing: dict[str, list[Result]] = {}
    for earlier, spec in chk.builds_on.items():
        earlier_check = get_check(earlier)
        decoded = {k: decode(v) for k, v in ((carried or {}).get(earlier) or {}).items()}
        results = judge(earlier_check, decoded, load_reference(earlier_check))
        failed = [r for r in results if not r.passed and functions_of(spec, [r.key])]
        if failed:
            failing[earlier] = failed
    lines, missing = [], set()
    for earlier, failed in failing.items():
        if any(later in failing for later in get_check(earlier).builds_on):
            continue  # explained by a more basic function, named on its own line
        spec = chk.builds_on[earlier]
        assignment = get_check(earlier).notebook.partition("/")[0]
        if assignment != own and any("CarriedCodeMissing" in r.message for r in failed):
            if assignment not in missing:
                missing.add(assignment)
                lines.append(
                    f"  CAUSE your code from {assignment} is missing from this submission: "
                    f"do {assignment}, then re-run this notebook's import cell "
                    "(or `course export`)."
                )
            continue
        functions = functions_of(spec, [r.key for r in failed])
        named = [r for r in failed if functions[0] in functions_of(spec, [r.key])] or failed
        # Its own failure, rather than a sub-check not credited because another failed.
        first = ([r for r in named if "not credited while" not in r.message] or named)[0]
        why = first.message.partition(" Likely mistake:")[0].rstrip(".")
        if assignment != own:
            fix = f"fix it in {assignment}, save, then re-run this notebook's import cell"
            lines.append(
                f"  CAUSE your {', '.join(functions)} from {assignment} fails its own check "
                f"there ({earlier}: {why}); {fix}."
            )
            continue
        if unwritten := UNWRITTEN.search(why):
            # Not that function's mistake: the earlier check ran into a stub of another
            # exercise (value_ops calls backward; walk 53 read "your Value.__add__ fails its
            # own hidden check" for a right __add__ while Value.backward was unwritten).
            lines.append(
                f"  CAUSE your {unwritten.group(2)} is not written yet ({unwritten.group(1)}): "
                f"{earlier} runs it, and this check runs through {earlier}; the points it "
                "costs here come back once it is written."
            )
            continue
        also = f" (then {', '.join(functions[1:])}, which may use it)" if functions[1:] else ""
        # Say that the points lost through it come back once it is fixed: a correct
        # backward behind a wrong forward scores 0 (its gradients are credited only when
        # the forward is right), which would otherwise read as a verdict on the backward.
        lines.append(
            f"  CAUSE your {functions[0]}{also} fails its own hidden check, {earlier} ({why}); "
            f"this check runs through it: fix it first; the points it costs here come back "
            f"once {functions[0]} is fixed."
        )
    return lines
