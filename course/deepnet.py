"""A plain NumPy deep network for looking inside: per-layer activation and gradient
statistics as depth grows (assignment 04's initialisation experiments).

The weights are passed in, so a notebook draws them with the learner's own `weight_init`.
"""

import numpy as np

ACTIVATIONS = {
    "tanh": (np.tanh, lambda out: 1.0 - out**2),
    "relu": (lambda z: np.maximum(z, 0.0), lambda out: (out > 0).astype(out.dtype)),
}


def layer_statistics(X: np.ndarray, weights: list[np.ndarray], activation: str, seed: int = 0):
    """Push X through `weights` (each followed by the activation; no biases), then a
    random unit-variance upstream gradient back through them.

    Returns {"activations": [per-layer outputs], "act_std": [...], "grad_std": [...]}:
    grad_std[i] is the standard deviation of the loss's gradient with respect to the
    weights of layer i, for a loss whose gradient at the last layer is that random signal.
    """
    f, df = ACTIVATIONS[activation]
    inputs, outputs = [], []
    h = X
    for W in weights:
        inputs.append(h)
        h = f(h @ W)
        outputs.append(h)
    upstream = np.random.default_rng(seed).standard_normal(h.shape)
    grad_std = [0.0] * len(weights)
    for i in reversed(range(len(weights))):
        dz = upstream * df(outputs[i])
        grad_std[i] = float(np.std(inputs[i].T @ dz / len(X)))
        upstream = dz @ weights[i].T
    return {
        "activations": outputs,
        "act_std": [float(np.std(o)) for o in outputs],
        "grad_std": grad_std,
    }
