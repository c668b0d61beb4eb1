"""09's broken runs: whole training runs of a small network on the digits, each with at
most one leak, for the learner's instruments to diagnose (source/09_leaks, part 9).

A run is what a practitioner has in front of them: its code (this module), its data, the
numbers of its regimen, a fresh model at its initialisation, and the curves its training
draws. The model is the course's own small tanh network, not the learner's 04 network, so
that a leak is the run's, never a bug carried from an earlier assignment. The hidden check
draws runs with `make_run` from its secret seed; the notebook shows a few from public ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# What a diagnosis names: more causes than any set of runs has leaks, so that a diagnosis
# is never found by elimination. The runs of part 9 have the kinds in RUN_KINDS.
CAUSES = (
    "no leak",
    "initialisation too large",
    "initialisation too small",
    "a wrong backward pass",
    "learning rate too high",
    "learning rate too low",
    "labels that do not match the inputs",
    "evaluation in training mode",
    "over-fitting",
    "data sorted by label, never shuffled",
    "gradients never reset between steps",
    "softmax applied twice",
)
RUN_KINDS = (
    "no leak",
    "initialisation too large",
    "a wrong backward pass",
    "learning rate too high",
    "learning rate too low",
    "labels that do not match the inputs",
)


class TanhNet:
    """The grader's model for 09's instruments, and the model of its broken runs:
    x -> tanh(x W1 + b1) W2 + b2, softmax cross-entropy averaged over N, plus
    0.5 * reg * (|W1|^2 + |W2|^2). `.params` and `.loss(X, y=None)` as the course's
    networks (API.md 03): scores without y. With y and
    `train_noise`, the forward pass multiplies the hidden layer by a fixed mask scaled to
    keep its mean (dropout's training mode, without the randomness: a value the grader can
    reproduce). `hidden`: {parameter: (a, b)}, a bug planted for the gradient check: the
    loss has a term sum(a * sin(b * p)) that the gradients leave out. Planted in the loss,
    not added to a gradient (round 16): switching it off, or reading it, then gives back
    gradients that agree with the loss, never the disagreement a centred difference finds;
    only a derivative of the term, read from the grader's code, does (README, "Not
    protected")."""

    def __init__(self, params, reg=0.0, hidden=None, train_mask=None):
        self.params = params
        self.reg = reg
        self.hidden = hidden or {}
        self.train_mask = train_mask

    def loss(self, X, y=None):
        W1, b1, W2, b2 = (self.params[k] for k in ("W1", "b1", "W2", "b2"))
        hidden = np.tanh(X @ W1 + b1)
        if y is not None and self.train_mask is not None:
            hidden = hidden * self.train_mask
        scores = hidden @ W2 + b2
        if y is None:
            return scores
        shifted = scores - scores.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        N = len(X)
        loss = -log_p[np.arange(N), y].mean() + 0.5 * self.reg * (np.sum(W1**2) + np.sum(W2**2))
        for name, (a, b) in self.hidden.items():
            loss = loss + np.sum(a * np.sin(b * self.params[name]))
        dscores = np.exp(log_p)
        dscores[np.arange(N), y] -= 1
        dscores /= N
        dhidden = dscores @ W2.T
        if self.train_mask is not None:
            dhidden = dhidden * self.train_mask
        dz = dhidden * (1 - np.tanh(X @ W1 + b1) ** 2)
        grads = {
            "W1": X.T @ dz + self.reg * W1,
            "b1": dz.sum(axis=0),
            "W2": hidden.T @ dscores + self.reg * W2,
            "b2": dscores.sum(axis=0),
        }
        return loss, grads


class Run:
    """One run of minibatch SGD: `model()` makes a fresh model at the run's initialisation,
    `step(model, X, y)` is one update of its regimen (returns the batch's loss), and
    `train()` runs `steps` of them from a fresh model on batches drawn from `seed`,
    returning (the trained model, the loss of every step). The data are the run's own
    training and validation sets (X_train, y_train, X_val, y_val)."""

    def __init__(
        self,
        new_model: Callable[[], TanhNet],
        data: tuple,
        learning_rate: float,
        batch_size: int = 64,
        steps: int = 300,
        seed: int = 0,
    ):
        self.new_model = new_model
        self.X_train, self.y_train, self.X_val, self.y_val = data
        self.learning_rate, self.batch_size, self.steps, self.seed = (
            learning_rate,
            batch_size,
            steps,
            seed,
        )

    def model(self) -> TanhNet:
        return self.new_model()

    def with_changes(self, new_model=None, learning_rate=None, y_train=None) -> Run:
        """The same run (its data, batches, steps and seed) with what a fix changes: its
        models' maker, its learning rate, or its training labels."""
        return Run(
            self.new_model if new_model is None else new_model,
            (self.X_train, self.y_train if y_train is None else y_train, self.X_val, self.y_val),
            learning_rate=self.learning_rate if learning_rate is None else learning_rate,
            batch_size=self.batch_size,
            steps=self.steps,
            seed=self.seed,
        )

    def step(self, model, X, y) -> float:
        loss, grads = model.loss(X, y)
        for name, p in model.params.items():
            p -= self.learning_rate * grads[name]
        return float(loss)

    def train(self, steps: int | None = None) -> tuple[TanhNet, list[float]]:
        model, rng = self.model(), np.random.default_rng(self.seed)
        losses = []
        for _ in range(self.steps if steps is None else steps):
            batch = rng.choice(len(self.X_train), self.batch_size, replace=False)
            losses.append(self.step(model, self.X_train[batch], self.y_train[batch]))
        return model, losses


# A healthy run's numbers, and how far a leak moves them: each leak is far outside what a
# healthy run shows (measured: `python -m course.runs`, 30 runs of each kind), so that any
# reasonable threshold between them diagnoses it.
HEALTHY_RATE = (0.06, 0.18)
HIGH_RATE_FACTOR = (100.0, 300.0)  # too high: the healthy rate times this
LOW_RATE_FACTOR = (1000.0, 3000.0)  # too low: divided by this
OUTPUT_SCALE = 0.1  # W2's scale at a healthy start: scores near 0, loss near ln C
LARGE_SCALE = (25.0, 50.0)  # too large: both layers' scales times this (tanh saturates)


def make_run(kind: str, rng, data) -> Run:
    """A run with the leak `kind` (one of RUN_KINDS), its sizes, data and seed from `rng`.
    `data`: a course.data.Split of the digits (the run takes 600 of its training rows)."""
    if kind not in RUN_KINDS:
        raise ValueError(f"no run of kind {kind!r}: one of {RUN_KINDS}")
    D, C, H = data.X_train.shape[1], 10, int(rng.integers(10, 16))
    rows = rng.choice(len(data.X_train), 600, replace=False)
    X_train, y_train = data.X_train[rows], data.y_train[rows]
    if kind == "labels that do not match the inputs":
        y_train = np.roll(y_train, 1)  # each label moved one row down: off by one
    rate = rng.uniform(*HEALTHY_RATE)
    if kind == "learning rate too high":
        rate *= rng.uniform(*HIGH_RATE_FACTOR)
    elif kind == "learning rate too low":
        rate /= rng.uniform(*LOW_RATE_FACTOR)
    scale = rng.uniform(*LARGE_SCALE) if kind == "initialisation too large" else 1.0
    init_seed = int(rng.integers(2**31))
    hidden = {}
    if kind == "a wrong backward pass":  # one parameter's gradient misses a term of the loss
        name = str(rng.choice(["W1", "b1", "W2", "b2"]))
        shape = {"W1": (D, H), "b1": (H,), "W2": (H, C), "b2": (C,)}[name]
        hidden = {
            name: (rng.uniform(1e-3, 3e-3) * rng.choice([-1, 1], shape), rng.uniform(1, 3, shape))
        }

    def new_model():
        init = np.random.default_rng(init_seed)
        params = {
            "W1": scale * init.standard_normal((D, H)) / np.sqrt(D),
            "b1": np.zeros(H),
            "W2": scale * OUTPUT_SCALE * init.standard_normal((H, C)),
            "b2": np.zeros(C),
        }
        return TanhNet(params, hidden=hidden)

    return Run(
        new_model,
        (X_train, y_train, data.X_val.copy(), data.y_val.copy()),
        learning_rate=float(rate),
        seed=int(rng.integers(2**31)),
    )


def first_ratios(run: Run, steps: int = 10) -> list[float]:
    """W1's update ratio (|change| / |before|) at each of the run's first `steps` steps from
    a fresh model, on batches drawn from seed 0 (as part 9's `first_update_ratios`)."""
    model, order, ratios = run.model(), np.random.default_rng(0), []
    for _ in range(steps):
        batch = order.choice(len(run.X_train), run.batch_size, replace=False)
        before = model.params["W1"].copy()
        with np.errstate(all="ignore"):  # a diverged run's scores overflow
            run.step(model, run.X_train[batch], run.y_train[batch])
        ratios.append(float(np.linalg.norm(model.params["W1"] - before) / np.linalg.norm(before)))
    return ratios


# The runs at the edge of their kind (review 34): a diagnosis whose threshold sits at the
# healthy runs' edge, or that reads one step's ratio, is wrong on some draws of make_run
# and right on others; the hidden check adds one run of each, so that it fails on every
# seed. The key: what the edge run has the most of, from its first ratios.
EDGE_KINDS = {
    "no leak": max,  # the healthy run whose first layer moves the fastest (near 0.014)
    "learning rate too high": lambda ratios: -ratios[-1],  # a saturated layer stops moving
}
EDGE_DRAWS = 32  # measured: the healthy edge above 1.1e-2 on 40 of 40 seeds (16: 1.06e-2)


def make_edge_run(kind: str, rng, data) -> Run:
    """The run of `kind` (one of EDGE_KINDS) at the edge of its kind: of EDGE_DRAWS runs
    drawn from `rng` by make_run, the one with the most of EDGE_KINDS[kind]."""
    if kind not in EDGE_KINDS:
        raise ValueError(f"no edge run of kind {kind!r}: one of {tuple(EDGE_KINDS)}")
    drawn = [make_run(kind, rng, data) for _ in range(EDGE_DRAWS)]
    return max(drawn, key=lambda run: EDGE_KINDS[kind](first_ratios(run)))


def mystery_runs(seed: int = 2032) -> dict[str, Run]:
    """Part 9's three runs to diagnose: {"run A": ..., ...}, each of a kind of RUN_KINDS
    drawn from `seed`, all three different."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(RUN_KINDS, size=3, replace=False)
    from course.data import digits  # here: importing course.runs loads no data

    data = digits()
    return {
        f"run {letter}": make_run(str(k), rng, data) for letter, k in zip("ABC", kinds, strict=True)
    }


def _readings(run: Run) -> tuple[float, float, float]:
    """(the loss at the start, W1's largest update ratio over the first ten steps, the
    validation loss at the end): the numbers that tell the kinds apart, computed here
    without the learner's instruments."""

    def mean_loss(model, X, y):
        scores = model.loss(X)
        shifted = scores - scores.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return float(-log_p[np.arange(len(y)), y].mean())

    start = mean_loss(run.model(), run.X_train, run.y_train)
    with np.errstate(all="ignore"):  # a diverged run's scores overflow
        return start, max(first_ratios(run)), mean_loss(run.train()[0], run.X_val, run.y_val)


if __name__ == "__main__":  # the ranges each kind's readings take, over 30 runs
    from course.data import digits

    split = digits()
    for kind in RUN_KINDS:
        found = np.array(
            [_readings(make_run(kind, np.random.default_rng(s), split)) for s in range(30)]
        )
        print(
            f"{kind:38} start {found[:, 0].min():5.2f} to {found[:, 0].max():5.2f}, "
            f"ratio {found[:, 1].min():.1e} to {found[:, 1].max():.1e}, "
            f"validation {found[:, 2].min():6.2f} to {found[:, 2].max():6.2f}"
        )
    for kind in EDGE_KINDS:  # the hidden check's edge runs, 30 of each
        ratios = np.array(
            [first_ratios(make_edge_run(kind, np.random.default_rng(s), split)) for s in range(30)]
        )
        print(
            f"{kind + ', at its edge':38} largest ratio {ratios.max(axis=1).min():.1e} to "
            f"{ratios.max(axis=1).max():.1e}, tenth {ratios[:, -1].min():.1e} to "
            f"{ratios[:, -1].max():.1e}"
        )
