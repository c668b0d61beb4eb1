# %% [markdown]
# # 02 · Linear classifiers
#
# A linear classifier gives each class a score, $s = x W$, one column of $W$ a class. Two
# losses turn scores into a number to minimise: the multiclass **SVM** (hinge) loss and the
# **softmax** (cross-entropy) loss. You write each twice, with loops and vectorised, with
# its gradient, and train both on real handwritten digits.
#
# **The leak shown here:** the loss is computed in floating point. A textbook softmax
# overflows on large scores; the usual fix (subtract the maximum) still takes the log of a
# probability that has rounded to zero. Either way the loss is `inf` or `nan`, training
# stops, and nothing in the maths was wrong. The learning rate and the regularisation
# strength leak in too: the same loss, trained with other settings, learns other weights.
#
# | Part | You write | Points |
# |---|---|---|
# | 1 · Multiclass SVM loss | `svm_loss_naive`, `svm_loss_vectorized` | 5 |
# | 2 · Softmax loss, and its numerics | two predictions (2), `softmax_loss_naive` (1), `softmax_loss_vectorized` (2), both at scores near 1e3 (2) | 7 |
# | 3 · Training on digits | nothing new: SGD, weight images, a sweep | 0 |
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

from course.data import digits, load_digits
from course.gradcheck import gradient_error, rel_error
from course.notebook import check_it, explore_plot, show_source
from course.plots import image_grid, loss_curve, plain_log_labels, sweep_heatmap, weight_images
from course.training import accuracy, train_linear

# %% [markdown]
# ## 0 · The data: handwritten digits
#
# 1,797 digits written by 43 people, scanned, and reduced to 8x8 pixels with values 0 to
# 16 (the UCI "optical recognition" set; `course/datasets/README.md` has its source and
# licence). `digits()` scales the pixels to [0, 1], flattens each image into 64 numbers and
# splits the set once, per class: train to fit, validation to choose settings, test to
# report once at the end.

# %%
images, labels = load_digits()
image_grid(images[:20], labels[:20], title="The first 20 digits, with their labels")
plt.show()

data = digits()
for part in ("train", "val", "test"):
    X_part, y_part = getattr(data, f"X_{part}"), getattr(data, f"y_{part}")
    print(f"{part:>5}: X {X_part.shape}, y {y_part.shape}, counts per class {np.bincount(y_part)}")

# %% [markdown]
# Two steps of preprocessing. Subtract the mean training image (computed on the training
# set only, so no information leaks from the test set), and append a constant 1 to every
# row: the **bias trick**, which folds the biases into $W$'s last row, so that $W$ is
# (65, 10) and the score is just $x W$.

# %%
mean_image = data.X_train.mean(axis=0)


def preprocess(X):
    return np.hstack([X - mean_image, np.ones((len(X), 1))])


X_train, X_val, X_test = (preprocess(X) for X in (data.X_train, data.X_val, data.X_test))
y_train, y_val, y_test = data.y_train, data.y_val, data.y_test
num_classes = 10
print("X_train", X_train.shape, " y_train", y_train.shape)

# %% [markdown]
# ## 1 · The multiclass SVM loss
#
# For one example $x_i$ with label $y_i$ and scores $s = x_i W$, the hinge loss asks the
# correct class to win by a margin of 1:
#
# $$L_i = \sum_{j \ne y_i} \max(0,\; s_j - s_{y_i} + 1).$$
#
# The full loss averages over the $N$ examples and adds L2 regularisation:
# $L = \frac{1}{N} \sum_i L_i + \lambda \sum W^2$. Each positive margin contributes
# $+x_i$ to column $j$ of the gradient and $-x_i$ to column $y_i$; the regulariser
# contributes $2 \lambda W$.
#
# ### Exercise 1.1: `svm_loss_naive`, with loops
#
# Loop over examples and classes; compute the gradient in the same loops.


# %% nbgrader={"grade": false, "grade_id": "svm_loss_naive_solution", "locked": false, "schema_version": 3, "solution": true}
def svm_loss_naive(W, X, y, reg):
    """Multiclass SVM loss with loops.

    W: (D, C) weights; X: (N, D) examples; y: (N,) labels in [0, C); reg: L2 strength.
    Returns (loss, dW): the loss averaged over N plus reg * sum(W * W), and its gradient
    with respect to W, shaped like W.
    """
    dW = np.zeros_like(W)
    loss = 0.0
    ### BEGIN SOLUTION
    num_train, num_classes = X.shape[0], W.shape[1]
    for i in range(num_train):
        scores = X[i] @ W
        correct = scores[y[i]]
        for j in range(num_classes):
            if j == y[i]:
                continue
            margin = scores[j] - correct + 1
            if margin > 0:
                loss += margin
                dW[:, j] += X[i]
                dW[:, y[i]] -= X[i]
    loss = loss / num_train + reg * np.sum(W * W)
    dW = dW / num_train + 2 * reg * W
    ### END SOLUTION
    return loss, dW


# %% [markdown]
# **Check it.** At initialisation (tiny random $W$) every score is about 0, so every
# margin is about 1 and the loss is about $C - 1 = 9$: a first sanity check of any
# implementation. Then the gradient against centred differences (`course.gradcheck`,
# the checker you wrote in 01), with and without regularisation, on a small random problem
# with N, D and C all different (so that a missing transpose shows). Not on the digits:
# corner pixels are 0 in almost every image, their gradients are 0 up to rounding, and a
# relative error between two roundings means nothing.

# %%
rng = np.random.default_rng(0)
W0 = 1e-4 * rng.standard_normal((X_train.shape[1], num_classes))
W_small, X_small = rng.standard_normal((7, 4)), rng.standard_normal((20, 7))
y_small = rng.integers(0, 4, 20)


def check_gradient(loss_fn):
    """dW of loss_fn against centred differences on the small problem, with and without reg."""
    for reg in (0.0, 0.1):
        _, dW = loss_fn(W_small, X_small, y_small, reg)
        error = gradient_error(
            lambda W, reg=reg: loss_fn(W, X_small, y_small, reg)[0], W_small.copy(), dW
        )
        print(f"reg = {reg}: relative error of dW {error:.1e} (below 1e-7 is right)")
        assert error < 1e-7, f"{loss_fn.__name__}: dW is wrong (reg = {reg})"


with check_it("Exercise 1.1"):
    loss, _ = svm_loss_naive(W0, X_train[:100], y_train[:100], 0.0)
    print(f"SVM loss at initialisation: {loss:.4f} (expect about {num_classes - 1})")
    check_gradient(svm_loss_naive)


# %% nbgrader={"grade": true, "grade_id": "svm_loss_naive", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): loss and gradient on hidden W, X, y (N, D and C all different),
# with and without regularisation, at ordinary scores and at scores near 1e3; and your
# gradient against centred differences of your own loss.
### BEGIN HIDDEN TESTS
from course.grading import check

check("svm_loss_naive", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.2: `svm_loss_vectorized`, without loops
#
# The same loss and gradient with array operations only. Compute all scores at once
# ($X W$, shape (N, C)), pick each row's correct score with fancy indexing
# (`scores[np.arange(N), y]`), and build the gradient from a matrix that holds, for each
# example, +1 for every class with a positive margin and minus their count for the
# correct class: then `dW` is one matrix product.


# %% nbgrader={"grade": false, "grade_id": "svm_loss_vectorized_solution", "locked": false, "schema_version": 3, "solution": true}
def svm_loss_vectorized(W, X, y, reg):
    """Multiclass SVM loss, vectorised: the same inputs and outputs as svm_loss_naive."""
    ### BEGIN SOLUTION
    num_train = X.shape[0]
    rows = np.arange(num_train)
    scores = X @ W
    margins = np.maximum(0.0, scores - scores[rows, y][:, None] + 1.0)
    margins[rows, y] = 0.0
    loss = margins.sum() / num_train + reg * np.sum(W * W)
    counts = (margins > 0).astype(W.dtype)
    counts[rows, y] = -counts.sum(axis=1)
    dW = X.T @ counts / num_train + 2 * reg * W
    ### END SOLUTION
    return loss, dW


# %% [markdown]
# **Check it**, against your loops, and time both: the vectorised version hands the loops
# to compiled code.

# %%
W_check = 0.01 * rng.standard_normal((X_train.shape[1], num_classes))


def best_time(f, repeats=3):
    """The fastest of a few runs, in seconds: the least disturbed by other work."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


with check_it("Exercise 1.2"):
    loss_naive, dW_naive = svm_loss_naive(W_check, X_train, y_train, 0.05)
    loss_vec, dW_vec = svm_loss_vectorized(W_check, X_train, y_train, 0.05)
    print(f"loss: naive {loss_naive:.6f}, vectorised {loss_vec:.6f}")
    print(f"relative error of dW: {rel_error(dW_naive, dW_vec):.1e}")
    assert rel_error(loss_naive, loss_vec) < 1e-10, "the loss differs from the loops'"
    assert rel_error(dW_naive, dW_vec) < 1e-10, "dW differs from the loops'"

    t_naive = best_time(lambda: svm_loss_naive(W_check, X_train, y_train, 0.05))
    t_vec = best_time(lambda: svm_loss_vectorized(W_check, X_train, y_train, 0.05))
    print(
        f"on {len(X_train)} examples: loops {t_naive * 1e3:.1f} ms, vectorised {t_vec * 1e3:.2f} ms"
    )
    print(f"the vectorised loss is {t_naive / t_vec:.0f}x faster")


# %% nbgrader={"grade": true, "grade_id": "svm_loss_vectorized", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): as for svm_loss_naive, on other hidden inputs.
### BEGIN HIDDEN TESTS
from course.grading import check

check("svm_loss_vectorized", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · The softmax loss, and what floating point does to it
#
# Softmax reads scores as unnormalised log-probabilities:
#
# $$p_k = \frac{e^{s_k}}{\sum_j e^{s_j}}, \qquad L_i = -\log p_{y_i},
# \qquad \frac{\partial L_i}{\partial s_k} = p_k - [k = y_i].$$
#
# **The loss at initialisation.** With scores all about 0, every $p_k \approx 1/C$, so
# $L \approx \log C = \log 10 \approx 2.303$. A first loss far from that means a bug (or
# weights that are not small).
#
# ### Predict, then measure (2 points)
#
# Two predictions to write down **before** running the experiments that measure them,
# each as a small function of the setting, so that the hidden check can ask it about
# settings you do not see (each answer accepted within 2%):
#
# 1. `predicted_clipped_loss(eps)`: a common patch for $\log 0$ is to report
#    $-\log(p_y + \epsilon)$. When the correct class's probability $p_y$ has rounded to
#    0, what loss does that report? Measured next, at scores $(1000, 0, -1000)$ with
#    $\epsilon = 10^{-12}$, where the right loss is 2000.
# 2. `predicted_regulariser_factor(learning_rate, reg, steps)`: the regulariser
#    $\lambda \sum W^2$ alone (no data), minimised by `steps` steps of gradient descent
#    $W \leftarrow W - \eta\, \partial / \partial W$: by what factor is $W$ multiplied at the
#    end? Measured in part 3 with `learning_rate = 0.1`, `reg = 0.1`, `steps = 200`.


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_clipped_loss(eps):
    """-log(p + eps) for a correct class whose probability p has rounded to 0."""
    ### BEGIN SOLUTION
    return -np.log(eps)
    ### END SOLUTION


def predicted_regulariser_factor(learning_rate, reg, steps):
    """The factor W is multiplied by after `steps` descent steps on reg * sum(W * W)."""
    ### BEGIN SOLUTION
    return (1 - 2 * learning_rate * reg) ** steps
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "linear_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within its band, for hidden settings.
### BEGIN HIDDEN TESTS
from course.grading import check

check("linear_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# **The numerics.** Let us meet the failures before writing the loss. One example, three
# classes, scores of magnitude 1000, correct class 2 (and your prediction 1 beside the
# patched loss):

# %%
scores = np.array([1000.0, 0.0, -1000.0])
label = 2

with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
    p_textbook = np.exp(scores) / np.exp(scores).sum()
    print("textbook softmax:    p =", p_textbook, " loss =", -np.log(p_textbook[label]))

    shifted = scores - scores.max()  # the same probabilities, and exp() can no longer overflow
    p_shifted = np.exp(shifted) / np.exp(shifted).sum()
    print("max-shifted softmax: p =", p_shifted, " loss =", -np.log(p_shifted[label]))
    print(
        "max-shifted, -log(p + 1e-12): loss =",
        -np.log(p_shifted[label] + 1e-12),
        f"(you predicted {predicted_clipped_loss(1e-12):.4f})",
    )

# Log-probabilities directly: log p_k = s_k - max - log(sum_j exp(s_j - max)).
log_p = shifted - np.log(np.exp(shifted).sum())
print("log-sum-exp:     log p =", log_p, " loss =", -log_p[label])

# %% [markdown]
# - The **textbook** formula computes $e^{1000}$, which overflows to `inf`, and
#   `inf / inf` is `nan`: $p = (\text{nan}, 0, 0)$. The loss of the correct class 2 is
#   $-\log 0 = $ `inf` (printed above), not `nan`; a `nan` appears as soon as $p_y$ is one
#   of the `nan`s, and in every gradient that uses $p$.
# - **Subtracting the maximum** changes nothing mathematically (numerator and denominator
#   are both scaled by $e^{-\max}$) and prevents the overflow. But $p_2 = e^{-2000}$ is
#   far below the smallest positive float64 (about $5 \times 10^{-324}$, a subnormal; the
#   smallest normal one is about $2.2 \times 10^{-308}$), so it rounds to 0, and
#   $-\log 0 = \infty$. Its gradient survives (it uses $p$, not $\log p$), so training
#   would follow the gradient of a loss it reports as infinite.
# - **Log-sum-exp** never forms the tiny probability: $\log p_k$ is computed as a
#   difference of moderate numbers, and the loss is the right 2000.
#
# Scores of 1000 are not exotic: an unnormalised input, a large learning rate or a large
# weight scale produces them within a few steps.
#
# Explore it yourself: move the scores' magnitude $s$ (scores $(s, 0, -s)$, correct class
# the last, whose right loss is $2s$ plus a little) and the precision, and watch where
# each way of computing the loss breaks. Float32 and float16 overflow and underflow at
# much smaller scores than float64.


# %%
def softmax_losses(z):
    """The loss of label 2 for scores z, computed four ways in z's dtype."""
    shifted = z - z.max()
    p_textbook = np.exp(z) / np.exp(z).sum()
    p_shifted = np.exp(shifted) / np.exp(shifted).sum()
    return {
        "textbook": -np.log(p_textbook[2]),
        "max-shifted": -np.log(p_shifted[2]),
        "max-shifted, + 1e-12": -np.log(p_shifted[2] + z.dtype.type(1e-12)),
        "log-sum-exp": -(shifted[2] - np.log(np.exp(shifted).sum())),
    }


def explore_numerics(log10_magnitude=3.0, dtype="float64"):
    """The four losses of scores (s, 0, -s), label 2, in `dtype`, against s."""
    magnitudes, s_now = np.logspace(0, 4, 200), 10.0**log10_magnitude
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        curves = [softmax_losses(np.array([m, 0.0, -m], dtype=dtype)) for m in magnitudes]
        now = softmax_losses(np.array([s_now, 0.0, -s_now], dtype=dtype))
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    for name in now:
        ax.plot(magnitudes, [float(c[name]) for c in curves], label=name)
        print(f"{name:>21}: loss {float(now[name]):.6g}")
    print(f"{'right':>21}: loss {2 * s_now:.6g} (to within exp(-s))")
    ax.axvline(s_now, color="gray", ls=":")
    ax.set(xscale="log", yscale="log", xlabel="score magnitude s",
           ylabel="reported loss (gaps: inf or nan)",
           title=f"{dtype}: where each formula stops reporting 2s")  # fmt: skip
    plain_log_labels(ax)
    ax.legend(fontsize=8)
    plt.show()


_ = explore_plot(
    explore_numerics,
    log10_magnitude=widgets.FloatSlider(value=3.0, min=0.0, max=4.0, step=0.1),
    dtype=["float64", "float32", "float16"],
)

# %% [markdown]
# ### Exercise 2.1: `softmax_loss_naive`, with loops
#
# Loop over examples; for each, compute its scores, its log-probabilities by log-sum-exp
# (shift by that example's maximum score), the loss and the gradient. Add the
# regulariser $\lambda \sum W^2$ as for the SVM.


# %% nbgrader={"grade": false, "grade_id": "softmax_loss_naive_solution", "locked": false, "schema_version": 3, "solution": true}
def softmax_loss_naive(W, X, y, reg):
    """Softmax (cross-entropy) loss with loops, finite and accurate for scores near 1e3.

    W: (D, C); X: (N, D); y: (N,) labels in [0, C); reg: L2 strength.
    Returns (loss, dW): the loss averaged over N plus reg * sum(W * W), and its gradient.
    """
    loss = 0.0
    dW = np.zeros_like(W)
    ### BEGIN SOLUTION
    num_train, num_classes = X.shape[0], W.shape[1]
    for i in range(num_train):
        scores = X[i] @ W
        shifted = scores - np.max(scores)
        log_norm = np.log(np.sum(np.exp(shifted)))
        log_probs = shifted - log_norm
        loss -= log_probs[y[i]]
        probs = np.exp(log_probs)
        for k in range(num_classes):
            dW[:, k] += (probs[k] - (k == y[i])) * X[i]
    loss = loss / num_train + reg * np.sum(W * W)
    dW = dW / num_train + 2 * reg * W
    ### END SOLUTION
    return loss, dW


# %% [markdown]
# **Check it.** The loss at initialisation, the gradient against centred differences, and
# the visible large-score check: a single example with scores exactly $(1000, 0, -1000)$
# and label 2, whose loss is 2000 (to within $e^{-1000}$) and whose gradient is known.
# A textbook softmax and a max-shifted one both fail it with a loss of `inf`.


# %%
def check_large_scores(loss_fn):
    """Scores (1000, 0, -1000), label 2: loss 2000; dW moves x out of class 0, into class 2."""
    x = np.array([[1.0, 2.0]])
    W = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]])  # scores = x @ W
    loss, dW = loss_fn(W, x, np.array([2]), 0.0)
    expected_dW = np.array([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0]])
    print(f"  loss {float(loss)!r} (2000 is right); dW finite: {bool(np.all(np.isfinite(dW)))}")
    assert np.isfinite(loss), "the loss is not finite: is a probability rounded to 0 logged?"
    assert abs(float(loss) - 2000.0) < 1e-9, "the loss is finite but wrong"
    assert rel_error(dW, expected_dW) < 1e-9, "the gradient is wrong at large scores"


with check_it("Exercise 2.1"):
    loss, _ = softmax_loss_naive(W0, X_train[:100], y_train[:100], 0.0)
    print(f"softmax loss at initialisation: {loss:.4f} (expect about log(10) = {np.log(10):.4f})")

    check_gradient(softmax_loss_naive)

    print("softmax_loss_naive at scores of 1000:")
    check_large_scores(softmax_loss_naive)


# %% nbgrader={"grade": true, "grade_id": "softmax_loss_naive", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): loss and gradient on hidden inputs, with and without
# regularisation, at ordinary scores; and your gradient against centred differences of
# your own loss. Large scores have a grade cell of their own, after Exercise 2.2.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax_loss_naive", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2.2: `softmax_loss_vectorized`
#
# Without loops. Shift each *row* by its own maximum (`keepdims=True` keeps the shapes
# broadcastable): one maximum for the whole batch prevents overflow, but a row whose scores
# all lie far below it underflows entirely.


# %% nbgrader={"grade": false, "grade_id": "softmax_loss_vectorized_solution", "locked": false, "schema_version": 3, "solution": true}
def softmax_loss_vectorized(W, X, y, reg):
    """Softmax loss, vectorised: the same inputs and outputs as softmax_loss_naive."""
    ### BEGIN SOLUTION
    num_train = X.shape[0]
    rows = np.arange(num_train)
    scores = X @ W
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[rows, y].mean() + reg * np.sum(W * W)
    dscores = np.exp(log_probs)
    dscores[rows, y] -= 1.0
    dW = X.T @ dscores / num_train + 2 * reg * W
    ### END SOLUTION
    return loss, dW


# %% [markdown]
# **Check it**: against the loops, at large scores, and for speed.

# %%
with check_it("Exercise 2.2"):
    loss_naive, dW_naive = softmax_loss_naive(W_check, X_train, y_train, 0.05)
    loss_vec, dW_vec = softmax_loss_vectorized(W_check, X_train, y_train, 0.05)
    print(f"loss: naive {loss_naive:.6f}, vectorised {loss_vec:.6f}")
    print(f"relative error of dW: {rel_error(dW_naive, dW_vec):.1e}")
    assert rel_error(loss_naive, loss_vec) < 1e-10, "the loss differs from the loops'"
    assert rel_error(dW_naive, dW_vec) < 1e-10, "dW differs from the loops'"

    print("softmax_loss_vectorized at scores of 1000:")
    check_large_scores(softmax_loss_vectorized)

    t_naive = best_time(lambda: softmax_loss_naive(W_check, X_train, y_train, 0.05))
    t_vec = best_time(lambda: softmax_loss_vectorized(W_check, X_train, y_train, 0.05))
    print(
        f"on {len(X_train)} examples: loops {t_naive * 1e3:.1f} ms, vectorised {t_vec * 1e3:.2f} ms"
    )
    print(f"the vectorised loss is {t_naive / t_vec:.0f}x faster")


# %% nbgrader={"grade": true, "grade_id": "softmax_loss_vectorized", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): as for softmax_loss_naive, on other hidden inputs.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax_loss_vectorized", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The numerics, graded on their own
#
# The leak this assignment is about gets its own points: both of your softmax losses at
# scores near 1e3, on hidden batches whose rows have very different score ranges (one
# maximum for the whole batch is not enough), and at a correct class scored hundreds to
# thousands below its row's maximum, whose probability rounds to 0. A textbook softmax
# gives `inf` or `nan` here, `-log(p)` of a shifted softmax `inf`, and `-log(p + 1e-12)` a
# finite loss that is far off (27.6 instead of 2000 on the example at the start of this
# part, printed there): all three lose these points.

# %% nbgrader={"grade": true, "grade_id": "softmax_numerics", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): loss and gradient of softmax_loss_naive and of
# softmax_loss_vectorized at scores near 1e3 and at a correct class far below its row's
# maximum.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax_numerics", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · Training on the digits
#
# Minibatch stochastic gradient descent: draw 200 training examples, compute the loss and
# its gradient with your vectorised code, step against the gradient, repeat. The loop is
# short enough to read in full:

# %%
show_source(train_linear)

# %%
runs = {}
for name, loss_fn in (("SVM", svm_loss_vectorized), ("softmax", softmax_loss_vectorized)):
    W, losses = train_linear(loss_fn, X_train, y_train, num_classes, learning_rate=0.3, reg=1e-3)
    runs[name] = (W, losses)
    print(
        f"{name:>7}: training accuracy {accuracy(X_train @ W, y_train):.3f}, "
        f"validation accuracy {accuracy(X_val @ W, y_val):.3f}"
    )

fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
for ax, (name, (_, losses)) in zip(axes, runs.items(), strict=True):
    loss_curve(losses, title=f"{name} loss on minibatches: noisy, falling", ax=ax)
plt.show()

# %% [markdown]
# ### What the classifier learned
#
# Each column of $W$ is a template: the score of a class is the dot product of the image
# with its template. Drawn as images (without the bias row), the templates look like
# blurred digits, red where ink votes for the class and blue where it votes against.

# %%
for name, (W, _) in runs.items():
    weight_images(W, title=f"{name}: one template a class")
plt.show()

# %% [markdown]
# ### The settings leak into the result
#
# The same loss, trained with another learning rate or regularisation strength, ends at
# other weights. Sweep both on a grid, judge each run on the *validation* set, and only
# then look at the test set, once, with the chosen setting.
#
# First the regulariser on its own, at `learning_rate = 0.1`, `reg = 0.1` for the 200
# steps each run of the sweep takes: your prediction 2, then the factor measured with
# your `softmax_loss_vectorized` (its gradient with `reg` minus its gradient without is
# the regulariser's alone), stepping from `W_check` (seed 0):

# %%
W_reg = W_check.copy()
for _ in range(200):
    dW_reg = (
        softmax_loss_vectorized(W_reg, X_train, y_train, 0.1)[1]
        - softmax_loss_vectorized(W_reg, X_train, y_train, 0.0)[1]
    )
    W_reg = W_reg - 0.1 * dW_reg
factor = np.linalg.norm(W_reg) / np.linalg.norm(W_check)
print(
    f"|W| after 200 steps of the regulariser alone: {factor:.4f} of |W| at the start",
    f"(you predicted {predicted_regulariser_factor(0.1, 0.1, 200):.4f})",
)

# %%
learning_rates = [1e-3, 1e-2, 1e-1, 1.0]
regs = [1e-4, 1e-2, 1e-1, 1.0]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
chosen = {}
for ax, (name, loss_fn) in zip(
    axes, (("SVM", svm_loss_vectorized), ("softmax", softmax_loss_vectorized)), strict=True
):
    val_acc = np.zeros((len(learning_rates), len(regs)))
    for i, lr in enumerate(learning_rates):
        for j, reg in enumerate(regs):
            W, _ = train_linear(loss_fn, X_train, y_train, num_classes, lr, reg, steps=200)
            val_acc[i, j] = accuracy(X_val @ W, y_val)
    i, j = np.unravel_index(np.argmax(val_acc), val_acc.shape)
    chosen[name] = (learning_rates[i], regs[j])
    sweep_heatmap(
        val_acc,
        learning_rates,
        regs,
        "learning rate",
        "regularisation",
        f"{name}: validation accuracy",
        ax=ax,
    )
plt.show()

for name, loss_fn in (("SVM", svm_loss_vectorized), ("softmax", softmax_loss_vectorized)):
    lr, reg = chosen[name]
    W, _ = train_linear(loss_fn, X_train, y_train, num_classes, lr, reg)
    test_accuracy = accuracy(X_test @ W, y_test)
    print(f"{name:>7}: chosen lr {lr:g}, reg {reg:g}: test accuracy {test_accuracy:.3f}")
    i, j = learning_rates.index(lr), regs.index(reg)
    if i in (0, len(learning_rates) - 1) or j in (0, len(regs) - 1):
        print(
            f"{'':>7}  the best is on the grid's edge: extend the grid past it before trusting it"
        )

# The lr = reg = 1 corner: the regulariser's factor is 1 - 2 * lr * reg = -1.
for steps in (200, 201):
    W, _ = train_linear(svm_loss_vectorized, X_train, y_train, num_classes, 1.0, 1.0, steps=steps)
    print(f"SVM, lr = reg = 1, {steps} steps: validation accuracy {accuracy(X_val @ W, y_val):.3f}")

# %% [markdown]
# Read the corners. A small learning rate leaves 200 steps short of the optimum. Strong
# regularisation shrinks every template towards zero. And the two interact: the
# regulariser alone multiplies $W$ by $1 - 2\,\eta\,\lambda$ each step, so with
# $\eta = \lambda = 1$ that factor is $-1$: the weights flip sign every step, so what
# that corner scores depends on whether the number of steps is even or odd (the two runs
# printed above, 200 and 201 steps), not on anything learned. Between the corners lies a
# plateau of good settings, and where it lies depends on the loss, the data's scale and the
# number of steps: none of it is visible in the loss's formula. If the best setting is on
# the grid's edge (the line printed above says so), the grid is too small: extend it in
# that direction before choosing.
#
# ## What to take away
#
# - Check a loss first where you know its value: $C - 1$ for the SVM and $\log C$ for
#   softmax at initialisation, and at a large score whose answer you can work out.
# - Compute log-probabilities with log-sum-exp, each row shifted by its own maximum: never
#   the log of a probability.
# - Vectorise: the same loss, tens to hundreds of times faster.
# - A linear classifier's weights are templates; it gets about 93–95% of these digits
#   right. Assignment 03 stacks layers to do better.
