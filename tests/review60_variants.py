"""Review 60: new student variants of 05-08 (not in tests/variants_*.py), judged by
tests/review60_run.py. Each group is a namespace like a tests/variants_<name>.py module
(ASSIGNMENT, NOTEBOOK, MUTANTS, ALTERNATES), so course.authoring.variants.answers_of reads it.
"""

from types import SimpleNamespace

from course.authoring.classroom import mutate, solution_sources
from course.authoring.variants import Alternate, m, source_notebook


def edited(assignment, notebook, cell, *edits):
    """The reference solution of `cell` with text edits (for alternates written as edits)."""
    code = solution_sources(source_notebook(assignment, notebook))[cell]
    for old, new in edits:
        code = mutate(code, old, new)
    return code

# ------------------------------------------------------------------ 05 normalisation
BNF, BNB, BNA = (
    "batchnorm_forward_solution",
    "batchnorm_backward_solution",
    "batchnorm_backward_alt_solution",
)
LNF, LNB = "layernorm_forward_solution", "layernorm_backward_solution"
DF, DB = "dropout_forward_solution", "dropout_backward_solution"
NET5 = "fully_connected_net_solution"

N05 = SimpleNamespace(
    ASSIGNMENT="05_normalisation",
    NOTEBOOK="normalisation",
    MUTANTS=[
        # the running variance fed the batch's std (with eps), not its variance
        m("bn forward: running_var averages the std, not the variance", BNF,
          {"batchnorm_forward"},
          ("(1 - momentum) * var", "(1 - momentum) * std")),
        # the mean's gradient added without its 1 / N
        m("bn backward: dmu added without / N", BNB, {"batchnorm_backward"},
          ("dx += dmu / N", "dx += dmu")),
        # the x_hat term of the closed form reuses dgamma (gamma dropped from that term)
        m("bn alt: the x_hat term reuses dgamma (sum(dout * x_hat), no gamma)", BNA,
          {"batchnorm_backward_alt"},
          ("x_hat * np.sum(g * x_hat, axis=0)", "x_hat * dgamma")),
        # layer norm's eps forgotten altogether
        m("ln forward: eps forgotten (sqrt of the variance alone)", LNF,
          {"layernorm_forward"},
          ("keepdims=True) + eps)", "keepdims=True))")),
        # layer norm backward: the row sums without keepdims (broadcast along the wrong axis)
        m("ln backward: g.sum(axis=1) without keepdims", LNB, {"layernorm_backward"},
          ("g.sum(axis=1, keepdims=True)", "g.sum(axis=1)")),
        # dropout keeps units where rand > p (keeps 1 - p of them), still divides by p
        m("dropout: mask rand > p (keeps 1 - p), divided by p", DF, {"dropout_forward"},
          ("np.random.rand(*x.shape) < p", "np.random.rand(*x.shape) > p")),
        # the net only flips dropout to test mode: batch norm stays in train mode at test
        m("net: bn_params left in train mode at test time", NET5, {"finished_net"},
          ("        for bn_param in self.bn_params:\n            bn_param[\"mode\"] = mode\n", "")),
        # the net's regulariser without its 1/2 on the loss (gradient still reg * W)
        m("net: loss regulariser reg * sum(W**2), gradient reg * W", NET5, {"finished_net"},
          ("loss += 0.5 * self.reg * np.sum(W * W)", "loss += self.reg * np.sum(W * W)")),
        # eps's default mistyped as 1e-8 (only seen when bn_param has no eps)
        m("bn forward: default eps 1e-8, not 1e-5", BNF, {"batchnorm_forward"},
          ('eps = bn_param.get("eps", 1e-5)', 'eps = bn_param.get("eps", 1e-8)')),
        # layer norm caches x and gamma only; the backward recomputes the std with eps = 1e-5
        # whatever ln_param said (two cells: the forward's cache changes with it)
        # (an Alternate object only as a carrier of two cells' code: it is a bug)
        Alternate("ln backward: std recomputed with the default eps, not ln_param's", {
            LNF: """\
#| export
def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta, (x, gamma)
""",
            LNB: """\
#| export
def layernorm_backward(dout, cache):
    x, gamma = cache
    D = x.shape[1]
    mu = x.mean(axis=1, keepdims=True)
    std = np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    x_hat = (x - mu) / std
    g = dout * gamma
    dx = (D * g - g.sum(axis=1, keepdims=True)
          - x_hat * np.sum(g * x_hat, axis=1, keepdims=True)) / (D * std)
    return dx, np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
""",
        }),
        # the same slip in batch norm: the backward recomputes std with eps = 1e-5
        Alternate("bn backward: std recomputed with the default eps, not bn_param's", {
            BNF: edited("05_normalisation", "normalisation", BNF,
                        ("cache = (x_hat, centred, std, gamma)", "cache = (x, gamma)")),
            BNB: """\
#| export
def batchnorm_backward(dout, cache):
    x, gamma = cache
    N = x.shape[0]
    centred = x - x.mean(axis=0)
    std = np.sqrt(np.mean(centred**2, axis=0) + 1e-5)
    x_hat = centred / std
    g = dout * gamma
    dx = (N * g - g.sum(axis=0) - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)
    return dx, np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
""",
            BNA: """\
#| export
def batchnorm_backward_alt(dout, cache):
    return batchnorm_backward(dout, cache)
""",
        }),
        # x centred in place: the caller's x is overwritten by its centred values
        m("bn forward: x -= mu in place (the caller's x changed)", BNF, {"batchnorm_forward"},
          ("        centred = x - mu\n", "        x -= mu\n        centred = x\n")),
    ],
    ALTERNATES=[
        # dropout before the relu: the mask is >= 0, so relu and the mask commute
        Alternate("net: dropout before the relu (commutes with it)", {NET5: edited("05_normalisation", "normalisation", NET5, (
            "            out, relu_cache = relu_forward(out)\n"
            "            drop_cache = None\n"
            "            if self.use_dropout:\n"
            "                out, drop_cache = dropout_forward(out, self.dropout_param)\n",
            "            drop_cache = None\n"
            "            if self.use_dropout:\n"
            "                out, drop_cache = dropout_forward(out, self.dropout_param)\n"
            "            out, relu_cache = relu_forward(out)\n",
        ), (
            "            if self.use_dropout:\n"
            "                dout = dropout_backward(dout, drop_cache)\n"
            "            dout = relu_backward(dout, relu_cache)\n",
            "            dout = relu_backward(dout, relu_cache)\n"
            "            if self.use_dropout:\n"
            "                dout = dropout_backward(dout, drop_cache)\n",
        ))}),
        # np.random.seed(None) when no seed (a fresh draw from the OS), random_sample for rand
        Alternate("dropout: seed(get('seed')) and random_sample", {DF: """\
#| export
def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    mode = dropout_param["mode"]
    if mode not in ("train", "test"):
        raise ValueError("mode must be train or test")
    if mode == "test":
        return x, (dropout_param, None)
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    keep = np.random.random_sample(x.shape) < p
    return np.where(keep, x / p, 0.0), (dropout_param, keep / p)
"""}),
    ],
)

# ------------------------------------------------------------------ 06 convolution
CONV, POOL = "conv_naive_solution", "pool_naive_solution"
FAST, SBN, NET6 = "conv_fast_solution", "spatial_batchnorm_solution", "convnet_solution"

N06 = SimpleNamespace(
    ASSIGNMENT="06_convolution",
    NOTEBOOK="convolution",
    MUTANTS=[
        # the padding counted once in the output height (H + pad - HH)
        m("conv: H_out with the padding counted once", CONV, {"conv_forward_naive"},
          ("H_out = 1 + (H + 2 * pad - HH) // stride",
           "H_out = 1 + (H + pad - HH) // stride")),
        # dx spreads the flipped filter (confusing the backward pass with a true convolution)
        m("conv backward: dx through the flipped filter", CONV, {"conv_backward_naive"},
          ("dx_pad[n, :, rows, cols] += w[f] * dout[n, f, i, j]",
           "dx_pad[n, :, rows, cols] += w[f, :, ::-1, ::-1] * dout[n, f, i, j]")),
        # pool backward: the window's offset by the pool size, not the stride
        m("pool backward: offset i * ph, not i * stride", POOL, {"max_pool_naive"},
          ("dx[n, c, i * stride + dr, j * stride + dc]", "dx[n, c, i * ph + dr, j * pw + dc]"),
          ("window = x[:, :, i * stride : i * stride + ph, j * stride : j * stride + pw]\n"
           "            dr, dc",
           "window = x[:, :, i * ph : i * ph + ph, j * pw : j * pw + pw]\n            dr, dc")),
        # fast backward: w reshaped to (C*HH*WW, F) instead of transposed
        m("fast: dcols through w.reshape(-1, F), not w.reshape(F, -1).T", FAST,
          {"conv_fast"},
          ("np.matmul(w.reshape(F, -1).T, d)", "np.matmul(w.reshape(-1, F), d)")),
        # spatial bn: statistics per (channel, row): the width folded into the batch only
        m("sbn: normalised per channel and row (transpose(0, 3, 1, 2) then reshape(-1, C))",
          SBN, {"spatial_batchnorm"},
          ("flat = x.transpose(0, 2, 3, 1).reshape(-1, C)",
           "flat = x.transpose(0, 3, 2, 1).reshape(-1, C)")),
        # the net's conv without padding argument used consistently? no: pool 2x2 stride 1
        m("net: pool stride 1 (2x2 windows overlapping)", NET6, {"convnet"},
          ('pool_param = {"pool_height": 2, "pool_width": 2, "stride": 2}',
           'pool_param = {"pool_height": 2, "pool_width": 2, "stride": 1}')),
        # the tiling test on the rows only: a filter that does not tile the width is accepted
        m("conv: ValueError checked on the height only", CONV, {"conv_forward_naive"},
          ("if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:\n"
           "        raise ValueError(f\"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad\")\n"
           "    H_out = 1 + (H + 2 * pad - HH) // stride\n    W_out",
           "if (H + 2 * pad - HH) % stride:\n"
           "        raise ValueError(f\"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad\")\n"
           "    H_out = 1 + (H + 2 * pad - HH) // stride\n    W_out")),
        # spatial bn hands batchnorm_forward a copy of bn_param: the running averages never
        # reach the caller's bn_param
        m("sbn: batchnorm_forward given dict(bn_param) (running averages lost)", SBN,
          {"spatial_batchnorm"},
          ("batchnorm_forward(flat, gamma, beta, bn_param)",
           "batchnorm_forward(flat, gamma, beta, dict(bn_param))")),
        # the fast pair's tiling test on the rows only, as above
        m("fast: ValueError checked on the height only", FAST, {"conv_fast"},
          ("if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:\n"
           "        raise ValueError(f\"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad\")\n"
           "    H_out = 1 + (H + 2 * pad - HH) // stride\n    W_out = 1 + (W + 2 * pad - WW) // stride\n"
           "    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))\n    sN",
           "if (H + 2 * pad - HH) % stride:\n"
           "        raise ValueError(f\"a {HH}x{WW} filter with stride {stride} does not tile {H}x{W} + pad\")\n"
           "    H_out = 1 + (H + 2 * pad - HH) // stride\n    W_out = 1 + (W + 2 * pad - WW) // stride\n"
           "    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))\n    sN")),
    ],
    ALTERNATES=[
        # rng.normal(0, std, size) draws the same stream as standard_normal * std
        Alternate("net: init with rng.normal(0, std, shape)", {NET6: edited("06_convolution", "convolution", NET6, (
            "rng.standard_normal((num_filters, C, 3, 3)) * np.sqrt(2 / (C * 9))",
            "rng.normal(0.0, np.sqrt(2 / (C * 9)), (num_filters, C, 3, 3))",
        ), (
            "rng.standard_normal((hidden, num_classes)) * np.sqrt(2 / hidden)",
            "rng.normal(0.0, np.sqrt(2 / hidden), size=(hidden, num_classes))",
        ))}),
        # spatial bn with np.moveaxis in place of transpose
        Alternate("sbn: channels moved by np.moveaxis", {SBN: """\
#| export
def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    N, C, H, W = x.shape
    flat = np.moveaxis(x, 1, -1).reshape(-1, C)
    out, cache = batchnorm_forward(flat, gamma, beta, bn_param)
    return np.moveaxis(out.reshape(N, H, W, C), -1, 1), (cache, x.shape)


def spatial_batchnorm_backward(dout, cache):
    bn_cache, (N, C, H, W) = cache
    dflat = np.moveaxis(dout, 1, -1).reshape(-1, C)
    dx, dgamma, dbeta = batchnorm_backward(dflat, bn_cache)
    return np.moveaxis(dx.reshape(N, H, W, C), -1, 1), dgamma, dbeta
"""}),
        # pool backward with the (window == max) mask (CS231n's common form; no ties in floats)
        Alternate("pool backward: (window == max) mask", {POOL: edited("06_convolution", "convolution", POOL, (
            "            dr, dc = np.unravel_index(window.reshape(N, C, -1).argmax(axis=2), (ph, pw))\n"
            "            dx[n, c, i * stride + dr, j * stride + dc] += dout[:, :, i, j]\n",
            "            top = window.max(axis=(2, 3), keepdims=True)\n"
            "            dx[:, :, i * stride : i * stride + ph, j * stride : j * stride + pw] += (\n"
            "                (window == top) * dout[:, :, i, j][:, :, None, None]\n"
            "            )\n",
        ))}),
    ],
)

# ------------------------------------------------------------------ 07 recurrent
RS, RQ = "rnn_step_solution", "rnn_sequence_solution"
LS, LQ = "lstm_step_solution", "lstm_sequence_solution"
TL, TSL, CLIP, PRED7 = (
    "temporal_layers_solution", "temporal_softmax_loss_solution", "clip_solution",
    "predictions_solution",
)

N07 = SimpleNamespace(
    ASSIGNMENT="07_recurrent",
    NOTEBOOK="recurrent",
    MUTANTS=[
        # db summed over the hidden units (axis=1), not the batch
        m("rnn step: db = da.sum(axis=1)", RS, {"rnn_step"},
          ("da.sum(axis=0)", "da.sum(axis=1)")),
        # dh0 returned as the upstream gradient of the first step, not the carried dprev_h
        m("rnn sequence: dh0 returned as dh[:, 0]", RQ, {"rnn_sequence"},
          ("return dx, dprev_h, dWx, dWh, db", "return dx, dh[:, 0], dWx, dWh, db")),
        # g squashed by the sigmoid like the other gates
        m("lstm step: g through sigmoid, not tanh", LS, {"lstm_step"},
          ("g = np.tanh(a[:, 3 * H :])", "g = sigmoid(a[:, 3 * H :])")),
        # lstm backward: the h-gradient from the next step dropped (cell's still carried)
        m("lstm sequence: dprev_h not added to dh[:, t]", LQ, {"lstm_sequence"},
          ("lstm_step_backward(dh[:, t] + dprev_h, dprev_c, caches[t])",
           "lstm_step_backward(dh[:, t], dprev_c, caches[t])")),
        # the log-softmax shifted by the max over time (axis=1), not over the vocabulary
        m("loss: max taken over time (axis=1), not the vocabulary", TSL,
          {"temporal_softmax_loss"},
          ("x.max(axis=2, keepdims=True)", "x.max(axis=1, keepdims=True)")),
        # off by one in the prediction: radius ** (steps - 1)
        m("prediction: radius ** (steps - 1)", PRED7, {"rnn_predictions"},
          ("return radius**steps", "return radius ** (steps - 1)")),
        # the scores of a step shifted in place: the caller's x changes
        m("loss: x -= x.max(...) in place (the caller's scores changed)", TSL,
          {"temporal_softmax_loss"},
          ("shifted = x - x.max(axis=2, keepdims=True)",
           "x -= x.max(axis=2, keepdims=True)\n    shifted = x")),
        # the mask used to index without making it boolean (an int 0/1 mask picks rows 0 and 1)
        m("loss: picked[mask] with the mask not made boolean", TSL, {"temporal_softmax_loss"},
          ("    mask = np.asarray(mask, dtype=bool)\n", ""),
          ("loss = -np.sum(picked * mask) / N", "loss = -np.sum(picked[mask]) / N")),
        # the bias added after the tanh
        m("rnn step: bias added outside the tanh", RS, {"rnn_step"},
          ("np.tanh(x @ Wx + prev_h @ Wh + b)", "np.tanh(x @ Wx + prev_h @ Wh) + b")),
    ],
    ALTERNATES=[
        # PyTorch's clip_grad_norm_: max_norm / (total_norm + 1e-6), clamped to 1
        Alternate("clip: PyTorch's coefficient max_norm / (norm + 1e-6), min 1", {CLIP: """\
#| export
def clip_grad_norm(grads, max_norm):
    total_norm = float(np.sqrt(sum((g**2).sum() for g in grads.values())))
    coef = min(1.0, max_norm / (total_norm + 1e-6))
    return {k: g * coef for k, g in grads.items()}, total_norm
"""}),
        # temporal affine backward by einsum
        Alternate("temporal affine backward with einsum", {TL: edited("07_recurrent", "recurrent", TL, (
            "    D, M = w.shape\n    dw = x.reshape(-1, D).T @ dout.reshape(-1, M)\n"
            "    return dout @ w.T, dw, dout.sum(axis=(0, 1))",
            "    dx = np.einsum('ntm,dm->ntd', dout, w)\n"
            "    dw = np.einsum('ntd,ntm->dm', x, dout)\n"
            "    return dx, dw, np.einsum('ntm->m', dout)",
        ))}),
    ],
)

# ------------------------------------------------------------------ 08 attention
SM, ATT, CM = "softmax_solution", "attention_solution", "causal_mask_solution"
MHA, PE, BLK = "multihead_solution", "positional_encoding_solution", "block_solution"

N08 = SimpleNamespace(
    ASSIGNMENT="08_attention",
    NOTEBOOK="attention",
    MUTANTS=[
        # dv through p.transpose(0, 2, 1): right for (N, Tq, Tk), wrong axes for 4-D heads
        m("attention backward: dv through p.transpose(0, 2, 1) (3-D only)", ATT,
          {"multihead_attention"},
          ("dv = np.swapaxes(p, -1, -2) @ dout", "dv = p.transpose(0, 2, 1) @ dout")),
        # forward with k.transpose(0, 2, 1): right for (N, Tk, d), wrong axes for 4-D heads
        m("attention forward: k.transpose(0, 2, 1) (3-D only)", ATT, {"multihead_forward"},
          ("scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)",
           "scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)")),
        # upper triangle: each query sees the future
        m("causal mask: np.triu (the future, not the past)", CM, {"causal_mask"},
          ("np.tril(", "np.triu(")),
        # mha backward: the heads' gradients merged by a reshape alone (no transpose back)
        m("mha backward: dq, dk, dv merged by a reshape alone", MHA, {"multihead_attention"},
          ("g.transpose(0, 2, 1, 3).reshape(N * T, D)", "g.reshape(N * T, D)")),
        # positional encoding: the cos columns use the odd index's frequency (2i + 1) / D
        m("positions: cos columns at frequency 1 / 10000**((2i + 1) / D)", PE,
          {"positional_encoding"},
          ("pe[:, 1::2] = np.cos(angles[:, : D // 2])",
           "pe[:, 1::2] = np.cos(np.arange(T)[:, None] / 10000 ** (np.arange(1, D, 2) / D))")),
        # block: dx of ln1 added to dout instead of dh (the first residual's gradient)
        m("block backward: returns dout + dx (not dh + dx)", BLK, {"transformer_block"},
          ("return dh + dx.reshape(N, T, D), grads", "return dout + dx.reshape(N, T, D), grads")),
        # the max taken without keepdims (broadcasts along the wrong axis when shapes allow)
        m("softmax: np.max without keepdims", SM, {"softmax"},
          ("np.max(x, axis=axis, keepdims=True)", "np.max(x, axis=axis)")),
    ],
    ALTERNATES=[
        # causal mask by comparing indices
        Alternate("causal mask: arange comparison", {CM: """\
#| export
def causal_mask(T):
    t = np.arange(T)
    return t[None, :] <= t[:, None]
"""}),
        # the 1 / sqrt(d) applied to dp instead of ds (the Jacobian is linear)
        Alternate("attention backward: the scale on dp", {ATT: edited("08_attention", "attention", ATT, (
            "    dp = dout @ np.swapaxes(v, -1, -2)\n"
            "    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True)) / np.sqrt(d)\n",
            "    dp = dout @ np.swapaxes(v, -1, -2) / np.sqrt(d)\n"
            "    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))\n",
        ))}),
        # attention masked by adding -inf where disallowed
        Alternate("attention: mask added as a 0 / -inf bias", {ATT: edited("08_attention", "attention", ATT, (
            "scores = np.where(mask, scores, -np.inf)",
            "scores = scores + np.where(mask, 0.0, -np.inf)",
        ))}),
    ],
)

GROUPS = [N05, N06, N07, N08]
