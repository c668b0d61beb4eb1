"""Property tests of course/gradcheck.py: the checker the later assignments trust.

A gradient checker that never fails is worse than none, so next to "the right gradient
passes" every family of tests also shows that a wrong gradient is caught.
"""

import contextlib
import io

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course.gradcheck import compare_table, gradient_error, rel_error

FAST = settings(max_examples=30, deadline=None)

# Small arrays, 1-D to 3-D: at most 4 * 4 * 4 = 64 entries, two calls of f per entry.
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def signed(draw, shape, low=0.5, high=2.0):
    """An array of `shape` with |entries| in [low, high] and random signs: no entry near 0."""
    magnitude = draw(hnp.arrays(np.float64, shape, elements=st.floats(low, high)))
    negative = draw(hnp.arrays(np.bool_, shape))
    return np.where(negative, -magnitude, magnitude)


@st.composite
def array_pairs(draw):
    """Two finite arrays of one shape (possibly empty)."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = draw(hnp.arrays(np.float64, shape, elements=finite))
    y = draw(hnp.arrays(np.float64, shape, elements=finite))
    return x, y


def assert_grad_close(got, want, rtol=1e-7, floor=1e-3):
    """|got - want| <= rtol * max(|want|, floor), entry by entry; an independent yardstick
    (not gradcheck.rel_error, which is itself under test)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    err = np.abs(got - want) / np.maximum(np.abs(want), floor)
    assert np.all(err < rtol), f"max relative error {err.max():.2e}"


# ------------------------------------------------------------------------- rel_error


@FAST
@given(array_pairs())
def test_rel_error_of_identical_arrays_is_zero(pair):
    x, _ = pair
    assert rel_error(x, x) == 0.0
    assert rel_error(x, x.copy()) == 0.0


@FAST
@given(array_pairs())
def test_rel_error_is_symmetric_and_within_0_1(pair):
    x, y = pair
    e = rel_error(x, y)
    assert isinstance(e, float)
    assert e == rel_error(y, x)
    assert 0.0 <= e <= 1.0


@FAST
@given(st.data())
def test_rel_error_detects_a_single_perturbed_entry(data):
    shape = data.draw(shapes)
    x = data.draw(signed(shape, 0.1, 10.0))
    index = data.draw(st.tuples(*[st.integers(0, n - 1) for n in shape]))
    factor = data.draw(st.sampled_from([1.001, 0.999, 1.1, 2.0, -1.0, 0.0]))
    y = x.copy()
    y[index] *= factor
    # |x - fx| / (|x| + |fx|) = |1 - f| / (1 + |f|) >= 0.0005 for these factors.
    assert rel_error(x, y) >= 4e-4
    assert rel_error(y, x) == rel_error(x, y)


def test_rel_error_known_values():
    assert rel_error(1.0, 3.0) == pytest.approx(0.5)
    assert rel_error(1.0, -1.0) == 1.0
    assert rel_error([1.0, 2.0], [1.0, 2.0 * 1.5]) == pytest.approx(0.2)
    # The maximum over entries, not an average.
    assert rel_error([1.0, 1.0, 1.0], [1.0, 1.0, 3.0]) == pytest.approx(0.5)


def test_rel_error_of_empty_arrays_is_zero():
    assert rel_error(np.array([]), np.array([])) == 0.0
    assert rel_error(np.zeros((0, 3)), np.zeros((0, 3))) == 0.0
    assert rel_error([], []) == 0.0


def test_rel_error_floor_of_1e_8():
    # Without the floor, 1e-20 vs 3e-20 would be a relative error of 0.5.
    assert rel_error(1e-20, 3e-20) < 1e-11
    assert rel_error(0.0, 1e-12) == pytest.approx(1e-12 / 1e-8)
    assert rel_error(0.0, 0.0) == 0.0
    # Above the floor the error is relative again.
    assert rel_error(1e-6, 3e-6) == pytest.approx(0.5)


@FAST
@given(st.floats(-1e-10, 1e-10), st.floats(-1e-10, 1e-10))
def test_rel_error_of_two_tiny_values_is_small(a, b):
    assert rel_error(a, b) <= 2e-10 / 1e-8


def test_rel_error_flags_nan():
    # NaN is never "close": comparisons with the result must fail.
    assert not rel_error([1.0, np.nan], [1.0, 1.0]) < 1e-7


# ------------------------------------------------------------------ gradient_error


def _scalar_cases(draw, shape):
    """(f, exact gradient) pairs whose derivatives stay away from 0."""
    w = draw(signed(shape))
    a = draw(st.floats(0.1, 1.0)) * draw(st.sampled_from([-1.0, 1.0]))
    c1, c2, c3 = (draw(st.floats(-1.0, 1.0)) for _ in range(3))
    return {
        "sum(w * x**2)": (lambda x: np.sum(w * x**2), lambda x: 2 * w * x),
        "sum(sin(x))": (lambda x: np.sum(np.sin(x)), np.cos),
        "sum(exp(a * x))": (lambda x: np.sum(np.exp(a * x)), lambda x: a * np.exp(a * x)),
    }


@FAST
@given(st.data(), st.sampled_from(["sum(w * x**2)", "sum(sin(x))", "sum(exp(a * x))"]))
def test_gradient_error_passes_closed_forms(data, name):
    shape = data.draw(shapes)
    # |x| in [0.3, 1.4]: cos(x) >= 0.17, 2wx >= 0.3.
    x = data.draw(signed(shape, 0.3, 1.4))
    f, exact = _scalar_cases(data.draw, shape)[name]
    before = x.copy()
    error = gradient_error(f, x, exact(before))
    assert type(error) is float and error < 1e-7
    assert x.tobytes() == before.tobytes(), "x changed"


@FAST
@given(st.data())
def test_gradient_error_never_changes_x(data):
    shape = data.draw(shapes)
    # Arbitrary values, where old + h - h would not round-trip.
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-1e3, 1e3)))
    before = x.copy()
    gradient_error(lambda v: np.sum(v**2), x, 2 * x)
    assert x.tobytes() == before.tobytes()
    gradient_error(lambda v: v * 3.0, x, 3 * np.ones_like(x), df=np.ones_like(x))
    assert x.tobytes() == before.tobytes()


def test_gradient_error_on_a_strided_view_leaves_its_base():
    base = np.linspace(-1.0, 1.0, 24).reshape(4, 6)
    before = base.copy()
    x = base[::2, 1::2]  # a non-contiguous view
    assert gradient_error(lambda v: np.sum(v**3), x, 3 * x**2) < 1e-7
    assert base.tobytes() == before.tobytes()


def test_gradient_error_custom_step():
    x = np.array([0.5, -1.0, 2.0])
    # sum(x**3) with h: (x+h)^3 - (x-h)^3 = 6x^2 h + 2h^3, so the estimate is 3x^2 + h^2.
    h = 1e-2
    assert gradient_error(lambda v: np.sum(v**3), x, 3 * x**2 + h**2, h=h) < 1e-9
    assert gradient_error(lambda v: np.sum(v**3), x, 3 * x**2, h=h) > 1e-6


def test_gradient_error_of_a_misshapen_gradient_is_one():
    x = np.ones((2, 3))
    assert gradient_error(lambda v: np.sum(v), x, np.ones((3, 2))) == 1.0


@FAST
@given(st.data())
def test_gradient_error_catches_a_wrong_closed_form(data):
    shape = data.draw(shapes)
    x = data.draw(signed(shape, 0.3, 1.4))
    w = data.draw(signed(shape))
    f = lambda v: np.sum(v**2)  # noqa: E731
    assert gradient_error(f, x, 2 * x) < 1e-7
    assert gradient_error(f, x, 3 * x) > 1e-3  # the wrong derivative of x**2
    assert gradient_error(f, x, -2 * x) > 1e-3  # wrong sign
    g = lambda v: np.sum(w * v**2)  # noqa: E731
    assert gradient_error(g, x, 2 * x) > 1e-3 or np.allclose(w, 1.0)  # forgot the weights
    s = lambda v: np.sum(np.sin(v))  # noqa: E731
    assert gradient_error(s, x, -np.cos(x)) > 1e-3
    assert gradient_error(s, x, np.sin(x)) > 1e-3 or np.allclose(np.sin(x), np.cos(x), rtol=1e-3)


def test_no_numerical_gradient_function_is_importable():
    """Assignment 01 grades a numerical-gradient function: the package offers none."""
    import course.gradcheck as gradcheck

    assert not hasattr(gradcheck, "numerical_gradient")


# ------------------------------------------------------------ gradient_error with df


@FAST
@given(st.data())
def test_array_gradient_of_a_matrix_product(data):
    n, d, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    x = data.draw(signed((n, d)))
    W = data.draw(signed((d, m)))
    df = data.draw(signed((n, m)))
    before = x.copy()
    exact = df @ W.T
    # An entry that cancels to 0 is compared with rounding noise (~1e-11) against the
    # 1e-8 floor of the relative error: noise by construction, not a wrong gradient.
    assume(np.all(np.abs(exact) > 1e-3))
    assert gradient_error(lambda v: v @ W, x, exact, df) < 1e-7
    assert x.tobytes() == before.tobytes()
    # A wrong backward fails: twice the gradient, or one that ignores the upstream df.
    if np.max(np.abs(exact)) > 1e-3:  # not an all-cancelling df
        assert gradient_error(lambda v: v @ W, x, 2 * exact, df) > 1e-3
        wrong = np.ones_like(df) @ W.T
        assert gradient_error(lambda v: v @ W, x, wrong, df) > 1e-3 or np.allclose(
            exact, wrong, rtol=1e-3
        )


@FAST
@given(st.data())
def test_array_gradient_of_tanh(data):
    shape = data.draw(shapes)
    x = data.draw(signed(shape, 0.1, 1.5))
    df = data.draw(signed(shape))
    exact = df * (1 - np.tanh(x) ** 2)
    assert gradient_error(np.tanh, x, exact, df) < 1e-7
    assert gradient_error(np.tanh, x, df * np.tanh(x), df) > 1e-3  # a classic wrong derivative


@FAST
@given(st.data())
def test_array_gradient_when_f_returns_a_view_of_x(data):
    shape = data.draw(shapes)
    x = data.draw(signed(shape))
    df = data.draw(signed(shape))
    before = x.copy()
    # f returns x itself: f(x + h) would be overwritten by the next nudge without a copy.
    assert gradient_error(lambda v: v, x, df, df) < 1e-7
    assert x.tobytes() == before.tobytes()
    # Other views: a transpose and a flattening.
    assert gradient_error(lambda v: v.T, x, df, df.T) < 1e-7
    assert gradient_error(lambda v: v.reshape(-1), x, df, df.reshape(-1)) < 1e-7
    assert x.tobytes() == before.tobytes()


def test_array_gradient_of_a_scalar_function_with_unit_df():
    x = np.array([[0.5, -1.0], [1.5, 0.25]])
    assert gradient_error(lambda v: np.sum(v**2), x, 2 * x) < 1e-9
    assert gradient_error(lambda v: v**2, x, 2 * x, df=np.ones_like(x)) < 1e-9


# ---------------------------------------------------------------------- compare_table


def _header_and_rows(text):
    lines = text.strip().splitlines()
    return lines[0], lines[1:]


def test_compare_table_flags_close_and_not_close(capsys):
    ref = {
        "W1": np.array([[1.0, 2.0], [3.0, 4.0]]),
        "b1": np.array([0.5, -0.5]),
        "W2": np.array([1.0, 2.0, 3.0]),
    }
    mine = {"W1": ref["W1"].copy(), "b1": ref["b1"] * (1 + 1e-10), "W2": ref["W2"] * 2}
    rows = compare_table(mine, ref)
    assert [r["name"] for r in rows] == ["W1", "b1", "W2"]
    by = {r["name"]: r for r in rows}
    assert by["W1"]["exact"] and by["W1"]["close"]
    assert by["W1"]["max_diff"] == 0.0 and by["W1"]["rel_error"] == 0.0
    assert not by["b1"]["exact"] and by["b1"]["close"]
    assert not by["W2"]["exact"] and not by["W2"]["close"]
    assert by["W2"]["max_diff"] == pytest.approx(3.0)
    assert by["W2"]["rel_error"] == pytest.approx(1 / 3)
    assert by["W1"]["shape"] == (2, 2)
    header, lines = _header_and_rows(capsys.readouterr().out)
    assert "variable" in header and "rel error" in header
    assert len(lines) == 3
    for line, name in zip(lines, ["W1", "b1", "W2"], strict=True):
        assert line.startswith(name)
    assert "True" in lines[0] and "False" in lines[2]


def test_compare_table_missing_and_misshapen_are_not_close(capsys):
    ref = {"dW": np.ones((3, 4)), "db": np.ones(4), "dx": np.ones((2, 3))}
    mine = {"dW": np.ones((4, 3)), "dx": np.ones((2, 3))}  # dW transposed, db missing
    rows = {r["name"]: r for r in compare_table(mine, ref)}
    for name in ("dW", "db"):
        assert rows[name]["close"] is False and rows[name]["exact"] is False
        assert np.isnan(rows[name]["rel_error"]) and np.isnan(rows[name]["max_diff"])
    assert rows["dW"]["shape"] == (3, 4)  # the reference's shape
    assert rows["dx"]["close"] is True
    out = capsys.readouterr().out
    for name in ("dW", "db", "dx"):
        assert name in out
    assert "nan" in out


def test_compare_table_ignores_extra_variables_and_honours_tol(capsys):
    ref = {"a": np.array([1.0, 2.0])}
    mine = {"a": np.array([1.0, 2.0 * (1 + 1e-5)]), "extra": np.zeros(3)}
    (row,) = compare_table(mine, ref)
    assert row["close"] is False
    (row,) = compare_table(mine, ref, tol=1e-3)
    assert row["close"] is True
    # Just above and just below the default tolerance of 1e-7.
    (above,) = compare_table({"a": np.array([1.0 + 4e-7])}, {"a": np.array([1.0])})
    (below,) = compare_table({"a": np.array([1.0 + 1e-7])}, {"a": np.array([1.0])})
    assert above["close"] is False and below["close"] is True
    assert "extra" not in capsys.readouterr().out


def test_compare_table_nan_gradient_is_not_close(capsys):
    (row,) = compare_table({"a": np.array([1.0, np.nan])}, {"a": np.array([1.0, 2.0])})
    assert row["close"] is False and row["exact"] is False


@FAST
@given(array_pairs())
def test_compare_table_of_a_gradient_with_itself(pair):
    x, _ = pair
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        (row,) = compare_table({"grad_x": x.copy()}, {"grad_x": x})
    assert row["exact"] and row["close"]
    assert row["max_diff"] == 0.0 and row["rel_error"] == 0.0
    assert "grad_x" in printed.getvalue()
