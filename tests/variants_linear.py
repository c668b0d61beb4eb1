"""Student variants of assignment 02 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, m

ASSIGNMENT, NOTEBOOK = "02_linear", "linear"

SVM_NAIVE, SVM_VEC = "svm_loss_naive_solution", "svm_loss_vectorized_solution"
SOFT_NAIVE, SOFT_VEC = "softmax_loss_naive_solution", "softmax_loss_vectorized_solution"
PRED, PREDICTIONS = "predictions_solution", "linear_predictions"

MUTANTS = [
    # svm_loss_naive
    m(
        "SVM: the correct class counted in the margins",
        SVM_NAIVE,
        {"svm_loss_naive"},
        ("            if j == y[i]:\n                continue\n", ""),
    ),
    m(
        "SVM: gradient not averaged over N",
        SVM_NAIVE,
        {"svm_loss_naive"},
        ("dW = dW / num_train + 2 * reg * W", "dW = dW + 2 * reg * W"),
    ),
    m(
        "SVM: regulariser's gradient reg * W",
        SVM_NAIVE,
        {"svm_loss_naive"},
        ("dW = dW / num_train + 2 * reg * W", "dW = dW / num_train + reg * W"),
    ),
    m(
        "SVM: correct-class column never updated",
        SVM_NAIVE,
        {"svm_loss_naive"},
        ("                dW[:, y[i]] -= X[i]\n", ""),
    ),
    # svm_loss_vectorized
    m(
        "SVM vectorised: correct-class margins not zeroed",
        SVM_VEC,
        {"svm_loss_vectorized"},
        ("    margins[rows, y] = 0.0\n", ""),
    ),
    m(
        "SVM vectorised: counts not subtracted from the correct class",
        SVM_VEC,
        {"svm_loss_vectorized"},
        ("    counts[rows, y] = -counts.sum(axis=1)\n", ""),
    ),
    m(
        "SVM vectorised: no regularisation in the loss",
        SVM_VEC,
        {"svm_loss_vectorized"},
        (
            "loss = margins.sum() / num_train + reg * np.sum(W * W)",
            "loss = margins.sum() / num_train",
        ),
    ),
    m(
        "SVM vectorised: gradient summed, not averaged",
        SVM_VEC,
        {"svm_loss_vectorized"},
        ("X.T @ counts / num_train", "X.T @ counts"),
    ),
    # softmax_loss_naive
    m(
        "softmax: no max shift (overflows at large scores)",
        SOFT_NAIVE,
        {"softmax_numerics"},
        ("shifted = scores - np.max(scores)", "shifted = scores"),
    ),
    m(
        "softmax: log of a probability (underflows at large scores)",
        SOFT_NAIVE,
        {"softmax_numerics"},
        (
            "log_probs = shifted - log_norm",
            "log_probs = np.log(np.exp(shifted) / np.sum(np.exp(shifted)))",
        ),
    ),
    m(
        "softmax: gradient without the one-hot",
        SOFT_NAIVE,
        {"softmax_loss_naive"},
        ("(probs[k] - (k == y[i]))", "probs[k]"),
    ),
    m(
        "softmax: regulariser missing from the gradient",
        SOFT_NAIVE,
        {"softmax_loss_naive"},
        ("dW = dW / num_train + 2 * reg * W", "dW = dW / num_train"),
    ),
    # softmax_loss_vectorized
    m(
        "softmax vectorised: one maximum for the whole batch",
        SOFT_VEC,
        {"softmax_numerics"},
        ("scores.max(axis=1, keepdims=True)", "scores.max()"),
    ),
    m(
        "softmax vectorised: log of a probability",
        SOFT_VEC,
        {"softmax_numerics"},
        (
            "log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))",
            "log_probs = np.log(np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True))",
        ),
    ),
    m(
        "softmax vectorised: max without keepdims",
        SOFT_VEC,
        {"softmax_loss_vectorized"},
        ("scores.max(axis=1, keepdims=True)", "scores.max(axis=1)"),
    ),
    m(
        "softmax vectorised: loss summed, not averaged",
        SOFT_VEC,
        {"softmax_loss_vectorized"},
        ("-log_probs[rows, y].mean()", "-log_probs[rows, y].sum()"),
    ),
    m(
        "softmax vectorised: textbook softmax, no shift at all",
        SOFT_VEC,
        {"softmax_numerics"},
        ("shifted = scores - scores.max(axis=1, keepdims=True)", "shifted = scores"),
    ),
    m(
        "softmax vectorised: -log(p + 1e-12)",
        SOFT_VEC,
        {"softmax_numerics"},
        (
            "loss = -log_probs[rows, y].mean() + reg * np.sum(W * W)",
            "probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)\n"
            "    loss = -np.log(probs[rows, y] + 1e-12).mean() + reg * np.sum(W * W)",
        ),
    ),
    m(
        "softmax: -log(p + 1e-12)",
        SOFT_NAIVE,
        {"softmax_numerics"},
        (
            "        loss -= log_probs[y[i]]",
            "        loss -= np.log(np.exp(log_probs[y[i]]) + 1e-12)",
        ),
    ),
    m(
        "softmax: loss not averaged",
        SOFT_NAIVE,
        {"softmax_loss_naive"},
        ("loss = loss / num_train + reg", "loss = loss + reg"),
    ),
    m(
        "softmax vectorised: regulariser counted twice in the gradient",
        SOFT_VEC,
        {"softmax_loss_vectorized"},
        (
            "dW = X.T @ dscores / num_train + 2 * reg * W",
            "dW = X.T @ dscores / num_train + 4 * reg * W",
        ),
    ),
    # predictions
    m(
        "predictions: log10 for the natural log",
        PRED,
        {PREDICTIONS},
        ("return -np.log(eps)", "return -np.log10(eps)"),
    ),
    m(
        "predictions: the regulariser's gradient reg * W (its 2 left out)",
        PRED,
        {PREDICTIONS},
        ("(1 - 2 * learning_rate * reg) ** steps", "(1 - learning_rate * reg) ** steps"),
    ),
    m(
        "predictions: the steps added, not compounded",
        PRED,
        {PREDICTIONS},
        ("(1 - 2 * learning_rate * reg) ** steps", "1 - 2 * learning_rate * reg * steps"),
    ),
    m(
        "predictions: the notebook's settings only, not the formula",
        PRED,
        {PREDICTIONS},
        ("return -np.log(eps)", "return 27.631021115928547"),
        ("return (1 - 2 * learning_rate * reg) ** steps", "return 0.017587946605721567"),
    ),
]

EXPECTED_SURVIVORS: set[str] = set()

SVM_NAIVE_COUNTING = '''\
def svm_loss_naive(W, X, y, reg):
    """Counts the positive margins of each example, then moves the correct column once."""
    loss, dW = 0.0, np.zeros_like(W)
    for i in range(X.shape[0]):
        scores = np.zeros(W.shape[1])
        for j in range(W.shape[1]):
            for d in range(W.shape[0]):
                scores[j] += X[i, d] * W[d, j]
        positive = 0
        for j in range(W.shape[1]):
            margin = scores[j] - scores[y[i]] + 1.0
            if j != y[i] and margin > 0:
                loss += margin
                positive += 1
                dW[:, j] += X[i]
        dW[:, y[i]] -= positive * X[i]
    n = X.shape[0]
    return loss / n + reg * (W**2).sum(), dW / n + reg * 2.0 * W
'''

SVM_NAIVE_ROWWISE = '''\
def svm_loss_naive(W, X, y, reg):
    """One loop over examples, each row's margins as an array."""
    N = len(y)
    loss, dW = 0.0, np.zeros(W.shape)
    for x_i, y_i in zip(X, y):
        margins = np.maximum(0, x_i @ W - x_i @ W[:, y_i] + 1)
        margins[y_i] = 0
        loss += margins.sum() / N
        active = (margins > 0).astype(float)
        active[y_i] = -active.sum()
        dW += np.outer(x_i, active) / N
    return loss + reg * np.sum(W * W), dW + 2 * reg * W
'''

SVM_VEC_ONE_HOT = '''\
def svm_loss_vectorized(W, X, y, reg):
    """Margins of every class, the correct ones (exactly 1) removed by a one-hot mask."""
    N, C = X.shape[0], W.shape[1]
    one_hot = np.eye(C)[y]
    scores = X @ W
    correct = np.sum(scores * one_hot, axis=1, keepdims=True)
    margins = np.where(one_hot == 1, 0.0, np.maximum(0.0, scores - correct + 1.0))
    active = (margins > 0) * 1.0
    dscores = active - one_hot * active.sum(axis=1, keepdims=True)
    return np.mean(margins.sum(axis=1)) + reg * np.vdot(W, W), X.T.dot(dscores) / N + 2 * reg * W
'''

SVM_VEC_EINSUM = '''\
def svm_loss_vectorized(W, X, y, reg):
    """take_along_axis for the correct scores, einsum for the gradient."""
    scores = np.einsum("nd,dc->nc", X, W)
    correct = np.take_along_axis(scores, y[:, None], axis=1)
    margins = np.clip(scores - correct + 1, 0, None)
    np.put_along_axis(margins, y[:, None], 0, axis=1)
    coef = np.sign(margins)
    np.put_along_axis(coef, y[:, None], -coef.sum(axis=1, keepdims=True), axis=1)
    n = len(X)
    loss = float(margins.sum()) / n + reg * float(np.sum(np.square(W)))
    return loss, np.einsum("nd,nc->dc", X, coef) / n + 2 * reg * W
'''

SOFTMAX_NAIVE_OUTER = '''\
def softmax_loss_naive(W, X, y, reg):
    """log-sum-exp written as max + log(sum(exp(s - max))); gradient by outer products."""
    loss, dW = 0.0, np.zeros_like(W)
    N = X.shape[0]
    for i in range(N):
        s = X[i].dot(W)
        top = s.max()
        lse = top + np.log(np.exp(s - top).sum())
        loss += lse - s[y[i]]
        p = np.exp(s - lse)
        dW += np.outer(X[i], p)
        dW[:, y[i]] -= X[i]
    return loss / N + reg * np.sum(W * W), dW / N + 2 * reg * W
'''

SOFTMAX_NAIVE_LOGADDEXP = '''\
def softmax_loss_naive(W, X, y, reg):
    """The normaliser accumulated class by class with logaddexp, never exp of a large score."""
    N, C = X.shape[0], W.shape[1]
    loss, dW = 0.0, np.zeros_like(W)
    for i in range(N):
        s = X[i] @ W
        log_norm = -np.inf
        for k in range(C):
            log_norm = np.logaddexp(log_norm, s[k])
        loss += (log_norm - s[y[i]]) / N
        for k in range(C):
            p_k = np.exp(s[k] - log_norm)
            dW[:, k] += X[i] * (p_k - float(k == y[i])) / N
    return loss + reg * np.sum(W**2), dW + 2 * reg * W
'''

SOFTMAX_VEC_LSE = '''\
def softmax_loss_vectorized(W, X, y, reg):
    """log-sum-exp per row, one-hot labels from np.eye."""
    N, C = X.shape[0], W.shape[1]
    s = X @ W
    top = s.max(axis=1)
    lse = top + np.log(np.sum(np.exp(s - top[:, None]), axis=1))
    loss = np.mean(lse - s[np.arange(N), y]) + reg * np.sum(W * W)
    dscores = np.exp(s - lse[:, None]) - np.eye(C)[y]
    return loss, X.T @ dscores / N + 2 * reg * W
'''

SOFTMAX_VEC_LOGADDEXP = '''\
def softmax_loss_vectorized(W, X, y, reg):
    """np.logaddexp.reduce: a stable log-sum-exp without an explicit shift."""
    scores = X.dot(W)
    log_norm = np.logaddexp.reduce(scores, axis=1, keepdims=True)
    log_probs = scores - log_norm
    picked = np.take_along_axis(log_probs, y.reshape(-1, 1), axis=1)
    probs = np.exp(log_probs)
    np.subtract.at(probs, (np.arange(len(y)), y), 1.0)
    n = scores.shape[0]
    return -picked.sum() / n + reg * (W * W).sum(), X.T.dot(probs) / n + reg * 2 * W
'''

ALTERNATES = [
    Alternate("SVM loops counting positive margins", {SVM_NAIVE: SVM_NAIVE_COUNTING}),
    Alternate("SVM loop with row-wise arrays", {SVM_NAIVE: SVM_NAIVE_ROWWISE}),
    Alternate("SVM vectorised with a one-hot mask", {SVM_VEC: SVM_VEC_ONE_HOT}),
    Alternate("SVM vectorised with einsum", {SVM_VEC: SVM_VEC_EINSUM}),
    Alternate("softmax loops with outer products", {SOFT_NAIVE: SOFTMAX_NAIVE_OUTER}),
    Alternate("softmax loops with logaddexp", {SOFT_NAIVE: SOFTMAX_NAIVE_LOGADDEXP}),
    Alternate("softmax vectorised log-sum-exp", {SOFT_VEC: SOFTMAX_VEC_LSE}),
    Alternate("softmax vectorised logaddexp.reduce", {SOFT_VEC: SOFTMAX_VEC_LOGADDEXP}),
    Alternate(
        "predictions computed otherwise",
        {
            PRED: "import math\n\n\ndef predicted_clipped_loss(eps):\n"
            "    return math.log(1 / eps)\n\n\n"
            "def predicted_regulariser_factor(learning_rate, reg, steps):\n"
            "    factor = 1.0\n    for _ in range(steps):\n"
            "        factor -= 2 * learning_rate * reg * factor\n    return factor\n"
        },
    ),
]

# Each graded function, and the solution cell that defines it.
GRADED_FUNCTIONS = {
    "svm_loss_naive": {SVM_NAIVE},
    "svm_loss_vectorized": {SVM_VEC},
    "softmax_loss_naive": {SOFT_NAIVE},
    "softmax_loss_vectorized": {SOFT_VEC},
}
