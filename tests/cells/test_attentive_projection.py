"""AttentionCell's pluggable pieces against NumPy on every backend: each projection
(Luong's tanh layer, TFA's linear layer, the context, [h; c], a user-written Keras layer)
under each step order, their configs, and a saved `.keras` model that reloads to the
same outputs."""

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn

B, TQ, TK, DIN, DM, UNITS, ATT = 2, 4, 5, 3, 6, 7, 4


def _np(x):
    return np.asarray(ops.convert_to_numpy(x), np.float64)


@keras.saving.register_keras_serializable(package="tests")
class GatedProjection(keras.layers.Layer):
    """The user-written projection of docs/attention.md: sigmoid(W_g x) * tanh(W_a x),
    x = [h; c]."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.gate = keras.layers.Dense(units, activation="sigmoid")
        self.value = keras.layers.Dense(units, activation="tanh")

    def build(self, input_shape):
        self.gate.build(input_shape)
        self.value.build(input_shape)

    def call(self, pair):
        return self.gate(pair) * self.value(pair)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# projection factory, and a_t in NumPy from (c, h, the projection's weights)
PROJECTIONS = {
    "luong": (
        lambda: kerasrnn.LuongProjection(ATT),
        lambda c, h, p: np.tanh(np.concatenate([c, h], -1) @ _np(p.kernels[0])),
    ),
    "linear": (
        lambda: kerasrnn.LinearProjection(ATT),
        lambda c, h, p: np.concatenate([h, c], -1) @ _np(p.kernels[0]),
    ),
    "context": (kerasrnn.ContextProjection, lambda c, h, p: c),
    "concat": (kerasrnn.ConcatProjection, lambda c, h, p: np.concatenate([h, c], -1)),
    "user_layer": (
        lambda: GatedProjection(ATT),
        lambda c, h, p: (
            _sigmoid(
                np.concatenate([h, c], -1) @ _np(p.layers.gate.kernel) + _np(p.layers.gate.bias)
            )
            * np.tanh(
                np.concatenate([h, c], -1) @ _np(p.layers.value.kernel) + _np(p.layers.value.bias)
            )
        ),
    ),
}


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, TQ, DIN)).astype("float32")
    memory = rng.normal(size=(B, TK, DM)).astype("float32")
    mask = np.ones((B, TK), bool)
    mask[1, 3:] = False
    return x, memory, mask


def _np_attention(query, memory, mask, score):
    w = {name: _np(getattr(score, name)) for name in ("query_kernel", "key_kernel", "attention_v")}
    e = np.tanh((query @ w["query_kernel"])[:, None] + memory @ w["key_kernel"])
    e = np.where(mask, (e @ w["attention_v"])[..., 0], -np.inf)
    a = np.exp(e - e.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("bk,bkd->bd", a, memory)


def _np_decoder(cell, order, project, x, memory, mask):
    """Both step orders, written out, over a simple tanh RNN."""
    inner = cell.cell
    W, U, b = _np(inner.kernel), _np(inner.recurrent_kernel), _np(inner.bias)
    score = cell.attention.score
    s = np.zeros((B, UNITS))
    feed = np.zeros((B, cell.state_size[1])) if order == "luong" else None
    outputs = []
    for t in range(TQ):
        if order == "bahdanau":
            c = _np_attention(s, memory, mask, score)
            s = np.tanh(np.concatenate([x[:, t], c], -1) @ W + s @ U + b)
            a = project(c, s, cell.projection)
        else:
            s = np.tanh(np.concatenate([x[:, t], feed], -1) @ W + s @ U + b)
            c = _np_attention(s, memory, mask, score)
            a = feed = project(c, s, cell.projection)
        outputs.append(a)
    return np.stack(outputs, 1)


@pytest.mark.parametrize("order", ["bahdanau", "luong"])
@pytest.mark.parametrize("name", list(PROJECTIONS))
def test_every_projection_under_every_step_order_matches_numpy(name, order):
    make, project = PROJECTIONS[name]
    step_order = kerasrnn.AttendThenRun() if order == "bahdanau" else kerasrnn.RunThenAttend()
    cell = kerasrnn.AttentionCell(
        kerasrnn.SimpleRNNCell(UNITS), kerasrnn.BahdanauAttention(5), step_order, make()
    )
    x, memory, mask = _data()
    outputs = kerasrnn.AttentiveRNN(cell)(x, memory, memory_mask=mask)
    expected = _np_decoder(cell, order, project, x, memory, mask)
    assert tuple(outputs.shape) == expected.shape == (B, TQ, cell.output_size)
    np.testing.assert_allclose(_np(outputs), expected, atol=1e-5)


def test_user_projection_saves_and_reloads_with_identical_outputs(tmp_path):
    keras.utils.set_random_seed(1)
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        kerasrnn.LuongAttention("general"),
        kerasrnn.RunThenAttend(),
        GatedProjection(ATT),
        alignment_history=True,
    )
    target, source = keras.Input((None, DIN)), keras.Input((None, DM))
    outputs, alignments = kerasrnn.AttentiveRNN(cell)(target, source)
    model = keras.Model([target, source], [keras.layers.Dense(3)(outputs), alignments])
    x, memory, _ = _data()
    expected = model.predict([x, memory], verbose=0)
    model.save(tmp_path / "gated.keras")
    loaded = keras.saving.load_model(tmp_path / "gated.keras")
    for got, want in zip(loaded.predict([x, memory], verbose=0), expected):
        np.testing.assert_array_equal(got, want)
    restored = next(x for x in loaded.layers if isinstance(x, kerasrnn.AttentiveRNN)).cell
    assert isinstance(restored.projection, kerasrnn.LayerProjection)
    assert isinstance(restored.projection.layers, GatedProjection)
    assert isinstance(restored.step_order, kerasrnn.RunThenAttend)


@pytest.mark.parametrize(
    "order",
    [
        kerasrnn.AttendThenRun,
        lambda: kerasrnn.RunThenAttend(input_feeding=False, output_attention=False),
    ],
)
@pytest.mark.parametrize("name", list(PROJECTIONS))
def test_config_round_trip(name, order):
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5), order(), PROJECTIONS[name][0]()
    )
    again = kerasrnn.AttentionCell.from_config(cell.get_config())
    assert repr(again.step_order) == repr(cell.step_order)
    assert type(again.projection) is type(cell.projection)
    assert again.projection.get_config() == cell.projection.get_config()
    assert again.get_config() == cell.get_config()


def test_default_projection_follows_the_step_order():
    bahdanau = kerasrnn.AttentionCell(kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5))
    luong = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5), kerasrnn.RunThenAttend()
    )
    assert isinstance(bahdanau.step_order, kerasrnn.AttendThenRun)
    assert isinstance(bahdanau.projection, kerasrnn.ConcatProjection)
    assert isinstance(luong.projection, kerasrnn.LuongProjection)
    assert luong.state_size == [UNITS, UNITS]  # a_{t-1} as wide as h, known before memory
