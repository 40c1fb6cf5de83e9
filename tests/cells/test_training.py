"""Gradients, saving, learning, the stack helper and error messages of the cells."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.tasks import marker_order_task
from tests.cells.test_cells import IDS, VARIANTS

TF_ONLY = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow's"
)


def frozen(layer):
    """The non-trainable values (the dropout seed state) for `stateless_call`."""
    return [keras.ops.convert_to_numpy(v) for v in layer.non_trainable_variables]


def gradients(layer, values, x, probe):
    """d/d(values) of sum(probe * layer(x)) via the backend's autodiff."""
    backend = keras.backend.backend()
    if not values:  # nothing trainable (an ESN's reservoir is fixed): torch's
        return []  # backward() would refuse a loss that needs no gradient
    if backend == "tensorflow":
        import tensorflow as tf

        values = [tf.constant(v) for v in values]
        with tf.GradientTape() as tape:
            tape.watch(values)
            out, _ = layer.stateless_call(values, frozen(layer), x)
            loss = tf.reduce_sum(out * probe)
        return [g.numpy() for g in tape.gradient(loss, values)]
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        def loss(vals):
            out, _ = layer.stateless_call(vals, frozen(layer), x)
            return jnp.sum(out * probe)

        return [np.asarray(g) for g in jax.grad(loss)([jnp.asarray(v) for v in values])]
    if backend == "torch":
        import torch

        values = [torch.tensor(v, requires_grad=True) for v in values]
        out, _ = layer.stateless_call(values, frozen(layer), x)
        torch.sum(out * torch.as_tensor(probe)).backward()
        return [v.grad.numpy() for v in values]
    pytest.skip(f"no gradient helper for backend {backend}")


# (dtype, step, rtol, atol). Off TensorFlow, Keras' dtype rules map float64 to float32
# (keras.src.backend.common.dtypes.result_type forces 64-bit results to 32-bit, as
# JAX does by default): JAX computes tanh in float32 even for float64 inputs, and the
# torch backend's `ops.matmul` casts a float64 product to float32. So keras.RNN cannot
# run a float64 cell there (on torch, a float64 layer's outputs come back float32 and
# central differences at step 1e-6 drown in float32 rounding): JAX and torch check in
# float32 with a larger step, Richardson extrapolation against that step's truncation
# error, and a tolerance that still catches any wrong or missing term.
FINITE_DIFFERENCE = {
    "tensorflow": ("float64", 1e-6, 1e-5, 1e-8),
    "jax": ("float32", 1e-2, 1e-2, 1e-4),
    "torch": ("float32", 1e-2, 1e-2, 1e-4),
}


@pytest.fixture
def finite_difference():
    """(step, rtol, atol) for the backend, with layers built in its dtype."""
    dtype, *settings = FINITE_DIFFERENCE[keras.backend.backend()]
    keras.config.set_dtype_policy(dtype)
    yield settings
    keras.config.set_dtype_policy("float32")


def central(loss, values, k, index, eps):
    """(loss(values + eps e) - loss(values - eps e)) / 2 eps for entry `index` of values[k]."""
    plus = [v.copy() for v in values]
    minus = [v.copy() for v in values]
    plus[k][index] += eps
    minus[k][index] -= eps
    return (loss(plus) - loss(minus)) / (2 * eps)


def richardson(difference, eps):
    """Removes the O(eps^2) error term of a central difference: (4 D(eps/2) - D(eps)) / 3."""
    return (4 * difference(eps / 2) - difference(eps)) / 3


@pytest.mark.parametrize("cls,kwargs", VARIANTS, ids=IDS)
def test_bptt_gradients_match_central_differences(cls, kwargs, finite_difference):
    rng = np.random.default_rng(0)
    layer = keras.layers.RNN(cls(3, **kwargs), return_sequences=True)
    x = keras.ops.convert_to_tensor(rng.normal(size=(2, 6, 2)).astype(layer.compute_dtype))
    layer(x)
    values = [rng.normal(0, 0.5, w.shape).astype(w.dtype) for w in layer.trainable_weights]
    probe = rng.normal(size=(2, 6, 3)).astype(layer.compute_dtype)
    analytic = gradients(layer, values, x, probe)

    fixed = frozen(layer)

    def forward(vals):
        return layer.stateless_call(vals, fixed, x)[0]

    # compiled once: the differences evaluate the layer ~100 times, slow op by op
    if keras.backend.backend() == "jax":
        import jax

        forward = jax.jit(forward)
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        forward = tf.function(forward)

    def loss(vals):
        return float(np.sum(keras.ops.convert_to_numpy(forward(vals)) * probe))

    eps, rtol, atol = finite_difference
    for k, value in enumerate(values):
        # a few random entries of every weight keep the test fast
        entries = rng.permutation(list(np.ndindex(value.shape)))[:4]
        for index in map(tuple, entries):
            numeric = richardson(lambda h: central(loss, values, k, index, h), eps)
            np.testing.assert_allclose(
                analytic[k][index],
                numeric,
                rtol=rtol,
                atol=atol,
                err_msg=f"{layer.trainable_weights[k].path}{index}",
            )


def build_model(cell, bidirectional=True):
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(12, 8, mask_zero=True)(inputs)
    x = kerasrnn.RNNStack(cell, num_layers=2, bidirectional=bidirectional)(x)
    outputs = keras.layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs, outputs)


SAVE_CELLS = [
    kerasrnn.LSTMCell(6, peephole=True, coupled=True),
    kerasrnn.GRUCell(6, reset_after=False),
    kerasrnn.LayerNormLSTMCell(6),
    kerasrnn.LayerNormSimpleRNNCell(6),
]


@pytest.mark.large
@pytest.mark.parametrize("cell", SAVE_CELLS, ids=lambda c: type(c).__name__)
def test_keras_file_round_trip(cell, tmp_path):
    model = build_model(cell)
    tokens, _ = marker_order_task(8, 5, 9, vocab_size=12)
    want = model.predict(tokens, verbose=0)
    model.save(tmp_path / "model.keras")
    restored = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(restored.predict(tokens, verbose=0), want)
    assert type(restored.layers[2].cell) is type(cell)


@TF_ONLY
@pytest.mark.parametrize("cell", SAVE_CELLS[:2], ids=lambda c: type(c).__name__)
def test_saved_model_round_trip(cell, tmp_path):
    import tensorflow as tf

    model = build_model(cell)
    tokens, _ = marker_order_task(8, 5, 9, vocab_size=12)
    want = model.predict(tokens, verbose=0)
    model.export(str(tmp_path / "saved"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "saved"))
    np.testing.assert_allclose(served.serve(tf.constant(tokens)).numpy(), want, atol=1e-6)


# (cell, Adam learning rate, epochs, accuracy it must reach on held-out sequences)
LEARNERS = [
    (kerasrnn.LSTMCell(16), 0.01, 3, 0.9),
    (kerasrnn.GRUCell(16), 0.01, 3, 0.9),
    # plain tanh recurrence over 20-60 steps learns more slowly (vanishing gradients)
    (kerasrnn.SimpleRNNCell(16), 0.003, 6, 0.8),
    # The layer-normalised cells are left out: at this size and budget they learn the
    # task late or not at all. LayerNormLSTMCell went from 0.60-0.81 after 5 epochs to
    # 0.99 or to 0.60 after 6 depending on the seed (Adam 0.01); LayerNormSimpleRNNCell
    # stayed near chance (0.56 after 6 epochs at Adam 0.01 or 0.003 with 16 or 32 units;
    # 0.63 on 10-20 steps). Their exactness is tested against the NumPy reference above.
]


@pytest.mark.large
@pytest.mark.learns
@pytest.mark.parametrize(
    "cell,learning_rate,epochs,target", LEARNERS, ids=[type(c).__name__ for c, *_ in LEARNERS]
)
def test_stacked_bidirectional_model_learns_marker_order(cell, learning_rate, epochs, target):
    """Which of two marked symbols came first, in sequences of 20 to 60 steps."""
    x_train, y_train = marker_order_task(1024, 20, 60, seed=1)
    x_test, y_test = marker_order_task(512, 20, 60, seed=2)
    model = build_model(cell)
    model.compile(
        keras.optimizers.Adam(learning_rate),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    model.fit(x_train, y_train, batch_size=64, epochs=epochs, verbose=0)
    accuracy = model.evaluate(x_test, y_test, verbose=0)[1]
    print(f"{type(cell).__name__}: held-out accuracy {accuracy:.3f}")
    assert accuracy >= target


@pytest.mark.large
def test_stack_options_compose():
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    deep = kerasrnn.RNNStack(
        kerasrnn.GRUCell(8), num_layers=3, residual=True, dropout=0.2, return_sequences=True
    )
    assert tuple(deep(x).shape) == (2, 5, 8)
    # residual: with zeroed kernels and biases, every layer outputs 0 and adds nothing
    deep.set_weights([np.zeros(w.shape, "float32") for w in deep.weights])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(deep(x)), x, atol=1e-6)
    summed = kerasrnn.RNNStack(kerasrnn.LSTMCell(4), bidirectional=True, merge_mode="sum")
    assert tuple(summed(x).shape) == (2, 4)
    with pytest.raises(ValueError, match="merge_mode"):
        kerasrnn.RNNStack(kerasrnn.LSTMCell(4), merge_mode="max")
    with pytest.raises(ValueError, match="num_layers"):
        kerasrnn.RNNStack(kerasrnn.LSTMCell(4), num_layers=0)


# ---- bad input -------------------------------------------------------------------
@pytest.mark.parametrize("units", [0, -3, 2.5, None, True])
def test_units_must_be_positive(units):
    with pytest.raises(ValueError, match="units"):
        kerasrnn.LSTMCell(units)


def test_contradictory_lstm_flags_name_both():
    with pytest.raises(ValueError, match="coupled.*forget_gate"):
        kerasrnn.LSTMCell(4, coupled=True, forget_gate=False)


def test_unknown_keyword_is_named():
    with pytest.raises((TypeError, ValueError), match="peepholes"):
        kerasrnn.LSTMCell(4, peepholes=True)


def test_wrong_input_rank_is_explained():
    with pytest.raises(ValueError, match=r"\(batch, time, features\)"):
        keras.layers.RNN(kerasrnn.GRUCell(4))(np.zeros((2, 3), "float32"))


def test_wrong_initial_state_shape_is_explained():
    layer = keras.layers.RNN(kerasrnn.LSTMCell(4))
    x = np.zeros((2, 3, 5), "float32")
    with pytest.raises(ValueError, match=r"state 1 must have shape \(batch, 4\)"):
        layer(x, initial_state=[np.zeros((2, 4), "float32"), np.zeros((2, 7), "float32")])
    with pytest.raises(ValueError, match="expects 2 state"):
        keras.layers.RNN(kerasrnn.LSTMCell(4))(x, initial_state=[np.zeros((2, 4), "float32")])


@pytest.mark.parametrize("name", ["dropout", "recurrent_dropout"])
def test_dropout_rate_is_checked(name):
    with pytest.raises(ValueError, match=name):
        kerasrnn.GRUCell(4, **{name: 1.5})
