# %% [markdown]
# # 06 · Convolutional networks
#
# A fully connected layer treats the 64 pixels of a digit as 64 unrelated numbers: move the
# digit by one pixel and every input changes. A convolution slides one small filter over
# the image, so the same pattern is detected wherever it appears, with a handful of weights.
# This assignment builds the layer twice: with loops, to get it right, and vectorised, to
# make it usable.
#
# **The leaks shown here:** the cost of a layer is not its formula. The same arithmetic
# written as Python loops is hundreds of times slower than as one matrix product; the
# matrix product (im2col) buys its speed with memory; and the output's size, the receptive
# field and the right initial scale all follow from the shape arithmetic.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your code from 03 and 05 | nothing: it is carried forward from 03 and 05 | 0 |
# | 1 · Convolution with loops | `conv_forward_naive`, `conv_backward_naive` | 7 |
# | 2 · Max pooling | `max_pool_forward_naive`, `max_pool_backward_naive` | 3 |
# | 3 · Predict, then measure | three small formulas | 2 |
# | 4 · A fast convolution | `conv_forward_fast`, `conv_backward_fast`, and its speed | 6 |
# | 5 · Spatial batch norm | `spatial_batchnorm_forward`, `spatial_batchnorm_backward` | 3 |
# | 6 · A small convnet on the digits | `SmallConvNet` | 3 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import time
import tracemalloc

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import digits
from course.gradcheck import gradient_error, rel_error
from course.notebook import check_it, explore_plot
from course.training import accuracy, fit

# %% [markdown]
# ## 0 · Your code from 03 and 05
#
# Part 6's convnet is built from your `affine_forward`, `affine_backward`, `relu_forward`,
# `relu_backward` and `softmax_loss` from 03 (and part 6's comparison trains with your
# `sgd`); part 5's spatial batch norm reuses your `batchnorm_forward` and
# `batchnorm_backward` from 05. The cells below import them from `my_03_multilayer.py`
# and `my_05_normalisation.py` beside this notebook, which `course export` (run by
# `make lab` and `course check`) writes from the cells marked `#| export` of your 03 and 05
# notebooks. They are not graded again on their own; a hidden check of this notebook that
# fails because of one of them says so by name. Fixed something in 03 or 05? Save that
# notebook, then re-run these cells.

# %% nbgrader={"grade": false, "grade_id": "carried_from_03", "locked": true, "schema_version": 3, "solution": false}
# Your functions from 03 (work/03_multilayer). Fixed one there? Save 03, then re-run this cell.
from course.carry import carry  # imported here: this cell may be re-run alone

affine_forward, affine_backward, relu_forward, relu_backward, softmax_loss, sgd = carry(
    "03_multilayer", "affine_forward affine_backward relu_forward relu_backward softmax_loss sgd"
)

# %% nbgrader={"grade": false, "grade_id": "carried_from_05", "locked": true, "schema_version": 3, "solution": false}
# Your batch norm from 05 (work/05_normalisation); part 5 builds spatial batch norm on it.
from course.carry import carry  # imported here: this cell may be re-run alone

batchnorm_forward, batchnorm_backward = carry(
    "05_normalisation", "batchnorm_forward batchnorm_backward"
)

# %% [markdown]
# ## 1 · Convolution with loops
#
# A convolutional layer takes $N$ images of $C$ channels, $H \times W$ pixels, and $F$
# filters of shape $C \times HH \times WW$. The input is padded with `pad` zeros on all four
# sides; each filter then slides over it in steps of `stride`, and at each position the
# output is the sum of the filter times the window under it, plus the filter's bias:
#
# $$\text{out}[n, f, i, j] = b_f + \sum_{c, k, l} w[f, c, k, l]\;
# x_\text{pad}[n, c,\; i \cdot s + k,\; j \cdot s + l],$$
#
# with $H' = 1 + (H + 2p - HH) / s$ rows and $W' = 1 + (W + 2p - WW) / s$ columns. (Deep
# learning's "convolution" is, strictly, a cross-correlation: the filter is not flipped.
# This is PyTorch's `conv2d` convention.)
#
# ### Exercise 1.1: `conv_forward_naive` and `conv_backward_naive`
#
# Write both with loops (over the images, the filters and the output's pixels). The forward
# returns `(out, cache)`; the backward, `(dx, dw, db)`. If the filter does not tile the
# padded input exactly ($H + 2p - HH$ not a multiple of the stride), raise a `ValueError`.
# In the backward pass, every output pixel sends `dout[n, f, i, j]` back to the window it
# read (times `w[f]`, into `dx`) and to the filter (times the window, into `dw`); windows
# overlap, so the contributions **accumulate**.


# %% nbgrader={"grade": false, "grade_id": "conv_naive_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def conv_forward_naive(x, w, b, conv_param):
    """Convolution with loops. x (N, C, H, W), w (F, C, HH, WW), b (F,).

    conv_param: "stride" and "pad". Returns (out (N, F, H', W'), cache).
    """
    ### BEGIN SOLUTION
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:
        raise ValueError(f"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    return out, (x, w, b, conv_param)
    ### END SOLUTION


def conv_backward_naive(dout, cache):
    """Returns (dx, dw, db), shaped like x, w and b."""
    ### BEGIN SOLUTION
    x, w, b, conv_param = cache
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    _, _, H_out, W_out = dout.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dx_pad, dw = np.zeros_like(x_pad), np.zeros_like(w)
    db = dout.sum(axis=(0, 2, 3))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    rows = slice(i * stride, i * stride + HH)
                    cols = slice(j * stride, j * stride + WW)
                    dw[f] += x_pad[n, :, rows, cols] * dout[n, f, i, j]
                    dx_pad[n, :, rows, cols] += w[f] * dout[n, f, i, j]
    return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, db
    ### END SOLUTION


# %% [markdown]
# **Check it**: a case worked out by hand (a 1-channel 3x3 image of 1 to 9, one 2x2 filter
# of ones, no padding: each output is the sum of a 2x2 block), the output sizes for stride
# 2 and padding 1 on a non-square image, and a gradient check of all three gradients.

# %%
with check_it("Exercise 1.1"):
    x_hand = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    out_hand, _ = conv_forward_naive(
        x_hand, np.ones((1, 1, 2, 2)), np.zeros(1), {"stride": 1, "pad": 0}
    )
    print(
        "2x2 sums of [[1 2 3] [4 5 6] [7 8 9]]:",
        out_hand[0, 0].tolist(),
        "(expect [[12, 16], [24, 28]])",
    )
    assert np.array_equal(out_hand[0, 0], [[12, 16], [24, 28]]), (
        "the 2x2 sums of the hand case are wrong"
    )

    rng = np.random.default_rng(0)
    x_check = rng.standard_normal((2, 2, 5, 7))
    w_check = rng.standard_normal((3, 2, 3, 3))
    b_check = rng.standard_normal(3)
    for conv_param in ({"stride": 1, "pad": 1}, {"stride": 2, "pad": 1}):
        out, cache = conv_forward_naive(x_check, w_check, b_check, conv_param)
        dout = rng.standard_normal(out.shape)
        dx, dw, db = conv_backward_naive(dout, cache)
        grads, inputs, errors = (
            {"x": dx, "w": dw, "b": db},
            {"x": x_check, "w": w_check, "b": b_check},
            [],
        )
        for key, grad in grads.items():

            def f(v, key=key, conv_param=conv_param, inputs=inputs):
                return conv_forward_naive(**{**inputs, key: v}, conv_param=conv_param)[0]

            errors.append(gradient_error(f, inputs[key], grad, dout))
        print(
            f"{conv_param}: output {out.shape}; relative errors dx, dw, db "
            + ", ".join(f"{e:.1e}" for e in errors)
        )
        assert max(errors) < 1e-7, f"{conv_param}: a gradient does not match the forward pass"
    try:
        conv_forward_naive(x_check[:, :, :4], w_check, b_check, {"stride": 2, "pad": 0})
    except ValueError as error:
        print("refused:", error)
    else:
        raise AssertionError(
            "a 3x3 filter, stride 2, no padding does not tile 4x7: raise a ValueError"
        )

# %% nbgrader={"grade": true, "grade_id": "conv_forward_naive", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): outputs for non-square images, stride 1 and 2, padding 0, 1 and
# 2, channels different from filters, non-contiguous inputs; and equivariance: shifting the
# input shifts the output (away from the border).
### BEGIN HIDDEN TESTS
from course.grading import check

check("conv_forward_naive", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "conv_backward_naive", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): dx, dw and db for random upstream gradients on the same kinds of
# shapes, and against centred differences of your own forward pass.
### BEGIN HIDDEN TESTS
from course.grading import check

check("conv_backward_naive", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Equivariance: a shifted input gives a shifted output
#
# The same filter is applied at every position, so moving the input moves the output by
# the same amount, except near the border, where the padding is not moved with it. A
# digit, moved one pixel right and one down, through one edge filter:

# %%
data = digits()
image = data.X_train[:1].reshape(1, 1, 8, 8)
moved = np.roll(image, (1, 1), axis=(2, 3))
edge = np.array([[[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]]])
same = {"stride": 1, "pad": 1}
map_image, map_moved = (
    conv_forward_naive(v, edge, np.zeros(1), same)[0][0, 0] for v in (image, moved)
)
interior = np.abs(np.roll(map_image, (1, 1), axis=(0, 1)) - map_moved)[2:-1, 2:-1]
print(
    f"largest interior difference, shift-then-convolve against convolve-then-shift: "
    f"{interior.max():.1e}"
)
fig, axes = plt.subplots(1, 4, figsize=(11, 2.8), layout="constrained")
for ax, picture, title in zip(
    axes,
    (image[0, 0], moved[0, 0], map_image, map_moved),
    ("digit", "moved (1, 1)", "edge map of the digit", "edge map of the moved digit"),
    strict=True,
):
    ax.imshow(picture, cmap="gray")
    ax.set(title=title, xticks=[], yticks=[])
fig.suptitle("Convolution is equivariant: the edge map moves with the digit")
plt.show()

# %% [markdown]
# ## 2 · Max pooling
#
# Pooling shrinks each channel by keeping the largest value of each window
# (`pool_height` x `pool_width`, moved by `stride`). Its gradient goes only to the input
# that was the maximum; the others get 0.
#
# ### Exercise 2.1: `max_pool_forward_naive` and `max_pool_backward_naive`


# %% nbgrader={"grade": false, "grade_id": "pool_naive_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def max_pool_forward_naive(x, pool_param):
    """x (N, C, H, W); pool_param: "pool_height", "pool_width", "stride".

    Returns (out (N, C, H', W'), cache), H' = 1 + (H - pool_height) // stride.
    """
    ### BEGIN SOLUTION
    ph, pw, stride = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, H, W = x.shape
    H_out, W_out = 1 + (H - ph) // stride, 1 + (W - pw) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            window = x[:, :, i * stride : i * stride + ph, j * stride : j * stride + pw]
            out[:, :, i, j] = window.max(axis=(2, 3))
    return out, (x, pool_param)
    ### END SOLUTION


def max_pool_backward_naive(dout, cache):
    """Returns dx, shaped like x: dout routed to each window's maximum."""
    ### BEGIN SOLUTION
    x, pool_param = cache
    ph, pw, stride = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, _, _ = x.shape
    dx = np.zeros_like(x, dtype=np.float64)
    n, c = np.meshgrid(np.arange(N), np.arange(C), indexing="ij")
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            window = x[:, :, i * stride : i * stride + ph, j * stride : j * stride + pw]
            dr, dc = np.unravel_index(window.reshape(N, C, -1).argmax(axis=2), (ph, pw))
            dx[n, c, i * stride + dr, j * stride + dc] += dout[:, :, i, j]
    return dx
    ### END SOLUTION


# %% [markdown]
# **Check it**: a 4x4 image pooled 2x2 with stride 2 by hand, and a gradient check on
# inputs without ties (where the maximum is not unique, the gradient is not defined).

# %%
with check_it("Exercise 2.1"):
    x_hand = np.array([[1.0, 2, 5, 3], [4, 0, 1, 1], [0, 7, 2, 9], [3, 1, 8, 4]]).reshape(
        1, 1, 4, 4
    )
    pool = {"pool_height": 2, "pool_width": 2, "stride": 2}
    print(
        "pooled:",
        max_pool_forward_naive(x_hand, pool)[0][0, 0].tolist(),
        "(expect [[4, 5], [7, 9]])",
    )
    assert np.array_equal(max_pool_forward_naive(x_hand, pool)[0][0, 0], [[4, 5], [7, 9]]), (
        "the 2x2 maxima of the hand case are wrong"
    )
    x_pool = np.random.default_rng(1).permutation(2 * 3 * 6 * 5).reshape(2, 3, 6, 5) / 10.0
    for pool_param in (pool, {"pool_height": 3, "pool_width": 2, "stride": 1}):
        out, cache = max_pool_forward_naive(x_pool, pool_param)
        dout = np.random.default_rng(2).standard_normal(out.shape)
        dx = max_pool_backward_naive(dout, cache)
        error = gradient_error(
            lambda v, p=pool_param: max_pool_forward_naive(v, p)[0], x_pool, dx, dout, h=1e-4
        )
        print(f"{pool_param}: output {out.shape}, relative error of dx {error:.1e}")
        assert error < 1e-7, f"{pool_param}: dx does not match the forward pass"

# %% nbgrader={"grade": true, "grade_id": "max_pool_naive", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): outputs and dx for square and non-square windows, strides equal
# to and smaller than the window (overlapping windows), inputs without ties.
### BEGIN HIDDEN TESTS
from course.grading import check

check("max_pool_naive", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · Predict, then measure
#
# Three small formulas, to write before running anything (the next cells measure them on
# the settings they print; the hidden check asks about other settings):
#
# 1. `predicted_output_shape(x_shape, w_shape, stride, pad)`: the shape of
#    `conv_forward_naive`'s output (a tuple of 4 ints), for inputs the filter tiles.
# 2. `predicted_receptive_field(layers, filter_size)`: stack `layers` convolutions of
#    `filter_size` x `filter_size` filters, stride 1, "same" padding. How many pixels wide
#    is the patch of the input that one pixel of the last layer's output depends on?
# 3. `predicted_im2col_ratio(HH, WW, stride)`: part 4's fast convolution copies every
#    window of the padded input into one column of a matrix. For padding that keeps the
#    size ("same" padding), how many times the input's size is that matrix, for large
#    images? Graded within 10%.


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_output_shape(x_shape, w_shape, stride, pad):
    """(N, F, H', W') of the convolution of x (N, C, H, W) by w (F, C, HH, WW)."""
    ### BEGIN SOLUTION
    (N, _, H, W), (F, _, HH, WW) = x_shape, w_shape
    return (N, F, 1 + (H + 2 * pad - HH) // stride, 1 + (W + 2 * pad - WW) // stride)
    ### END SOLUTION


def predicted_receptive_field(layers, filter_size):
    """Pixels across the input patch one output pixel sees, after `layers` layers."""
    ### BEGIN SOLUTION
    return 1 + layers * (filter_size - 1)
    ### END SOLUTION


def predicted_im2col_ratio(HH, WW, stride):
    """Size of the im2col matrix / size of the input, for large images."""
    ### BEGIN SOLUTION
    return HH * WW / stride**2
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "conv_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): the output shape and the receptive field exactly, the im2col
# ratio within 10%, each for settings drawn by the grader.
### BEGIN HIDDEN TESTS
from course.grading import check

check("conv_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure** the output shape and the receptive field: send a gradient of 1 from a single
# output pixel back through three layers of 3x3 filters, and count the input pixels it
# reaches.

# %%
x_shape, w_shape = (10, 3, 13, 17), (6, 3, 5, 3)
measured_shape = conv_forward_naive(
    np.zeros(x_shape), np.zeros(w_shape), np.zeros(6), {"stride": 2, "pad": 1}
)[0].shape
print(
    f"output shape for x {x_shape}, w {w_shape}, stride 2, pad 1: "
    f"predicted {predicted_output_shape(x_shape, w_shape, 2, 1)}, measured {measured_shape}"
)

rng = np.random.default_rng(3)
stack = [rng.standard_normal((2, 2, 3, 3)) for _ in range(3)]
signal, caches = rng.standard_normal((1, 2, 15, 15)), []
for w in stack:
    signal, cache = conv_forward_naive(signal, w, np.zeros(2), {"stride": 1, "pad": 1})
    caches.append(cache)
grad = np.zeros_like(signal)
grad[0, 0, 7, 7] = 1.0
widths = []
for cache in reversed(caches):
    grad = conv_backward_naive(grad, cache)[0]
    widths.append(int(np.any(grad[0] != 0, axis=(0, 1)).sum()))
print(
    f"receptive field after 1, 2, 3 layers of 3x3: {widths} pixels wide; predicted "
    f"{[predicted_receptive_field(k, 3) for k in (1, 2, 3)]}"
)

# %% [markdown]
# Each 3x3 layer widens the receptive field by 2 pixels: growth is linear in depth. Pooling
# (or a stride of 2) doubles the step at which later layers sample, which is how real
# convnets see the whole image within a few layers.
#
# ## 4 · A fast convolution
#
# Your loops do $N F H' W'$ small sums in Python. The same arithmetic is one matrix
# product: **im2col** copies each window of the padded input into a column of a matrix of
# shape $(C \cdot HH \cdot WW,\ H' W')$ per image, and the filters, flattened to
# $(F,\ C \cdot HH \cdot WW)$, multiply it (`np.matmul` does all images in one call). NumPy's `np.lib.stride_tricks.as_strided` (or
# `sliding_window_view`) can view every window without a loop. The backward pass is the
# product's backward (two matrix products) and **col2im**, which adds each column's
# gradient back onto its window: a loop over the $HH \times WW$ filter offsets is fine,
# a loop over pixels is not.
#
# ### Exercise 4.1: `conv_forward_fast` and `conv_backward_fast`
#
# The same results as the naive pair (to 1e-10), vectorised, and at least **20 times
# faster** than loops like the naive pair's on a small layer, x (4, 3, 8, 8) and w
# (5, 3, 3, 3), stride 1, pad 1.
#
# How the speed is graded, on a machine that may be busy: in a grading run your kernel
# times nothing. The grade cell calls your fast pair 1501 times, each call on fresh inputs
# of that layer's shape, and sends a digest of every result (so every call must compute its
# own). The grader times the whole cell by its own clock, from outside your kernel; once
# your kernel is gone, it times the course's loops (the naive pair's loops over
# $n, f, i, j$, with the same NumPy calls on the same windows: they cost what a naive pair
# costs, though they compute no convolution) in its own process, for about as long as your
# cell ran, so that a load on the machine slows both alike. Your cell's seconds, less 0.3 s
# for the cell's own cost, over 1501 calls, must be at most 1/20 of a run of the loops. A
# vectorised pair is over 100 times faster on that layer (the cell after the next measures
# yours), so the bar of 20 leaves a margin of 5 or more for noise; a pair that loops over
# pixels in Python is not within 2 of it.


# %% nbgrader={"grade": false, "grade_id": "conv_fast_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def conv_forward_fast(x, w, b, conv_param):
    """As conv_forward_naive, vectorised. Returns (out, cache)."""
    ### BEGIN SOLUTION
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:
        raise ValueError(f"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    sN, sC, sH, sW = x_pad.strides
    windows = np.lib.stride_tricks.as_strided(
        x_pad,
        shape=(N, C, HH, WW, H_out, W_out),
        strides=(sN, sC, sH, sW, stride * sH, stride * sW),
        writeable=False,
    )
    # The copy: im2col, one (C*HH*WW, H'*W') matrix per image, rows in w's order.
    cols = windows.reshape(N, C * HH * WW, H_out * W_out)
    out = np.matmul(w.reshape(F, -1), cols)  # (N, F, H'*W'): no transpose needed
    out += b[:, None]
    return out.reshape(N, F, H_out, W_out), (x.shape, w, cols, conv_param)
    ### END SOLUTION


def conv_backward_fast(dout, cache):
    """As conv_backward_naive, vectorised. Returns (dx, dw, db)."""
    ### BEGIN SOLUTION
    x_shape, w, cols, conv_param = cache
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x_shape
    F, _, HH, WW = w.shape
    _, _, H_out, W_out = dout.shape
    d = dout.reshape(N, F, H_out * W_out)
    db = d.sum(axis=(0, 2))
    dw = np.matmul(d, cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)
    dcols = np.matmul(w.reshape(F, -1).T, d).reshape(N, C, HH, WW, H_out, W_out)
    dx_pad = np.zeros((N, C, H + 2 * pad, W + 2 * pad))
    for dr in range(HH):  # col2im: one strided slice per filter offset
        for dc in range(WW):
            rows = slice(dr, dr + stride * H_out, stride)
            cols_ = slice(dc, dc + stride * W_out, stride)
            dx_pad[:, :, rows, cols_] += dcols[:, :, dr, dc]
    return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, db
    ### END SOLUTION


# %% [markdown]
# **Check it**: the fast pair against your naive pair, then both timed on the same layer.

# %%
with check_it("Exercise 4.1"):
    rng = np.random.default_rng(4)
    x_cmp, w_cmp, b_cmp = (
        rng.standard_normal((3, 4, 9, 7)),
        rng.standard_normal((5, 4, 3, 3)),
        rng.standard_normal(5),
    )
    for conv_param in ({"stride": 1, "pad": 1}, {"stride": 2, "pad": 1}, {"stride": 1, "pad": 0}):
        naive_out, naive_cache = conv_forward_naive(x_cmp, w_cmp, b_cmp, conv_param)
        fast_out, fast_cache = conv_forward_fast(x_cmp, w_cmp, b_cmp, conv_param)
        dout = rng.standard_normal(naive_out.shape)
        pairs = zip(
            conv_backward_naive(dout, naive_cache),
            conv_backward_fast(dout, fast_cache),
            strict=True,
        )
        errors = [rel_error(naive_out, fast_out)] + [rel_error(a, f) for a, f in pairs]
        print(
            f"{conv_param}: relative errors out, dx, dw, db",
            ", ".join(f"{e:.1e}" for e in errors),
        )
        assert max(errors) < 1e-10, f"{conv_param}: the fast pair differs from the naive pair"


def best_time(fn, repeat=3):
    """The fastest of `repeat` runs, in seconds: the least disturbed by other work."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def forward_backward(forward, backward, x, w, b, conv_param, dout):
    out, cache = forward(x, w, b, conv_param)
    return backward(dout, cache)


x_t, w_t, b_t = (
    rng.standard_normal((8, 3, 16, 16)),
    rng.standard_normal((8, 3, 3, 3)),
    rng.standard_normal(8),
)
dout_t = rng.standard_normal((8, 8, 16, 16))
naive_seconds = best_time(
    lambda: forward_backward(conv_forward_naive, conv_backward_naive, x_t, w_t, b_t, same, dout_t),
    2,
)
fast_seconds = best_time(
    lambda: forward_backward(conv_forward_fast, conv_backward_fast, x_t, w_t, b_t, same, dout_t), 20
)
print(
    f"forward + backward of x {x_t.shape}, w {w_t.shape}: naive {naive_seconds * 1e3:.0f} ms, "
    f"fast {fast_seconds * 1e3:.2f} ms, {naive_seconds / fast_seconds:.0f} times faster"
)
x_g, w_g, b_g = (rng.standard_normal(s) for s in ((4, 3, 8, 8), (5, 3, 3, 3), (5,)))
dout_g = rng.standard_normal((4, 5, 8, 8))
graded = {
    name: best_time(
        lambda f=forward, b=backward: forward_backward(f, b, x_g, w_g, b_g, same, dout_g), 5
    )
    for name, (forward, backward) in {
        "naive": (conv_forward_naive, conv_backward_naive),
        "fast": (conv_forward_fast, conv_backward_fast),
    }.items()
}
print(
    f"on the graded layer, x {x_g.shape}, w {w_g.shape}: naive {graded['naive'] * 1e3:.1f} ms, "
    f"fast {graded['fast'] * 1e3:.3f} ms, {graded['naive'] / graded['fast']:.0f} times faster "
    f"(the hidden check asks for 20)"
)

# %% nbgrader={"grade": true, "grade_id": "conv_fast", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): out, dx, dw and db against the reference to 1e-10 on hidden
# inputs (non-square images, stride 2, padding 0 to 2, non-contiguous inputs).
### BEGIN HIDDEN TESTS
from course.grading import check

check("conv_fast", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "conv_fast_speed", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): your fast forward + backward against loops like the naive pair's,
# on a fixed layer, timed by the grader: at least 20 times faster, and right.
### BEGIN HIDDEN TESTS
from course.grading import check

check("conv_fast_speed", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The price of the speed: memory
#
# The im2col matrix holds every pixel once per filter offset that reads it. Measured with
# `tracemalloc` (which sees NumPy's allocations): the most memory held at once while
# `conv_forward_fast` runs, against the input's own size, for 3x3 filters, stride 1,
# padding 1. Beside it, your prediction.

# %%
x_mem = rng.standard_normal((16, 8, 32, 32))
w_mem = rng.standard_normal((16, 8, 3, 3))
tracemalloc.start()
_out, _cache = conv_forward_fast(x_mem, w_mem, np.zeros(16), same)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
del _out, _cache
print(
    f"input {x_mem.nbytes / 2**20:.1f} MiB; "
    f"peak while conv_forward_fast ran {peak / 2**20:.1f} MiB "
    f"= {peak / x_mem.nbytes:.1f} times the input; the im2col matrix alone is "
    f"{9 * x_mem.nbytes / 2**20:.1f} MiB = 9 times the input; "
    f"you predicted {predicted_im2col_ratio(3, 3, 1):g} times"
)
print(
    f"beside it: the padded copy {16 * 8 * 34 * 34 * 8 / 2**20:.1f} MiB, "
    f"the output {16 * 16 * 32 * 32 * 8 / 2**20:.1f} MiB"
)

# %% [markdown]
# The peak adds to the im2col matrix what else the forward holds at once: the padded copy
# of the input and the output (twice the input's size here, since F = 2 C), as printed
# above. At scale this decides
# what fits: a batch of 128 ImageNet images (3 x 224 x 224, float32), and its first 3x3
# layer's im2col matrix:

# %%
print(
    f"ImageNet batch {128 * 3 * 224 * 224 * 4 / 1e6:.0f} MB, "
    f"im2col {9 * 128 * 3 * 224 * 224 * 4 / 1e6:.0f} MB"
)

# %% [markdown]
# Libraries avoid the copy with direct or Winograd kernels, or build it in tiles.
#
# ### The yardstick: PyTorch
#
# `make bench` times the course's reference fast convolution against PyTorch's CPU
# `conv2d` on one layer (PyTorch is optional, an extra for the bench). If PyTorch is
# installed here, the same comparison runs now:

# %%
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed here: see `course bench --conv` for the comparison.")
if torch is not None:
    x_torch = torch.tensor(x_t, requires_grad=True)
    w_torch = torch.tensor(w_t, requires_grad=True)
    b_torch = torch.tensor(b_t, requires_grad=True)
    dout_torch = torch.tensor(dout_t)

    def torch_pair():
        out = torch.nn.functional.conv2d(x_torch, w_torch, b_torch, stride=1, padding=1)
        out.backward(dout_torch)

    torch.set_num_threads(1)  # one thread, as `course bench --conv` times it
    torch_pair()  # the first call sets PyTorch up: not timed
    torch_seconds = best_time(torch_pair, 20)
    print(
        f"PyTorch {torch_seconds * 1e3:.2f} ms, your fast pair {fast_seconds * 1e3:.2f} ms: "
        f"yours takes {fast_seconds / torch_seconds:.2g} times as long"
    )

# %% [markdown]
# ### Initialisation: a convolution's fan-in is C x HH x WW
#
# Each output pixel sums $C \cdot HH \cdot WW$ products, so He's rule for a convolution is
# $\sigma = \sqrt{2 / (C \cdot HH \cdot WW)}$. Eight layers of 16 filters of 3x3 with ReLU,
# on random 16x16 images, three seeds for each rule (each its own draws): the activations'
# standard deviation after every layer, with the right fan-in and with the channels alone
# (a common slip), and the factor by which one layer multiplies it (the geometric mean
# over the eight layers).


# %%
def layer_stds(fan_in_of, seed, depth=8, channels=16):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, channels, 16, 16))
    stds = [a.std()]
    for _ in range(depth):
        w = rng.standard_normal((channels, channels, 3, 3)) * np.sqrt(2 / fan_in_of(channels, 3, 3))
        a = np.maximum(0, conv_forward_fast(a, w, np.zeros(channels), same)[0])
        stds.append(a.std())
    return np.array(stds)


per_layer = {}
fan_ins = {"C * HH * WW": lambda c, hh, ww: c * hh * ww, "C only": lambda c, hh, ww: c}
for arm, (name, fan_in_of) in enumerate(fan_ins.items()):
    runs = [layer_stds(fan_in_of, seed) for seed in range(3 * arm, 3 * arm + 3)]
    factors = [(r[-1] / r[0]) ** (1 / (len(r) - 1)) for r in runs]
    per_layer[name] = np.mean(factors)
    print(
        f"fan-in {name:>12}: std after 8 layers {np.mean([r[-1] for r in runs]):.3g}, "
        f"each layer multiplies it by {np.mean(factors):.3f} "
        f"(3 seeds: {min(factors):.3f} to {max(factors):.3f})"
    )
print(
    f"per layer, C only against C * HH * WW: {per_layer['C only'] / per_layer['C * HH * WW']:.3f}"
    " (sqrt(9) = 3 if the zero padding cost nothing)"
)

# %% [markdown]
# With the channels alone, each layer multiplies the standard deviation by about 3 more
# than He's rule does, $\sqrt{HH \cdot WW}$ (the ratio printed above, measured on
# independent draws: it could have come out otherwise). Neither factor is exactly its
# rule's: with He's fan-in it is a little below 1, since the zero padding feeds the border
# pixels fewer products. After eight layers, the slip leaves activations thousands of
# times too large.
#
# ## 5 · Spatial batch norm
#
# Batch norm for convolutions normalises each **channel** over the batch and every pixel:
# the statistics of channel $c$ come from all $N \cdot H \cdot W$ values of that channel,
# and gamma and beta have shape (C,). Reuse your `batchnorm_forward` and
# `batchnorm_backward` from 05: move the channels last, flatten to $(N H W,\ C)$, and move
# them back.
#
# ### Exercise 5.1: `spatial_batchnorm_forward` and `spatial_batchnorm_backward`


# %% nbgrader={"grade": false, "grade_id": "spatial_batchnorm_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    """x (N, C, H, W), gamma and beta (C,); bn_param as for batchnorm_forward."""
    ### BEGIN SOLUTION
    N, C, H, W = x.shape
    flat = x.transpose(0, 2, 3, 1).reshape(-1, C)
    out, cache = batchnorm_forward(flat, gamma, beta, bn_param)
    return out.reshape(N, H, W, C).transpose(0, 3, 1, 2), (cache, x.shape)
    ### END SOLUTION


def spatial_batchnorm_backward(dout, cache):
    """Returns (dx, dgamma, dbeta)."""
    ### BEGIN SOLUTION
    bn_cache, (N, C, H, W) = cache
    dflat = dout.transpose(0, 2, 3, 1).reshape(-1, C)
    dx, dgamma, dbeta = batchnorm_backward(dflat, bn_cache)
    return dx.reshape(N, H, W, C).transpose(0, 3, 1, 2), dgamma, dbeta
    ### END SOLUTION


# %% [markdown]
# **Check it**: per-channel mean 0 and standard deviation 1 after normalising, gamma and
# beta then applied, and a gradient check.

# %%
with check_it("Exercise 5.1"):
    rng = np.random.default_rng(5)
    x_bn = 3.0 + 4.0 * rng.standard_normal((4, 3, 5, 6))
    out, _ = spatial_batchnorm_forward(x_bn, np.ones(3), np.zeros(3), {"mode": "train"})
    print(
        "per-channel means",
        ", ".join(f"{v:.1e}" for v in out.mean(axis=(0, 2, 3))),
        "stds",
        ", ".join(f"{v:.4f}" for v in out.std(axis=(0, 2, 3))),
    )
    assert np.allclose(out.mean(axis=(0, 2, 3)), 0) and np.allclose(
        out.std(axis=(0, 2, 3)), 1, rtol=1e-4
    ), "each channel must be normalised over N, H and W: mean 0, std 1"
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    out, cache = spatial_batchnorm_forward(x_bn, gamma, beta, {"mode": "train"})
    dout = rng.standard_normal(out.shape)
    dx, dgamma, dbeta = spatial_batchnorm_backward(dout, cache)
    args = [x_bn, gamma, beta]
    for name, grad, arg in (("dx", dx, 0), ("dgamma", dgamma, 1), ("dbeta", dbeta, 2)):

        def f(v, arg=arg):
            values = list(args)
            values[arg] = v
            return spatial_batchnorm_forward(*values, {"mode": "train"})[0]

        error = gradient_error(f, args[arg], grad, dout)
        print(f"{name}: relative error {error:.1e}")
        assert error < 1e-6, f"{name} does not match the forward pass"
    print(
        "sum of dx over each channel (0 for a normalisation):",
        ", ".join(f"{v:.1e}" for v in dx.sum(axis=(0, 2, 3))),
    )

# %% nbgrader={"grade": true, "grade_id": "spatial_batchnorm", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): train-mode output and running statistics, test mode, dx, dgamma
# and dbeta, against centred differences of your own forward pass, and the sum of dx over
# each channel.
### BEGIN HIDDEN TESTS
from course.grading import check

check("spatial_batchnorm", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6 · A small convnet on the digits
#
# conv (F filters of 3x3, stride 1, padding 1) - relu - max pool 2x2 (stride 2) - affine -
# softmax, on the 8x8 digits as (N, 1, 8, 8) images. Parameters `W1` (F, C, 3, 3), `b1`
# (F,), `W2` (F·H/2·W/2, classes), `b2`; weights from He's rule (fan-in C·3·3 for the
# convolution, F·H/2·W/2 for the affine layer) with `np.random.default_rng(seed)`, biases
# 0. `loss(X, y=None)` as in 03: scores when y is None, else `(loss, grads)`, with
# regularisation $\tfrac12 \lambda (\sum W_1^2 + \sum W_2^2)$. Use your fast convolution.
#
# ### Exercise 6.1: `SmallConvNet`


# %% nbgrader={"grade": false, "grade_id": "convnet_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
class SmallConvNet:
    """conv - relu - 2x2 max pool - affine - softmax."""

    def __init__(self, input_dim=(1, 8, 8), num_filters=8, num_classes=10, reg=0.0, seed=None):
        self.reg = reg
        self.params = {}
        ### BEGIN SOLUTION
        C, H, W = input_dim
        rng = np.random.default_rng(seed)
        hidden = num_filters * (H // 2) * (W // 2)
        self.params["W1"] = rng.standard_normal((num_filters, C, 3, 3)) * np.sqrt(2 / (C * 9))
        self.params["b1"] = np.zeros(num_filters)
        self.params["W2"] = rng.standard_normal((hidden, num_classes)) * np.sqrt(2 / hidden)
        self.params["b2"] = np.zeros(num_classes)
        ### END SOLUTION

    def loss(self, X, y=None):
        """Scores (N, classes) if y is None, else (loss, grads) keyed like params."""
        ### BEGIN SOLUTION
        p = self.params
        conv, conv_cache = conv_forward_fast(X, p["W1"], p["b1"], {"stride": 1, "pad": 1})
        relu, relu_cache = relu_forward(conv)
        pool_param = {"pool_height": 2, "pool_width": 2, "stride": 2}
        pooled, pool_cache = max_pool_forward_naive(relu, pool_param)
        scores, affine_cache = affine_forward(pooled, p["W2"], p["b2"])
        if y is None:
            return scores
        loss, dscores = softmax_loss(scores, y)
        grads = {}
        dpooled, grads["W2"], grads["b2"] = affine_backward(dscores, affine_cache)
        drelu = max_pool_backward_naive(dpooled, pool_cache)
        dconv = relu_backward(drelu, relu_cache)
        _, grads["W1"], grads["b1"] = conv_backward_fast(dconv, conv_cache)
        for name in ("W1", "W2"):
            loss += 0.5 * self.reg * np.sum(p[name] ** 2)
            grads[name] = grads[name] + self.reg * p[name]
        return loss, grads
        ### END SOLUTION


# %% [markdown]
# **Check it**: the loss at initialisation beside $\log 10 \approx 2.303$ (natural log:
# the loss of a uniform guess over the 10 classes), and a gradient check with
# regularisation. Do not expect $\log 10$ itself: He's scale on the last layer gives the
# scores a standard deviation of about 2 (printed), so the softmax is far from uniform
# and the loss is above $\log 10$, by an amount that changes with the seed (seeds 0-4
# are printed; five examples only). Scale $W_2$ down by 100 and the scores are nearly
# equal: the loss comes back to about $\log 10$ (printed).

# %%
with check_it("Exercise 6.1"):
    X_small = np.random.default_rng(6).standard_normal((5, 1, 8, 8))
    y_small = np.array([0, 3, 9, 3, 1])
    net = SmallConvNet(num_filters=3, seed=0)
    loss = net.loss(X_small, y_small)[0]
    print(f"loss at initialisation {loss:.3f} (log 10 = {np.log(10):.3f}),",
          f"scores' std {net.loss(X_small).std():.2f} (seed 0)")  # fmt: skip
    by_seed = [SmallConvNet(num_filters=3, seed=s).loss(X_small, y_small)[0] for s in range(5)]
    print(f"seeds 0-4: loss at initialisation from {min(by_seed):.3f} to {max(by_seed):.3f}")
    net.params["W2"] = net.params["W2"] / 100
    print(f"seed 0 with W2 / 100: loss {net.loss(X_small, y_small)[0]:.3f}")
    net = SmallConvNet(num_filters=3, reg=0.1, seed=0)
    loss, grads = net.loss(X_small, y_small)
    for name in net.params:

        def f(v, name=name):
            saved, net.params[name] = net.params[name], v
            value = net.loss(X_small, y_small)[0]
            net.params[name] = saved
            return value

        error = gradient_error(f, net.params[name], grads[name])
        print(f"{name}: relative error {error:.1e}")
        assert error < 1e-6, f"the gradient of {name} does not match the loss"

# %% nbgrader={"grade": true, "grade_id": "convnet_training", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): He's initial standard deviation of W1 and W2 for hidden sizes;
# scores, loss and gradients on hidden weights, and the loss curve of 30 steps of SGD on
# the digits from hidden weights, against the reference's band.
### BEGIN HIDDEN TESTS
from course.grading import check

check("convnet_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Convnet against the 03 network, three seeds each
#
# The 03 network (affine - relu - affine, 64 hidden units) and the convnet (16 filters),
# each trained with SGD at the learning rate that gave it the best validation accuracy
# among 0.1, 0.3, 0.5 and 1.0 (MLP) and 0.1, 0.2, 0.4 and 0.8 (convnet), measured while
# writing this assignment; batches of 50, three seeds each. Then both meet the test digits
# moved one pixel right and one down, a shift the training set never shows.


# %%
class TwoLayerMLP:
    """03's network, built from your carried layers, He initialisation."""

    def __init__(self, hidden=64, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "W1": rng.standard_normal((64, hidden)) * np.sqrt(2 / 64),
            "b1": np.zeros(hidden),
            "W2": rng.standard_normal((hidden, 10)) * np.sqrt(2 / hidden),
            "b2": np.zeros(10),
        }

    def loss(self, X, y=None):
        h, cache1 = affine_forward(X, self.params["W1"], self.params["b1"])
        a, cache2 = relu_forward(h)
        scores, cache3 = affine_forward(a, self.params["W2"], self.params["b2"])
        if y is None:
            return scores
        loss, d = softmax_loss(scores, y)
        grads = {}
        d, grads["W2"], grads["b2"] = affine_backward(d, cache3)
        _, grads["W1"], grads["b1"] = affine_backward(relu_backward(d, cache2), cache1)
        return loss, grads


def shifted(X, rows=1, cols=1):
    """Digits moved down and right, the pixels moved in from the border set to 0."""
    moved = np.roll(X.reshape(-1, 8, 8), (rows, cols), axis=(1, 2))
    moved[:, :rows], moved[:, :, :cols] = 0, 0
    return moved.reshape(X.shape)


mean_image = data.X_train.mean(axis=0)
X_train, X_val, X_test, X_moved = (
    (X - mean_image).reshape(-1, 1, 8, 8)
    for X in (data.X_train, data.X_val, data.X_test, shifted(data.X_test))
)
y_train, y_val, y_test = data.y_train, data.y_val, data.y_test
contenders = {
    "03 MLP": (lambda seed: TwoLayerMLP(seed=seed), 1.0, 15),
    "convnet": (lambda seed: SmallConvNet(num_filters=16, seed=seed), 0.8, 10),
}
results, moved_results, curves = {}, {}, {}
for name, (make, lr, epochs) in contenders.items():
    for seed in tqdm(range(3), desc=name):
        model = make(seed)
        config = {"learning_rate": lr}
        hist = fit(
            model, sgd, X_train, y_train, epochs=epochs, batch_size=50, config=config, seed=seed
        )
        results.setdefault(name, []).append(accuracy(model.loss(X_test), y_test))
        moved_results.setdefault(name, []).append(accuracy(model.loss(X_moved), y_test))
        curves.setdefault(name, []).append(hist["loss"])
    weights = sum(v.size for v in model.params.values())
    for label, found in (("test", results), ("moved test", moved_results)):
        print(
            f"{name:>8} ({weights} weights, {epochs} epochs): "
            f"{label} accuracy {np.mean(found[name]):.1%} "
            f"(3 seeds: {min(found[name]):.1%} to {max(found[name]):.1%})"
        )
gap = np.subtract(results["convnet"], results["03 MLP"])
print(f"convnet minus MLP on the test set, seed by seed: {np.round(100 * gap, 1)} points")
convnet = model
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for name, runs in curves.items():
    for seed, run in enumerate(runs):
        smooth = np.convolve(run, np.ones(10) / 10, "valid")
        ax.plot(
            smooth,
            color="C0" if name == "convnet" else "C1",
            lw=1,
            label=name if seed == 0 else None,
        )
ax.set(
    xlabel="step",
    ylabel="training loss (running mean of 10)",
    yscale="log",
    title="Training loss, three seeds each: which falls lower, and how fast?",
)
ax.legend()
plt.show()

# %% [markdown]
# Read the printed numbers: on the test set the convnet, with fewer weights, is level with
# or ahead of the MLP seed by seed. On the moved digits both collapse. The convolution is
# equivariant, but the network is not invariant: its affine layer ties each pooled pixel to
# a place, and one pixel is an eighth of these images. Equivariance is a property of a
# layer; invariance has to be built (more pooling, global averaging) or learned (moved
# copies of the training digits).
#
# ### What the convnet learned
#
# Its first eight 3x3 filters (top) and what each makes of one test digit (bottom, after the
# ReLU): strokes of given directions light up where they occur in the digit.

# %%
digit = X_test[:1]
maps = relu_forward(conv_forward_fast(digit, convnet.params["W1"], convnet.params["b1"], same)[0])[
    0
][0]
fig, axes = plt.subplots(2, 8, figsize=(12, 3.4), layout="constrained")
for f in range(8):
    axes[0, f].imshow(convnet.params["W1"][f, 0], cmap="coolwarm")
    axes[1, f].imshow(maps[f], cmap="gray")
    axes[0, f].set(title=f"filter {f}", xticks=[], yticks=[])
    axes[1, f].set(xticks=[], yticks=[])
fig.suptitle(f"Filters (top) and their activation maps on a test digit labelled {y_test[0]}")
plt.show()

# %% [markdown]
# Explore: stride, padding and the filter's size change the map's shape, the memory im2col
# spends and the time a forward pass takes (for a batch of 256 digits, 8 filters).


# %%
def explore_conv(filter_size=3, stride=1, pad=1, f=0):
    size = 8 + 2 * pad - filter_size
    if size < 0 or size % stride:
        print(f"filter {filter_size}, stride {stride}, pad {pad}: does not tile an 8x8 digit")
        return
    w = np.random.default_rng(f).standard_normal((8, 1, filter_size, filter_size))
    param = {"stride": stride, "pad": pad}
    out = conv_forward_fast(digit, w, np.zeros(8), param)[0]
    batch = X_train[:256]
    seconds = best_time(lambda: conv_forward_fast(batch, w, np.zeros(8), param), 3)
    rows = filter_size**2 * 256 * out.shape[2] * out.shape[3]
    fig, ax = plt.subplots(figsize=(3, 3), layout="constrained")
    ax.imshow(out[0, 0], cmap="gray")
    ax.set(
        title=f"output {out.shape[2]}x{out.shape[3]}: stride and padding set it",
        xticks=[],
        yticks=[],
    )
    plt.show()
    print(
        f"im2col for 256 digits: {rows * 8 / 2**10:.0f} KiB "
        f"(the batch: {batch.nbytes / 2**10:.0f} KiB); "
        f"forward {seconds * 1e3:.2f} ms"
    )


_ = explore_plot(
    explore_conv,
    filter_size=widgets.IntSlider(value=3, min=1, max=7),
    stride=widgets.IntSlider(value=1, min=1, max=3),
    pad=widgets.IntSlider(value=1, min=0, max=3),
    f=widgets.IntSlider(value=0, min=0, max=7, description="random filter"),
)

# %% [markdown]
# ## What to take away
#
# - A convolution is a small filter shared across positions: few weights, and a shifted
#   input gives a shifted output.
# - The same arithmetic can cost a hundred times more as Python loops than as one matrix
#   product; im2col buys that speed with a copy about $HH \cdot WW$ times the input.
# - The shapes decide a lot: the output size, the receptive field (2 pixels per 3x3
#   layer), and He's fan-in, $C \cdot HH \cdot WW$.
