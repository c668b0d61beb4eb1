"""Gradient checking: relative error, the error of a gradient against centred differences,
per-variable tables.

Used by every assignment after 01 (where learners write their own checker first); the
grader's measures use rel_error. Centred differences in float64: the truncation error is
O(h**2) and the rounding error O(eps / h), so h = 1e-5 keeps both near 1e-10.
"""

from collections.abc import Callable, Mapping

import numpy as np


def rel_error(x, y) -> float:
    """max(|x - y| / max(1e-8, |x| + |y|)), elementwise; 0.0 for empty arrays."""
    errors = relative_errors(x, y)
    return float(np.max(errors)) if errors.size else 0.0


def relative_errors(x, y) -> np.ndarray:
    """|x - y| / max(1e-8, |x| + |y|), element by element (the hidden checks' measure too)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    # Halved, so that values near the float64 maximum do not overflow: the ratio is the same.
    x, y = x / 2, y / 2
    return np.abs(x - y) / np.maximum(0.5e-8, np.abs(x) + np.abs(y))


def gradient_error(
    f: Callable[[np.ndarray], object],
    x: np.ndarray,
    analytic,
    df=None,
    h: float = 1e-5,
) -> float:
    """The relative error (rel_error) of an analytic gradient against centred differences
    of `f` at `x`: below about 1e-7, the gradient is right.

    f: maps x (any shape) to a scalar, or to an array when `df` is given.
    x: float array (not changed: the differences are taken on copies).
    analytic: the gradient to check, shaped like x.
    df: upstream gradient shaped like f(x); the gradient is then that of sum(f(x) * df).
    Returns 1.0 (certainly wrong) if analytic is not shaped like x.

    Deliberately not a numerical-gradient function: you wrote that in assignment 01, and
    a grading kernel must not be able to import one (README, "Grades that student code
    cannot forge"). The differences are computed here, inline, and only their agreement
    leaves this function.
    """
    x = np.array(x, dtype=np.float64)
    analytic = np.asarray(analytic, dtype=np.float64)
    if analytic.shape != x.shape:
        return 1.0
    worst = 0.0
    for ix in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[ix] += h
        minus[ix] -= h
        up = np.array(f(plus), dtype=np.float64)
        down = np.array(f(minus), dtype=np.float64)
        numeric = (float(up) - float(down) if df is None else np.sum((up - down) * df)) / (2 * h)
        worst = max(worst, rel_error(analytic[ix], numeric))
    return worst


def compare_table(
    mine: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], tol: float = 1e-7
) -> list[dict]:
    """Compare gradients variable by variable (Karpathy's `cmp`).

    Returns one row per variable of `reference`: name, shape, exact, close, max_diff,
    rel_error; prints them as a table. A missing or misshapen gradient is a failed row.
    """
    rows = []
    for name, ref in reference.items():
        ref = np.asarray(ref, dtype=np.float64)
        got = mine.get(name)
        row = {
            "name": name,
            "shape": ref.shape,
            "exact": False,
            "close": False,
            "max_diff": float("nan"),
            "rel_error": float("nan"),
        }
        if got is not None and np.shape(got) == ref.shape:
            got = np.asarray(got, dtype=np.float64)
            row["exact"] = bool(np.array_equal(got, ref))
            row["max_diff"] = float(np.max(np.abs(got - ref), initial=0.0))
            row["rel_error"] = rel_error(got, ref)
            row["close"] = row["rel_error"] < tol
        rows.append(row)
    print(f"{'variable':<10}{'shape':<12}{'exact':<7}{'close':<7}{'max diff':>10}{'rel error':>11}")
    for r in rows:
        print(
            f"{r['name']:<10}{str(r['shape']):<12}{str(r['exact']):<7}{str(r['close']):<7}"
            f"{r['max_diff']:>10.1e}{r['rel_error']:>11.1e}"
        )
    return rows
