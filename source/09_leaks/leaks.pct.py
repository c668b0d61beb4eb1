# %% [markdown]
# # 09 · Everything leaks
#
# Assignments 01-08 built every part of a network by hand, and each showed one way that
# part leaks into the loss. On the job the question comes the other way round: *this run
# is broken; which part leaked, and how do you know?* A practitioner answers it with
# instruments, measurements that each point at one part of the model or the regimen, taken
# before trusting a curve. This assignment has you write them, then use them.
#
# Parts 1-8 are the instruments. Each one answers a question about a run, and each is
# graded like the layers of 01-08, on models and arrays you do not see. Part 9 hands you
# whole broken runs, and your instruments say which part leaked; it is graded on runs you
# do not see either.
#
# **The leaks shown here:** a start far above $\ln C$ is the initialisation's scale; a
# gradient that disagrees with centred differences is a backward pass; an update far
# from a thousandth of its weight is the learning rate; a dead or saturated layer is the
# activation or the scale; a model that cannot fit 20 examples has a bug, not too little
# capacity; a validation loss computed in training mode, or as a mean of batch means,
# says something that is not true; and a run that learns nothing on validation while its
# start, updates and gradients are right was given labels that do not match its inputs.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your code from 03 and 04 | nothing: it is carried forward | 0 |
# | 1 · The loss at the start | `expected_initial_loss` | 1 |
# | 2 · A gradient check of the whole model | `gradient_check_model` | 3 |
# | 3 · Updates against weights | `update_ratios` | 2 |
# | 4 · Inside the layers | `activation_stats` | 2 |
# | 5 · Can it learn at all? | `overfit_small_batch` | 2 |
# | 6 · Train against validation | `dataset_loss` | 2 |
# | 7 · All the instruments on one run | nothing new: a widget | 0 |
# | 8 · Is this improvement real? | `mean_interval`, `paired_interval`, `improvement_is_real` | 3 |
# | 9 · Broken runs: which part leaked? | `diagnose` | 4 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.
#
# **A model**, in this notebook, is what your `FullyConnectedNet` of 04 is: an object with
# `.params` (a dict of arrays) and `.loss(X, y=None)`, which returns the scores (N, C)
# when `y` is None (test mode) and `(loss, grads)` otherwise (training mode), grads keyed
# like params. Every instrument works on any such model; the hidden checks hand them the
# grader's own.

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import digits
from course.gradcheck import rel_error
from course.notebook import check_it, explore_plot
from course.plots import plain_log_labels
from course.runs import CAUSES, RUN_KINDS, TanhNet, make_run, mystery_runs
from course.stats import t_quantile

# %% [markdown]
# ## 0 · Your code from 03 and 04
#
# The experiments run your own layers, loss and `sgd` from 03, and your `FullyConnectedNet`
# and `weight_init` from 04, imported from the `my_03_multilayer.py` and
# `my_04_optimisers.py` beside this notebook (`course export`, run by `make lab` and
# `course check`, writes them from the cells marked `#| export`). Fixed something there?
# Save that notebook, then re-run these cells.

# %% nbgrader={"grade": false, "grade_id": "carried_from_03", "locked": true, "schema_version": 3, "solution": false}
# Your functions from 03 (work/03_multilayer). Fixed one there? Save 03, then re-run this cell.
from course.carry import carry  # imported here: this cell may be re-run alone

affine_forward, relu_forward, softmax_loss, sgd = carry(
    "03_multilayer", "affine_forward relu_forward softmax_loss sgd"
)

# %% nbgrader={"grade": false, "grade_id": "carried_from_04", "locked": true, "schema_version": 3, "solution": false}
# Your network and initialisation from 04 (work/04_optimisers).
from course.carry import carry  # imported here: this cell may be re-run alone

FullyConnectedNet, weight_init = carry("04_optimisers", "FullyConnectedNet weight_init")

# %% [markdown]
# The digits of 02-05: 8x8 images, 10 classes, 1,199 for training and 299 for validation.

# %%
data = digits()
X_train, y_train, X_val, y_val = data.X_train, data.y_train, data.X_val, data.y_val
C = 10
print(f"train {X_train.shape}, validation {X_val.shape}, {C} classes")

# %% [markdown]
# ## 1 · The loss at the start
#
# A network whose last layer starts with small weights gives every class nearly the same
# score, so the softmax gives each about the same probability. Before training anything,
# know what loss that start must have: a first loss far above it says the scores start
# large and confidently wrong (the initialisation's scale), one below it that the labels
# leak into the inputs.
#
# ### Exercise 1.1: `expected_initial_loss`
#
# Return the softmax cross-entropy loss, averaged over examples, of a model that gives all
# `num_classes` classes the same probability. This is your prediction for part 1's
# experiment.


# %% nbgrader={"grade": false, "grade_id": "initial_loss_solution", "locked": false, "schema_version": 3, "solution": true}
def expected_initial_loss(num_classes):
    """The mean cross-entropy loss when every class has probability 1 / num_classes."""
    ### BEGIN SOLUTION
    return float(np.log(num_classes))
    ### END SOLUTION


# %% [markdown]
# **Check it**: two classes, and ten.

# %%
with check_it("Exercise 1.1"):
    print(f"2 classes: {expected_initial_loss(2):.4f} (expect 0.6931)")
    print(f"10 classes: {expected_initial_loss(10):.4f} (expect 2.3026)")
    assert abs(expected_initial_loss(2) - 0.6931) < 1e-4, "two classes: not -log(1/2)"

# %% nbgrader={"grade": true, "grade_id": "initial_loss", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): three numbers of classes you do not see, one of them small.
### BEGIN HIDDEN TESTS
from course.grading import check

check("initial_loss", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** Your 04 network, two hidden layers of 100, at four weight scales: its
# loss on the training set before any step, beside your prediction.

# %%
predicted = expected_initial_loss(C)
print(f"you predicted {predicted:.4f}")
for scale in (1e-3, 1e-2, 1e-1, 1.0):
    net = FullyConnectedNet([100, 100], 64, C, weight_scale=scale, dtype=np.float64, seed=0)
    loss, _ = net.loss(X_train, y_train)
    print(f"weight scale {scale:g}: loss at the start {loss:.4f} ({loss - predicted:+.4f})")

# %% [markdown]
# At the small scales the start is at $\ln 10$ (printed above); at the largest it is far
# above it, a network that is confidently wrong before it has seen a label. The first
# number of every run is worth reading.
#
# ## 2 · A gradient check of the whole model
#
# 01 compared a gradient with centred differences for one function; a model is many
# layers, and one wrong backward pass anywhere makes every step a little wrong without any
# error. The check below takes the model as it is: it nudges every entry of every
# parameter and calls the model's own loss.
#
# ### Exercise 2.1: `gradient_check_model`
#
# Call `model.loss(X, y)` once for the analytic gradients. Then for every parameter `name`
# and every entry of `model.params[name]`: set the entry to its value plus `h`, take the
# loss, set it to its value minus `h`, take the loss, and put the value back *exactly*
# (save it; `p += h` then `p -= h` leaves rounding residue). The centred difference is
# $(f_+ - f_-) / 2h$. Return `{name: rel_error(analytic, numerical)}`, with the course's
# `rel_error` (imported above: the largest entry's $|a - n| / \max(10^{-8}, |a| + |n|)$).
# The model must be deterministic in training mode (no dropout): this one is.


# %% nbgrader={"grade": false, "grade_id": "gradient_check_solution", "locked": false, "schema_version": 3, "solution": true}
def gradient_check_model(model, X, y, h=1e-5):
    """{parameter name: relative error of its analytic gradient against centred
    differences of model.loss(X, y)[0]}; model.params is left exactly as it was."""
    ### BEGIN SOLUTION
    _, grads = model.loss(X, y)
    errors = {}
    for name, p in model.params.items():
        numerical = np.zeros(p.shape)
        for ix in np.ndindex(p.shape):
            old = p[ix]
            p[ix] = old + h
            plus = model.loss(X, y)[0]
            p[ix] = old - h
            minus = model.loss(X, y)[0]
            p[ix] = old
            numerical[ix] = (plus - minus) / (2 * h)
        errors[name] = rel_error(grads[name], numerical)
    return errors
    ### END SOLUTION


# %% [markdown]
# **Check it**: your 04 network in float64, with regularisation, on a few examples. A right
# backward pass is below about $10^{-7}$ for every parameter; then the same network with one
# planted bug, a bias gradient doubled.

# %%
with check_it("Exercise 2.1"):
    small = FullyConnectedNet([7, 6], 5, 4, reg=0.1, weight_scale=0.5, dtype=np.float64, seed=1)
    X_small = np.random.default_rng(2).standard_normal((8, 5))
    y_small = np.random.default_rng(3).integers(0, 4, 8)
    kept = {k: v.copy() for k, v in small.params.items()}
    errors = gradient_check_model(small, X_small, y_small)
    for name, error in errors.items():
        print(f"{name}: {error:.1e}")
    assert set(errors) == set(small.params), "one error per parameter"
    assert all(np.array_equal(kept[k], small.params[k]) for k in kept), "parameters changed"
    assert max(errors.values()) < 1e-6, "a right network should check below 1e-6"

    class PlantedBug(FullyConnectedNet):
        def loss(self, X, y=None):
            result = super().loss(X, y)
            if y is None:
                return result
            loss, grads = result
            return loss, {**grads, "b2": 2 * grads["b2"]}

    planted = PlantedBug([7, 6], 5, 4, reg=0.1, weight_scale=0.5, dtype=np.float64, seed=1)
    found = gradient_check_model(planted, X_small, y_small)
    print("with db2 doubled:", {k: f"{v:.1e}" for k, v in found.items()})
    assert found["b2"] > 0.1 and found["W1"] < 1e-6, "the check should point at b2 only"

# %% nbgrader={"grade": true, "grade_id": "gradient_check_model", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): two models of the grader's, each with one or two gradients wrong
# by an amount you do not see: the relative error of every parameter, and the parameters
# left exactly as they were.
### BEGIN HIDDEN TESTS
from course.grading import check

check("gradient_check_model", globals())
### END HIDDEN TESTS

# %% [markdown]
# The check costs two forward passes per parameter entry: on a real model, check a small
# one (few units, few examples) in float64, as above; float32's rounding alone is about
# $10^{-3}$ of a centred difference at this step. A gradient check says the backward pass
# matches the forward pass, not that the forward pass is the model you meant.
#
# ## 3 · Updates against weights
#
# How far does one step move the weights, relative to where they are? Karpathy's rule of
# thumb is about $10^{-3}$ for SGD: far below it the learning rate is too small and the
# run crawls, far above it the weights are rewritten every step.
#
# ### Exercise 3.1: `update_ratios`
#
# Given two snapshots of the parameters, `before` and `after` a step (dicts of arrays keyed
# alike), return `{name: |after - before| / |before|}` with Frobenius norms
# (`np.linalg.norm` of the arrays). Read the arrays; change neither. A parameter at zero
# (biases at the start) has no ratio: the hidden check never gives you one.


# %% nbgrader={"grade": false, "grade_id": "update_ratios_solution", "locked": false, "schema_version": 3, "solution": true}
def update_ratios(before, after):
    """{name: norm of the change over norm of the parameter before it}."""
    ### BEGIN SOLUTION
    return {
        name: float(np.linalg.norm(after[name] - before[name]) / np.linalg.norm(before[name]))
        for name in before
    }
    ### END SOLUTION


# %% [markdown]
# **Check it**: a change of a tenth of every entry is a ratio of 0.1.

# %%
with check_it("Exercise 3.1"):
    W = np.random.default_rng(0).standard_normal((4, 3))
    ratios = update_ratios({"W": W, "V": W}, {"W": 1.1 * W, "V": W})
    print(f"W {ratios['W']:.4f}, V {ratios['V']:.4f} (expect W 0.1, V 0)")
    assert abs(ratios["W"] - 0.1) < 1e-12 and ratios["V"] == 0, "W should be 0.1 and V 0"

# %% nbgrader={"grade": true, "grade_id": "update_ratios", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): snapshots of four parameters at very different scales, after a
# step of SGD and after equal-sized changes; both snapshots left as they were.
### BEGIN HIDDEN TESTS
from course.grading import check

check("update_ratios", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** Your 04 network (two hidden layers of 100, He-like scale 0.1) trained by
# your `sgd` for 60 steps of 100 examples at three learning rates, three seeds each: the
# first layer's update ratio at every step (each seed a line).

# %%
RATE_STEPS, RATE_SEEDS, RATES = 60, (0, 1, 2), (1e-3, 1e-2, 1e-1)


def ratios_during_training(learning_rate, seed, steps=RATE_STEPS):
    net = FullyConnectedNet([100, 100], 64, C, weight_scale=0.1, dtype=np.float64, seed=seed)
    order = np.random.default_rng(seed)
    ratios, losses = [], []
    for _ in range(steps):
        batch = order.choice(len(X_train), 100, replace=False)
        loss, grads = net.loss(X_train[batch], y_train[batch])
        before = {k: v.copy() for k, v in net.params.items() if k.startswith("W")}
        for name in net.params:
            net.params[name], _ = sgd(
                net.params[name], grads[name], {"learning_rate": learning_rate}
            )
        ratios.append(update_ratios(before, {k: net.params[k] for k in before})["W1"])
        losses.append(float(loss))
    return np.array(ratios), np.array(losses)


runs = {(rate, seed): ratios_during_training(rate, seed) for rate in RATES for seed in RATE_SEEDS}
fig, (ax_ratio, ax_loss) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for (rate, seed), (ratios, losses) in runs.items():
    color = f"C{RATES.index(rate)}"
    label = f"learning rate {rate:g}" if seed == 0 else None
    ax_ratio.semilogy(ratios, color=color, alpha=0.7, label=label)
    ax_loss.plot(losses, color=color, alpha=0.7, label=label)
ax_ratio.axhline(1e-3, color="k", linestyle=":", label="1e-3")
ax_ratio.set(
    title="W1's update ratio: which rate moves it about 1e-3?",
    xlabel="step",
    ylabel="|change| / |W1|",
)
ax_loss.set(
    title="training loss: the rate far below 1e-3 crawls", xlabel="step", ylabel="minibatch loss"
)
ax_ratio.legend(fontsize=8)
ax_loss.legend(fontsize=8)
plt.show()
for rate in RATES:
    median = np.median([np.median(runs[rate, s][0]) for s in RATE_SEEDS])
    last = [runs[rate, s][1][-10:].mean() for s in RATE_SEEDS]
    print(
        f"rate {rate:g}: median ratio {median:.1e}; loss of the last 10 steps "
        f"{np.mean(last):.3f} +- {np.std(last):.3f} over {len(RATE_SEEDS)} seeds"
    )

# %% [markdown]
# The ratio moves with the learning rate, about tenfold for a tenfold rate (the medians
# are printed), and of these three only the rate whose ratio is above $10^{-3}$ trains in
# 60 steps: the learning rate's leak, measured in the weights' own units.
# The rule of thumb is a starting point for SGD, not a law: under Adam the ratio mostly
# restates $\eta / \text{RMS}(W)$ (04).
#
# ## 4 · Inside the layers
#
# The loss is one number for the whole model; a layer's outputs say which layer is stuck.
# A ReLU unit that outputs 0 for every example of a batch is **dead** for that batch: no
# gradient reaches its weights. A tanh output near $\pm 1$ is **saturated**: its local
# gradient $1 - a^2$ is near 0.
#
# ### Exercise 4.1: `activation_stats`
#
# Given one layer's outputs `a` (N, H), return a dict with
# - `"mean"` and `"std"`: over every entry (NumPy's defaults: the standard deviation
#   divides by the number of entries);
# - `"dead"`: the share of the H units (columns) whose output is 0 in every row;
# - `"saturated"`: the share of entries with $|a| > 0.99$.
#
# Read `a`; do not change it.


# %% nbgrader={"grade": false, "grade_id": "activation_stats_solution", "locked": false, "schema_version": 3, "solution": true}
def activation_stats(a):
    """{"mean", "std", "dead", "saturated"} of one layer's outputs a (N, H)."""
    ### BEGIN SOLUTION
    return {
        "mean": float(a.mean()),
        "std": float(a.std()),
        "dead": float(np.mean(np.all(a == 0, axis=0))),
        "saturated": float(np.mean(np.abs(a) > 0.99)),
    }
    ### END SOLUTION


# %% [markdown]
# **Check it**: one dead unit of four, one saturated entry of eight.

# %%
with check_it("Exercise 4.1"):
    a = np.array([[0.0, 0.9, 0.5, 0.0], [0.0, 0.2, 0.995, 0.3]])
    stats = activation_stats(a)
    print(
        f"dead {stats['dead']:.4f}, saturated {stats['saturated']:.4f} "
        "(expect dead 0.25, saturated 0.125)"
    )
    assert abs(stats["dead"] - 0.25) < 1e-12, "dead: the units zero in every row, over H"
    assert abs(stats["saturated"] - 0.125) < 1e-12, "saturated: entries above 0.99, over N*H"
    assert abs(stats["std"] - a.std()) < 1e-12, "std: over every entry, NumPy's default"

# %% nbgrader={"grade": true, "grade_id": "activation_stats", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): a ReLU layer's outputs with dead units (and one alive by a single
# row), and a saturated tanh layer's; each statistic, and the array left as it was.
### BEGIN HIDDEN TESTS
from course.grading import check

check("activation_stats", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** Six hidden layers of 100 units on 500 digits, weights from your
# `weight_init`: tanh at Xavier's scale and at 1.0, and ReLU at He's scale before and after
# 20 steps of SGD at a learning rate far too high (1.0). Each layer's statistics, by your
# `activation_stats`.


# %%
def layer_outputs(weights, activation, X):
    outputs, h = [], X
    for W in weights:
        z, _ = affine_forward(h, W, np.zeros(W.shape[1]))
        h = np.tanh(z) if activation == "tanh" else relu_forward(z)[0]
        outputs.append(h)
    return outputs


X_probe = X_train[:500]
deep = {}
for label, activation, scheme in (("tanh, xavier", "tanh", "xavier"), ("tanh, 1.0", "tanh", 1.0)):
    rng = np.random.default_rng(0)
    weights = [weight_init(n, 100, scheme, rng) for n in (64, 100, 100, 100, 100, 100)]
    deep[label] = [activation_stats(a) for a in layer_outputs(weights, activation, X_probe)]

relu_net = FullyConnectedNet(
    [100] * 6, 64, C, weight_scale=np.sqrt(2 / 100), dtype=np.float64, seed=0
)


def relu_layer_stats(net):
    weights = [net.params[f"W{i}"] for i in range(1, 7)]
    h, stats = X_probe, []
    for i, W in enumerate(weights, start=1):
        h = relu_forward(affine_forward(h, W, net.params[f"b{i}"])[0])[0]
        stats.append(activation_stats(h))
    return stats


deep["relu, he, at the start"] = relu_layer_stats(relu_net)
rng = np.random.default_rng(0)
for _ in range(20):
    batch = rng.choice(len(X_train), 100, replace=False)
    _, grads = relu_net.loss(X_train[batch], y_train[batch])
    for name in relu_net.params:
        relu_net.params[name], _ = sgd(relu_net.params[name], grads[name], {"learning_rate": 1.0})
deep["relu, he, after 20 steps at rate 1.0"] = relu_layer_stats(relu_net)

fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
for label, stats in deep.items():
    layers = np.arange(1, 7)
    axes[0].semilogy(layers, [s["std"] + 1e-12 for s in stats], marker="o", label=label)
    axes[1].plot(layers, [s["saturated"] for s in stats], marker="o", label=label)
    axes[2].plot(layers, [s["dead"] for s in stats], marker="o", label=label)
axes[0].set(title="std per layer: shrinking or holding?", xlabel="layer", ylabel="std")
axes[1].set(title="saturated share: tanh at the wrong scale", xlabel="layer", ylabel="share")
axes[2].set(title="dead share: ReLU after too large a step", xlabel="layer", ylabel="share")
axes[0].legend(fontsize=7)
plt.show()
for label, stats in deep.items():
    # Saturation is a tanh's measure, dead units a ReLU's.
    worst = "saturated" if label.startswith("tanh") else "dead"
    print(
        f"{label:>38}: layer 6 std {stats[-1]['std']:.3f}; {worst} share, worst layer "
        f"{max(s[worst] for s in stats):.0%}"
    )

# %% [markdown]
# Each picture names a part: a std that shrinks layer by layer is the initialisation's
# scale (04), a saturated share that grows is the scale with tanh, and dead units after
# a few steps at a rate far too high are the learning rate, seen from inside the ReLU
# (printed above: compare the worst layer's dead share before and after the 20 steps).
#
# ## 5 · Can it learn at all?
#
# Before tuning anything, make the model memorise a handful of examples. A network with a
# few thousand weights fits 20 examples to a loss near 0 in a few hundred steps of plain
# gradient descent; if it cannot, the bug is in the model or the loop, not its capacity,
# and no amount of data or tuning will help.
#
# ### Exercise 5.1: `overfit_small_batch`
#
# Train `model` by plain gradient descent on the whole of `(X, y)` for `steps` steps: each
# step calls `model.loss(X, y)`, records the loss, then updates every parameter in place,
# `p -= learning_rate * grad`. Return the `steps` losses, each recorded before its
# update. The model you are given must be the one trained.


# %% nbgrader={"grade": false, "grade_id": "overfit_solution", "locked": false, "schema_version": 3, "solution": true}
def overfit_small_batch(model, X, y, steps, learning_rate):
    """Plain gradient descent on (X, y); returns the loss before each of the steps."""
    ### BEGIN SOLUTION
    losses = []
    for _ in range(steps):
        loss, grads = model.loss(X, y)
        losses.append(float(loss))
        for name in model.params:
            model.params[name] -= learning_rate * grads[name]
    return np.array(losses)
    ### END SOLUTION


# %% [markdown]
# **Check it**: 20 digits, your 04 network with one hidden layer of 50, 300 steps.

# %%
with check_it("Exercise 5.1"):
    tiny = FullyConnectedNet([50], 64, C, weight_scale=0.1, dtype=np.float64, seed=0)
    start = {k: v.copy() for k, v in tiny.params.items()}
    curve = overfit_small_batch(tiny, X_train[:20], y_train[:20], 300, 0.5)
    print(f"loss {curve[0]:.3f} at the start, {curve[-1]:.4f} after 300 steps")
    assert len(curve) == 300, "one loss per step"
    assert not all(np.array_equal(start[k], tiny.params[k]) for k in start), "model unchanged"
    assert curve[-1] < 0.05, "20 examples should be memorised"

# %% nbgrader={"grade": true, "grade_id": "overfit_small_batch", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): a model of the grader's on a small batch, with a number of steps
# and a learning rate you do not see: the loss curve, and the model's parameters after.
### BEGIN HIDDEN TESTS
from course.grading import check

check("overfit_small_batch", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** The same 20 examples, with a model that has a leak: a regularisation
# strength far too large, and a backward pass that forgets the first layer's gradient (a
# slip of the kind part 2 catches). Three seeds each.


# %%
class FrozenFirstLayer(FullyConnectedNet):
    def loss(self, X, y=None):
        result = super().loss(X, y)
        if y is None:
            return result
        loss, grads = result
        return loss, {**grads, "W1": np.zeros_like(grads["W1"])}


overfits = {
    "your network": lambda s: FullyConnectedNet(
        [50], 64, C, weight_scale=0.1, dtype=np.float64, seed=s
    ),
    "reg 1.0": lambda s: FullyConnectedNet(
        [50], 64, C, reg=1.0, weight_scale=0.1, dtype=np.float64, seed=s
    ),
    "W1's gradient lost": lambda s: FrozenFirstLayer(
        [50], 64, C, weight_scale=0.1, dtype=np.float64, seed=s
    ),
}
fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
for i, (label, make) in enumerate(overfits.items()):
    finals = []
    for seed in (0, 1, 2):
        curve = overfit_small_batch(make(seed), X_train[:20], y_train[:20], 300, 0.5)
        ax.semilogy(curve, color=f"C{i}", alpha=0.7, label=label if seed == 0 else None)
        finals.append(curve[-1])
    print(f"{label:>20}: loss after 300 steps {np.mean(finals):.4f} +- {np.std(finals):.4f}")
ax.set(
    title="20 examples: which model cannot memorise them?", xlabel="step", ylabel="loss (log scale)"
)
ax.legend()
plt.show()

# %% [markdown]
# The regulariser stops the fit at a floor of its own, and the lost gradient still fits,
# slowly, through the last layer alone (printed above): a model can be broken and still go
# down, so compare the curve with the one a right model gives, not with "it goes down".
#
# ## 6 · Train against validation
#
# Training loss says how well the model fits what it saw; validation loss, how well that
# carries to what it did not. Computing it has two traps: the model must run in **test
# mode** (no dropout, batch norm's running statistics; in our models, `model.loss(X)`
# without labels), and a set evaluated in batches must weight each batch by its size.
#
# ### Exercise 6.1: `dataset_loss`
#
# Return the mean softmax cross-entropy over all N examples of `(X, y)`: take batches of
# `batch_size` rows in order (the last may be shorter), scores from `model.loss(X_batch)`
# (test mode; no regulariser), the loss of each batch from your `softmax_loss` (03), each
# weighted by its batch's size. Change neither the data nor the model.


# %% nbgrader={"grade": false, "grade_id": "dataset_loss_solution", "locked": false, "schema_version": 3, "solution": true}
def dataset_loss(model, X, y, batch_size):
    """The mean cross-entropy of the model, in test mode, over all of (X, y)."""
    ### BEGIN SOLUTION
    total = 0.0
    for start in range(0, len(X), batch_size):
        scores = model.loss(X[start : start + batch_size])
        loss, _ = softmax_loss(scores, y[start : start + batch_size])
        total += float(loss) * len(scores)
    return total / len(X)
    ### END SOLUTION


# %% [markdown]
# **Check it**: in batches of 7 and all at once, the same number.

# %%
with check_it("Exercise 6.1"):
    net = FullyConnectedNet([30], 64, C, weight_scale=0.1, dtype=np.float64, seed=0)
    whole = dataset_loss(net, X_val[:100], y_val[:100], 100)
    batched = dataset_loss(net, X_val[:100], y_val[:100], 7)
    print(f"one batch {whole:.6f}, batches of 7 {batched:.6f}")
    assert abs(whole - batched) < 1e-9, "batches of 7 must give the whole set's loss"

# %% nbgrader={"grade": true, "grade_id": "dataset_loss", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): a model of the grader's whose training mode differs from its test
# mode and which has a regulariser, on a set the batches divide evenly and one they do
# not; data and model left as they were.
### BEGIN HIDDEN TESTS
from course.grading import check

check("dataset_loss", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** Your 04 network with two hidden layers of 200 on only 100 training
# digits, 60 epochs of full-batch steps: training and validation loss after each epoch, by
# your `dataset_loss`, three seeds.

# %%
SMALL_TRAIN, EPOCHS = 100, 60
gaps = []
fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
for seed in tqdm((0, 1, 2), desc="seeds"):
    net = FullyConnectedNet([200, 200], 64, C, weight_scale=0.1, dtype=np.float64, seed=seed)
    rows = np.random.default_rng(seed).choice(len(X_train), SMALL_TRAIN, replace=False)
    Xs, ys = X_train[rows], y_train[rows]
    train_curve, val_curve = [], []
    for _ in range(EPOCHS):
        _, grads = net.loss(Xs, ys)
        for name in net.params:
            net.params[name], _ = sgd(net.params[name], grads[name], {"learning_rate": 0.5})
        train_curve.append(dataset_loss(net, Xs, ys, 64))
        val_curve.append(dataset_loss(net, X_val, y_val, 64))
    ax.plot(train_curve, color="C0", alpha=0.7, label="train" if seed == 0 else None)
    ax.plot(val_curve, color="C1", alpha=0.7, label="validation" if seed == 0 else None)
    gaps.append((train_curve[-1], val_curve[-1], int(np.argmin(val_curve))))
ax.set(
    title="100 examples: where does validation stop following train?", xlabel="epoch", ylabel="loss"
)
ax.legend()
plt.show()
for seed, (train_end, val_end, best) in zip((0, 1, 2), gaps, strict=True):
    print(
        f"seed {seed}: train {train_end:.3f}, validation {val_end:.3f} at the end "
        f"({val_end / train_end:.0f} times as high); validation lowest at epoch {best + 1}"
    )

# %% [markdown]
# The training loss falls to a few hundredths while validation ends many times higher
# (printed per seed, with the epoch where validation was lowest): the gap is
# over-fitting, a leak of the regimen (how much data, how long, how much regularisation:
# 05), and only the second curve shows it.
#
# ## 7 · All the instruments on one run
#
# One run of your 04 network (two hidden layers of 100, 80 steps of 100 examples), with its
# two knobs: the weight scale and the learning rate. Move them and watch which instrument
# moves first: the start against $\ln 10$, the first layer's update ratio against
# $10^{-3}$, the last hidden layer's dead share, and the gap between train and validation.


# %%
def one_run(log10_scale, log10_rate, steps=80, seed=0):
    scale, rate = 10.0**log10_scale, 10.0**log10_rate
    net = FullyConnectedNet([100, 100], 64, C, weight_scale=scale, dtype=np.float64, seed=seed)
    rng = np.random.default_rng(seed)
    losses, ratios = [], []
    for _ in range(steps):
        batch = rng.choice(len(X_train), 100, replace=False)
        loss, grads = net.loss(X_train[batch], y_train[batch])
        before = {"W1": net.params["W1"].copy()}
        for name in net.params:
            net.params[name], _ = sgd(net.params[name], grads[name], {"learning_rate": rate})
        ratios.append(update_ratios(before, {"W1": net.params["W1"]})["W1"])
        losses.append(float(loss))
    hidden = relu_forward(affine_forward(X_train[:500], net.params["W1"], net.params["b1"])[0])[0]
    hidden = relu_forward(affine_forward(hidden, net.params["W2"], net.params["b2"])[0])[0]
    fig, (ax_loss, ax_ratio) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    ax_loss.plot(losses)
    ax_loss.axhline(expected_initial_loss(C), color="k", linestyle=":", label="ln 10")
    ax_loss.set(
        title="minibatch loss: where does it start, and does it fall?", xlabel="step", ylabel="loss"
    )
    ax_loss.legend()
    ax_ratio.semilogy(ratios)
    ax_ratio.axhline(1e-3, color="k", linestyle=":", label="1e-3")
    ax_ratio.set(title="W1's update ratio: near 1e-3?", xlabel="step", ylabel="ratio")
    ax_ratio.legend()
    plain_log_labels(ax_ratio)
    plt.show()
    train, val = dataset_loss(net, X_train, y_train, 256), dataset_loss(net, X_val, y_val, 256)
    print(
        f"start {losses[0]:.3f} (ln 10 = {expected_initial_loss(C):.3f}); "
        f"median update ratio {np.median(ratios):.1e}; "
        f"dead in layer 2 {activation_stats(hidden)['dead']:.0%}; "
        f"train {train:.3f}, validation {val:.3f}"
    )


_ = explore_plot(
    one_run,
    log10_scale=widgets.FloatSlider(
        value=-1.0, min=-3.0, max=0.5, step=0.25, description="log10 scale"
    ),
    log10_rate=widgets.FloatSlider(
        value=-1.0, min=-3.0, max=0.5, step=0.25, description="log10 rate"
    ),
)

# %% [markdown]
# ## 8 · Is this improvement real?
#
# A change to the regimen lowers the validation loss by a percent or two. Every number of
# a run depends on its seed (the initial weights, the order of the batches), so the
# question is whether the difference is larger than what another seed would give. Over
# $n$ seeds with mean $\bar x$ and sample standard deviation $s$ (`ddof=1`), the 95%
# interval of the mean is $\bar x \pm t\, s / \sqrt n$, with $t$ the 0.975 quantile of
# Student's t with $n - 1$ degrees of freedom (`t_quantile(0.975, n - 1)`, imported above:
# 2.78 for 5 seeds, where the normal's 1.96 would claim too much).
#
# When both regimens ran on the same seeds, compare them **seed by seed**: the seed's
# share of each loss (a lucky start is lucky for both) cancels in the difference
# $a_i - b_i$, and the interval of those differences can exclude 0 while the two regimens'
# own intervals overlap.
#
# ### Exercise 8.1: `mean_interval`, `paired_interval`, `improvement_is_real`
#
# - `mean_interval(values, confidence=0.95)` returns `(low, high)`, the interval above.
# - `paired_interval(a, b, confidence=0.95)`: the same interval for the differences
#   `a - b`, seed by seed (`a[i]` and `b[i]` ran on seed `i`).
# - `improvement_is_real(a, b, confidence=0.95)`: `a` and `b` are losses (lower is
#   better) of regimens A and B; return `True` if and only if B is better than A, that is
#   if the whole paired interval of `a - b` lies above 0.


# %% nbgrader={"grade": false, "grade_id": "improvement_solution", "locked": false, "schema_version": 3, "solution": true}
def mean_interval(values, confidence=0.95):
    """(low, high): the t interval of the mean of `values` (one per seed)."""
    ### BEGIN SOLUTION
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    half = t_quantile((1 + confidence) / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return float(values.mean() - half), float(values.mean() + half)
    ### END SOLUTION


def paired_interval(a, b, confidence=0.95):
    """(low, high): the t interval of the mean of a - b, paired by seed."""
    ### BEGIN SOLUTION
    differences = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return mean_interval(differences, confidence)
    ### END SOLUTION


def improvement_is_real(a, b, confidence=0.95):
    """True if B's losses are lower than A's beyond the seeds' noise (paired)."""
    ### BEGIN SOLUTION
    low, _ = paired_interval(a, b, confidence)
    return bool(low > 0)
    ### END SOLUTION


# %% [markdown]
# **Check it**: five seeds where B is 0.01 lower on every seed, give or take 0.001, while
# the seeds differ by 0.1.

# %%
with check_it("Exercise 8.1"):
    seeds_a = np.array([0.50, 0.62, 0.41, 0.55, 0.47])
    seeds_b = seeds_a - np.array([0.010, 0.011, 0.009, 0.010, 0.012])
    low_a, high_a = mean_interval(seeds_a)
    low_b, high_b = mean_interval(seeds_b)
    low_d, high_d = paired_interval(seeds_a, seeds_b)
    print(f"A {low_a:.3f} to {high_a:.3f}, B {low_b:.3f} to {high_b:.3f}")
    print(f"a - b {low_d:.4f} to {high_d:.4f}: B better? {improvement_is_real(seeds_a, seeds_b)}")
    assert low_b < high_a, "the two regimens' own intervals should overlap here"
    assert low_d > 0 and improvement_is_real(seeds_a, seeds_b), "paired, B is better"
    assert not improvement_is_real(seeds_b, seeds_a), "A is not better than B"

# %% nbgrader={"grade": true, "grade_id": "improvement_real", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): six pairs of regimens you do not see, in an unknown order (B
# clearly better, a difference within the seeds' noise, B better on every seed by less
# than the seeds differ, B worse, each at least once): the three intervals of each, and
# the six decisions, judged together (always False is right on some, and earns nothing).
### BEGIN HIDDEN TESTS
from course.grading import check

check("improvement_real", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Measure it.** Your 04 network (one hidden layer of 100) trained for 200 steps of 100
# examples by your `sgd`, at learning rate 0.1 (A) and 0.102 (B), on the same five seeds:
# the validation loss of each run, by your `dataset_loss`.


# %%
def validation_loss_after(learning_rate, seed, steps=200):
    net = FullyConnectedNet([100], 64, C, weight_scale=0.1, dtype=np.float64, seed=seed)
    order = np.random.default_rng(seed)
    for _ in range(steps):
        batch = order.choice(len(X_train), 100, replace=False)
        _, grads = net.loss(X_train[batch], y_train[batch])
        for name in net.params:
            net.params[name], _ = sgd(
                net.params[name], grads[name], {"learning_rate": learning_rate}
            )
    return dataset_loss(net, X_val, y_val, 256)


SEEDS = range(5)
losses_a = np.array([validation_loss_after(0.1, seed) for seed in SEEDS])
losses_b = np.array([validation_loss_after(0.102, seed) for seed in SEEDS])
for name, losses in (("A, rate 0.1", losses_a), ("B, rate 0.102", losses_b)):
    low, high = mean_interval(losses)
    print(f"{name}: mean {losses.mean():.4f}, 95% interval {low:.4f} to {high:.4f}")
low, high = paired_interval(losses_a, losses_b)
print(
    f"B lower than A by {(losses_a - losses_b).mean() / losses_a.mean():.1%} on average; "
    f"paired interval of a - b {low:.4f} to {high:.4f}"
)
overlap = mean_interval(losses_b)[1] > mean_interval(losses_a)[0]
print(
    f"A's and B's own intervals overlap: {overlap}; B lower on "
    f"{int(np.sum(losses_b < losses_a))} of {len(SEEDS)} seeds"
)
print(f"is B's improvement real? {improvement_is_real(losses_a, losses_b)}")

# %% [markdown]
# The means differ by about a percent and a half and the two regimens' own intervals
# overlap, yet B is lower on every seed, and the paired interval lies wholly above 0 (all
# printed): the seed's share of each loss cancels seed by seed. The same difference
# between runs on different seeds would be lost in their spread. A difference measured on
# one seed, or on means without an interval, is a claim the next seed may take back; this
# course's ablations run three seeds or more and print the spread for that reason.

# %% [markdown]
# ## 9 · Broken runs: which part leaked?
#
# Now the instruments meet whole runs. Each run here trains the course's small network
# (`course.runs.TanhNet`: 64 pixels, one tanh layer of 10 to 15 units, 10 classes) by
# minibatch SGD, 300 steps of 64 of 600 training digits. The model is the course's, not
# your 04 network, so that a leak is the run's, never a bug of yours carried along. A run
# is a `course.runs.Run`, whose code you may read:
#
# - `run.model()`: a fresh model at the run's initialisation (`.params`, `.loss` as above);
# - `run.step(model, X, y)`: one update of the run's regimen, in place; returns the loss;
# - `run.train()`: the whole run from a fresh model: (the trained model, every step's loss);
# - `run.X_train`, `run.y_train`, `run.X_val`, `run.y_val`: its data.
#
# Each run has at most one leak, one of `CAUSES` below. The list is longer than the kinds
# of leak these runs have, so a diagnosis is never found by ruling the others out.

# %%
for cause in CAUSES:
    print("-", cause)

# %% [markdown]
# The readings of a run, with your instruments, cheapest first: the loss at the start
# against $\ln C$ (part 1); the first layer's largest update ratio over the first ten steps
# (part 3); the largest error of a gradient check on five examples (part 2); and the
# training and validation loss at the end of the run (part 6).


# %%
def first_update_ratios(run, steps=10):
    """W1's update ratio at each of the run's first `steps` steps, on its own batches."""
    model, order = run.model(), np.random.default_rng(0)
    ratios = []
    for _ in range(steps):
        batch = order.choice(len(run.X_train), run.batch_size, replace=False)
        before = {"W1": model.params["W1"].copy()}
        run.step(model, run.X_train[batch], run.y_train[batch])
        ratios.append(update_ratios(before, {"W1": model.params["W1"]})["W1"])
    return ratios


def readings(run):
    """Every instrument's reading of `run`, and its loss curve."""
    start = dataset_loss(run.model(), run.X_train, run.y_train, 256)
    errors = gradient_check_model(run.model(), run.X_train[:5], run.y_train[:5])
    trained, curve = run.train()
    with np.errstate(all="ignore"):  # a diverged run's scores overflow
        train_end = dataset_loss(trained, run.X_train, run.y_train, 256)
        val_end = dataset_loss(trained, run.X_val, run.y_val, 256)
    return {
        "start": start,
        "largest update ratio": max(first_update_ratios(run)),
        "largest gradient error": max(errors.values()),
        "train at the end": train_end,
        "validation at the end": val_end,
        "curve": curve,
    }


def show_readings(runs):
    fig, ax = plt.subplots(figsize=(6.5, 3.6), layout="constrained")
    for name, run in runs.items():
        found = readings(run)
        ax.plot(found.pop("curve"), label=name)
        print(f"{name}: " + ", ".join(f"{k} {v:.3g}" for k, v in found.items()))
    ax.axhline(expected_initial_loss(C), color="k", linestyle=":", label="ln 10")
    ax.set(title="minibatch loss of each run", xlabel="step", ylabel="loss", ylim=(0, 8))
    ax.legend()
    plt.show()


# %% [markdown]
# **Measure it.** First, runs known to be healthy, three seeds: what a run of this family
# reads when nothing leaked.

# %%
show_readings(
    {f"healthy, seed {s}": make_run("no leak", np.random.default_rng(s), data) for s in (0, 1, 2)}
)

# %% [markdown]
# A healthy run of this family starts within a few hundredths of $\ln 10$, moves its
# first layer by a few thousandths of its norm a step (the three above: 0.004 to 0.007;
# other healthy runs go a little above a hundredth), passes the gradient check (an error
# far below $10^{-3}$; the three above: below $10^{-6}$), and ends well below $\ln 10$ on
# validation. A leak moves its instrument far outside that
# range, never to its edge: the runs are built so (`course.runs`: a start above twice
# $\ln 10$, an update ratio a hundred times beyond the healthy ones, a validation loss
# near $\ln 10$), and no threshold of yours has to be fine, as long as it lies between
# the healthy range and the leak's, not at the healthy range's edge.
#
# **Predict**, before running the next cell: three runs, A, B and C, each with a leak. For
# each instrument, which of the causes above would move it, and which way?

# %%
runs = mystery_runs()
show_readings(runs)

# %% [markdown]
# ### Exercise 9.1: `diagnose`
#
# Return the leak of a run, one of `CAUSES` exactly (`"no leak"` for a healthy run), from
# your instruments' readings. Order matters: one leak can move several instruments (a
# start far too large saturates the tanh: its gradient check fails too, run B's error
# of 0.0167 above, and the run learns no more than one whose labels do not match), so read
# them in the order a practitioner does, the start first, and let each reading rule out
# what it can. Call your instruments from parts 1-6, and copy into `diagnose` what you
# need of this part's helpers.


# %% nbgrader={"grade": false, "grade_id": "diagnose_solution", "locked": false, "schema_version": 3, "solution": true}
def diagnose(run):
    """The cause, one of CAUSES, of what is wrong with `run`."""
    ### BEGIN SOLUTION
    model = run.model()
    ln_c = expected_initial_loss(model.loss(run.X_val[:1]).shape[1])
    if dataset_loss(model, run.X_train, run.y_train, 256) > ln_c + 1:
        return "initialisation too large"
    order, ratios = np.random.default_rng(0), []
    for _ in range(10):  # W1's update ratio over the first ten steps, as first_update_ratios
        batch = order.choice(len(run.X_train), run.batch_size, replace=False)
        before = {"W1": model.params["W1"].copy()}
        run.step(model, run.X_train[batch], run.y_train[batch])
        ratios.append(update_ratios(before, {"W1": model.params["W1"]})["W1"])
    if max(ratios) > 0.1:
        return "learning rate too high"
    if max(ratios) < 1e-4:
        return "learning rate too low"
    errors = gradient_check_model(run.model(), run.X_train[:5], run.y_train[:5])
    if max(errors.values()) > 1e-3:
        return "a wrong backward pass"
    trained, _ = run.train()
    if dataset_loss(trained, run.X_val, run.y_val, 256) > 0.8 * ln_c:
        return "labels that do not match the inputs"
    return "no leak"
    ### END SOLUTION


# %% [markdown]
# **Check it**: the three runs above, and a healthy one.

# %%
with check_it("Exercise 9.1"):
    for name, run in runs.items():
        print(f"{name}: {diagnose(run)}")
    healthy = make_run("no leak", np.random.default_rng(3), data)
    print(f"healthy, seed 3: {diagnose(healthy)}")
    assert all(diagnose(run) in CAUSES for run in runs.values()), "answer one of CAUSES"
    assert diagnose(healthy) == "no leak", "a healthy run has no leak"

# %% nbgrader={"grade": true, "grade_id": "diagnose", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): eight runs you do not see, in an unknown order: every kind of
# leak these runs have, a healthy run among them, and two runs at the edge of their kind:
# the healthy run whose first layer moves the fastest of many, and a run whose learning
# rate is too high whose ratio has fallen to almost nothing by its tenth step. All eight
# diagnoses are judged together (a diagnosis that ignores its run is right on some, and
# earns nothing for that).
### BEGIN HIDDEN TESTS
from course.grading import check

check("diagnose", globals())
### END HIDDEN TESTS

# %% [markdown]
# Each leak came from one part, built in one assignment: the start far above $\ln C$ from
# the initialisation's scale (04's `weight_init`); a learning rate a hundred times too
# large or a thousand times too small from the regimen (plain SGD, 03's `sgd`); a
# gradient that disagrees with its loss from a backward pass (01-03); and a run that
# learns nothing on validation while its updates and gradients are right from the data:
# labels shifted by one against their inputs, as a join on the wrong key or an off-by-one
# in a loader makes them. Of the readings above, only the update ratio tells a learning
# rate far too small from labels that do not match, whose curves both sit near $\ln 10$
# (part 5's test, run with the run's own `step`, would too: wrong labels can be memorised,
# a rate far too small memorises nothing).

# %% [markdown]
# ### Exercise 9.2: `fix`
#
# A diagnosis is a claim until the fix makes it true. Return `run` with its leak `cause`
# repaired, by `run.with_changes(new_model=..., learning_rate=..., y_train=...)` (the same
# data, batches and steps; change only what leaked), so that every instrument reads healthy
# and the run then learns. Repair the part that leaked, not its symptom: a gradient clipped
# under a rate far too large still moves W1 by about its whole norm a step, and a smaller
# step from a saturated start still starts saturated. Return a new run and leave the one you
# were handed as it was. A healthy run needs no change.
#
# - **Initialisation too large**: make its models at a healthy scale (as `make_run`'s
#   healthy runs: `W1` of std $1/\sqrt{D}$, `W2` of std 0.1, zero biases).
# - **A learning rate too high or too low**: try rates on a log grid, from large to small,
#   and keep the first whose first ten steps all move `W1` by less than 1e-2 of its norm
#   (your `update_ratios`; the healthy runs above read 0.004 to 0.007).
# - **A wrong backward pass**: read the model's `loss` (`TanhNet` in `course/runs.py`) for
#   the term its gradients leave out, and give it its gradient, in a subclass.
# - **Labels that do not match the inputs**: find the shift of the labels against their
#   rows, by how well a quick classifier of the shifted labels does on validation (whose
#   labels are right), and undo it.


# %% nbgrader={"grade": false, "grade_id": "fix_solution", "locked": false, "schema_version": 3, "solution": true}
def fix(run, cause):
    """`run` with its leak `cause` (one of CAUSES) repaired: a run made by
    run.with_changes(...), whose instruments all read healthy."""
    ### BEGIN SOLUTION
    if cause == "initialisation too large":

        def new_model():  # the same family at a healthy scale: scores near 0 at the start
            model = run.model()
            init = np.random.default_rng(run.seed)
            (D, H), C = model.params["W1"].shape, model.params["W2"].shape[1]
            model.params.update(
                W1=init.standard_normal((D, H)) / np.sqrt(D),
                b1=np.zeros(H),
                W2=0.1 * init.standard_normal((H, C)),
                b2=np.zeros(C),
            )
            return model

        return run.with_changes(new_model=new_model)
    if cause in ("learning rate too high", "learning rate too low"):
        for rate in 10.0 ** np.arange(1.0, -4.0, -0.25):  # large to small: the first healthy
            trial, model = run.with_changes(learning_rate=rate), run.model()
            order, ratios = np.random.default_rng(0), []
            for _ in range(10):
                batch = order.choice(len(run.X_train), run.batch_size, replace=False)
                before = {"W1": model.params["W1"].copy()}
                with np.errstate(all="ignore"):  # a rate still too large overflows
                    trial.step(model, run.X_train[batch], run.y_train[batch])
                ratios.append(update_ratios(before, {"W1": model.params["W1"]})["W1"])
            if np.all(np.array(ratios) < 1e-2):  # NaN (diverged) is not below
                return trial
    if cause == "a wrong backward pass":

        class Corrected(TanhNet):  # the loss's term sum(a sin(b p)), given its gradient
            def loss(self, X, y=None):
                found = super().loss(X, y)
                if y is None:
                    return found
                loss, grads = found
                for name, (a, b) in self.hidden.items():
                    grads[name] = grads[name] + a * b * np.cos(b * self.params[name])
                return loss, grads

        def corrected_model():
            model = run.model()
            return Corrected(model.params, model.reg, model.hidden, model.train_mask)

        return run.with_changes(new_model=corrected_model)
    if cause == "labels that do not match the inputs":
        # A least-squares classifier of each shift of the labels, scored on validation.
        C = run.model().params["W2"].shape[1]
        X = np.c_[run.X_train, np.ones(len(run.X_train))]
        X_val = np.c_[run.X_val, np.ones(len(run.X_val))]

        def accuracy(shift):
            W = np.linalg.lstsq(X, np.eye(C)[np.roll(run.y_train, -shift)], rcond=None)[0]
            return np.mean((X_val @ W).argmax(axis=1) == run.y_val)

        return run.with_changes(y_train=np.roll(run.y_train, -max(range(-5, 6), key=accuracy)))
    return run
    ### END SOLUTION


# %% [markdown]
# **Check it**: each of the three runs above, fixed for the leak your `diagnose` names,
# and a run whose learning rate is too high, fixed for that, read again with every
# instrument.

# %%
with check_it("Exercise 9.2"):
    fixed = {f"{name}, fixed": fix(run, diagnose(run)) for name, run in runs.items()}
    too_high = make_run("learning rate too high", np.random.default_rng(4), data)
    fixed["rate too high, seed 4, fixed"] = fix(too_high, "learning rate too high")
    show_readings(fixed)
    for name, run in fixed.items():
        found = readings(run)
        assert abs(found["start"] - expected_initial_loss(C)) < 1, f"{name} starts far from ln C"
        assert 1e-3 <= found["largest update ratio"] <= 0.1, f"{name}: the update ratio"
        assert found["largest gradient error"] < 1e-3, f"{name}: its gradient check fails"
        assert found["validation at the end"] < 1.2, f"{name} does not learn"

# %% nbgrader={"grade": true, "grade_id": "fix", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): seven runs you do not see, one of each kind (a healthy one too)
# and a second wrong backward pass whose term is on another parameter, each handed to your
# `fix` with its true cause. The grader reads what your fixed run holds
# (its start, rate, labels, and its model's loss, gradients and scores on a few rows),
# checks that only the leaked part changed, puts it into its own copy of the run, and
# reads every instrument there with plain SGD: the start, the first update ratios, the
# gradients against the whole loss, the labels, and the loss on the digits' test rows
# (which no run carries) after training. A fix earns its share only if all read healthy.
### BEGIN HIDDEN TESTS
from course.grading import check

check("fix", globals())
### END HIDDEN TESTS

# %% [markdown]
# **Switch a leak on.** For every kind, a seed draws the same training rows, hidden size
# and base learning rate: the healthy run of a seed and its run with a leak share them.
# Before you choose a leak, predict which instrument it moves, and how far; then compare
# the two readings and the two curves.


# %%
def leak_switch(leak, seed):
    """The healthy run of `seed` beside the same run with `leak` switched on."""
    kinds = dict.fromkeys(["no leak", leak])  # "no leak" once when it is the choice
    show_readings({kind: make_run(kind, np.random.default_rng(seed), data) for kind in kinds})


_ = explore_plot(
    leak_switch,
    leak=widgets.Dropdown(options=RUN_KINDS, value="learning rate too low", description="leak"),
    seed=widgets.IntSlider(value=0, min=0, max=9, description="seed"),
)

# %% [markdown]
# ## What to take away
#
# - Read the first loss: it should be $\ln C$ for a small start. Far above is the scale.
# - Check the whole model's gradient once, small and in float64, before any long run.
# - Watch the update ratio per layer: about $10^{-3}$ to $10^{-2}$ for SGD says the
#   learning rate is in the right range, before the loss has had time to say anything.
# - Look inside the layers: a shrinking std, a saturated tanh, dead ReLUs each point at
#   the scale, the activation or the learning rate.
# - Make it memorise 20 examples before anything else, and compare the curve with a right
#   model's, not with "it goes down".
# - Evaluate in test mode, weighting batches by size, and watch validation against train.
# - Before calling a change an improvement, run seeds and compare them seed by seed.
# - Read a broken run's instruments in order, the start first: each rules out what it can.
