"""Pictures for feedback, drawn by the grader after a verdict (never in the student's kernel).

- A loss curve that leaves its band: the student's own curve, the steps that left the
  band, and how far each step is, in four coarse levels (never the reference curve).
- A failed array check: a map of the relative error, entry by entry, in the same coarse
  levels, so that the student sees *where* an array is wrong (a row, a column, one corner)
  and roughly how badly, not what it should be (no sign, no size of an entry).
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
DRAWN_LIMIT = 1e100  # a loss beyond it is not drawn (matplotlib fails near 1e308)


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=90)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def warm_up() -> None:
    """Draw a first, throw-away figure: fonts and caches load once (course.grader.parallel)."""
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title("warm", fontsize=8)
    _png(fig)


# How far off, in coarse bands: a picture says where and roughly how badly, never the
# expected values (with the student's own values and an exact distance, or a band drawn
# around the reference, the reference could be read off to about 1%; with a signed or
# exact error per entry, the sign and size of every wrong entry).
LEVELS = ("within the tolerance", "slightly off (up to 1e-4)", "off (up to 1e-2)", "far off")
EDGES = (1e-4, 1e-2)


def off_levels(distance: np.ndarray, rtol: float) -> np.ndarray:
    """0 within the tolerance, then 1, 2, 3 for distances up to 1e-4, 1e-2, and beyond;
    NaN or infinity counts as far off."""
    distance = np.where(np.isfinite(distance), distance, np.inf)
    levels = np.full(distance.shape, 3, dtype=int)
    levels[distance <= EDGES[1]] = 2
    levels[distance <= EDGES[0]] = 1
    levels[distance <= rtol] = 0
    return levels


def curve_picture(label: str, got: np.ndarray, want: np.ndarray, rtol: float) -> bytes:
    """The student's own curve, its steps outside the band marked, and how far off each
    step is, in coarse levels (the reference curve is not drawn)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.9, wspace=0.45)
    steps = np.arange(1, len(got) + 1)
    # matplotlib cannot lay out an axis out to 1.7e308 (finite): such steps are left out of
    # the curve (the right panel still shows them, far off) and counted.
    drawn = np.where(np.abs(got) <= DRAWN_LIMIT, got, np.nan)
    ax1.plot(steps, drawn, color="tab:red", marker=".", label="your curve")
    left_out = int(np.count_nonzero(np.isfinite(got) & np.isnan(drawn)))
    if left_out:
        ax1.text(
            0.5,
            0.5,
            f"{left_out} steps beyond ±{DRAWN_LIMIT:g}: not drawn",
            transform=ax1.transAxes,
            ha="center",
            fontsize=8,
        )
    if got.shape == want.shape:
        distance = relative_errors(got, want)  # the judge's own measure
        levels = off_levels(distance, rtol)
        off = levels > 0
        ax1.scatter(steps[off], drawn[off], marker="x", color="black", zorder=3, label="off")
        ax2.bar(steps, levels, color=[("tab:gray", "gold", "orange", "tab:red")[v] for v in levels])
    else:
        ax2.text(0.5, 0.5, f"{len(got)} steps, expected {len(want)}", ha="center")
    ax2.set_yticks(range(len(LEVELS)), LEVELS, fontsize=7)
    ax2.set_ylim(-0.2, len(LEVELS) - 0.5)
    ax1.set(xlabel="step", ylabel="loss")
    ax1.set_title(f"{label}: should stay within {rtol:g} (relative)", fontsize=9)
    ax2.set(xlabel="step", title="How far each step is from the reference")
    ax1.legend(fontsize=8)
    return _png(fig)


def heatmap_picture(label: str, got: np.ndarray, want: np.ndarray, rtol: float) -> bytes:
    """Where an array is wrong, entry by entry, in coarse levels (no sign, no size)."""
    errors = relative_errors(got, want)
    levels = off_levels(errors, rtol)
    grid = levels.reshape(levels.shape[0], -1) if levels.ndim > 1 else levels[None, :]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    fig.subplots_adjust(left=0.12, right=0.8, bottom=0.16, top=0.88)
    colours = matplotlib.colors.ListedColormap(["#d9d9d9", "gold", "orange", "tab:red"])
    image = ax.imshow(grid, cmap=colours, vmin=-0.5, vmax=len(LEVELS) - 0.5, aspect="auto")
    bar = fig.colorbar(image, ax=ax, ticks=range(len(LEVELS)))
    bar.ax.set_yticklabels(LEVELS, fontsize=7)
    shape = "x".join(map(str, got.shape))
    ax.set(xlabel="column" if got.ndim <= 2 else "flattened trailing axes", ylabel="row")
    for axis in (ax.xaxis, ax.yaxis):  # rows and columns are counted: whole ticks only
        axis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_title(f"Where it is wrong: {label} (shape {shape})", fontsize=9, wrap=True)
    return _png(fig)


def is_matrix(array: np.ndarray) -> bool:
    """At least two rows and two columns once trailing axes are flattened."""
    return array.ndim >= 2 and array.shape[0] >= 2 and array.size // array.shape[0] >= 2


def pictures(check, outputs: dict, reference: dict, results, notes=None) -> list[bytes]:
    """PNGs for the failed results of one check (at most MAX_PICTURES). A picture that
    cannot be drawn (values matplotlib cannot lay out...) is left out, with a line in
    `notes` saying so: a student's values never stop the grading (round 7)."""
    from course.grader.model import Broken, rule_for

    found = []
    for result in results:
        rule = rule_for(check, result.key)
        got, want = outputs.get(result.key), reference.get(result.key)
        if result.passed or rule.kind != "close" or got is None or want is None:
            continue
        if isinstance(got, Broken) or isinstance(want, Broken):
            continue  # an error, or a stated error contract (Rule.raises): nothing to draw
        try:
            got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        except (TypeError, ValueError):
            continue  # not numbers: the report says what is wrong
        if got.ndim == 0 or got.shape != want.shape:
            continue  # the report already says what is wrong; nothing to draw
        label = f"{rule.what} {result.key.partition(':')[2]}".strip()
        if rule.picture == "curve":
            draw = curve_picture
        elif got.shape == want.shape and is_matrix(want):
            draw = heatmap_picture
        else:
            continue
        open_before = set(plt.get_fignums())
        try:
            with np.errstate(all="ignore"):
                found.append(draw(label, got, want, rule.rtol))
        except Exception as exc:  # noqa: BLE001 (the picture is left out, the verdict stands)
            for number in set(plt.get_fignums()) - open_before:
                plt.close(number)
            if notes is not None:
                notes.append(f"(The picture of {label} could not be drawn: {type(exc).__name__}.)")
        if len(found) == MAX_PICTURES:
            break
    return found
