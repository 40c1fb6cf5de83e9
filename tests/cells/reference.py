"""Independent NumPy implementations of the cell equations, written from the textbook forms.

Gate weights are taken from the cells' fused Keras-layout arrays by name, then every step
is computed gate by gate, so a layout or equation mistake in the cells shows up here.
"""

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def weights_by_name(cell):
    """{short name: numpy array} for a built cell ('kernel', 'peephole_f', ...)."""
    return {
        w.path.split("/")[-1]: np.array(w.numpy() if hasattr(w, "numpy") else w)
        for w in cell.weights
    }


def blocks(array, names, units):
    """Split the last axis of a fused array into {gate name: block}."""
    return {n: array[..., k * units : (k + 1) * units] for k, n in enumerate(names)}


def simple_step(w, cfg, x, states):
    (h,) = states
    if cfg.get("bias_after_norm"):  # Ba et al.'s eq. 4: the bias is LN's shift
        a = layer_norm(
            x @ w["kernel"] + h @ w["recurrent_kernel"], w["norm_gamma"], 0.0, cfg["norm_epsilon"]
        )
        h = np.tanh(a + w.get("bias", 0.0))
        return h, [h]
    a = x @ w["kernel"] + h @ w["recurrent_kernel"] + w.get("bias", 0.0)
    if "norm_gamma" in w:
        a = layer_norm(a, w["norm_gamma"], w["norm_beta"], cfg["norm_epsilon"])
    h = np.tanh(a)
    return h, [h]


def lstm_step(w, cfg, x, states):
    h, c = states
    units = h.shape[-1]
    gates = [
        g
        for g in "ifco"
        if not (g == "i" and cfg["coupled"]) and not (g == "f" and not cfg["forget_gate"])
    ]
    Wx = x @ w["kernel"]
    Uh = h @ w["recurrent_kernel"]
    if "input_norm_gamma" in w:
        eps = cfg["norm_epsilon"]
        Wx = layer_norm(Wx, w["input_norm_gamma"], w["input_norm_beta"], eps)
        Uh = layer_norm(Uh, w["recurrent_norm_gamma"], w["recurrent_norm_beta"], eps)
    pre = blocks(Wx + Uh + w.get("bias", 0.0), gates, units)
    peep = cfg["peephole"]
    g = np.tanh(pre["c"])
    if cfg["forget_gate"]:
        f = sigmoid(pre["f"] + (w["peephole_f"] * c if peep else 0.0))
    if cfg["coupled"]:
        c_new = f * c + (1.0 - f) * g
    else:
        i = sigmoid(pre["i"] + (w["peephole_i"] * c if peep else 0.0))
        c_new = (f * c if cfg["forget_gate"] else c) + i * g
    o = sigmoid(pre["o"] + (w["peephole_o"] * c_new if peep else 0.0))
    shown = c_new
    if "cell_norm_gamma" in w:
        shown = layer_norm(c_new, w["cell_norm_gamma"], w["cell_norm_beta"], cfg["norm_epsilon"])
    h_new = o * np.tanh(shown)
    if cfg.get("carry_normalized_state"):
        c_new = shown
    return h_new, [h_new, c_new]


def gru_step(w, cfg, x, states):
    (h,) = states
    units = h.shape[-1]
    W = blocks(w["kernel"], "zrh", units)
    U = blocks(w["recurrent_kernel"], "zrh", units)
    if cfg["reset_after"]:
        b = blocks(w["bias"][0], "zrh", units)
        bb = blocks(w["bias"][1], "zrh", units)
        z = sigmoid(x @ W["z"] + b["z"] + h @ U["z"] + bb["z"])
        r = sigmoid(x @ W["r"] + b["r"] + h @ U["r"] + bb["r"])
        cand = np.tanh(x @ W["h"] + b["h"] + r * (h @ U["h"] + bb["h"]))
    else:
        b = blocks(w["bias"], "zrh", units)
        z = sigmoid(x @ W["z"] + h @ U["z"] + b["z"])
        r = sigmoid(x @ W["r"] + h @ U["r"] + b["r"])
        cand = np.tanh(x @ W["h"] + (r * h) @ U["h"] + b["h"])
    h_new = z * h + (1.0 - z) * cand
    return h_new, [h_new]


def relu(x):
    return np.maximum(x, 0.0)


def nas_step(w, cfg, x, states):
    """Zoph & Le's NAS cell, block by block; states [h, c]."""
    h, c = states
    units = c.shape[-1]
    xs = blocks(x @ w["kernel"], range(8), units)
    ms = blocks(h @ w["recurrent_kernel"] + w.get("bias", 0.0), range(8), units)
    a = [
        sigmoid(xs[0] + ms[0]),
        relu(xs[1] + ms[1]),
        sigmoid(xs[2] + ms[2]),
        relu(xs[3] * ms[3]),
        np.tanh(xs[4] + ms[4]),
        sigmoid(xs[5] + ms[5]),
        np.tanh(xs[6] + ms[6]),
        sigmoid(xs[7] + ms[7]),
    ]
    c_new = np.tanh(np.tanh(a[0] * a[1]) + c) * np.tanh(a[2] + a[3])
    h_new = np.tanh(c_new * np.tanh(np.tanh(a[4] * a[5]) + sigmoid(a[6] + a[7])))
    if "projection_kernel" in w:
        h_new = h_new @ w["projection_kernel"]
    return h_new, [h_new, c_new]


def esn_step(w, cfg, x, states):
    (h,) = states
    alpha = cfg["leaky"]
    h_new = (1 - alpha) * h + alpha * np.tanh(
        x @ w["kernel"] + h @ w["recurrent_kernel"] + w.get("bias", 0.0)
    )
    return h_new, [h_new]


STEPS = {
    "NASCell": nas_step,
    "ESNCell": esn_step,
    "SimpleRNNCell": simple_step,
    "LayerNormSimpleRNNCell": simple_step,
    "LSTMCell": lstm_step,
    "LayerNormLSTMCell": lstm_step,
    "GRUCell": gru_step,
}


def cell_step(cell):
    """A NumPy step function (x, states) -> (output, states) for a built kerasrnn cell."""
    w = weights_by_name(cell)
    cfg = cell.get_config()
    step = STEPS[type(cell).__name__]
    return lambda x, states: step(w, cfg, x, states)


def run(step, x, states, mask=None, go_backwards=False, zero_output_for_mask=False):
    """keras.layers.RNN semantics: outputs [B, T, units] and final states.

    Masked steps keep the previous states and repeat the previous output (or give
    zeros, with zero_output_for_mask, as Bidirectional asks for); with go_backwards the
    sequence is read from the end and the outputs are in reading order.
    """
    batch, steps = x.shape[:2]
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs = []
    out = np.zeros((batch, states[0].shape[-1]))
    for t in order:
        new_out, new_states = step(x[:, t], states)
        if mask is not None:
            keep = mask[:, t][:, None]
            new_states = [np.where(keep, n, s) for n, s in zip(new_states, states)]
            shown = np.where(keep, new_out, 0.0 if zero_output_for_mask else out)
            out = np.where(keep, new_out, out)
        else:
            shown = out = new_out
        states = new_states
        outputs.append(shown)
    return np.stack(outputs, axis=1), states
