"""Inputs that probes draw, shared by every assignment's checks."""

import numpy as np


def away_from_zero(rng: np.random.Generator, shape=None, low: float = 0.5, high: float = 2.0):
    """Entries of size `low` to `high` with random signs (a float when shape is None).

    Away from zero so that a kink (ReLU at 0) is not hit by chance, and no tiny weight or
    gradient makes a relative error of rounding (or of where epsilon sits) look like a
    mistake; the probe chooses `low` for what it checks.
    """
    magnitude = rng.uniform(low, high, shape)
    signs = rng.choice([-1.0, 1.0], shape)
    return float(magnitude * signs) if shape is None else magnitude * signs
