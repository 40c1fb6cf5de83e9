"""The gate-bias options (forget_bias, chrono_init) and learned initial states."""

import keras
import numpy as np
import pytest

import kerasrnn

U, D = 6, 3


def built_bias(cell):
    keras.layers.RNN(cell)(np.zeros((1, 2, D), "float32"))
    return keras.ops.convert_to_numpy(cell.bias)


def blocks(bias, names):
    return {n: bias[..., k * U : (k + 1) * U] for k, n in enumerate(names)}


@pytest.mark.parametrize(
    "kwargs,names",
    [
        ({}, "ifco"),
        ({"coupled": True}, "fco"),
        ({"peephole": True}, "ifco"),
    ],
)
def test_lstm_forget_bias_is_added_to_the_initial_forget_block(kwargs, names):
    cell = kerasrnn.LSTMCell(
        U, forget_bias=2.5, bias_initializer=keras.initializers.Constant(0.3), **kwargs
    )
    b = blocks(built_bias(cell), names)
    np.testing.assert_allclose(b["f"], 2.8, rtol=1e-6)
    for gate in names.replace("f", ""):
        np.testing.assert_allclose(b[gate], 0.3, rtol=1e-6)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_forget_bias_goes_to_the_update_gate(reset_after):
    cell = kerasrnn.GRUCell(
        U,
        reset_after=reset_after,
        forget_bias=-1.0,
        bias_initializer=keras.initializers.Constant(0.3),
    )
    bias = built_bias(cell)
    row = bias[0] if reset_after else bias
    b = blocks(row, "zrh")
    np.testing.assert_allclose(b["z"], -0.7, rtol=1e-6)
    np.testing.assert_allclose(np.concatenate([b["r"], b["h"]]), 0.3, rtol=1e-6)
    if reset_after:
        np.testing.assert_allclose(bias[1], 0.3, rtol=1e-6)  # the recurrent bias untouched


def test_lstm_chrono_init():
    """b_f = log(u), u ~ U[1, T_max - 1], b_i = -b_f, other gates from bias_initializer."""
    t_max, units = 100, 4000
    cell = kerasrnn.LSTMCell(units, chrono_init=t_max, recurrent_initializer="zeros")
    keras.layers.RNN(cell)(np.zeros((1, 2, D), "float32"))
    bias = keras.ops.convert_to_numpy(cell.bias)
    i, f, c, o = (bias[k * units : (k + 1) * units] for k in range(4))
    u = np.exp(f.astype(np.float64))
    assert 1.0 - 1e-5 <= u.min() and u.max() <= t_max - 1 + 1e-3
    np.testing.assert_allclose(i, -f)
    np.testing.assert_array_equal(np.concatenate([c, o]), 0.0)
    # u is uniform on [1, T_max - 1]: its deciles sit where the uniform's are
    deciles = np.quantile(u, np.linspace(0.1, 0.9, 9))
    np.testing.assert_allclose(deciles, 1 + (t_max - 2) * np.linspace(0.1, 0.9, 9), atol=4.0)
    # the forgetting time 1 / (1 - sigmoid(b_f)) = 1 + u spans [2, T_max]
    times = 1 / (1 - 1 / (1 + np.exp(-f.astype(np.float64))))
    np.testing.assert_allclose(times, 1 + u, rtol=1e-4)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_chrono_init(reset_after):
    t_max, units = 50, 2000
    cell = kerasrnn.GRUCell(
        units, reset_after=reset_after, chrono_init=t_max, recurrent_initializer="zeros"
    )
    keras.layers.RNN(cell)(np.zeros((1, 2, D), "float32"))
    bias = keras.ops.convert_to_numpy(cell.bias)
    row = bias[0] if reset_after else bias
    u = np.exp(row[:units].astype(np.float64))
    assert 1.0 - 1e-5 <= u.min() and u.max() <= t_max - 1 + 1e-3
    assert abs(u.mean() - t_max / 2) < 1.5
    np.testing.assert_array_equal(row[units:], 0.0)


def test_chrono_is_reproducible_with_a_seed():
    a = built_bias(kerasrnn.LSTMCell(U, chrono_init=10, seed=3))
    b = built_bias(kerasrnn.LSTMCell(U, chrono_init=10, seed=3))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "cls,kwargs",
    [
        (kerasrnn.LSTMCell, {}),
        (kerasrnn.GRUCell, {}),
        (kerasrnn.SimpleRNNCell, {}),
        (kerasrnn.LSTMCell, {"forget_gate": False}),
    ],
)
@pytest.mark.parametrize("rnn", [keras.layers.RNN, kerasrnn.RNN], ids=["keras.RNN", "kerasrnn.RNN"])
def test_learned_initial_state_is_the_state_the_sequence_starts_from(cls, kwargs, rnn):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5, D)).astype("float32")
    learned = rnn(cls(U, learn_initial_state=True, **kwargs), return_sequences=True)
    plain = rnn(cls(U, **kwargs), return_sequences=True)
    learned(x)
    plain(x)
    n = len(plain.weights)
    names = [w.path.split("/")[-1] for w in learned.weights[n:]]
    assert names == (["initial_h", "initial_c"] if cls is kerasrnn.LSTMCell else ["initial_h"])
    values = [rng.normal(size=w.shape).astype("float32") for w in learned.weights]
    learned.set_weights(values)
    plain.set_weights(values[:n])
    starts = [np.tile(v[None], (4, 1)) for v in values[n:]]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(learned(x)),
        keras.ops.convert_to_numpy(plain(x, initial_state=starts)),
        atol=1e-6,
    )
    # an explicit initial_state still wins
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(learned(x, initial_state=[0 * s for s in starts])),
        keras.ops.convert_to_numpy(plain(x)),
        atol=1e-6,
    )


@pytest.mark.parametrize("learn", [True, False])
def test_only_a_learned_initial_state_can_fit_a_zero_input_target(learn):
    """No bias, zero inputs: a zero start state stays zero forever, so the target 0.5 is
    reachable only through h_0 / c_0."""
    cell = kerasrnn.LSTMCell(4, use_bias=False, learn_initial_state=learn)
    inputs = keras.Input((3, 2))
    outputs = keras.layers.Dense(1, use_bias=False)(keras.layers.RNN(cell)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    x, y = np.zeros((3200, 3, 2), "float32"), np.full((3200, 1), 0.5, "float32")
    model.fit(x, y, batch_size=32, verbose=0)  # 100 steps
    loss = model.evaluate(x[:32], y[:32], verbose=0)
    assert (loss < 1e-3) if learn else (abs(loss - 0.25) < 1e-6)


def test_config_and_keras_file_round_trip(tmp_path):
    for cell in (
        kerasrnn.LSTMCell(U, forget_bias=3.0, learn_initial_state=True),
        kerasrnn.LSTMCell(U, chrono_init=20),
        kerasrnn.GRUCell(U, chrono_init=20, learn_initial_state=True),
        kerasrnn.GRUCell(U, forget_bias=1.0),
    ):
        config = cell.get_config()
        assert type(cell).from_config(config).get_config() == config
    inputs = keras.Input((None, D))
    cell = kerasrnn.GRUCell(U, learn_initial_state=True, chrono_init=20)
    model = keras.Model(inputs, keras.layers.RNN(cell)(inputs))
    model.layers[1].cell.initial_state_weights[0].assign(np.arange(U, dtype="float32"))
    path = str(tmp_path / "m.keras")
    model.save(path)
    x = np.random.default_rng(1).normal(size=(2, 4, D)).astype("float32")
    np.testing.assert_allclose(
        keras.saving.load_model(path).predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6
    )


def test_bad_options():
    with pytest.raises(ValueError, match="no forget gate"):
        kerasrnn.LSTMCell(U, forget_gate=False, forget_bias=1.0)
    with pytest.raises(ValueError, match="no forget gate"):
        kerasrnn.LSTMCell(U, forget_gate=False, chrono_init=10)
    with pytest.raises(ValueError, match="give one"):
        kerasrnn.GRUCell(U, forget_bias=1.0, chrono_init=10)
    with pytest.raises(ValueError, match=">= 2"):
        kerasrnn.LSTMCell(U, chrono_init=1)
    with pytest.raises(ValueError, match="use_bias=False"):
        kerasrnn.GRUCell(U, use_bias=False, forget_bias=1.0)
    with pytest.raises(ValueError, match="a number"):
        kerasrnn.LSTMCell(U, forget_bias="big")


# ---- the cell's options, one list (`config_keys`) ------------------------------------
CELLS = [
    kerasrnn.SimpleRNNCell,
    kerasrnn.LSTMCell,
    kerasrnn.GRUCell,
    kerasrnn.LayerNormLSTMCell,
    kerasrnn.LayerNormSimpleRNNCell,
    kerasrnn.NASCell,
    kerasrnn.ESNCell,
]


@pytest.mark.parametrize("cls", CELLS, ids=lambda c: c.__name__)
def test_every_cell_has_the_base_options_and_each_rebuilds_it(cls):
    from kerasrnn.cells.base import RecurrentCell, config_keys

    keys = config_keys(cls)
    # (the cells without gates, or with fixed activations, refuse and drop those two)
    missing = set(config_keys(RecurrentCell)) - set(keys)
    assert missing <= {"activation", "recurrent_activation"}
    config = cls(U).get_config()
    assert tuple(config) == keys
    # every key is a constructor argument: the config rebuilds the cell
    assert cls(**config).get_config() == config


def test_an_option_added_to_lstm_cell_takes_it_off_the_fused_kernel(monkeypatch):
    from kerasrnn.cells.rnn import fused_kind

    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U))
    assert fused_kind(layer) == "lstm"
    base_config = kerasrnn.LSTMCell.get_config
    monkeypatch.setattr(
        kerasrnn.LSTMCell, "get_config", lambda self: {**base_config(self), "new_option": True}
    )
    assert fused_kind(layer) is None


def test_tfa_conversion_keeps_every_base_option():
    from kerasrnn.cells.base import RecurrentCell, config_keys
    from kerasrnn.compat.tfa import cell_from_tfa_config

    tfa = {
        "units": U,
        "dropout": 0.25,
        "recurrent_dropout": 0.5,
        "use_bias": False,
        "kernel_regularizer": keras.regularizers.serialize(keras.regularizers.L2(0.1)),
        "activation": "relu",
        "recurrent_activation": "hard_sigmoid",
    }
    cell = cell_from_tfa_config("Addons>PeepholeLSTMCell", tfa)
    config = cell.get_config()
    assert set(tfa) <= set(config_keys(RecurrentCell))
    for key, value in tfa.items():
        assert config[key] == value, key
