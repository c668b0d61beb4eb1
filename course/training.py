"""Training loops that notebooks import (and show with `show_source`) instead of pasting.

Each takes the learner's own functions as arguments, so the same loop trains on their
code in the notebook and in a hidden loss-curve check. Minibatches come from a seeded
PCG64 generator: a run is the same on every machine.
"""

from collections.abc import Callable

import numpy as np


def accuracy(scores: np.ndarray, y: np.ndarray) -> float:
    """The share of rows whose highest score is the label's."""
    return float(np.mean(np.argmax(scores, axis=1) == y))


def train_linear(
    loss_fn: Callable,
    X: np.ndarray,
    y: np.ndarray,
    num_classes: int,
    learning_rate: float = 0.1,
    reg: float = 1e-3,
    steps: int = 300,
    batch_size: int = 200,
    weight_scale: float = 1e-3,
    seed: int = 0,
) -> tuple[np.ndarray, list[float]]:
    """Minibatch SGD on a linear classifier's weights.

    loss_fn(W, X, y, reg) -> (loss, dW), e.g. softmax_loss_vectorized.
    Returns the trained W (D, num_classes) and the minibatch loss at every step.
    """
    rng = np.random.default_rng(seed)
    W = weight_scale * rng.standard_normal((X.shape[1], num_classes))
    losses = []
    for _ in range(steps):
        batch = rng.choice(len(X), size=min(batch_size, len(X)), replace=False)
        loss, dW = loss_fn(W, X[batch], y[batch], reg)
        W = W - learning_rate * dW
        losses.append(float(loss))
    return W, losses


def fit(
    model,
    update: Callable,
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
    epochs: int = 10,
    batch_size: int = 100,
    config: dict | None = None,
    seed: int = 0,
    progress: Callable | None = None,
    schedule: Callable[[int], float] | None = None,
    track_updates: bool = False,
) -> dict[str, list]:
    """Minibatch training of a model with `.params` and `.loss(X, y) -> (loss, grads)`.

    update(w, dw, config) -> (next_w, config): an update rule such as `sgd`; every
    parameter keeps its own copy of `config`, since rules store per-parameter state there.
    progress: an optional wrapper around the epoch range, e.g. tqdm.
    schedule(step) -> learning rate, set in every config before each step (from step 0).
    track_updates: also record, per step, the update-to-weight ratio of each weight
    matrix ("W..."), |next_w - w| / |w| in Frobenius norms.
    Returns the history: "loss" per step, "train_acc" and "val_acc" per epoch, and with
    track_updates "update_ratio": {name: [ratio per step]}.
    """
    rng = np.random.default_rng(seed)
    configs = {name: dict(config or {}) for name in model.params}
    history: dict = {"loss": [], "train_acc": [], "val_acc": []}
    if track_updates:
        history["update_ratio"] = {name: [] for name in model.params if name.startswith("W")}
    step = 0
    epoch_range = range(epochs) if progress is None else progress(range(epochs))
    for _ in epoch_range:
        order = rng.permutation(len(X))
        for start in range(0, len(X), batch_size):
            batch = order[start : start + batch_size]
            loss, grads = model.loss(X[batch], y[batch])
            for name in model.params:
                if schedule is not None:
                    configs[name]["learning_rate"] = schedule(step)
                before = model.params[name].copy() if track_updates else None
                model.params[name], configs[name] = update(
                    model.params[name], grads[name], configs[name]
                )
                if track_updates and name in history["update_ratio"]:
                    change = np.linalg.norm(model.params[name] - before)
                    history["update_ratio"][name].append(float(change / np.linalg.norm(before)))
            history["loss"].append(float(loss))
            step += 1
        history["train_acc"].append(accuracy(model.loss(X), y))
        if X_val is not None:
            history["val_acc"].append(accuracy(model.loss(X_val), y_val))
        if progress is not None and hasattr(epoch_range, "set_postfix"):
            epoch_range.set_postfix(loss=f"{history['loss'][-1]:.3f}")
    return history
