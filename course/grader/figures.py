"""Pictures for feedback, drawn by the grader after a verdict (never in the student's kernel).

- A loss curve that leaves its band: the student's curve over the reference band, and how
  far each step is from the reference, against the band's width.
- A failed array check: a heat map of the relative error, entry by entry, so that the
  student sees *where* an array is wrong (a row, a column, one corner), not what it should be.
Each picture is a PNG, embedded in the notebook (and so in nbgrader's HTML feedback).
Pictures are drawn only for what failed, where they show something to fix: a figure costs
about 0.15 s, which every submission of a class would pay for a passing check. Margins are
fixed by hand: a layout engine would double that.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # the grader has no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from course.gradcheck import relative_errors  # noqa: E402

MAX_PICTURES = 3


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()


def warm_up() -> None:
    """Draw a first, throw-away figure: fonts and caches load once (course.grader.parallel)."""
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title("warm", fontsize=8)
    _png(fig)


def passing_band(want: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): the values g the judge passes around each w, |g - w| <= rtol (|g| + |w|).

    For w > 0 that is w (1 - rtol) / (1 + rtol) <= g <= w (1 + rtol) / (1 - rtol), about
    w (1 +- 2 rtol): drawing w (1 +- rtol) would show half the band the judge applies.
    """
    a, b = want * (1 - rtol) / (1 + rtol), want * (1 + rtol) / (1 - rtol)
    return np.minimum(a, b), np.maximum(a, b)


def curve_picture(label: str, got: np.ndarray, want: np.ndarray, rtol: float) -> bytes:
    steps = np.arange(1, len(want) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.9, wspace=0.3)
    low, high = passing_band(want, rtol)
    ax1.fill_between(
        steps,
        low,
        high,
        color="tab:gray",
        alpha=0.5,
        lw=4,
        label=f"where the check passes (relative error <= {rtol:g})",
    )
    if got.shape == want.shape:
        ax1.plot(steps, got, color="tab:red", marker=".", label="your curve")
        deviation = relative_errors(got, want)  # the judge's measure, against its tolerance
        ax2.semilogy(steps, np.maximum(deviation, 1e-17), color="tab:red", marker=".")
    ax2.axhline(rtol, color="tab:gray", ls="--", label="the band's edge")
    ax1.set(xlabel="step", ylabel="loss")
    ax1.set_title(f"{label}: your curve should stay in the band", fontsize=10)
    ax2.set(
        xlabel="step",
        ylabel="relative distance from the reference",
        title="Where your curve leaves the band",
    )
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    return _png(fig)


def heatmap_picture(label: str, got: np.ndarray, want: np.ndarray, rtol: float) -> bytes:
    errors = relative_errors(got, want)
    grid = errors.reshape(errors.shape[0], -1) if errors.ndim > 1 else errors[None, :]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.24, top=0.88)
    image = ax.imshow(
        np.log10(np.maximum(grid, 1e-17)), cmap="magma", vmin=-17, vmax=0, aspect="auto"
    )
    wrong = np.argwhere(grid > rtol)
    ax.scatter(
        wrong[:, 1],
        wrong[:, 0],
        marker="x",
        color="cyan",
        s=30,
        label=f"above the tolerance {rtol:g}",
    )
    fig.colorbar(image, ax=ax, label="log10 relative error")
    shape = "x".join(map(str, got.shape))
    ax.set(xlabel="column" if got.ndim <= 2 else "flattened trailing axes", ylabel="row")
    ax.set_title(f"Where it is wrong: {label} (shape {shape})", fontsize=9, wrap=True)
    if len(wrong):
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.18), fontsize=8, frameon=False)
    return _png(fig)


def is_matrix(array: np.ndarray) -> bool:
    """At least two rows and two columns once trailing axes are flattened."""
    return array.ndim >= 2 and array.shape[0] >= 2 and array.size // array.shape[0] >= 2


def pictures(check, outputs: dict, reference: dict, results) -> list[bytes]:
    """PNGs for the failed results of one check (at most MAX_PICTURES)."""
    from course.grader.model import Broken, rule_for

    found = []
    for result in results:
        rule = rule_for(check, result.key)
        got, want = outputs.get(result.key), reference.get(result.key)
        if result.passed or isinstance(got, Broken) or got is None or rule.kind != "close":
            continue
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        label = f"{rule.what} {result.key.partition(':')[2]}".strip()
        if rule.picture == "curve":
            found.append(curve_picture(label, got, want, rule.rtol))
        elif got.shape == want.shape and is_matrix(want):
            found.append(heatmap_picture(label, got, want, rule.rtol))
        if len(found) == MAX_PICTURES:
            break
    return found
