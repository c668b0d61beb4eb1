# %% [markdown]
# # 08 · Attention and transformers
#
# A transformer replaces recurrence by **attention**: every position looks at every
# other, through a softmax over scores $q \cdot k$. You build it piece by piece in NumPy,
# check every gradient, then train a tiny decoder-only transformer on a task that cannot
# be solved without looking back: copying a sequence.
#
# **The leaks shown here:** without the $1/\sqrt{d}$ scale the softmax saturates as $d$
# grows; attention has no idea of order unless positions are added; a causal mask off by
# one lets the model read the answer, and the training loss lies; a fully masked row
# gives NaN, and a "large negative" constant in place of $-\infty$ hides it, until float16;
# a wrong reshape when splitting heads keeps every shape and changes the maths; a deep
# post-LN stack needs warm-up where pre-LN does not; weight decay on the layer norms' gains
# pulls them to 0; float16 and bfloat16 lose small updates whole; the scale itself changes
# no function, only how far the optimiser's steps go; a stack without its residual
# connections barely leaves chance.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your code from 04, 05 and 07 | nothing: it is carried forward | 0 |
# | 1 · Scaled dot-product attention | `softmax`, `attention_forward`, `attention_backward`, `causal_mask` | 8 |
# | 2 · Multi-head attention | `multihead_attention_forward`, `multihead_attention_backward` | 6 |
# | 3 · Positions | `positional_encoding` | 1 |
# | 4 · A pre-LN transformer block, trained | `block_forward`, `block_backward` | 7 |
# | 5 · Predictions | two small formulas, before the experiments that measure them | 2 |
# | 7 · The shape of the loss | two more formulas, on the scale, before their measurements | 2 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.
#
# Here the task is generated, so that we know exactly what the model has to learn; part 6
# ends by training your LSTM from 07 on the same task and budget.

# %%
import time

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.gradcheck import gradient_error
from course.notebook import check_it, explore_plot

# %% [markdown]
# ## 0 · Your code from 04, 05 and 07
#
# The transformer block normalises with your `layernorm_forward` and `layernorm_backward`
# from 05, the experiments train with your `adam` and `adamw` from 04, and the last
# experiment trains your `lstm_forward` and `lstm_backward` from 07 against the transformer.
# The cells below import them from `my_05_normalisation.py`, `my_04_optimisers.py` and
# `my_07_recurrent.py` beside this notebook, which `course export` (run by `make lab` and
# `course check`) writes from the cells marked `#| export` of those notebooks. A hidden
# check of this notebook that fails because of one of them says so by name (no hidden
# check uses your LSTM). Fixed something there? Save that notebook, then re-run these cells.

# %% nbgrader={"grade": false, "grade_id": "carried_from_05", "locked": true, "schema_version": 3, "solution": false}
# Your layer norm from 05 (work/05_normalisation), on x (N, D).
from course.carry import carry  # imported here: this cell may be re-run alone

layernorm_forward, layernorm_backward = carry(
    "05_normalisation", "layernorm_forward layernorm_backward"
)

# %% nbgrader={"grade": false, "grade_id": "carried_from_04", "locked": true, "schema_version": 3, "solution": false}
# Your Adam and AdamW from 04 (work/04_optimisers): adam(w, dw, config) -> (next_w, config).
from course.carry import carry  # imported here: this cell may be re-run alone

adam, adamw = carry("04_optimisers", "adam adamw")

# %% nbgrader={"grade": false, "grade_id": "carried_from_07", "locked": true, "schema_version": 3, "solution": false}
# Your LSTM from 07 (work/07_recurrent), on x (N, T, D): used in part 6 only.
from course.carry import carry  # imported here: this cell may be re-run alone

lstm_forward, lstm_backward = carry("07_recurrent", "lstm_forward lstm_backward")

# %% [markdown]
# ## 1 · Scaled dot-product attention
#
# Queries $q$ (N, Tq, d), keys $k$ (N, Tk, d), values $v$ (N, Tk, dv). Each query scores
# every key, the scores go through a softmax over the keys, and the output is the
# weighted average of the values (Vaswani et al., 2017):
#
# $$\text{out} = \text{softmax}\!\Big(\frac{q k^\top}{\sqrt d}\Big)\, v, \qquad
# \text{out} \in \mathbb{R}^{N \times T_q \times d_v}.$$
#
# A boolean `mask`, broadcastable to (N, Tq, Tk), is True where a query may attend to a
# key; a score that is not allowed becomes $-\infty$, so its weight is exactly 0.
#
# ### Exercise 1.1: `softmax` (1 point)
#
# Along `axis`, numerically stable: subtract the largest entry first (02's lesson), so
# that scores near 1000 neither overflow nor give NaN.


# %% nbgrader={"grade": false, "grade_id": "softmax_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def softmax(x, axis=-1):
    """Softmax of x along axis, stable for large entries."""
    ### BEGIN SOLUTION
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


# %% [markdown]
# **Check it**: rows that sum to 1, scores near 1000 without overflow, and another axis.

# %%
with check_it("Exercise 1.1"):
    s = np.array([[1000.0, 1001.0, 1002.0], [-3.0, 0.0, 3.0]])
    p = softmax(s)
    print(p.round(4))
    assert np.all(np.isfinite(p)), "scores near 1000 overflow: subtract the row's maximum"
    assert np.allclose(p.sum(axis=-1), 1), "each row must sum to 1"
    assert np.allclose(p[0], p[1] ** (1 / 3) / np.sum(p[1] ** (1 / 3))), "wrong values"
    assert np.allclose(softmax(s, axis=0).sum(axis=0), 1), "softmax(x, axis=0) sums columns"

# %% nbgrader={"grade": true, "grade_id": "softmax", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): values along several axes of 2-D and 3-D inputs, scores near
# 1e3, rows near 1e3 beside rows near -1e3, a non-contiguous input.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.2: `attention_forward` (3 points) and `attention_backward` (3 points)
#
# `attention_forward(q, k, v, mask=None)` returns `(out, cache)`; `attention_backward(dout,
# cache)` returns `(dq, dk, dv)`. Write them for any number of leading batch dimensions
# (`np.swapaxes(k, -1, -2)`, and `@`), so that part 2 can call them on (N, heads, T, d).
#
# For the backward pass, with $s$ the scaled scores and $p = \text{softmax}(s)$:
# $dv = p^\top\, d\text{out}$, $dp = d\text{out}\, v^\top$, and the softmax's Jacobian
# gives $ds = p \odot (dp - \sum_j dp_j\, p_j)$ row by row; then $dq = ds\, k / \sqrt d$
# and $dk = ds^\top q / \sqrt d$. A masked score has $p = 0$, so it gets no gradient.


# %% nbgrader={"grade": false, "grade_id": "attention_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def attention_forward(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v, with a boolean mask (True: may attend).
    Returns (out (..., Tq, dv), cache)."""
    ### BEGIN SOLUTION
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    p = softmax(scores, axis=-1)
    return p @ v, (q, k, v, p)
    ### END SOLUTION


#| export
def attention_backward(dout, cache):
    """Returns (dq, dk, dv)."""
    ### BEGIN SOLUTION
    q, k, v, p = cache
    d = q.shape[-1]
    dv = np.swapaxes(p, -1, -2) @ dout
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True)) / np.sqrt(d)
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv
    ### END SOLUTION


# %% [markdown]
# **Check it**: with Tq != Tk and d != dv, the output shape; one query against identical
# keys averages the values; the gradients against centred differences with a random
# upstream gradient and a mask; and a masked key gets no weight (changing its value
# changes nothing). Expect relative errors below $10^{-7}$ (the centred difference's own
# error: from $10^{-11}$ to $10^{-8}$ here).

# %%
with check_it("Exercise 1.2"):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape) for shape in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))
    mask = rng.random((2, 3, 5)) < 0.7
    mask[..., 0] = True  # every query may attend somewhere
    out, cache = attention_forward(q, k, v, mask)
    print("out", out.shape, "(N, Tq, dv) = (2, 3, 6)")
    assert out.shape == (2, 3, 6), f"out has shape {out.shape}, expected (N, Tq, dv)"
    same, _ = attention_forward(q, np.ones_like(k), v)
    assert np.allclose(same, v.mean(axis=1, keepdims=True)), "identical keys: the mean of v"
    dout = rng.standard_normal(out.shape)
    grads = attention_backward(dout, cache)
    inputs = {"q": q, "k": k, "v": v}
    for (name, x), grad in zip(inputs.items(), grads, strict=True):

        def f(value, name=name):
            return attention_forward(**{**inputs, name: value}, mask=mask)[0]

        error = gradient_error(f, x, grad, dout)
        print(f"d{name} relative error {error:.1e}")
        assert error < 1e-6, f"d{name}: relative error {error:.1e}, above 1e-6"
    moved = v.copy()
    moved[~mask[:, 0, :]] += 10  # values of the keys query 0 may not see
    changed = attention_forward(q, k, moved, mask)[0][:, 0] - out[:, 0]
    print(f"query 0, masked values moved by 10: output changes by {np.abs(changed).max():.1e}")
    assert np.abs(changed).max() < 1e-12, "a masked key still has weight"

# %% nbgrader={"grade": true, "grade_id": "attention_forward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): outputs with Tq != Tk and d != dv and a square case, no mask
# and masks of shapes (Tq, Tk), (N, Tq, Tk), (N, 1, Tk) and (Tk,), scores near 1e3, a
# non-contiguous q.
### BEGIN HIDDEN TESTS
from course.grading import check

check("attention_forward", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "attention_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): dq, dk, dv for the same shapes and masks, random upstream
# gradients; against centred differences of your own forward pass (credited when the
# forward pass is right).
### BEGIN HIDDEN TESTS
from course.grading import check

check("attention_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.3: `causal_mask` (1 point)
#
# A decoder predicts position $t + 1$ from positions $0..t$: query $t$ may attend to keys
# $0..t$ only. `causal_mask(T)` is the (T, T) boolean array, True on and below the diagonal.


# %% nbgrader={"grade": false, "grade_id": "causal_mask_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def causal_mask(T):
    """(T, T) bool: True where query t may attend to key s, that is s <= t."""
    ### BEGIN SOLUTION
    return np.tril(np.ones((T, T), dtype=bool))
    ### END SOLUTION


# %% [markdown]
# **Check it**: the mask for T = 4, and causality by perturbation: changing the inputs
# after position t must leave the outputs up to t unchanged.

# %%
with check_it("Exercise 1.3"):
    print(causal_mask(4).astype(int))
    assert causal_mask(4).dtype == bool, "the mask must be boolean"
    x = np.random.default_rng(1).standard_normal((1, 6, 4))
    out = attention_forward(x, x, x, causal_mask(6))[0]
    later = x.copy()
    later[:, 4:] += 5.0
    moved = attention_forward(later, later, later, causal_mask(6))[0]
    shift = np.abs(moved - out)[:, :4].max()
    print(f"inputs after position 3 changed: outputs 0..3 move by {shift:.1e}")
    assert np.abs(moved - out)[:, :4].max() < 1e-12, "an output depends on a later position"

# %% nbgrader={"grade": true, "grade_id": "causal_mask", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): the mask for several T, its dtype.
### BEGIN HIDDEN TESTS
from course.grading import check

check("causal_mask", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · Multi-head attention
#
# $x$ (N, T, D) is projected to queries, keys and values, $Q = x W_q$, $K = x W_k$,
# $V = x W_v$, each (N, T, D). With $H$ heads, the last axis is split **in order** into $H$
# slices of $D/H$: head $h$ uses columns $h D/H .. (h+1) D/H$. Each head attends on its own,
# the heads' outputs are put back side by side, and $W_o$ mixes them:
# $\text{out} = \text{concat}_h(\text{attention}(Q_h, K_h, V_h))\, W_o$.
#
# The split is `Q.reshape(N, T, H, D // H).transpose(0, 2, 1, 3)`, to (N, H, T, D/H).
# `Q.reshape(N, H, T, D // H)` has the same shape, and is wrong: it cuts the flat array
# in the wrong place, mixing positions into heads. Part 6 measures what it does.
#
# ### Exercise 2.1: `multihead_attention_forward` (3 points) and `_backward` (3 points)
#
# No biases; `mask` as in part 1, broadcastable to (N, T, T) (a (N, T, T) mask applies to
# every head: give it a head axis, `mask[:, None]`). The backward pass returns
# `(dx, dWq, dWk, dWv, dWo)`.


# %% nbgrader={"grade": false, "grade_id": "multihead_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def multihead_attention_forward(x, Wq, Wk, Wv, Wo, num_heads, mask=None):
    """x (N, T, D), each W (D, D). Returns (out (N, T, D), cache)."""
    N, T, D = x.shape
    if D % num_heads:
        raise ValueError(f"D = {D} does not split into {num_heads} heads")
    ### BEGIN SOLUTION
    dh = D // num_heads

    def split(a):
        return a.reshape(N, T, num_heads, dh).transpose(0, 2, 1, 3)

    if mask is not None and np.ndim(mask) == 3:
        mask = np.asarray(mask)[:, None]  # the same mask for every head
    heads, attention_cache = attention_forward(split(x @ Wq), split(x @ Wk), split(x @ Wv), mask)
    merged = heads.transpose(0, 2, 1, 3).reshape(N, T, D)
    return merged @ Wo, (x, Wq, Wk, Wv, Wo, attention_cache, merged)
    ### END SOLUTION


#| export
def multihead_attention_backward(dout, cache):
    """Returns (dx, dWq, dWk, dWv, dWo)."""
    ### BEGIN SOLUTION
    x, Wq, Wk, Wv, Wo, attention_cache, merged = cache
    N, T, D = x.shape
    num_heads = attention_cache[0].shape[1]
    dWo = merged.reshape(-1, D).T @ dout.reshape(-1, D)
    dheads = (dout @ Wo.T).reshape(N, T, num_heads, D // num_heads).transpose(0, 2, 1, 3)
    dq, dk, dv = (
        g.transpose(0, 2, 1, 3).reshape(N * T, D)
        for g in attention_backward(dheads, attention_cache)
    )
    flat = x.reshape(N * T, D)
    dx = (dq @ Wq.T + dk @ Wk.T + dv @ Wv.T).reshape(N, T, D)
    return dx, flat.T @ dq, flat.T @ dk, flat.T @ dv, dWo
    ### END SOLUTION


# %% [markdown]
# **Check it**: one head is plain attention on the projections; every gradient against
# centred differences, with 3 heads and a causal mask; causality by perturbation.


# %%
def mha_weights(D, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]


with check_it("Exercise 2.1"):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 6))
    Wq, Wk, Wv, Wo = mha_weights(6, 3)
    one_head = multihead_attention_forward(x, Wq, Wk, Wv, Wo, 1)[0]
    plain = attention_forward(x @ Wq, x @ Wk, x @ Wv)[0] @ Wo
    assert np.allclose(one_head, plain), "with one head: attention(x Wq, x Wk, x Wv) Wo"
    out, cache = multihead_attention_forward(x, Wq, Wk, Wv, Wo, 3, causal_mask(5))
    dout = rng.standard_normal(out.shape)
    grads = multihead_attention_backward(dout, cache)
    inputs = {"x": x, "Wq": Wq, "Wk": Wk, "Wv": Wv, "Wo": Wo}
    for (name, value), grad in zip(inputs.items(), grads, strict=True):

        def f(changed, name=name):
            args = {**inputs, name: changed}
            return multihead_attention_forward(**args, num_heads=3, mask=causal_mask(5))[0]

        error = gradient_error(f, value, grad, dout)
        print(f"d{name:<3} relative error {error:.1e}")
        assert error < 1e-6, f"d{name}: relative error {error:.1e}, above 1e-6"
    later = x.copy()
    later[:, 3:] += 1.0
    moved = multihead_attention_forward(later, Wq, Wk, Wv, Wo, 3, causal_mask(5))[0]
    shift = np.abs(moved - out)[:, :3].max()
    print(f"inputs after position 2 changed: outputs 0..2 move by {shift:.1e}")
    assert np.abs(moved - out)[:, :3].max() < 1e-12, "an output depends on a later position"

# %% nbgrader={"grade": true, "grade_id": "multihead_forward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): outputs for several sizes and numbers of heads (a square case
# N = T), no mask, a causal mask and a (N, T, T) mask; causality by perturbation; without
# a mask, permutation equivariance (permuting the positions of x permutes the output).
### BEGIN HIDDEN TESTS
from course.grading import check

check("multihead_forward", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "multihead_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): dx and every dW with random upstream gradients, against
# reference values and centred differences of your own forward pass.
### BEGIN HIDDEN TESTS
from course.grading import check

check("multihead_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · Positions
#
# Nothing above knows where a token is: permute the positions of $x$ and, without a
# mask, the output is permuted the same way (the hidden check of 2.1 grades it). The
# sinusoidal encoding of Vaswani et al. (2017) adds to each position $p$ a vector of
# sines and cosines of geometrically spaced frequencies,
#
# $$PE_{p, 2i} = \sin\big(p\, /\, 10000^{2i/D}\big), \qquad
# PE_{p, 2i+1} = \cos\big(p\, /\, 10000^{2i/D}\big).$$
#
# ### Exercise 3.1: `positional_encoding` (1 point)
#
# `positional_encoding(T, D)` returns the (T, D) array: sines in the even columns, cosines
# in the odd ones, column pair $i$ at frequency $1 / 10000^{2i/D}$.


# %% nbgrader={"grade": false, "grade_id": "positional_encoding_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def positional_encoding(T, D):
    """(T, D): sin on even columns, cos on odd columns."""
    ### BEGIN SOLUTION
    angles = np.arange(T)[:, None] / 10000 ** (np.arange(0, D, 2) / D)
    pe = np.zeros((T, D))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : D // 2])
    return pe
    ### END SOLUTION


# %% [markdown]
# **Check it**: position 0 is $(0, 1, 0, 1, \dots)$, every entry in $[-1, 1]$ (printed), and
# the encodings drawn: fast columns on the left, slow ones on the right.

# %%
with check_it("Exercise 3.1"):
    pe = positional_encoding(50, 16)
    assert pe.shape == (50, 16), f"shape {pe.shape}, expected (T, D)"
    assert np.allclose(pe[0], np.tile([0.0, 1.0], 8)), "position 0 is sin 0 = 0, cos 0 = 1"
    assert np.allclose(pe[1, :2], [np.sin(1), np.cos(1)]), "column pair 0 has frequency 1"
    print(f"entries from {pe.min():.3f} to {pe.max():.3f}")
    assert np.abs(pe).max() <= 1, "a sine or cosine is in [-1, 1]"
    fig, ax = plt.subplots(figsize=(7, 2.6), layout="constrained")
    image = ax.imshow(pe.T, aspect="auto", cmap="RdBu")
    ax.set(
        xlabel="position p",
        ylabel="column",
        title="Each column pair turns slower: position in every scale",
    )
    fig.colorbar(image)
    plt.show()

# %% nbgrader={"grade": true, "grade_id": "positional_encoding", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): values for T > D, T < D and T = D.
### BEGIN HIDDEN TESTS
from course.grading import check

check("positional_encoding", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · A pre-LN transformer block, and a tiny transformer
#
# A block adds to its input (the **residual stream**) what attention reads, then what a
# small MLP computes, each from a layer-normalised copy (**pre-LN**, as in GPT-2; the
# original transformer normalised after the addition instead):
#
# $$h = x + \text{MHA}(\text{LN}_1(x)), \qquad
# \text{out} = h + \text{relu}(\text{LN}_2(h)\, W_1 + b_1)\, W_2 + b_2 .$$
#
# Your 05 layer norm takes (N, D): reshape (N, T, D) to (N T, D) and back.
#
# ### Exercise 4.1: `block_forward` and `block_backward` (4 points)
#
# `params` holds `ln1_gamma`, `ln1_beta`, `Wq`, `Wk`, `Wv`, `Wo`, `ln2_gamma`, `ln2_beta`,
# `W1` (D, F), `b1` (F,), `W2` (F, D), `b2` (D,). `block_forward(x, params, num_heads,
# mask=None)` returns `(out, cache)`; `block_backward(dout, cache)` returns
# `(dx, grads)`, `grads` a dict with the same keys as `params`. The residual passes
# gradients straight through: $dx$ is $dh$ plus what comes back through attention.


# %% nbgrader={"grade": false, "grade_id": "block_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def block_forward(x, params, num_heads, mask=None):
    """Pre-LN block on x (N, T, D). Returns (out (N, T, D), cache)."""
    ### BEGIN SOLUTION
    N, T, D = x.shape
    p = params
    a, ln1 = layernorm_forward(x.reshape(N * T, D), p["ln1_gamma"], p["ln1_beta"], {})
    attended, mha = multihead_attention_forward(
        a.reshape(N, T, D), p["Wq"], p["Wk"], p["Wv"], p["Wo"], num_heads, mask
    )
    h = x + attended
    b, ln2 = layernorm_forward(h.reshape(N * T, D), p["ln2_gamma"], p["ln2_beta"], {})
    z = b @ p["W1"] + p["b1"]
    r = np.maximum(z, 0)
    out = h + (r @ p["W2"] + p["b2"]).reshape(N, T, D)
    return out, (p, ln1, mha, ln2, b, z, r)
    ### END SOLUTION


#| export
def block_backward(dout, cache):
    """Returns (dx, grads), grads keyed as params."""
    ### BEGIN SOLUTION
    p, ln1, mha, ln2, b, z, r = cache
    N, T, D = dout.shape
    flat = dout.reshape(N * T, D)
    grads = {"W2": r.T @ flat, "b2": flat.sum(axis=0)}
    dz = (flat @ p["W2"].T) * (z > 0)
    grads["W1"], grads["b1"] = b.T @ dz, dz.sum(axis=0)
    db, grads["ln2_gamma"], grads["ln2_beta"] = layernorm_backward(dz @ p["W1"].T, ln2)
    dh = dout + db.reshape(N, T, D)
    da, grads["Wq"], grads["Wk"], grads["Wv"], grads["Wo"] = multihead_attention_backward(dh, mha)
    dx, grads["ln1_gamma"], grads["ln1_beta"] = layernorm_backward(da.reshape(N * T, D), ln1)
    return dh + dx.reshape(N, T, D), grads
    ### END SOLUTION


# %% [markdown]
# **Check it**: every gradient against centred differences (a causal mask, 2 heads), and
# causality through the whole block.


# %%
def block_params(D, F, seed, scale=1.0):
    """A block's parameters: weights of variance scale / fan-in, layer norms at 1 and 0."""
    rng = np.random.default_rng(seed)

    def draw(fan_in, shape):
        return rng.standard_normal(shape) * np.sqrt(scale / fan_in)

    return {
        "ln1_gamma": np.ones(D), "ln1_beta": np.zeros(D),
        "Wq": draw(D, (D, D)), "Wk": draw(D, (D, D)), "Wv": draw(D, (D, D)), "Wo": draw(D, (D, D)),
        "ln2_gamma": np.ones(D), "ln2_beta": np.zeros(D),
        "W1": draw(D, (D, F)), "b1": np.zeros(F), "W2": draw(F, (F, D)), "b2": np.zeros(D),
    }  # fmt: skip


with check_it("Exercise 4.1"):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 4))
    params = block_params(4, 7, seed=5)
    params = {k: v + 0.1 * rng.standard_normal(v.shape) for k, v in params.items()}
    out, cache = block_forward(x, params, 2, causal_mask(5))
    dout = rng.standard_normal(out.shape)
    dx, grads = block_backward(dout, cache)
    assert sorted(grads) == sorted(params), f"grads has keys {sorted(grads)}"
    errors = {
        "x": gradient_error(lambda v: block_forward(v, params, 2, causal_mask(5))[0], x, dx, dout)
    }
    for name in params:

        def f(value, name=name):
            return block_forward(x, {**params, name: value}, 2, causal_mask(5))[0]

        errors[name] = gradient_error(f, params[name], grads[name], dout)
    worst = max(errors, key=errors.get)
    print(f"worst relative error {errors[worst]:.1e} (d{worst}) over {len(errors)} gradients")
    assert errors[worst] < 1e-6, f"d{worst}: relative error {errors[worst]:.1e}, above 1e-6"
    later = x.copy()
    later[:, 3:] -= 2.0
    moved = block_forward(later, params, 2, causal_mask(5))[0]
    shift = np.abs(moved - out)[:, :3].max()
    print(f"inputs after position 2 changed: outputs 0..2 move by {shift:.1e}")
    assert np.abs(moved - out)[:, :3].max() < 1e-12, "an output depends on a later position"

# %% nbgrader={"grade": true, "grade_id": "block", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): the block's output and every gradient for several sizes (F !=
# D), with and without a causal mask, against reference values and centred differences of
# your own forward pass; causality through the block.
### BEGIN HIDDEN TESTS
from course.grading import check

check("block", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The task: copy a sequence
#
# Each example is $L$ random symbols out of $V$, a separator, then the same $L$ symbols
# again: `3 1 4 1 5 | 3 1 4 1 5`. The model reads it left to right and predicts each next
# token; the loss counts only the copy (after the separator), where each answer is
# determined by what came before. Predicting the copy's symbol $j$ means finding the
# $j$-th symbol of the first half: attention to the position $L$ steps back.
#
# ### The tiny transformer (given)
#
# Token embeddings plus (optionally) your positional encoding, blocks with the causal
# mask, a last layer norm, then a linear map to the $V + 1$ scores (its weights start
# small, of standard deviation 0.02, as in GPT-2), and the mean cross-entropy over the
# copy. Its backward pass runs through your functions; the
# embedding's gradient adds up the rows of the tokens used.


# %% nbgrader={"grade": false, "grade_id": "tiny_transformer", "locked": true, "schema_version": 3, "solution": false}
class TinyTransformer:
    """Decoder-only: embed (+ positions) -> blocks (causal) -> layer norm -> scores."""

    def __init__(
        self, vocab, D, num_heads, num_blocks, positions=True, mask=causal_mask, seed=0, block=None
    ):
        rng = np.random.default_rng(seed)
        self.num_heads, self.num_blocks, self.positions, self.mask = (
            num_heads, num_blocks, positions, mask
        )  # fmt: skip
        self.block = block  # (forward, backward); None: your block_forward and block_backward
        self.params = {"embed": rng.standard_normal((vocab, D))}
        for i in range(num_blocks):
            for name, value in block_params(D, 4 * D, seed=int(rng.integers(1 << 30))).items():
                self.params[f"{i}.{name}"] = value
        self.params.update(
            lnf_gamma=np.ones(D), lnf_beta=np.zeros(D),
            W_out=0.02 * rng.standard_normal((D, vocab)), b_out=np.zeros(vocab),
        )  # fmt: skip

    def scores(self, tokens):
        """Scores (N, T, vocab) for tokens (N, T), and what the backward pass needs."""
        N, T = tokens.shape
        x = self.params["embed"][tokens]
        if self.positions:
            x = x + positional_encoding(T, x.shape[-1])
        mask, caches = self.mask(T), []
        forward = self.block[0] if self.block else block_forward
        for i in range(self.num_blocks):
            block = {k.split(".", 1)[1]: v for k, v in self.params.items() if k.startswith(f"{i}.")}
            x, cache = forward(x, block, self.num_heads, mask)
            caches.append(cache)
        D = x.shape[-1]
        f, lnf = layernorm_forward(
            x.reshape(N * T, D), self.params["lnf_gamma"], self.params["lnf_beta"], {}
        )
        scores = f @ self.params["W_out"] + self.params["b_out"]
        return scores.reshape(N, T, -1), (tokens, caches, f, lnf)

    def loss(self, tokens, targets, weights):
        """Weighted mean cross-entropy of targets (N, T); returns (loss, grads)."""
        scores, (tokens, caches, f, lnf) = self.scores(tokens)
        N, T, V = scores.shape
        probs = softmax(scores.reshape(N * T, V))
        w = (weights / weights.sum()).reshape(-1)
        rows, flat_targets = np.arange(N * T), targets.reshape(-1)
        loss = -np.sum(w * np.log(probs[rows, flat_targets]))
        dscores = probs
        dscores[rows, flat_targets] -= 1
        dscores *= w[:, None]
        grads = {"W_out": f.T @ dscores, "b_out": dscores.sum(axis=0)}
        df, grads["lnf_gamma"], grads["lnf_beta"] = layernorm_backward(
            dscores @ self.params["W_out"].T, lnf
        )
        dx = df.reshape(N, T, -1)
        backward = self.block[1] if self.block else block_backward
        for i in reversed(range(self.num_blocks)):
            dx, block_grads = backward(dx, caches[i])
            grads.update({f"{i}.{k}": v for k, v in block_grads.items()})
        grads["embed"] = np.zeros_like(self.params["embed"])
        np.add.at(grads["embed"], tokens, dx)
        return loss, grads


def copy_batch(rng, N, L, V):
    """N copy examples of L symbols out of V (the separator is symbol V): inputs, the next
    tokens, and weights that count the copy only."""
    first = rng.integers(0, V, (N, L))
    sequence = np.concatenate([first, np.full((N, 1), V), first], axis=1)
    weights = np.zeros((N, 2 * L))
    weights[:, L:] = 1.0
    return sequence[:, :-1], sequence[:, 1:], weights


def train(
    model, steps, L, V, learning_rate=3e-3, batch=32, seed=0, update=None, desc=None,
    warmup=0, config=None,
):  # fmt: skip
    """Adam (yours, unless `update` is given) on fresh copy batches; the loss per step.
    warmup: steps over which the learning rate grows linearly to `learning_rate`;
    config(name): more settings for that parameter's update (its weight decay, say).
    A loss that is not finite stops the run; the remaining steps are recorded as NaN."""
    update = update or adam
    rng = np.random.default_rng(seed)
    configs = {name: {"learning_rate": learning_rate} for name in model.params}
    for name in configs if config else ():
        configs[name].update(config(name))
    losses = np.full(steps, np.nan)
    for step in tqdm(range(steps), desc=desc, leave=False, disable=desc is None):
        for settings in configs.values() if warmup else ():
            settings["learning_rate"] = learning_rate * min(1.0, (step + 1) / warmup)
        with np.errstate(all="ignore"):
            loss, grads = model.loss(*copy_batch(rng, batch, L, V))
        if not np.isfinite(loss):
            break
        for name in model.params:
            model.params[name], configs[name] = update(
                model.params[name], grads[name], configs[name]
            )
        losses[step] = loss
    return losses


def copy_accuracy(model, L, V, N=200, seed=123):
    """Share of copied symbols right when the model writes the copy itself, greedily."""
    first = np.random.default_rng(seed).integers(0, V, (N, L))
    sequence = np.concatenate([first, np.full((N, 1), V)], axis=1)
    for _ in range(L):
        scores = model.scores(sequence)[0][:, -1, :V]
        sequence = np.concatenate([sequence, scores.argmax(axis=1)[:, None]], axis=1)
    return float(np.mean(sequence[:, L + 1 :] == first))


# %% [markdown]
# ### Exercise 4.2: train it (3 points, graded by its loss curve)
#
# Nothing to write if your block is right: the cell below trains one block of width 32
# with 4 heads on copies of $L = 6$ symbols out of $V = 8$, with your Adam, and the hidden
# check trains the same model on hidden sizes from a fixed initialisation and compares
# its loss at every step with the reference curve. Chance is $\log V$; the cell prints
# where the loss ends and how many copied symbols the model gets right when it writes the
# copy itself.

# %%
L, V = 6, 8
model = TinyTransformer(V + 1, 32, 4, 1, seed=0)
losses = train(model, 250, L, V, desc="training the tiny transformer")
fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="constrained")
ax.semilogy(losses)
ax.axhline(np.log(V), color="gray", ls=":", label="chance, log V")
ax.set(xlabel="Adam step", ylabel="loss on the copy", title="Does the loss fall far below chance?")
ax.legend()
plt.show()
print(f"loss at step 0 {losses[0]:.3f}, at the end {losses[-10:].mean():.4f}")
print(f"copied symbols right, written by the model itself: {copy_accuracy(model, L, V):.1%}")

# %% nbgrader={"grade": true, "grade_id": "transformer_training", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): the tiny transformer on hidden sizes, from a fixed
# initialisation, trained with a fixed Adam; its loss at every step against the
# reference curve (relative band 1e-6), with and without positions.
### BEGIN HIDDEN TESTS
from course.grading import check

check("transformer_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5 · Predict, then measure
#
# Two predictions to write down **before** running the experiments below (2 points), as
# small functions of the setting (each accepted within 2%):
#
# 1. `predicted_score_std(d)`: $q$ and $k$ have $d$ independent entries of mean 0 and
#    variance 1. What is the standard deviation of $q \cdot k$, unscaled? Below: $d = 64$.
# 2. `predicted_initial_loss(K)`: the tiny transformer's last weights start near 0, so
#    its first scores are nearly equal over its $K$ tokens. What is its cross-entropy
#    then? Below: $K = V + 1 = 9$ (8 symbols and the separator), against the loss at the
#    first step of the runs below.


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_score_std(d):
    """Standard deviation of q . k for q, k with d independent entries of variance 1."""
    ### BEGIN SOLUTION
    return np.sqrt(d)
    ### END SOLUTION


def predicted_initial_loss(K):
    """Cross-entropy of a uniform guess over K tokens."""
    ### BEGIN SOLUTION
    return np.log(K)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "attention_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within its band, for hidden d and K.
### BEGIN HIDDEN TESTS
from course.grading import check

check("attention_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6 · The leaks, measured
#
# ### The $1/\sqrt d$ scale
#
# Your prediction 1, then measured: the spread of $q \cdot k$ grows as $\sqrt d$. Unscaled,
# the softmax of such scores is nearly one-hot as $d$ grows: its **entropy** falls towards
# 0 (uniform attention over $T$ keys has entropy $\log T$), and its gradient vanishes,
# since $p(1-p) \to 0$. Measured over random $q$, $k$ with $T = 16$ keys:


# %%
def spread(values, digits=3, percent=False):
    """mean ± std of a measurement over seeds, as text."""
    kind = "%" if percent else "f"
    return f"{np.mean(values):.{digits}{kind}} ± {np.std(values):.{digits}{kind}}"


rng = np.random.default_rng(6)
q64, k64 = rng.standard_normal((2000, 64)), rng.standard_normal((2000, 64))
score_std = np.sum(q64 * k64, axis=1).std()
print(f"d = 64: std of q . k {score_std:.2f} (you predicted {predicted_score_std(64):.2f})")


def attention_statistics(d, scaled, T=16, N=200, seed=0):
    """Mean entropy of the attention rows, mean largest weight, and the size of the
    gradient of the scores (through the softmax, for a random upstream gradient)."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((N, T, d)) for _ in range(3))
    scale = 1 / np.sqrt(d) if scaled else 1.0
    p = softmax(q @ np.swapaxes(k, -1, -2) * scale)
    entropy = -np.sum(p * np.log(np.maximum(p, 1e-300)), axis=-1).mean()
    dp = rng.standard_normal(p.shape)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return entropy, p.max(axis=-1).mean(), np.abs(ds).mean()


dims = (4, 16, 64, 256, 1024)
table = {
    scaled: np.array([[attention_statistics(d, scaled, seed=s) for d in dims] for s in range(3)])
    for scaled in (True, False)
}
for scaled, runs in table.items():
    entropies = [f"d {d} {spread(runs[:, i, 0], 2)}" for i, d in enumerate(dims)]
    print(f"{'scaled' if scaled else 'unscaled':>8} entropy:", ", ".join(entropies))
print(f"uniform attention over 16 keys: entropy log 16 = {np.log(16):.2f}")


def explore_scale(log2_d=6, scaled=False):
    d = 2**log2_d
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3), layout="constrained")
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((16, d)), rng.standard_normal((16, d))
    p = softmax(q @ k.T / (np.sqrt(d) if scaled else 1.0))
    ax1.imshow(p, vmin=0, vmax=1, cmap="viridis")
    ax1.set(
        xlabel="key",
        ylabel="query",
        title=f"d = {d}, {'scaled' if scaled else 'unscaled'}: one-hot rows?",
    )
    ents = [attention_statistics(2**i, scaled, N=50)[0] for i in range(1, 11)]
    ax2.plot([2**i for i in range(1, 11)], ents, marker="o")
    ax2.axhline(np.log(16), color="gray", ls=":", label="uniform, log 16")
    ax2.set(
        xscale="log",
        xlabel="d",
        ylabel="attention entropy",
        title="Entropy against d: does it stay up?",
    )
    ax2.legend()
    plt.show()
    print(f"d = {d}: mean largest weight {p.max(axis=1).mean():.3f}")


_ = explore_plot(
    explore_scale,
    log2_d=widgets.IntSlider(value=6, min=1, max=10),
    scaled=widgets.Checkbox(value=False, description="divide by sqrt(d)"),
)

# %% [markdown]
# The rows above: scaled, the entropy is the same whatever $d$ (the scaled scores have
# unit spread); unscaled, it falls towards 0 as $d$ grows, and the gradient through the
# softmax with it (printed below), so that a wide model without the scale learns slowly
# from the start.

# %%
for scaled, runs in table.items():
    print(f"{'scaled' if scaled else 'unscaled':>8}: mean |gradient of the scores|",
          ", ".join(f"d {d} {runs[:, i, 2].mean():.1e}" for i, d in enumerate(dims)))  # fmt: skip

# %% [markdown]
# ### A fully masked row, and $-10^9$ in place of $-\infty$
#
# A query that may attend to nothing (a padding position, say) has every score at
# $-\infty$: the softmax computes $-\infty - (-\infty)$, which is NaN, and NaN then spreads
# through every gradient. Many libraries write a large negative constant instead. Then no
# NaN: the row gets a **uniform** average of the values it was forbidden to see, silently.
# And in float16, whose largest number is 65504, $-10^9$ rounds to $-\infty$ and the NaN is
# back. Measured on one query and three keys, all masked:

# %%
scores = np.array([[0.3, -1.2, 2.0]])
values = np.array([[1.0], [2.0], [6.0]])
for label, fill, dtype in (
    ("-inf, float64", -np.inf, np.float64),
    ("-1e9, float64", -1e9, np.float64),
    ("-1e9, float16", -1e9, np.float16),
    ("-1e4, float16", -1e4, np.float16),
):
    with np.errstate(invalid="ignore", over="ignore"):
        masked = np.where(np.zeros_like(scores, dtype=bool), scores, fill).astype(dtype)
        weights = softmax(masked)
    output = (weights @ values.astype(dtype))[0, 0]
    print(f"{label:>14}: fill stored as {masked[0, 0]}, weights {weights[0]}, output {output}")

# %% [markdown]
# The cure is to decide what a fully masked row means (usually: output 0, and no
# gradient) and to make sure no real query is fully masked; a causal mask never is, since
# a query always sees itself.
#
# ### The head split: the same shapes, different maths
#
# `Q.reshape(N, H, T, D // H)` in place of the reshape and transpose of part 2 gives the
# same shapes, and no error. It cuts the flat rows of $Q$ into heads: a "head" now holds
# pieces of several positions. Measured against your function: how far the outputs
# differ; whether, with a causal mask, outputs up to $t$ still ignore the inputs after
# $t$; and whether, without a mask, permuting the positions of $x$ permutes the output.


# %%
def wrong_split_forward(x, Wq, Wk, Wv, Wo, num_heads, mask=None):
    N, T, D = x.shape
    q, k, v = ((x @ W).reshape(N, num_heads, T, D // num_heads) for W in (Wq, Wk, Wv))
    heads, _ = attention_forward(q, k, v, mask)
    return heads.reshape(N, T, D) @ Wo


rng = np.random.default_rng(7)
x = rng.standard_normal((4, 8, 16))
later = x.copy()
later[:, 4:] += 1.0
order = rng.permutation(8)
weights = mha_weights(16, 8)
splits = {
    "your split": lambda *a: multihead_attention_forward(*a)[0],
    "wrong reshape": wrong_split_forward,
}
for name, forward in splits.items():
    out = forward(x, *weights, 4, causal_mask(8))
    moved = np.abs(forward(later, *weights, 4, causal_mask(8)) - out)[:, :4].max()
    permuted = np.abs(forward(x[:, order], *weights, 4) - forward(x, *weights, 4)[:, order]).max()
    print(
        f"{name:>13}: shape {out.shape}; outputs 0..3 move by {moved:.1e} when inputs 4..7",
        f"change; permutation equivariance off by {permuted:.1e}",
    )
right = multihead_attention_forward(x, *weights, 4, causal_mask(8))[0]
wrong = wrong_split_forward(x, *weights, 4, causal_mask(8))
print(f"the two differ by up to {np.abs(wrong - right).max():.2f}")

# %% [markdown]
# Here the wrong split keeps the shapes and, as the first line shows, even causality:
# each "head" holds consecutive positions in order, so the mask still only looks back.
# But it is another function: its outputs differ, and without a mask it is no longer
# permutation equivariant (positions are mixed inside a head). A shape check and a
# gradient check (it is a consistent function) both pass; reference values and the
# equivariance test catch it.
#
# ### No positions: one block cannot learn order
#
# First, the symmetry: without positions and without a mask, a block is **permutation
# equivariant**: shuffle the positions of the input, and the output is shuffled the same
# way. Measured with your block:

# %%
rng = np.random.default_rng(8)
x = rng.standard_normal((2, 7, 8))
params = block_params(8, 16, seed=9)
order = rng.permutation(7)
pe = positional_encoding(7, 8)
for label, added in (("without positions", 0.0), ("with positions added", pe)):
    permuted_out = block_forward(x[:, order] + added, params, 2)[0]
    out_permuted = block_forward(x + added, params, 2)[0][:, order]
    gap = np.abs(permuted_out - out_permuted).max()
    print(f"{label:>20}: |block(x[:, order]) - block(x)[:, order]| up to {gap:.1e}")

# %% [markdown]
# With the causal mask a one-block model sees, at each position, the current token and
# an average over the earlier ones that does not depend on their order: it can tell which
# symbols were in the first half, not in which order. So without positions the copy's
# symbol $j$ is a guess among the symbols not yet copied. That holds for this **one-block**
# model, not for causal transformers in general: the mask itself tells a position how
# many tokens precede it (a token seen once gets weight about $1/(t+1)$ in a uniform
# average), a first block can compute that count, and a second block can attend by it.
# Deeper causal language models trained without any positional encoding do learn
# positional information that way (Haviv et al., 2022, "Transformer Language Models
# without Positional Encodings Still Learn Positional Information"); this cell measures
# only the one-block case. Three seeds each, same budget:
# your prediction 2 against the loss at the first step, then the final loss and the
# copied symbols written right.

# %%
SEEDS, STEPS, BATCH = (0, 1, 2), 120, 16
runs, curves = {}, {}
for positions in (True, False):
    results, curves[positions] = [], []
    for seed in tqdm(SEEDS, desc=f"positions {positions}"):
        m = TinyTransformer(V + 1, 32, 4, 1, positions=positions, seed=seed)
        start = time.perf_counter()
        curve = train(m, STEPS, L, V, batch=BATCH, seed=seed)
        seconds = time.perf_counter() - start
        curves[positions].append(curve)
        results.append((curve[0], curve[-10:].mean(), copy_accuracy(m, L, V), seconds))
    runs[positions] = np.array(results)
first = np.concatenate([r[:, 0] for r in runs.values()])
print(f"first-step loss {spread(first)} (you predicted {predicted_initial_loss(V + 1):.3f})")
for positions, r in runs.items():
    words = "with" if positions else "without"
    print(
        f"{words} positions: final loss {spread(r[:, 1])}, copied right {spread(r[:, 2], 1, True)}"
    )

# %% [markdown]
# ### A causal mask off by one: a loss too good to be true
#
# `np.tril(ones, k=1)` in place of `np.tril(ones)` lets position $t$ see position
# $t + 1$, which is the token it has to predict. Training finds the shortcut, and the
# training loss falls faster than with the right mask. But when the model writes the copy
# itself, the next token is not there to be read. Same three seeds and budget:


# %%
def off_by_one(T):
    return np.tril(np.ones((T, T), dtype=bool), k=1)


leaky, curves["off by one"] = [], []
for seed in tqdm(SEEDS, desc="off-by-one mask"):
    m = TinyTransformer(V + 1, 32, 4, 1, mask=off_by_one, seed=seed)
    curve = train(m, STEPS, L, V, batch=BATCH, seed=seed)
    curves["off by one"].append(curve)
    leaky.append((curve[:40].mean(), curve[-10:].mean(), copy_accuracy(m, L, V)))
leaky = np.array(leaky)
right = np.array([(c[:40].mean(), c[-10:].mean()) for c in curves[True]])
fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="constrained")
for label, key in (
    ("right mask", True),
    ("mask off by one", "off by one"),
    ("no positions", False),
):
    runs_of = np.array(curves[key])
    ax.plot(runs_of.mean(0), label=label)
    ax.fill_between(range(STEPS), runs_of.min(0), runs_of.max(0), alpha=0.2)
ax.set(yscale="log", xlabel="Adam step", ylabel="training loss (3 seeds)",
       title="The off-by-one mask trains fastest: is it learning the task?")  # fmt: skip
ax.legend()
plt.show()
for label, r in (("off-by-one mask", leaky), ("right mask", right)):
    print(f"{label:>15}: training loss, mean of the first 40 steps {spread(r[:, 0])},", end=" ")
    print(f"final {spread(r[:, 1], 4)}")
print("copied right when the model writes the copy:", end=" ")
print(f"off by one {spread(leaky[:, 2], 1, True)}, right mask {spread(runs[True][:, 2], 1, True)}")

# %% [markdown]
# A training (or validation) loss computed with the same leaky mask looks excellent; only
# generation, where the future does not exist yet, or a causality test by perturbation
# shows the leak.

# %% [markdown]
# ### Pre-LN or post-LN, with and without warm-up
#
# The original transformer (Vaswani et al., 2017) normalised **after** each residual
# addition (post-LN): $h = \text{LN}_1(x + \text{MHA}(x))$ and
# $\text{out} = \text{LN}_2(h + \text{MLP}(h))$, so that the residual stream itself passes
# through a layer norm in every sub-layer. Xiong et al. (2020) showed that at
# initialisation a post-LN stack's gradients near the output are large, which is why it was
# trained with a learning-rate **warm-up** (the rate rising linearly from 0 over the first
# steps); pre-LN, your block, keeps an untouched residual path from the loss to the input.
#
# The post-LN block below is given, built from your layer norm and multi-head attention,
# with the same parameters as your block; its gradients are checked first.


# %%
def post_ln_block_forward(x, params, num_heads, mask=None):
    """Post-LN block (given): h = LN1(x + MHA(x)), out = LN2(h + MLP(h)), on x (N, T, D)
    with your block's params. Returns (out (N, T, D), cache)."""
    N, T, D = x.shape
    p = params
    attended, mha = multihead_attention_forward(
        x, p["Wq"], p["Wk"], p["Wv"], p["Wo"], num_heads, mask
    )
    h, ln1 = layernorm_forward((x + attended).reshape(N * T, D), p["ln1_gamma"], p["ln1_beta"], {})
    z = h @ p["W1"] + p["b1"]
    r = np.maximum(z, 0)
    out, ln2 = layernorm_forward(h + r @ p["W2"] + p["b2"], p["ln2_gamma"], p["ln2_beta"], {})
    return out.reshape(N, T, D), (p, mha, ln1, h, z, r, ln2)


def post_ln_block_backward(dout, cache):
    """Returns (dx, grads), grads keyed as params."""
    p, mha, ln1, h, z, r, ln2 = cache
    N, T, D = dout.shape
    dm, dgamma2, dbeta2 = layernorm_backward(dout.reshape(N * T, D), ln2)
    grads = {"ln2_gamma": dgamma2, "ln2_beta": dbeta2, "W2": r.T @ dm, "b2": dm.sum(axis=0)}
    dz = (dm @ p["W2"].T) * (z > 0)
    grads["W1"], grads["b1"] = h.T @ dz, dz.sum(axis=0)
    da, grads["ln1_gamma"], grads["ln1_beta"] = layernorm_backward(dm + dz @ p["W1"].T, ln1)
    da = da.reshape(N, T, D)
    dx, grads["Wq"], grads["Wk"], grads["Wv"], grads["Wo"] = multihead_attention_backward(da, mha)
    return da + dx, grads


rng = np.random.default_rng(10)
x = rng.standard_normal((2, 5, 4))
params = {k: v + 0.1 * rng.standard_normal(v.shape) for k, v in block_params(4, 7, 11).items()}
out, cache = post_ln_block_forward(x, params, 2, causal_mask(5))
dout = rng.standard_normal(out.shape)
dx, grads = post_ln_block_backward(dout, cache)
errors = [
    gradient_error(lambda v: post_ln_block_forward(v, params, 2, causal_mask(5))[0], x, dx, dout)
]
for name in params:

    def f(value, name=name):
        return post_ln_block_forward(x, {**params, name: value}, 2, causal_mask(5))[0]

    errors.append(gradient_error(f, params[name], grads[name], dout))
print(f"post-LN block: worst relative error {max(errors):.1e} over {len(errors)} gradients")

# %% [markdown]
# Now a setting where warm-up can matter: **four** blocks, a learning rate of $10^{-2}$
# (above the $3 \cdot 10^{-3}$ of part 4), copies of $L = 3$ symbols, 60 Adam steps of 16
# examples, three seeds; each kind of block without warm-up and with 20 steps of warm-up.
# The cell prints the loss at the end (the mean of the last 10 steps) and how many runs
# diverged (a loss that stopped being finite).

# %%
LN_STEPS, LN_WARMUP, LN_RATE, LN_L = 60, 20, 1e-2, 3
blocks = {"pre-LN": None, "post-LN": (post_ln_block_forward, post_ln_block_backward)}
settings = [(kind, warmup) for kind in blocks for warmup in (0, LN_WARMUP)]
ln_curves = {setting: [] for setting in settings}
with tqdm(total=len(settings) * len(SEEDS), desc="pre-LN and post-LN, 4 blocks") as bar:
    for kind, warmup in settings:
        for seed in SEEDS:
            m = TinyTransformer(V + 1, 32, 4, 4, seed=seed, block=blocks[kind])
            ln_curves[kind, warmup].append(
                train(m, LN_STEPS, LN_L, V, LN_RATE, BATCH, seed, warmup=warmup)
            )
            bar.update()
fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="constrained")
for (kind, warmup), runs_of in ln_curves.items():
    runs_of = np.array(runs_of)
    ax.plot(runs_of.mean(0), label=f"{kind}, warm-up {warmup} steps")
    ax.fill_between(range(LN_STEPS), runs_of.min(0), runs_of.max(0), alpha=0.2)
ax.axhline(np.log(V), color="gray", ls=":", label="chance, log V")
ax.set(xlabel="Adam step", ylabel="training loss (3 seeds)",
       title="4 blocks, rate 1e-2: which one stalls near chance?")  # fmt: skip
ax.legend(fontsize=8)
plt.show()
for (kind, warmup), runs_of in ln_curves.items():
    runs_of = np.array(runs_of)
    diverged = int(np.sum(~np.isfinite(runs_of[:, -1])))
    end = spread(runs_of[:, -10:].mean(1))
    print(f"{kind:>7}, warm-up {warmup:>2} steps: loss at the end {end},",
          f"diverged {diverged} of {len(SEEDS)}")  # fmt: skip
print(f"chance: log V = {np.log(V):.3f}")

# %% [markdown]
# Read the printed losses against chance: post-LN without warm-up ends highest, closest
# to chance; warm-up takes post-LN part of the way down; pre-LN ends lowest, and its rows
# with and without warm-up are close: here pre-LN does not need the warm-up. No run
# diverged (the layer norms bound the activations, so post-LN's failure is a stall, not an
# explosion). Only 60 steps are measured, on one task: whether post-LN with warm-up
# catches up later is not.
#
# ### Weight decay: on every parameter, or on the weight matrices only
#
# Decoupled weight decay (your `adamw`, in PyTorch's convention: the step also subtracts
# `learning_rate * weight_decay * w`) pulls every parameter it is applied to towards 0.
# For a weight matrix that is the point. A layer norm's gain $\gamma$ sets the scale of
# what each sub-layer reads: pulled towards 0 it shrinks the signal, and the optimiser
# spends its steps pushing it back; a bias or a shift $\beta$ has no scale to regularise
# either. GPT-2-style training (minGPT's `configure_optimizers`, for one) therefore decays
# the matrices of the linear maps only: here `Wq`, `Wk`, `Wv`, `Wo`, `W1`, `W2` and
# `W_out`, not the embedding, the biases, the gains or the shifts.
#
# Three seeds each of: no decay, decay on every parameter, decay on the matrices only; one
# block, $L = 4$, 120 steps at the rate $3 \cdot 10^{-3}$. The decay, 3, is far above
# the usual 0.1, so that its pull shows within 120 steps: the cell prints the factor by
# which the decay alone would shrink a weight over the run, and how many steps at 0.1
# shrink as much. It prints the loss at the end, the root mean square of all the layer
# norms' gains (they start at 1), and the copied symbols written right.

# %%
DECAY, DECAY_STEPS, DECAY_L, RATE = 3.0, 120, 4, 3e-3
shrink = (1 - RATE * DECAY) ** DECAY_STEPS
print(f"decay alone shrinks a weight by {shrink:.3f} over {DECAY_STEPS} steps; with decay 0.1",
      f"that takes {np.log(shrink) / np.log(1 - RATE * 0.1):.0f} steps")  # fmt: skip


def decayed(name):
    """Is this parameter a matrix of a linear map (decayed when matrices only)?"""
    return name.split(".")[-1].startswith("W")


decay_rules = {
    "no decay": lambda name: {"weight_decay": 0.0},
    "decay on every parameter": lambda name: {"weight_decay": DECAY},
    "decay on the matrices only": lambda name: {"weight_decay": DECAY * decayed(name)},
}
decay_runs = {}
with tqdm(total=len(decay_rules) * len(SEEDS), desc="weight decay") as bar:
    for label, rule in decay_rules.items():
        results = []
        for seed in SEEDS:
            m = TinyTransformer(V + 1, 32, 4, 1, seed=seed)
            curve = train(m, DECAY_STEPS, DECAY_L, V, RATE, BATCH, seed, update=adamw, config=rule)
            gains = np.concatenate([v for k, v in m.params.items() if k.endswith("gamma")])
            gain_rms = np.sqrt(np.mean(gains**2))
            results.append((curve[-10:].mean(), gain_rms, copy_accuracy(m, DECAY_L, V)))
            bar.update()
        decay_runs[label] = np.array(results)
for label, r in decay_runs.items():
    print(f"{label:>26}: loss at the end {spread(r[:, 0])}, gains' RMS {spread(r[:, 1])},",
          f"copied right {spread(r[:, 2], 1, True)}")  # fmt: skip

# %% [markdown]
# Decayed with everything, the gains end at about half their starting value and the loss
# at the end is the highest of the three; decayed on the matrices only, the gains keep
# their scale and the loss ends between the two (compare the rows: decay this strong
# is not free on the matrices either). Look at the copied symbols, though: decay on every
# parameter does not copy fewer right than no decay, and decay on the matrices only
# copies the **fewest** right, with the widest spread over the three seeds (printed). The
# last layer norm's gains scale the scores, so with them shrunk the model is as often
# right but less sure; the cross-entropy charges for that, the argmax does not. So on
# this short run the usual rule (decay the matrices, never the gains and biases) buys a
# lower loss than decaying everything, not more symbols copied right: with spreads this
# wide, three seeds of one budget cannot rank the arms by accuracy.
#
# ### Precision: float64, float32, float16 and bfloat16
#
# The same attention on the same inputs (scores of unit spread, $d = 64$, $T = 16$), with
# every array rounded to the dtype after each operation: the inputs, the scores, the
# scaled scores, your softmax's output and the output. NumPy has no bfloat16: it is
# **emulated** here, by rounding each float32 to its top 16 bits (round to nearest, ties
# to even, on the bit pattern: the sign, the 8 exponent bits and 7 of the 23 mantissa bits
# are kept) and storing the result as float32; the arithmetic inside one operation is
# float32, as on hardware that accumulates bfloat16 products in float32. Each row prints
# the dtype's machine epsilon (the gap between 1 and the next number) and the output's
# largest error relative to the float64 output's largest entry.


# %%
def bfloat16(a):
    """bfloat16, emulated: a rounded to the top 16 bits of its float32 (ties to even),
    stored as float32."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


roundings = {
    "float64": lambda a: np.asarray(a, dtype=np.float64),
    "float32": lambda a: np.asarray(a, dtype=np.float32),
    "float16": lambda a: np.asarray(a, dtype=np.float16),
    "bfloat16 (emulated)": bfloat16,
}
epsilons = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16 (emulated)": 2.0**-7,
}


def attention_rounded(q, k, v, rounding):
    """softmax(q k^T / sqrt(d)) v with every intermediate array rounded by `rounding`."""
    q, k, v = rounding(q), rounding(k), rounding(v)
    scores = rounding(q @ np.swapaxes(k, -1, -2))
    scaled = rounding(scores / rounding(np.sqrt(q.shape[-1])))
    return rounding(rounding(softmax(scaled)) @ v)


rng = np.random.default_rng(12)
q, k, v = (rng.standard_normal((4, 16, 64)) for _ in range(3))
exact = attention_rounded(q, k, v, roundings["float64"])
for name, rounding in roundings.items():
    out = attention_rounded(q, k, v, rounding)
    error = np.abs(out.astype(np.float64) - exact).max() / np.abs(exact).max()
    print(f"{name:>19}: eps {epsilons[name]:.1e}, stored as {out.dtype}, error {error:.1e}")
half_out = attention_forward(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))[0]
print(f"your attention_forward on float16 inputs returns {half_out.dtype}")

# %% [markdown]
# If your `attention_forward` on float16 inputs returned float64, a float64 NumPy scalar
# such as `np.sqrt(d)` most likely promoted the scores (NumPy 2's rule: a NumPy scalar
# counts as an array of its dtype): a "float16" model then runs its softmax in float64
# without saying so, which is why the panel rounds after every operation instead of
# trusting the inputs' dtype.
#
# Each error is of the order of its dtype's eps. Precision also decides which **updates** are
# kept: a weight is updated by `w + lr * g`, the sum is rounded back to the dtype, and an
# update smaller than half the gap between $w$ and its neighbour is lost whole. For $w$ in
# $[1, 2)$ that gap is eps, so the smallest update-to-weight ratio that changes $w = 1$
# should be just above eps/2 (at exactly eps/2 the tie rounds to even, back to 1).
# Measured on ratios $2^{-j/4}$, for $w = 1$ and for 1000 weights drawn from $N(0, 1)$
# (the ratio at which half of them change: for most $w$ the gap is a smaller share of $|w|$
# than at a power of 2, so less is needed):

# %%
ratios = 2.0 ** -(np.arange(4 * 60) / 4)  # from 1 down to 2^-60
weights = rng.standard_normal(1000)
for name, rounding in roundings.items():

    def changed(w, rounding=rounding):
        """Share of w changed by w + ratio * w, for each ratio (rows)."""
        w = rounding(w)
        return np.mean(rounding(w + rounding(ratios[:, None] * w)) != w, axis=1)

    at_one = ratios[changed(np.ones(1)) > 0].min()
    half = ratios[changed(weights) >= 0.5].min()
    print(f"{name:>19}: eps/2 {epsilons[name] / 2:.1e}; smallest ratio that changes w = 1",
          f"{at_one:.1e}; half of N(0, 1) weights change from {half:.1e}")  # fmt: skip

# %% [markdown]
# What that means for training: Adam's first step moves every entry by the learning
# rate (its $\hat m / \sqrt{\hat v}$ is $\pm 1$, up to $\epsilon$), and later steps usually
# by less. The share of the trained tiny transformer's parameters (part 4) that a step of
# $3 \cdot 10^{-3}$ (part 4's rate) or of $3 \cdot 10^{-4}$ would leave unchanged, if they
# were stored in each dtype:

# %%
flat = np.concatenate([value.ravel() for value in model.params.values()])
for name, rounding in roundings.items():
    w = rounding(flat)
    lost = [np.mean(rounding(w + rounding(step * np.sign(flat))) == w) for step in (3e-3, 3e-4)]
    print(f"{name:>19}: of {flat.size} parameters, unchanged by a step of 3e-3 {lost[0]:.1%},",
          f"by a step of 3e-4 {lost[1]:.1%}")  # fmt: skip

# %% [markdown]
# Hence mixed-precision training keeps a float32 master copy of the weights and applies
# the updates there, even when the forward and backward passes run in float16 or bfloat16.
#
# ### Against your LSTM from 07, on the same budget
#
# The same copy task ($L = 6$, $V = 8$), the same 120 Adam steps of 16 examples and the
# same three seeds as the runs with positions above, now for a model built on your LSTM
# from 07: the same kind of embedding, your `lstm_forward` with $H = 48$, a linear map to
# the scores, the same loss on the copy. The model around your LSTM is given. Neither
# learning rate is tuned for either model: both run at the $3 \cdot 10^{-3}$ above and at
# $10^{-2}$. The LSTM has to carry all $L$ symbols in its state past the separator; the
# transformer looks each one up $L$ positions back. The cell prints both models' numbers
# of parameters, the loss at the end, the copied symbols written right and the seconds
# per run.


# %%
class LSTMCopier:
    """Given: embed -> your LSTM (h0 = 0) -> scores, with TinyTransformer's interface."""

    def __init__(self, vocab, D, H, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "embed": rng.standard_normal((vocab, D)),
            "Wx": rng.standard_normal((D, 4 * H)) / np.sqrt(D),
            "Wh": rng.standard_normal((H, 4 * H)) / np.sqrt(H),
            "b": np.zeros(4 * H),
            "W_out": 0.02 * rng.standard_normal((H, vocab)),
            "b_out": np.zeros(vocab),
        }

    def scores(self, tokens):
        p = self.params
        h0 = np.zeros((tokens.shape[0], p["Wh"].shape[0]))
        h, cache = lstm_forward(p["embed"][tokens], h0, p["Wx"], p["Wh"], p["b"])
        return h @ p["W_out"] + p["b_out"], (tokens, h, cache)

    def loss(self, tokens, targets, weights):
        scores, (tokens, h, cache) = self.scores(tokens)
        N, T, K = scores.shape
        probs = softmax(scores.reshape(N * T, K))
        w = (weights / weights.sum()).reshape(-1)
        rows, flat_targets = np.arange(N * T), targets.reshape(-1)
        loss = -np.sum(w * np.log(probs[rows, flat_targets]))
        probs[rows, flat_targets] -= 1
        dscores = probs * w[:, None]
        grads = {"W_out": h.reshape(N * T, -1).T @ dscores, "b_out": dscores.sum(axis=0)}
        dh = (dscores @ self.params["W_out"].T).reshape(N, T, -1)
        dx, _, grads["Wx"], grads["Wh"], grads["b"] = lstm_backward(dh, cache)
        grads["embed"] = np.zeros_like(self.params["embed"])
        np.add.at(grads["embed"], tokens, dx)
        return loss, grads


makers = {
    "transformer": lambda seed: TinyTransformer(V + 1, 32, 4, 1, seed=seed),
    "your LSTM": lambda seed: LSTMCopier(V + 1, 32, 48, seed=seed),
}
for label, make in makers.items():
    print(f"{label:>11}: {sum(p.size for p in make(0).params.values())} parameters")
budget = {("transformer", 3e-3): runs[True][:, 1:]}  # the runs with positions, above
with tqdm(total=3 * len(SEEDS), desc="transformer against your LSTM") as bar:
    for label, rate in (("transformer", 1e-2), ("your LSTM", 3e-3), ("your LSTM", 1e-2)):
        results = []
        for seed in SEEDS:
            m = makers[label](seed)
            start = time.perf_counter()
            curve = train(m, STEPS, L, V, rate, BATCH, seed)
            seconds = time.perf_counter() - start
            results.append((curve[-10:].mean(), copy_accuracy(m, L, V), seconds))
            bar.update()
        budget[label, rate] = np.array(results)
for (label, rate), r in sorted(budget.items()):
    print(f"{label:>11}, rate {rate:.0e}: loss at the end {spread(r[:, 0])}, copied right",
          f"{spread(r[:, 1], 1, True)}, {spread(r[:, 2], 2)} s per run")  # fmt: skip
step_seconds = {}
for label, make in makers.items():
    timings = []
    for _ in range(5):
        m = make(0)
        start = time.perf_counter()
        train(m, 4, L, V, 1e-2, BATCH, 0)
        timings.append((time.perf_counter() - start) / 4)
    step_seconds[label] = min(timings)  # the fastest: the least disturbed by other work
ratio = step_seconds["transformer"] / step_seconds["your LSTM"]
print(", ".join(f"{label}: {1e3 * t:.1f} ms a step" for label, t in step_seconds.items()),
      f"(the fastest of 5 timings); transformer / LSTM {ratio:.1f}x")  # fmt: skip

# %% [markdown]
# On the same steps the transformer copies far more symbols right than your LSTM, at
# either learning rate. That is a budget in **steps**. The seconds per run are printed
# too, but they were timed while other work shared the machine, and the runs with
# positions earlier in the notebook; the last line times a step of each model apart
# from that noise (the fastest of five). A model whose step costs more gets fewer steps
# on a budget in seconds; these runs compare equal steps, so which model wins in
# seconds they do not measure. Reading the symbol $L$ positions back is one attention
# lookup, while the LSTM has to have squeezed all $L$ of them into its state. This is
# one short budget on one task built for attention; it says nothing about text, where
# 07's LSTM was trained.

# %% [markdown]
# ## 7 · The shape of the loss
#
# Two choices of this notebook, seen as the shape of the cost function the optimiser
# descends (with `course.landscape`, as in 04 and 05): the $1/\sqrt{d}$ scale, and the
# residual connections of your block.
#
# ### The scale: the same functions, another optimiser
#
# Without the scale, a head computes $\text{softmax}(q k^\top)\, v$ with $q = x W_q$: so a
# head without the scale, with query weights $W_q$, computes what your scaled head computes
# with query weights $c\, W_q$ for some number $c$. Two predictions to write down **before**
# the measurements below (2 points, each accepted within 2%): the first as a function of
# the head's width $d$ (`head_dim`), the second of your $c$ (`query_scale`):
#
# 1. `predicted_query_scale(head_dim)`: that number $c$.
# 2. `predicted_sgd_step_ratio(query_scale)`: take your scaled model at query weights
#    $c\,W_q$ and the unscaled one at $W_q$, so the same function. One step of plain SGD, at
#    the same learning rate, on the same batch: how many times larger is the unscaled model's
#    step relative to its own query weights, $\lVert \Delta W_q \rVert / \lVert W_q \rVert$?
#    Write it in terms of $c$ (`query_scale`, your first answer). Below: $d = 64$.


# %% nbgrader={"grade": false, "grade_id": "shape_predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_query_scale(head_dim):
    """c such that attention without the scale on x W_q is attention with it on x (c W_q)."""
    ### BEGIN SOLUTION
    return np.sqrt(head_dim)
    ### END SOLUTION


def predicted_sgd_step_ratio(query_scale):
    """|dW_q| / |W_q| of one SGD step, unscaled model at W_q over scaled model at c W_q,
    where c is `query_scale`."""
    ### BEGIN SOLUTION
    return query_scale**2
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "shape_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within its band, for hidden head widths.
### BEGIN HIDDEN TESTS
from course.grading import check

check("shape_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# First, that the unscaled head is your head on larger queries: below, $\text{softmax}(q
# k^\top) v$ written out, against your `attention_forward` on $c\, q$ with your $c$. The
# block without the scale is then your block on query weights $c\,W_q$, and its gradient
# with respect to $W_q$ is $c$ times your block's gradient with respect to $c\,W_q$ (the
# chain rule); the first line checks both.


# %%
def unscaled_block_forward(x, params, num_heads, mask=None):
    """Your block with attention softmax(q k^T) v, without 1/sqrt(d): your block on query
    weights c W_q (your prediction 1). Returns (out, cache)."""
    c = predicted_query_scale(x.shape[-1] // num_heads)
    out, cache = block_forward(x, {**params, "Wq": c * params["Wq"]}, num_heads, mask)
    return out, (cache, c)


def unscaled_block_backward(dout, cache):
    cache, c = cache
    dx, grads = block_backward(dout, cache)
    return dx, {**grads, "Wq": c * grads["Wq"]}  # d(c W_q) / dW_q = c


rng = np.random.default_rng(7)
q, k, v = (rng.standard_normal((2, 5, 16)) for _ in range(3))
direct = softmax(q @ np.swapaxes(k, -1, -2)) @ v
ours = attention_forward(predicted_query_scale(16) * q, k, v)[0]
x = rng.standard_normal((2, 5, 16))
params = block_params(16, 24, seed=3)
out, cache = unscaled_block_forward(x, params, 1, causal_mask(5))
dout = rng.standard_normal(out.shape)
_, grads = unscaled_block_backward(dout, cache)
error = gradient_error(
    lambda w: unscaled_block_forward(x, {**params, "Wq": w}, 1, causal_mask(5))[0],
    params["Wq"], grads["Wq"], dout,
)  # fmt: skip
print(f"d = 16: written out against yours on c q: {np.abs(direct - ours).max():.1e} apart;",
      f"the unscaled block's dW_q, relative error {error:.1e}")  # fmt: skip

# %% [markdown]
# Now one model of width 64 with one head ($d = 64$), scaled, against the unscaled one at
# query weights $W_q / c$: the same function, so the same loss on a batch of 256 copies.
# Then the gradient with respect to $W_q$, one SGD step relative to $W_q$ (your prediction
# 2) and one step of your Adam relative to $W_q$; and the loss along one
# filter-normalised random direction through each (Li et al., 2018: each neuron's part of
# the direction as long as that neuron's weights, as in 05).

# %%
from course.landscape import normalise_filters, random_directions, slice_1d


def loss_on(model, batch):
    """model.loss on a fixed batch as a function of a parameter dict (course.landscape)."""

    def loss(params):
        own, model.params = model.params, params
        try:
            return float(model.loss(*batch)[0])
        finally:
            model.params = own

    return loss


d_head = 64
c = predicted_query_scale(d_head)
batch = copy_batch(np.random.default_rng(99), 256, L, V)
scaled = TinyTransformer(V + 1, d_head, 1, 1, seed=0)
unscaled = TinyTransformer(
    V + 1, d_head, 1, 1, seed=0, block=(unscaled_block_forward, unscaled_block_backward)
)
unscaled.params["0.Wq"] = scaled.params["0.Wq"] / c
(loss_s, grads_s), (loss_u, grads_u) = scaled.loss(*batch), unscaled.loss(*batch)


def relative_steps(model, grads):
    """|step| / |W_q| for one SGD step (rate 0.1) and one step of your Adam (3e-3)."""
    w, g = model.params["0.Wq"], grads["0.Wq"]
    adam_w, _ = adam(w, g, {"learning_rate": 3e-3})
    return np.linalg.norm(0.1 * g) / np.linalg.norm(w), np.linalg.norm(adam_w - w) / np.linalg.norm(
        w
    )


(sgd_s, adam_s), (sgd_u, adam_u) = (
    relative_steps(scaled, grads_s),
    relative_steps(unscaled, grads_u),
)
grad_ratio = np.linalg.norm(grads_u["0.Wq"]) / np.linalg.norm(grads_s["0.Wq"])
print(f"loss scaled {loss_s:.6f}, unscaled {loss_u:.6f} ({abs(loss_s - loss_u):.1e} apart)")
print(f"|dL/dW_q| unscaled / scaled: {grad_ratio:.4f} (c = {c:.4f})")
print(f"one SGD step, relative to W_q: unscaled / scaled {sgd_u / sgd_s:.4f}",
      f"(you predicted {predicted_sgd_step_ratio(c):.4f})")  # fmt: skip
print(f"one step of your Adam, relative to W_q: unscaled / scaled {adam_u / adam_s:.4f}")
draw = random_directions(scaled.params, seed=3, count=1)[0]
slices = {
    name: slice_1d(
        loss_on(model, batch), model.params, normalise_filters(draw, model.params), 1.0, 21
    )
    for name, model in (("scaled", scaled), ("unscaled at W_q / c", unscaled))
}  # fmt: skip
gap = np.abs(slices["scaled"].losses - slices["unscaled at W_q / c"].losses).max()
print(f"the two filter-normalised slices (21 points): at most {gap:.1e} apart")

# %% [markdown]
# One function: along filter-normalised directions the loss is the same with the scale or
# without it (the two slices above agree to the last bit printed; exactly, since $c = 8$
# is a power of two), so no filter-normalised slice can tell the two apart. A slice along
# the same *raw* direction would: it moves the unscaled $W_q$, $c$ times smaller, $c$ times
# further relative to its size. What differs is the optimiser's view. At the same function
# the unscaled model's gradient is $c$ times larger while its query weights are $c$ times
# smaller, so an SGD step is $c^2 = d$ times larger relative to them, and the first step of
# Adam, which moves every weight by its learning rate whatever the gradient
# ($\hat m / \sqrt{\hat v} = \pm 1$), $c$ times larger. These ratios follow from the chain
# rule exactly (the unscaled block is built as yours on $c\,W_q$), so they check the
# algebra of your prediction 2 rather than test it; the written-out head above is what ties
# it to attention without the scale. And the usual initialisation draws $W_q$ the same way
# for both, so the unscaled model starts where your scaled model would with query weights
# $c$ times larger. In training: the same tiny transformer (one block, 250 steps of your
# Adam at $3 \cdot 10^{-3}$, as in 4.2, tuned for neither) with heads of width 8 (width 32,
# 4 heads, as in 4.2) and of width 64 (one head of width 64), scaled and unscaled, from the
# same draws, two seeds each. The cell prints the Adam step at which the loss first falls
# below 0.1. The unscaled runs differ in their start and in their steps at once: these
# runs do not say which of the two costs the steps.


# %%
def first_below(losses, level=0.1):
    """The first step whose loss is below `level`, or None."""
    below = np.flatnonzero(losses < level)
    return int(below[0]) if below.size else None


scale_runs = {}
with tqdm(total=8, desc="scaled and unscaled heads") as bar:
    for width, heads in ((32, 4), (64, 1)):
        for label, block in (
            ("scaled", None),
            ("unscaled", (unscaled_block_forward, unscaled_block_backward)),
        ):
            for seed in (0, 1):
                m = TinyTransformer(V + 1, width, heads, 1, seed=seed, block=block)
                scale_runs[width // heads, label, seed] = train(m, 250, L, V, seed=seed)
                bar.update()
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True, layout="constrained")
for ax, d_head in zip(axes, (8, 64), strict=True):
    for (d, label, seed), curve in scale_runs.items():
        if d == d_head:
            ax.semilogy(curve, color="C0" if label == "scaled" else "C3", alpha=0.8,
                        label=label if seed == 0 else None)  # fmt: skip
    ax.set(xlabel="Adam step", title=f"heads of width {d_head}")
    ax.legend()
axes[0].set(ylabel="loss on the copy (2 seeds)")
plt.show()
for (d, label, seed), curve in scale_runs.items():
    print(f"width {d:>2}, {label:>8}, seed {seed}: below 0.1 at step {first_below(curve)},",
          f"loss at the end {curve[-10:].mean():.4f}")  # fmt: skip

# %% [markdown]
# ### The residual connections: a way through the stack
#
# Your block adds what attention reads and what the MLP computes to its input, so the
# loss reaches every block through the additions alone. Below, the same layers without the
# two additions (given: $h = \text{MHA}(\text{LN}_1(x))$, $\text{out} = \text{MLP}(\text{LN}_2(h))$),
# its gradients checked first. Li et al. (2018, figure 5) found that removing the skip
# connections of a deep convolutional network turns its loss surface from nearly convex
# to chaotic; this is a much smaller network on another task, so measure before you
# assume: 6 blocks of width 16 (2 heads), with and without the residual connections, 250
# steps of your Adam, two seeds each; then the loss on the straight line from each
# start ($a = 0$) to its trained weights ($a = 1$), as Goodfellow et al. (2015) drew it
# and 04 did, on the batch of 256 copies above.


# %%
def plain_block_forward(x, params, num_heads, mask=None):
    """Your block's layers without its residual additions (given). Returns (out, cache)."""
    N, T, D = x.shape
    p = params
    a, ln1 = layernorm_forward(x.reshape(N * T, D), p["ln1_gamma"], p["ln1_beta"], {})
    h, mha = multihead_attention_forward(
        a.reshape(N, T, D), p["Wq"], p["Wk"], p["Wv"], p["Wo"], num_heads, mask
    )
    b, ln2 = layernorm_forward(h.reshape(N * T, D), p["ln2_gamma"], p["ln2_beta"], {})
    z = b @ p["W1"] + p["b1"]
    r = np.maximum(z, 0)
    return (r @ p["W2"] + p["b2"]).reshape(N, T, D), (p, ln1, mha, ln2, b, z, r)


def plain_block_backward(dout, cache):
    """Returns (dx, grads), grads keyed as params."""
    p, ln1, mha, ln2, b, z, r = cache
    N, T, D = dout.shape
    flat = dout.reshape(N * T, D)
    grads = {"W2": r.T @ flat, "b2": flat.sum(axis=0)}
    dz = (flat @ p["W2"].T) * (z > 0)
    grads["W1"], grads["b1"] = b.T @ dz, dz.sum(axis=0)
    db, grads["ln2_gamma"], grads["ln2_beta"] = layernorm_backward(dz @ p["W1"].T, ln2)
    da, grads["Wq"], grads["Wk"], grads["Wv"], grads["Wo"] = multihead_attention_backward(
        db.reshape(N, T, D), mha
    )
    dx, grads["ln1_gamma"], grads["ln1_beta"] = layernorm_backward(da.reshape(N * T, D), ln1)
    return dx.reshape(N, T, D), grads


rng = np.random.default_rng(12)
x = rng.standard_normal((2, 5, 4))
params = {k: v + 0.1 * rng.standard_normal(v.shape) for k, v in block_params(4, 7, 13).items()}
out, cache = plain_block_forward(x, params, 2, causal_mask(5))
dout = rng.standard_normal(out.shape)
dx, grads = plain_block_backward(dout, cache)
errors = [
    gradient_error(lambda v: plain_block_forward(v, params, 2, causal_mask(5))[0], x, dx, dout)
]
for name in params:

    def f(value, name=name):
        return plain_block_forward(x, {**params, name: value}, 2, causal_mask(5))[0]

    errors.append(gradient_error(f, params[name], grads[name], dout))
print(f"plain block: largest relative error of its {len(errors)} gradients {max(errors):.1e}")

# %%
from course.landscape import interpolation

depth_runs = {}
with tqdm(total=4, desc="6 blocks, with and without residuals") as bar:
    for label, block in (
        ("residual", None),
        ("plain", (plain_block_forward, plain_block_backward)),
    ):
        for seed in (0, 1):
            m = TinyTransformer(V + 1, 16, 2, 6, seed=seed, block=block)
            start = {name: value.copy() for name, value in m.params.items()}
            curve = train(m, 250, L, V, seed=seed)
            line = interpolation(loss_on(m, batch), start, m.params, span=(0, 1.25), resolution=11)
            depth_runs[label, seed] = curve, line
            bar.update()
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), layout="constrained")
for (label, seed), (curve, line) in depth_runs.items():
    style = {"color": "C0" if label == "residual" else "C3", "label": label if seed == 0 else None}
    axes[0].semilogy(curve, **style)
    axes[1].plot(line.alphas, line.losses, "o-", ms=3, **style)
axes[0].set(xlabel="Adam step", ylabel="loss on the copy", title="6 blocks, 2 seeds each")
axes[1].axvline(1.0, color="gray", ls=":")
axes[1].set(xlabel="a: (1 - a) start + a trained", ylabel="loss on 256 copies",
            title="The straight line from the start to the trained weights")  # fmt: skip
for ax in axes:
    ax.legend()
plt.show()
for (label, seed), (curve, line) in depth_runs.items():
    rises = int(np.sum(np.diff(line.losses[:9]) > 0))
    print(f"{label:>8}, seed {seed}: loss at the end {curve[-10:].mean():.3f}; on the line,",
          f"start {line.losses[0]:.3f}, trained {line.losses[8]:.3f},",
          f"{rises} rises of 8 steps")  # fmt: skip
print(f"parameters of the 6-block model: {sum(v.size for v in m.params.values()):,}")

# %% [markdown]
# With the residual connections both seeds end far below chance; without them the same
# layers end barely below chance ($\log V = 2.08$) after the same steps (the numbers
# above: two seeds, so a trend, not a spread). On the straight line from the start, the
# residual loss falls all the way to its trained weights; the plain one falls only a
# little, and may rise slightly just before its trained weights (the rises printed above
# count them), so what stops the plain stack is not a large bump on Goodfellow's line. Li
# et al. (section 3) note that such straight lines rarely show non-convexity, so this line
# cannot test their finding: their chaotic surfaces came from convolutional networks of 56
# and 110 layers, on 2-D slices (at 20 layers, their network without skips still looked
# benign); 6 blocks of width 16 show that the additions matter to training, not that
# picture. And like
# every slice, the line is one direction out of the model's 19,625 (the last line
# above): the loss along it is exact, and it leaves out everything else.

# %% [markdown]
# ## What to take away
#
# - Attention is a softmax over $q \cdot k$: scale by $1/\sqrt d$ or it saturates as the
#   width grows: the softmax's gradients shrink, and training starts from nearly one-hot
#   attention.
# - Attention without a mask is blind to order (permutation equivariant). Without
#   positions, the one-block causal model here could not learn the order of what it
#   copies; deeper causal models can recover positions from the mask (Haviv et al.,
#   2022), but adding positions is what makes order available by design.
# - Masks are where attention leaks: off by one, the model reads the answer; fully
#   masked, a row is NaN, or silently uniform with a large negative constant, and NaN
#   again in float16. Test causality by perturbation, not by shapes.
# - Where the layer norm sits matters: a deep post-LN stack at a high learning rate
#   stalled without warm-up here, and warm-up only partly rescued it; pre-LN trained
#   either way.
# - Weight decay on the layer norms' gains shrinks them, and the loss pays for scores
#   that are less sure. Decaying the matrices only kept the gains and a lower loss than
#   decaying everything, but in this short run it copied the fewest symbols right:
#   measure the metric you care about, with seeds, before trusting the rule.
# - Precision is eps: float16 and bfloat16 give attention errors of the order of their
#   eps, and an update below about eps/2 of a weight is lost whole, so low-precision
#   training keeps float32 master weights. Check the dtype you get: a float64 NumPy
#   scalar silently promotes float16 arrays.
# - On a task that needs looking back exactly, attention beats your LSTM on the same
#   steps: one lookup against a memory squeezed through a state.
# - The scale adds and removes no function: without it a head is yours on query weights
#   $\sqrt d$ times larger, and a filter-normalised slice cannot tell them apart. It
#   changes the optimiser's view: SGD's steps $d$ times and Adam's first step $\sqrt d$
#   times larger relative to the query weights, and a start on larger ones; with heads of
#   width 64 the unscaled model needed more steps to fall below 0.1 (the two seeds
#   printed), with heads of width 8 no difference showed.
# - Residual connections are what lets a stack train here: 6 blocks without them ended
#   near chance, with them far below it; the straight line from each residual start
#   descended without a bump, the plain stacks' lines barely descended at all.
