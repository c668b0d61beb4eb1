"""Data sets. Nothing is downloaded: toy sets are generated from a fixed seed with
NumPy's PCG64 generator, whose stream is the same on every platform."""

import numpy as np


def two_moons(n: int = 100, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles.

    Returns X (n, 2) float64 and y (n,) in {-1, +1}: the labels a margin (hinge) loss
    expects. The first n // 2 points are the upper moon (y = -1).
    """
    rng = np.random.default_rng(seed)
    n_upper = n // 2
    t_upper = np.linspace(0.0, np.pi, n_upper)
    t_lower = np.linspace(0.0, np.pi, n - n_upper)
    upper = np.stack([np.cos(t_upper), np.sin(t_upper)], axis=1)
    lower = np.stack([1.0 - np.cos(t_lower), 0.5 - np.sin(t_lower)], axis=1)
    X = np.concatenate([upper, lower]) + noise * rng.standard_normal((n, 2))
    # Centre and scale so that tanh units start in their linear range.
    X = (X - np.array([0.5, 0.25])) / np.array([1.0, 0.5])
    y = np.concatenate([-np.ones(n_upper), np.ones(n - n_upper)])
    return X, y
