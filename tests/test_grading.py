"""Unit tests of the grader core (course.grader): messages, rules, scores, recording, and
the grade cells.

The hidden checks must never reveal an expected value, never award full points for a
partly wrong answer, never write to stderr (nbgrader would fail the cell), and must give
the source solutions full marks.
"""

import json
import sys
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course import grading
from course.authoring import build
from course.checks import checks_by_name
from course.grader import judge, model, probe, references
from course.grader.judge import _describe_mismatch, judge_one, score
from course.grader.model import Broken, Check, MissingName, Result, Rule, rule_for
from course.grader.probe import Outputs, Student
from course.paths import course_root

FAST = settings(max_examples=30, deadline=None)

checks_by_name()  # model.CHECKS below: every module loaded
ROOT = course_root()
BACKPROP = "01_backprop/backprop"
BACKPROP_CHECKS = sorted(name for name, c in model.CHECKS.items() if c.notebook == BACKPROP)
ALL_CHECKS = sorted(model.CHECKS)

# Reference-like numbers whose printed forms cannot turn up by accident in a message.
DISTINCTIVE = [
    0.123456789,
    -4.56789123,
    7.65432198e-3,
    31.4159265,
    -0.987654321,
    2.71828183e-2,
    -6.02214076,
    0.577215665,
]


def value_forms(values) -> set[str]:
    """How an expected value could be printed, with and without its sign."""
    forms = set()
    for v in np.ravel(values):
        for x in (float(v), abs(float(v))):
            forms |= {repr(x), str(x), f"{x:.3g}", f"{x:.4g}", f"{x:.6g}", f"{x:.3e}", f"{x:.2e}"}
    return forms


def assert_no_leak(message: str, want) -> None:
    leaked = sorted(f for f in value_forms(want) if f in message)
    assert not leaked, f"message {message!r} reveals expected values {leaked}"


def grad_rule(**kw) -> Rule:
    return Rule("gradient of", **kw)


def dummy_check(points: float = 3) -> Check:
    return Check(
        name="dummy",
        notebook="00_none/none",
        points=points,
        probe=lambda student, rng, out: None,
        rules={},
    )


# ----------------------------------------------------------- mismatch messages


def test_transpose_is_detected():
    want = np.arange(1.0, 13.0).reshape(4, 3) * 0.123456789
    got = want.T.copy()
    r = judge_one("grad:W", got, want, grad_rule(hint="dW = x.T @ dout"))
    assert not r.passed
    assert r.message.startswith("gradient of W has shape (3, 4)")
    assert "transpose" in r.message
    assert "Likely mistake: dW = x.T @ dout" in r.message
    assert_no_leak(r.message, want)


@pytest.mark.parametrize(
    ("got_shape", "want_shape"),
    [
        ((3,), (3, 1)),
        ((2, 3, 4), (4, 3, 2)),  # reversed, but not a matrix transpose
        ((5, 4), (4, 3)),
        ((), (2,)),
    ],
)
def test_other_shape_mismatch(got_shape, want_shape):
    want = np.full(want_shape, 0.123456789)
    got = np.full(got_shape, 1.0)
    msg = _describe_mismatch(got, want, 1e-9)
    assert msg == f"has shape {got_shape}, expected {want_shape}"
    assert "transpose" not in msg
    r = judge_one("grad:b", got, want, grad_rule())
    assert not r.passed and "expected" in r.message


def test_a_noise_floor_forgives_rounding_in_tiny_entries_not_a_wrong_large_one():
    """Rule.noise_floor: a saturated softmax's Jacobian has entries of 1e-11 beside ones of
    1, where correct implementations differ by 1e-13 (issue 37's log-sum-exp softmax)."""
    want = np.array([1.1377, -0.52, 1.7e-11, -3.1e-9])
    got = want + np.array([0.0, 0.0, 2e-13, -1e-13])
    plain, floored = grad_rule(), Rule("gradient of", rtol=1e-7, noise_floor=1e-4)
    assert not judge_one("grad:x", got, want, plain).passed
    assert judge_one("grad:x", got, want, floored).passed
    wrong = want * np.array([1.0, 1.001, 1.0, 1.0])
    r = judge_one("grad:x", wrong, want, floored)
    assert not r.passed and "at 1 of 4 entries" in r.message
    tiny_wrong = want + np.array([0.0, 0.0, 1e-6, 0.0])  # 1e-6 of the largest: a real error
    assert not judge_one("grad:x", tiny_wrong, want, floored).passed


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf(bad):
    want = np.array([0.123456789, -4.56789123, 31.4159265])
    got = want.copy()
    got[1] = bad
    r = judge_one("grad:x", got, want, grad_rule())
    assert not r.passed
    assert "NaN or infinity" in r.message
    assert_no_leak(r.message, want)


def test_nan_never_passes_even_against_itself():
    want = np.array([1.0, 2.0])
    got = np.array([np.nan, 2.0])
    assert not judge_one("grad:x", got, got.copy(), grad_rule()).passed
    assert not judge_one("grad:x", got, want, grad_rule(rtol=1e9)).passed


def test_all_zeros():
    want = np.array([[0.123456789, 0.0], [-4.56789123, 7.65432198e-3]])
    r = judge_one("grad:h", np.zeros_like(want), want, grad_rule())
    assert not r.passed and "all zeros" in r.message
    assert_no_leak(r.message, want)
    # Zeros where zeros are expected pass.
    assert judge_one("grad:h", np.zeros(3), np.zeros(3), grad_rule()).passed


def test_wrong_sign():
    want = np.array([0.123456789, -4.56789123, 7.65432198e-3, 0.0])
    r = judge_one("grad:a", -want, want, grad_rule())
    assert not r.passed
    assert "wrong sign" in r.message
    assert "factor" not in r.message
    assert_no_leak(r.message, want)


@pytest.mark.parametrize(
    ("k", "text"),
    [
        (2.0, "twice the expected value"),
        (0.5, "half the expected value"),
        (-2.0, "twice the expected value, with the wrong sign"),
    ],
)
def test_classic_factor_is_named(k, text):
    want = np.array([[0.123456789, -4.56789123], [7.65432198e-3, 31.4159265]])
    r = judge_one("grad:W", k * want, want, grad_rule())
    assert not r.passed
    assert text in r.message
    assert_no_leak(r.message, want)


@pytest.mark.parametrize("k", [-3.0, 1.5, 1.0 + 1e-8])
def test_other_factors_are_not_named(k):
    # Naming an arbitrary ratio would let the student compute the expected values.
    want = np.array([[0.123456789, -4.56789123], [7.65432198e-3, 31.4159265]])
    r = judge_one("grad:W", k * want, want, grad_rule(rtol=1e-12))
    assert not r.passed
    assert "factor" not in r.message and "is off: relative error" in r.message
    assert_no_leak(r.message, want)


@pytest.mark.parametrize("want", [2.5, np.array([2.5])])
def test_a_single_number_is_only_said_to_be_off(want):
    # Its relative error and the student's value would give the expected value away.
    r = judge_one("grad:W", np.asarray(want) * 1.3, want, grad_rule(rtol=1e-9))
    assert not r.passed
    assert "is off, beyond the tolerance (1e-09)" in r.message
    assert "relative error" not in r.message


def test_generic_relative_error():
    want = np.array(
        [[0.123456789, -4.56789123, 7.65432198e-3], [31.4159265, -0.987654321, 2.71828183e-2]]
    )
    got = want.copy()
    got[0, 1] = 1.0
    got[1, 2] = -2.0
    r = judge_one("grad:W", got, want, grad_rule(rtol=1e-9, hint="the chain rule"))
    assert not r.passed
    assert r.message.startswith("gradient of W is off: relative error")
    assert "at 2 of 6 entries" in r.message
    assert "(tolerance 1e-09)" in r.message
    assert r.message.endswith("Likely mistake: the chain rule")
    assert_no_leak(r.message, want)


def test_within_tolerance_passes_without_a_message():
    want = np.array([0.123456789, -4.56789123])
    r = judge_one("grad:x", want * (1 + 1e-12), want, grad_rule(rtol=1e-9))
    assert r.passed and r.message == ""
    assert r.key == "grad:x" and r.weight == 1.0
    # A boolean compared under "close" (as reference outputs of type checks may be).
    assert judge_one("type:x", True, True, grad_rule()).passed


@st.composite
def mistakes(draw):
    """(got, want): a reference of distinctive numbers and a typical wrong answer to it."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    want = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(DISTINCTIVE)))
    kind = draw(
        st.sampled_from(["transpose", "shape", "nan", "zeros", "sign", "factor", "entry", "offset"])
    )
    if kind == "transpose" and want.ndim == 2 and shape[0] != shape[1]:
        got = want.T.copy()
    elif kind == "shape":
        got = np.ones(shape + (2,))
    elif kind == "nan":
        got = want.copy()
        got.flat[draw(st.integers(0, want.size - 1))] = np.nan
    elif kind == "zeros":
        got = np.zeros_like(want)
    elif kind == "sign":
        got = -want
    elif kind == "factor":
        got = want * draw(st.sampled_from([2.0, 0.5, 3.0, -2.0, 10.0]))
    elif kind == "entry":
        got = want.copy()
        got.flat[draw(st.integers(0, want.size - 1))] = draw(
            st.sampled_from([1.0, -2.0, 5.0, 0.25])
        )
    else:
        got = want + draw(st.sampled_from([1.0, -1.0, 0.5]))
    return got, want


@FAST
@given(mistakes(), st.sampled_from([1e-12, 1e-9, 1e-7]))
def test_messages_never_contain_expected_values(mistake, rtol):
    got, want = mistake
    r = judge_one("grad:z", got, want, Rule("gradient of", rtol=rtol, hint="a hint"))
    assert not r.passed
    assert r.message.startswith("gradient of z ")
    assert_no_leak(r.message, want)


def test_a_wrong_scalar_does_not_reveal_the_reference_through_a_factor():
    want = 0.123456789
    r = judge_one("data:a + b", 1.0, want, Rule("forward value of", rtol=1e-12))
    assert not r.passed
    assert "factor" not in r.message  # "factor of 8.1" gives want = 1.0 / 8.1


# ----------------------------------------------------------- rules and Broken


def restored(got, want):
    """A grader-side measure: the student's x after the call equals the reference's."""
    return bool(np.array_equal(got, want)) or "x moved"


def test_rule_true_is_decided_by_its_measure_in_the_grader():
    rule = Rule("x after", kind="true", hint="assign the old value back", measure=restored)
    ok = judge_one("restored:sum(x**2)", np.array([1.0, 2.0]), np.array([1.0, 2.0]), rule)
    assert ok.passed and ok.message == ""
    bad = judge_one(
        "restored:sum(x**2)", np.array([1.0, 2.0 + 1e-16 * 4]), np.array([1.0, 2.0]), rule
    )
    assert not bad.passed
    assert bad.message == "x after sum(x**2): x moved. Likely mistake: assign the old value back"
    # A kernel that sends a conclusion earns nothing: True is no observation of x.
    assert not judge_one("restored:k", True, np.array([1.0, 2.0]), rule).passed
    plain = Rule("holds", kind="true", measure=lambda got, want: got == want)
    assert not judge_one("ok:k", np.float64(1.0), 2.0, plain).passed
    assert "does not hold" in judge_one("ok:k", np.float64(1.0), 2.0, plain).message


def test_a_rule_without_a_measure_cannot_be_made():
    for kind in ("true", "below"):
        with pytest.raises(ValueError, match="grader-side"):
            Rule("anything", kind=kind)


def error_of(got, want):
    return float(got)


def test_rule_below():
    rule = Rule(
        "agreement with the analytic gradient, for",
        kind="below",
        rtol=1e-7,
        hint="use h = 1e-5",
        measure=error_of,
    )
    assert judge_one("analytic:f", 3e-8, 0.0, rule).passed
    assert judge_one("analytic:f", 1e-7, 0.0, rule).passed  # at the bound
    assert not judge_one("analytic:f", 1.5e-7, 0.0, rule).passed
    bad = judge_one("analytic:f", 2.5e-3, 1e-12, rule)
    assert not bad.passed
    assert "2.5e-03, above 1e-07" in bad.message
    assert bad.message.endswith("Likely mistake: use h = 1e-5")
    assert "1e-12" not in bad.message and "1.0e-12" not in bad.message
    assert not judge_one("analytic:f", float("nan"), 0.0, rule).passed
    boolean = Rule("error", kind="below", rtol=1e-7, measure=lambda got, want: got)
    assert not judge_one("analytic:f", True, 0.0, boolean).passed  # a bool is no error measure
    raising = Rule("error", kind="below", rtol=1e-7, measure=lambda got, want: got[5])
    assert not judge_one("analytic:f", np.zeros(2), 0.0, raising).passed


@pytest.mark.parametrize("kind", ["close", "true", "below"])
def test_broken_output_fails_and_says_why(kind):
    measure = None if kind == "close" else (lambda got, want: True if kind == "true" else 0.0)
    rule = Rule("gradient of", kind=kind, weight=2.0, measure=measure)
    r = judge_one("grad:W", Broken("raised ZeroDivisionError: float division by zero"), 1.0, rule)
    assert not r.passed and r.weight == 2.0
    assert r.message == "gradient of W: raised ZeroDivisionError: float division by zero"
    missing = judge_one("grad:W", None, 1.0, rule)
    assert not missing.passed and "not computed" in missing.message


@pytest.mark.parametrize("name", ALL_CHECKS)
def test_rule_for_uses_the_key_prefix(name):
    chk = model.CHECKS[name]
    for prefix, rule in chk.rules.items():
        assert rule_for(chk, f"{prefix}:anything at all, even: colons") is rule
        assert rule.kind in {"close", "true", "below"}
    with pytest.raises(KeyError):
        rule_for(chk, "nosuchprefix:x")


def test_judge_fails_keys_the_probe_never_reached():
    chk = Check(
        "j",
        "00_none/none",
        2,
        lambda s, r, o: None,
        rules={"grad": grad_rule(), "ok": Rule("holds", kind="true", measure=restored)},
    )
    results = judge.judge(
        chk, {"grad:a": 1.0, "extra:z": 5.0}, {"grad:a": 1.0, "grad:b": 2.0, "ok:c": True}
    )
    assert [r.key for r in results] == ["grad:a", "grad:b", "ok:c"]
    assert [r.passed for r in results] == [True, False, False]


def test_a_required_check_must_pass_for_credit():
    chk = Check(
        "r",
        "00_none/none",
        2,
        lambda s, r, o: None,
        rules={
            "grad": grad_rule(),
            "analytic": Rule(
                "agreement with the analytic gradient, for",
                kind="below",
                rtol=1e-7,
                requires="grad",
                measure=error_of,
            ),
        },
    )
    reference = {
        "grad:f": np.array([0.123456789, 2.0]),
        "analytic:f": 0.0,
        "grad:g": np.array([1.0]),
        "analytic:g": 0.0,
    }
    outputs = {
        "grad:f": np.zeros(2),
        "analytic:f": 0.0,  # degenerate: zeros agree with zeros
        "grad:g": np.array([1.0]),
        "analytic:g": 1e-9,
    }
    results = {r.key: r for r in judge.judge(chk, outputs, reference)}
    assert not results["grad:f"].passed
    assert not results["analytic:f"].passed
    assert "not credited" in results["analytic:f"].message
    assert results["grad:g"].passed and results["analytic:g"].passed
    assert score(chk, list(results.values())) == 1.0


def test_a_gradient_of_a_wrong_forward_blames_the_forward_and_comes_after_it():
    """Rule.hint_unless: "grad:dW, <case>" reads "out:<case>", the forward of its case; its
    failure is then reported after the forward's."""
    chk = Check(
        "h",
        "00_none/none",
        2,
        lambda s, r, o: None,
        rules={
            "out": Rule("out for", hint="the forward"),
            "grad": Rule(
                "gradient", hint="the backward", hint_unless=(("out", "fix the forward"),)
            ),
        },
    )
    reference = {
        "grad:dW, a, b": np.array([1.0, 2.0]),
        "grad:dW, c": np.array([1.0, 2.0]),
        "out:a, b": np.array([1.0, 3.0]),
        "out:c": np.array([1.0, 3.0]),
    }
    outputs = {
        "grad:dW, a, b": np.array([1.0, 5.0]),
        "grad:dW, c": np.array([1.0, 5.0]),
        "out:a, b": np.array([1.0, 4.0]),  # the forward of case "a, b" is off
        "out:c": np.array([1.0, 3.0]),
    }
    results = judge.judge(chk, outputs, reference)
    by_key = {r.key: r for r in results}
    assert by_key["grad:dW, a, b"].message.endswith("Likely mistake: fix the forward")
    assert by_key["grad:dW, c"].message.endswith("Likely mistake: the backward")
    assert [r.key for r in results if not r.passed] == ["grad:dW, c", "out:a, b", "grad:dW, a, b"]


def test_judge_names_known_slips_and_keeps_right_values_in_another_shape_uncapped():
    """Issue 54: Rule.shape_hint (right values, (1, D) for (D,): failed, not capped; (D, 1)
    broadcasts elsewhere and stays a wrong value), Rule.hints (one sub-check's own likely
    mistake), Rule.slips (read with the reference of the same case) and a hint_unless of a
    whole key, of another case."""
    slip = ("is the slip", "the slip's hint")
    chk = Check(
        "h",
        "00_none/none",
        2,
        lambda s, r, o: None,
        rules={
            "run": Rule("running", cap=0.5, hint="momentum", shape_hint="no keepdims"),
            "out": Rule("out for", hint="the forward"),
            "grad": Rule(
                "gradient",
                hint="summed",
                hints=(("b1, ", "the mask"),),
                slips=lambda got, want, case: slip if "out" in case else None,
            ),
            "causal": Rule("causal for", hint="the mask", hint_unless=(("out:plain", "the axis"),)),
        },
    )
    row = np.array([1.0, 2.0])
    reference = {"run:a": row, "out:plain": row, "causal:a": row, "grad:W1, a": row}
    reference |= {"grad:b1, a": row, "out:b1, a": row}
    outputs = {"run:a": row[None, :], "out:plain": row + 1, "causal:a": row + 1}
    outputs |= {"grad:W1, a": row + 1, "grad:b1, a": row + 1, "out:b1, a": row}
    by_key = {r.key: r for r in judge.judge(chk, outputs, reference)}
    assert by_key["run:a"].message.endswith("its values are right. Likely mistake: no keepdims")
    assert by_key["grad:W1, a"].message.endswith("Likely mistake: summed")
    assert by_key["grad:b1, a"].message.endswith("is the slip. Likely mistake: the slip's hint")
    assert by_key["causal:a"].message.endswith("Likely mistake: the axis")
    # Scores: 3 of 4 sub-checks pass; the cap (50%) only for a wrong value.
    chk.rules = {"run": chk.rules["run"]}
    reference = {f"run:{c}": row for c in "abcd"}
    for value, points in ((row[None, :], 1.5), (row[:, None], 1.0), (2 * row[None, :], 1.0)):
        results = judge.judge(chk, {**reference, "run:a": value}, reference)
        assert score(chk, results) == points, value


def test_report_lists_failures_up_to_a_limit():
    chk = dummy_check(points=2)
    results = [Result(f"k{i}", False, 1.0, f"message {i}") for i in range(11)]
    results.append(Result("ok", True, 1.0))
    text = judge.report(chk, results, 0.16)
    lines = text.splitlines()
    assert lines[0] == "dummy: 0.16 of 2 points (1 of 12 sub-checks passed)"
    assert lines[1:9] == [f"  FAIL message {i}" for i in range(8)]
    assert lines[9] == "  ... and 3 more failures"


def test_report_says_each_likely_mistake_once():
    """Issue 33: a wrong dx failed in four cases, and the report repeated the same three
    lines of hint four times; a failure with the hint of the line before points above."""
    chk = dummy_check(points=2)
    hint = " Likely mistake: x feeds both the centred values and the mean."
    results = [Result(f"dx:{c}", False, 1.0, f"dx for {c} is off{hint}") for c in "abc"]
    results.append(Result("db:a", False, 1.0, "db for a is off Likely mistake: another one."))
    results.append(Result("dx:d", False, 1.0, f"dx for d is off{hint}"))
    lines = judge.report(chk, results, 0.0).splitlines()
    assert lines[1] == f"  FAIL dx for a is off{hint}"
    assert lines[2:4] == [f"  FAIL dx for {c} is off Likely mistake: as above." for c in "bc"]
    assert lines[4] == "  FAIL db for a is off Likely mistake: another one."
    assert lines[5] == f"  FAIL dx for d is off{hint}"  # said again: "above" is another


def test_report_gives_the_share_of_weight_that_passed():
    """16 of 28 sub-checks passed and the cell earned 1.15 of 3: the weights differ, so the
    credit line says the share of weight that passed, from which the score follows. A
    sub-check worth nothing alone ("b", a precondition) is not counted: review 34 read "1 of
    2 sub-checks passed" over a cell of 0 points as credit."""
    chk = dummy_check(points=3)
    results = [Result("a", True, 1.0), Result("b", True, 0.0), Result("c", False, 2.0, "c off")]
    text = judge.report(chk, results, score(chk, results))
    assert "(1 of 2 sub-checks passed)" in text.splitlines()[0]
    assert "weights (here 33%)" in text.splitlines()[-1]
    assert score(chk, results) == 1.0


# ----------------------------------------------------------- score


def results_of(passed: list[bool], weights: list[float] | None = None) -> list[Result]:
    weights = weights or [1.0] * len(passed)
    return [Result(f"k{i}", p, w) for i, (p, w) in enumerate(zip(passed, weights, strict=True))]


def test_score_floors_to_hundredths():
    assert score(dummy_check(2), results_of([True, False, False])) == 0.66
    assert score(dummy_check(1), results_of([True, True, False])) == 0.66
    assert score(dummy_check(3), results_of([True, True, False])) == 2.0
    assert score(dummy_check(3), results_of([True] * 299 + [False])) == 2.99
    assert score(dummy_check(3), results_of([True, False], [2.0, 1.0])) == 2.0
    assert score(dummy_check(2), results_of([True, False], [2.0, 1.0])) == 1.33
    # 0.29 is not exactly representable: 0.29 * 100 must not floor to 28.
    assert score(dummy_check(0.29), results_of([True])) == 0.29


def test_score_all_fail_is_zero_and_nothing_to_judge_is_zero():
    assert score(dummy_check(3), results_of([False] * 7)) == 0.0
    assert score(dummy_check(3), []) == 0.0


@FAST
@given(
    st.lists(st.floats(0.1, 10.0), min_size=1, max_size=300),
    st.integers(1, 20).map(lambda n: n / 2),
)
def test_score_all_pass_gives_exactly_full_points(weights, points):
    got = score(dummy_check(points), results_of([True] * len(weights), weights))
    assert got == points


@FAST
@given(
    st.lists(st.tuples(st.booleans(), st.floats(0.1, 10.0)), min_size=1, max_size=300).filter(
        lambda rs: not all(p for p, _ in rs)
    ),
    st.integers(1, 20).map(lambda n: n / 2),
)
def test_score_is_never_full_unless_everything_passed(pairs, points):
    passed = [p for p, _ in pairs]
    weights = [w for _, w in pairs]
    got = score(dummy_check(points), results_of(passed, weights))
    assert 0.0 <= got < points
    assert got == round(got, 2)
    exact = points * sum(w for p, w in pairs if p) / sum(weights)
    assert exact - 0.01 < got <= exact + 1e-9


def test_score_299_of_300_weights_is_below_3():
    results = results_of([True] * 299 + [False])
    assert score(dummy_check(3), results) < 3
    # The failing one weighs least of all.
    results = results_of([True] * 299 + [False], [1.0] * 299 + [0.1])
    assert score(dummy_check(3), results) < 3


# ----------------------------------------------------------- Outputs.record


def test_an_exception_fails_only_its_keys():
    out = Outputs()
    out.record("a", lambda: 1.5)
    out.record(["b", "c"], lambda: 1 / 0)
    out.record("d", lambda: [1.0, 2.0])
    assert out["a"] == 1.5
    np.testing.assert_array_equal(out["d"], [1.0, 2.0])
    for key in ("b", "c"):
        assert isinstance(out[key], Broken)
        assert out[key].why.startswith("raised ZeroDivisionError")


def test_raised_keeps_the_first_line_of_a_long_message():
    def boom():
        raise ValueError("first line " + "x" * 300 + "\nsecond line")

    def bare():
        raise KeyError

    out = Outputs()
    out.record("a", boom)
    out.record("b", bare)
    head = "raised ValueError in `boom` inside `test_raised_keeps_the_first_line_of_a_long_message`"
    assert out["a"].why.startswith(f"{head}: first line ")
    assert "second line" not in out["a"].why
    assert len(out["a"].why) <= len(f"{head}: ") + 120
    assert out["b"].why.startswith("raised KeyError in `bare`")


class StudentValue:  # as a notebook's cell defines it, at the top level
    def __mul__(self, other):
        def _backward():
            raise NotImplementedError()

        _backward()

    def exp(self):
        return np.zeros(3).reshape(2, 2)  # numpy raises, in the student's exp


def test_raised_names_the_function_of_the_student_that_raised():
    """Issue 22, item 8: "raised NotImplementedError" says which function raised it: the
    innermost of the student's own (a closure by the function it is in), never the course's
    or numpy's."""

    out = Outputs()
    out.record("mul", lambda: StudentValue() * 2)
    out.record("exp", lambda: StudentValue().exp())
    out.record("course", lambda: 1 / 0)  # a lambda of the check's own: no name
    assert out["mul"] == Broken(
        "raised NotImplementedError in `_backward` inside `StudentValue.__mul__`"
    )
    assert out["exp"].why.startswith("raised ValueError in `")
    assert "in `StudentValue.exp`: cannot reshape" in out["exp"].why
    assert out["course"] == Broken("raised ZeroDivisionError: division by zero")


def test_a_missing_name_is_broken_with_the_name():
    student = Student({"other": 1})
    out = Outputs()
    out.record(["data:x", "grad:x"], lambda: student.Value(1.0))
    assert out["data:x"] == out["grad:x"] == Broken("the notebook defines no `Value`")
    with pytest.raises(MissingName):
        student.eval_numerical_gradient  # noqa: B018
    with pytest.raises(AttributeError):
        student._private  # noqa: B018
    assert student.other == 1


@pytest.mark.parametrize("returned", [(1.0, 2.0, 3.0), (1.0,), 5.0])
def test_wrong_number_of_results_is_broken(returned):
    out = Outputs()
    out.record(["a", "b"], lambda: returned)
    assert isinstance(out["a"], Broken) and isinstance(out["b"], Broken)


def test_student_output_does_not_leak(capfd):
    def noisy():
        print("LEAK print")
        sys.stderr.write("LEAK stderr\n")
        warnings.warn("LEAK warning", UserWarning, stacklevel=1)
        warnings.warn("LEAK deprecation", DeprecationWarning, stacklevel=1)
        return 2.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = Outputs()
        out.record("a", noisy)
        out.record("b", lambda: [print("LEAK too"), 1 / 0])
    assert out["a"] == 2.0 and isinstance(out["b"], Broken)
    assert caught == []
    printed = capfd.readouterr()
    assert "LEAK" not in printed.out and "LEAK" not in printed.err


def test_numpy_runtime_warnings_are_swallowed(capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that got out would be an exception
        out = Outputs()
        out.record("log", lambda: np.log(0.0))
        out.record("div", lambda: np.array([1.0, -1.0]) / 0.0)
        out.record("overflow", lambda: np.exp(np.array(1000.0)))
    assert out["log"] == -np.inf
    np.testing.assert_array_equal(out["div"], [np.inf, -np.inf])
    assert out["overflow"] == np.inf
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


def test_numpy_errors_are_ignored_even_if_the_notebook_made_them_raise():
    with np.errstate(all="raise"):
        out = Outputs()
        out.record("log", lambda: np.log(np.array(0.0)))
        out.record("nan", lambda: np.sqrt(np.array(-1.0)))
    assert out["log"] == -np.inf
    assert np.isnan(out["nan"])


@pytest.mark.parametrize(
    ("returned", "expected", "kind"),
    [
        (np.float64(1.25), 1.25, float),
        (np.float32(0.5), 0.5, float),
        (np.array(2.5), 2.5, float),
        (3, 3.0, float),
        (np.int64(4), 4.0, float),
        (True, 1.0, float),  # an observation, never read as a verdict
        (np.bool_(False), 0.0, float),
    ],
)
def test_scalars_become_plain_python(returned, expected, kind):
    out = Outputs()
    out.record("k", lambda: returned)
    assert type(out["k"]) is kind
    assert out["k"] == expected


def test_sequences_become_float64_arrays():
    out = Outputs()
    out.record("k", lambda: [[1, 2], [3, 4]])
    out.record(["a", "b"], lambda: (np.float32(1.5), np.array([1, 2], dtype=np.int32)))
    assert out["k"].dtype == np.float64 and out["k"].shape == (2, 2)
    assert type(out["a"]) is float
    assert out["b"].dtype == np.float64


class NotANumber:
    pass


@pytest.mark.parametrize(
    "returned",
    [
        NotANumber(),
        "abc",
        {"a": 1},
        [1.0, "x"],
        [[1.0, 2.0], [3.0]],
        None,
        "1.5",
    ],
)
def test_non_numbers_become_broken(returned):
    out = Outputs()
    out.record("k", lambda: returned)
    assert isinstance(out["k"], Broken)
    assert out["k"].why.startswith("returned ")


# ----------------------------------------------------------- check() in a grade cell


class GradeCell:
    """A grade cell `check(name, globals())`, run as autograding runs it.

    In the student's kernel check() probes and displays the outputs under PROBE_MIME (here
    captured from IPython.display.display); the payload is saved in the notebook as JSON;
    outside the kernel `verdict` judges it (course.grader.nbgrader_ext.JudgeHiddenChecks).
    """

    def __init__(self, name: str, namespace: dict, monkeypatch):
        import IPython.display

        shown = []
        monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
        self.in_kernel = grading.check(name, namespace)
        self.displayed = [obj for obj in shown if isinstance(obj, dict)]
        assert len(self.displayed) == 1, "one display per grade cell"
        payload = self.displayed[0][probe.PROBE_MIME]
        self.points, self.report = judge.verdict(name, json.loads(json.dumps(payload)))


# The names each check of assignment 01 needs first.
FIRST_NAME = {
    "eval_numerical_gradient": "eval_numerical_gradient",
    "eval_numerical_gradient_array": "eval_numerical_gradient_array",
    "by_hand_gradients": "backprop_by_hand",
    "softmax_by_hand": "softmax_ce_by_hand",
}


@pytest.mark.parametrize("name", BACKPROP_CHECKS)
def test_check_of_an_empty_namespace_scores_exactly_zero(name, capfd, monkeypatch):
    cell = GradeCell(name, {}, monkeypatch)
    # nbgrader parses the repr of the cell's value: a plain float, never np.float64.
    assert type(cell.points) is float
    assert cell.points == 0.0 and repr(cell.points) == "0.0"
    assert cell.report.startswith(f"{name}: 0 of ")
    assert "FAIL" in cell.report
    # In the kernel: worth exactly 0.0 (a set-up that skips the verdict scores zero),
    # a summary for the student, and nothing written to stdout or stderr directly.
    assert type(cell.in_kernel) is float and repr(cell.in_kernel) == "0.0"
    assert cell.displayed[0]["text/plain"].startswith(f"{name}: ")
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


@pytest.mark.parametrize("name", BACKPROP_CHECKS)
def test_verdict_without_a_payload_is_zero_with_the_reason(name):
    points, text = judge.verdict(name, None, "the cell stopped with NameError")
    assert type(points) is float and points == 0.0
    assert text == (
        f"{name}: 0 of {model.CHECKS[name].points:g} points (the cell stopped with NameError)"
    )


@pytest.mark.parametrize("name", BACKPROP_CHECKS)
def test_check_of_an_empty_namespace_says_what_is_missing(name, monkeypatch):
    report = GradeCell(name, {}, monkeypatch).report
    assert f"the notebook defines no `{FIRST_NAME.get(name, 'Value')}`" in report


# ----------------------------------------------------------- checks, references, notebooks


def source_notebook(notebook: str):
    return nbformat.read(ROOT / "source" / f"{notebook}.ipynb", as_version=4)


def grade_cells(notebook: str) -> dict[str, tuple[dict, str]]:
    cells = {}
    for cell in source_notebook(notebook).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            assert meta["grade_id"] not in cells, f"two grade cells {meta['grade_id']!r}"
            cells[meta["grade_id"]] = (meta, cell.source)
    return cells


def test_assignment_01_has_checks():
    assert BACKPROP_CHECKS
    assert set(BACKPROP_CHECKS) <= set(ALL_CHECKS)


@pytest.mark.parametrize("name", ALL_CHECKS)
def test_every_check_has_a_reference_with_a_rule_per_key(name):
    chk = model.CHECKS[name]
    path = ROOT / "references" / f"{chk.notebook}.json"
    assert path == references.reference_path(chk.notebook)
    assert name in json.loads(path.read_text()), f"{path} has no entry for {name}"
    reference = references.load_reference(chk)
    assert reference
    for key in reference:
        rule = rule_for(chk, key)
        assert rule.kind in {"close", "true", "below"}
        # Only an error contract's reference is the call raising (Rule.raises).
        assert isinstance(reference[key], Broken) == bool(rule.raises), key
        if rule.raises:
            assert reference[key].why.startswith(f"raised {rule.raises}"), reference[key]


@pytest.mark.parametrize("name", ALL_CHECKS)
def test_every_check_points_match_its_grade_cell(name):
    chk = model.CHECKS[name]
    cells = grade_cells(chk.notebook)
    assert name in cells, f"no grade cell {name!r} in source/{chk.notebook}.ipynb"
    meta, source = cells[name]
    assert float(meta["points"]) == float(chk.points)
    assert f'check("{name}"' in source


def test_every_grade_cell_of_01_runs_a_registered_check():
    for grade_id, (_meta, source) in grade_cells(BACKPROP).items():
        if "check(" in source:
            assert grade_id in model.CHECKS


@pytest.fixture(scope="module")
def solutions():
    text = (ROOT / "source" / "01_backprop" / "backprop.pct.py").read_text()
    return build.solution_namespace(build.notebook_from_text(text), "x")


@pytest.mark.parametrize("name", BACKPROP_CHECKS)
def test_the_solution_scores_full_marks(name, solutions, capfd, monkeypatch):
    cell = GradeCell(name, solutions, monkeypatch)
    assert type(cell.points) is float
    assert cell.points == model.CHECKS[name].points
    assert "FAIL" not in cell.report
    assert cell.in_kernel == 0.0
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


@pytest.mark.parametrize("name", BACKPROP_CHECKS)
def test_the_solution_probe_matches_the_stored_reference_keys(name, solutions):
    """A sub-check added without `course references` would be silently ungraded."""
    chk = model.CHECKS[name]
    outputs = probe.probe(chk, solutions)
    assert set(outputs) == set(references.load_reference(chk))
    assert not any(isinstance(v, Broken) for v in outputs.values())


def test_paths_are_relative_to_the_course_root():
    assert (ROOT / "nbgrader_config.py").exists()
    assert Path(references.reference_path(BACKPROP)).is_relative_to(ROOT)


def test_the_large_cases_draws_are_a_generators_kept_or_not():
    """common._Draws replays a seed's earlier draws: the same values as default_rng(seed),
    in the same order, also when a later sequence leaves the kept one, and as copies (a
    function that edits its inputs changes no later draw)."""
    from course.checks import common

    calls = [
        ("standard_normal", ((3, 4),)),
        ("uniform", (-3, 3)),
        ("choice", ([-1.0, 1.0], 5)),
        ("standard_normal", (7,)),
    ]
    for seed in (101, 102, 101, 101):
        draws, rng = common._Draws(seed), np.random.default_rng(seed)
        for method, args in calls:
            got = getattr(draws, method)(*args)
            assert np.array_equal(got, getattr(rng, method)(*args)), (seed, method)
            if isinstance(got, np.ndarray):
                got[...] = 0  # edited by the caller
    draws, rng = common._Draws(101), np.random.default_rng(101)
    for method, args in [calls[0], ("standard_normal", (5,)), ("uniform", (0, 1, 3))]:
        assert np.array_equal(getattr(draws, method)(*args), getattr(rng, method)(*args))


def test_a_stopped_cell_is_named_by_its_heading_never_by_its_number():
    """Issue 33's third walk: the notes said "timed out in value_core" of one cell and
    "cut off in cell 1" of another. Each names the heading above the cell, as the report's
    section column and the notebook show it, and its grade id where it has one."""
    from course.grader.autograde import described

    notes = described(
        [
            {
                "notebook": "backprop",
                "cell": "value_core",
                "index": 5,
                "kind": "timed out",
                "why": "",
                "section": "Exercise 1.1: a scalar node, Value (operators)",
            },
            {
                "notebook": "backprop",
                "cell": None,
                "index": 1,
                "kind": "cut off",
                "why": "the kernel died",
                "section": "01 · Backprop by hand",
            },
            {
                "notebook": "backprop",
                "cell": None,
                "index": 0,
                "kind": "cut off",
                "why": "",
                "section": "",
            },
        ]
    )
    assert notes == [
        'backprop.ipynb: timed out in value_core under "Exercise 1.1: a scalar node, Value '
        '(operators)"',
        'backprop.ipynb: cut off in a cell under "01 · Backprop by hand": the kernel died',
        "backprop.ipynb: cut off in a cell above the first heading",
    ]
    assert not any("cell 1" in note or "cell 0" in note for note in notes)


def _flaky_reference(monkeypatch, fails):
    """The source solutions' references, except that `fails(check name, seed)` says where
    the solution breaks its check (as micrograd example 2's self-check did, 4 draws in
    3000)."""
    from course.grader import sources

    real = sources.reference_outputs

    def reference_outputs(chk, namespace, seed):
        if fails(chk.name, seed):
            raise sources.SolutionFails(f"the solution fails check {chk.name!r}: (made up)")
        return real(chk, namespace, seed)

    monkeypatch.setattr(sources, "reference_outputs", reference_outputs)


def _course_of_sources(tmp_path) -> Path:
    (tmp_path / "source").symlink_to(course_root() / "source")
    return tmp_path


def test_a_draw_the_solution_fails_is_drawn_again_from_the_secret(tmp_path, monkeypatch):
    """One submission's salt must not stop a class: the check draws again, in an order the
    secret fixes, so the same submission gets the same inputs every time."""
    from course.grader import inputs

    root = _course_of_sources(tmp_path)
    key = inputs.secret(root)
    first = inputs.seed_of(key, "svm_loss_naive", "salt")
    _flaky_reference(monkeypatch, lambda name, seed: seed == first)
    got = inputs.secret_inputs(root, "02_linear", "salt")
    assert got.seeds["svm_loss_naive"] == inputs.seed_of(key, "svm_loss_naive", "salt\0redraw 1")
    for name, seed in got.seeds.items():
        if name != "svm_loss_naive":
            assert seed == inputs.seed_of(key, name, "salt"), name
    again = inputs.secret_inputs(root, "02_linear", "salt")  # from the cache
    assert again.seeds == got.seeds and again.references == got.references


def test_a_check_the_solution_fails_on_every_draw_stops_with_its_name(tmp_path, monkeypatch):
    from course.grader import inputs

    root = _course_of_sources(tmp_path)
    _flaky_reference(monkeypatch, lambda name, seed: name == "svm_loss_naive")
    with pytest.raises(inputs.InputsError, match="svm_loss_naive.*on 5 draws"):
        inputs.secret_inputs(root, "02_linear", "salt")
    assert not list((root / inputs.CACHE).glob("*/*.json")), "a failed run cached inputs"


# Review 35: the wrong predictions of 08's part 7 a learner makes, each named by its slip
# (never by the expected value), and the right ones pass.
SHAPE_SLIPS = [
    ("query", lambda d: 1 / np.sqrt(d), "is the inverse of the factor"),
    ("query", lambda d: float(d), "is the square of the factor"),
    ("query", lambda d: 1.0, "is 1 at every width"),
    ("sgd", lambda c: 1 / c**2, "is the inverse of the ratio"),
    ("sgd", lambda c: c, "counts one of two changes"),
    ("sgd", lambda c: 1 / c, "counts one of two changes, the other way round"),
    ("sgd", lambda c: 1.0, "is 1 at every value of c"),
]


@pytest.mark.parametrize("rule,slip,words", SHAPE_SLIPS, ids=[w for _, _, w in SHAPE_SLIPS])
def test_a_slip_of_08s_shape_predictions_is_named(rule, slip, words):
    chk = checks_by_name()["shape_predictions"]
    right = {"predicted_query_scale": np.sqrt, "predicted_sgd_step_ratio": lambda c: c**2}
    name = {"query": "predicted_query_scale", "sgd": "predicted_sgd_step_ratio"}[rule]
    reference = probe.probe(chk, right, seed=5)
    results = judge.judge(chk, probe.probe(chk, {**right, name: slip}, seed=5), reference)
    [failed] = [r for r in results if not r.passed]
    assert failed.key.startswith(f"{rule}:") and f" {words}. Likely mistake:" in (failed.message), (
        failed.message
    )
    assert all(r.passed for r in judge.judge(chk, reference, reference))
