"""Loss landscapes of the learner's own networks: the shape of the cost function, pictured.

Three views, each returning its numbers as well as its picture:

- `interpolation`: the loss on the straight line from the initial to the trained weights,
  (1 - a) theta_0 + a theta_1 (Goodfellow, Vinyals and Saxe 2015).
- `slice_1d`, `slice_2d`: the loss around trained weights along random directions that are
  *filter-normalised* (Li, Xu, Taylor, Studer and Goldstein 2018, section 4), so that
  networks of different weight scales can be compared side by side.
- `trajectory_pca`: a training path projected on its two principal directions (Li et al.,
  section 7), with the share of the path's variance they explain.

A network is seen only as `loss(params) -> float`, a function of a parameter dict
{name: array} such as a model's `.params`; `model_loss` makes one from a model with
`.params` and `.loss(X, y)`. Nothing here changes the dict or the arrays it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

Params = dict[str, np.ndarray]
Loss = Callable[[Params], float]


# Each result keeps its directions: to draw a path on the same plane, or the same plane
# for another network (and no result is a bare pair, which a graded check could take for
# an answer: see tests/test_observations.py).


class Slice1D(NamedTuple):
    alphas: np.ndarray  # (K,) step along the direction
    losses: np.ndarray  # (K,) the loss at each step
    direction: Params


class Slice2D(NamedTuple):
    alphas: np.ndarray  # (K,) steps along the first direction (the x axis)
    betas: np.ndarray  # (M,) steps along the second (the y axis)
    losses: np.ndarray  # (M, K): losses[j, i] = loss(centre + alphas[i] d1 + betas[j] d2)
    directions: tuple[Params, Params]


class Trajectory(NamedTuple):
    directions: tuple[Params, Params]  # the two principal directions, orthonormal
    coords: np.ndarray  # (T, 2): each theta_i - theta_final projected on them
    explained_variance: np.ndarray  # (2,): share of the path's variance each explains


def model_loss(model, X: np.ndarray, y: np.ndarray, data_loss: Callable | None = None) -> Loss:
    """A model's `.loss(X, y)[0]` (its training objective) as a function of a parameter dict.

    data_loss: a loss on scores, e.g. your `softmax_loss(scores, y) -> (loss, dscores)`:
    then the loss is data_loss(model.loss(X), y)[0], the data term alone (no regulariser,
    as Li et al. plot it), from the forward pass only, so several times faster.
    For one call the model's `.params` is the given dict, then its own again: the model
    keeps its dict and arrays, whatever the landscape evaluates (a model in training mode,
    as 05's batch norm, still updates its running statistics)."""

    def loss(params: Params) -> float:
        own = model.params
        model.params = params
        try:
            if data_loss is None:
                return float(model.loss(X, y)[0])
            return float(data_loss(model.loss(X), y)[0])
        finally:
            model.params = own

    return loss


# --- Parameter dicts as flat vectors: a point of the plane is one vector sum. ---


def flatten(params: Params) -> np.ndarray:
    """Every array of the dict, in its order, as one float64 vector (a copy)."""
    return np.concatenate([np.ravel(params[name]).astype(np.float64) for name in params])


def unflatten(vector: np.ndarray, like: Params) -> Params:
    """The inverse of `flatten`, shaped and typed as `like`'s arrays."""
    out, start = {}, 0
    for name, array in like.items():
        array = np.asarray(array)
        out[name] = vector[start : start + array.size].reshape(array.shape).astype(array.dtype)
        start += array.size
    return out


# --- Directions (Li et al. 2018, section 4). ---


def filter_axes(array: np.ndarray) -> tuple[int, ...] | None:
    """The axes one filter spans, or None for a vector (a bias, batch norm's gamma or beta).

    Course convention: a fully connected W is (D, H) and used as X @ W, so the weights into
    one neuron are a column, W[:, j] (axis 0 is summed over); a convolution's w is
    (F, C, HH, WW), so a filter is w[f] (the axes after the first)."""
    if array.ndim <= 1:
        return None
    return (0,) if array.ndim == 2 else tuple(range(1, array.ndim))


def normalise_filters(direction: Params, params: Params, ignore_biasbn: bool = True) -> Params:
    """Li et al.'s filter normalisation: d_ij <- d_ij / |d_ij| * |theta_ij| for filter (or
    neuron) j of every weight array i, so a step of 1 moves each filter by its own size
    and the picture does not depend on the weights' scale, which ReLU nets and batch norm
    leave free. A vector's direction is zero (`ignore_biasbn`: their code's
    `--xignore biasbn`, which their README's 1-D and 2-D examples use), or else the vector
    itself (their code without that option).
    Returns a new dict; the arguments are left as they are."""
    out = {}
    for name, theta in params.items():
        theta, d = np.asarray(theta, dtype=np.float64), np.asarray(direction[name], np.float64)
        axes = filter_axes(theta)
        if axes is None:
            out[name] = np.zeros_like(theta) if ignore_biasbn else theta.copy()
            continue
        theta_norm = np.sqrt(np.sum(theta**2, axis=axes, keepdims=True))
        d_norm = np.sqrt(np.sum(d**2, axis=axes, keepdims=True))
        out[name] = d * theta_norm / (d_norm + 1e-10)  # 1e-10 as Li et al.'s code
    return out


def random_directions(
    params: Params, seed: int = 0, count: int = 2, ignore_biasbn: bool = True
) -> list[Params]:
    """`count` Gaussian directions, each filter-normalised against `params` (seeded PCG64:
    the same directions on every machine)."""
    rng = np.random.default_rng(seed)
    return [
        normalise_filters(
            {name: rng.standard_normal(np.shape(a)) for name, a in params.items()},
            params,
            ignore_biasbn,
        )
        for _ in range(count)
    ]


# --- Losses on a plane through parameter space. ---


def _steps(progress: Callable | None, count: int) -> Iterable[int]:
    """range(count), through the caller's progress wrapper if there is one."""
    return range(count) if progress is None else progress(range(count))


def plane_losses(
    loss: Loss,
    centre: Params,
    directions: Sequence[Params],
    coefficients: np.ndarray,
    progress: Callable | None = None,
) -> np.ndarray:
    """loss(centre + sum_k c[n, k] directions[k]) for every row c[n] of `coefficients`
    (N, len(directions)): the one evaluation every view here is made of.

    The loss is called once a point, each time on a fresh dict; a point is formed only when
    it is evaluated (N points of a large net at once would not fit in memory).
    progress: an optional wrapper around the points' range, e.g. tqdm.auto.tqdm (a bar in
    a terminal, a widget in a notebook)."""
    coefficients = np.atleast_2d(np.asarray(coefficients, dtype=np.float64))
    basis = np.stack([flatten(d) for d in directions])  # (k, P)
    origin = flatten(centre)
    return np.array(
        [
            loss(unflatten(origin + coefficients[n] @ basis, centre))
            for n in _steps(progress, len(coefficients))
        ]
    )


def _grid(span, resolution: int) -> np.ndarray:
    """`resolution` steps over [-span, span] (a number) or [low, high] (a pair)."""
    low, high = (-span, span) if np.isscalar(span) else span
    return np.linspace(low, high, resolution)


def interpolation(
    loss: Loss,
    start: Params,
    end: Params,
    span=(-0.5, 1.5),
    resolution: int = 41,
    progress: Callable | None = None,
) -> Slice1D:
    """The loss at (1 - a) start + a end (Goodfellow et al. 2015): a = 0 is `start` (say the
    initialisation), a = 1 is `end` (the trained weights), a beyond [0, 1] extrapolates.
    span: the range of a, (low, high)."""
    step = {name: np.asarray(end[name], np.float64) - start[name] for name in start}
    return slice_1d(loss, start, step, span, resolution, progress)


def slice_1d(
    loss: Loss,
    centre: Params,
    direction: Params,
    span=1.0,
    resolution: int = 41,
    progress: Callable | None = None,
) -> Slice1D:
    """The loss at centre + a direction, for `resolution` values of a over the span."""
    alphas = _grid(span, resolution)
    losses = plane_losses(loss, centre, [direction], alphas[:, None], progress)
    return Slice1D(alphas, losses, direction)


def slice_2d(
    loss: Loss,
    centre: Params,
    directions: Sequence[Params],
    span=1.0,
    resolution: int = 41,
    progress: Callable | None = None,
) -> Slice2D:
    """The loss on a resolution x resolution grid centre + a d1 + b d2.

    span: a number (both axes over [-span, span]), a pair (both over it), or a pair of
    pairs ((a_low, a_high), (b_low, b_high))."""
    spans = span if not np.isscalar(span) and not np.isscalar(span[0]) else (span, span)
    alphas, betas = _grid(spans[0], resolution), _grid(spans[1], resolution)
    ga, gb = np.meshgrid(alphas, betas)
    coefficients = np.stack([ga.ravel(), gb.ravel()], axis=1)
    losses = plane_losses(loss, centre, directions, coefficients, progress)
    return Slice2D(alphas, betas, losses.reshape(ga.shape), tuple(directions))


# --- The training path (Li et al. 2018, section 7). ---


def trajectory_pca(path: Sequence[Params], ignore_biasbn: bool = False) -> Trajectory:
    """The two principal directions of theta_i - theta_final over a training path (its last
    point is the trained weights), and every point projected on them.

    As Li et al.'s code (scikit-learn's PCA), the differences are centred before the SVD;
    the projections are of the differences themselves, so the final point is at (0, 0)
    and `slice_2d(loss, path[-1], directions, ...)` draws the plane the path is seen in.
    Each direction's sign puts the path's start at a positive coordinate.
    ignore_biasbn: leave vectors (biases, batch norm's parameters) out, as their option."""
    if len(path) < 3:
        raise ValueError(f"a path of {len(path)} points has no two principal directions")
    final = path[-1]
    keep = flatten(
        {n: np.full(np.shape(a), np.ndim(a) > 1 or not ignore_biasbn) for n, a in final.items()}
    ).astype(bool)
    M = np.stack([flatten(p) for p in path]) - flatten(final)  # (T, P)
    M[:, ~keep] = 0.0
    _, singular, vt = np.linalg.svd(M - M.mean(axis=0), full_matrices=False)
    pcs = vt[:2] * np.where(M[0] @ vt[:2].T < 0, -1.0, 1.0)[:, None]
    total = np.sum(singular**2)
    explained = singular[:2] ** 2 / total if total > 0 else np.zeros(2)
    return Trajectory((unflatten(pcs[0], final), unflatten(pcs[1], final)), M @ pcs.T, explained)


class Snapshots:
    """Copies of a model's `.params` at the start of every epoch and after the last: a
    training path for `trajectory_pca`, taken through `course.training.fit`'s `progress`
    hook, so the loop itself is unchanged (full-batch training: one point a step).

    snaps = Snapshots(model, progress=tqdm); fit(model, ..., progress=snaps); snaps.path"""

    def __init__(self, model, progress: Callable | None = None):
        self.model, self.progress, self.path = model, progress, []

    def _take(self) -> None:
        self.path.append({name: np.array(a, copy=True) for name, a in self.model.params.items()})

    def __call__(self, epochs: Iterable[int]):
        for epoch in epochs if self.progress is None else self.progress(epochs):
            self._take()
            yield epoch
        self._take()


# --- Pictures. Each has labelled axes and a title that says what to look for. ---


def _levels(losses: np.ndarray, count: int = 20) -> np.ndarray:
    """Contour levels spaced evenly in log(loss) when the loss is positive and spans more
    than a decade (a minimum's basin and its far walls both show), else evenly."""
    low, high = float(np.nanmin(losses)), float(np.nanmax(losses))
    if low > 0 and high / low > 10:
        return np.geomspace(low, high, count)
    return np.linspace(low, high, count) if high > low else np.array([low, low + 1.0])


def plot_slice_1d(
    result: Slice1D,
    xlabel: str = "step along the direction",
    title: str = "A 1-D slice: how far does the basin reach?",
    ax=None,
):
    """The loss against the step, log-scaled when it spans more than a decade."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5, 3.2), layout="constrained")[1]
    ax.plot(result.alphas, result.losses, marker=".")
    if np.all(result.losses > 0) and result.losses.max() / result.losses.min() > 10:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel="loss", title=title)
    ax.grid(alpha=0.3)
    return ax


def plot_contours(
    result: Slice2D,
    path: np.ndarray | None = None,
    title: str = "The loss around the trained weights: a round basin or a ravine?",
    labels=("direction 1", "direction 2"),
    ax=None,
):
    """Filled contours of a 2-D slice, the centre starred, and a path (T, 2) on top."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5.5, 4.4), layout="constrained")[1]
    levels = _levels(result.losses)
    norm = None
    if levels[0] > 0 and levels[-1] / levels[0] > 10:
        from matplotlib.colors import LogNorm

        norm = LogNorm(levels[0], levels[-1])
    filled = ax.contourf(
        result.alphas, result.betas, result.losses, levels=levels, cmap="viridis", norm=norm
    )
    ax.contour(
        result.alphas,
        result.betas,
        result.losses,
        levels=levels,
        colors="w",
        linewidths=0.4,
        alpha=0.6,
    )
    plt.colorbar(filled, ax=ax, label="loss", format="%.3g")
    if path is not None:
        ax.plot(path[:, 0], path[:, 1], "-", color="r", lw=1.2, marker=".", ms=3, label="path")
        ax.plot(path[0, 0], path[0, 1], "o", color="r", label="start")
        ax.legend(fontsize=8, loc="upper left")
    ax.plot([0], [0], "k*", markersize=10)
    ax.set(xlabel=labels[0], ylabel=labels[1], title=title)
    return ax


def plot_surface(
    result: Slice2D,
    path: np.ndarray | None = None,
    path_losses: np.ndarray | None = None,
    title: str = "The same slice as a surface: is the minimum a bowl?",
    labels=("direction 1", "direction 2"),
    ax=None,
):
    """A 3-D surface of a 2-D slice; a path (T, 2) drawn on it at `path_losses` (the loss
    at each point in the plane: `plane_losses`), or on the floor without them."""
    import matplotlib.pyplot as plt

    if ax is None:
        ax = plt.figure(figsize=(6, 4.6), layout="constrained").add_subplot(projection="3d")
    ga, gb = np.meshgrid(result.alphas, result.betas)
    ax.plot_surface(ga, gb, result.losses, cmap="viridis", linewidth=0, alpha=0.85)
    if path is not None:
        z = path_losses if path_losses is not None else np.full(len(path), result.losses.min())
        ax.plot(path[:, 0], path[:, 1], z, "r.-", lw=1.2, ms=3, zorder=10, label="path")
        ax.legend(fontsize=8, loc="upper left")
    ax.set(xlabel=labels[0], ylabel=labels[1], zlabel="loss", title=title)
    return ax


def _contours_and_surface(result: Slice2D, title: str, labels, path=None, path_losses=None):
    """The figure both `landscape` and `path_landscape` draw: contours left, surface right."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(11, 4.4), layout="constrained")
    plot_contours(result, path, "Contours", labels, ax=fig.add_subplot(1, 2, 1))
    surface = fig.add_subplot(1, 2, 2, projection="3d")
    plot_surface(result, path, path_losses, "Surface", labels, ax=surface)
    fig.suptitle(title)
    return fig


def landscape(
    loss: Loss,
    params: Params,
    seed: int = 0,
    span: float = 1.0,
    resolution: int = 41,
    progress: Callable | None = None,
) -> tuple[Slice2D, object]:
    """The 2-D slice around `params` along two filter-normalised random directions drawn
    with `seed`, as contours and as a surface side by side. Returns (slice, figure)."""
    result = slice_2d(loss, params, random_directions(params, seed), span, resolution, progress)
    title = (
        f"The loss around the trained weights (directions' seed {seed}): "
        f"{resolution} x {resolution} points, steps of up to {span:g} filter norms"
    )
    return result, _contours_and_surface(result, title, ("direction 1", "direction 2"))


def path_landscape(
    loss: Loss,
    path: Sequence[Params],
    resolution: int = 41,
    margin: float = 0.25,
    progress: Callable | None = None,
) -> tuple[Trajectory, Slice2D, object]:
    """A training path on the plane of its two principal directions (Li et al.'s figure 9):
    the loss over the path's extent (plus `margin` of it on every side) around the trained
    weights, the path drawn on it at the loss of each of its points in that plane.
    Returns (trajectory, slice, figure)."""
    trajectory = trajectory_pca(path)
    low, high = trajectory.coords.min(axis=0), trajectory.coords.max(axis=0)
    pad = margin * np.maximum(high - low, 1e-3)
    span = tuple(zip(low - pad, high + pad, strict=True))
    result = slice_2d(loss, path[-1], trajectory.directions, span, resolution, progress)
    along = plane_losses(loss, path[-1], trajectory.directions, trajectory.coords)
    share = trajectory.explained_variance
    labels = tuple(f"PC {k + 1} ({share[k]:.0%} of the path's variance)" for k in range(2))
    title = (
        f"The training path on the plane of its two principal directions, which hold "
        f"{share.sum():.1%} of its variance"
    )
    return (
        trajectory,
        result,
        _contours_and_surface(result, title, labels, trajectory.coords, along),
    )


def explore(loss: Loss, params: Params, seeds: int = 10, resolution: int = 21):
    """A widget: pick the directions' seed, the span and the resolution, and the slice is
    drawn again (`landscape`). A slice of 21 x 21 points redraws in about a second."""
    import ipywidgets as widgets

    from course.notebook import explore_plot

    still = {"continuous_update": False}  # drawn once a slider is let go, not while it moves
    return explore_plot(
        lambda seed, span, resolution: landscape(loss, params, seed, span, resolution),
        seed=widgets.IntSlider(
            value=0, min=0, max=seeds - 1, description="directions' seed", **still
        ),
        span=widgets.FloatSlider(
            value=1.0, min=0.1, max=3.0, step=0.1, description="span", **still
        ),
        resolution=widgets.IntSlider(
            value=resolution, min=5, max=61, step=2, description="resolution", **still
        ),
    )
