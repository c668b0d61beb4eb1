"""Student variants of assignment 07 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, Convention, m, wrong

ASSIGNMENT, NOTEBOOK = "07_recurrent", "recurrent"

RS, RQ = "rnn_step_solution", "rnn_sequence_solution"
LS, LQ = "lstm_step_solution", "lstm_sequence_solution"
TL, TSL, CLIP, PRED = (
    "temporal_layers_solution",
    "temporal_softmax_loss_solution",
    "clip_solution",
    "predictions_solution",
)
TRAINING = "char_training"

MUTANTS = [
    # rnn step
    m(
        "rnn step: bias missing",
        RS,
        {"rnn_step", "rnn_sequence", TRAINING},
        ("np.tanh(x @ Wx + prev_h @ Wh + b)", "np.tanh(x @ Wx + prev_h @ Wh)"),
    ),
    m(
        "rnn step: tanh's derivative as 1 - h",
        RS,
        {"rnn_step", "rnn_sequence", TRAINING},
        ("da = dnext_h * (1 - next_h**2)", "da = dnext_h * (1 - next_h)"),
    ),
    m(
        "rnn step: dprev_h through Wh, not its transpose",
        RS,
        {"rnn_step", "rnn_sequence", TRAINING},
        ("da @ Wh.T, x.T @ da", "da @ Wh, x.T @ da"),
    ),
    m(
        "rnn step: db not summed over the batch",
        RS,
        {"rnn_step"},
        ("da.sum(axis=0)", "da.mean(axis=0)"),
    ),
    # rnn sequence
    m(
        "rnn sequence: h stored one step late (h[:, t] is the state before step t)",
        RQ,
        {"rnn_sequence", TRAINING},
        (
            "prev_h, step_cache = rnn_step_forward(x[:, t], prev_h, Wx, Wh, b)\n"
            "        h[:, t] = prev_h",
            "h[:, t] = prev_h\n"
            "        prev_h, step_cache = rnn_step_forward(x[:, t], prev_h, Wx, Wh, b)",
        ),
    ),
    m(
        "rnn sequence: the gradient from the next step dropped",
        RQ,
        {"rnn_sequence", TRAINING},
        (
            "rnn_step_backward(dh[:, t] + dprev_h, caches[t])",
            "rnn_step_backward(dh[:, t], caches[t])",
        ),
    ),
    m(
        "rnn sequence: weights' gradients of the last step only",
        RQ,
        {"rnn_sequence", TRAINING},
        ("dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t", "dWx, dWh, db = dWx_t, dWh_t, db_t"),
    ),
    m(
        "rnn sequence: every step starts from h0",
        RQ,
        {"rnn_sequence", TRAINING},
        (
            "prev_h, step_cache = rnn_step_forward(x[:, t], prev_h, Wx, Wh, b)\n"
            "        h[:, t] = prev_h",
            "h[:, t], step_cache = rnn_step_forward(x[:, t], h0, Wx, Wh, b)",
        ),
    ),
    # lstm step
    m(
        "lstm step: sigmoid as 1 / (1 + exp(-a)) (overflows and warns at -800)",
        LS,
        {"lstm_step"},
        (
            "    e = np.exp(-np.abs(a))\n    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))",
            "    return 1 / (1 + np.exp(-a))",
        ),
    ),
    m(
        "lstm step: PyTorch's gate order i, f, g, o",
        LS,
        {"lstm_step", "lstm_sequence"},
        (
            "i, f, o = np.split(sigmoid(a[:, : 3 * H]), 3, axis=1)  # one call: the same values\n"
            "    g = np.tanh(a[:, 3 * H :])",
            "i, f, o = np.split(sigmoid(a[:, np.r_[: 2 * H, 3 * H : 4 * H]]), 3, axis=1)\n"
            "    g = np.tanh(a[:, 2 * H : 3 * H])",
        ),
    ),
    m(
        "lstm step: h from the cell state without tanh",
        LS,
        {"lstm_step", "lstm_sequence"},
        ("next_h = o * tanh_c", "next_h = o * next_c"),
    ),
    m(
        "lstm step: dprev_c not through the forget gate",
        LS,
        {"lstm_step", "lstm_sequence"},
        ("da @ Wh.T, dc * f, x.T @ da", "da @ Wh.T, dc, x.T @ da"),
    ),
    m(
        "lstm step: dc without the path through h",
        LS,
        {"lstm_step", "lstm_sequence"},
        ("dc = dnext_c + dnext_h * o * (1 - tanh_c**2)", "dc = dnext_c"),
    ),
    # lstm sequence
    m(
        "lstm sequence: the cell's gradient not carried back",
        LQ,
        {"lstm_sequence"},
        (
            "lstm_step_backward(dh[:, t] + dprev_h, dprev_c, caches[t])",
            "lstm_step_backward(dh[:, t] + dprev_h, np.zeros_like(dprev_c), caches[t])",
        ),
    ),  # fmt: skip
    m(
        "lstm sequence: the cell state reset at every step",
        LQ,
        {"lstm_sequence"},
        (
            "lstm_step_forward(x[:, t], prev_h, prev_c, Wx, Wh, b)",
            "lstm_step_forward(x[:, t], prev_h, np.zeros((N, H)), Wx, Wh, b)",
        ),
    ),
    m(
        "lstm sequence: c0 = h0",
        LQ,
        {"lstm_sequence"},
        ("prev_h, prev_c = h0, np.zeros((N, H))", "prev_h, prev_c = h0, h0.copy()"),
    ),
    # temporal layers
    wrong(
        "embedding: a repeated id's gradient assigned, not added",
        TL,
        {"temporal_layers", TRAINING},
        ("np.add.at(dW, x, dout)", "dW[x] = dout"),
        capped={"temporal_layers"},
    ),
    wrong(
        "embedding: dW[x] += dout (buffered: a repeated id keeps one gradient)",
        TL,
        {"temporal_layers", TRAINING},
        ("np.add.at(dW, x, dout)", "dW[x] += dout"),
        capped={"temporal_layers"},
    ),
    m(
        "temporal affine: db averaged over time",
        TL,
        {"temporal_layers", TRAINING},
        ("dout.sum(axis=(0, 1))", "dout.sum(axis=0).mean(axis=0)"),
    ),
    m(
        "temporal affine: dw of the last step only",
        TL,
        {"temporal_layers", TRAINING},
        ("dw = x.reshape(-1, D).T @ dout.reshape(-1, M)", "dw = x[:, -1].T @ dout[:, -1]"),
    ),
    # temporal softmax loss
    m(
        "loss: the mask ignored",
        TSL,
        {"temporal_softmax_loss"},
        ("loss = -np.sum(picked * mask) / N", "loss = -np.sum(picked) / N"),
        ("return loss, dx * mask[:, :, None] / N", "return loss, dx / N"),
    ),
    m(
        "loss: averaged over the unmasked steps (PyTorch's convention)",
        TSL,
        {"temporal_softmax_loss", TRAINING},
        ("loss = -np.sum(picked * mask) / N", "loss = -np.sum(picked * mask) / mask.sum()"),
        (
            "return loss, dx * mask[:, :, None] / N",
            "return loss, dx * mask[:, :, None] / mask.sum()",
        ),
    ),
    m(
        "loss: the largest score not subtracted",
        TSL,
        {"temporal_softmax_loss"},
        ("shifted = x - x.max(axis=2, keepdims=True)", "shifted = x"),
    ),
    m(
        "loss: dx without the one-hot term",
        TSL,
        {"temporal_softmax_loss", TRAINING},
        (
            "np.put_along_axis(dx, y[:, :, None], np.take_along_axis(dx, y[:, :, None], axis=2) - 1, axis=2)",  # noqa: E501
            "pass",
        ),
    ),
    # clip_grad_norm
    wrong(
        "clip: nothing clipped (the gradients returned as given)",
        CLIP,
        {"clip_grad_norm"},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            "return {name: g.copy() for name, g in grads.items()}, total_norm",
        ),
    ),
    wrong(
        "clip: nothing clipped (the same dict returned)",
        CLIP,
        {"clip_grad_norm"},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            "return grads, total_norm",
        ),
    ),
    wrong(
        "clip: clipped to max_norm per element (np.clip), not by the norm",
        CLIP,
        {"clip_grad_norm"},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            "return {name: np.clip(g, -max_norm, max_norm) for name, g in grads.items()}, "
            "total_norm",
        ),
    ),
    wrong(
        "clip: each array clipped on its own",
        CLIP,
        {"clip_grad_norm", TRAINING},
        (
            "scale = max_norm / total_norm if total_norm > max_norm else 1.0\n"
            "    return {name: g * scale for name, g in grads.items()}, total_norm",
            "return {name: g * min(1.0, max_norm / np.linalg.norm(g)) for name, g in grads.items()}, "  # noqa: E501
            "total_norm",
        ),
        capped={"clip_grad_norm"},
    ),
    # Issue 54: kept the cell's 2 of 2 while the check's arrays were named g0, g1, ...
    wrong(
        "clip: the biases (keys starting with 'b') left unclipped",
        CLIP,
        {"clip_grad_norm", TRAINING},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            'return {name: g if name.startswith("b") else g * scale for name, g in grads.items()}, '
            "total_norm",
        ),
        capped={"clip_grad_norm"},
    ),
    wrong(
        "clip: always rescaled to the limit",
        CLIP,
        {"clip_grad_norm"},
        (
            "scale = max_norm / total_norm if total_norm > max_norm else 1.0",
            "scale = max_norm / total_norm",
        ),
    ),
    wrong(
        "clip: the norm returned after clipping",
        CLIP,
        {"clip_grad_norm"},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            "return {name: g * scale for name, g in grads.items()}, total_norm * scale",
        ),
    ),
    m(
        "clip: the squared norm",
        CLIP,
        {"clip_grad_norm", TRAINING},
        (
            "total_norm = float(np.sqrt(sum(np.sum(np.square(g)) for g in grads.values())))",
            "total_norm = float(sum(np.sum(np.square(g)) for g in grads.values()))",
        ),
    ),
    m(
        "clip: in place",
        CLIP,
        {"clip_grad_norm"},
        (
            "return {name: g * scale for name, g in grads.items()}, total_norm",
            "for g in grads.values():\n        g *= scale\n    return grads, total_norm",
        ),
    ),
    # predictions
    m(
        "prediction: log V, not summed over T",
        PRED,
        {"recurrent_predictions"},
        ("return T * np.log(V)", "return np.log(V)"),
    ),
    m(
        "prediction: the ratio growing linearly",
        PRED,
        {"recurrent_predictions"},
        ("return radius**steps", "return radius * steps"),
    ),
    # Review rev37: more realistic slips, each judged in-process before it was added.
    wrong(
        "rnn step: dWh from next_h, not prev_h",
        RS,
        {"rnn_step"},
        ("prev_h.T @ da", "next_h.T @ da"),
    ),
    wrong(
        "rnn sequence: the backward pass walks forwards in time",
        RQ,
        {"rnn_sequence"},
        ("for t in reversed(range(T)):", "for t in range(T):"),
    ),
    wrong(
        "lstm step: the forget gate's gradient through prev_h, not prev_c",
        LS,
        {"lstm_step"},
        ("dc * prev_c * f * (1 - f)", "dc * prev_h * f * (1 - f)"),
    ),
    wrong(
        "lstm step: the output gate's gradient from dc, not dnext_h",
        LS,
        {"lstm_step"},
        ("dnext_h * tanh_c * o * (1 - o)", "dc * tanh_c * o * (1 - o)"),
    ),
    wrong(
        "lstm step: tanh's derivative for g as 1 - g",
        LS,
        {"lstm_step"},
        ("dc * i * (1 - g**2)", "dc * i * (1 - g)"),
    ),
    wrong(
        "lstm step: the gates read in the order f, i, o, g",
        LS,
        {"lstm_step"},
        ("i, f, o = np.split(", "f, i, o = np.split("),
    ),
    wrong(
        "lstm sequence: the cell state stored as h",
        LQ,
        {"lstm_sequence"},
        ("h[:, t] = prev_h", "h[:, t] = prev_c"),
    ),
    wrong(
        "temporal affine: db summed over the batch only",
        TL,
        {"temporal_layers"},
        ("dout.sum(axis=(0, 1))", "dout.sum(axis=0)"),
    ),
    wrong(
        "loss: the mask applied to the loss but not to dx",
        TSL,
        {"temporal_softmax_loss"},
        ("return loss, dx * mask[:, :, None] / N", "return loss, dx / N"),
    ),
    wrong(
        "loss: averaged over N * T",
        TSL,
        {"temporal_softmax_loss"},
        ("loss = -np.sum(picked * mask) / N", "loss = -np.sum(picked * mask) / (N * x.shape[1])"),
        (
            "return loss, dx * mask[:, :, None] / N",
            "return loss, dx * mask[:, :, None] / (N * x.shape[1])",
        ),
    ),
    wrong(
        "clip: the global norm as the sum of each array's norm",
        CLIP,
        {"clip_grad_norm"},
        (
            "float(np.sqrt(sum(np.sum(np.square(g)) for g in grads.values())))",
            "float(sum(np.sqrt(np.sum(np.square(g))) for g in grads.values()))",
        ),
    ),
    m(
        "prediction: the gradient scale as sqrt of the ratio",
        PRED,
        {"recurrent_predictions"},
        ("return T2 / T1", "return (T2 / T1) ** 0.5"),
    ),
    # Review 54.
    wrong(
        "rnn step: tanh's derivative as 1 - tanh(next_h)**2 (tanh applied twice)",
        RS,
        {"rnn_step", "rnn_sequence"},
        ("da = dnext_h * (1 - next_h**2)", "da = dnext_h * (1 - np.tanh(next_h) ** 2)"),
    ),
    wrong(
        "lstm step: the input gate's gradient without g",
        LS,
        {"lstm_step", "lstm_sequence"},
        ("dc * g * i * (1 - i),", "dc * i * (1 - i),"),
    ),
    wrong(
        "lstm sequence: dh0 returned as the cell's gradient, dprev_c",
        LQ,
        {"lstm_sequence"},
        ("return dx, dprev_h, dWx, dWh, db", "return dx, dprev_c, dWx, dWh, db"),
    ),
    wrong(
        "loss: dx not divided by N",
        TSL,
        {"temporal_softmax_loss"},
        ("return loss, dx * mask[:, :, None] / N", "return loss, dx * mask[:, :, None]"),
    ),
]

RNN_STEP_DICT = """\
def rnn_step_forward(x, prev_h, Wx, Wh, b):
    a = np.dot(x, Wx) + np.dot(prev_h, Wh) + b
    next_h = np.tanh(a)
    return next_h, {"x": x, "prev_h": prev_h, "Wx": Wx, "Wh": Wh, "a": a}


def rnn_step_backward(dnext_h, cache):
    da = dnext_h / np.cosh(cache["a"]) ** 2
    dx = np.dot(da, cache["Wx"].T)
    dprev_h = np.dot(da, cache["Wh"].T)
    return dx, dprev_h, np.dot(cache["x"].T, da), np.dot(cache["prev_h"].T, da), np.sum(da, 0)
"""

RNN_STEP_EINSUM = """\
def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(np.einsum("nd,dh->nh", x, Wx) + np.einsum("nk,kh->nh", prev_h, Wh) + b)
    return next_h, (x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, next_h = cache
    da = dnext_h - dnext_h * next_h * next_h
    return (np.einsum("nh,dh->nd", da, Wx), np.einsum("nh,kh->nk", da, Wh),
            np.einsum("nd,nh->dh", x, da), np.einsum("nk,nh->kh", prev_h, da),
            np.einsum("nh->h", da))
"""

RNN_SEQ_STACKED = """\
def rnn_forward(x, h0, Wx, Wh, b):
    hs, caches, h = [], [], h0
    for t in range(x.shape[1]):
        h, c = rnn_step_forward(x[:, t, :], h, Wx, Wh, b)
        hs.append(h)
        caches.append(c)
    return np.stack(hs, axis=1), {"steps": caches, "D": x.shape[2]}


def rnn_backward(dh, cache):
    grads_x, carry = [], np.zeros_like(dh[:, 0])
    dWx = dWh = db = 0
    for t in range(dh.shape[1] - 1, -1, -1):
        dx_t, carry, a, b_, c = rnn_step_backward(dh[:, t] + carry, cache["steps"][t])
        grads_x.insert(0, dx_t)
        dWx, dWh, db = dWx + a, dWh + b_, db + c
    return np.stack(grads_x, axis=1), carry, dWx, dWh, db
"""

RNN_SEQ_DIRECT = """\
def rnn_forward(x, h0, Wx, Wh, b):
    xs = np.transpose(x, (1, 0, 2))
    hs = [h0]
    for x_t in xs:
        hs.append(np.tanh(x_t @ Wx + hs[-1] @ Wh + b))
    return np.transpose(np.array(hs[1:]), (1, 0, 2)), (xs, hs, Wx, Wh)


def rnn_backward(dh, cache):
    xs, hs, Wx, Wh = cache
    T = len(xs)
    dxs = np.zeros_like(xs)
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros(Wh.shape[1])
    dnext = np.zeros_like(hs[0])
    for t in reversed(range(T)):
        da = (dh[:, t] + dnext) * (1 - hs[t + 1] ** 2)
        dxs[t] = da @ Wx.T
        dWx += xs[t].T @ da
        dWh += hs[t].T @ da
        db += da.sum(0)
        dnext = da @ Wh.T
    return np.transpose(dxs, (1, 0, 2)), dnext, dWx, dWh, db
"""

LSTM_STEP_SPLIT = """\
def sigmoid(a):
    return np.exp(-np.logaddexp(0, -a))


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    a_i, a_f, a_o, a_g = np.split(x @ Wx + prev_h @ Wh + b, 4, axis=1)
    i, f, o, g = sigmoid(a_i), sigmoid(a_f), sigmoid(a_o), np.tanh(a_g)
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    return next_h, next_c, dict(x=x, h=prev_h, c=prev_c, Wx=Wx, Wh=Wh, i=i, f=f, o=o, g=g,
                                nc=next_c)


def lstm_step_backward(dnext_h, dnext_c, cache):
    k = cache
    t = np.tanh(k["nc"])
    do = dnext_h * t
    dc = dnext_c + dnext_h * k["o"] * (1 - t * t)
    di, df, dg = dc * k["g"], dc * k["c"], dc * k["i"]
    da = np.hstack([di * k["i"] * (1 - k["i"]), df * k["f"] * (1 - k["f"]),
                    do * k["o"] * (1 - k["o"]), dg * (1 - k["g"] ** 2)])
    return (da @ k["Wx"].T, da @ k["Wh"].T, dc * k["f"], k["x"].T @ da, k["h"].T @ da,
            da.sum(axis=0))
"""

LSTM_STEP_TANH_SIGMOID = """\
def sigmoid(a):
    return 0.5 * (1 + np.tanh(0.5 * a))


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    H = prev_h.shape[1]
    a = np.dot(x, Wx) + np.dot(prev_h, Wh) + b
    gates = sigmoid(a[:, : 3 * H])
    g = np.tanh(a[:, 3 * H :])
    i, f, o = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H :]
    next_c = i * g + f * prev_c
    next_h = np.tanh(next_c) * o
    return next_h, next_c, (x, prev_h, prev_c, Wx, Wh, gates, g, next_c)


def lstm_step_backward(dnext_h, dnext_c, cache):
    x, prev_h, prev_c, Wx, Wh, gates, g, next_c = cache
    H = prev_h.shape[1]
    i, f, o = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H :]
    tc = np.tanh(next_c)
    dc = dnext_c + dnext_h * o * (1 - tc**2)
    dgates = np.concatenate([dc * g, dc * prev_c, dnext_h * tc], axis=1) * gates * (1 - gates)
    da = np.concatenate([dgates, dc * i * (1 - g**2)], axis=1)
    dWx, dWh = np.dot(x.T, da), np.dot(prev_h.T, da)
    return np.dot(da, Wx.T), np.dot(da, Wh.T), f * dc, dWx, dWh, da.sum(0)
"""

LSTM_SEQ_STACKED = """\
def lstm_forward(x, h0, Wx, Wh, b):
    h, c = h0, np.zeros_like(h0)
    hs, caches = [], []
    for x_t in np.moveaxis(x, 1, 0):
        h, c, cache = lstm_step_forward(x_t, h, c, Wx, Wh, b)
        hs.append(h)
        caches.append(cache)
    return np.stack(hs, 1), caches


def lstm_backward(dh, cache):
    dhs, dcs = np.zeros_like(dh[:, 0]), np.zeros_like(dh[:, 0])
    dxs, total = [], None
    for t in range(len(cache) - 1, -1, -1):
        dx_t, dhs, dcs, *weights = lstm_step_backward(dh[:, t] + dhs, dcs, cache[t])
        dxs.append(dx_t)
        total = weights if total is None else [a + b for a, b in zip(total, weights)]
    return (np.stack(dxs[::-1], 1), dhs, *total)
"""

LSTM_SEQ_DIRECT = """\
def lstm_forward(x, h0, Wx, Wh, b):
    N, T, _ = x.shape
    H = h0.shape[1]
    h = np.empty((N, T, H))
    prev_h, prev_c, caches = h0, np.zeros((N, H)), []
    for t in range(T):
        a = x[:, t] @ Wx + prev_h @ Wh + b
        s = 1 / (1 + np.exp(-np.clip(a[:, : 3 * H], -500, 500)))
        g = np.tanh(a[:, 3 * H :])
        c = s[:, H : 2 * H] * prev_c + s[:, :H] * g
        caches.append((x[:, t], prev_h, prev_c, s, g, c))
        prev_h, prev_c = s[:, 2 * H :] * np.tanh(c), c
        h[:, t] = prev_h
    return h, (caches, Wx, Wh)


def lstm_backward(dh, cache):
    caches, Wx, Wh = cache
    N, T, H = dh.shape
    dx = np.empty((N, T, Wx.shape[0]))
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros(4 * H)
    dnh, dnc = np.zeros((N, H)), np.zeros((N, H))
    for t in reversed(range(T)):
        x_t, ph, pc, s, g, c = caches[t]
        i, f, o = s[:, :H], s[:, H : 2 * H], s[:, 2 * H :]
        dht = dh[:, t] + dnh
        tc = np.tanh(c)
        dc = dnc + dht * o * (1 - tc**2)
        da = np.concatenate([dc * g * i * (1 - i), dc * pc * f * (1 - f),
                             dht * tc * o * (1 - o), dc * i * (1 - g**2)], axis=1)
        dx[:, t] = da @ Wx.T
        dWx += x_t.T @ da
        dWh += ph.T @ da
        db += da.sum(0)
        dnh, dnc = da @ Wh.T, dc * f
    return dx, dnh, dWx, dWh, db
"""

TEMPORAL_EINSUM = """\
def word_embedding_forward(x, W):
    return np.take(W, x, axis=0), (x, W.shape[0])


def word_embedding_backward(dout, cache):
    x, V = cache
    dW = np.zeros((V, dout.shape[-1]))
    flat_ids, flat_d = x.ravel(), dout.reshape(-1, dout.shape[-1])
    for k in range(len(flat_ids)):
        dW[flat_ids[k]] += flat_d[k]
    return dW


def temporal_affine_forward(x, w, b):
    return np.einsum("ntd,dm->ntm", x, w) + b, (x, w)


def temporal_affine_backward(dout, cache):
    x, w = cache
    return np.einsum("ntm,dm->ntd", dout, w), np.einsum("ntd,ntm->dm", x, dout), dout.sum((0, 1))
"""

TEMPORAL_ONE_HOT = """\
def word_embedding_forward(x, W):
    out = np.zeros((*x.shape, W.shape[1]))
    for n in range(x.shape[0]):
        for t in range(x.shape[1]):
            out[n, t] = W[x[n, t]]
    return out, (x, W)


def word_embedding_backward(dout, cache):
    x, W = cache
    one_hot = np.eye(W.shape[0])[x.reshape(-1)]
    return one_hot.T @ dout.reshape(-1, W.shape[1])


def temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    return (x.reshape(N * T, D) @ w + b).reshape(N, T, -1), (x, w, b)


def temporal_affine_backward(dout, cache):
    x, w, b = cache
    N, T, D = x.shape
    M = b.shape[0]
    x2, d2 = x.reshape(N * T, D), dout.reshape(N * T, M)
    return (d2 @ w.T).reshape(N, T, D), x2.T @ d2, d2.sum(axis=0)
"""

LOSS_FLAT = """\
def temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    x_flat, y_flat, mask_flat = x.reshape(N * T, V), y.reshape(N * T), mask.reshape(N * T)
    probs = np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    log_norm = np.log(np.sum(np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True)), axis=1))
    picked = x_flat[np.arange(N * T), y_flat] - np.max(x_flat, axis=1) - log_norm
    loss = -np.sum(mask_flat * picked) / N
    dx_flat = probs.copy()
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    dx_flat *= mask_flat[:, None]
    return loss, dx_flat.reshape(N, T, V)
"""

LOSS_PER_STEP = """\
def temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    loss, dx = 0.0, np.zeros_like(x, dtype=float)
    rows = np.arange(N)
    for t in range(T):
        s = x[:, t] - x[:, t].max(axis=1, keepdims=True)
        log_z = np.log(np.exp(s).sum(axis=1))
        m = mask[:, t].astype(float)
        loss += np.sum(m * (log_z - s[rows, y[:, t]]))
        p = np.exp(s - log_z[:, None])
        p[rows, y[:, t]] -= 1
        dx[:, t] = p * m[:, None]
    return loss / N, dx / N
"""

CLIP_CONCAT = """\
def clip_grad_norm(grads, max_norm):
    total_norm = np.linalg.norm(np.concatenate([np.ravel(g) for g in grads.values()]))
    clipped = {k: np.array(v, dtype=float, copy=True) for k, v in grads.items()}
    if total_norm > max_norm:
        for k in clipped:
            clipped[k] *= max_norm / total_norm
    return clipped, float(total_norm)
"""

CLIP_PYTORCH = """\
def clip_grad_norm(grads, max_norm):
    norms = [np.linalg.norm(np.ravel(g)) for g in grads.values()]
    total_norm = np.linalg.norm(norms)
    coef = min(1.0, max_norm / (total_norm + 1e-6))
    return {k: v * coef for k, v in grads.items()}, total_norm
"""

EXPECTED_SURVIVORS: set[str] = set()

# Review 54: one matrix product on [x, h] (Karpathy's min-char-rnn style).
LSTM_STEP_STACKED_INPUT = '''\
#| export
def sigmoid(a):
    """The logistic function, stable for any a."""
    out = np.empty_like(a, dtype=float)
    pos = a >= 0
    out[pos] = 1 / (1 + np.exp(-a[pos]))
    e = np.exp(a[~pos])
    out[~pos] = e / (1 + e)
    return out


#| export
def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    """One LSTM step, gates i, f, o, g, on the stacked input [x, prev_h]."""
    xh = np.hstack([x, prev_h])
    W = np.vstack([Wx, Wh])
    a = xh @ W + b
    H = prev_h.shape[1]
    i, f, o = sigmoid(a[:, :H]), sigmoid(a[:, H : 2 * H]), sigmoid(a[:, 2 * H : 3 * H])
    g = np.tanh(a[:, 3 * H :])
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    return next_h, next_c, {"xh": xh, "W": W, "D": x.shape[1], "gates": (i, f, o, g),
                            "prev_c": prev_c, "next_c": next_c}


#| export
def lstm_step_backward(dnext_h, dnext_c, cache):
    i, f, o, g = cache["gates"]
    tanh_c = np.tanh(cache["next_c"])
    do = dnext_h * tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c**2)
    di, df, dg = dc * g, dc * cache["prev_c"], dc * i
    da = np.hstack([di * i * (1 - i), df * f * (1 - f), do * o * (1 - o), dg * (1 - g**2)])
    dW = cache["xh"].T @ da
    dxh = da @ cache["W"].T
    D = cache["D"]
    return dxh[:, :D], dxh[:, D:], dc * f, dW[:D], dW[D:], da.sum(axis=0)
'''

ALTERNATES = [
    Alternate("rnn step with a dict cache and cosh", {RS: RNN_STEP_DICT}),
    Alternate("rnn step with einsum", {RS: RNN_STEP_EINSUM}),
    Alternate("rnn sequence stacked from lists", {RQ: RNN_SEQ_STACKED}),
    Alternate("rnn sequence written out, time-major", {RQ: RNN_SEQ_DIRECT}),
    Alternate("lstm step with np.split and logaddexp", {LS: LSTM_STEP_SPLIT}),
    Alternate("lstm step with sigmoid through tanh", {LS: LSTM_STEP_TANH_SIGMOID}),
    Alternate("lstm sequence stacked from lists", {LQ: LSTM_SEQ_STACKED}),
    Alternate("lstm sequence written out", {LQ: LSTM_SEQ_DIRECT}),
    Alternate("temporal layers with einsum and a loop", {TL: TEMPORAL_EINSUM}),
    Alternate("temporal layers with one-hot and reshape", {TL: TEMPORAL_ONE_HOT}),
    Alternate("temporal softmax loss flattened", {TSL: LOSS_FLAT}),
    Alternate("temporal softmax loss step by step", {TSL: LOSS_PER_STEP}),
    Alternate("clip with one concatenated norm", {CLIP: CLIP_CONCAT}),
    Alternate("clip as PyTorch does (+1e-6)", {CLIP: CLIP_PYTORCH}),
    Alternate(
        "predictions computed",
        {
            PRED: "def predicted_initial_loss(V, T):\n    return -T * np.log(1 / V)\n\n\n"
            "def predicted_gradient_ratio(radius, steps):\n"
            "    return float(np.exp(steps * np.log(radius)))\n\n\n"
            "def predicted_gradient_scale(T1, T2):\n    return T2 * T1**-1\n"
        },
    ),
    Alternate(
        "lstm step on [x, h] stacked, one weight matrix [Wx; Wh]", {LS: LSTM_STEP_STACKED_INPUT}
    ),
]

# A wrong forward pass is named first, and the gradients computed from its cache blame it
# (tests/test_mutants.py::test_a_report_names_the_failure_that_explains_the_others).
FORWARD_BLAMED = {"gradient ": "fix the forward pass first"}
FIRST_FAILURE = {
    "rnn step: bias missing": {"rnn_step": ("next_h for", FORWARD_BLAMED)},
    "rnn sequence: every step starts from h0": {"rnn_sequence": ("h for", FORWARD_BLAMED)},
    "lstm step: h from the cell state without tanh": {"lstm_step": ("next_h for", FORWARD_BLAMED)},
    "lstm sequence: the cell state reset at every step": {
        "lstm_sequence": ("h for", FORWARD_BLAMED)
    },
    "lstm sequence: c0 = h0": {"lstm_sequence": ("h for", FORWARD_BLAMED)},
    # Review 54: N times the reference, named (with N = 2 the classic factor said "a
    # contribution counted twice? h instead of 2h?").
    "loss: dx not divided by N": {
        "temporal_softmax_loss": ("gradient dx", {"gradient dx": "is N times"})
    },
}

# Code in another well-known convention: it loses points, and the report names it.
CONVENTIONS = [
    Convention(
        "PyTorch's gate order i, f, g, o",
        {
            LS: LSTM_STEP_SPLIT.replace(
                "a_i, a_f, a_o, a_g = np.split", "a_i, a_f, a_g, a_o = np.split"
            )
        },
        frozenset({"lstm_step"}),
        "PyTorch",
    ),
    Convention(
        "PyTorch's CrossEntropyLoss: the mean over unmasked steps",
        {
            TSL: LOSS_FLAT.replace("/ N\n", "/ mask_flat.sum()\n").replace(
                "dx_flat /= N", "dx_flat /= mask_flat.sum()"
            )
        },
        frozenset({"temporal_softmax_loss"}),
        "PyTorch",
    ),
]

# Each graded function, and the solution cell that defines it.
GRADED_FUNCTIONS = {
    "rnn_step_forward/backward": {RS},
    "rnn_forward/backward": {RQ},
    "lstm_step_forward/backward": {LS},
    "lstm_forward/backward": {LQ},
    "word embedding and temporal affine layers": {TL},
    "temporal_softmax_loss": {TSL},
    "clip_grad_norm": {CLIP},
}
