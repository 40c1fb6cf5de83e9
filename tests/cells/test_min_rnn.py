"""minGRU and minLSTM: the step form (`keras.layers.RNN` over the cell) against a
NumPy transcription of Feng et al.'s equations (float64), the parallel form
(`kerasrnn.RNN`'s scan) against the step form with masks, `go_backwards`, initial
states and `Bidirectional`, long sequences and saturated gates against NumPy,
gradients against the step form and finite differences, and saving."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells.min_rnn import linear_recurrence
from tests.cells.test_training import frozen, gradients

B, T, D, H = 3, 7, 5, 4
CELLS = {"mingru": kerasrnn.MinGRUCell, "minlstm": kerasrnn.MinLSTMCell}


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_states(name, x, kernel, bias, h):
    """h_1 ... h_T by the paper's equations, step by step (float64)."""
    states = []
    for t in range(x.shape[1]):
        blocks = np.split(x[:, t] @ kernel + bias, kernel.shape[1] // h.shape[1], axis=-1)
        if name == "mingru":
            z, candidate = sigmoid(blocks[0]), blocks[1]
            h = (1 - z) * h + z * candidate
        else:
            f, i, candidate = sigmoid(blocks[0]), sigmoid(blocks[1]), blocks[2]
            h = f / (f + i) * h + i / (f + i) * candidate
        states.append(h)
    return np.stack(states, axis=1)


def weights(layer):
    kernel, bias = (keras.ops.convert_to_numpy(w).astype("float64") for w in layer.weights)
    return kernel, bias


def inputs(seed=0, time=T, scale=1.0):
    return np.random.default_rng(seed).normal(0, scale, (B, time, D)).astype("float32")


def pair(name, cell_options=None, **options):
    """kerasrnn.RNN (the parallel form) and keras.layers.RNN (the step form) over two
    cells with the same weights (and the same dropout seed, with `cell_options`)."""
    parallel = kerasrnn.RNN(CELLS[name](H, **(cell_options or {})), **options)
    stepwise = keras.layers.RNN(CELLS[name](H, **(cell_options or {})), **options)
    parallel.build((B, T, D))
    stepwise.build((B, T, D))
    stepwise.set_weights(parallel.get_weights())
    return parallel, stepwise


def numpy_of(value):
    if isinstance(value, (list, tuple)):
        return [keras.ops.convert_to_numpy(v) for v in value]
    return keras.ops.convert_to_numpy(value)


@pytest.mark.parametrize("name", CELLS)
def test_the_step_form_follows_the_papers_equations(name):
    cell = CELLS[name](H, bias_initializer="random_normal")
    layer = keras.layers.RNN(cell, return_sequences=True)
    x = inputs()
    got = numpy_of(layer(x))
    expected = numpy_states(name, x.astype("float64"), *weights(layer), np.zeros((B, H)))
    np.testing.assert_allclose(got, expected, atol=1e-5)


MASKS = {
    "right padded": np.arange(T)[None] < np.array([[T], [3], [1]]),
    "holes and a row of padding": np.array(
        [[1, 0, 1, 1, 0, 0, 1], [0, 0, 1, 0, 1, 1, 0], [0] * T], bool
    ),
}


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("mask", [None, *MASKS], ids=str)
@pytest.mark.parametrize(
    "options",
    [
        {"return_sequences": True},
        {"return_sequences": True, "go_backwards": True, "zero_output_for_mask": True},
        {"return_state": True, "go_backwards": True},
        {"return_sequences": True, "return_state": True},
    ],
    ids=lambda o: ",".join(o),
)
def test_the_parallel_form_equals_the_step_form(name, mask, options):
    parallel, stepwise = pair(name, **options)
    x = inputs(seed=1)
    h0 = np.random.default_rng(2).normal(size=(B, H)).astype("float32")
    arguments = {"initial_state": [h0]}
    if mask is not None:
        arguments["mask"] = MASKS[mask]
    got, want = numpy_of(parallel(x, **arguments)), numpy_of(stepwise(x, **arguments))
    assert parallel.loop_path == "parallel"
    if not options.get("return_state"):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):  # the outputs, then the final state
        np.testing.assert_allclose(g, w, atol=1e-5)


@pytest.mark.parametrize("name", CELLS)
def test_bidirectional_with_a_mask_equals_the_step_form(name):
    parallel = keras.layers.Bidirectional(kerasrnn.RNN(CELLS[name](H), return_sequences=True))
    stepwise = keras.layers.Bidirectional(keras.layers.RNN(CELLS[name](H), return_sequences=True))
    parallel.build((B, T, D))
    stepwise.build((B, T, D))
    stepwise.set_weights(parallel.get_weights())
    x, mask = inputs(seed=3), MASKS["right padded"]
    np.testing.assert_allclose(
        numpy_of(parallel(x, mask=mask)), numpy_of(stepwise(x, mask=mask)), atol=1e-5
    )
    assert parallel.forward_layer.loop_path == parallel.backward_layer.loop_path == "parallel"


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function's traces")
def test_a_length_unknown_when_traced_scans_too():
    """A graph traced for any batch and length (a serving signature, `fit` on batches
    of varying length): the scan's length is a tensor there."""
    import tensorflow as tf

    parallel, stepwise = pair("minlstm", return_sequences=True)
    traced = tf.function(parallel, input_signature=[tf.TensorSpec((None, None, D))])
    for time in (1, 5, 33):
        x = inputs(seed=time, time=time)
        np.testing.assert_allclose(numpy_of(traced(x)), numpy_of(stepwise(x)), atol=1e-5)
    assert parallel.loop_path == "parallel"


@pytest.mark.parametrize("name", CELLS)
def test_fast_path_false_runs_the_step_form(name):
    layer = kerasrnn.RNN(CELLS[name](H), fast_path=False)
    layer(inputs())
    assert layer.loop_path == "keras_loop"


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("time", [1, 2, 4096])
def test_long_sequences_and_saturated_gates_stay_exact(name, time):
    """4,096 steps, and gate pre-activations of up to about +-150, where sigma(k)
    underflows to 0 in float32 and minLSTM's textbook f / (f + i) would be 0 / 0."""
    layer = kerasrnn.RNN(CELLS[name](H), return_sequences=True)
    layer.build((B, time, D))
    kernel, bias = weights(layer)
    gates = slice(0, kernel.shape[1] - H)
    kernel[:, gates] *= 40.0  # inputs ~N(0, 1): pre-activations of a few tens
    layer.set_weights([kernel.astype("float32"), bias.astype("float32")])
    x = inputs(seed=4, time=time)
    got = numpy_of(layer(x))
    assert np.isfinite(got).all()
    expected = numpy_states(name, x.astype("float64"), kernel, bias, np.zeros((B, H)))
    np.testing.assert_allclose(got, expected, atol=2e-5)


def test_linear_recurrence_equals_its_loop():
    """The scan's operator composes in time order: h_t = a_t h_{t-1} + b_t from h_0."""
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 1, (B, T, H)).astype("float32")
    b = rng.normal(size=(B, T, H)).astype("float32")
    h0 = rng.normal(size=(B, H)).astype("float32")
    h, expected = h0.astype("float64"), []
    for t in range(T):
        h = a[:, t] * h + b[:, t]
        expected.append(h)
    got = numpy_of(linear_recurrence(a, b, h0))
    np.testing.assert_allclose(got, np.stack(expected, axis=1), atol=1e-5)


@pytest.mark.parametrize("name", CELLS)
def test_dropout_takes_one_mask_for_every_step_as_the_step_form(name):
    parallel, stepwise = pair(name, {"dropout": 0.5, "seed": 3}, return_sequences=True)
    x = inputs(seed=10)
    got = numpy_of(parallel(x, training=True))
    np.testing.assert_allclose(got, numpy_of(stepwise(x, training=True)), atol=1e-5)
    assert np.abs(got - numpy_of(parallel(x))).max() > 1e-3  # the mask acted


@pytest.mark.parametrize("name", CELLS)
def test_gradients_equal_the_step_forms(name):
    parallel, stepwise = pair(name, return_sequences=True)
    x = keras.ops.convert_to_tensor(inputs(seed=6))
    probe = np.random.default_rng(7).normal(size=(B, T, H)).astype("float32")
    values = [keras.ops.convert_to_numpy(v) for v in parallel.trainable_variables]
    want = gradients(stepwise, values, x, probe)
    for got, expected in zip(gradients(parallel, values, x, probe), want, strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="float64 end to end (as tests/cells/test_lstm_sequence.py); the test above "
    "checks the other backends against the step form",
)
@pytest.mark.parametrize("name", CELLS)
def test_gradients_match_finite_differences(name):
    cell = CELLS[name](2, dtype="float64", bias_initializer="random_normal")
    layer = kerasrnn.RNN(cell, return_sequences=True, dtype="float64")
    x = np.random.default_rng(8).normal(size=(2, 6, 3))
    layer.build(x.shape)
    probe = np.random.default_rng(9).normal(size=(2, 6, 2))
    values = [keras.ops.convert_to_numpy(v) for v in layer.trainable_variables]
    analytic = gradients(layer, values, x, probe)

    def loss(vals):
        out, _ = layer.stateless_call(vals, frozen(layer), x)
        return float(np.sum(keras.ops.convert_to_numpy(out) * probe))

    epsilon = 1e-6
    for k, value in enumerate(values):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            up, down = [v.copy() for v in values], [v.copy() for v in values]
            up[k][index] += epsilon
            down[k][index] -= epsilon
            numeric[index] = (loss(up) - loss(down)) / (2 * epsilon)
        np.testing.assert_allclose(analytic[k], numeric, atol=1e-7)


@pytest.mark.parametrize("name", CELLS)
def test_a_saved_model_loads_and_computes_the_same(name, tmp_path):
    ids = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, D, mask_zero=True)(ids)
    hidden = kerasrnn.RNN(CELLS[name](H, dropout=0.2, activation="tanh"))(embedded)
    model = keras.Model(ids, keras.layers.Dense(2)(hidden))
    batch = np.array([[3, 4, 5, 0], [7, 0, 0, 0]], "int32")
    before = numpy_of(model(batch))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(numpy_of(loaded(batch)), before, atol=1e-6)
    cell = loaded.layers[2].cell
    assert type(cell) is CELLS[name] and cell.dropout == 0.2
    assert cell.get_config() == model.layers[2].cell.get_config()


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="export is TensorFlow's")
@pytest.mark.parametrize("format_name", ["onnx", "litert"])
def test_exporting_the_parallel_scan_is_a_one_line_error(format_name, tmp_path):
    from kerasrnn.export import export_litert, export_onnx

    inputs_ = keras.Input((T, D))
    model = keras.Model(inputs_, kerasrnn.RNN(kerasrnn.MinGRUCell(H), name="scan")(inputs_))
    export = {"onnx": export_onnx, "litert": export_litert}[format_name]
    with pytest.raises(ValueError) as error:
        export(model, str(tmp_path / "m"))
    assert "\n" not in str(error.value)
    assert "layer 'scan' (RNN) cannot be exported" in str(error.value)
    assert "MinGRUCell is not exported: build the layer with fast_path=False" in str(error.value)


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="units"):
        kerasrnn.MinGRUCell(0)
    with pytest.raises(ValueError, match="dropout"):
        kerasrnn.MinLSTMCell(4, dropout=1.5)
