"""The course's figures. Each has labelled axes and a title that says what to look for."""

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np


def plain_log_labels(ax, axis: str = "y"):
    """Call after plotting: a log axis spanning less than a decade is labelled in plain
    numbers (10.75, not 1.075x10^1); a wider one keeps matplotlib's powers of ten. Which
    ticks carry a label is still matplotlib's choice."""
    from matplotlib.ticker import Formatter

    class Plain(Formatter):
        def __init__(self, default):
            self.default = default

        def set_axis(self, axis):
            super().set_axis(axis)
            self.default.set_axis(axis)

        def set_locs(self, locs):
            self.default.set_locs(locs)

        def __call__(self, value, pos=None):
            return f"{value:.4g}" if self.default(value, pos) else ""

    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    if target.get_scale() == "log" and 0 < low and high / low < 10:
        target.set_major_formatter(Plain(target.get_major_formatter()))
        target.set_minor_formatter(Plain(target.get_minor_formatter()))
    return ax


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


def _on_grid(predict, X: np.ndarray, pad: float, size: int):
    """A size x size grid covering X with a margin, and predict's values on it."""
    xs = np.linspace(X[:, 0].min() - pad, X[:, 0].max() + pad, size)
    ys = np.linspace(X[:, 1].min() - pad, X[:, 1].max() + pad, size)
    gx, gy = np.meshgrid(xs, ys)
    return gx, gy, predict(np.stack([gx.ravel(), gy.ravel()], axis=1)).reshape(gx.shape)


def decision_boundary(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    y: np.ndarray,
    title: str = "Decision boundary: does it separate the classes?",
    ax=None,
):
    """Shade where predict(points) > 0 over a grid that covers X; scatter X coloured by y."""
    ax = ax or plt.subplots(figsize=(4.5, 4))[1]
    gx, gy, scores = _on_grid(predict, X, pad=0.5, size=120)
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


def image_grid(images: np.ndarray, labels=None, columns: int = 10, title: str = "", cmap="gray_r"):
    """Small images in a grid, each titled with its label; returns the figure."""
    images = np.asarray(images)
    if images.ndim not in (3, 4):  # said before a figure of empty panels is drawn
        raise ValueError(
            f"image_grid takes images of shape (N, H, W) or (N, H, W, channels), not "
            f"{images.shape}: reshape flat digits with X.reshape(-1, 8, 8)"
        )
    rows = -(-len(images) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(columns * 0.9, rows * 1.0 + 0.4))
    for i, ax in enumerate(np.atleast_1d(axes).ravel()):
        ax.axis("off")
        if i < len(images):
            ax.imshow(images[i], cmap=cmap)
            if labels is not None:
                ax.set_title(str(labels[i]), fontsize=9)
    fig.suptitle(title)
    return fig


def weight_images(
    W: np.ndarray, shape=(8, 8), title: str = "Learned weights, one template a class"
):
    """Each column of W (D, C) as an image (a trailing bias row is dropped): red where a
    pixel votes for the class, blue where it votes against."""
    pixels = int(np.prod(shape))
    templates = W[:pixels].T.reshape(-1, *shape)
    fig, axes = plt.subplots(1, len(templates), figsize=(len(templates) * 0.95, 1.6))
    for k, (ax, t) in enumerate(zip(np.atleast_1d(axes), templates, strict=True)):
        limit = np.abs(t).max() or 1.0
        ax.imshow(t, cmap="coolwarm", vmin=-limit, vmax=limit)
        ax.set_title(str(k), fontsize=9)
        ax.axis("off")
    fig.suptitle(title)
    return fig


def sweep_heatmap(
    values: np.ndarray, rows, columns, row_label: str, column_label: str, title: str, ax=None
):
    """A grid of validation accuracies (rows x columns) with each cell's value written in."""
    ax = ax or plt.subplots(figsize=(5, 3.6), layout="constrained")[1]
    image = ax.imshow(values, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(columns)), [f"{c:g}" for c in columns])
    ax.set_yticks(range(len(rows)), [f"{r:g}" for r in rows])
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w" if v < 0.6 else "k")
    ax.set(xlabel=column_label, ylabel=row_label, title=title)
    plt.colorbar(image, ax=ax, label="validation accuracy")
    return ax


def decision_regions(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    y: np.ndarray,
    title: str = "Decision regions",
    ax=None,
):
    """Colour the plane by the class predict(points) gives (labels 0..C-1); scatter X by y."""
    ax = ax or plt.subplots(figsize=(4.5, 4))[1]
    gx, gy, classes = _on_grid(predict, X, pad=0.3, size=150)
    k = int(max(classes.max(), y.max())) + 1
    ax.contourf(
        gx, gy, classes, levels=np.arange(k + 1) - 0.5, cmap="tab10", vmin=0, vmax=9, alpha=0.3
    )
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="tab10", vmin=0, vmax=9, edgecolors="k", s=18)
    ax.set(xlabel="$x_1$", ylabel="$x_2$", title=title)
    return ax


def layer_histograms(activations: list[np.ndarray], title: str, layers=None, bins: int = 40):
    """Histograms of a few layers' activations side by side, on a shared x range."""
    layers = layers or sorted({0, len(activations) // 2, len(activations) - 1})
    fig, axes = plt.subplots(1, len(layers), figsize=(2.6 * len(layers), 2.2), layout="constrained")
    limit = max(float(np.abs(activations[i]).max()) for i in layers) or 1.0
    for ax, i in zip(np.atleast_1d(axes), layers, strict=True):
        ax.hist(activations[i].ravel(), bins=bins, range=(-limit, limit), color="#4c72b0")
        ax.set(title=f"layer {i + 1}: std {activations[i].std():.2g}", yticks=[])
    fig.suptitle(title)
    return fig


def contour_paths(
    f: Callable[[np.ndarray, np.ndarray], np.ndarray],
    paths: dict[str, np.ndarray],
    title: str,
    extent=(-3.5, 3.5, -2.5, 2.5),
    ax=None,
):
    """Contours of a 2-D loss f(x, y), with each optimiser's path of points (T, 2)."""
    if not callable(f):
        raise TypeError(
            f"contour_paths takes the loss as a function f(x, y), not {type(f).__name__}"
        )
    ax = ax or plt.subplots(figsize=(6.5, 4.2), layout="constrained")[1]
    xs = np.linspace(extent[0], extent[1], 200)
    ys = np.linspace(extent[2], extent[3], 200)
    gx, gy = np.meshgrid(xs, ys)
    ax.contour(gx, gy, f(gx, gy), levels=np.geomspace(0.01, 100, 15), colors="0.75", linewidths=0.8)
    for label, path in paths.items():
        path = np.clip(path, [extent[0], extent[2]], [extent[1], extent[3]])
        ax.plot(path[:, 0], path[:, 1], marker=".", markersize=3, lw=1.2, label=label)
    ax.plot([0], [0], "k*", markersize=10)
    ax.set(xlabel="$w_1$", ylabel="$w_2$", title=title, xlim=extent[:2], ylim=extent[2:])
    ax.legend(fontsize=8, loc="upper left")
    return ax
