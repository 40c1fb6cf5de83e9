"""kerasrnn.compat.torch against PyTorch itself: random nn.LSTM / nn.GRU / nn.RNN (deep,
bidirectional), nn.Embedding and nn.Linear modules, their state_dicts loaded into
kerasrnn and Keras layers, which must then compute PyTorch's outputs and final states
within 1e-5 on a right-padded batch (PyTorch runs it packed with pack_padded_sequence,
Keras with a mask)."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.compat.torch import load_torch_state_dict, torch_modules

torch = pytest.importorskip("torch")
nn = torch.nn
pack_padded_sequence = torch.nn.utils.rnn.pack_padded_sequence
pad_packed_sequence = torch.nn.utils.rnn.pad_packed_sequence
torch.set_num_threads(1)  # these modules are tiny; spinning threads only slow a busy CPU

BATCH, TIME, FEATURES, UNITS = 3, 6, 4, 5
LENGTHS = np.array([6, 4, 2])
MASK = np.arange(TIME)[None, :] < LENGTHS[:, None]
ATOL = 1e-5


def randomize(module, seed):
    """Weights far from PyTorch's small default draw, so a swapped gate would show."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return module.eval()


def inputs(seed=0):
    x = np.random.default_rng(seed).normal(size=(BATCH, TIME, FEATURES)).astype("float32")
    return x * MASK[..., None]  # right padding, as a padded batch has


def torch_packed(module, x):
    """PyTorch's padded outputs (zeros after each length) and final h per layer/direction."""
    packed = pack_padded_sequence(
        torch.from_numpy(x), torch.from_numpy(LENGTHS), batch_first=True, enforce_sorted=False
    )
    with torch.no_grad():
        out, state = module(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=TIME)
    h = state[0] if isinstance(state, tuple) else state
    return out.numpy(), h.numpy()


def keras_stack(cell, num_layers=2, bidirectional=True):
    stack = kerasrnn.RNNStack(
        cell,
        num_layers=num_layers,
        bidirectional=bidirectional,
        return_sequences=True,
        return_state=True,
    )
    stack.build((None, None, FEATURES))
    return stack


def keras_run(layers, x):
    """The outputs and final h of each layer/direction (PyTorch's h_n order) of a list of
    Keras recurrent layers with return_sequences and return_state, run on masked x."""
    y, hs = x, []
    for layer in layers:
        y, *states = layer(x if y is None else y, mask=MASK)
        per_direction = len(states) // _directions(layer)
        hs.extend(keras.ops.convert_to_numpy(s) for s in states[::per_direction])
    return keras.ops.convert_to_numpy(y), np.stack(hs)


def _directions(layer):
    if isinstance(layer, kerasrnn.RNNStack):
        return layer.num_layers * (2 if layer.bidirectional else 1)
    return 2 if isinstance(layer, keras.layers.Bidirectional) else 1


def assert_matches(torch_out, keras_out):
    want_y, want_h = torch_out
    got_y, got_h = keras_out
    np.testing.assert_allclose(got_y[MASK], want_y[MASK], atol=ATOL)
    np.testing.assert_allclose(got_h, want_h, atol=ATOL)


@pytest.fixture(scope="module")
def bilstm():
    return randomize(nn.LSTM(FEATURES, UNITS, num_layers=2, bidirectional=True), seed=1)


@pytest.fixture(scope="module")
def bigru():
    return randomize(nn.GRU(FEATURES, UNITS, num_layers=2, bidirectional=True), seed=2)


@pytest.mark.parametrize(
    "fixture, cell",
    [("bilstm", lambda: kerasrnn.LSTMCell(UNITS)), ("bigru", lambda: kerasrnn.GRUCell(UNITS))],
    ids=["lstm", "gru"],
)
def test_deep_bidirectional_stack_computes_pytorch(fixture, cell, request):
    module = request.getfixturevalue(fixture)
    stack = keras_stack(cell())
    load_torch_state_dict(stack, module.state_dict())
    x = inputs()
    assert_matches(torch_packed(module, x), keras_run([stack], x))


def test_keras_own_layers_listed_in_order(bigru):
    # two Bidirectional(keras.layers.GRU) layers take the two layers of one nn.GRU
    layers = [
        keras.layers.Bidirectional(
            keras.layers.GRU(UNITS, return_sequences=True, return_state=True)
        )
        for _ in range(2)
    ]
    y = start = keras.Input((None, FEATURES))
    for layer in layers:
        y = layer(y)[0]
    model = keras.Model(start, y)
    load_torch_state_dict(model, bigru)  # the module itself: its state_dict is taken
    x = inputs(1)
    assert_matches(torch_packed(bigru, x), keras_run(layers, x))
    # the same through a mapping, to a list of layers
    for layer in layers:
        for weight in layer.weights:
            weight.assign(np.zeros(weight.shape))
    load_torch_state_dict(model, bigru.state_dict(), mapping={"": layers})
    assert_matches(torch_packed(bigru, x), keras_run(layers, x))


def test_unidirectional_keras_lstm_stacked_cells_and_simple_rnn():
    lstm = randomize(nn.LSTM(FEATURES, UNITS, batch_first=True), seed=3)
    layer = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True)
    layer.build((None, None, FEATURES))
    load_torch_state_dict(layer, lstm.state_dict())
    x = inputs(2)
    assert_matches(torch_packed(lstm, x), keras_run([layer], x))

    deep = randomize(nn.LSTM(FEATURES, UNITS, num_layers=2, batch_first=True), seed=6)
    cells = keras.layers.StackedRNNCells([kerasrnn.LSTMCell(UNITS), kerasrnn.LSTMCell(UNITS)])
    layer = kerasrnn.RNN(cells, return_sequences=True)
    layer.build((None, None, FEATURES))
    load_torch_state_dict(layer, deep.state_dict())
    want_y, _ = torch_packed(deep, x)
    got_y = keras.ops.convert_to_numpy(layer(x, mask=MASK))
    np.testing.assert_allclose(got_y[MASK], want_y[MASK], atol=ATOL)

    rnn = randomize(nn.RNN(FEATURES, UNITS, batch_first=True), seed=4)
    layer = kerasrnn.RNN(kerasrnn.SimpleRNNCell(UNITS), return_sequences=True, return_state=True)
    layer.build((None, None, FEATURES))
    load_torch_state_dict(layer, rnn.state_dict())
    assert_matches(torch_packed(rnn, x), keras_run([layer], x))


class Tagger(nn.Module):
    """A PyTorch BiLSTM tagger: embedding (0 = padding), 1-layer BiLSTM, linear readout."""

    def __init__(self, vocabulary=11, dim=4, tags=3):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, UNITS, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * UNITS, tags)

    def forward(self, ids, lengths):
        packed = pack_padded_sequence(
            self.embed(ids), lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        return self.out(out)


def keras_tagger():
    return keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(11, 4, mask_zero=True, name="embedding"),
            kerasrnn.RNNStack(
                kerasrnn.LSTMCell(UNITS), bidirectional=True, return_sequences=True, name="bilstm"
            ),
            keras.layers.Dense(3, name="logits"),
        ]
    )


@pytest.fixture(scope="module")
def tagger():
    module = randomize(Tagger(), seed=5)
    ids = np.random.default_rng(3).integers(1, 11, size=(BATCH, TIME)) * MASK
    with torch.no_grad():
        logits = module(torch.from_numpy(ids), torch.from_numpy(LENGTHS)).numpy()
    return module, ids, logits


@pytest.mark.parametrize(
    "mapping", [None, {"embed": "embedding", "lstm": "bilstm", "out": "logits"}]
)
def test_whole_tagger_in_order_or_mapped(tagger, mapping):
    module, ids, want = tagger
    model = keras_tagger()
    load_torch_state_dict(model, module.state_dict(), mapping=mapping)
    got = keras.ops.convert_to_numpy(model(ids))
    np.testing.assert_allclose(got[MASK], want[MASK], atol=ATOL)


def test_reads_a_saved_file(tagger, tmp_path):
    module, ids, want = tagger
    path = tmp_path / "tagger.pt"
    torch.save(module.state_dict(), path)
    assert list(torch_modules(path)) == ["embed", "lstm", "out"]
    model = keras_tagger()
    load_torch_state_dict(model, path)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(ids))[MASK], want[MASK], atol=ATOL)


# ---- errors: one line naming the key and the fix ---------------------------------


def test_gru_must_reset_after(bigru):
    stack = keras_stack(kerasrnn.GRUCell(UNITS, reset_after=False))
    with pytest.raises(ValueError, match=r"reset_after=True"):
        load_torch_state_dict(stack, bigru.state_dict())


def test_shape_mismatch_names_key_and_units(bilstm):
    stack = keras_stack(kerasrnn.LSTMCell(UNITS + 1))
    with pytest.raises(ValueError, match=r"'weight_ih_l0'.*units=5 on inputs of width 4"):
        load_torch_state_dict(stack, bilstm.state_dict())


def test_structure_mismatches(bilstm, tagger):
    with pytest.raises(ValueError, match=r"is bidirectional.*Bidirectional"):
        load_torch_state_dict(keras_stack(kerasrnn.LSTMCell(UNITS), bidirectional=False), bilstm)
    with pytest.raises(ValueError, match=r"2 layer\(s\).*num_layers=2"):
        load_torch_state_dict(keras_stack(kerasrnn.LSTMCell(UNITS), num_layers=1), bilstm)
    with pytest.raises(
        ValueError, match=r"nn.LSTM; it loads into kerasrnn.LSTMCell or keras.layers.LSTMCell"
    ):
        load_torch_state_dict(keras_stack(kerasrnn.GRUCell(UNITS)), bilstm)
    with pytest.raises(ValueError, match=r"peephole=False"):
        load_torch_state_dict(keras_stack(kerasrnn.LSTMCell(UNITS, peephole=True)), bilstm)
    module = tagger[0]
    model = keras_tagger()
    with pytest.raises(ValueError, match=r"leaves the PyTorch modules \['out'\].*strict=False"):
        load_torch_state_dict(model, module, mapping={"embed": "embedding", "lstm": "bilstm"})
    with pytest.raises(ValueError, match=r"no module 'fc'.*\['embed', 'lstm', 'out'\]"):
        load_torch_state_dict(model, module, mapping={"fc": "logits"})
    with pytest.raises(ValueError, match=r"no layer named 'dense'"):
        load_torch_state_dict(model, module, mapping={"out": "dense"})
    with pytest.raises(ValueError, match=r"single layer.*the layer itself"):
        load_torch_state_dict(model.layers[1], module.lstm, mapping={"": "bilstm"})


def test_nothing_changes_when_a_later_module_fails(tagger):
    module = tagger[0]
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(11, 4, mask_zero=True),
            kerasrnn.RNNStack(kerasrnn.LSTMCell(UNITS), bidirectional=True),
            keras.layers.Dense(3, use_bias=False),
        ]
    )
    before = [keras.ops.convert_to_numpy(w) for w in model.weights]
    with pytest.raises(ValueError, match=r"no weight for PyTorch's \['out.bias'\].*use_bias"):
        load_torch_state_dict(model, module)
    for old, new in zip(before, model.weights):
        np.testing.assert_array_equal(old, keras.ops.convert_to_numpy(new))


def test_bad_state_dicts():
    projected = nn.LSTM(FEATURES, UNITS, proj_size=2)
    with pytest.raises(ValueError, match=r"weight_hr_l0.*proj_size"):
        load_torch_state_dict(keras_stack(kerasrnn.LSTMCell(UNITS), 1, False), projected)
    with pytest.raises(ValueError, match=r"training checkpoint.*checkpoint\['model'\]"):
        torch_modules({"model": {"w": torch.zeros(1)}})
    with pytest.raises(ValueError, match=r"more modules than `model` has"):
        load_torch_state_dict(keras_tagger(), {**Tagger().state_dict(), "extra.weight": [1.0]})
