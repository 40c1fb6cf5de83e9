"""kerasrnn's cells against TensorFlow Addons' own outputs (tests/fixtures/tfa, written by
tools/tfa_fixtures/cells.py with tensorflow-addons 0.23): same weights, inputs, masks and
initial states must give TFA's outputs and final states within 1e-5, on every backend."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells.esn import scale_spectral_radius
from kerasrnn.compat.tfa import cell_from_tfa_config
from tests.compat import tfa_fixtures

ATOL = 1e-5

LN_LSTM_NAMES = {
    "kernel": "kernel",
    "recurrent_kernel": "recurrent_kernel",
    "bias": "bias",
    "kernel_norm/gamma": "input_norm_gamma",
    "kernel_norm/beta": "input_norm_beta",
    "recurrent_norm/gamma": "recurrent_norm_gamma",
    "recurrent_norm/beta": "recurrent_norm_beta",
    "state_norm/gamma": "cell_norm_gamma",
    "state_norm/beta": "cell_norm_beta",
}
PLAIN = {"kernel": "kernel", "recurrent_kernel": "recurrent_kernel", "bias": "bias"}

# fixture: (the kerasrnn cell with TFA's options, TFA weight name -> ours,
#           our state order as indices into TFA's states)
CASES = {
    "layer_norm_lstm": (
        lambda: kerasrnn.LayerNormLSTMCell(4, carry_normalized_state=True),
        LN_LSTM_NAMES,
        [0, 1],
    ),
    "layer_norm_simple_rnn": (
        lambda: kerasrnn.LayerNormSimpleRNNCell(4, bias_after_norm=True, norm_epsilon=1e-5),
        {**PLAIN, "gamma": "norm_gamma"},
        [0],
    ),
    "peephole_lstm": (
        lambda: kerasrnn.LSTMCell(4, peephole=True),
        {
            **PLAIN,
            "input_gate_peephole_weights": "peephole_i",
            "forget_gate_peephole_weights": "peephole_f",
            "output_gate_peephole_weights": "peephole_o",
        },
        [0, 1],
    ),
    "nas": (lambda: kerasrnn.NASCell(4), PLAIN, [1, 0]),
    "nas_projection_bias": (
        lambda: kerasrnn.NASCell(4, projection=3, use_bias=True),
        {**PLAIN, "projection_weights": "projection_kernel"},
        [1, 0],
    ),
    "esn": (lambda: kerasrnn.ESNCell(4, leaky=0.7, connectivity=0.5), PLAIN, [0]),
}

# The same fixtures, with each cell switched back to this package's earlier formula:
# these must NOT reproduce TFA (so the fixture tests can fail).
EARLIER = {
    "layer_norm_lstm": lambda: kerasrnn.LayerNormLSTMCell(4),
    # the earlier form with beta = 0: LN(Wx + Uh + b), epsilon 1e-3
    "layer_norm_simple_rnn": lambda: kerasrnn.LayerNormSimpleRNNCell(4),
}


def run_cell(cell, fixture, names, order, rnn=kerasrnn.RNN, masked=False, earlier=False):
    """Our outputs and final states (in TFA's state order) on the fixture's inputs."""
    layer = rnn(cell, return_sequences=True, return_state=True)
    states = [tfa_fixtures.numbered(fixture, "state")[i] for i in order]
    x = fixture["x"]
    layer(x, initial_state=states)
    source = tfa_fixtures.weights(fixture)
    ours = {w.name: w for w in cell.weights}
    for tfa_name, value in source.items():
        ours.pop(names[tfa_name]).assign(value)
    if earlier:  # the earlier simple-RNN form has a beta that TFA lacks: zero it
        for name in list(ours):
            if name == "norm_beta":
                ours.pop(name).assign(np.zeros(4, "float32"))
    assert not ours, f"weights left unset: {sorted(ours)}"
    mask = fixture["mask"] if masked else None
    outputs, *final = layer(x, initial_state=states, mask=mask)
    back = np.argsort(order)  # our states -> TFA's order
    final = [keras.ops.convert_to_numpy(final[i]) for i in back]
    return keras.ops.convert_to_numpy(outputs), final


@pytest.mark.parametrize("rnn", [kerasrnn.RNN, keras.layers.RNN], ids=["kerasrnn.RNN", "keras.RNN"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cell_reproduces_tfa(name, rnn):
    fixture = tfa_fixtures.load(name)
    factory, names, order = CASES[name]
    outputs, final = run_cell(factory(), fixture, names, order, rnn)
    np.testing.assert_allclose(outputs, fixture["outputs"], atol=ATOL)
    for got, want in zip(final, tfa_fixtures.numbered(fixture, "final"), strict=True):
        np.testing.assert_allclose(got, want, atol=ATOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cell_reproduces_tfa_with_mask(name):
    fixture = tfa_fixtures.load(name)
    factory, names, order = CASES[name]
    outputs, final = run_cell(factory(), fixture, names, order, masked=True)
    want = fixture["masked_outputs"]
    if keras.backend.backend() != "tensorflow":
        # what a masked step outputs is backend-specific in Keras; the states are not
        mask = fixture["mask"]
        outputs, want = outputs[mask], want[mask]
    np.testing.assert_allclose(outputs, want, atol=ATOL)
    for got, want in zip(final, tfa_fixtures.numbered(fixture, "masked_final"), strict=True):
        np.testing.assert_allclose(got, want, atol=ATOL)


@pytest.mark.parametrize("name", sorted(EARLIER))
def test_earlier_formula_does_not_reproduce_tfa(name):
    """The fixtures tell the forms apart: the default (earlier) forms miss TFA's outputs."""
    fixture = tfa_fixtures.load(name)
    _, names, order = CASES[name]
    outputs, _ = run_cell(EARLIER[name](), fixture, names, order, earlier=True)
    gap = np.abs(outputs - fixture["outputs"]).max(axis=(0, 2))
    assert gap.max() > 1e-2, gap
    if name == "layer_norm_lstm":
        # from a given state, step 1 is the same computation; the carried state differs
        assert gap[0] < ATOL and gap[1:].min() > 1e-3, gap


@pytest.mark.parametrize("name", sorted(CASES))
def test_cell_from_tfa_config_reproduces_tfa(name):
    """TFA's own config, translated, gives a cell with the options that match TFA."""
    fixture = tfa_fixtures.load(name)
    class_name = {
        "layer_norm_lstm": "LayerNormLSTMCell",
        "layer_norm_simple_rnn": "LayerNormSimpleRNNCell",
        "peephole_lstm": "PeepholeLSTMCell",
        "nas": "NASCell",
        "nas_projection_bias": "NASCell",
        "esn": "ESNCell",
    }[name]
    cell = cell_from_tfa_config(class_name, tfa_fixtures.config(fixture))
    _, names, order = CASES[name]
    outputs, final = run_cell(cell, fixture, names, order)
    np.testing.assert_allclose(outputs, fixture["outputs"], atol=ATOL)


@pytest.mark.parametrize("key", ["eig", "norm2"])
def test_esn_spectral_radius_scaling_matches_tfa(key):
    fixture = tfa_fixtures.load("esn_scaling")
    base, scaled = fixture[f"{key}_base"], fixture[f"{key}_scaled"]
    connected = scaled != 0  # TFA's (unseeded) connectivity mask
    got = scale_spectral_radius(base * connected, 0.8, use_norm2=key == "norm2")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), scaled, atol=ATOL)
    if key == "eig":
        assert np.isclose(np.abs(np.linalg.eigvals(scaled)).max(), 0.8, atol=1e-5)
