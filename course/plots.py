"""The course's figures. Each has labelled axes and a title that says what to look for."""

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np


def loss_curve(
    losses: Sequence[float], title: str = "Training loss: it should fall, then flatten", ax=None
):
    """Loss against step, on a log scale when it spans more than a decade."""
    ax = ax or plt.subplots(figsize=(5, 3.2))[1]
    ax.plot(np.arange(1, len(losses) + 1), losses, marker=".")
    losses = np.asarray(losses, dtype=np.float64)
    if np.all(losses > 0) and losses.max() / losses.min() > 10:
        ax.set_yscale("log")
    ax.set(xlabel="step", ylabel="loss", title=title)
    ax.grid(alpha=0.3)
    return ax


def decision_boundary(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    y: np.ndarray,
    title: str = "Decision boundary: does it separate the classes?",
    ax=None,
):
    """Shade where predict(points) > 0 over a grid that covers X; scatter X coloured by y."""
    ax = ax or plt.subplots(figsize=(4.5, 4))[1]
    pad = 0.5
    xs = np.linspace(X[:, 0].min() - pad, X[:, 0].max() + pad, 120)
    ys = np.linspace(X[:, 1].min() - pad, X[:, 1].max() + pad, 120)
    gx, gy = np.meshgrid(xs, ys)
    scores = predict(np.stack([gx.ravel(), gy.ravel()], axis=1)).reshape(gx.shape)
    ax.contourf(gx, gy, scores > 0, levels=[-0.5, 0.5, 1.5], colors=["#f4c6c6", "#c6d8f4"])
    ax.contour(gx, gy, scores, levels=[0.0], colors="k", linewidths=1)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="coolwarm", edgecolors="k", s=25)
    ax.set(xlabel="$x_1$", ylabel="$x_2$", title=title)
    return ax


def error_against_step(
    hs: np.ndarray,
    errors: dict[str, np.ndarray],
    title: str = "Gradient-check error against h: a V, rounding left, truncation right",
    ax=None,
):
    """Relative error of a numerical gradient against the step h, one line per dtype."""
    ax = ax or plt.subplots(figsize=(7.5, 3.5), layout="constrained")[1]
    for label, err in errors.items():
        ax.loglog(hs, np.maximum(err, 1e-17), marker="o", label=label)
    ax.axhline(1e-7, color="gray", ls="--", lw=1, label="a passing check: 1e-7")
    ax.set(xlabel="step h", ylabel="relative error", title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.grid(alpha=0.3, which="both")
    return ax
