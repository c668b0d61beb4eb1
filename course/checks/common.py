"""Shared by the hidden checks: the inputs probes draw, and the grader-side measures
(course.grader.model.Rule.measure).

Each turns observations into a verdict in the grader's process: the kernel records raw
values (results, arrays after a call, forward values at nudged inputs, sample moments),
never a boolean or an error it computed itself.
"""

from __future__ import annotations

import numpy as np

from course.gradcheck import rel_error

STEP = 1e-5  # the step of course.grader.probe.nudged, unless a probe says otherwise


def gradient_observation(analytic, plus, minus) -> np.ndarray:
    """(3, K): a student's gradient and f at x + h and x - h, element by element; a
    gradient of the wrong size becomes NaN (it then disagrees, in the grader)."""
    plus, minus = np.ravel(plus), np.ravel(minus)
    grad = np.asarray(analytic, dtype=np.float64).ravel()
    if grad.size != plus.size:
        grad = np.full(plus.size, np.nan)
    return np.stack([grad, plus, minus])


def stacked(*observations: np.ndarray) -> np.ndarray:
    """Several gradient observations side by side (one measure for all)."""
    return np.concatenate(observations, axis=1)


def centred_error(h: float = STEP):
    """measure: the relative error between a student's gradient and the centred
    difference of their own forward values, (f(x+h) - f(x-h)) / 2h."""

    def measure(got, want) -> float:
        got = np.asarray(got, dtype=np.float64)
        if got.ndim != 2 or got.shape[0] != 3:
            return float("inf")
        return rel_error(got[0], (got[1] - got[2]) / (2 * h))

    return measure


def against_reference(got, want) -> float:
    """measure: relative error of a student's value against a trusted value the probe
    computed in the reference run (Rule.uses names the student's observation)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    return rel_error(got, want)


def seeded(got, want):
    """measure: draws with one seed, the same seed again, another seed (stacked): the
    same seed must give the same draws, another one different draws."""
    first, again, other = np.asarray(got, dtype=np.float64)
    if not np.array_equal(first, again):
        return "the same seed does not give the same draws"
    if np.array_equal(first, other):
        return "another seed gives the same draws"
    return True


def away_from_zero(rng: np.random.Generator, shape=None, low: float = 0.5, high: float = 2.0):
    """Entries of size `low` to `high` with random signs (a float when shape is None).

    Away from zero so that a kink (ReLU at 0) is not hit by chance, and no tiny weight or
    gradient makes a relative error of rounding (or of where epsilon sits) look like a
    mistake; the probe chooses `low` for what it checks.
    """
    magnitude = rng.uniform(low, high, shape)
    signs = rng.choice([-1.0, 1.0], shape)
    return float(magnitude * signs) if shape is None else magnitude * signs
