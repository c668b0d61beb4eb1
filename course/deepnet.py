"""A plain NumPy deep network for looking inside: per-layer activation and gradient
statistics as depth grows (assignment 04's initialisation experiments).

The weights are passed in, so a notebook draws them with the learner's own `weight_init`.
"""

import numpy as np


def layer_statistics(X: np.ndarray, weights: list[np.ndarray], activation: str, seed: int = 0):
    """Push X through `weights` (each followed by the activation; no biases), then a
    random unit-variance upstream gradient back through them.

    Returns {"activations": [per-layer outputs], "act_std": [...], "grad_std": [...]}:
    grad_std[i] is the standard deviation of the loss's gradient with respect to the
    weights of layer i, for a loss whose gradient at the last layer is that random signal.
    """
    # The activations are written out here, not as functions of this module: a grading
    # kernel can import the package, and relu's forward and backward are graded in 03.
    if activation not in ("tanh", "relu"):
        raise ValueError(f"activation must be 'tanh' or 'relu', not {activation!r}")
    inputs, outputs = [], []
    h = X
    for W in weights:
        inputs.append(h)
        z = h @ W
        h = np.tanh(z) if activation == "tanh" else z * (z > 0)
        outputs.append(h)
    upstream = np.random.default_rng(seed).standard_normal(h.shape)
    grad_std = [0.0] * len(weights)
    for i in reversed(range(len(weights))):
        out = outputs[i]
        dz = upstream * ((1.0 - out**2) if activation == "tanh" else (out > 0))
        grad_std[i] = float(np.std(inputs[i].T @ dz / len(X)))
        upstream = dz @ weights[i].T
    return {
        "activations": outputs,
        "act_std": [float(np.std(o)) for o in outputs],
        "grad_std": grad_std,
    }
