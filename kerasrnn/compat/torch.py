"""PyTorch models' weights into kerasrnn: `state_dict`s of `nn.LSTM`, `nn.GRU`, `nn.RNN`,
`nn.Embedding` and `nn.Linear`.

`load_torch_state_dict(model, state_dict)` copies a PyTorch model's parameters into the
Keras layers that compute the same functions, converting with NumPy: PyTorch is needed
only to read a `.pt` file, never to import this module. PyTorch keeps a linear map as
W (out x in) applied as W x; Keras keeps kernel = W^T (in x out) applied as x K:

| PyTorch | Keras / kerasrnn |
|---|---|
| `nn.LSTM(n, h)` | `RNN(LSTMCell(h))`, `keras.layers.LSTM(h)` |
| `nn.GRU(n, h)` | `RNN(GRUCell(h))`, `keras.layers.GRU(h)` (both reset after, the default) |
| `nn.RNN(n, h)` | `RNN(SimpleRNNCell(h))`, `keras.layers.SimpleRNN(h)` |
| `num_layers=L, bidirectional=True` | `RNNStack(cell, L, bidirectional=True)`, L `Bidirectional`s |
| `nn.Embedding(v, d)` | `keras.layers.Embedding(v, d)` |
| `nn.Linear(n, m)` | `keras.layers.Dense(m)` |

A recurrent layer's `kernel` is W_ih^T and its `recurrent_kernel` W_hh^T, with the gate
blocks in Keras' order: PyTorch's LSTM gates i, f, g, o are Keras' i, f, c, o, its GRU's
r, z, n become z, r, h. The LSTM's and the simple RNN's `bias` is b_ih + b_hh; the
GRU's has two rows, [b_ih; b_hh]. A layer's `*_reverse` parameters go to the backward
direction.

PyTorch's GRU is the reset-after GRU (cuDNN's): n_t = tanh(W_in x_t + b_in + r_t (W_hn
h_{t-1} + b_hn)), h_t = (1 - z_t) n_t + z_t h_{t-1}, which is `GRUCell(reset_after=True)`
with the same z. Its LSTM has no peepholes, no projection into Keras (`proj_size` is
refused) and a zero initial state (a cell with `learn_initial_state` is refused). On
masked input a Keras layer with a right-padded mask computes what PyTorch computes on
the `pack_padded_sequence` of the same batch, the backward direction included.
"""

import pathlib

import keras
import numpy as np

from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.simple import SimpleRNNCell
from kerasrnn.cells.stack import RNNStack

# PyTorch's gate blocks (rows of W_ih, W_hh, b_ih, b_hh) in Keras' order, per gate count:
# the GRU's r, z, n become z, r, h; the LSTM's i, f, g, o are Keras' i, f, c, o.
_RECURRENT = {
    1: ("nn.RNN", (0,)),
    3: ("nn.GRU", (1, 0, 2)),
    4: ("nn.LSTM", (0, 1, 2, 3)),
}


def torch_modules(state_dict):
    """A PyTorch `state_dict`'s parameters grouped by module, as NumPy arrays.

    Args:
        state_dict: a mapping of parameter name -> tensor or array (`module.state_dict()`),
            an `nn.Module` (its `state_dict()` is taken), or the path of a file written
            by `torch.save(module.state_dict(), path)` (read with PyTorch, which must then
            be installed).

    Returns:
        {module name: {parameter name: array}}, in the state_dict's order (PyTorch's
        order of registration). A parameter "encoder.rnn.weight_ih_l0" belongs to the
        module "encoder.rnn" as "weight_ih_l0"; a bare module's parameters to "". Print
        it to find the names for `load_torch_state_dict`'s `mapping`.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.compat.torch import torch_modules
    >>> modules = torch_modules({"embed.weight": np.zeros((5, 3)), "out.weight":
    ...     np.zeros((2, 3)), "out.bias": np.zeros(2)})
    >>> {name: sorted(params) for name, params in modules.items()}
    {'embed': ['weight'], 'out': ['bias', 'weight']}
    """
    state_dict = _as_state_dict(state_dict)
    modules = {}
    for key, value in state_dict.items():
        module, _, name = str(key).rpartition(".")
        modules.setdefault(module, {})[name] = _to_numpy(key, value)
    return modules


def _as_state_dict(state_dict):
    if isinstance(state_dict, (str, pathlib.Path)):
        path = pathlib.Path(state_dict)
        if not path.is_file():
            raise ValueError(f"`state_dict`: no such file: {path}")
        try:
            import torch
        except ImportError as error:
            raise ValueError(
                f"`state_dict`: reading {path} needs PyTorch (pip install torch); or pass "
                f"the state_dict itself, e.g. as NumPy arrays."
            ) from error
        state_dict = torch.load(path, map_location="cpu", weights_only=True)
    elif hasattr(state_dict, "state_dict") and callable(state_dict.state_dict):
        state_dict = state_dict.state_dict()  # an nn.Module
    if not hasattr(state_dict, "items"):
        raise ValueError(
            f"`state_dict` must be a mapping of parameter names to tensors (module."
            f"state_dict()), a module or a .pt path; got {type(state_dict).__name__}."
        )
    return state_dict


def _to_numpy(key, value):
    if isinstance(value, dict):
        raise ValueError(
            f"`state_dict`: {key!r} holds a dict, not a tensor: this looks like a training "
            f"checkpoint; pass its model entry, e.g. checkpoint[{key!r}]."
        )
    if hasattr(value, "detach"):  # a torch.Tensor, read without importing torch
        value = value.detach().cpu()
        if value.dtype.is_floating_point and value.element_size() < 4:
            value = value.float()  # bfloat16 has no NumPy twin
        return value.numpy()
    return np.asarray(value)


def load_torch_state_dict(model, state_dict, mapping=None, strict=True):
    """Copies a PyTorch model's `state_dict` into the Keras layers that compute the same.

    Args:
        model: the Keras model (built: called once, or made with an `Input`), or one
            layer (e.g. a `Bidirectional` or `RNNStack` for a bare `nn.LSTM`).
        state_dict: the PyTorch parameters: `module.state_dict()`, the module itself or
            a `torch.save`d file (see `torch_modules`).
        mapping: {PyTorch module name: Keras layer, its name in `model`, or a list of
            them}, e.g. {"embed": "embedding", "lstm": stack, "fc": "dense"}. A list
            takes a multi-layer `nn.LSTM` / `nn.GRU` one Keras layer per PyTorch layer
            (or several per entry, e.g. an `RNNStack`). None pairs the PyTorch modules,
            in the state_dict's order, with `model`'s layers that have weights, in
            their order; a multi-layer recurrent module takes as many Keras layers as
            it has layers, unless the next one is an `RNNStack` that holds them all.
        strict: every PyTorch module must be loaded (and, without a mapping, every
            Keras layer with weights must receive some), as in PyTorch's
            `load_state_dict(strict=True)`.

    Raises:
        ValueError: in one line naming the PyTorch key and the Keras weight, for a
            missing module or parameter, a shape that differs (with the layer options
            that would match), a cell that computes something else (a GRU with
            `reset_after=False`, an LSTM with peepholes ...) or a layer not built.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> from kerasrnn.compat.torch import load_torch_state_dict
    >>> rng = np.random.default_rng(0)
    >>> state = {"embed.weight": rng.normal(size=(10, 4)),  # nn.Embedding(10, 4)
    ...          "rnn.weight_ih_l0": rng.normal(size=(24, 4)),  # nn.GRU(4, 8)
    ...          "rnn.weight_hh_l0": rng.normal(size=(24, 8)),
    ...          "rnn.bias_ih_l0": rng.normal(size=24), "rnn.bias_hh_l0": rng.normal(size=24),
    ...          "out.weight": rng.normal(size=(3, 8)), "out.bias": rng.normal(size=3)}
    >>> model = keras.Sequential([keras.Input((None,), dtype="int32"),
    ...     keras.layers.Embedding(10, 4), kerasrnn.RNN(kerasrnn.GRUCell(8)),
    ...     keras.layers.Dense(3)])
    >>> load_torch_state_dict(model, state)
    >>> np.allclose(model.layers[-1].kernel.numpy(), state["out.weight"].T)
    True
    """
    modules = torch_modules(state_dict)
    if mapping is None:
        pairs = _pair_in_order(model, modules, strict)
    else:
        pairs = _pair_mapped(model, modules, mapping, strict)
    # every shape and option is checked before the first weight changes
    planned = [
        plan for name, targets in pairs for plan in _plan_module(name, modules[name], targets)
    ]
    for variable, value in planned:
        variable.assign(value.astype(keras.backend.standardize_dtype(variable.dtype)))


def _targets_of(model, value, name):
    values = value if isinstance(value, (list, tuple)) else [value]
    layers = []
    for layer in values:
        if isinstance(layer, str):
            if not isinstance(model, keras.Model):
                raise ValueError(
                    f"`mapping`: {name!r} -> {layer!r}: `model` is a single layer, with no "
                    f"layers to look up by name; map {name!r} to the layer itself."
                )
            try:
                layer = model.get_layer(layer)
            except ValueError as error:
                raise ValueError(
                    f"`mapping`: {name!r} -> {layer!r}: the model has no layer named "
                    f"{layer!r}; its layers are {[lay.name for lay in model.layers]}."
                ) from error
        layers.append(layer)
    return layers


def _pair_mapped(model, modules, mapping, strict):
    pairs = []
    for name, value in mapping.items():
        if name not in modules:
            raise ValueError(
                f"`mapping`: the state_dict has no module {name!r}; its modules are "
                f"{list(modules)}."
            )
        pairs.append((name, _targets_of(model, value, name)))
    left = [name for name in modules if name not in mapping]
    if strict and left:
        raise ValueError(
            f"`mapping` leaves the PyTorch modules {left} unloaded; map them to Keras "
            f"layers or pass strict=False."
        )
    return pairs


def _weighted_layers(model):
    """The layers with weights that a model is made of, in order (nested models
    opened, an `RNNStack` or `Bidirectional` kept whole); [model] for a lone layer."""
    if not isinstance(model, keras.Model):
        return [model]
    if not model.built:
        raise ValueError(
            f"`model` {model.name!r} is not built; call it on an input (or start it with "
            f"keras.Input) before loading weights."
        )
    found = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            found.extend(_weighted_layers(layer))
        elif layer.weights:
            found.append(layer)
    return found


def _depth(layer):
    """How many PyTorch recurrent layers a Keras layer takes."""
    if isinstance(layer, RNNStack):
        return layer.num_layers
    cell = getattr(layer, "cell", None)
    if isinstance(cell, keras.layers.StackedRNNCells):
        return len(cell.cells)
    return 1


def _pair_in_order(model, modules, strict):
    layers = _weighted_layers(model)
    pairs, position = [], 0
    names = list(modules)
    for index, name in enumerate(names):
        if position == len(layers):
            if strict:
                raise ValueError(
                    f"`state_dict` has {len(names) - index} more modules than `model` has "
                    f"layers with weights ({names[index:]} left); pass a `mapping`, or "
                    f"strict=False to load the first ones."
                )
            break
        need = _recurrent_shape(name, modules[name])[0] if _is_recurrent(modules[name]) else 1
        taken = []
        while need > 0 and position < len(layers):
            taken.append(layers[position])
            need -= _depth(layers[position])
            position += 1
        pairs.append((name, taken))
    if strict and position < len(layers):
        raise ValueError(
            f"`model`'s layers {[layer.name for layer in layers[position:]]} get no PyTorch "
            f"module (the state_dict has {names}); pass a `mapping`, or strict=False."
        )
    return pairs


# ---- one module -------------------------------------------------------------------


def _is_recurrent(params):
    return "weight_ih_l0" in params


def _recurrent_shape(name, params):
    """(layers, directions) of a PyTorch recurrent module's parameters."""
    if "weight_hr_l0" in params:
        raise ValueError(
            f"`state_dict`: {_key(name, 'weight_hr_l0')} is an LSTM projection "
            f"(nn.LSTM(proj_size=...)), which no Keras LSTM has; build the PyTorch model "
            f"without proj_size."
        )
    layers = 0
    while f"weight_ih_l{layers}" in params:
        layers += 1
    return layers, 2 if "weight_ih_l0_reverse" in params else 1


def _key(module, param):
    return f"{module}.{param}" if module else param


def _plan_module(name, params, targets):
    """[(Keras variable, its new value)] for one PyTorch module."""
    for layer in targets:
        if not layer.built or not layer.weights:
            raise ValueError(
                f"Keras layer {layer.name!r} (for PyTorch module {name!r}) has no weights "
                f"yet; build the model first (call it on an input)."
            )
    if _is_recurrent(params):
        return _plan_recurrent(name, params, targets)
    if len(targets) != 1:
        raise ValueError(
            f"PyTorch module {name!r} is one layer; map it to one Keras layer, not "
            f"{[layer.name for layer in targets]}."
        )
    layer = targets[0]
    if isinstance(layer, keras.layers.Embedding):
        return _plan(layer, {"embeddings": (_key(name, "weight"), _param(name, params, "weight"))})
    elif isinstance(layer, keras.layers.Dense):
        weight = _param(name, params, "weight")
        values = {"kernel": (_key(name, "weight"), weight.T)}
        if "bias" in params:
            values["bias"] = (_key(name, "bias"), params["bias"])
        return _plan(layer, values)
    raise ValueError(
        f"PyTorch module {name!r} (parameters {sorted(params)}) cannot load into "
        f"{type(layer).__name__} {layer.name!r}: an nn.Embedding goes into "
        f"keras.layers.Embedding, an nn.Linear into keras.layers.Dense, an "
        f"nn.LSTM/GRU/RNN into a recurrent layer; check the `mapping` or the order."
    )


def _param(name, params, param):
    if param not in params:
        raise ValueError(
            f"`state_dict` has no {_key(name, param)!r} (module {name!r} has "
            f"{sorted(params)}); is this the module you meant?"
        )
    return params[param]


def _directions(layer):
    """[[forward cell holder, (backward)], ...] per recurrent layer a Keras layer holds."""
    if isinstance(layer, RNNStack):
        return [found for inner in layer.rnn_layers for found in _directions(inner)]
    if isinstance(layer, keras.layers.Bidirectional):
        return [[layer.forward_layer, layer.backward_layer]]
    cell = getattr(layer, "cell", None)
    if isinstance(cell, keras.layers.StackedRNNCells):
        return [[inner] for inner in cell.cells]
    return [[layer]]


def _plan_recurrent(name, params, targets):
    layers, directions = _recurrent_shape(name, params)
    found = [units for layer in targets for units in _directions(layer)]
    names = [layer.name for layer in targets]
    if len(found) != layers:
        raise ValueError(
            f"PyTorch module {name!r} has {layers} layer(s) but the Keras layers {names} "
            f"hold {len(found)}; build them with num_layers={layers} (RNNStack) or map "
            f"{name!r} to a list of {layers} layers."
        )
    planned = []
    for index, holders in enumerate(found):
        if len(holders) != directions:
            kind = "bidirectional" if directions == 2 else "unidirectional"
            raise ValueError(
                f"PyTorch module {name!r} is {kind} but layer {index} of the Keras layers "
                f"{names} has {len(holders)} direction(s); "
                + (
                    "wrap it in keras.layers.Bidirectional (or RNNStack(bidirectional=True))."
                    if directions == 2
                    else "use it without Bidirectional (bidirectional=False)."
                )
            )
        for direction, holder in enumerate(holders):
            suffix = f"_l{index}" + ("_reverse" if direction else "")
            planned.extend(_plan_cell(name, params, suffix, holder))
    return planned


def _activation_name(function):
    return getattr(function, "__name__", str(function))


def _check_cell(name, kind, cell):
    """Refuses a Keras cell that computes another function than PyTorch's `kind`."""
    expected = {
        "nn.LSTM": (LSTMCell, keras.layers.LSTMCell),
        "nn.GRU": (GRUCell, keras.layers.GRUCell),
        "nn.RNN": (SimpleRNNCell, keras.layers.SimpleRNNCell),
    }[kind]
    if type(cell) not in expected:
        raise ValueError(
            f"PyTorch module {name!r} is an {kind}; it loads into "
            f"kerasrnn.{expected[0].__name__} or keras.layers.{expected[1].__name__}, "
            f"not {type(cell).__name__} {cell.name!r}."
        )
    fixes = []
    if isinstance(cell, LSTMCell):
        for option, value in (("forget_gate", True), ("peephole", False), ("coupled", False)):
            if getattr(cell, option) != value:
                fixes.append(f"{option}={value}")
    if kind == "nn.GRU" and not cell.reset_after:
        fixes.append("reset_after=True (PyTorch's GRU resets after the recurrent matmul)")
    if kind != "nn.RNN":
        if _activation_name(cell.activation) != "tanh":
            fixes.append("activation='tanh'")
        if _activation_name(cell.recurrent_activation) != "sigmoid":
            fixes.append("recurrent_activation='sigmoid'")
    if getattr(cell, "learn_initial_state", False):
        fixes.append("learn_initial_state=False (PyTorch starts from zeros)")
    if fixes:
        raise ValueError(
            f"PyTorch module {name!r} ({kind}) computes another function than "
            f"{type(cell).__name__} {cell.name!r}; build the cell with {', '.join(fixes)}."
        )


def _plan_cell(name, params, suffix, holder):
    cell = getattr(holder, "cell", holder)
    w_ih = _param(name, params, "weight_ih" + suffix)
    w_hh = _param(name, params, "weight_hh" + suffix)
    hidden = w_hh.shape[1]
    gates = w_hh.shape[0] // max(hidden, 1)
    if gates not in _RECURRENT or w_hh.shape[0] != gates * hidden:
        raise ValueError(
            f"`state_dict`: {_key(name, 'weight_hh' + suffix)!r} has shape {w_hh.shape}, "
            f"not that of an nn.LSTM, nn.GRU or nn.RNN (gates x hidden, hidden)."
        )
    kind, order = _RECURRENT[gates]
    _check_cell(name, kind, cell)

    def blocks(array):  # PyTorch's gate blocks (leading axis) in Keras' order
        return np.concatenate([array[g * hidden : (g + 1) * hidden] for g in order])

    values = {
        "kernel": (_key(name, "weight_ih" + suffix), blocks(w_ih).T),
        "recurrent_kernel": (_key(name, "weight_hh" + suffix), blocks(w_hh).T),
    }
    if "bias_ih" + suffix in params:
        b_ih = blocks(_param(name, params, "bias_ih" + suffix))
        b_hh = blocks(_param(name, params, "bias_hh" + suffix))
        # reset-after GRU: the recurrent bias sits inside r * (U h + b'), its own row
        bias = np.stack([b_ih, b_hh]) if kind == "nn.GRU" else b_ih + b_hh
        values["bias"] = (_key(name, "bias_ih" + suffix) + " + bias_hh" + suffix, bias)
    return _plan(cell, values, fix=f"units={hidden} on inputs of width {w_ih.shape[1]}")


def _plan(layer, values, fix=None):
    """[(variable, array)] for {Keras weight name: (PyTorch key, array)}, checked against
    `layer`'s weights (names and shapes); `fix` says how to build a layer that fits."""
    targets = {variable.name: variable for variable in layer.weights}
    where = f"{type(layer).__name__} {layer.name!r}"
    extra = sorted(set(targets) - set(values))
    if extra:
        hint = ""
        if "bias" in extra:
            hint = " The PyTorch module has no bias: build the Keras layer with use_bias=False."
        raise ValueError(
            f"{where} has weights {extra} that the PyTorch parameters "
            f"{[key for key, _ in values.values()]} do not provide.{hint}"
        )
    missing = sorted(set(values) - set(targets))
    if missing:
        hint = (
            " The Keras layer has no bias: build it with use_bias=True."
            if missing == ["bias"]
            else ""
        )
        raise ValueError(
            f"{where} has no weight for PyTorch's {[values[m][0] for m in missing]}.{hint}"
        )
    for weight, (key, value) in values.items():
        variable = targets[weight]
        if tuple(variable.shape) != tuple(value.shape):
            build = f"; build it with {fix}" if fix else ""
            raise ValueError(
                f"`state_dict` {key!r} gives {where}'s {weight!r} the shape "
                f"{tuple(value.shape)}, but it has {tuple(variable.shape)}{build}."
            )
    return [(targets[weight], value) for weight, (_, value) in values.items()]
