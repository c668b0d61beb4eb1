# %% [markdown]
# # 07 · Recurrent networks
#
# A recurrent network reads a sequence one step at a time and carries a hidden state from
# each step to the next, with the same weights at every step. Here you build a vanilla RNN
# and an LSTM, the layers around them (embeddings, a per-step affine layer, a masked loss
# summed over time), and a character-level language model on the Book of Genesis.
#
# **The leaks shown here:** the same matrix multiplies the gradient at every step back in
# time, so its spectral radius decides whether gradients explode or vanish; clipping must
# scale all gradients together or it turns the step; an LSTM's forget-gate bias decides how
# far its memory reaches; truncated backpropagation through time cannot learn what lies
# further back than its window; and a loss summed over time steps makes the sequence
# length a hidden factor of the learning rate.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your code from 04 | nothing: `adam` is carried forward from 04 | 0 |
# | 1 · Vanilla RNN | `rnn_step_forward`/`_backward`, `rnn_forward`/`_backward` | 6 |
# | 2 · LSTM | `lstm_step_forward`/`_backward`, `lstm_forward`/`_backward` | 6 |
# | 3 · Layers around the recurrence | `word_embedding_forward`/`_backward`, `temporal_affine_forward`/`_backward`, `temporal_softmax_loss` | 4 |
# | 4 · Clipping | `clip_grad_norm` | 2 |
# | 5 · A character model | nothing new: trained from your layers, graded by its loss curve | 3 |
# | 6 · Predictions | three small formulas, before the experiments that measure them | 3 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import char_data
from course.gradcheck import gradient_error
from course.notebook import check_it, explore_plot
from course.plots import plain_log_labels

# %% [markdown]
# ## 0 · Your code from 04
#
# The character model of part 5 trains with your `adam` from 04, imported from
# `my_04_optimisers.py` beside this notebook (written by `course export`, which `make lab`
# and `course check` run, from the cells marked `#| export` of your 04 notebook). Fixed it
# there? Save 04, then re-run this cell.

# %% nbgrader={"grade": false, "grade_id": "carried_from_04", "locked": true, "schema_version": 3, "solution": false}
# Your Adam from 04 (work/04_optimisers).
from course.carry import carry  # imported here: this cell may be re-run alone

(adam,) = carry("04_optimisers", "adam")

# %% [markdown]
# ## 1 · A vanilla RNN
#
# At each step $t$ the hidden state is
#
# $$h_t = \tanh(x_t W_x + h_{t-1} W_h + b),$$
#
# with $x_t$ (N, D), $h_t$ (N, H), $W_x$ (D, H), $W_h$ (H, H) and $b$ (H,), the same
# weights at every step. Backwards, $h_{t-1}$ gets the gradient
# $\big(dh_t \odot (1 - h_t^2)\big) W_h^\top$: one more multiplication by $W_h^\top$ per
# step back in time.
#
# ### Exercise 1.1: `rnn_step_forward` and `rnn_step_backward` (3 points)
#
# `rnn_step_forward(x, prev_h, Wx, Wh, b)` returns `(next_h, cache)`;
# `rnn_step_backward(dnext_h, cache)` returns `(dx, dprev_h, dWx, dWh, db)`.


# %% nbgrader={"grade": false, "grade_id": "rnn_step_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def rnn_step_forward(x, prev_h, Wx, Wh, b):
    """One tanh RNN step: x (N, D), prev_h (N, H). Returns (next_h (N, H), cache)."""
    ### BEGIN SOLUTION
    next_h = np.tanh(x @ Wx + prev_h @ Wh + b)
    return next_h, (x, prev_h, Wx, Wh, next_h)
    ### END SOLUTION


#| export
def rnn_step_backward(dnext_h, cache):
    """Returns (dx, dprev_h, dWx, dWh, db)."""
    ### BEGIN SOLUTION
    x, prev_h, Wx, Wh, next_h = cache
    da = dnext_h * (1 - next_h**2)
    return da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, da.sum(axis=0)
    ### END SOLUTION


# %% [markdown]
# **Check it**: each gradient against centred differences of your forward pass, with a
# random upstream gradient. Expect relative errors near $10^{-9}$.


# %%
def rnn_inputs(N=3, D=5, H=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((N, D)),
        "prev_h": rng.standard_normal((N, H)),
        "Wx": 0.5 * rng.standard_normal((D, H)),
        "Wh": 0.5 * rng.standard_normal((H, H)),
        "b": 0.5 * rng.standard_normal(H),
    }


with check_it("Exercise 1.1"):
    inputs = rnn_inputs()
    dnext_h = np.random.default_rng(1).standard_normal((3, 4))
    next_h, cache = rnn_step_forward(**inputs)
    assert next_h.shape == (3, 4), f"next_h has shape {next_h.shape}, expected (3, 4)"
    grads = rnn_step_backward(dnext_h, cache)
    for (name, value), grad in zip(inputs.items(), grads, strict=True):
        error = gradient_error(
            lambda v, name=name: rnn_step_forward(**{**inputs, name: v})[0], value, grad, dnext_h
        )
        print(f"d{name:<7} relative error {error:.1e}")
        assert error < 1e-7, f"d{name}: relative error {error:.1e}, above 1e-7"

# %% nbgrader={"grade": true, "grade_id": "rnn_step", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): next_h and every gradient for N, D and H all different and a
# square Wx, random upstream gradients, non-contiguous inputs, against the reference and
# against centred differences of your own forward pass (credited when it is right).
### BEGIN HIDDEN TESTS
from course.grading import check

check("rnn_step", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.2: `rnn_forward` and `rnn_backward` (3 points)
#
# `x` (N, T, D), `h0` (N, H): run the step over the T time steps and return every hidden
# state, `h` (N, T, H). Backwards, `dh` (N, T, H) is the upstream gradient of **every**
# $h_t$ (a loss reads each of them): the gradient flowing into $h_t$ is its own `dh[:, t]`
# plus what comes back from step $t + 1$. The weights' gradients add up over the steps.
# Use your step functions.


# %% nbgrader={"grade": false, "grade_id": "rnn_sequence_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def rnn_forward(x, h0, Wx, Wh, b):
    """x (N, T, D), h0 (N, H). Returns (h (N, T, H), cache)."""
    ### BEGIN SOLUTION
    N, T, _ = x.shape
    h, caches, prev_h = np.zeros((N, T, h0.shape[1])), [], h0
    for t in range(T):
        prev_h, step_cache = rnn_step_forward(x[:, t], prev_h, Wx, Wh, b)
        h[:, t] = prev_h
        caches.append(step_cache)
    return h, (caches, x.shape[2])
    ### END SOLUTION


#| export
def rnn_backward(dh, cache):
    """dh (N, T, H): the upstream gradient of every h. Returns (dx, dh0, dWx, dWh, db)."""
    ### BEGIN SOLUTION
    caches, D = cache
    N, T, H = dh.shape
    dx, dWx, dWh, db = np.zeros((N, T, D)), np.zeros((D, H)), np.zeros((H, H)), np.zeros(H)
    dprev_h = np.zeros((N, H))
    for t in reversed(range(T)):
        dx[:, t], dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(dh[:, t] + dprev_h, caches[t])
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return dx, dprev_h, dWx, dWh, db
    ### END SOLUTION


# %%
def sequence_inputs(N=2, T=4, D=5, H=3, seed=2, lstm=False):
    rng = np.random.default_rng(seed)
    width = 4 * H if lstm else H
    return {
        "x": rng.standard_normal((N, T, D)),
        "h0": rng.standard_normal((N, H)),
        "Wx": 0.4 * rng.standard_normal((D, width)),
        "Wh": 0.4 * rng.standard_normal((H, width)),
        "b": 0.4 * rng.standard_normal(width),
    }


def check_sequence(forward, backward, lstm=False):
    inputs = sequence_inputs(lstm=lstm)
    h, cache = forward(**inputs)
    assert h.shape == (2, 4, 3), f"h has shape {h.shape}, expected (N, T, H) = (2, 4, 3)"
    dh = np.random.default_rng(3).standard_normal(h.shape)
    grads = backward(dh, cache)
    for (name, value), grad in zip(inputs.items(), grads, strict=True):
        error = gradient_error(
            lambda v, name=name: forward(**{**inputs, name: v})[0], value, grad, dh
        )
        print(f"d{name:<3} relative error {error:.1e}")
        assert error < 1e-7, f"d{name}: relative error {error:.1e}, above 1e-7"


with check_it("Exercise 1.2"):
    check_sequence(rnn_forward, rnn_backward)

# %% nbgrader={"grade": true, "grade_id": "rnn_sequence", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): h and every gradient for N, T, D and H all different, a square
# case, random upstream gradients at every step, a non-contiguous x, against the reference
# and against centred differences of your own forward pass.
### BEGIN HIDDEN TESTS
from course.grading import check

check("rnn_sequence", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · The LSTM
#
# Hochreiter and Schmidhuber (1997), with the forget gate of Gers et al. (2000). One affine
# map gives four blocks of H pre-activations, $a = x_t W_x + h_{t-1} W_h + b$ (4H wide).
# **Gate order in this course: i, f, o, g** (input, forget, output, candidate) along the 4H
# axis; PyTorch orders them i, f, g, o, so its weights do not load here unpermuted.
#
# $$i = \sigma(a_i),\ f = \sigma(a_f),\ o = \sigma(a_o),\ g = \tanh(a_g),\qquad
# c_t = f \odot c_{t-1} + i \odot g,\qquad h_t = o \odot \tanh(c_t).$$
#
# The cell state $c$ is the memory: backwards, $dc_{t-1} = dc_t \odot f$, a product of
# gates rather than of one matrix. Write $\sigma$ so that it neither overflows nor warns at
# $a = \pm 800$ (compute $e^{-|a|}$ only).
#
# ### Exercise 2.1: `lstm_step_forward` and `lstm_step_backward` (3 points)


# %% nbgrader={"grade": false, "grade_id": "lstm_step_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def sigmoid(a):
    """The logistic function, stable for any a: exp of a non-positive number only."""
    ### BEGIN SOLUTION
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))
    ### END SOLUTION


#| export
def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    """One LSTM step, gates in the order i, f, o, g. Returns (next_h, next_c, cache)."""
    ### BEGIN SOLUTION
    a = x @ Wx + prev_h @ Wh + b
    H = prev_h.shape[1]
    i, f, o = np.split(sigmoid(a[:, : 3 * H]), 3, axis=1)  # one call: the same values
    g = np.tanh(a[:, 3 * H :])
    next_c = f * prev_c + i * g
    tanh_c = np.tanh(next_c)
    next_h = o * tanh_c
    return next_h, next_c, (x, prev_h, prev_c, Wx, Wh, i, f, o, g, tanh_c)
    ### END SOLUTION


#| export
def lstm_step_backward(dnext_h, dnext_c, cache):
    """Returns (dx, dprev_h, dprev_c, dWx, dWh, db)."""
    ### BEGIN SOLUTION
    x, prev_h, prev_c, Wx, Wh, i, f, o, g, tanh_c = cache
    dc = dnext_c + dnext_h * o * (1 - tanh_c**2)
    da = np.concatenate(
        [
            dc * g * i * (1 - i),
            dc * prev_c * f * (1 - f),
            dnext_h * tanh_c * o * (1 - o),
            dc * i * (1 - g**2),
        ],
        axis=1,
    )
    return da @ Wx.T, da @ Wh.T, dc * f, x.T @ da, prev_h.T @ da, da.sum(axis=0)
    ### END SOLUTION


# %% [markdown]
# **Check it**: centred differences of $\sum (h_t \cdot dh_t + c_t \cdot dc_t)$ for random
# $dh_t$ and $dc_t$; then the gate order, on a bias that opens only the forget gate.

# %%
with check_it("Exercise 2.1"):
    rng = np.random.default_rng(4)
    N, D, H = 3, 5, 4
    inputs = {
        "x": rng.standard_normal((N, D)),
        "prev_h": rng.standard_normal((N, H)),
        "prev_c": rng.standard_normal((N, H)),
        "Wx": 0.4 * rng.standard_normal((D, 4 * H)),
        "Wh": 0.4 * rng.standard_normal((H, 4 * H)),
        "b": 0.4 * rng.standard_normal(4 * H),
    }
    dh, dc = rng.standard_normal((N, H)), rng.standard_normal((N, H))

    def lstm_objective(name, v):
        next_h, next_c, _ = lstm_step_forward(**{**inputs, name: v})
        return np.sum(next_h * dh) + np.sum(next_c * dc)

    _, _, cache = lstm_step_forward(**inputs)
    grads = lstm_step_backward(dh, dc, cache)
    for (name, value), grad in zip(inputs.items(), grads, strict=True):
        error = gradient_error(lambda v, name=name: lstm_objective(name, v), value, grad)
        print(f"d{name:<7} relative error {error:.1e}")
        assert error < 1e-7, f"d{name}: relative error {error:.1e}, above 1e-7"
    # Only the forget gate open (+50), the others shut (-50): c must carry prev_c over.
    shut = {**inputs, "Wx": 0 * inputs["Wx"], "Wh": 0 * inputs["Wh"]}
    shut["b"] = np.repeat([-50.0, 50.0, -50.0, -50.0], H)
    _, next_c, _ = lstm_step_forward(**shut)
    print(
        "forget gate open, the others shut: next_c == prev_c?", np.allclose(next_c, shut["prev_c"])
    )
    assert np.allclose(next_c, shut["prev_c"]), "gates are not in the order i, f, o, g"
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        print("sigmoid at -800, 0, 800:", sigmoid(np.array([-800.0, 0.0, 800.0])))

# %% nbgrader={"grade": true, "grade_id": "lstm_step", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): next_h, next_c and every gradient for N, D and H all different
# and a square case, random upstream gradients of h and c, non-contiguous inputs, the gate
# order, pre-activations of +-800; against the reference and centred differences.
### BEGIN HIDDEN TESTS
from course.grading import check

check("lstm_step", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2.2: `lstm_forward` and `lstm_backward` (3 points)
#
# As for the RNN: `x` (N, T, D), `h0` (N, H), the cell state starts at zero, and `h`
# (N, T, H) holds every hidden state (the cell states are internal: no upstream gradient
# reaches them from outside). `lstm_backward` returns `(dx, dh0, dWx, dWh, db)`.


# %% nbgrader={"grade": false, "grade_id": "lstm_sequence_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def lstm_forward(x, h0, Wx, Wh, b):
    """x (N, T, D), h0 (N, H), c0 = 0. Returns (h (N, T, H), cache)."""
    ### BEGIN SOLUTION
    N, T, _ = x.shape
    H = h0.shape[1]
    h, caches = np.zeros((N, T, H)), []
    prev_h, prev_c = h0, np.zeros((N, H))
    for t in range(T):
        prev_h, prev_c, step_cache = lstm_step_forward(x[:, t], prev_h, prev_c, Wx, Wh, b)
        h[:, t] = prev_h
        caches.append(step_cache)
    return h, (caches, x.shape[2])
    ### END SOLUTION


#| export
def lstm_backward(dh, cache):
    """dh (N, T, H). Returns (dx, dh0, dWx, dWh, db)."""
    ### BEGIN SOLUTION
    caches, D = cache
    N, T, H = dh.shape
    dx, dWx = np.zeros((N, T, D)), np.zeros((D, 4 * H))
    dWh, db = np.zeros((H, 4 * H)), np.zeros(4 * H)
    dprev_h, dprev_c = np.zeros((N, H)), np.zeros((N, H))
    for t in reversed(range(T)):
        step = lstm_step_backward(dh[:, t] + dprev_h, dprev_c, caches[t])
        dx[:, t], dprev_h, dprev_c, dWx_t, dWh_t, db_t = step
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return dx, dprev_h, dWx, dWh, db
    ### END SOLUTION


# %%
with check_it("Exercise 2.2"):
    check_sequence(lstm_forward, lstm_backward, lstm=True)

# %% nbgrader={"grade": true, "grade_id": "lstm_sequence", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): h and every gradient for N, T, D and H all different, a square
# case, random upstream gradients at every step, a non-contiguous x; against the reference
# and centred differences of your own forward pass.
### BEGIN HIDDEN TESTS
from course.grading import check

check("lstm_sequence", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · The layers around the recurrence
#
# A language model turns each character id into a vector (an **embedding**: row `x[n, t]`
# of a (V, D) matrix), runs the recurrence, maps each hidden state to V scores with the
# same affine layer at every step, and scores them with a softmax loss at every step.
#
# ### Exercise 3.1: embeddings and the temporal affine layer (2 points)
#
# `word_embedding_forward(x, W)`: `x` int (N, T), `W` (V, D); returns `(out (N, T, D),
# cache)`; `word_embedding_backward(dout, cache)` returns `dW` (V, D). An id that occurs
# twice gets both gradients: add them (`np.add.at`), never assign.
# `temporal_affine_forward(x, w, b)`: `x` (N, T, D), `w` (D, M), `b` (M,); returns
# `(out (N, T, M), cache)`; `temporal_affine_backward(dout, cache)` returns `(dx, dw, db)`.


# %% nbgrader={"grade": false, "grade_id": "temporal_layers_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def word_embedding_forward(x, W):
    """x int (N, T), W (V, D). Returns (out (N, T, D), cache)."""
    ### BEGIN SOLUTION
    return W[x], (x, W.shape)
    ### END SOLUTION


#| export
def word_embedding_backward(dout, cache):
    """dout (N, T, D). Returns dW (V, D)."""
    ### BEGIN SOLUTION
    x, shape = cache
    dW = np.zeros(shape)
    np.add.at(dW, x, dout)
    return dW
    ### END SOLUTION


#| export
def temporal_affine_forward(x, w, b):
    """x (N, T, D), w (D, M), b (M,). Returns (out (N, T, M), cache)."""
    ### BEGIN SOLUTION
    return x @ w + b, (x, w)
    ### END SOLUTION


#| export
def temporal_affine_backward(dout, cache):
    """dout (N, T, M). Returns (dx, dw, db)."""
    ### BEGIN SOLUTION
    x, w = cache
    D, M = w.shape
    dw = x.reshape(-1, D).T @ dout.reshape(-1, M)
    return dout @ w.T, dw, dout.sum(axis=(0, 1))
    ### END SOLUTION


# %%
with check_it("Exercise 3.1"):
    rng = np.random.default_rng(5)
    ids, W = np.array([[0, 3, 3], [2, 0, 3]]), rng.standard_normal((5, 4))
    out, cache = word_embedding_forward(ids, W)
    assert np.array_equal(out[1, 2], W[3]), "out[n, t] must be the row W[x[n, t]]"
    dout = rng.standard_normal(out.shape)
    dW = word_embedding_backward(dout, cache)
    error = gradient_error(lambda v: word_embedding_forward(ids, v)[0], W, dW, dout)
    print(f"dW relative error {error:.1e}; row 3 (three uses) gets {dW[3].round(3)}")
    assert error < 1e-7, f"dW: relative error {error:.1e} (a repeated id assigned, not added?)"
    affine_in = {
        "x": rng.standard_normal((2, 3, 4)),
        "w": rng.standard_normal((4, 5)),
        "b": rng.standard_normal(5),
    }
    out, cache = temporal_affine_forward(**affine_in)
    dout = rng.standard_normal(out.shape)
    for (name, value), grad in zip(
        affine_in.items(), temporal_affine_backward(dout, cache), strict=True
    ):
        error = gradient_error(
            lambda v, name=name: temporal_affine_forward(**{**affine_in, name: v})[0],
            value,
            grad,
            dout,
        )
        print(f"temporal affine d{name} relative error {error:.1e}")
        assert error < 1e-7, f"temporal affine d{name}: relative error {error:.1e}"

# %% nbgrader={"grade": true, "grade_id": "temporal_layers", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): embeddings with repeated ids, dW; the temporal affine layer
# and its gradients for N, T, D and M all different, non-contiguous x; against the
# reference and centred differences.
### BEGIN HIDDEN TESTS
from course.grading import check

check("temporal_layers", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3.2: `temporal_softmax_loss` (2 points)
#
# `x` (N, T, V) scores, `y` int (N, T) targets, `mask` bool (N, T): the softmax loss of
# every step where `mask` is true, **summed over time and averaged over N** (the
# convention of CS231n's captioning model; PyTorch's `CrossEntropyLoss` averages over every
# unmasked step instead). Padding steps (mask false) contribute nothing, to the loss or to
# `dx`. Scores may be large: subtract each row's maximum.


# %% nbgrader={"grade": false, "grade_id": "temporal_softmax_loss_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def temporal_softmax_loss(x, y, mask):
    """Returns (loss, dx (N, T, V))."""
    ### BEGIN SOLUTION
    N = x.shape[0]
    shifted = x - x.max(axis=2, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    mask = np.asarray(mask, dtype=bool)
    picked = np.take_along_axis(log_probs, y[:, :, None], axis=2)[:, :, 0]
    loss = -np.sum(picked * mask) / N
    dx = np.exp(log_probs)
    np.put_along_axis(dx, y[:, :, None], np.take_along_axis(dx, y[:, :, None], axis=2) - 1, axis=2)
    return loss, dx * mask[:, :, None] / N
    ### END SOLUTION


# %%
with check_it("Exercise 3.2"):
    rng = np.random.default_rng(6)
    N, T, V = 3, 5, 7
    scores, y = 0.01 * rng.standard_normal((N, T, V)), rng.integers(0, V, (N, T))
    full, _ = temporal_softmax_loss(scores, y, np.ones((N, T), dtype=bool))
    print(f"near-uniform scores: loss {full:.4f}, T log V = {T * np.log(V):.4f}")
    assert abs(full - T * np.log(V)) < 0.1, "the loss sums over time steps, averaged over N"
    mask = rng.random((N, T)) > 0.4
    loss, dx = temporal_softmax_loss(scores, y, mask)
    error = gradient_error(lambda v: temporal_softmax_loss(v, y, mask)[0], scores, dx)
    print(f"dx relative error {error:.1e}; |dx| at padding {np.abs(dx[~mask]).max():.1e}")
    assert error < 1e-7, f"dx: relative error {error:.1e}"
    big, _ = temporal_softmax_loss(1e3 * scores / 0.01, y, mask)
    print(f"scores near 1e3: loss {big:.1f}")
    assert np.isfinite(big), "scores near 1e3 overflow: subtract the largest score"

# %% nbgrader={"grade": true, "grade_id": "temporal_softmax_loss", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): the loss and dx with padding and masks, N, T and V all
# different, scores near 1e3, against the reference and centred differences.
### BEGIN HIDDEN TESTS
from course.grading import check

check("temporal_softmax_loss", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · Clipping the gradient
#
# Gradients that explode for one batch (part 7 shows why) would throw the weights far
# away in one step. Clipping by the **global norm** (Pascanu et al., 2013) rescales all the
# gradients together when their joint L2 norm exceeds a limit:
#
# $$\|g\| = \sqrt{\textstyle\sum_k \|g_k\|^2}, \qquad g_k \leftarrow g_k \cdot
# \frac{\text{max\_norm}}{\|g\|}\ \text{ if } \|g\| > \text{max\_norm}.$$
#
# The direction of the step is kept; only its length is capped.
#
# ### Exercise 4.1: `clip_grad_norm` (2 points)
#
# `grads` a dict of arrays; returns `(clipped, total_norm)`: a new dict of the same keys
# and shapes (leave `grads` as it was) and the global norm **before** clipping.


# %% nbgrader={"grade": false, "grade_id": "clip_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def clip_grad_norm(grads, max_norm):
    """Scale every array of grads by one factor so that their global L2 norm is at most
    max_norm. Returns (clipped, total_norm)."""
    ### BEGIN SOLUTION
    total_norm = float(np.sqrt(sum(np.sum(np.square(g)) for g in grads.values())))
    scale = max_norm / total_norm if total_norm > max_norm else 1.0
    return {name: g * scale for name, g in grads.items()}, total_norm
    ### END SOLUTION


# %%
with check_it("Exercise 4.1"):
    grads = {"a": np.array([3.0, 0.0]), "b": np.array([[0.0], [4.0]])}
    clipped, total = clip_grad_norm(grads, 1.0)
    print(f"total norm {total} (expected 5.0); clipped a {clipped['a']}, b {clipped['b'].ravel()}")
    assert np.isclose(total, 5.0), "the global norm of [3, 0] and [[0], [4]] is 5"
    assert np.allclose(clipped["a"], [0.6, 0.0]) and np.allclose(clipped["b"], [[0.0], [0.8]]), (
        "both arrays must be scaled by max_norm / total norm = 0.2"
    )
    assert np.array_equal(grads["a"], [3.0, 0.0]), "clip_grad_norm changed its input"
    same, _ = clip_grad_norm(grads, 10.0)
    assert np.allclose(same["b"], grads["b"]), "below the limit nothing changes"

# %% nbgrader={"grade": true, "grade_id": "clip_grad_norm", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): several arrays of different shapes, global norms above and
# below the limit, the total norm, the input left as it was.
### BEGIN HIDDEN TESTS
from course.grading import check

check("clip_grad_norm", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5 · A character-level language model
#
# Genesis (King James Version, public domain; `course/datasets/README.md`), 60 distinct
# characters. The model reads characters and predicts the next one at every step:
# embedding (V, D) → RNN or LSTM (H) → temporal affine (H, V) → `temporal_softmax_loss`.
# `CharModel` below is built from your layers only; it is given, not graded on its own.

# %%
data = char_data()
V = len(data.chars)
print(f"{len(data.train):,} training and {len(data.val):,} validation characters, V = {V}")
print(repr(data.decode(data.train[:120])))


class CharModel:
    def __init__(self, V, D=16, H=48, cell="rnn", weight_scale=None, forget_bias=0.0, seed=0):
        rng = np.random.default_rng(seed)
        width = 4 * H if cell == "lstm" else H
        self.cell, self.H = cell, H
        self.params = {
            "W_embed": rng.standard_normal((V, D)),
            "Wx": rng.standard_normal((D, width)) / np.sqrt(D),
            "Wh": rng.standard_normal((H, width)) / np.sqrt(H),
            "b": np.zeros(width),
            "W_out": 0.01 * rng.standard_normal((H, V)),
            "b_out": np.zeros(V),
        }
        if weight_scale is not None:  # Wh scaled to a chosen spectral radius (part 7)
            self.params["Wh"] *= weight_scale / spectral_radius(self.params["Wh"][:, :H])
        if cell == "lstm":
            self.params["b"][H : 2 * H] = forget_bias

    def loss(self, ids, mask=None):
        """ids (N, T + 1): inputs ids[:, :-1], targets ids[:, 1:]. Returns (loss, grads)."""
        p = self.params
        x, y = ids[:, :-1], ids[:, 1:]
        mask = np.ones(y.shape, dtype=bool) if mask is None else mask
        h0 = np.zeros((len(ids), self.H))
        forward, backward = (
            (lstm_forward, lstm_backward) if self.cell == "lstm" else (rnn_forward, rnn_backward)
        )
        emb, emb_cache = word_embedding_forward(x, p["W_embed"])
        h, h_cache = forward(emb, h0, p["Wx"], p["Wh"], p["b"])
        scores, out_cache = temporal_affine_forward(h, p["W_out"], p["b_out"])
        loss, dscores = temporal_softmax_loss(scores, y, mask)
        grads = {}
        dh, grads["W_out"], grads["b_out"] = temporal_affine_backward(dscores, out_cache)
        demb, _, grads["Wx"], grads["Wh"], grads["b"] = backward(dh, h_cache)
        grads["W_embed"] = word_embedding_backward(demb, emb_cache)
        return loss, grads

    def sample(self, start, length, temperature=1.0, seed=0):
        """Characters drawn one at a time from softmax(scores / temperature)."""
        rng, p = np.random.default_rng(seed), self.params
        h, c = np.zeros((1, self.H)), np.zeros((1, self.H))
        ids = list(data.encode(start))
        for step in range(len(ids) + length - 1):
            x = p["W_embed"][[ids[step]]]
            if self.cell == "lstm":
                h, c, _ = lstm_step_forward(x, h, c, p["Wx"], p["Wh"], p["b"])
            else:
                h, _ = rnn_step_forward(x, h, p["Wx"], p["Wh"], p["b"])
            if step + 1 >= len(ids):
                scores = (h @ p["W_out"] + p["b_out"])[0] / temperature
                probs = np.exp(scores - scores.max())
                ids.append(int(rng.choice(V, p=probs / probs.sum())))
        return data.decode(ids)


def spectral_radius(W):
    return float(np.max(np.abs(np.linalg.eigvals(W))))


def batches(ids, N, T, seed=0):
    """Endless batches of N random windows of T + 1 characters."""
    rng = np.random.default_rng(seed)
    while True:
        starts = rng.integers(0, len(ids) - T - 1, N)
        yield ids[starts[:, None] + np.arange(T + 1)]


def train(model, steps, T=24, N=16, learning_rate=2e-2, max_norm=5.0, seed=0, desc=None):
    """Adam (yours, from 04) on the loss per character; gradients clipped to max_norm
    (None: not clipped). Returns the loss per character at every step."""
    configs = {name: {"learning_rate": learning_rate} for name in model.params}
    losses, stream = [], batches(data.train, N, T, seed)
    for _ in tqdm(range(steps), desc=desc, leave=False, disable=desc is None):
        loss, grads = model.loss(next(stream))
        if max_norm is not None:
            grads, _ = clip_grad_norm(grads, max_norm)
        for name, grad in grads.items():
            model.params[name], configs[name] = adam(model.params[name], grad, configs[name])
        losses.append(loss / T)
    return np.array(losses)


def val_loss(model, T=64, windows=64):
    """The validation loss per character, over fixed windows."""
    stream = batches(data.val, windows, T, seed=123)
    return model.loss(next(stream))[0] / T


# %% [markdown]
# ### Predict first: the loss at initialisation
#
# `W_out` starts at 0.01 times a normal draw, so every score is near 0. Write
# `predicted_initial_loss(V, T)`: the loss `temporal_softmax_loss` returns at
# initialisation for sequences of T steps, no padding (graded in part 6, within 2%).


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_initial_loss(V, T):
    """The loss (summed over T steps, averaged over N) of near-uniform predictions."""
    ### BEGIN SOLUTION
    return T * np.log(V)
    ### END SOLUTION


def predicted_gradient_ratio(radius, steps):
    """For a linear RNN (tanh removed) whose Wh is `radius` times an orthogonal matrix:
    ||dh_{t - steps}|| / ||dh_t||."""
    ### BEGIN SOLUTION
    return radius**steps
    ### END SOLUTION


def predicted_gradient_scale(T1, T2):
    """The loss sums over T time steps: by what factor does the gradient's norm grow from
    windows of T1 to windows of T2 steps (same data statistics, at initialisation)?"""
    ### BEGIN SOLUTION
    return T2 / T1
    ### END SOLUTION


# %% [markdown]
# ### Training
#
# 200 Adam steps on batches of 16 windows of 24 characters, gradients clipped to a global
# norm of 5, three seeds: a vanilla RNN of 48 units, and beside it an LSTM of 48 units
# (4 times the recurrent weights) on the same batches and the same budget, with its
# forget-gate bias $b_f$ at 0 and at 1 (part 7 comes back to it). None is tuned for this
# comparison: all three use `train`'s learning rate. First the loss at initialisation
# beside your prediction; the curves show the loss per character (divided by T).

# %%
STEPS, SEEDS = 200, (0, 1, 2)
first = CharModel(V).loss(next(batches(data.train, 16, 24)))[0]
print(f"loss at initialisation {first:.3f}; you predicted {predicted_initial_loss(V, 24):.3f}")
settings = {"rnn": ("rnn", 0.0), "lstm, b_f = 0": ("lstm", 0.0), "lstm, b_f = 1": ("lstm", 1.0)}
runs = {name: [] for name in settings}
for name, (cell, forget_bias) in settings.items():
    for seed in tqdm(SEEDS, desc=name):
        model = CharModel(V, cell=cell, forget_bias=forget_bias, seed=seed)
        runs[name].append((train(model, STEPS, seed=seed), val_loss(model), model))
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for name, found in runs.items():
    curves = np.array([r[0] for r in found])
    vals = [r[1] for r in found]
    label = f"{name}: validation {np.mean(vals):.3f} ± {np.std(vals):.3f} per char (3 seeds)"
    print(label)
    line = ax.plot(curves.mean(0), label=label)[0]
    ax.fill_between(range(STEPS), curves.min(0), curves.max(0), color=line.get_color(), alpha=0.2)
ax.axhline(np.log(V), color="gray", ls="--", label="log V: uniform guess")
ax.set(xlabel="Adam step", ylabel="training loss per character",
       title="RNN and LSTM learn the text's letters and words: well below log V")  # fmt: skip
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Sampling: the scores divided by a **temperature** before the softmax. Low temperatures
# sharpen the distribution (repetitive, likely text), high ones flatten it (towards
# uniform noise).

# %%
best = min(runs["rnn"], key=lambda r: r[1])[2]
for temperature in (0.5, 1.0, 1.5):
    print(f"--- temperature {temperature}:")
    print(best.sample("And God said", 120, temperature=temperature, seed=1))

# %% nbgrader={"grade": true, "grade_id": "char_training", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): a character model built from your layers trained for a fixed
# number of SGD steps from a fixed start, clipped with your clip_grad_norm: its loss curve
# against the reference's at every step; and the leak signature, unclipped with a large
# spectral radius: your gradient norms must grow as the reference's do.
### BEGIN HIDDEN TESTS
from course.grading import check

check("char_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 6 · Predictions
#
# The cell of part 5 holds three predictions (3 points, each accepted within 2%, asked
# about settings you do not see): `predicted_initial_loss(V, T)` (measured above),
# `predicted_gradient_ratio(radius, steps)` and `predicted_gradient_scale(T1, T2)`
# (measured in part 7). Write them before you run part 7.

# %% nbgrader={"grade": true, "grade_id": "recurrent_predictions", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): each prediction within its band.
### BEGIN HIDDEN TESTS
from course.grading import check

check("recurrent_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 7 · The leaks, measured
#
# ### Exploding and vanishing gradients
#
# A loss reads only the last hidden state, $h_T$; how large is its gradient at each
# earlier $h_t$? For the RNN each step back multiplies by $\text{diag}(1 - h_t^2)\,W_h^\top$,
# so the spectral radius of $W_h$ decides: below 1 the gradient shrinks geometrically,
# above 1 it grows until tanh saturates. Measured with your step functions, $W_h$ a random
# orthogonal matrix times the radius, small inputs (tanh nearly linear), 3 seeds; first
# your prediction 2, against a linear RNN. Beside it the LSTM, its four blocks of $W_h$ at
# the same radius, with the forget-gate bias $b_f$ at 0 and at 1 (its gradient counts the
# cell state's too: $\|dh_t\| + \|dc_t\|$).


# %%
def gradient_norms(
    radius, cell="rnn", T=40, H=32, D=8, N=4, forget_bias=0.0, seed=0, forget_gates=None
):
    """||dh_t|| for t = T .. 0, for a loss sum(h_T * g) with g random (and ||dc_t|| too
    for the LSTM). forget_gates: a list that receives the LSTM's forget gate at each
    step, (N, H), recomputed from the step's inputs."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((H, H)))
    x = 0.01 * rng.standard_normal((N, T, D))
    if cell == "rnn":
        Wx, Wh, b = 0.1 * rng.standard_normal((D, H)), radius * q, np.zeros(H)
    else:
        Wx = 0.1 * rng.standard_normal((D, 4 * H))
        Wh = np.concatenate([radius * np.linalg.qr(rng.standard_normal((H, H)))[0]
                             for _ in range(4)], axis=1)  # fmt: skip
        b = np.zeros(4 * H)
        b[H : 2 * H] = forget_bias
    h, c, caches = np.zeros((N, H)), np.zeros((N, H)), []
    for t in range(T):
        if cell == "rnn":
            h, cache = rnn_step_forward(x[:, t], h, Wx, Wh, b)
        else:
            if forget_gates is not None:
                gates = x[:, t] @ Wx + h @ Wh + b
                forget_gates.append(1 / (1 + np.exp(-gates[:, H : 2 * H])))
            h, c, cache = lstm_step_forward(x[:, t], h, c, Wx, Wh, b)
        caches.append(cache)
    dh, dc = rng.standard_normal((N, H)), np.zeros((N, H))
    norms = [np.linalg.norm(dh)]
    for cache in reversed(caches):
        if cell == "rnn":
            _, dh, *_ = rnn_step_backward(dh, cache)
        else:
            _, dh, dc, *_ = lstm_step_backward(dh, dc, cache)
        norms.append(np.linalg.norm(dh) + np.linalg.norm(dc))
    return np.array(norms)


radii, steps_back = (0.5, 0.9, 1.0, 1.1, 1.5), 20
columns = {"RNN": ("rnn", 0.0), "LSTM, b_f = 0": ("lstm", 0.0), "LSTM, b_f = 1": ("lstm", 1.0)}
print(f"||d_(T-{steps_back})|| / ||d_T||, mean ± std over 3 seeds")
print(f"{'radius':>6} {'linear RNN, predicted':>22}" + "".join(f"{c:>20}" for c in columns))
for r in radii:
    row = f"{r:>6} {predicted_gradient_ratio(r, steps_back):>22.3g}"
    for cell, bias in columns.values():
        norms = np.array([gradient_norms(r, cell, forget_bias=bias, seed=s) for s in SEEDS])
        ratios = norms[:, steps_back] / norms[:, 0]
        row += f"{f'{ratios.mean():.3g} ± {ratios.std():.2g}':>20}"
    print(row)


def explore_radius(radius=1.0, cell="rnn", forget_bias=0.0):
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    for seed in SEEDS:
        norms = gradient_norms(radius, cell=cell, forget_bias=forget_bias, seed=seed)
        ax.semilogy(np.maximum(norms, 1e-300), alpha=0.8, label=f"seed {seed}")
    ax.set(
        xlabel="steps back in time from the loss",
        ylabel="||dh_t|| (+ ||dc_t||)",
        title=f"{cell}, spectral radius {radius:g}"
        + (f", forget bias {forget_bias:g}" if cell == "lstm" else "")
        + ": does the gradient survive 40 steps?",
    )
    plain_log_labels(ax)
    ax.legend()
    plt.show()


_ = explore_plot(
    explore_radius,
    shown_when={"forget_bias": lambda values: values["cell"] == "lstm"},  # the RNN has no gate
    radius=widgets.FloatSlider(value=1.0, min=0.2, max=3.0, step=0.1),
    cell=["rnn", "lstm"],
    forget_bias=widgets.FloatSlider(value=0.0, min=-2.0, max=4.0, step=0.5),
)

# %% [markdown]
# Below a radius of 1 the measured ratios follow your prediction for a linear RNN: the
# gradient shrinks geometrically, and 20 steps back little is left to learn from. Above
# 1 it grows, but less than predicted already at 1.1, and far less at 1.5: the hidden
# states grow too, tanh saturates and $(1 - h_t^2)$ holds the gradient back (compare the
# measured ratios with the predictions). Explosion is a phase of training, which clipping
# caps.
#
# The LSTM's columns tell another story: the path back along its cell state multiplies
# by the forget gate, $dc_{t-1} = f_t \odot dc_t + \dots$, and at initialisation $f_t
# \approx \sigma(b_f)$. With $b_f = 0$ that path halves it at each step back: the ratio is far
# below 1 at every radius in the table, 1.5 included, where the RNN's is above 1; $b_f =
# 1$ keeps far more (compare the columns). $W_h$ still matters (the LSTM's ratios grow
# with the radius, through the gates' inputs), but the forget gate sets the scale. Move
# the sliders to see it.
#
# ### The forget-gate bias: 0 against 1
#
# At initialisation $f = \sigma(b_f + \dots) \approx \sigma(b_f)$: $\sigma(0) = 0.5$
# halves the memory's gradient at every step, $\sigma(1) \approx 0.73$ keeps far more
# (Jozefowicz et al., 2015, recommend 1). Measured: the LSTM's gradient 40 steps back, with
# a small $W_h$ (radius 0.5), 3 seeds.

# %%
for bias in (0.0, 1.0, 2.0):
    reach, products = [], []
    for s in SEEDS:
        gates = []
        reach.append(gradient_norms(0.5, "lstm", forget_bias=bias, seed=s, forget_gates=gates))
        products.append(np.prod(gates, axis=0).mean())  # each unit's 40 gates, multiplied
    ratio = np.array(reach)[:, -1] / np.array(reach)[:, 0]
    print(
        f"forget bias {bias}: ||d_0|| / ||d_40|| = {ratio.mean():.2e} ± {ratio.std():.1e};",
        f"product of the 40 forget gates, mean over units {np.mean(products):.2e};",
        f"sigmoid({bias})**40 = {(1 / (1 + np.exp(-bias))) ** 40:.2e};",
        f"measured ratio / product of the gates {ratio.mean() / np.mean(products):.0f}",
    )

# %% [markdown]
# The forget gates measured along the way multiply to $\sigma(b_f)^{40}$ (the inputs
# and $W_h$ are small, so each gate sits at $\sigma(b_f)$): that is the path along the
# cell state alone. The measured ratio is larger, by about 30 times at $b_f = 2$ and
# about 1000 times at $b_f = 0$ (the last column), so most of the gradient that
# reaches step 0 did not go all the way along the cell state: it took paths that leave
# it through $h$ and $W_h$ into the gates at some steps, and those matter the more, the
# faster the cell state forgets. Both grow steeply with $b_f$: the gradient reaches much
# further with $b_f = 1$ than with 0. Does the LSTM then train better?
# Part 5 trained it with both biases on the same batches for the same 200 steps, 3 seeds:
# the training loss at the end (the mean of the last 20 steps) and the validation loss,
# the RNN beside them.

# %%
for name, found in runs.items():
    final = [curve[-20:].mean() for curve, _, _ in found]
    vals = [val for _, val, _ in found]
    print(
        f"{name:>13}: training loss (last 20 steps) {np.mean(final):.3f} ± {np.std(final):.3f},",
        f"validation {np.mean(vals):.3f} ± {np.std(vals):.3f} per character (3 seeds)",
    )

# %% [markdown]
# Both LSTMs end below the RNN, but $b_f = 1$ does not end below $b_f = 0$ here: the gap
# between them is within the seeds' spread. A gradient that reaches further back did not,
# by itself, give a lower loss in this budget on this text, whose samples above show
# mostly short-range structure (letters, word-like strings). The next experiment builds
# a task that needs a known reach, and cuts the gradient's.
#
# ### Truncated backpropagation through time: the window against the delay
#
# A long sequence is trained in **windows** of W steps: the hidden state is carried from
# one window into the next (the forward pass sees the whole past), but the backward pass
# stops at the window's start (`rnn_backward`'s `dh0` is dropped). A target that depends
# on the input d steps earlier then gets a gradient through that input only if both fall
# in one window, which needs W > d.
#
# The **copy task**: random symbols from K = 4, and at every step the model must output
# the symbol it read DELAY = 6 steps earlier. An RNN of 24 units built from your layers
# and your `adam`, trained on the same 60,000 symbols (so the same compute) with windows
# of 4, 6, 8 and 16 steps, 3 seeds; then its accuracy on the delayed symbol on fresh
# streams read from $h = 0$. **Predict first** (not graded): a model that has not learnt
# the delay can only guess; what accuracy does guessing give? The cell prints it.

# %%
K, DELAY = 4, 6


def copy_task(N, length, seed):
    """Symbols x (N, length), targets y: the symbol DELAY steps earlier (mask: where one is)."""
    x = np.random.default_rng(seed).integers(0, K, (N, length))
    mask = np.broadcast_to(np.arange(length) >= DELAY, x.shape)
    return x, np.roll(x, DELAY, axis=1), mask


def copy_forward(p, x, h0):
    emb, emb_cache = word_embedding_forward(x, p["W_embed"])
    h, h_cache = rnn_forward(emb, h0, p["Wx"], p["Wh"], p["b"])
    scores, out_cache = temporal_affine_forward(h, p["W_out"], p["b_out"])
    return scores, h[:, -1], (emb_cache, h_cache, out_cache)


def copy_accuracy(window, symbols=60_000, N=32, H=24, seed=0):
    """Trained with truncated BPTT in windows of `window` steps; returns the accuracy on
    the delayed symbol."""
    p = CharModel(K, D=K, H=H, seed=seed).params
    configs = {name: {"learning_rate": 1e-2} for name in p}
    x, y, mask = copy_task(N, symbols // N, seed)
    h = np.zeros((N, H))
    for start in range(0, x.shape[1] - window + 1, window):
        part = slice(start, start + window)
        scores, h, (emb_cache, h_cache, out_cache) = copy_forward(p, x[:, part], h)
        _, dscores = temporal_softmax_loss(scores, y[:, part], mask[:, part])
        grads = {}
        dh, grads["W_out"], grads["b_out"] = temporal_affine_backward(dscores / window, out_cache)
        # The gradient into the carried state (dh0) is dropped: the truncation.
        demb, _, grads["Wx"], grads["Wh"], grads["b"] = rnn_backward(dh, h_cache)
        grads["W_embed"] = word_embedding_backward(demb, emb_cache)
        grads, _ = clip_grad_norm(grads, 1.0)
        for name in p:
            p[name], configs[name] = adam(p[name], grads[name], configs[name])
    x, y, mask = copy_task(64, 120, seed + 100)
    scores, _, _ = copy_forward(p, x, np.zeros((64, H)))
    return float((scores.argmax(axis=2) == y)[mask].mean())


windows = (4, 6, 8, 16)
accuracy = {w: [copy_accuracy(w, seed=s) for s in SEEDS] for w in tqdm(windows, desc="TBPTT")}
print(f"guessing among K = {K} symbols: accuracy {1 / K:.2f}")
for w in windows:
    print(
        f"window {w:>2} ({'longer' if w > DELAY else 'not longer'} than the delay {DELAY}):",
        f"accuracy {np.mean(accuracy[w]):.3f} ± {np.std(accuracy[w]):.3f} (3 seeds)",
    )
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
ax.errorbar(windows, [np.mean(accuracy[w]) for w in windows],
            yerr=[np.std(accuracy[w]) for w in windows], marker="o", capsize=3,
            label="mean ± std, 3 seeds")  # fmt: skip
ax.axhline(1 / K, color="gray", ls="--", label="guessing, 1/K")
ax.axvline(DELAY, color="red", ls=":", label=f"the delay, {DELAY} steps")
ax.set(xlabel="TBPTT window (steps)", ylabel="accuracy on the delayed symbol", ylim=(0, 1.05),
       title="A window no longer than the delay cannot learn it")  # fmt: skip
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Windows of 4 and 6 steps stay near guessing; 8 and 16 learn the delay. A window of
# exactly the delay is not enough: for every target in it, the symbol d steps back lies
# in the window before. What little is above guessing can come only through the forward
# pass, which is not truncated: the output layer is trained and can read what the hidden
# state happens to keep of the past, but no gradient teaches the recurrence to keep it.
# The same data and compute, and the short windows even take more Adam steps: the window
# is a limit on what truncated BPTT can learn. Choose it longer than the longest
# dependency the model must learn (and pay in memory, which grows with W).

# %% [markdown]
# ### Clipping the global norm, each array, or each element
#
# Clipping each array to the limit on its own, or each element to $[-c, c]$ (what
# `clip_grad_value_` does), changes the step's **direction**: large gradients lose more
# than small ones. Nor does either cap the step the way the global norm does: with $k$
# arrays each clipped to norm $c$, the whole step can reach $\sqrt{k}\, c$, and clipping
# each of $n$ elements to $c$ allows $\sqrt{n}\, c$. Measured on the gradients of the
# character model at initialisation, with the RNN's $W_h$ at radius 1.5 (a large
# gradient), 3 seeds: the angle between the clipped and the true gradient, and the global
# norm of the clipped gradient (the limit is 1; the elements are clipped to 1% of the
# largest entry):


# %%
def flatten(grads):
    return np.concatenate([np.ravel(grads[name]) for name in sorted(grads)])


def angle(a, b):
    cosine = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.degrees(np.arccos(np.clip(cosine, -1, 1))))


angles = {"global norm": [], "each array": [], "each element": []}
clipped_norms = {name: [] for name in angles}
for seed in SEEDS:
    model = CharModel(V, weight_scale=1.5, seed=seed)
    _, grads = model.loss(next(batches(data.train, 16, 24, seed=seed)))
    limit = 1.0
    per_array = {name: clip_grad_norm({name: g}, limit)[0][name] for name, g in grads.items()}
    largest = max(np.abs(g).max() for g in grads.values())
    per_element = {name: np.clip(g, -0.01 * largest, 0.01 * largest) for name, g in grads.items()}
    true = flatten(grads)
    clipped = {
        "global norm": flatten(clip_grad_norm(grads, limit)[0]),
        "each array": flatten(per_array),
        "each element": flatten(per_element),
    }
    for name, step in clipped.items():
        angles[name].append(angle(step, true))
        clipped_norms[name].append(np.linalg.norm(step))
print(f"{len(grads)} arrays (sqrt(k) = {np.sqrt(len(grads)):.2f}); true global norm",
      f"{np.linalg.norm(true):.1f} (last seed)")  # fmt: skip
for name, values in angles.items():
    print(
        f"{name:>13}: angle to the true gradient",
        f"{np.mean(values):5.1f} ± {np.std(values):.1f} degrees; global norm after clipping",
        f"{np.mean(clipped_norms[name]):.2f} ± {np.std(clipped_norms[name]):.2f}",
    )

# %% [markdown]
# Only the global norm leaves a step of exactly the limit. Clipped array by array or
# element by element, the step is larger than the limit (the global norms printed) and
# points elsewhere: a limit tuned for one way of clipping is not the same limit for
# another.

# %% [markdown]
# ### The sequence length is a factor of the learning rate
#
# `temporal_softmax_loss` sums over the T steps, so the gradient grows with T: a longer
# window takes a longer step at the same learning rate (with SGD; Adam divides the scale
# away). Your prediction 3 counts T times the same gradient; measured at initialisation,
# 3 seeds, the norm grows less than proportionally, and falls further behind the longer
# the window: 8 times the length gives between 6 and 7 times the norm (printed). The
# steps' gradients do not all point the same way, so they partly cancel; still, a fixed
# learning rate tuned for one length is wrong for another.

# %%
lengths = (8, 16, 32, 64)
norms = {T: [] for T in lengths}
for seed in SEEDS:
    model = CharModel(V, seed=seed)
    for T in lengths:
        _, grads = model.loss(next(batches(data.train, 16, T, seed=seed)))
        norms[T].append(np.linalg.norm(flatten(grads)))
for T in lengths:
    ratio = np.array(norms[T]) / np.array(norms[lengths[0]])
    print(
        f"T = {T:>2}: gradient norm {np.mean(norms[T]):.3f} ± {np.std(norms[T]):.3f},"
        f" {ratio.mean():.2f} times T = 8's (you predicted {predicted_gradient_scale(8, T):.2f})"
    )

# %% [markdown]
# ### A missing mask teaches the model to predict padding
#
# Sequences of different lengths are padded to one length; the mask keeps the padding out
# of the loss. Without it, the model is trained to predict the padding character after
# every short sequence, and the padding steps pull its gradient. Measured: batches of
# windows cut to random lengths and padded with a space to 32 characters, the model
# trained with and without the mask (80 steps each, 3 seeds), then the probability it gives to a
# space after real text in the validation set, against the space's true frequency there.

# %%
PAD = data.chars.index(" ")


def padded_batches(N=16, T=32, seed=0):
    rng = np.random.default_rng(seed)
    for ids in batches(data.train, N, T, seed):
        lengths = rng.integers(8, T + 1, N)
        mask = np.arange(T)[None, :] < lengths[:, None]
        ids = ids.copy()
        ids[:, 1:][~mask] = PAD
        yield ids, mask


def space_probability(model, T=32):
    ids = next(batches(data.val, 64, T, seed=7))
    p = model.params
    emb, _ = word_embedding_forward(ids[:, :-1], p["W_embed"])
    h, _ = rnn_forward(emb, np.zeros((len(ids), model.H)), p["Wx"], p["Wh"], p["b"])
    scores, _ = temporal_affine_forward(h, p["W_out"], p["b_out"])
    probs = np.exp(scores - scores.max(axis=2, keepdims=True))
    return float((probs[..., PAD] / probs.sum(axis=2)).mean())


found = {"with the mask": [], "without the mask": []}
for seed in tqdm(SEEDS, desc="mask"):
    for name in found:
        model = CharModel(V, seed=seed)
        configs = {k: {"learning_rate": 1e-2} for k in model.params}
        stream = padded_batches(seed=seed)
        for _ in range(80):
            ids, mask = next(stream)
            _, grads = model.loss(ids, mask if name == "with the mask" else None)
            grads, _ = clip_grad_norm(grads, 5.0)
            for k, g in grads.items():
                model.params[k], configs[k] = adam(model.params[k], g, configs[k])
        found[name].append(space_probability(model))
print(f"a space's frequency in the validation text: {np.mean(data.val == PAD):.3f}")
for name, values in found.items():
    print(
        f"{name:>16}: mean predicted probability of a space",
        f"{np.mean(values):.3f} ± {np.std(values):.3f}",
    )

# %% [markdown]
# ## What to take away
#
# - Backpropagation through time multiplies by the recurrent matrix at every step: its
#   spectral radius (and the saturation of tanh) decides whether gradients vanish or
#   explode. The LSTM's cell state routes gradients through gates instead, and the
#   forget-gate bias sets how far they reach at the start; a further reach is not by
#   itself a lower loss (the character model here trained no better with $b_f = 1$).
# - Truncated BPTT cannot learn a dependency longer than its window: the gradient never
#   connects the target to the input it needs. The window must be longer than the
#   delay, not equal to it.
# - Clip the **global** norm: it caps the step and keeps its direction; clipping each
#   array or element turns it.
# - A loss summed over time steps ties the effective learning rate to the sequence length;
#   padding needs a mask, or the model learns the padding.
