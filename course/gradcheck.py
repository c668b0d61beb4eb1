"""Gradient checking: relative error, numerical gradients, per-variable tables.

Used by every assignment after 01 (where learners write their own checker first) and by
the hidden checks. Centred differences in float64: the truncation error is O(h**2) and
the rounding error O(eps / h), so h = 1e-5 keeps both near 1e-10.
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


def numerical_gradient(
    f: Callable[[np.ndarray], object], x: np.ndarray, df=None, h: float = 1e-5
) -> np.ndarray:
    """Centred-difference gradient of `f` at `x`.

    f: maps x (any shape) to a scalar, or to an array when `df` is given.
    x: float array, nudged in place one element at a time and restored exactly.
    df: upstream gradient shaped like f(x); the result is then d sum(f(x) * df) / dx.
    Returns grad shaped like x.
    """
    grad = np.zeros_like(x, dtype=np.float64)
    for ix in np.ndindex(x.shape):
        old = x[ix]
        x[ix] = old + h
        plus = np.array(f(x), dtype=np.float64)  # a copy: f may return a view of x
        x[ix] = old - h
        minus = np.array(f(x), dtype=np.float64)
        x[ix] = old
        if df is None:
            grad[ix] = (float(plus) - float(minus)) / (2 * h)
        else:
            grad[ix] = np.sum((plus - minus) * df) / (2 * h)
    return grad


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
