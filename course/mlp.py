"""A tiny multilayer perceptron on scalar autograd nodes (micrograd's MLP, made generic).

It takes the `Value` class as an argument, so the same network trains on a learner's
engine in their notebook and in the hidden loss-curve check. Weights come from Python's
`random.Random(seed)`, whose stream is fixed across platforms and versions.
"""

import gc
import random
from collections.abc import Sequence

import numpy as np


class MLP:
    """Fully connected network: tanh hidden layers, one linear output (a score).

    value_cls: a scalar autograd class with Value(data), + and *, .tanh(), .grad.
    sizes: layer widths, input first, e.g. (2, 8, 8, 1).
    """

    def __init__(self, value_cls, sizes: Sequence[int], seed: int = 0):
        rng = random.Random(seed)
        self.Value = value_cls
        self.layers = []  # one (weights, biases) pair per layer; weights[j][i]: input i -> unit j
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=False):
            scale = 1.0 / fan_in**0.5
            weights = [
                [value_cls(rng.uniform(-scale, scale)) for _ in range(fan_in)]
                for _ in range(fan_out)
            ]
            self.layers.append((weights, [value_cls(0.0) for _ in range(fan_out)]))

    def parameters(self) -> list:
        return [p for weights, biases in self.layers for row in weights + [biases] for p in row]

    def __call__(self, x):
        """x: sequence of numbers (or Values). Returns the output score, a Value."""
        for depth, (weights, biases) in enumerate(self.layers):
            last = depth == len(self.layers) - 1
            x = [
                sum((w * xi for w, xi in zip(row, x, strict=True)), b)
                for row, b in zip(weights, biases, strict=True)
            ]
            if not last:
                x = [unit.tanh() for unit in x]
        return x[0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores for many points at once, with NumPy on the current weights (for plots)."""
        h = np.asarray(X, dtype=np.float64)
        for depth, (weights, biases) in enumerate(self.layers):
            W = np.array([[w.data for w in row] for row in weights])
            h = h @ W.T + np.array([b.data for b in biases])
            if depth < len(self.layers) - 1:
                h = np.tanh(h)
        return h[:, 0]


def hinge_loss(model: MLP, X: np.ndarray, y: np.ndarray, alpha: float = 1e-4):
    """Mean max-margin loss relu(1 - y * score) plus alpha * sum(p**2). Returns (loss, accuracy)."""
    scores = [model([float(v) for v in xi]) for xi in X]
    margins = [(1 + -float(yi) * s).relu() for yi, s in zip(y, scores, strict=True)]
    data_loss = sum(margins) * (1.0 / len(margins))
    reg_loss = alpha * sum(p * p for p in model.parameters())
    accuracy = float(np.mean([(s.data > 0) == (yi > 0) for yi, s in zip(y, scores, strict=True)]))
    return data_loss + reg_loss, accuracy


def train(
    model: MLP,
    X,
    y,
    steps: int = 30,
    learning_rate: float = 0.5,
    progress=None,
    zero_grad: bool = True,
):
    """Full-batch gradient descent. Returns (losses, accuracies), one entry per step.

    progress: an optional wrapper around the step range, e.g. tqdm.
    zero_grad: reset every .grad before backward(); False reproduces the classic
    bookkeeping bug where gradients of earlier steps keep accumulating.
    """
    losses, accuracies = [], []
    step_range = range(steps) if progress is None else progress(range(steps))
    # Each step's graph is thousands of nodes whose `_backward` closures refer back to
    # them: cycles, which only Python's cyclic collector frees. Left to itself, it moves
    # the live graph into its oldest generation and then scans the kernel's whole heap to
    # free it, about 90% of training's time (01's two trainings: 4.1 s -> 0.36 s each).
    # Instead, once a step's graph is garbage, only what that step allocated is scanned.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in step_range:
            loss, accuracy = hinge_loss(model, X, y)
            if zero_grad:
                for p in model.parameters():
                    p.grad = 0.0
            loss.backward()
            for p in model.parameters():
                p.data -= learning_rate * p.grad
            losses.append(float(loss.data))
            accuracies.append(accuracy)
            del loss
            gc.collect(0)
    finally:
        if collecting:
            gc.enable()
    return losses, accuracies
