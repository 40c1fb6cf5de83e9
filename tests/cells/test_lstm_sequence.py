"""kerasrnn.cells.lstm_sequence (the LSTM with its backward pass written out): outputs
against a NumPy loop of the equations, gradients against finite differences (float64)
and against Keras' own LSTM; kerasrnn.RNN takes it under XLA, and only there."""

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.cells import rnn as rnn_module
from kerasrnn.cells.lstm_sequence import lstm_sequence

T, B, D, H = 4, 2, 3, 2
BACKEND = keras.backend.backend()


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_lstm(x, kernel, recurrent_kernel, bias, h, c):
    outputs = []
    for x_t in x:
        i, f, g, o = np.split(x_t @ kernel + bias + h @ recurrent_kernel, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs), h, c


def arguments(dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(T, B, D), (D, 4 * H), (H, 4 * H), (4 * H,), (B, H), (B, H)]
    return [rng.normal(0, 0.7, shape).astype(dtype) for shape in shapes]


# every output enters the loss with its own weights: a wrong gradient for any of them shows
LOSS_WEIGHTS = [np.random.default_rng(9).normal(size=s) for s in [(T, B, H), (B, H), (B, H)]]


def loss(*args, lstm=lstm_sequence):
    return sum(
        ops.sum(ops.sin(out) * ops.cast(w, out.dtype)) for out, w in zip(lstm(*args), LOSS_WEIGHTS)
    )


def gradients(args, lstm=lstm_sequence):
    """d loss / d each argument, through the backend's own differentiation."""

    def value(*args):
        return loss(*args, lstm=lstm)

    if BACKEND == "tensorflow":
        import tensorflow as tf

        args = [tf.constant(a) for a in args]
        with tf.GradientTape() as tape:
            tape.watch(args)
            result = value(*args)
        return [g.numpy() for g in tape.gradient(result, args)]
    if BACKEND == "jax":
        import jax

        return [np.asarray(g) for g in jax.grad(value, argnums=tuple(range(6)))(*args)]
    import torch

    args = [torch.tensor(a, requires_grad=True) for a in args]
    return [g.detach().numpy() for g in torch.autograd.grad(value(*args), args)]


def test_outputs_follow_the_equations():
    args = arguments("float32")
    got = [ops.convert_to_numpy(v) for v in lstm_sequence(*args)]
    for mine, want in zip(got, numpy_lstm(*[a.astype("float64") for a in args])):
        np.testing.assert_allclose(mine, want, atol=1e-6)


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="float64 end to end: Keras' torch "
    "matmul returns float32, JAX's ops round to it somewhere even in "
    "64-bit mode (errors of 4e-8, too coarse for finite differences); "
    "the next test covers them",
)
def test_gradients_match_finite_differences():
    args = arguments()
    analytic = gradients(args)
    epsilon = 1e-6
    for k, arg in enumerate(args):
        numeric = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            shifted = [a.copy() for a in args]
            shifted[k][index] += epsilon
            up = float(ops.convert_to_numpy(loss(*shifted)))
            shifted[k][index] -= 2 * epsilon
            down = float(ops.convert_to_numpy(loss(*shifted)))
            numeric[index] = (up - down) / (2 * epsilon)
        np.testing.assert_allclose(analytic[k], numeric, atol=1e-7, err_msg=f"argument {k}")


def test_gradients_match_differentiating_the_loop():
    """float32, every backend: against the loop written in keras.ops, differentiated."""

    def looped(x, kernel, recurrent_kernel, bias, h, c):
        outputs = []
        for t in range(T):
            i, f, g, o = ops.split(
                ops.matmul(x[t], kernel) + bias + ops.matmul(h, recurrent_kernel), 4, axis=-1
            )
            c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            outputs.append(h)
        return ops.stack(outputs), h, c

    args = arguments("float32", seed=1)
    for k, (mine, want) in enumerate(zip(gradients(args), gradients(args, looped))):
        np.testing.assert_allclose(mine, want, atol=2e-5, err_msg=f"argument {k}")


def test_without_input_gradient_the_other_gradients_stay():
    """input_gradient=False: the weights' and states' gradients as before, dX zero."""
    args = arguments("float32", seed=2)
    full = gradients(args)
    skipped = gradients(args, lambda *a: lstm_sequence(*a, input_gradient=False))
    np.testing.assert_array_equal(skipped[0], np.zeros_like(full[0]))
    assert np.abs(full[0]).max() > 0
    for k, (mine, want) in enumerate(zip(skipped[1:], full[1:]), 1):
        np.testing.assert_allclose(mine, want, atol=1e-6, err_msg=f"argument {k}")


# ---- kerasrnn.RNN routes to it under XLA ----------------------------------------------------
class Spy:
    def __init__(self):
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return lstm_sequence(*args, **kwargs)


def one_sgd_step(layer, x, y, jit_compile):
    """The weights' change after one SGD step of rate 1 (minus the gradient)."""
    model = keras.Sequential([keras.Input(x.shape[1:]), layer, keras.layers.Dense(1)])
    rng = np.random.default_rng(2)
    model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
    before = model.get_weights()
    model.compile(keras.optimizers.SGD(1.0), "mse", jit_compile=jit_compile)
    loss_value = model.train_on_batch(x, y)
    return loss_value, [a - b for a, b in zip(model.get_weights(), before)]


XLA = BACKEND in ("tensorflow", "jax")


@pytest.mark.parametrize(
    "options",
    [dict(), dict(return_sequences=True, go_backwards=True), dict(return_sequences=True)],
    ids=["last", "backwards-sequences", "sequences"],
)
def test_rnn_under_xla_equals_keras_lstm(monkeypatch, options):
    spy = Spy()
    monkeypatch.setattr(rnn_module, "lstm_sequence", spy)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 7, 3)).astype("float32")
    y = rng.normal(size=(5, 7, 1) if options.get("return_sequences") else (5, 1))
    ours = one_sgd_step(kerasrnn.RNN(kerasrnn.LSTMCell(4), **options), x, y, XLA)
    theirs = one_sgd_step(keras.layers.LSTM(4, **options), x, y, XLA)
    # the written-out pass ran where XLA compiles, never on torch
    assert (spy.calls > 0) == XLA
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    for mine, want in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(mine, want, atol=2e-5)


@pytest.mark.parametrize(
    "options,masked",
    [(dict(), True), (dict(unroll=True), False), (dict(fast_path=False), False)],
    ids=["masked", "unroll", "no-fast-path"],
)
def test_rnn_keeps_the_loop_for_masks_unroll_and_fast_path_off(monkeypatch, options, masked):
    spy = Spy()
    monkeypatch.setattr(rnn_module, "lstm_sequence", spy)
    x = np.random.default_rng(4).normal(size=(2, 5, 3)).astype("float32")
    if masked:
        x[1, 3:] = 0.0
    layers = [keras.layers.Masking()] if masked else []
    model = keras.Sequential(
        [keras.Input((5, 3)), *layers, kerasrnn.RNN(kerasrnn.LSTMCell(4), **options)]
    )
    model.compile("sgd", "mse", jit_compile=XLA)
    model.train_on_batch(x, np.zeros((2, 4), "float32"))
    assert spy.calls == 0


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's graph without XLA")
def test_tensorflow_without_xla_and_jit_compile_off_keeps_the_loop(monkeypatch):
    """jit_compile=False: no XLA cluster of its own (tests/cells/test_rnn_jit_compile.py
    tests the default, which has one)."""
    spy = Spy()
    monkeypatch.setattr(rnn_module, "lstm_sequence", spy)
    one_sgd_step(
        kerasrnn.RNN(kerasrnn.LSTMCell(4), jit_compile=False),
        np.ones((2, 5, 3), "float32"),
        np.ones((2, 1), "float32"),
        jit_compile=False,
    )
    assert spy.calls == 0
