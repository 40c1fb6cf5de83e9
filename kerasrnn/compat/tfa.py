"""TensorFlow Addons models into kerasrnn: their cells' configs and their saved weights.

A tf.keras model built with `tfa.rnn` cells (TF <= 2.15) saved its weights as an `.h5`
file or a TF checkpoint. `load_tfa_weights` reads either (the `.h5` with h5py; a
checkpoint with TensorFlow's checkpoint reader, any version; TF Addons is never needed)
and copies each TFA layer's weights into the kerasrnn layer you map it to, translating
TFA's weight names. Build the kerasrnn side with the options that reproduce TFA's
equations; `cell_from_tfa_config` turns a TFA cell's `get_config()` into such a cell:

| TF Addons | kerasrnn |
|---|---|
| `LayerNormLSTMCell` | `LayerNormLSTMCell(carry_normalized_state=True)` |
| `LayerNormSimpleRNNCell` | `LayerNormSimpleRNNCell(bias_after_norm=True, norm_epsilon=1e-5)` |
| `PeepholeLSTMCell` | `LSTMCell(peephole=True)` |
| `NASCell` | `NASCell` (states [h, c], TFA's were [c, h]) |
| `ESNCell` | `ESNCell` |

and `AttentionWrapper(cell, mechanism, ...)`, with TFA's arguments, builds the
`kerasrnn.AttentionCell` that computes what TFA's wrapper computed:

| TF Addons `AttentionWrapper` | kerasrnn `AttentionCell` piece |
|---|---|
| run the cell, attend with its output, input feeding (TFA's `cell_input_fn`) | `RunThenAttend()` |
| `attention_layer_size=n` (a linear layer on [h; c]) | `LinearProjection(n)` |
| `attention_layer_size=None` (the context itself) | `ContextProjection()` |
| `attention_layer=layer` (applied to [h; c]) | `LayerProjection(layer)` |
| `output_attention=False` | `RunThenAttend(output_attention=False)` |
| `alignment_history=True` | `alignment_history=True` |
"""

import pathlib

import keras
import numpy as np

from kerasrnn.cells.attentive import AttentionCell
from kerasrnn.cells.base import RecurrentCell, config_keys
from kerasrnn.cells.esn import ESNCell
from kerasrnn.cells.layer_norm import LayerNormLSTMCell, LayerNormSimpleRNNCell
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.nas import NASCell
from kerasrnn.cells.projection import ContextProjection, LayerProjection, LinearProjection
from kerasrnn.cells.step_order import RunThenAttend

# TFA weight name (its last one or two path components) -> the kerasrnn weight name.
_RENAMES = {
    ("kernel_norm", "gamma"): "input_norm_gamma",
    ("kernel_norm", "beta"): "input_norm_beta",
    ("recurrent_norm", "gamma"): "recurrent_norm_gamma",
    ("recurrent_norm", "beta"): "recurrent_norm_beta",
    ("state_norm", "gamma"): "cell_norm_gamma",
    ("state_norm", "beta"): "cell_norm_beta",
    ("layernorm", "gamma"): "norm_gamma",  # LayerNormSimpleRNNCell, in a checkpoint
    ("input_gate_peephole_weights",): "peephole_i",
    ("forget_gate_peephole_weights",): "peephole_f",
    ("output_gate_peephole_weights",): "peephole_o",
    ("projection_weights",): "projection_kernel",
}


def read_tfa_weights(path):
    """The weights of a tf.keras `.h5` file or TF checkpoint, by layer.

    Args:
        path: an `.h5`/`.hdf5` file (`model.save_weights("x.h5")` or `model.save("x.h5")`),
            or a TF checkpoint prefix (`model.save_weights("ckpt/model")`: pass
            "ckpt/model") or its folder.

    Returns:
        {layer key: {weight name: array}}. The layer key is the layer's name in an `.h5`
        file and its checkpoint key in a checkpoint (`layer_with_weights-0`, ... for a
        Sequential or functional model, the attribute name for a subclassed one); the
        weight names are TFA's, relative to the layer (`layer_norm_lstm_cell/kernel`,
        `cell/kernel_norm/gamma`). Optimizer slots are left out. Print it to find the
        keys for `load_tfa_weights`.
    """
    path = pathlib.Path(path)
    if path.suffix in (".h5", ".hdf5", ".keras"):
        if not path.is_file():
            raise ValueError(f"`path`: no such weights file: {path}")
        return _read_h5(path)
    return _read_checkpoint(path)


def _read_h5(path):
    import h5py  # a Keras dependency

    layers = {}
    with h5py.File(path, "r") as f:
        root = f["model_weights"] if "model_weights" in f else f
        if "layer_names" not in root.attrs:
            raise ValueError(
                f"`path`: {path} is not a tf.keras weights file (no layer_names); a Keras 3 "
                f"`.weights.h5` file loads with model.load_weights directly."
            )
        for layer in root.attrs["layer_names"]:
            layer = _text(layer)
            group = root[layer]
            weights = {}
            for name in group.attrs.get("weight_names", []):
                name = _text(name)
                relative = name.split(":")[0]
                if relative.startswith(layer + "/"):
                    relative = relative[len(layer) + 1 :]
                weights[relative] = np.asarray(group[name])
            if weights:
                layers[layer] = weights
    return layers


def _read_checkpoint(path):
    try:
        import tensorflow as tf
    except ImportError as error:  # pragma: no cover - TF is the reference backend
        raise ValueError(
            f"`path`: reading the TF checkpoint {path} needs TensorFlow installed "
            f"(any version); an .h5 weights file needs only h5py."
        ) from error
    try:
        reader = tf.train.load_checkpoint(str(path))
    except (ValueError, tf.errors.OpError) as error:
        raise ValueError(f"`path`: no TF checkpoint or .h5 file at {path}") from error
    suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
    layers = {}
    for key in sorted(reader.get_variable_to_shape_map()):
        if not key.endswith(suffix) or key.startswith(("optimizer/", "save_counter")):
            continue
        if "/.OPTIMIZER_SLOT/" in key:
            continue
        layer, _, relative = key[: -len(suffix)].partition("/")
        layers.setdefault(layer, {})[relative] = reader.get_tensor(key)
    return layers


def _text(value):
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _kerasrnn_name(relative, targets):
    """The target weight name for a TFA weight path, among the names `targets` has."""
    parts = tuple(relative.split("/"))
    for size in (2, 1):
        name = _RENAMES.get(parts[-size:])
        if name in targets:
            return name
    if parts[-1] not in targets and f"norm_{parts[-1]}" in targets:
        # LayerNormSimpleRNNCell's gain, saved as "<cell name>/gamma" in an .h5 file,
        # whatever suffix Keras gave the cell's name
        return f"norm_{parts[-1]}"
    return parts[-1]


def load_tfa_weights(model, path, mapping, check_options=True):
    """Copies the weights of a TFA-built tf.keras model into kerasrnn layers.

    Args:
        model: the kerasrnn (Keras 3) model, built (called once, or with an Input);
            layers named in `mapping` are looked up in it.
        path: the `.h5` file or TF checkpoint (see `read_tfa_weights`).
        mapping: {TFA layer key: kerasrnn layer or its name in `model`}; every mapped
            layer must receive all its weights, with the same shapes. A key
            "LAYER/SUBLAYER" takes the weights under one sublayer, e.g. the two
            directions of a `Bidirectional` layer: {"encoder/forward_rnn":
            bidirectional.forward_layer, "encoder/backward_rnn":
            bidirectional.backward_layer} (in a checkpoint: ".../forward_layer").
        check_options: refuse a layer-normalised cell built without the option that
            reproduces TFA's equations (`carry_normalized_state=True` for the LSTM),
            since its outputs would differ.

    Example:

    >>> import numpy as np, keras, tempfile, h5py, pathlib
    >>> from kerasrnn.compat.tfa import load_tfa_weights
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tfa.h5"
    >>> with h5py.File(path, "w") as f:  # what tf.keras 2 wrote for a Dense layer
    ...     f["out/out/kernel:0"], f["out/out/bias:0"] = np.eye(2), np.ones(2)
    ...     f["out"].attrs["weight_names"] = ["out/kernel:0", "out/bias:0"]
    ...     f.attrs["layer_names"] = ["out"]
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="dense")])
    >>> load_tfa_weights(model, path, {"out": "dense"})
    >>> model.predict(np.array([[1.0, 2.0]]), verbose=0)
    array([[2., 3.]], dtype=float32)
    """
    weights = read_tfa_weights(path)
    for key, layer in mapping.items():
        if isinstance(layer, str):
            layer = model.get_layer(layer)
        _load_layer(layer, _select(weights, key, path), key, check_options)


def _select(weights, key, path):
    """The weights of mapping key "LAYER" or "LAYER/SUBLAYER" (relative to the sublayer)."""
    layer, _, inner = key.partition("/")
    if layer not in weights:
        raise ValueError(
            f"`mapping`: {path} has no layer {layer!r}; its layers with weights are "
            f"{sorted(weights)}."
        )
    if not inner:
        return weights[layer]
    prefix = inner.rstrip("/") + "/"
    chosen = {
        name[len(prefix) :]: value
        for name, value in weights[layer].items()
        if name.startswith(prefix)
    }
    if not chosen:
        raise ValueError(
            f"`mapping`: layer {layer!r} of {path} has no weights under {inner!r}; it has "
            f"{sorted(weights[layer])}."
        )
    return chosen


def _load_layer(layer, source, key, check_options):
    if not layer.built or not layer.weights:
        raise ValueError(
            f"`mapping`: layer {layer.name!r} (for {key!r}) has no weights yet; build the "
            f"model first (call it on an input)."
        )
    targets = {}
    for variable in layer.weights:
        if variable.name in targets:
            raise ValueError(
                f"`mapping`: layer {layer.name!r} holds two weights named {variable.name!r} "
                f"(e.g. a Bidirectional layer); map its inner layers separately."
            )
        targets[variable.name] = variable
    cell = getattr(layer, "cell", layer)
    if check_options and isinstance(cell, LayerNormLSTMCell) and not cell.carry_normalized_state:
        raise ValueError(
            f"`mapping`: {key!r} -> {layer.name!r}: TF Addons' LayerNormLSTMCell carries "
            f"the normalised cell state; build the kerasrnn cell with "
            f"carry_normalized_state=True (or pass check_options=False)."
        )
    values = {}
    for relative, value in source.items():
        name = _kerasrnn_name(relative, targets)
        if name not in targets:
            raise ValueError(
                f"`mapping`: {key!r} -> {layer.name!r}: TFA weight {relative!r} has no "
                f"counterpart; the kerasrnn layer has {sorted(targets)}."
            )
        values[name] = (relative, value)
    missing = sorted(set(targets) - set(values))
    if missing:
        hint = ""
        if isinstance(cell, LayerNormSimpleRNNCell) and "norm_beta" in missing:
            hint = (
                " TF Addons' LayerNormSimpleRNNCell has no beta: build the kerasrnn "
                "cell with bias_after_norm=True, norm_epsilon=1e-5."
            )
        raise ValueError(
            f"`mapping`: {key!r} -> {layer.name!r}: no TFA weight for {missing}; the file "
            f"has {sorted(source)}.{hint}"
        )
    for name, (relative, value) in values.items():
        variable = targets[name]
        if tuple(variable.shape) != tuple(value.shape):
            raise ValueError(
                f"`mapping`: {key!r} -> {layer.name!r}: TFA weight {relative!r} has shape "
                f"{tuple(value.shape)}, the kerasrnn weight {name!r} {tuple(variable.shape)}."
            )
        variable.assign(value.astype(keras.backend.standardize_dtype(variable.dtype)))


# ---- configurations ----------------------------------------------------------------


def _common():
    """The options every kerasrnn cell shares with TF Addons' (dropout, initializers,
    regularizers, constraints ...), read from the base cell's config; TFA's configs lack
    the ones only kerasrnn has (a learned initial state), so picking those picks nothing."""
    return config_keys(RecurrentCell)


def cell_from_tfa_config(class_name, config):
    """The kerasrnn cell that computes what a TF Addons cell with `config` computed.

    Args:
        class_name: the TFA class, "LayerNormLSTMCell", "LayerNormSimpleRNNCell",
            "PeepholeLSTMCell", "NASCell" or "ESNCell" (an "Addons>" prefix is allowed).
        config: the TFA cell's `get_config()` (as in a saved model's JSON).

    Returns:
        An unbuilt kerasrnn cell, with the options that reproduce TFA's equations
        (see the module's table); its weights load with `load_tfa_weights`.

    Example:

    >>> from kerasrnn.compat.tfa import cell_from_tfa_config
    >>> cell = cell_from_tfa_config("Addons>LayerNormSimpleRNNCell", {"units": 4})
    >>> type(cell).__name__, cell.bias_after_norm, cell.norm_epsilon
    ('LayerNormSimpleRNNCell', True, 1e-05)
    """
    name = class_name.split(">")[-1]
    config = {k: v for k, v in dict(config).items() if v is not None or k == "name"}
    config.pop("implementation", None)
    if config.get("dtype") is not None and not isinstance(config["dtype"], str):
        config.pop("dtype")  # a tf.keras DTypePolicy dict; Keras 3 uses its own policy
    if name == "LayerNormLSTMCell":
        keep = _pick(
            config,
            _common()
            + (
                "unit_forget_bias",
                "norm_gamma_initializer",
                "norm_beta_initializer",
                "norm_epsilon",
            ),
        )
        return LayerNormLSTMCell(carry_normalized_state=True, **keep)
    if name == "LayerNormSimpleRNNCell":
        for unsupported in ("gamma_regularizer", "gamma_constraint"):
            if config.get(unsupported) is not None:
                raise ValueError(
                    f"`config`: {unsupported} is not supported by kerasrnn's "
                    f"LayerNormSimpleRNNCell; got {config[unsupported]!r}."
                )
        keep = _pick(config, _common())
        keep["norm_epsilon"] = config.get("layernorm_epsilon", 1e-5)
        if "gamma_initializer" in config:
            keep["norm_gamma_initializer"] = config["gamma_initializer"]
        keep.pop("recurrent_activation", None)
        return LayerNormSimpleRNNCell(bias_after_norm=True, **keep)
    if name == "PeepholeLSTMCell":
        keep = _pick(config, _common() + ("unit_forget_bias",))
        # TFA drew the peephole vectors with the kernel's initializer
        keep["peephole_initializer"] = config.get("kernel_initializer", "glorot_uniform")
        return LSTMCell(peephole=True, **keep)
    if name == "NASCell":
        keep = _pick(
            config,
            (
                "units",
                "projection",
                "use_bias",
                "kernel_initializer",
                "recurrent_initializer",
                "bias_initializer",
                "projection_initializer",
                "name",
                "trainable",
                "dtype",
            ),
        )
        return NASCell(**keep)
    if name == "ESNCell":
        keep = _pick(
            config,
            (
                "units",
                "connectivity",
                "leaky",
                "spectral_radius",
                "use_norm2",
                "use_bias",
                "activation",
                "kernel_initializer",
                "recurrent_initializer",
                "bias_initializer",
                "name",
                "trainable",
                "dtype",
            ),
        )
        return ESNCell(**keep)
    raise ValueError(
        f"`class_name`: no kerasrnn counterpart for TF Addons' {class_name!r}; known: "
        f"LayerNormLSTMCell, LayerNormSimpleRNNCell, PeepholeLSTMCell, NASCell, ESNCell."
    )


def _pick(config, names):
    return {k: config[k] for k in names if k in config}


# ---- AttentionWrapper ----------------------------------------------------------------


# TF Addons' arguments with no counterpart here, and where their job went.
_WRAPPER_ONLY = {
    "cell_input_fn": "a kerasrnn.cells.step_order.StepOrder subclass (its cell input) as "
    "kerasrnn.AttentionCell(cell, attention, step_order, projection)",
    "attention_fn": "a projection layer (kerasrnn.cells.projection) as "
    "kerasrnn.AttentionCell(cell, attention, step_order, projection)",
    "initial_cell_state": "kerasrnn.AttentiveRNN(cell)(targets, memory, initial_state=...), "
    "or decoder.initial_state_from(states) for step-by-step decoding",
}
_DECODER_ONLY = {
    "cell": "the step function: strategy(step_fn, start_tokens, initial_states, max_length, "
    "end_token) with step_fn(tokens, states) -> (logits, states[, alignments])",
    "embedding_fn": "embed the tokens inside the step function",
    "output_layer": "apply the readout to the cell output inside the step function",
    "maximum_iterations": "max_length, the strategy call's fourth argument",
    "reorder_tensor_arrays": "nothing: the returned hypotheses are already reordered",
    "output_all_scores": "nothing: DecodeResult has the scores and log_probs",
    "output_time_major": "nothing: DecodeResult is batch-major; transpose it",
    "impute_finished": "nothing: finished hypotheses are padded with pad_token",
}
# The beam-search options TFA-era code spells otherwise (TFA's names given to a kerasrnn
# strategy, seq2seq toolkits' keyword options), and kerasrnn's spelling. The core
# strategies know none of these: their unknown-argument error points here.
_TFA_NAMES = {
    "beam_size": "TFA's name is beam_width=; kerasrnn.decoding.BeamSearch(beam_size=...) is "
    "kerasrnn's own rule",
    "scorer": "it ranks with TFAScorer(length_penalty_weight, coverage_penalty_weight); for "
    "another scorer use kerasrnn.decoding.CompetingBeamSearch(beam_width, scorer=...)",
    "alpha": "TFA's GNMT alpha is length_penalty_weight=",
    "length_normalization": "TFA's length penalty is length_penalty_weight= (GNMT's); "
    "kerasrnn's own ranking is kerasrnn.decoding.BeamSearch(scorer=kerasrnn.decoding.Scorer("
    "length_normalization=...))",
    "min_length": "pass constraints=kerasrnn.decoding.Constraints(min_length=...)",
    "block_ngram_repeat": "pass constraints=kerasrnn.decoding.Constraints(block_ngram_repeat=...)",
    "max_length_ratio": "pass constraints=kerasrnn.decoding.Constraints(max_length_ratio=...)",
    "stop_rule": "it is TFA's rule (finished hypotheses stay in the beam and compete); "
    "kerasrnn.decoding.BeamSearch sets them aside",
}


def _refuse_tfa_only(function, given, hints, spellings=None):
    """A one-line TypeError naming the argument and where its job went: `hints` for
    TF Addons' own arguments, `spellings` for options spelled otherwise here."""
    if not given:
        return
    name = next(iter(given))
    if name in hints:
        raise TypeError(
            f"{function} does not take TF Addons' `{name}`: in kerasrnn, {hints[name]}."
        )
    if spellings and name in spellings:
        raise TypeError(f"{function} does not take `{name}`: {spellings[name]}.")
    raise TypeError(f"{function} got an unexpected argument {name}={given[name]!r}.")


def AttentionWrapper(  # noqa: N802 - TFA's class name, kept so migrated code reads the same
    cell,
    attention_mechanism,
    attention_layer_size=None,
    alignment_history=False,
    output_attention=True,
    attention_layer=None,
    name=None,
    **tfa_only,
):
    """The `kerasrnn.AttentionCell` that computes what TF Addons' `AttentionWrapper` did.

    TFA's wrapper runs the cell on [y_t; a_{t-1}] (input feeding), attends with the new
    cell output h_t, and makes the attention vector with its own layer:

    .. math::

        h_t &= \\text{cell}([y_t; a_{t-1}], s_{t-1}), \\quad
        c_t = \\text{Attention}(h_t, h) \\\\
        a_t &= W [h_t; c_t] \\;(\\text{attention\\_layer\\_size}), \\quad
        f([h_t; c_t]) \\;(\\text{attention\\_layer}), \\quad
        c_t \\;(\\text{neither})

    and outputs a_t (h_t with `output_attention=False`). This builds the same cell from
    kerasrnn's pieces: `RunThenAttend(output_attention=...)` and `LinearProjection`,
    `LayerProjection` or `ContextProjection`. Use it in `kerasrnn.AttentiveRNN`; TFA's
    weights load unchanged (`cell.projection.kernels` are its `attention_layer`
    kernels). TFA's `cell_input_fn`, `attention_fn` and `initial_cell_state` are not
    taken (a `TypeError` names what replaces each): write a
    `kerasrnn.cells.step_order.StepOrder` subclass, pass a projection, or give
    `AttentiveRNN` an `initial_state`.

    Args:
        cell: the recurrent cell (a Keras or kerasrnn cell).
        attention_mechanism: a `kerasrnn.Attention` layer (e.g. `LuongAttention("general")`
            for TFA's `LuongAttention`), or a list of them.
        attention_layer_size: TFA's: an int (or one per mechanism) for its linear layer,
            None for no layer (the context is the attention vector).
        alignment_history: `AttentiveRNN` returns every step's alignments by default.
        output_attention: TFA's: False outputs the cell output h_t.
        attention_layer: TFA's: a Keras layer (or one per mechanism) applied to [h; c],
            instead of `attention_layer_size`.
        name: the cell's name.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> from kerasrnn.compat.tfa import AttentionWrapper
    >>> cell = AttentionWrapper(keras.layers.LSTMCell(8), kerasrnn.LuongAttention("general"),
    ...                         attention_layer_size=6, alignment_history=True)
    >>> type(cell.projection).__name__, cell.step_order
    ('LinearProjection', RunThenAttend(input_feeding=True, output_attention=True))
    >>> outputs, alignments = kerasrnn.AttentiveRNN(cell)(
    ...     np.ones((2, 4, 3), "float32"), np.ones((2, 5, 8), "float32"))
    >>> tuple(outputs.shape), tuple(alignments.shape)
    ((2, 4, 6), (2, 4, 5))
    """
    _refuse_tfa_only("AttentionWrapper", tfa_only, _WRAPPER_ONLY)
    if attention_layer_size is not None and attention_layer is not None:
        raise ValueError(
            "Give `attention_layer_size` or `attention_layer`, not both (as TF Addons); "
            f"got attention_layer_size={attention_layer_size!r} and an attention_layer."
        )
    if attention_layer is not None:
        projection = LayerProjection(attention_layer)
    elif attention_layer_size is not None:
        projection = LinearProjection(attention_layer_size)
    else:
        projection = ContextProjection()
    return AttentionCell(
        cell,
        attention_mechanism,
        RunThenAttend(input_feeding=True, output_attention=output_attention),
        projection,
        alignment_history=alignment_history,
        name=name,
    )


# ---- BeamSearchDecoder ---------------------------------------------------------------


def beam_search_decoder(
    beam_width,
    length_penalty_weight=0.0,
    coverage_penalty_weight=0.0,
    constraints=None,
    **tfa_only,
):
    """TensorFlow Addons' `BeamSearchDecoder` ranking as a kerasrnn decoding strategy:
    `kerasrnn.decoding.CompetingBeamSearch` (finished hypotheses stay in the beam and
    compete) with `kerasrnn.decoding.TFAScorer` (GNMT length penalty with alpha =
    `length_penalty_weight`, the end token not counted at the step that picks it),
    which reproduce TFA's ids, scores and lengths (tests/decoding/test_tfa_beam.py).

    The strategy is called on a step function, `strategy(step_fn, start_tokens,
    initial_states, max_length, end_token)`: the TFA decoder's other arguments
    (`cell`, `embedding_fn`, `output_layer`, `maximum_iterations`, ...) have their
    place there, and passing one here raises a `TypeError` that says where; so does
    an option spelled otherwise here (`alpha`, `min_length`, `beam_size`, ...).

    TFA's names on kerasrnn's own strategies: `beam_width` is `beam_size`,
    `length_penalty_weight` is `scorer=kerasrnn.decoding.Scorer("gnmt",
    alpha=length_penalty_weight)` (kerasrnn counts the end token and sets finished
    hypotheses aside; `TFAScorer` and `CompetingBeamSearch` are TFA's rules) and
    `coverage_penalty_weight` is the scorer's `coverage_penalty_weight`.

    Example:

    >>> from kerasrnn.compat import tfa
    >>> tfa.beam_search_decoder(5, length_penalty_weight=0.6).scorer.alpha
    0.6
    """
    _refuse_tfa_only("beam_search_decoder", tfa_only, _DECODER_ONLY, _TFA_NAMES)
    from kerasrnn import decoding

    return decoding.CompetingBeamSearch(
        beam_width,
        scorer=decoding.TFAScorer(length_penalty_weight, coverage_penalty_weight),
        constraints=constraints,
    )
