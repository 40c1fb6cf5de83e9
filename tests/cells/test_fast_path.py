"""kerasrnn.RNN's fast path: which cells take it, and that every way gives Keras' results.

The references are Keras' own layers (`keras.layers.LSTM` / `GRU` with the weights copied)
and `keras.layers.RNN` over the same cell. On a CPU, TensorFlow's and JAX's fused kernels
decline (cuDNN only), so there the routing is checked with a spy on the fused call and the
results come from the loop; on the torch backend the fused kernel itself runs and is
compared.
"""

import os

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import rnn as rnn_module
from kerasrnn.cells.rnn import fused_kind

B, T, D, U = 3, 6, 5, 4


def randomize(layer, rng, scale=0.5):
    layer.set_weights([rng.normal(0, scale, w.shape).astype("float32") for w in layer.weights])


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, D)).astype("float32")


def numpy(x):
    return keras.ops.convert_to_numpy(x)


KERAS_LAYERS = {
    "lstm": (lambda **kw: kerasrnn.LSTMCell(U, **kw), keras.layers.LSTM),
    "gru": (lambda **kw: kerasrnn.GRUCell(U, **kw), keras.layers.GRU),
    "gru-reset_before": (
        lambda **kw: kerasrnn.GRUCell(U, reset_after=False, **kw),
        lambda units, **kw: keras.layers.GRU(units, reset_after=False, **kw),
    ),
}


# ---- which cells take the fast path -----------------------------------------------------
@pytest.mark.parametrize(
    "make_cell,kind",
    [
        (lambda: kerasrnn.LSTMCell(U), "lstm"),
        (lambda: kerasrnn.LSTMCell(U, unit_forget_bias=False, use_bias=False), "lstm"),
        (lambda: kerasrnn.LSTMCell(U, dropout=0.3, kernel_regularizer="l2"), "lstm"),
        (lambda: kerasrnn.GRUCell(U), "gru"),
        (lambda: kerasrnn.GRUCell(U, reset_after=False, dropout=0.2), "gru"),
        (lambda: kerasrnn.LSTMCell(U, peephole=True), None),
        (lambda: kerasrnn.LSTMCell(U, coupled=True), None),
        (lambda: kerasrnn.LSTMCell(U, forget_gate=False), None),
        (lambda: kerasrnn.LSTMCell(U, recurrent_dropout=0.1), None),
        (lambda: kerasrnn.GRUCell(U, recurrent_dropout=0.1), None),
        (lambda: kerasrnn.LSTMCell(U, activation="relu"), None),
        (lambda: kerasrnn.GRUCell(U, recurrent_activation="hard_sigmoid"), None),
        (lambda: kerasrnn.LayerNormLSTMCell(U), None),  # a subclass: its own equations
        (lambda: kerasrnn.SimpleRNNCell(U), None),
        (lambda: keras.layers.LSTMCell(U), None),  # Keras' cell: keras.layers.LSTM's job
    ],
    ids=[
        "lstm",
        "lstm-no-bias",
        "lstm-dropout-regularizer",
        "gru",
        "gru-reset_before",
        "peephole",
        "coupled",
        "no-forget-gate",
        "lstm-recurrent-dropout",
        "gru-recurrent-dropout",
        "relu",
        "hard-sigmoid",
        "layer-norm",
        "simple",
        "keras-cell",
    ],
)
def test_fused_kind(make_cell, kind):
    assert fused_kind(kerasrnn.RNN(make_cell())) == kind


def test_an_unknown_option_switched_on_leaves_the_fast_path():
    """A cell option added later (say zoneout) must opt in explicitly."""
    cell = kerasrnn.LSTMCell(U)
    layer = kerasrnn.RNN(cell)
    config = cell.get_config()
    cell.get_config = lambda: {**config, "zoneout": 0.1}
    assert fused_kind(layer) is None
    cell.get_config = lambda: {**config, "zoneout": 0.0}
    assert fused_kind(layer) == "lstm"


@pytest.mark.parametrize(
    "options",
    [{"forget_bias": 1.0}, {"chrono_init": 50}, {"learn_initial_state": True}],
    ids=["forget_bias", "chrono_init", "learn_initial_state"],
)
def test_initialisation_options_keep_the_fast_path(options):
    """They choose initial values (biases, h_0 / c_0), not the step the kernel computes."""
    assert fused_kind(kerasrnn.RNN(kerasrnn.LSTMCell(U, **options))) == "lstm"
    assert fused_kind(kerasrnn.RNN(kerasrnn.GRUCell(U, **options))) == "gru"


class Spy:
    """Stands in for Keras' fused lstm/gru: records the call, then declines like a CPU."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        raise NotImplementedError


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_standard_cells_are_offered_to_the_fused_kernel(monkeypatch, kind, fast_path):
    spy = Spy()
    monkeypatch.setattr(rnn_module, f"backend_{kind}", spy)
    make_cell, _ = KERAS_LAYERS[kind]
    layer = kerasrnn.RNN(make_cell(), fast_path=fast_path, return_sequences=True, go_backwards=True)
    out = layer(inputs())
    assert tuple(out.shape) == (B, T, U)
    if not fast_path or (kind == "lstm" and keras.backend.backend() == "jax"):
        assert spy.calls == []  # on JAX the unmasked LSTM takes the written-out loop first
        return
    assert len(spy.calls) == 1
    args, kwargs = spy.calls[0]
    cell = layer.cell
    assert kwargs["kernel"] is cell.kernel
    assert kwargs["recurrent_kernel"] is cell.recurrent_kernel
    assert kwargs["bias"] is cell.bias
    assert kwargs["return_sequences"] and kwargs["go_backwards"]
    if kind == "gru":
        assert kwargs["reset_after"] is True
    assert tuple(args[0].shape) == (B, T, D)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's order of the ways")
def test_jax_lstm_takes_the_written_out_loop_before_the_fused_kernel(monkeypatch):
    fused, written_out = Spy(), []
    original = rnn_module.written_out_lstm

    def spy(*args):
        written_out.append(args)
        return original(*args)

    monkeypatch.setattr(rnn_module, "backend_lstm", fused)
    monkeypatch.setattr(rnn_module, "written_out_lstm", spy)
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), return_sequences=True)
    layer(inputs())
    assert fused.calls == [] and len(written_out) == 1
    assert written_out[0][2] is layer.cell.recurrent_kernel
    mask = np.ones((B, T), bool)
    mask[0, 3:] = False
    layer(inputs(), mask=mask)  # a mask: Keras' fused kernel is offered first
    assert len(fused.calls) == 1 and len(written_out) == 1


@pytest.mark.parametrize(
    "make_cell",
    [
        lambda: kerasrnn.LSTMCell(U, peephole=True),
        lambda: kerasrnn.LayerNormLSTMCell(U),
        lambda: kerasrnn.LSTMCell(U, recurrent_dropout=0.2),
    ],
    ids=["peephole", "layer-norm", "recurrent-dropout"],
)
def test_other_cells_never_reach_the_fused_kernel(monkeypatch, make_cell):
    spy = Spy()
    monkeypatch.setattr(rnn_module, "backend_lstm", spy)
    kerasrnn.RNN(make_cell())(inputs(), training=True)
    assert spy.calls == []


# ---- same results as Keras' layers --------------------------------------------------------
@pytest.mark.parametrize("kind", list(KERAS_LAYERS))
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_fast_path_equals_keras_layer(kind, go_backwards, masked):
    rng = np.random.default_rng(1)
    x = inputs()
    mask = np.ones((B, T), bool)
    mask[1, 4:] = False  # right padding
    mask = mask if masked else None
    make_cell, keras_layer = KERAS_LAYERS[kind]
    options = dict(return_sequences=True, return_state=True, go_backwards=go_backwards)
    theirs = keras_layer(U, **options)
    theirs(x)
    randomize(theirs, rng)
    ours = kerasrnn.RNN(make_cell(), **options)
    ours(x)
    ours.set_weights(theirs.get_weights())
    h0 = rng.normal(size=(B, U)).astype("float32")
    state = [h0, h0[::-1].copy()] if kind == "lstm" else [h0]
    for got, want in zip(
        ours(x, mask=mask, initial_state=state), theirs(x, mask=mask, initial_state=state)
    ):
        np.testing.assert_allclose(numpy(got), numpy(want), atol=1e-5)
    assert [w.path.split("/")[-1] for w in ours.weights] == [
        w.path.split("/")[-1] for w in theirs.weights
    ]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("fast_path,hoist", [(True, False), (False, True), (True, True)])
def test_every_way_equals_keras_rnn_with_input_dropout(kind, fast_path, hoist):
    """Training with input dropout: the mask is drawn as keras.layers.RNN draws it."""
    x = inputs(2)
    make_cell, _ = KERAS_LAYERS[kind]
    outputs = []
    for make_layer in (
        lambda cell: keras.layers.RNN(cell, return_sequences=True),
        lambda cell: kerasrnn.RNN(
            cell, return_sequences=True, fast_path=fast_path, hoist_projection=hoist
        ),
    ):
        keras.utils.set_random_seed(3)
        layer = make_layer(make_cell(dropout=0.4, seed=11))
        layer.build(x.shape)
        randomize(layer, np.random.default_rng(5))
        outputs.append(numpy(layer(x, training=True)))
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)
    # the dropout really acted: without training the outputs differ
    assert not np.allclose(outputs[1], numpy(layer(x, training=False)), atol=1e-3)


@pytest.mark.parametrize(
    "make_cell",
    [
        lambda: kerasrnn.LSTMCell(U),
        lambda: kerasrnn.LSTMCell(U, peephole=True),
        lambda: kerasrnn.GRUCell(U, reset_after=False),
        lambda: kerasrnn.LayerNormLSTMCell(U),
    ],
    ids=["lstm", "peephole", "gru-reset_before", "layer-norm"],
)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_hoisted_projection_equals_keras_rnn(make_cell, go_backwards):
    rng = np.random.default_rng(4)
    x = inputs(3)
    mask = np.ones((B, T), bool)
    mask[0, 3:] = False
    mask[2, 1] = False  # a hole: only the loops take it
    reference = keras.layers.RNN(
        make_cell(), return_sequences=True, return_state=True, go_backwards=go_backwards
    )
    reference(x)
    randomize(reference, rng)
    layer = kerasrnn.RNN(
        make_cell(),
        return_sequences=True,
        return_state=True,
        go_backwards=go_backwards,
        hoist_projection=True,
    )
    layer(x)
    layer.set_weights(reference.get_weights())
    for got, want in zip(layer(x, mask=mask), reference(x, mask=mask)):
        np.testing.assert_allclose(numpy(got), numpy(want), atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_bidirectional_fast_path_equals_keras_bidirectional(kind):
    rng = np.random.default_rng(6)
    x = inputs(4)
    make_cell, keras_layer = KERAS_LAYERS[kind]
    theirs = keras.layers.Bidirectional(keras_layer(U, return_sequences=True))
    theirs(x)
    randomize(theirs, rng)
    ours = keras.layers.Bidirectional(kerasrnn.RNN(make_cell(), return_sequences=True))
    ours(x)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(numpy(ours(x)), numpy(theirs(x)), atol=1e-5)
    assert ours.backward_layer.fast_path and ours.backward_layer.go_backwards


def test_gradients_equal_keras_layer():
    x = inputs(5)
    theirs = keras.layers.LSTM(U)
    theirs(x)
    randomize(theirs, np.random.default_rng(7))
    ours = kerasrnn.RNN(kerasrnn.LSTMCell(U))
    ours(x)
    ours.set_weights(theirs.get_weights())
    for layer in (ours, theirs):
        model = keras.Sequential([keras.Input((T, D)), layer, keras.layers.Dense(1)])
        model.layers[-1].set_weights([np.ones((U, 1), "float32"), np.zeros(1, "float32")])
        model.compile("sgd", "mse")
        model.train_on_batch(x, np.ones((B, 1), "float32"))
    for got, want in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_saving_keeps_weights_and_options(tmp_path):
    x = inputs(6)
    model = keras.Sequential(
        [
            keras.Input((T, D)),
            kerasrnn.RNN(kerasrnn.GRUCell(U), fast_path=False, hoist_projection=True),
        ]
    )
    randomize(model.layers[0], np.random.default_rng(8))
    path = os.path.join(tmp_path, "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[0].fast_path is False and loaded.layers[0].hoist_projection is True
    np.testing.assert_allclose(numpy(loaded(x)), numpy(model(x)), atol=1e-6)


# ---- bad input --------------------------------------------------------------------------
def test_rank_2_input_gets_a_clear_error():
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), name="encoder")
    with pytest.raises(ValueError) as error:
        layer(np.zeros((B, T), "float32"))
    message = str(error.value)
    assert "\n" not in message
    assert "(3, 6)" in message and "x[..., None]" in message and "Embedding" in message
    assert "encoder" in message
    layer(np.zeros((B, T, D), "float32"))  # once built, the same check still applies
    with pytest.raises(ValueError, match=r"got shape \(3, 6\)"):
        layer(np.zeros((B, T), "float32"))


def test_fused_kernel_runs_where_the_backend_has_one(monkeypatch):
    """torch has a CPU fused LSTM/GRU, JAX a whole-sequence `lax.scan` GRU (reset_after,
    no mask) on any device, and every backend cuDNN on a GPU; TensorFlow's CPU declines."""
    real, returned = rnn_module.backend_gru, []

    def wrapped(*args, **kwargs):
        result = real(*args, **kwargs)
        returned.append(True)
        return result

    monkeypatch.setattr(rnn_module, "backend_gru", wrapped)
    kerasrnn.RNN(kerasrnn.GRUCell(U))(inputs())
    on_gpu = any(d.startswith(("gpu", "cuda")) for d in _devices())
    assert bool(returned) == (keras.backend.backend() in ("torch", "jax") or on_gpu)


def _devices():
    try:
        return [str(d).lower() for d in keras.distribution.list_devices()]
    except Exception:  # some backends list no devices through Keras
        return []
