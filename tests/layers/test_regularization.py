"""AWD-LSTM's regularisers against their definitions: WeightDrop (one mask over U per
forward call, scaled by 1/(1-p), the fused kernels given the dropped U), locked dropout
(Keras' SpatialDropout1D), embedding dropout and AR/TAR against NumPy; identity at
inference, expectation preserved, gradients, `.keras` round trips."""

import os

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import rnn as rnn_module
from kerasrnn.layers import ActivationRegularization, EmbeddingDropout, WeightDrop

B, T, D, U = 2, 5, 3, 4


def np_(x):
    return keras.ops.convert_to_numpy(x)


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, D)).astype("float32")


CELLS = {
    "lstm": lambda: kerasrnn.LSTMCell(U),
    "gru": lambda: kerasrnn.GRUCell(U),
    "keras-simple": lambda: keras.layers.SimpleRNNCell(U),
}
CONTAINERS = {
    "kerasrnn.RNN": lambda cell: kerasrnn.RNN(cell, return_sequences=True),
    "loop": lambda cell: kerasrnn.RNN(cell, fast_path=False, return_sequences=True),
    "keras.RNN": lambda cell: keras.layers.RNN(cell, return_sequences=True),
}


class FixedMask:
    """Stands in for the mask draw: a known mask, and how many times it was drawn."""

    def __init__(self, shape, rate):
        keep = np.random.default_rng(7).random(shape) >= rate
        self.mask = (keep / (1 - rate)).astype("float32")
        self.draws = 0

    def __call__(self):
        self.draws += 1
        return keras.ops.convert_to_tensor(self.mask)


def plain_twin(cell, recurrent_kernel):
    """The wrapped cell's twin (same config and weights) with U replaced."""
    twin = cell.__class__.from_config(cell.get_config())
    twin.build((None, D))
    weights = [np_(w) for w in cell.weights]
    names = [w.name for w in cell.weights]
    weights[names.index("recurrent_kernel")] = recurrent_kernel
    twin.set_weights(weights)
    return twin


# the cases that run differently: the fast path (the fused kernel, or on a CPU the
# written-out pass / the loop it falls back to) for LSTM and GRU, kerasrnn's and Keras'
# loops, and a Keras cell
@pytest.mark.parametrize(
    "kind, container",
    [
        ("lstm", "kerasrnn.RNN"),
        ("gru", "kerasrnn.RNN"),
        ("lstm", "loop"),
        ("gru", "keras.RNN"),
        ("keras-simple", "keras.RNN"),
    ],
)
def test_weight_drop_is_the_cell_with_a_masked_recurrent_kernel(kind, container):
    """Training: exactly the plain cell with U * M / (1-p), M drawn once per call (so
    the same at every step); inference: exactly the plain cell."""
    rate = 0.5
    wrapper = WeightDrop(CELLS[kind](), rate=rate)
    layer = CONTAINERS[container](wrapper)
    x = inputs()
    inference = np_(layer(x))
    cell = wrapper.cell
    kernel = np_(cell.recurrent_kernel)
    fixed = FixedMask(kernel.shape, rate)
    wrapper._draw_mask = fixed
    trained = np_(layer(x, training=True))
    assert fixed.draws == 1  # one mask for the whole sequence
    reference = keras.layers.RNN(plain_twin(cell, kernel * fixed.mask), return_sequences=True)
    np.testing.assert_allclose(trained, np_(reference(x)), rtol=1e-5, atol=1e-6)
    plain = keras.layers.RNN(plain_twin(cell, kernel), return_sequences=True)
    np.testing.assert_allclose(inference, np_(plain(x)), rtol=1e-5, atol=1e-6)
    assert not np.allclose(trained, inference, atol=1e-4)
    assert cell.recurrent_kernel is wrapper.cell.weights[1]  # the variable is back


class Spy:
    def __init__(self):
        self.recurrent_kernels = []

    def __call__(self, *args, **kwargs):
        self.recurrent_kernels.append(np_(kwargs["recurrent_kernel"]))
        raise NotImplementedError  # the loop then runs, as on a CPU


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_fused_kernel_gets_the_dropped_recurrent_kernel(monkeypatch, kind):
    spy = Spy()
    monkeypatch.setattr(rnn_module, f"backend_{kind}", spy)
    if kind == "lstm" and keras.backend.backend() == "jax":
        # JAX's unmasked LSTM takes the written-out loop first: it gets the kernel there
        original = rnn_module.written_out_lstm

        def written_out(*args):
            spy.recurrent_kernels.append(np_(args[2]))
            return original(*args)

        monkeypatch.setattr(rnn_module, "written_out_lstm", written_out)
    wrapper = WeightDrop(CELLS[kind](), rate=0.5)
    layer = kerasrnn.RNN(wrapper)
    layer(inputs())
    kernel = np_(wrapper.cell.recurrent_kernel)
    fixed = FixedMask(kernel.shape, 0.5)
    wrapper._draw_mask = fixed
    layer(inputs(), training=True)
    assert len(spy.recurrent_kernels) == 2
    np.testing.assert_array_equal(spy.recurrent_kernels[0], kernel)  # inference: U
    np.testing.assert_allclose(spy.recurrent_kernels[1], kernel * fixed.mask, rtol=1e-6)


def test_weight_drop_masks_preserve_the_expectation_and_change_per_call():
    wrapper = WeightDrop(kerasrnn.LSTMCell(U), rate=0.3, seed=5)
    keras.layers.RNN(wrapper)(inputs())
    masks = np.stack([np_(wrapper._draw_mask()) for _ in range(300)])
    np.testing.assert_allclose(np.unique(masks), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs(masks.mean() - 1.0) < 0.03  # E[M / (1-p)] = 1 (4800 draws, sd ~0.01)
    assert abs((masks == 0).mean() - 0.3) < 0.03
    layer = keras.layers.RNN(wrapper)
    first, second = np_(layer(inputs(), training=True)), np_(layer(inputs(), training=True))
    assert not np.allclose(first, second)  # a new mask for each batch


def test_weight_drop_gradients_skip_exactly_the_dropped_connections():
    """One SGD step: U changes where M keeps it and nowhere else (W and b train too)."""
    wrapper = WeightDrop(kerasrnn.LSTMCell(U), rate=0.5)
    model = keras.Sequential([keras.Input((T, D)), kerasrnn.RNN(wrapper), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.5), "mse")
    before = np_(wrapper.cell.recurrent_kernel).copy()
    kernel_before = np_(wrapper.cell.kernel).copy()
    fixed = FixedMask(before.shape, 0.5)
    wrapper._draw_mask = fixed
    model.fit(inputs(), np.ones((B, 1)), batch_size=B, epochs=1, verbose=0, shuffle=False)
    changed = np.abs(np_(wrapper.cell.recurrent_kernel) - before) > 0
    assert fixed.draws >= 1
    np.testing.assert_array_equal(changed[fixed.mask == 0], False)
    assert changed[fixed.mask > 0].mean() > 0.9
    assert np.abs(np_(wrapper.cell.kernel) - kernel_before).max() > 0


def test_weight_drop_rejects_what_it_cannot_drop():
    with pytest.raises(TypeError, match="WeightDrop wraps a recurrent cell"):
        WeightDrop(keras.layers.Dense(3))
    with pytest.raises(ValueError, match="rate"):
        WeightDrop(kerasrnn.LSTMCell(U), rate=1.0)


# ---- locked dropout: Keras' SpatialDropout1D ------------------------------------------
def test_spatial_dropout_1d_is_locked_dropout():
    """One mask per (sequence, feature), the same at every step, scaled by 1/(1-p); the
    Keras mask passes through; identity at inference."""
    layer = keras.layers.SpatialDropout1D(0.4, seed=3)
    x = np.random.default_rng(1).uniform(1.0, 2.0, size=(64, T, 6)).astype("float32")
    np.testing.assert_array_equal(np_(layer(x)), x)
    draws = np.stack([np_(layer(x, training=True)) / x for _ in range(10)])
    np.testing.assert_allclose(draws, draws[:, :, :1, :].repeat(T, axis=2), rtol=1e-6)
    np.testing.assert_allclose(np.unique(draws.round(4)), [0.0, round(1 / 0.6, 4)], rtol=1e-6)
    assert abs(draws.mean() - 1.0) < 0.05  # 3840 masks, sd ~0.013
    masked = keras.layers.Masking(0.0)(np.pad(x[:2], ((0, 0), (0, 2), (0, 0))))
    assert (
        np_(layer.compute_mask(masked, masked._keras_mask)).tolist()
        == [[True] * T + [False] * 2] * 2
    )


# ---- embedding dropout ------------------------------------------------------------------
def test_embedding_dropout_drops_whole_words_for_the_batch():
    layer = EmbeddingDropout(6, 3, rate=0.5, mask_zero=True, seed=2)
    ids = np.array([[1, 2, 3, 1, 0], [2, 4, 5, 1, 0]])
    out = np_(layer(ids))
    table = np_(layer.embeddings)
    np.testing.assert_allclose(out, table[ids], rtol=1e-6)  # inference: a plain lookup
    np.testing.assert_array_equal(np_(layer.compute_mask(ids)), ids != 0)
    draws = np.stack([np_(layer(ids, training=True)) for _ in range(200)])
    scale = draws / table[ids]  # (draw, batch, time, width)
    np.testing.assert_allclose(scale, scale[..., :1].repeat(3, -1), rtol=1e-5)  # whole vectors
    for word in np.unique(ids):
        at = scale[:, ids == word, 0]  # (draw, occurrences): every occurrence alike
        np.testing.assert_allclose(at, at[:, :1].repeat(at.shape[1], 1), rtol=1e-5)
    np.testing.assert_allclose(np.unique(scale.round(4)), [0.0, 2.0])
    np.testing.assert_allclose(draws.mean(0), table[ids], rtol=0.3, atol=0.03)


def test_embedding_dropout_trains_the_kept_rows_only():
    layer = EmbeddingDropout(12, 3, rate=0.5, seed=4)
    model = keras.Sequential(
        [keras.Input((10,), dtype="int32"), layer, keras.layers.GlobalAveragePooling1D()]
    )
    model.compile(keras.optimizers.SGD(1.0), "mse")
    ids = np.arange(1, 11)[None]
    before = np_(layer.embeddings).copy()
    model.fit(ids, np.ones((1, 3)), epochs=1, verbose=0)
    moved = np.abs(np_(layer.embeddings) - before).max(axis=1) > 0
    assert not moved[[0, 11]].any()  # never seen
    # seen rows move unless dropped (p = 0.5): ten rows, so some of each whatever the
    # backend's random stream (4 rows were all dropped by torch's CUDA generator)
    assert 0 < moved[1:11].sum() < 10


# ---- AR / TAR ------------------------------------------------------------------------------
def ar_tar_numpy(h, mask, alpha, beta):
    """Merity et al.'s alpha * mean(h^2) + beta * mean((h_t - h_{t-1})^2), real steps only."""
    real = h[mask]
    pairs = [
        h[b, t] - h[b, t - 1]
        for b in range(h.shape[0])
        for t in range(1, h.shape[1])
        if mask[b, t] and mask[b, t - 1]
    ]
    return alpha * np.mean(real**2) + beta * np.mean(np.square(pairs))


def test_ar_tar_matches_numpy_with_a_mask():
    h = np.random.default_rng(3).normal(size=(3, 6, 4)).astype("float32")
    mask = np.array([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]], bool)
    layer = ActivationRegularization(alpha=2.0, beta=1.0)
    out = layer(h, mask=mask, training=True)
    np.testing.assert_array_equal(np_(out), h)  # passes through
    assert len(layer.losses) == 1
    expected = ar_tar_numpy(h, mask, 2.0, 1.0)
    np.testing.assert_allclose(float(np_(layer.losses[0])), expected, rtol=1e-5)
    np.testing.assert_allclose(
        float(np_(layer.penalty(h))), ar_tar_numpy(h, np.ones((3, 6), bool), 2.0, 1.0), rtol=1e-5
    )
    layer(h, mask=mask)  # inference adds nothing
    assert layer.losses == []


def test_ar_tar_enters_the_training_loss_and_its_gradient():
    x = np.random.default_rng(4).normal(size=(2, 5, 3)).astype("float32")
    y = np.zeros((2, 3), "float32")
    model = keras.Sequential(
        [
            keras.Input((5, 3)),
            keras.layers.Dense(3, use_bias=False, kernel_initializer="identity"),
            ActivationRegularization(alpha=2.0, beta=1.0),
            keras.layers.GlobalAveragePooling1D(),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    loss = model.train_on_batch(x, y)
    data = np.mean(x.mean(1) ** 2)
    expected = data + ar_tar_numpy(x, np.ones((2, 5), bool), 2.0, 1.0)
    np.testing.assert_allclose(float(np.ravel(loss)[0]), expected, rtol=1e-5)
    # the penalty's gradient shrinks the identity kernel (the data term alone is smaller)
    assert np.abs(np_(model.layers[0].kernel) - np.eye(3)).max() > 0
    np.testing.assert_allclose(
        model.evaluate(x, y, verbose=0),
        np.mean((x @ np_(model.layers[0].kernel)).mean(1) ** 2),
        rtol=1e-5,
    )  # evaluation: data only


def test_ar_tar_rejects_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        ActivationRegularization(alpha=-1.0)
    with pytest.raises(ValueError, match="return_sequences=True"):
        ActivationRegularization(alpha=1.0)(np.zeros((2, 3), "float32"))


# ---- serialisation ---------------------------------------------------------------------------
def test_regularisers_round_trip_through_a_keras_file(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((T,), dtype="int32"),
            EmbeddingDropout(7, D, rate=0.1, mask_zero=True, seed=1),
            keras.layers.SpatialDropout1D(0.2),
            keras.layers.Bidirectional(
                kerasrnn.RNN(WeightDrop(kerasrnn.LSTMCell(U), 0.5, seed=2), return_sequences=True)
            ),
            ActivationRegularization(alpha=2.0, beta=1.0),
            keras.layers.GlobalAveragePooling1D(),
        ]
    )
    ids = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 1, 0]])
    expected = np_(model(ids))
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np_(loaded(ids)), expected, rtol=1e-5)
    configs = {type(layer).__name__: layer.get_config() for layer in loaded.layers}
    assert configs["EmbeddingDropout"]["rate"] == 0.1 and configs["EmbeddingDropout"]["mask_zero"]
    assert configs["ActivationRegularization"]["beta"] == 1.0
    wrapper = loaded.layers[2].forward_layer.cell
    assert isinstance(wrapper, WeightDrop) and wrapper.rate == 0.5
    assert isinstance(wrapper.cell, kerasrnn.LSTMCell)
