"""kerasrnn.RNN(jit_compile=...): the LSTM's loop in its own XLA cluster on TensorFlow.

With Keras' default compile settings a TensorFlow model on a CPU runs without XLA; there
`kerasrnn.RNN(LSTMCell)` runs `lstm_sequence` inside its own `tf.function(jit_compile=
True)` (in training with "auto"). The references: `keras.layers.LSTM` with the weights
copied (masks too), and the same layer with `jit_compile=False` (the differentiated
loop), with the same seed. A spy on `xla_written_out_lstm` (called once per trace of
the layer) checks the routing.
"""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import rnn as rnn_module

BACKEND = keras.backend.backend()
TF = BACKEND == "tensorflow"
only_tensorflow = pytest.mark.skipif(not TF, reason="the own XLA cluster is TensorFlow's")
B, T, D, U = 3, 6, 5, 4


class Spy:
    def __init__(self):
        self.calls = 0
        self.real = rnn_module.xla_written_out_lstm

    def __call__(self, *args):
        self.calls += 1
        return self.real(*args)


@pytest.fixture
def spy(monkeypatch):
    spy = Spy()
    monkeypatch.setattr(rnn_module, "xla_written_out_lstm", spy)
    return spy


def inputs(seed=0, batch=B):
    return np.random.default_rng(seed).normal(size=(batch, T, D)).astype("float32")


def pair(seed=5, **options):
    """kerasrnn.RNN (jit_compile "auto") and keras.layers.LSTM with the same weights."""
    ours = kerasrnn.RNN(kerasrnn.LSTMCell(U, use_bias=options.pop("use_bias", True)), **options)
    theirs = keras.layers.LSTM(U, use_bias=ours.cell.use_bias, **options)
    ours.build((B, T, D))
    theirs.build((B, T, D))
    rng = np.random.default_rng(seed)
    ours.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in ours.weights])
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def outputs_and_gradients(layer, x, wrap=None):
    import tensorflow as tf

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = sum(tf.reduce_sum(tf.sin(v * (k + 1))) for k, v in enumerate(tf.nest.flatten(y)))
        return y, tape.gradient(loss, [x, *layer.trainable_weights])

    y, grads = (wrap(run) if wrap else run)(tf.constant(x))
    return [np.asarray(v) for v in tf.nest.flatten(y)], [np.asarray(g) for g in grads]


def assert_close(mine, want, atol=2e-5):
    assert len(mine) == len(want)
    for k, (a, b) in enumerate(zip(mine, want)):
        np.testing.assert_allclose(a, b, atol=atol, rtol=1e-5, err_msg=f"tensor {k}")


# ---- the option --------------------------------------------------------------------------
def test_option_is_checked_and_kept_in_the_config():
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), jit_compile=False)
    assert layer.get_config()["jit_compile"] is False
    assert kerasrnn.RNN.from_config(layer.get_config()).jit_compile is False
    assert kerasrnn.RNN(kerasrnn.LSTMCell(U)).get_config()["jit_compile"] == "auto"
    with pytest.raises(ValueError, match=r"jit_compile must be 'auto', True or False"):
        kerasrnn.RNN(kerasrnn.LSTMCell(U), jit_compile="yes")


# ---- the same results as keras.layers.LSTM ------------------------------------------------
@only_tensorflow
@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(return_sequences=True, go_backwards=True),
        dict(return_sequences=True, return_state=True, use_bias=False),
    ],
    ids=["last", "backwards-sequences", "states-no-bias"],
)
def test_eager_outputs_and_gradients_equal_keras_lstm(spy, options):
    ours, theirs = pair(**options)
    x = inputs()
    mine = outputs_and_gradients(ours, x)
    assert spy.calls == 1
    want = outputs_and_gradients(theirs, x)
    assert_close(mine[0], want[0])
    assert_close(mine[1], want[1])


@only_tensorflow
def test_in_tf_function_equals_keras_lstm(spy):
    import tensorflow as tf

    ours, theirs = pair(return_sequences=True)
    x = inputs(1)
    mine = outputs_and_gradients(ours, x, wrap=tf.function)
    assert spy.calls == 1
    assert_close(mine[1], outputs_and_gradients(theirs, x, wrap=tf.function)[1])
    assert_close(mine[0], outputs_and_gradients(theirs, x)[0])


@only_tensorflow
def test_gradient_reaches_an_embedding_below(spy):
    """The cluster skips its input's gradient only where no tape needs it: here the
    input comes from an embedding, whose gradient must equal the plain loop's."""
    import tensorflow as tf

    ids = np.random.default_rng(6).integers(0, 7, (B, T))
    gradients = []
    for jit_compile in ("auto", False):
        keras.utils.set_random_seed(3)
        embedding = keras.layers.Embedding(7, D)
        layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), jit_compile=jit_compile)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(layer(embedding(ids), training=True)))
        gradients.append(
            [
                np.asarray(tf.convert_to_tensor(g))
                for g in tape.gradient(loss, embedding.weights + layer.weights)
            ]
        )
    assert spy.calls == 1
    assert np.abs(gradients[0][0]).max() > 0
    assert_close(gradients[0], gradients[1])


@only_tensorflow
def test_inference_keeps_the_loop_with_auto_and_compiles_with_true(spy):
    ours, theirs = pair(return_sequences=True)
    x = inputs(2)
    want = np.asarray(theirs(x))
    np.testing.assert_allclose(np.asarray(ours(x)), want, atol=2e-5)
    model = keras.Sequential([keras.Input((T, D)), ours])
    np.testing.assert_allclose(model.predict(x, verbose=0), want, atol=2e-5)
    assert spy.calls == 0  # "auto": inference (and the export graphs) keep the loop
    ours.jit_compile = True
    np.testing.assert_allclose(np.asarray(ours(x)), want, atol=2e-5)
    assert spy.calls == 1


# ---- model.fit: the same training as the plain path ---------------------------------------
def fit_two_steps(jit_compile, make_cell=lambda: kerasrnn.LSTMCell(U, seed=11), masked=False):
    """Losses and final weights of `fit` over two batches (same seed, same data)."""
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(8)
    x, y = inputs(3, batch=8), rng.normal(size=(8, 1)).astype("float32")
    layers = []
    if masked:
        x[1, 4:] = 0.0
        x[6, 2:] = 0.0
        layers = [keras.layers.Masking()]
    model = keras.Sequential(
        [
            keras.Input((T, D)),
            *layers,
            kerasrnn.RNN(make_cell(), jit_compile=jit_compile),
            keras.layers.Dense(1),
        ]
    )
    model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.weights])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    history = model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    after = float(model.evaluate(x, y, batch_size=8, verbose=0))
    return [*history.history["loss"], after], model.get_weights()


@pytest.mark.parametrize(
    "make_cell",
    [
        lambda: kerasrnn.LSTMCell(U),
        lambda: kerasrnn.LSTMCell(U, dropout=0.3, seed=11),
        lambda: kerasrnn.layers.WeightDrop(kerasrnn.LSTMCell(U), rate=0.5, seed=12),
    ],
    ids=["plain", "input-dropout", "weight-drop"],
)
def test_fit_trains_exactly_as_the_plain_path(spy, make_cell):
    """Same losses and weights after two steps (the same dropout masks: drawn before the
    loop, from the same seeds); on TensorFlow through the XLA cluster."""
    compiled = fit_two_steps("auto", make_cell)
    assert (spy.calls > 0) == TF  # the training step was traced through the XLA cluster
    plain = fit_two_steps(False, make_cell)
    np.testing.assert_allclose(compiled[0], plain[0], rtol=1e-5)
    assert compiled[0][-1] < compiled[0][0]  # it learns: the loss after two steps is lower
    assert_close(compiled[1], plain[1], atol=1e-5)


@pytest.mark.large
@only_tensorflow
def test_a_length_unknown_when_traced_keeps_the_loop_unless_asked(spy):
    """A pipeline of varying lengths traces the step with the time axis unknown: "auto"
    keeps the loop there (XLA would compile once per length); True compiles, and trains
    as the plain loop does."""
    import tensorflow as tf

    rng = np.random.default_rng(10)
    batches = [
        (rng.normal(size=(4, t, D)).astype("float32"), rng.normal(size=(4, 1)).astype("float32"))
        for t in (5, 8, 3)
    ]
    spec = (tf.TensorSpec((4, None, D)), tf.TensorSpec((4, 1)))
    results, calls = [], []
    for jit_compile in (True, "auto", False):
        keras.utils.set_random_seed(7)
        model = keras.Sequential(
            [
                keras.Input((None, D)),
                kerasrnn.RNN(kerasrnn.LSTMCell(U), jit_compile=jit_compile),
                keras.layers.Dense(1),
            ]
        )
        model.compile(keras.optimizers.Adam(0.05), "mse")
        data = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=spec)
        data = data.apply(tf.data.experimental.assert_cardinality(len(batches)))
        history = model.fit(data, epochs=2, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights()))
        calls.append(spy.calls)
    assert calls[0] > 0 and calls[1] == calls[0]  # True compiled; "auto" did not
    np.testing.assert_allclose(results[0][0], results[2][0], rtol=1e-5)
    assert_close(results[0][1], results[2][1], atol=1e-5)


@pytest.mark.large
def test_fit_with_a_mask_trains_as_the_plain_path(spy):
    compiled = fit_two_steps("auto", masked=True)
    assert (spy.calls > 0) == TF  # masks too (on JAX the loop runs: no cluster there)
    plain = fit_two_steps(False, masked=True)
    np.testing.assert_allclose(compiled[0], plain[0], rtol=1e-5)
    assert_close(compiled[1], plain[1], atol=1e-5)


MASKS = {
    "right-padded": [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]],
    "holes": [[1, 0, 1, 1, 0, 1], [0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]],
    "left-padded-and-empty": [[0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [0, 1, 1, 1, 1, 1]],
}


@only_tensorflow
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize(
    "options",
    [
        dict(return_sequences=True, return_state=True),
        dict(return_sequences=True, go_backwards=True),
        dict(return_state=True, zero_output_for_mask=True),
        dict(return_sequences=True, zero_output_for_mask=True),
    ],
    ids=["sequences-states", "backwards", "last-zero-output", "sequences-zero-output"],
)
def test_masked_outputs_and_gradients_equal_keras_lstm(spy, mask, options):
    """Masked steps keep the states; the outputs there follow keras.layers.RNN (the last
    unmasked output, zeros before it, or zeros with zero_output_for_mask)."""
    import tensorflow as tf

    ours, theirs = pair(**options)
    x, m = inputs(7), tf.constant(np.array(MASKS[mask], bool))
    results = []
    for layer in (ours, theirs):
        x_t = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x_t)
            y = tf.nest.flatten(layer(x_t, mask=m, training=True))
            loss = sum(tf.reduce_sum(tf.sin(v * (k + 1))) for k, v in enumerate(y))
        grads = tape.gradient(loss, [x_t, *layer.trainable_weights])
        results.append(([np.asarray(v) for v in y], [np.asarray(g) for g in grads]))
    assert spy.calls == 1
    assert_close(results[0][0], results[1][0])
    assert_close(results[0][1], results[1][1])


@only_tensorflow
def test_a_model_compiled_with_xla_needs_no_cluster_of_its_own(spy):
    model = keras.Sequential([keras.Input((T, D)), kerasrnn.RNN(kerasrnn.LSTMCell(U))])
    model.compile("sgd", "mse", jit_compile=True)
    model.train_on_batch(inputs(), np.zeros((B, U), "float32"))
    assert spy.calls == 0  # the written-out pass runs inline in the model's XLA cluster


@only_tensorflow
def test_the_gru_keeps_its_loop(spy):
    """Compiling the GRU's loop with XLA did not measure faster (bench/README.md)."""
    model = keras.Sequential([keras.Input((T, D)), kerasrnn.RNN(kerasrnn.GRUCell(U))])
    model.compile("sgd", "mse")
    model.train_on_batch(inputs(), np.zeros((B, U), "float32"))
    assert spy.calls == 0


# ---- saving ------------------------------------------------------------------------------
def test_saved_and_reloaded_trains_the_same(tmp_path, spy):
    x, y = inputs(4), np.random.default_rng(9).normal(size=(B, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((T, D)), kerasrnn.RNN(kerasrnn.LSTMCell(U)), keras.layers.Dense(1)]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.train_on_batch(x, y)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[0].jit_compile == "auto"
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    calls = spy.calls
    np.testing.assert_allclose(loaded.train_on_batch(x, y), model.train_on_batch(x, y), rtol=1e-6)
    assert (spy.calls > calls) == TF  # the loaded model traced its step through the cluster
    assert_close(loaded.get_weights(), model.get_weights(), atol=1e-6)


# ---- distribution ------------------------------------------------------------------------
MIRRORED = """
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras, kerasrnn
from kerasrnn.cells import rnn
calls, real = [], rnn.xla_written_out_lstm
rnn.xla_written_out_lstm = lambda *a: calls.append(1) or real(*a)
strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
rng = np.random.default_rng(0)
x, y = rng.normal(size=(8, 6, 5)).astype("float32"), rng.normal(size=(8, 1)).astype("float32")
result = {}
for jit_compile in ["auto", False]:
    keras.utils.set_random_seed(1)
    with strategy.scope():
        model = keras.Sequential([keras.Input((6, 5)), kerasrnn.RNN(
            kerasrnn.LSTMCell(4, dropout=0.2, seed=3), jit_compile=jit_compile),
            keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    result[jit_compile] = history.history["loss"], model.get_weights()
np.testing.assert_allclose(result["auto"][0], result[False][0], rtol=1e-5)
for a, b in zip(result["auto"][1], result[False][1]):
    np.testing.assert_allclose(a, b, atol=1e-5)
print("replicas", strategy.num_replicas_in_sync, "calls", len(calls))
"""


@pytest.mark.large
@only_tensorflow
def test_mirrored_strategy_trains_as_the_plain_path():
    """Two CPU replicas (a fresh process: the CPU is split before TensorFlow starts)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MIRRORED)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replicas 2 calls 2" in done.stdout  # each replica traced the XLA cluster
