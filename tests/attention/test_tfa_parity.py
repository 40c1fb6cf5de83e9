"""kerasrnn's attention against TensorFlow Addons 0.23's own outputs.

The fixtures (tests/fixtures/tfa/attention_*.npz) were written by
tools/tfa_fixtures/attention.py in the TFA reference environment: seeded weights,
inputs and TFA's outputs. Each test loads the weights into the kerasrnn equivalent and
must agree within 1e-5; each `..._today` test checks that the paper-default formula
(what kerasrnn computed before these options) does *not* match, so the fixtures can
tell the options apart.
"""

import pathlib

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.attention import BahdanauMonotonicAttention, LuongMonotonicAttention
from kerasrnn.compat.tfa import AttentionWrapper

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tfa"
UNITS, DQ = 5, 5
ATOL = 1e-5


def _load(name):
    with np.load(FIXTURES / f"attention_{name}.npz") as data:
        return {key: data[key] for key in data.files}


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


# ---- building the kerasrnn equivalents ----------------------------------------------
def _mechanism(name, today=False):
    """The kerasrnn layer for a fixture name (today=True: the softmax / non-monotonic
    formula the option replaces)."""
    monotonic = "monotonic" in name
    mode = name.rsplit("_", 1)[-1] if monotonic else None
    if name.startswith("bahdanau"):
        normalize = "normalized" in name or monotonic
        if monotonic and not today:
            bias = 0.0 if mode == "hard" else -0.5
            return BahdanauMonotonicAttention(
                UNITS, normalize=True, score_bias_init=bias, mode=mode
            )
        probability = "hardmax" if "hardmax" in name and not today else "softmax"
        return kerasrnn.BahdanauAttention(UNITS, normalize=normalize, probability_fn=probability)
    scale = "scaled" in name or monotonic
    if monotonic and not today:
        bias = 0.0 if mode == "hard" else 0.5
        return LuongMonotonicAttention("general", scale=True, score_bias_init=bias, mode=mode)
    return kerasrnn.LuongAttention("general", scale=scale)


def _set_mechanism_weights(layer, data, prefix):
    score = layer.score
    if f"{prefix}/query_kernel" in data:  # Bahdanau
        score.query_kernel.assign(data[f"{prefix}/query_kernel"])
        score.key_kernel.assign(data[f"{prefix}/memory_kernel"])
        score.attention_v.assign(data[f"{prefix}/attention_v"][:, None])
        if score.normalize:
            score.attention_g.assign(data[f"{prefix}/attention_g"])
            score.attention_b.assign(data[f"{prefix}/attention_b"])
    else:  # Luong: TFA's memory layer is W_a of the general score, stored (d_k, d_q)
        score.kernel.assign(data[f"{prefix}/memory_kernel"])
        if layer.scale:
            key = f"{prefix}/scale_weight"  # LuongMonotonicAttention: attention_g
            layer.scale_weight.assign(data[key if key in data else f"{prefix}/attention_g"])
    if hasattr(layer, "attention_score_bias") and f"{prefix}/attention_score_bias" in data:
        layer.attention_score_bias.assign(data[f"{prefix}/attention_score_bias"])


MECHANISM_FIXTURES = [
    "bahdanau",
    "bahdanau_normalized",
    "bahdanau_hardmax",
    "luong",
    "luong_scaled",
] + [f"{k}_monotonic_{m}" for k in ("bahdanau", "luong") for m in ("parallel", "recursive", "hard")]


def _run_mechanism(name, today=False):
    data = _load(name)
    layer = _mechanism(name, today)
    layer.build((None, DQ), data["memory"].shape)
    _set_mechanism_weights(layer, data, "mech0")
    memory = layer.prepare(data["memory"], mask=data["mask"])
    state = layer.initial_state(memory)
    alignments, contexts = [], []
    for query in data["queries"]:
        context, alignment, next_state = layer.step(query, memory, state)
        state = next_state if next_state is not None else state
        alignments.append(_np(alignment))
        contexts.append(_np(context))
    return data, np.stack(alignments), np.stack(contexts)


@pytest.mark.parametrize("name", MECHANISM_FIXTURES)
def test_mechanism_matches_tfa(name):
    data, alignments, contexts = _run_mechanism(name)
    np.testing.assert_allclose(alignments, data["alignments"], atol=ATOL)
    np.testing.assert_allclose(contexts, data["contexts"], atol=ATOL)
    if "monotonic" in name:  # the one-hot start, carried as state
        layer = _mechanism(name)
        layer.build((None, DQ), data["memory"].shape)
        first = layer.initial_state(layer.prepare(data["memory"]))
        np.testing.assert_array_equal(_np(first), data["initial_state"])


@pytest.mark.parametrize(
    "name", ["bahdanau_hardmax"] + [n for n in MECHANISM_FIXTURES if "monotonic" in n]
)
def test_mechanism_today(name):
    """softmax in place of hardmax, or plain attention in place of monotonic: differs."""
    data, alignments, _ = _run_mechanism(name, today=True)
    assert np.abs(alignments - data["alignments"]).max() > 1e-2


# ---- AttentionWrapper ------------------------------------------------------------------
# through kerasrnn.compat.tfa.AttentionWrapper, with TF Addons' own arguments
WRAPPERS = {
    "wrapper_lstm_layer_size": (
        "lstm",
        lambda: kerasrnn.BahdanauAttention(UNITS),
        dict(attention_layer_size=6, alignment_history=True),
    ),
    "wrapper_gru_raw_context": (
        "gru",
        lambda: kerasrnn.LuongAttention("general"),
        dict(attention_layer_size=None),
    ),
    "wrapper_lstm_cell_output": (
        "lstm",
        lambda: kerasrnn.LuongAttention("general", scale=True),
        dict(attention_layer_size=UNITS, output_attention=False),
    ),
    "wrapper_gru_attention_layer": (
        "gru",
        lambda: kerasrnn.BahdanauAttention(UNITS),
        dict(attention_layer=keras.layers.Dense(5, activation="tanh")),
    ),
    "wrapper_lstm_multi": (
        "lstm",
        lambda: [kerasrnn.BahdanauAttention(UNITS), kerasrnn.LuongAttention("general")],
        dict(attention_layer_size=[4, 3], alignment_history=True),
    ),
    "wrapper_gru_monotonic": (
        "gru",
        lambda: BahdanauMonotonicAttention(UNITS, score_bias_init=-0.5),
        dict(attention_layer_size=UNITS, alignment_history=True),
    ),
}

# each TFA choice replaced by the papers' piece (what kerasrnn computes by default):
# the AttentionCell arguments (step order, projection) that differ from TFA's, made
# fresh for each test
TODAY = {
    # Luong's tanh(W_c [c; h]) in place of TFA's linear W [h; c]
    "wrapper_lstm_layer_size": lambda: dict(projection=kerasrnn.LuongProjection(6)),
    # a_t = tanh(W_c [c; h]) as wide as c (so the cell's weights still fit), not a_t = c
    "wrapper_gru_raw_context": lambda: dict(projection=kerasrnn.LuongProjection(6)),
    # the attention vector as the output, not the cell output
    "wrapper_lstm_cell_output": lambda: dict(
        step_order=kerasrnn.RunThenAttend(), projection=kerasrnn.LinearProjection(UNITS)
    ),
    "wrapper_lstm_multi": lambda: dict(projection=kerasrnn.LuongProjection([4, 3])),
    "wrapper_gru_monotonic": lambda: dict(projection=kerasrnn.LuongProjection(UNITS)),
}


def _wrapper(name, today=None):
    data = _load(name)
    kind, mechanisms, options = WRAPPERS[name]
    options = dict(options)
    if isinstance(options.get("attention_layer"), keras.layers.Layer):
        options["attention_layer"] = keras.layers.Dense(5, activation="tanh")
    cell = (keras.layers.LSTMCell if kind == "lstm" else keras.layers.GRUCell)(UNITS)
    attention_cell = AttentionWrapper(cell, mechanisms(), **options)
    if today is not None:  # the same cell and mechanisms with the papers' pieces
        pieces = {
            "step_order": attention_cell.step_order,
            "projection": attention_cell.projection,
            **today,
        }
        attention_cell = kerasrnn.AttentionCell(
            cell,
            attention_cell.attention,
            alignment_history=attention_cell.alignment_history,
            **pieces,
        )
    decoder = kerasrnn.AttentiveRNN(attention_cell, return_state=True)
    multi = isinstance(attention_cell.attention, list)
    memory = [data["memory0"], data["memory1"]] if multi else data["memory0"]
    mask = [data["mask0"], data["mask1"]] if multi else data["mask0"]
    decoder(data["inputs"], memory, memory_mask=mask)  # builds every weight
    for weight in ("kernel", "recurrent_kernel", "bias"):
        getattr(cell, weight).assign(data[f"cell/{weight}"])
    for index, mechanism in enumerate(attention_cell.mechanisms):
        _set_mechanism_weights(mechanism, data, f"mech{index}")
    projection = attention_cell.projection
    if isinstance(projection, kerasrnn.LayerProjection):
        projection.layers.kernel.assign(data["layer0/kernel"])
        projection.layers.bias.assign(data["layer0/bias"])
    for index, kernel in enumerate(getattr(projection, "kernels", [])):
        if f"layer{index}/kernel" in data:  # (a `today` variant may have its own W_c)
            kernel.assign(data[f"layer{index}/kernel"])
    return data, decoder, memory, mask


def _compare(name, today=None):
    data, decoder, memory, mask = _wrapper(name, today)
    results = decoder(data["inputs"], memory, memory_mask=mask)
    cell = decoder.cell
    if decoder.return_alignments:
        outputs, alignments, *states = results
        alignments = alignments if isinstance(alignments, list) else [alignments]
    else:
        outputs, *states = results
        alignments = []
    count = len(cell.cell_state_sizes)
    return data, {
        "outputs": _np(outputs),
        "final_cell_state": np.concatenate([_np(s) for s in states[:count]], axis=-1),
        "final_attention": _np(states[count]),
        **{
            f"alignment_history{i}": np.transpose(_np(a), (1, 0, 2))
            for i, a in enumerate(alignments)
        },
    }


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_attention_wrapper_matches_tfa(name):
    data, ours = _compare(name)
    expected = [k for k in data if k.startswith(("outputs", "final_", "alignment_history"))]
    assert set(expected) == set(ours), (sorted(expected), sorted(ours))
    for key in expected:
        np.testing.assert_allclose(ours[key], data[key], atol=ATOL, err_msg=key)


@pytest.mark.parametrize("name", list(TODAY))
def test_attention_wrapper_today(name):
    """The papers' formula in place of each TFA option gives other outputs."""
    data, ours = _compare(name, TODAY[name]())
    assert np.abs(ours["outputs"] - data["outputs"]).max() > 1e-2


def test_attention_wrapper_step_by_step_matches_tfa():
    """The step API (what beam search uses) gives TFA's numbers too."""
    name = "wrapper_lstm_multi"
    data, decoder, memory, mask = _wrapper(name)
    prepared = decoder.prepare_memory(memory, mask=mask)
    states = decoder.initial_state_from(batch_size=data["inputs"].shape[0], memory=prepared)
    outputs, histories = [], []
    for t in range(data["inputs"].shape[1]):
        output, states, alignments = decoder.step(data["inputs"][:, t], states, prepared)
        outputs.append(_np(output))
        histories.append([_np(a) for a in alignments])
    np.testing.assert_allclose(np.stack(outputs, 1), data["outputs"], atol=ATOL)
    for index in range(2):
        np.testing.assert_allclose(
            np.stack([h[index] for h in histories]),
            data[f"alignment_history{index}"],
            atol=ATOL,
        )


def test_wrapper_keras_round_trip(tmp_path):
    """A TFA-configured decoder saves and reloads with its options and weights."""
    name = "wrapper_gru_monotonic"
    data, decoder, memory, mask = _wrapper(name)
    inputs = keras.Input((None, data["inputs"].shape[-1]))
    source = keras.Input((None, data["memory0"].shape[-1]))
    source_mask = keras.Input((None,), dtype="bool")
    outputs = decoder(inputs, source, memory_mask=source_mask)
    model = keras.Model([inputs, source, source_mask], outputs[:2])
    path = tmp_path / "tfa.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    result = loaded.predict([data["inputs"], memory, mask], verbose=0)
    np.testing.assert_allclose(result[0], data["outputs"], atol=ATOL)
    np.testing.assert_allclose(
        np.transpose(result[1], (1, 0, 2)), data["alignment_history0"], atol=ATOL
    )
