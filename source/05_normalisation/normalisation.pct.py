# %% [markdown]
# # 05 · Normalisation and regularisation
#
# Assignment 04 showed that a deep network trains only if its first draw is scaled just
# right. Normalisation removes that knife-edge: it rescales each layer's pre-activations as
# training goes. Dropout, in turn, fights the other failure of a large network: fitting
# the training set and not the rest.
#
# **The leaks shown here:** batch normalisation couples the examples of a batch, keeps
# running statistics that start biased, and turns weight decay into a change of step size;
# dropout must be rescaled, and its random mask defeats a gradient check; and the
# picture of the loss around the weights depends on their scale, which batch norm leaves
# free.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your code from 03 and 04 | nothing: it is carried forward from 03 and 04 | 0 |
# | 1 · Batch normalisation | `batchnorm_forward`, `batchnorm_backward`, `batchnorm_backward_alt` | 8 |
# | 2 · Layer normalisation | `layernorm_forward`, `layernorm_backward` | 4 |
# | 3 · Dropout | `dropout_forward`, `dropout_backward` | 3 |
# | 4 · The finished network | `FullyConnectedNet` with normalisation and dropout, trained | 7 |
# | 5 · Predictions | five small formulas, before the experiments that measure them | 5 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import time

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import digits
from course.gradcheck import gradient_error, rel_error
from course.notebook import check_it, explore_plot
from course.plots import plain_log_labels
from course.training import accuracy, fit

# %% [markdown]
# ## 0 · Your code from 03 and 04
#
# Part 4 finishes your own `FullyConnectedNet` from 04 (and the experiments train with
# your `adam`), built from your `affine_forward`, `affine_backward`, `relu_forward`,
# `relu_backward`, `softmax_loss` and `sgd` from 03. The cells below import them from
# `my_03_multilayer.py` and `my_04_optimisers.py` beside this notebook, which `course
# export` (run by `make lab` and `course check`) writes from the cells marked `#| export`
# of your 03 and 04 notebooks. They are not graded again on their own; a hidden check of
# this notebook that fails because of one of them says so by name. Fixed something in 03
# or 04? Save that notebook, then re-run these cells.

# %% nbgrader={"grade": false, "grade_id": "carried_from_03", "locked": true, "schema_version": 3, "solution": false}
# Your functions from 03 (work/03_multilayer). Fixed one there? Save 03, then re-run this cell.
from course.carry import carry  # imported here: this cell may be re-run alone

affine_forward, affine_backward, relu_forward, relu_backward, softmax_loss, sgd = carry(
    "03_multilayer", "affine_forward affine_backward relu_forward relu_backward softmax_loss sgd"
)

# %% nbgrader={"grade": false, "grade_id": "carried_from_04", "locked": true, "schema_version": 3, "solution": false}
# Your network and Adam from 04 (work/04_optimisers); part 4 finishes this network.
from course.carry import carry  # imported here: this cell may be re-run alone

FullyConnectedNet04, adam = carry("04_optimisers", "FullyConnectedNet adam")

# %% [markdown]
# ## 1 · Batch normalisation
#
# Ioffe and Szegedy (2015): normalise each feature over the batch, then let the network
# choose the scale and shift it wants back,
#
# $$\mu = \tfrac1N \textstyle\sum_i x_i, \quad \sigma^2 = \tfrac1N \sum_i (x_i - \mu)^2,
# \quad \hat x_i = \frac{x_i - \mu}{\sqrt{\sigma^2 + \epsilon}}, \quad
# y_i = \gamma \hat x_i + \beta.$$
#
# At test time there may be no batch (one example at a time), so training also keeps
# **running** averages of $\mu$ and $\sigma^2$, and test mode normalises with those:
# `running = momentum * running + (1 - momentum) * batch_statistic`, with momentum 0.9 and
# the biased variance above. This is the convention of CS231n; PyTorch's `momentum=0.1`
# is our `1 - momentum`, and PyTorch stores the unbiased variance in its running average.
#
# ### Exercise 1.1: `batchnorm_forward` (3 points)
#
# `x` (N, D), `gamma` and `beta` (D,). `bn_param` holds `mode` ("train" or "test",
# required; anything else is a `ValueError`), `eps` (1e-5), `momentum` (0.9),
# `running_mean` and `running_var` (zeros of shape (D,) when absent). In train mode,
# store the updated running averages back into `bn_param`. Keep in `cache` what your
# backward passes need. Compute the variance from the centred values, as above: the
# shortcut $\overline{x^2} - \mu^2$ cancels catastrophically when $|\mu| \gg \sigma$.


# %% nbgrader={"grade": false, "grade_id": "batchnorm_forward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def batchnorm_forward(x, gamma, beta, bn_param):
    """Batch normalisation of x (N, D). Returns (out (N, D), cache)."""
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    D = x.shape[1]
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    ### BEGIN SOLUTION
    if mode == "train":
        mu = x.mean(axis=0)
        centred = x - mu
        var = np.mean(centred**2, axis=0)
        std = np.sqrt(var + eps)
        x_hat = centred / std
        out = gamma * x_hat + beta
        cache = (x_hat, centred, std, gamma)
        running_mean = momentum * running_mean + (1 - momentum) * mu
        running_var = momentum * running_var + (1 - momentum) * var
    elif mode == "test":
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    else:
        raise ValueError(f"bn_param['mode'] is {mode!r}: use 'train' or 'test'")
    ### END SOLUTION
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


# %% [markdown]
# **Check it**: in train mode each output column has mean $\beta$ and standard deviation
# $\gamma$ (up to $\epsilon$), and a batch of one example outputs $\beta$ whatever it is.

# %%
with check_it("Exercise 1.1"):
    rng = np.random.default_rng(0)
    x = 5 + 3 * rng.standard_normal((200, 4))
    gamma, beta = np.array([1.0, 2.0, 3.0, 0.5]), np.array([0.0, -1.0, 4.0, 2.0])
    out, _ = batchnorm_forward(x, gamma, beta, {"mode": "train"})
    print("means", out.mean(axis=0).round(6), "stds", out.std(axis=0).round(4))
    assert np.allclose(out.mean(axis=0), beta) and np.allclose(out.std(axis=0), gamma, rtol=1e-4), (
        "train mode: each feature's mean must be beta and its std gamma"
    )
    one, _ = batchnorm_forward(x[:1], gamma, beta, {"mode": "train"})
    print("a batch of one example outputs", one.round(6), "= beta")
    param = {"mode": "train"}
    for _ in range(50):
        batchnorm_forward(x, gamma, beta, param)
    print("running mean after 50 steps", param["running_mean"].round(3), "(batch mean 5)")

# %% nbgrader={"grade": true, "grade_id": "batchnorm_forward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): train-mode outputs for shapes with N != D, a batch whose mean
# dwarfs its spread (1e6 against 1), a non-contiguous x; the running averages after
# several steps; test mode, separately; invariance of the output to the scale of x.
### BEGIN HIDDEN TESTS
from course.grading import check

check("batchnorm_forward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.2: `batchnorm_backward`, through the graph (3 points)
#
# Walk the forward pass backwards one node at a time: $y = \gamma \hat x + \beta$, then
# $\hat x = c \cdot s^{-1}$ with $c = x - \mu$ (the centred values) and
# $s = \sqrt{\sigma^2 + \epsilon}$, then $\sigma^2 = \overline{c^2}$, then
# $c = x - \mu$, then $\mu = \bar x$. The centred values $c$ are used twice (in $\hat x$
# and in $\sigma^2$), and $x$ twice (in $c$ and in $\mu$): their gradients add up.
# The gradients of $\gamma$ and $\beta$ sum over the batch.
#
# The hidden check compares your gradients with centred differences of **your own**
# `batchnorm_forward`, and credits them only when that forward pass is right. While it is
# wrong, even a correct backward scores 0 of 3, and the report names the forward as the
# cause ("fix it first"): the backward's points come back once the forward is fixed. The
# same holds for `batchnorm_backward_alt` and `layernorm_backward` below.


# %% nbgrader={"grade": false, "grade_id": "batchnorm_backward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def batchnorm_backward(dout, cache):
    """Backward pass through the staged graph. Returns (dx, dgamma, dbeta)."""
    ### BEGIN SOLUTION
    x_hat, centred, std, gamma = cache
    N = dout.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = np.sum(dout * x_hat, axis=0)
    dx_hat = dout * gamma
    dcentred = dx_hat / std  # through x_hat = centred / std
    dstd = -np.sum(dx_hat * centred, axis=0) / std**2
    dvar = dstd / (2 * std)  # std = sqrt(var + eps)
    dcentred += dvar * 2 * centred / N  # var = mean(centred**2)
    dx = dcentred.copy()  # centred = x - mu
    dmu = -dcentred.sum(axis=0)
    dx += dmu / N  # mu = mean(x)
    ### END SOLUTION
    return dx, dgamma, dbeta


# %% [markdown]
# **Check it**: each gradient against centred differences of your forward pass, with a
# random upstream gradient (with one of all ones, $dx$ is exactly 0: no check at all), and
# the invariant the graph implies: $\sum_i dx_i = 0$ for every feature, since adding a
# constant to a column of $x$ changes nothing after normalisation. Expect relative errors
# near $10^{-9}$.


# %%
def check_batchnorm_backward(backward, N=7, D=5, seed=1):
    rng = np.random.default_rng(seed)
    x, dout = 2 + 4 * rng.standard_normal((N, D)), rng.standard_normal((N, D))
    gamma, beta = rng.standard_normal(D), rng.standard_normal(D)
    _, cache = batchnorm_forward(x, gamma, beta, {"mode": "train"})
    dx, dgamma, dbeta = backward(dout, cache)
    inputs = {"x": x, "gamma": gamma, "beta": beta}
    for name, grad in (("x", dx), ("gamma", dgamma), ("beta", dbeta)):

        def f(v, name=name):
            return batchnorm_forward(**{**inputs, name: v}, bn_param={"mode": "train"})[0]

        error = gradient_error(f, inputs[name], grad, dout)
        print(f"{backward.__name__}: d{name:<6} relative error {error:.1e}")
        assert error < 1e-6, f"d{name}: relative error {error:.1e}, above 1e-6"
    print(f"{'':>20} largest |sum of dx over the batch| {np.abs(dx.sum(axis=0)).max():.1e}")


with check_it("Exercise 1.2"):
    check_batchnorm_backward(batchnorm_backward)

# %% nbgrader={"grade": true, "grade_id": "batchnorm_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): dx, dgamma and dbeta for N != D and a square case, random
# upstream gradients, a non-contiguous x; against centred differences of your own forward
# pass (credited when the forward pass is right); the sum of dx over the batch.
### BEGIN HIDDEN TESTS
from course.grading import check

check("batchnorm_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.3: `batchnorm_backward_alt`, the closed form (2 points)
#
# Collapse the graph on paper: with $g = \gamma \cdot dy$,
#
# $$dx = \frac{1}{N s}\Big(N g - \textstyle\sum_i g_i - \hat x \sum_i g_i \hat x_i\Big).$$
#
# Same cache, same results. Whether it is faster depends on the shapes and the machine:
# the check below times both.


# %% nbgrader={"grade": false, "grade_id": "batchnorm_backward_alt_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def batchnorm_backward_alt(dout, cache):
    """The simplified closed form. Returns (dx, dgamma, dbeta)."""
    ### BEGIN SOLUTION
    x_hat, _, std, gamma = cache
    N = dout.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = np.sum(dout * x_hat, axis=0)
    g = dout * gamma
    dx = (N * g - g.sum(axis=0) - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)
    ### END SOLUTION
    return dx, dgamma, dbeta


# %% [markdown]
# **Check it**: the same gradient check, then both against each other and timed, on a
# batch of 500 by 400.

# %%
with check_it("Exercise 1.3"):
    check_batchnorm_backward(batchnorm_backward_alt)
    rng = np.random.default_rng(2)
    x_big, dout_big = rng.standard_normal((500, 400)), rng.standard_normal((500, 400))
    _, cache_big = batchnorm_forward(x_big, np.ones(400), np.zeros(400), {"mode": "train"})
    timings = {}
    for backward in (batchnorm_backward, batchnorm_backward_alt):
        runs = []
        for _ in range(20):
            start = time.perf_counter()
            grads_big = backward(dout_big, cache_big)
            runs.append(time.perf_counter() - start)
        timings[backward.__name__] = (np.median(runs), grads_big[0])
    (t_graph, dx_graph), (t_alt, dx_alt) = timings.values()
    print(f"through the graph {t_graph * 1e3:.2f} ms, closed form {t_alt * 1e3:.2f} ms")
    print(
        f"speed-up {t_graph / t_alt:.2f}x (median of 20),",
        f"dx differs by {rel_error(dx_graph, dx_alt):.1e}",
    )

# %% nbgrader={"grade": true, "grade_id": "batchnorm_backward_alt", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): as for batchnorm_backward.
### BEGIN HIDDEN TESTS
from course.grading import check

check("batchnorm_backward_alt", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · Layer normalisation
#
# Ba, Kiros and Hinton (2016): the same normalisation, over the features of each example
# instead of over the batch. No batch, so no running statistics and no train/test
# difference: an example's output never depends on the others.
#
# ### Exercise 2.1: `layernorm_forward` (2 points) and `layernorm_backward` (2 points)
#
# `x` (N, D); `gamma`, `beta` (D,); `ln_param` holds `eps` (1e-5). Normalise each row by
# its own mean and (biased) variance, then scale by `gamma` and shift by `beta`.


# %% nbgrader={"grade": false, "grade_id": "layernorm_forward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def layernorm_forward(x, gamma, beta, ln_param):
    """Layer normalisation of each row of x (N, D). Returns (out (N, D), cache)."""
    eps = ln_param.get("eps", 1e-5)
    ### BEGIN SOLUTION
    centred = x - x.mean(axis=1, keepdims=True)
    std = np.sqrt(np.mean(centred**2, axis=1, keepdims=True) + eps)
    x_hat = centred / std
    return gamma * x_hat + beta, (x_hat, std, gamma)
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "layernorm_backward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def layernorm_backward(dout, cache):
    """Returns (dx, dgamma, dbeta)."""
    ### BEGIN SOLUTION
    x_hat, std, gamma = cache
    D = dout.shape[1]
    g = dout * gamma
    dx = D * g - g.sum(axis=1, keepdims=True) - x_hat * np.sum(g * x_hat, axis=1, keepdims=True)
    return dx / (D * std), np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
    ### END SOLUTION


# %% [markdown]
# **Check it**: rows of mean $\beta$-free output 0 and variance 1 with $\gamma = 1$,
# $\beta = 0$; the gradients against centred differences; and one example's output,
# computed alone and inside a batch.

# %%
with check_it("Exercise 2.1"):
    rng = np.random.default_rng(3)
    x, dout = 3 + 2 * rng.standard_normal((6, 9)), rng.standard_normal((6, 9))
    gamma, beta = rng.standard_normal(9), rng.standard_normal(9)
    plain, _ = layernorm_forward(x, np.ones(9), np.zeros(9), {})
    print("row means", plain.mean(axis=1).round(6), "row stds", plain.std(axis=1).round(4))
    out, cache = layernorm_forward(x, gamma, beta, {})
    dx, dgamma, dbeta = layernorm_backward(dout, cache)
    inputs = {"x": x, "gamma": gamma, "beta": beta}
    for name, grad in (("x", dx), ("gamma", dgamma), ("beta", dbeta)):

        def f(v, name=name):
            return layernorm_forward(**{**inputs, name: v}, ln_param={})[0]

        error = gradient_error(f, inputs[name], grad, dout)
        print(f"d{name:<6} relative error {error:.1e}")
        assert error < 1e-6, f"d{name}: relative error {error:.1e}, above 1e-6"
    alone = layernorm_forward(x[:1], gamma, beta, {})[0]
    print(
        f"example 0 alone vs in its batch: largest difference {np.abs(alone - out[:1]).max():.1e}"
    )

# %% nbgrader={"grade": true, "grade_id": "layernorm_forward", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): outputs for shapes with N != D and a square case, a
# non-contiguous x, rows of large offset; independence of each row from the others.
### BEGIN HIDDEN TESTS
from course.grading import check

check("layernorm_forward", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "layernorm_backward", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): dx, dgamma, dbeta with random upstream gradients, against
# centred differences of your own forward pass; the sum of dx over each row.
### BEGIN HIDDEN TESTS
from course.grading import check

check("layernorm_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · Dropout
#
# Srivastava et al. (2014): in training, keep each unit with probability $p$ and zero the
# rest, a fresh random mask at every step; at test time keep them all. **Inverted**
# dropout divides the kept units by $p$ during training, so that each unit's expected
# value is the same in both modes and test mode is the identity.
#
# In this course's API `p` is the probability of **keeping** a unit, as in the original
# paper. PyTorch's `nn.Dropout(p)` takes the probability of **dropping** one: our
# `p = 0.8` is PyTorch's `p = 0.2`.
#
# ### Exercise 3.1: `dropout_forward` (2 points) and `dropout_backward` (1 point)
#
# `dropout_param` holds `p`, `mode` ("train" or "test"; anything else is a `ValueError`)
# and optionally `seed`: then call `np.random.seed(seed)` before drawing the mask, so that
# the same seed gives the same mask. Train mode returns `x * mask / p` with a 0/1 mask;
# test mode returns `x` unchanged. `dropout_backward(dout, cache)` returns `dx`.


# %% nbgrader={"grade": false, "grade_id": "dropout_forward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def dropout_forward(x, dropout_param):
    """Inverted dropout, p the probability of keeping. Returns (out, cache)."""
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    ### BEGIN SOLUTION
    if mode == "train":
        mask = (np.random.rand(*x.shape) < p) / p
        out = x * mask
    elif mode == "test":
        mask, out = None, x
    else:
        raise ValueError(f"dropout_param['mode'] is {mode!r}: use 'train' or 'test'")
    ### END SOLUTION
    return out, (dropout_param, mask)


# %% nbgrader={"grade": false, "grade_id": "dropout_backward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def dropout_backward(dout, cache):
    """Returns dx."""
    ### BEGIN SOLUTION
    dropout_param, mask = cache
    return dout * mask if dropout_param["mode"] == "train" else dout
    ### END SOLUTION


# %% [markdown]
# **Check it**: the share of units kept, the mean kept the same, test mode the identity,
# and the gradient flowing only through the kept units.

# %%
with check_it("Exercise 3.1"):
    x = 1 + np.random.default_rng(4).random((500, 400))
    for p in (0.25, 0.5, 0.8):
        out, cache = dropout_forward(x, {"mode": "train", "p": p, "seed": 0})
        kept = np.mean(out != 0)
        print(f"p = {p}: kept {kept:.3f}, mean in / out {x.mean():.3f} / {out.mean():.3f}")
        assert abs(kept - p) < 0.01, f"keep a fraction p = {p} of the units, not {kept:.3f}"
        assert abs(out.mean() / x.mean() - 1) < 0.02, "divide what you keep by p"
        dx = dropout_backward(np.ones_like(x), cache)
        assert np.array_equal(dx != 0, out != 0), "the gradient flows through the kept units only"
    test_out, _ = dropout_forward(x, {"mode": "test", "p": 0.5})
    assert np.array_equal(test_out, x), "test mode is the identity"

# %% nbgrader={"grade": true, "grade_id": "dropout_forward", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): for several p, per array, the share of units kept and the
# scaling of the kept ones (statistics, never the draw order); the seed reproducing the
# mask; test mode, separately.
### BEGIN HIDDEN TESTS
from course.grading import check

check("dropout_forward", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "dropout_backward", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): dx against your own forward mask, in train and test mode.
### BEGIN HIDDEN TESTS
from course.grading import check

check("dropout_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · The finished network
#
# `FullyConnectedNet` from 04, finished: {affine - [batch or layer norm] - relu -
# [dropout]} × (L - 1), then affine - softmax. With `normalization` set, every hidden
# layer $l$ has `gamma{l}` (ones) and `beta{l}` (zeros), of `dtype`; regularisation still
# covers the weight matrices only. `self.bn_params` holds one `bn_param` per hidden layer
# (their running averages live there), and `self.dropout_param` the dropout's, with the
# network's `seed` when it has one (so that a gradient check sees the same mask every
# time). `.loss(X)` without labels runs in **test** mode, `.loss(X, y)` in train mode.
#
# We **subclass** your 04 network rather than copy it: its constructor (weights drawn
# from `seed`, biases, `dtype`, the regularisation) is your 04 code, unchanged, and with
# `normalization=None` and no dropout the finished network must give exactly your 04
# network's scores. The loss is written anew, since normalisation and dropout sit between
# the affine and ReLU layers that 04's loop chains directly.
#
# ### Exercise 4.1: `FullyConnectedNet` (4 points)


# %% nbgrader={"grade": false, "grade_id": "fully_connected_net_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
class FullyConnectedNet(FullyConnectedNet04):
    """{affine - [norm] - relu - [dropout]} x (L - 1) - affine - softmax."""

    def __init__(
        self,
        hidden_dims,
        input_dim,
        num_classes,
        dropout_keep_ratio=1,
        normalization=None,
        reg=0.0,
        weight_scale=1e-2,
        dtype=np.float32,
        seed=None,
    ):
        if normalization not in (None, "batchnorm", "layernorm"):
            raise ValueError(
                f"normalization={normalization!r}: use None, 'batchnorm' or 'layernorm'"
            )
        if not 0 < dropout_keep_ratio <= 1:
            raise ValueError(f"dropout_keep_ratio={dropout_keep_ratio!r} is not in (0, 1]")
        super().__init__(
            hidden_dims, input_dim, num_classes, reg=reg, weight_scale=weight_scale,
            dtype=dtype, seed=seed,
        )  # fmt: skip
        self.normalization = normalization
        self.use_dropout = dropout_keep_ratio != 1
        self.dropout_param = {"mode": "train", "p": dropout_keep_ratio}
        if seed is not None:
            self.dropout_param["seed"] = seed
        self.bn_params = [{"mode": "train"} for _ in hidden_dims]
        ### BEGIN SOLUTION
        if normalization is not None:
            for layer, width in enumerate(hidden_dims, start=1):
                self.params[f"gamma{layer}"] = np.ones(width, dtype=dtype)
                self.params[f"beta{layer}"] = np.zeros(width, dtype=dtype)
        ### END SOLUTION

    def loss(self, X, y=None):
        """Scores (N, C) if y is None (test mode), else (loss, grads) (train mode)."""
        X = X.astype(self.dtype)
        mode = "test" if y is None else "train"
        self.dropout_param["mode"] = mode
        for bn_param in self.bn_params:
            bn_param["mode"] = mode
        ### BEGIN SOLUTION
        caches, out = [], X
        for layer in range(1, self.num_layers):
            out, affine_cache = affine_forward(
                out, self.params[f"W{layer}"], self.params[f"b{layer}"]
            )
            norm_cache = None
            if self.normalization == "batchnorm":
                out, norm_cache = batchnorm_forward(
                    out,
                    self.params[f"gamma{layer}"],
                    self.params[f"beta{layer}"],
                    self.bn_params[layer - 1],
                )
            elif self.normalization == "layernorm":
                out, norm_cache = layernorm_forward(
                    out, self.params[f"gamma{layer}"], self.params[f"beta{layer}"], {}
                )
            out, relu_cache = relu_forward(out)
            drop_cache = None
            if self.use_dropout:
                out, drop_cache = dropout_forward(out, self.dropout_param)
            caches.append((affine_cache, norm_cache, relu_cache, drop_cache))
        last = self.num_layers
        scores, last_cache = affine_forward(out, self.params[f"W{last}"], self.params[f"b{last}"])
        if y is None:
            return scores
        loss, dout = softmax_loss(scores, y)
        grads = {}
        dout, grads[f"W{last}"], grads[f"b{last}"] = affine_backward(dout, last_cache)
        for layer in range(self.num_layers - 1, 0, -1):
            affine_cache, norm_cache, relu_cache, drop_cache = caches[layer - 1]
            if self.use_dropout:
                dout = dropout_backward(dout, drop_cache)
            dout = relu_backward(dout, relu_cache)
            if self.normalization == "batchnorm":
                dout, grads[f"gamma{layer}"], grads[f"beta{layer}"] = batchnorm_backward_alt(
                    dout, norm_cache
                )
            elif self.normalization == "layernorm":
                dout, grads[f"gamma{layer}"], grads[f"beta{layer}"] = layernorm_backward(
                    dout, norm_cache
                )
            dout, grads[f"W{layer}"], grads[f"b{layer}"] = affine_backward(dout, affine_cache)
        for layer in range(1, self.num_layers + 1):
            W = self.params[f"W{layer}"]
            loss += 0.5 * self.reg * np.sum(W * W)
            grads[f"W{layer}"] = grads[f"W{layer}"] + self.reg * W
        return loss, grads
        ### END SOLUTION


# %% [markdown]
# **Check it**: without normalisation or dropout, your 04 network's scores exactly; then a
# gradient check in float64 for each normalisation, with dropout (seeded), and the
# gradient of a bias placed just before batch normalisation, which is 0 up to rounding:
# normalisation subtracts the batch mean, and the bias with it.


# %%
def worst_gradient_error(model, X, y):
    _, grads = model.loss(X, y)
    worst = 0.0
    for name in model.params:

        def f(v, name=name):
            saved, model.params[name] = model.params[name], v
            value = model.loss(X, y)[0]
            model.params[name] = saved
            return value

        worst = max(worst, gradient_error(f, model.params[name], grads[name]))
    return worst, grads


X_check = np.random.default_rng(5).standard_normal((12, 8))
y_check = np.random.default_rng(6).integers(0, 4, 12)
with check_it("Exercise 4.1"):
    old = FullyConnectedNet04([7, 6], 8, 4, weight_scale=0.3, dtype=np.float64, seed=1)
    new = FullyConnectedNet([7, 6], 8, 4, weight_scale=0.3, dtype=np.float64, seed=1)
    assert np.array_equal(old.loss(X_check), new.loss(X_check)), "not the 04 network's scores"
    for settings in (
        {"normalization": "batchnorm"},
        {"normalization": "layernorm"},
        {"normalization": "batchnorm", "dropout_keep_ratio": 0.7, "reg": 0.1},
    ):
        model = FullyConnectedNet(
            [7, 6], 8, 4, weight_scale=0.3, dtype=np.float64, seed=2, **settings
        )
        worst, grads = worst_gradient_error(model, X_check, y_check)
        print(f"{settings}: worst relative error {worst:.1e} over {len(grads)} gradients")
        assert worst < 1e-5, f"{settings}: a gradient is off by {worst:.1e}"
        if settings["normalization"] == "batchnorm":
            print(f"{'':>30} largest |gradient of b1| {np.abs(grads['b1']).max():.1e}")

# %% nbgrader={"grade": true, "grade_id": "finished_net", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): parameter names, shapes and dtypes with each normalisation; on
# hidden weights (float64), scores in test mode, the loss and every gradient with batch
# norm, layer norm and seeded dropout, and the gradients against centred differences of
# your own loss; the biases before batch norm; running averages after a few steps.
### BEGIN HIDDEN TESTS
from course.grading import check

check("finished_net", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The digits, and a training helper
#
# The digits from 03 and 04, centred. `train_steps` takes plain SGD steps on random
# minibatches and calls `callback(step, model)` after each, so an experiment can look
# inside the model while it trains.

# %%
data = digits()
mean_image = data.X_train.mean(axis=0)
X_train, X_val, X_test = (X - mean_image for X in (data.X_train, data.X_val, data.X_test))
y_train, y_val, y_test = data.y_train, data.y_val, data.y_test
SEEDS = (0, 1, 2)
STEPS = 60  # SGD steps of each deep-network run below


def deep_net(normalization=None, weight_scale=1e-2, hidden_dims=(100,) * 6, seed=0, **kwargs):
    return FullyConnectedNet(
        list(hidden_dims), 64, 10, normalization=normalization, weight_scale=weight_scale,
        dtype=np.float64, seed=seed, **kwargs,
    )  # fmt: skip


def train_steps(
    model, steps, learning_rate=0.05, batch_size=100, seed=0, callback=None, X=None, y=None
):
    X, y = (X_train, y_train) if X is None else (X, y)
    rng, losses = np.random.default_rng(seed), []
    for step in range(steps):
        batch = rng.choice(len(X), size=batch_size, replace=False)
        loss, grads = model.loss(X[batch], y[batch])
        for name, grad in grads.items():
            model.params[name] = model.params[name] - learning_rate * grad
        losses.append(float(loss))
        if callback is not None:
            callback(step + 1, model)
    return losses


def spread(values):
    return f"{np.mean(values):.1%} ± {np.std(values):.1%}"


# %% [markdown]
# ### Exercise 4.2: training in both modes (3 points, graded by the loss curve)
#
# Nothing new to write: the hidden check trains your network, batch norm and then layer
# norm, from a bad start (weights of scale 0.01, four hidden layers) on a small fixed
# problem, and compares each loss curve with the reference's, step by step. Here, the
# same on the digits, three seeds each: the 0.01-scale deep network of 04, with and
# without normalisation.

# %%
curves = {}
for normalization in tqdm((None, "batchnorm", "layernorm"), desc="normalisations"):
    runs = []
    for seed in SEEDS:
        model = deep_net(normalization, seed=seed)
        losses = train_steps(model, STEPS, learning_rate=0.05, seed=seed)
        runs.append((losses, accuracy(model.loss(X_val), y_val)))
    curves[normalization] = runs
fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
for normalization, runs in curves.items():
    losses = np.array([r[0] for r in runs])
    label = f"{normalization}: validation {spread([r[1] for r in runs])} (3 seeds)"
    print(
        f"{normalization}: final training loss {losses[:, -1].mean():.3f}, {label.split(': ')[1]}"
    )
    line = ax.plot(losses.mean(axis=0), label=label)[0]
    ax.fill_between(
        range(losses.shape[1]), losses.min(0), losses.max(0), color=line.get_color(), alpha=0.2
    )
ax.axhline(np.log(10), color="gray", ls="--", label="log 10: nothing learned")
ax.set(
    xlabel="step",
    ylabel="training loss",
    title="Weights of 0.01, six hidden layers: only the normalised nets learn",
)
ax.legend(fontsize=8)
plt.show()

# %% nbgrader={"grade": true, "grade_id": "normalised_training", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): the loss curves of your network trained with batch norm and
# with layer norm from a 0.01-scale start, against the reference's at every step, and the
# test-mode accuracy after training.
### BEGIN HIDDEN TESTS
from course.grading import check

check("normalised_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5 · Predict, then measure
#
# Three predictions to write down **before** running the experiments below (3 points),
# each as a small function of the setting, so that the hidden check can ask it about
# settings you do not see (each answer accepted within 2%):
#
# 1. `predicted_running_fraction(k, momentum)`: a feature's batch mean is the same, $m$,
#    at every step. After `k` training steps from `running_mean = 0`, what fraction of
#    $m$ is the running mean? Below: `k = 10`, `momentum = 0.9`.
# 2. `predicted_test_scale(p)`: dropout **without** the division by `p` (the probability
#    of keeping). At test time every unit is kept. By what factor is a unit's mean at test
#    time larger than its mean during training? Below: `p = 0.5`.
# 3. `predicted_batch_of_one_output(gamma, beta)`: a batch-norm layer with the same
#    `gamma` and `beta` for every feature, in train mode, gets a batch of **one** example.
#    What is the mean, over its features, of its output? Below: `gamma = 2`, `beta = 3`.


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_running_fraction(k, momentum):
    """The running mean after k steps from 0, as a fraction of a constant batch mean."""
    ### BEGIN SOLUTION
    return 1 - momentum**k
    ### END SOLUTION


def predicted_test_scale(p):
    """Test-time mean / train-time mean of a unit, with dropout not divided by p."""
    ### BEGIN SOLUTION
    return 1 / p
    ### END SOLUTION


def predicted_batch_of_one_output(gamma, beta):
    """The mean output of batch norm (train mode) for a batch of one example."""
    ### BEGIN SOLUTION
    return beta
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "predictions", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): each prediction within its band.
### BEGIN HIDDEN TESTS
from course.grading import check

check("predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# Two more (2 points), on what the scale of the weights does to the loss (measured in part
# 6, "The shape of the loss hides the weights' scale"):
#
# 4. `predicted_gradient_ratio_with_batchnorm(c)`: a network with batch norm after every
#    hidden affine layer, in train mode, without weight decay (`reg = 0`). Multiply the
#    weight matrix of every hidden layer by `c > 0`, leaving the biases, the gammas and
#    betas and the last layer as they are. By what factor does the gradient of the loss
#    with respect to a hidden weight matrix change (the ratio of its norms, after /
#    before)? Below: `c = 2`.
# 5. `predicted_score_ratio_without_norm(c, layers)`: a ReLU network without normalisation,
#    with `layers` weight matrices and every bias zero. Multiply every weight matrix, the
#    last one too, by `c > 0`. By what factor do its scores change? Below: `c = 2`,
#    `layers = 4`.


# %% nbgrader={"grade": false, "grade_id": "scale_predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_gradient_ratio_with_batchnorm(c):
    """|dL/dW| after scaling the hidden weights by c, over |dL/dW| before, with batch norm."""
    ### BEGIN SOLUTION
    return 1 / c
    ### END SOLUTION


def predicted_score_ratio_without_norm(c, layers):
    """The scores' factor after scaling every weight matrix by c, no normalisation, no bias."""
    ### BEGIN SOLUTION
    return c**layers
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "scale_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within its band.
### BEGIN HIDDEN TESTS
from course.grading import check

check("scale_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6 · The leaks, measured
#
# ### The batch couples the examples
#
# In train mode an example's output depends on the rest of its batch; a batch of one
# example outputs $\beta$, whatever the example. Measured: your prediction 3, then a
# network trained with batches of 2, 8 and 64 for one epoch each, evaluated on the
# validation set in test mode (running averages) and, as if one forgot to switch, in
# train mode on batches of the training size. One epoch each means the same examples
# seen, **not** the same steps: batches of 64 take 8 times fewer steps than batches of 8
# and 32 times fewer than batches of 2 (the steps are printed), at the same learning
# rate, tuned for none of them. So compare the two ways of evaluating within a row; the
# rows' test-mode accuracies also differ by their number of steps.

# %%
one, _ = batchnorm_forward(X_val[:1], 2 * np.ones(64), 3 * np.ones(64), {"mode": "train"})
print(
    f"batch of one, gamma 2, beta 3: output mean {one.mean():.4f}, std {one.std():.4f}",
    f"(you predicted a mean of {predicted_batch_of_one_output(2.0, 3.0)})",
)


def scores_in_train_mode(model, X):
    """The network's scores with batch statistics, as if it were left in train mode."""
    out = X
    for layer in range(1, model.num_layers):
        out, _ = affine_forward(out, model.params[f"W{layer}"], model.params[f"b{layer}"])
        gamma, beta = model.params[f"gamma{layer}"], model.params[f"beta{layer}"]
        out, _ = batchnorm_forward(out, gamma, beta, {"mode": "train"})
        out, _ = relu_forward(out)
    last = model.num_layers
    return affine_forward(out, model.params[f"W{last}"], model.params[f"b{last}"])[0]


def val_accuracy_in_train_mode(model, batch_size):
    chunks = range(0, len(X_val), batch_size)
    scores = np.concatenate(
        [scores_in_train_mode(model, X_val[s : s + batch_size]) for s in chunks]
    )
    return accuracy(scores, y_val)


gap = {}
for batch_size in tqdm((2, 8, 64), desc="batch sizes"):
    results = []
    for seed in SEEDS:
        model = deep_net("batchnorm", weight_scale=0.1, hidden_dims=(100,) * 3, seed=seed)
        steps = len(X_train) // batch_size  # one epoch each
        train_steps(model, steps, learning_rate=0.02, batch_size=batch_size, seed=seed)
        results.append(
            (
                accuracy(model.loss(X_val), y_val),
                val_accuracy_in_train_mode(model, batch_size),
                val_accuracy_in_train_mode(model, 1),
            )
        )
    gap[batch_size] = np.array(results)
for batch_size, results in gap.items():
    test_mode, train_mode, single = results.T
    print(
        f"batches of {batch_size:>2} ({len(X_train) // batch_size} steps): validation in test "
        f"mode {spread(test_mode)}, in train mode {spread(train_mode)}, one example at a time "
        f"{spread(single)}"
    )

# %% [markdown]
# Small batches make the batch statistics noisy: the network learns on noisy
# normalisation, and the gap between the two ways of evaluating is widest there. Left in
# train mode one example at a time, every example gets the same output, $\beta$ pushed
# through the rest of the network, so the accuracy is that of a constant guess.
#
# ### Running statistics start at zero
#
# That start is this course's API choice: `running_mean` and `running_var` begin as
# zeros, as in CS231n. PyTorch's `BatchNorm1d` starts `running_var` at **ones** (and
# `running_mean` at zeros), so there the early running variance is pulled towards 1, not
# towards 0, and the correction by $1 - 0.9^k$ below would be wrong for it. Here, from
# zeros: after $k$ steps the running mean is $(1 - 0.9^k)$ times the batch mean (if that
# stays put): the same bias as Adam's $m$ in 04, which Adam divides away by $1 - \beta_1^t$.
# Batch norm does not, so a network evaluated after few steps normalises with statistics
# that are too small. Measured: your prediction 1, then test-mode validation accuracy
# against $k$, with the running averages as they are and bias-corrected as Adam would.

# %%
param = {"mode": "train"}
column = 2 + np.random.default_rng(7).standard_normal((100, 1))
for _ in range(10):
    batchnorm_forward(column, np.ones(1), np.zeros(1), param)
fraction = param["running_mean"][0] / column.mean()
print(
    f"after 10 steps the running mean is {fraction:.4f} of the batch mean",
    f"(you predicted {predicted_running_fraction(10, 0.9):.4f})",
)

ks = (1, 2, 5, 10, 20, 40, 80)
by_k = {"as kept": [], "bias-corrected": []}
for seed in tqdm(SEEDS, desc="seeds"):
    rows = {name: [] for name in by_k}

    def evaluate(step, model, rows=rows):
        if step not in ks:
            return
        rows["as kept"].append(accuracy(model.loss(X_val), y_val))
        saved = [dict(p) for p in model.bn_params]
        for p in model.bn_params:
            p["running_mean"] = p["running_mean"] / (1 - 0.9**step)
            p["running_var"] = p["running_var"] / (1 - 0.9**step)
        rows["bias-corrected"].append(accuracy(model.loss(X_val), y_val))
        model.bn_params = saved

    model = deep_net("batchnorm", weight_scale=0.1, hidden_dims=(100,) * 3, seed=seed)
    train_steps(model, max(ks), learning_rate=0.05, seed=seed, callback=evaluate)
    for name in by_k:
        by_k[name].append(rows[name])
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for name, runs in by_k.items():
    runs = np.array(runs)
    ax.errorbar(ks, runs.mean(0), yerr=runs.std(0), marker="o", capsize=3, label=name)
ax.set(xscale="log", xlabel="training steps k", ylabel="validation accuracy (test mode)",
       title="Early on, running statistics biased towards 0 cost accuracy")  # fmt: skip
ax.legend()
plt.show()
for name, runs in by_k.items():
    print(
        f"{name:>15}: after k = {ks[1]} steps {spread(np.array(runs)[:, 1])},",
        f"after {ks[-1]} {spread(np.array(runs)[:, -1])}",
    )

# %% [markdown]
# ### With batch norm, weight decay changes the step size
#
# Batch norm makes a layer's output invariant to the scale of the weights before it:
# $\text{BN}(x\, aW) = \text{BN}(x W)$. So the loss does not care about $\|W\|$, and its
# gradient is orthogonal to $W$ and shrinks as $1 / \|W\|$: a step of size $\eta$ turns
# $W$ by an angle of about $\eta / \|W\|^2$. Weight decay then no longer regularises
# what the layer computes; it shrinks $\|W\|$, and so raises the **effective learning
# rate** $\eta / \|W\|^2$ (van Laarhoven, 2017). Measured on $W_2$ of a batch-norm network,
# with and without L2:

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained")
learning_rate = 0.05
for reg in (0.0, 0.05):
    norms_all = []
    for seed in SEEDS:
        norms = []
        model = deep_net("batchnorm", weight_scale=0.1, hidden_dims=(100,) * 3, seed=seed, reg=reg)
        record = lambda _, m, norms=norms: norms.append(np.linalg.norm(m.params["W2"]))  # noqa: E731
        train_steps(model, 2 * STEPS, learning_rate=learning_rate, seed=seed, callback=record)
        norms_all.append(norms)
    norms_all = np.array(norms_all)
    ax1.plot(norms_all.mean(0), label=f"reg {reg}")
    ax2.semilogy(learning_rate / norms_all.mean(0) ** 2, label=f"reg {reg}")
    final = norms_all[:, -1]
    print(
        f"reg {reg}: |W2| after {2 * STEPS} steps {final.mean():.2f} ± {final.std():.2f}, "
        f"effective step {learning_rate / final.mean() ** 2:.2e}"
    )
ax1.set(xlabel="step", ylabel="|W2|", title="L2 shrinks the weights before batch norm...")
ax2.set(xlabel="step", ylabel="lr / |W2|^2", title="...which raises the effective step size")
ax1.legend()
ax2.legend()
plt.show()

# %% [markdown]
# ### The shape of the loss hides the weights' scale
#
# The same invariance, seen as the shape of the cost function. Your predictions 4 and 5
# first, measured on a batch-norm network of three hidden layers of 100 trained like the
# one above without weight decay, but for 60 steps (`STEPS`) instead of 120, and on a
# network without normalisation at its first draw (its biases are zero), on 500 training
# images, in train mode:

# %%
X_shape, y_shape = X_train[:500], y_train[:500]
bn_net = deep_net("batchnorm", weight_scale=0.1, hidden_dims=(100,) * 3, seed=0)
train_steps(bn_net, STEPS, learning_rate=0.05, seed=0)
plain_net = deep_net(None, weight_scale=0.1, hidden_dims=(100,) * 3, seed=0)
hidden = [f"W{layer}" for layer in range(1, bn_net.num_layers)]


def scaled(params, c, names):
    """A copy of params with the arrays named in `names` multiplied by c."""
    return {k: v * c if k in names else v for k, v in params.items()}


def loss_and_grads_at(model, params):
    own, model.params = model.params, params
    try:
        return model.loss(X_shape, y_shape)
    finally:
        model.params = own


c = 2.0
before, after = (loss_and_grads_at(bn_net, scaled(bn_net.params, s, hidden)) for s in (1, c))
ratio = np.linalg.norm(after[1]["W2"]) / np.linalg.norm(before[1]["W2"])
print(
    f"batch norm, hidden weights x {c:g}: loss {before[0]:.4f} -> {after[0]:.4f}; "
    f"|dL/dW2| x {ratio:.4f} (you predicted {predicted_gradient_ratio_with_batchnorm(c):.4f})"
)
weights = [f"W{layer}" for layer in range(1, plain_net.num_layers + 1)]
scores = [plain_net.loss(X_shape)]
plain_net.params = scaled(plain_net.params, c, weights)
scores.append(plain_net.loss(X_shape))
plain_net.params = scaled(plain_net.params, 1 / c, weights)
print(
    f"no normalisation, all {len(weights)} weight matrices x {c:g}: scores x "
    f"{np.linalg.norm(scores[1]) / np.linalg.norm(scores[0]):.4f} "
    f"(you predicted {predicted_score_ratio_without_norm(c, len(weights)):.4f})"
)

# %% [markdown]
# So, in train mode and up to batch norm's $\epsilon$, the batch-norm network computes the
# same function at every scale $c$ of its hidden weights, while its gradient shrinks as
# $1/c$ and its curvature as $1/c^2$ (differentiate $L(cW) = L(W)$ once, then twice): the
# same valley looks $c^2$ times flatter when its weights are $c$ times larger. Dinh et
# al. (2017) made this argument against reading generalisation off sharpness. A picture of
# the loss around the weights (a *1-D slice*: the loss at $\theta + a\,d$ for a direction
# $d$ and steps $a$) then depends on an arbitrary choice. Below, one random Gaussian
# direction in the hidden weights (the last layer, which the rescaling leaves alone, stays
# put), through the same network at $c = 0.5$ and at $c = 2$: raw (the same $d$ for both,
# scaled once to about the size of the trained weights), and *filter-normalised* as Li et
# al. (2018, section 4) define it: each neuron's slice of $d$ (a column of a weight matrix,
# here) rescaled to the norm of that neuron's weights. The biases, gammas and betas are
# left out of the direction, as their code's `--xignore biasbn` option leaves out every
# 1-D parameter (`course.landscape.normalise_filters`). Each slice is 41 losses in train
# mode (they also update `bn_net`'s running statistics, which train mode does not read).

# %%
from course.landscape import model_loss, normalise_filters, plot_slice_1d, slice_1d

loss_of = model_loss(bn_net, X_shape, y_shape)
rng = np.random.default_rng(0)
draw = {k: rng.standard_normal(v.shape) if k in hidden else np.zeros_like(v)
        for k, v in bn_net.params.items()}  # fmt: skip
size = np.sqrt(
    sum(np.sum(bn_net.params[k] ** 2) for k in hidden) / sum(np.sum(draw[k] ** 2) for k in hidden)
)
raw = {k: v * size for k, v in draw.items()}  # about the trained weights' own size
looks = {"raw": "the smaller weights look sharper", "filter-normalised": "one curve for both"}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained")
slices = {}
for ax, (kind, look) in zip(axes, looks.items(), strict=True):
    for scale in (0.5, 2.0):
        centre = scaled(bn_net.params, scale, hidden)
        d = raw if kind == "raw" else normalise_filters(raw, centre)
        slices[kind, scale] = slice_1d(loss_of, centre, d, span=1.0, resolution=41)
        plot_slice_1d(slices[kind, scale], ax=ax, title=f"{kind} direction: {look}")
        ax.lines[-1].set_label(f"hidden weights x {scale:g}")
    ax.set(xlabel="step a along d", yscale="log")  # both panels on one kind of axis
    ax.legend()
plt.show()
for kind in looks:
    small, large = (slices[kind, scale].losses for scale in (0.5, 2.0))
    rise_small, rise_large = (v[[10, 30]].mean() - v[20] for v in (small, large))
    print(
        f"{kind}: loss rise at a = +-0.5 with the weights x 0.5 {rise_small:.3g}, x 2 "
        f"{rise_large:.3g} ({rise_small / rise_large:.1f} times as much); the two curves "
        f"differ by at most {np.abs(small - large).max():.1e}"
    )
small, large = (slices["raw", scale].losses for scale in (0.5, 2.0))
print(
    f"raw: x 0.5 at a = -0.25, +0.25: {small[15]:.4f}, {small[25]:.4f}; x 2 at a = -1, +1: "
    f"{large[0]:.4f}, {large[40]:.4f} (0.5 W + a d = 0.5 (W + 2a d), 2 W + a d = 2 (W + a d / 2))"
)
print(f"parameters of the network: {sum(v.size for v in bn_net.params.values()):,}")

# %% [markdown]
# Along the raw direction the network at $c = 0.5$ looks many times sharper than the same
# network at $c = 2$: its raw curve is the other one squeezed 4 times along $a$ (the last
# line: the same losses, but for $\epsilon$, at $a = \pm 0.25$ and at $a = \pm 1$). Were
# the loss quadratic in $a$, its rise at $a = \pm 0.5$ would be $4^2 = 16$ times as much
# at $c = 0.5$ as at $c = 2$, the ratio of the curvatures; the printed ratio is about 76:
# between $a = \pm 0.5$ and $a = \pm 2$ on the curve of $c = 2$, the loss grows faster
# than quadratically. Along the filter-normalised direction the two curves
# are one but for the small difference printed: batch norm's $\epsilon$, added to
# variances 16 times smaller at $c = 0.5$ than at $c = 2$. Measured: the same two
# filter-normalised slices with $\epsilon = 10^{-12}$ in every batch-norm layer, and at
# $c = 0.05$ against $c = 2$ with the usual $\epsilon$, where $c^2 \sigma^2$ nears
# $\epsilon$ and the invariance breaks; then, at the centre of the slices, the smallest
# and the median variance of a feature at the input of each batch-norm layer, at
# $c = 0.05$, $0.5$ and $2$, beside $\epsilon = 10^{-5}$:


# %%
def filter_normalised_gap(scales, eps=None):
    """The largest difference of two filter-normalised slices, at two scales."""
    saved = [dict(p) for p in bn_net.bn_params]
    for p in bn_net.bn_params if eps is not None else ():
        p["eps"] = eps
    try:
        curves = [
            slice_1d(loss_of, centre, normalise_filters(raw, centre), 1.0, 41).losses
            for centre in (scaled(bn_net.params, s, hidden) for s in scales)
        ]
    finally:
        bn_net.bn_params = saved
    return np.abs(curves[0] - curves[1]).max()


gaps = filter_normalised_gap((0.5, 2.0), 1e-12), filter_normalised_gap((0.05, 2.0))
print(f"x 0.5 against x 2, eps 1e-12: the curves differ by at most {gaps[0]:.1e}")
print(f"x 0.05 against x 2, eps 1e-5: the curves differ by at most {gaps[1]:.1e}")


def input_variances(params):
    """Each batch-norm layer's per-feature variances of its input (D,), train mode, X_shape."""
    out, variances = X_shape, []
    for layer in range(1, bn_net.num_layers):
        out, _ = affine_forward(out, params[f"W{layer}"], params[f"b{layer}"])
        variances.append(out.var(axis=0))
        gamma, beta = params[f"gamma{layer}"], params[f"beta{layer}"]
        out, _ = relu_forward(batchnorm_forward(out, gamma, beta, {"mode": "train"})[0])
    return variances


for scale in (0.05, 0.5, 2.0):
    variances = input_variances(scaled(bn_net.params, scale, hidden))
    layers = ", ".join(f"{v.min():.1e} / {np.median(v):.1e}" for v in variances)
    print(
        f"x {scale:g}: input variances of batch-norm layers 1-3, smallest / median {layers}",
        "(eps 1e-5)",
    )


# %% [markdown]
# At $c = 0.05$ the smallest variance at the first batch-norm layer's input is less than
# ten times $\epsilon$, and its median less than twenty times; at $c = 0.5$ and at $c = 2$
# every one is hundreds of times $\epsilon$ or more, and the variances at $c = 0.5$ are
# about 16 times smaller than at $c = 2$, as $c^2$ says.
#
# That is why Li et al. compare the landscapes of different networks along
# filter-normalised directions, and what any slice leaves out: it is one line (or plane)
# through a space of as many dimensions as the network has parameters (printed above), and
# the scale of its axis is a choice, made here by the weights themselves.
#
# To look around yourself: the same network's loss on a plane of two filter-normalised
# random directions (contours, and the surface), redrawn when you let go of a slider. Pick
# the directions' seed to see another plane, the span (in filter norms) and the resolution
# (a 15 x 15 plane is 225 forward and backward passes, a second or two).

# %%
from course.landscape import explore

_ = explore(loss_of, bn_net.params, resolution=15)

# %% [markdown]
# ### Layer norm: no batch, and what it costs
#
# Layer norm needs no running averages and behaves the same in both modes; but it
# normalises the features of one example together, which removes information that
# differs between examples only in their overall scale. Same network, batches of 8
# (where batch norm is noisy) and of 64, one epoch each (so batches of 64 take 8 times
# fewer steps), the same untuned learning rate, three seeds each; the seconds per run
# are printed, and the ratio of layer norm's to batch norm's at each batch size:

# %%
rows = []
for batch_size in (8, 64):
    for normalization in ("batchnorm", "layernorm"):
        accs, seconds = [], []
        for seed in SEEDS:
            model = deep_net(normalization, weight_scale=0.1, hidden_dims=(100,) * 3, seed=seed)
            start = time.perf_counter()
            train_steps(
                model,
                len(X_train) // batch_size,
                learning_rate=0.02,
                batch_size=batch_size,
                seed=seed,
            )
            seconds.append(time.perf_counter() - start)
            accs.append(accuracy(model.loss(X_val), y_val))
        rows.append((batch_size, normalization, spread(accs), np.mean(seconds)))
for batch_size, normalization, acc, seconds in rows:
    print(
        f"batches of {batch_size:>2}, {normalization:>9}: validation {acc}, {seconds:.2f} s per run"
    )
for batch_size in (8, 64):
    timed = {normalization: seconds for b, normalization, _, seconds in rows if b == batch_size}
    ratio = timed["layernorm"] / timed["batchnorm"]
    print(f"batches of {batch_size:>2}: layer norm takes {ratio:.2f}x batch norm's seconds")

# %% [markdown]
# Here layer norm matches batch norm at both batch sizes: its mean is as high or higher,
# within the three seeds' spread. The seconds are of the same order; they were timed while
# other work may share the machine, so their ratio is this run's, not a ranking. The
# batches of 64 end far lower than those of 8 for both: 18 steps against 149.
#
# ### Dropout without the division by `p`
#
# Your prediction 2, then measured: a unit's mean during training against test time,
# with inverted dropout and without the division.

# %%
h = np.abs(np.random.default_rng(8).standard_normal((2000, 100)))
dropped, _ = dropout_forward(h, {"mode": "train", "p": 0.5, "seed": 0})
not_inverted = dropped * 0.5  # undo the division: what dropout without it gives
print(f"test / train mean, inverted: {h.mean() / dropped.mean():.3f}; "
      f"without the division: {h.mean() / not_inverted.mean():.3f}",
      f"(you predicted {predicted_test_scale(0.5)})")  # fmt: skip

# %% [markdown]
# Without the division, every dropout layer's output at test time is $1/p$ times its
# mean in training. How far off are the scores after $L$ such layers? If every layer
# were linear in its mask, by exactly $p^{-L}$: ReLU passes a positive scale through
# ($\text{relu}(a z) = a\, \text{relu}(z)$ for $a > 0$) when there are no biases. But
# the ReLU of a masked sum is not the ReLU of its mean, and biases do not scale, so the
# real factor is another number. Measured on a random ReLU network (He-scaled weights,
# seed 9), with $L$ dropout layers of $p = 0.5$ not divided: the size of the test-time
# scores against the size of the training-time scores averaged over 200 masks (seeds
# 0-199), without and with biases:

# %%
rng = np.random.default_rng(9)
x_in = rng.standard_normal((200, 100))
hidden_W = [np.sqrt(2 / 100) * rng.standard_normal((100, 100)) for _ in range(3)]
hidden_b = [0.5 * rng.standard_normal(100) for _ in range(3)]
W_out = np.sqrt(1 / 100) * rng.standard_normal((100, 10))


def scores_without_division(depth, biases, mask_seed=None):
    """Scores after `depth` ReLU layers, each followed by dropout (p = 0.5) not divided
    by p, or by nothing at test time (mask_seed None)."""
    out = x_in
    for layer in range(depth):
        out = np.maximum(0.0, out @ hidden_W[layer] + (hidden_b[layer] if biases else 0.0))
        if mask_seed is not None:
            param = {"mode": "train", "p": 0.5, "seed": 1000 * layer + mask_seed}
            out = dropout_forward(out, param)[0] * 0.5  # undo the division
    return out @ W_out


for biases in (False, True):
    factors = []
    for depth in (1, 2, 3):
        test = scores_without_division(depth, biases)
        train = np.mean([scores_without_division(depth, biases, s) for s in range(200)], axis=0)
        factors.append(f"L = {depth}: {np.linalg.norm(test) / np.linalg.norm(train):.2f}")
    print(f"{'with' if biases else 'without'} biases: test / train size", ", ".join(factors),
          f"(p^-L = {', '.join(str(0.5**-L) for L in (1, 2, 3))})")  # fmt: skip

# %% [markdown]
# After one dropout layer the factor is $1/p$ (up to the noise of 200 masks): what comes
# after it is linear. Beyond one it grows with the number of dropout layers, but stays
# below $p^{-L}$ here, and with biases further below at three layers: $p^{-L}$ is the
# scale of a network that is linear in its masks (no biases, and no ReLU between a mask
# and the next), not a law. Either way the scores at test time are larger than what
# training saw: the class ranking may survive, but the probabilities (and the loss) do
# not.
#
# ### A gradient check fails when the mask is redrawn
#
# Centred differences evaluate the loss twice per coordinate. If each evaluation draws a
# new mask, they compare two different functions. With the network's seed, the mask is
# the same at every call:

# %%
for seed in (3, None):
    model = FullyConnectedNet(
        [7, 6], 8, 4, dropout_keep_ratio=0.6, weight_scale=0.3, dtype=np.float64, seed=seed
    )
    worst, _ = worst_gradient_error(model, X_check, y_check)
    print(f"seed {seed}: worst relative error {worst:.1e}")

# %% [markdown]
# ### Dropout against L2 on the train/validation gap
#
# 200 training examples, a network of two hidden layers of 200, Adam for 160 steps:
# enough to memorise them. The gap between training and validation accuracy, three
# seeds each. The strengths are not tuned, so read this as a measurement of these
# settings, not a verdict on the methods (try others):

# %%
X_few, y_few = X_train[:200], y_train[:200]
settings = {
    "none": {},
    "L2 reg 0.05": {"reg": 0.05},
    "dropout keep 0.5": {"dropout_keep_ratio": 0.5},
}
gaps = {}
for name, extra in tqdm(settings.items(), desc="regularisers"):
    results = []
    for seed in SEEDS:
        model = deep_net(None, weight_scale=0.1, hidden_dims=(200, 200), seed=seed, **extra)
        model.dropout_param.pop("seed", None)  # a fresh mask at every step
        fit(model, adam, X_few, y_few, epochs=40, batch_size=50, seed=seed)
        train_acc, val_acc = accuracy(model.loss(X_few), y_few), accuracy(model.loss(X_val), y_val)
        results.append((train_acc, val_acc))
    gaps[name] = np.array(results)
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
for i, (name, results) in enumerate(gaps.items()):
    gap_values = results[:, 0] - results[:, 1]
    ax.bar(i, gap_values.mean(), yerr=gap_values.std(), capsize=4)
    print(
        f"{name:>17}: train {spread(results[:, 0])}, validation {spread(results[:, 1])},",
        f"gap {spread(gap_values)}",
    )
ax.set_xticks(range(len(gaps)), list(gaps))
ax.set(
    ylabel="train - validation accuracy",
    title="Overfitting 200 examples: does a regulariser narrow the gap?",
)
plt.show()

# %% [markdown]
# Compare each gap with its spread before believing a difference. On these digits, at
# these strengths, the printed gaps show no regulariser narrowing it: a regulariser's
# benefit depends on the data and on its strength, and has to be measured, with seeds,
# before it is believed.

# %% [markdown]
# ### Explore: batch size, initial scale, normalisation
#
# Six hidden layers, 60 SGD steps. Left, the loss; right, each layer's activation
# standard deviation after training. Without normalisation a small start leaves the deep
# layers silent; with it, every layer's pre-activations are rescaled.


# %%
def explore(batch_size=32, log10_weight_scale=-2.0, normalization="batchnorm"):
    model = deep_net(
        None if normalization == "none" else normalization, weight_scale=10.0**log10_weight_scale
    )
    losses = train_steps(model, 60, learning_rate=0.05, batch_size=batch_size)
    out, stds = X_val, []
    for layer in range(1, model.num_layers):
        out, _ = affine_forward(out, model.params[f"W{layer}"], model.params[f"b{layer}"])
        if normalization == "batchnorm":
            out, _ = batchnorm_forward(
                out,
                model.params[f"gamma{layer}"],
                model.params[f"beta{layer}"],
                model.bn_params[layer - 1],
            )
        elif normalization == "layernorm":
            out, _ = layernorm_forward(
                out, model.params[f"gamma{layer}"], model.params[f"beta{layer}"], {}
            )
        out, _ = relu_forward(out)
        stds.append(out.std())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3), layout="constrained")
    ax1.plot(losses)
    title = f"{normalization}, batch {batch_size}, weights 1e{log10_weight_scale:g}: below log 10?"
    broken = np.flatnonzero(~np.isfinite(losses))
    if broken.size:  # overflow: the curve stops, and says where
        ax1.set_yscale("log")
        title += f"\ndiverged: no finite loss from step {broken[0]} on"
    ax1.set(xlabel="step", ylabel="loss", title=title)
    ax2.semilogy(range(1, len(stds) + 1), np.maximum(stds, 1e-30), marker="o")
    ax2.set(xlabel="hidden layer", ylabel="activation std", title="Do the deep layers stay alive?")
    if not np.all(np.isfinite(stds)):
        ax2.set_title("The activations overflowed: nothing to draw")
    plain_log_labels(ax2)
    plt.show()


_ = explore_plot(
    explore,
    batch_size=widgets.IntSlider(value=32, min=2, max=256),
    log10_weight_scale=widgets.FloatSlider(value=-2.0, min=-3.0, max=0.0, step=0.25),
    normalization=["batchnorm", "layernorm", "none"],
)

# %% [markdown]
# ### Learning-rate sensitivity, and the test set once
#
# Six hidden layers of 100 from He's scale ($\sqrt{2/100}$), 60 SGD steps, each
# learning rate and setting with three seeds. Normalisation widens the range of learning
# rates that train. Then, once, the test accuracy of the best setting by validation.

# %%
learning_rates = (0.01, 0.1, 0.3, 1.0)
sweep = {}
for normalization in tqdm((None, "batchnorm"), desc="sweep"):
    for lr in learning_rates:
        accs = []
        for seed in SEEDS:
            model = deep_net(normalization, weight_scale=np.sqrt(2 / 100), seed=seed)
            with np.errstate(all="ignore"):
                train_steps(model, STEPS, learning_rate=lr, seed=seed)
                accs.append(accuracy(model.loss(X_val), y_val))
        sweep[normalization, lr] = (np.array(accs), model)
fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
for normalization in (None, "batchnorm"):
    means = np.array([sweep[normalization, lr][0].mean() for lr in learning_rates])
    stds = np.array([sweep[normalization, lr][0].std() for lr in learning_rates])
    ax.errorbar(learning_rates, means, yerr=stds, marker="o", capsize=3, label=str(normalization))
ax.set(xscale="log", xlabel="learning rate", ylabel="validation accuracy (3 seeds)",
       title="Batch norm trains over a wider range of learning rates")  # fmt: skip
ax.legend()
plt.show()
for normalization in (None, "batchnorm"):
    print(
        f"{normalization!s:>9}:",
        ", ".join(f"lr {lr} {spread(sweep[normalization, lr][0])}" for lr in learning_rates),
    )
best = max(sweep, key=lambda key: sweep[key][0].mean())
print(
    f"best by validation: {best[0]}, learning rate {best[1]}: validation {spread(sweep[best][0])}"
)
print(
    f"test accuracy, looked at once (seed {SEEDS[-1]}):",
    f"{accuracy(sweep[best][1].loss(X_test), y_test):.1%}",
)

# %% [markdown]
# ## What to take away
#
# - Batch norm rescues a badly scaled deep network and widens the usable learning rates,
#   at a price: examples in a batch affect each other, small batches are noisy, train and
#   test mode differ, running statistics start biased, and weight decay turns into a
#   step-size schedule.
# - With batch norm the loss does not see the scale of the weights before it, and its
#   gradient and curvature do: a picture of the loss is comparable across networks only
#   along filter-normalised directions, and even then it is one line through thousands of
#   dimensions.
# - Layer norm has none of the batch's problems. On three hidden layers from weights of
#   0.1 it matched batch norm at batches of 8 and of 64; on six from weights of 0.01, in
#   60 steps, it trained far more slowly (validation about 60% against batch norm's 94%,
#   printed in part 4). Batch norm remains common in convolutional networks, layer norm
#   is the standard one for sequences and transformers.
# - Dropout must be rescaled (in training, inverted) and seeded for a gradient check;
#   check which probability an API takes: ours keeps, PyTorch's drops.
