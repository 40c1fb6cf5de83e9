"""AttentionCell's pieces: several mechanisms, stateful attention in the decoder, the
projections and step orders (TFA's through kerasrnn.compat.tfa), saving, XLA, and the
error messages of the usual mistakes."""

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.attention import BahdanauMonotonicAttention, LuongMonotonicAttention
from kerasrnn.compat.tfa import AttentionWrapper

B, TQ, DIN, UNITS = 3, 4, 3, 6


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def _memories():
    rng = np.random.default_rng(0)
    first = rng.normal(size=(B, 5, 4)).astype("float32")
    second = rng.normal(size=(B, 7, 6)).astype("float32")
    mask_first = np.ones((B, 5), bool)
    mask_first[1, 3:] = False
    return [first, second], [mask_first, None]


def _weights(layer):
    return {v.path.split("/")[-1]: _np(v) for v in layer.weights}


def _np_bahdanau(query, memory, mask, w):
    e = np.tanh((query @ w["query_kernel"])[:, None] + memory @ w["key_kernel"])
    e = (e @ w["attention_v"])[..., 0]
    if mask is not None:
        e = np.where(mask, e, -np.inf)
    a = np.exp(e - e.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("bk,bkd->bd", a, memory), a


def test_two_mechanisms_in_bahdanau_mode_match_numpy():
    """Each mechanism attends its own memory with s_{i-1}; the contexts are concatenated
    into the cell's input and the output [s_i; c_1; c_2]."""
    memories, masks = _memories()
    x = np.random.default_rng(1).normal(size=(B, TQ, DIN)).astype("float32")
    mechanisms = [kerasrnn.BahdanauAttention(5), kerasrnn.BahdanauAttention(4)]
    cell = kerasrnn.AttentionCell(kerasrnn.SimpleRNNCell(UNITS), mechanisms)
    decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True)
    outputs, alignments = decoder(x, memories, memory_mask=masks)
    assert isinstance(alignments, (list, tuple)) and len(alignments) == 2
    w_cell = _weights(cell.cell)
    w = [_weights(m) for m in mechanisms]
    s = np.zeros((B, UNITS))
    for t in range(TQ):
        c1, a1 = _np_bahdanau(s, memories[0], masks[0], w[0])
        c2, a2 = _np_bahdanau(s, memories[1], None, w[1])
        inputs = np.concatenate([x[:, t], c1, c2], -1)
        s = np.tanh(inputs @ w_cell["kernel"] + s @ w_cell["recurrent_kernel"] + w_cell["bias"])
        np.testing.assert_allclose(_np(outputs[:, t]), np.concatenate([s, c1, c2], -1), atol=1e-5)
        np.testing.assert_allclose(_np(alignments[0][:, t]), a1, atol=1e-5)
        np.testing.assert_allclose(_np(alignments[1][:, t]), a2, atol=1e-5)


def test_alignment_history_in_a_plain_keras_rnn():
    memories, masks = _memories()
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        kerasrnn.LuongAttention("general"),
        kerasrnn.RunThenAttend(),
        alignment_history=True,
    )
    memory = cell.prepare_memory(memories[0], mask=masks[0])
    x = np.ones((B, TQ, DIN), "float32")
    outputs = keras.layers.RNN(cell.with_memory(memory), return_sequences=True)(x)
    assert tuple(outputs.shape) == (B, TQ, UNITS + 5)
    history = _np(outputs[..., UNITS:])
    np.testing.assert_allclose(history.sum(-1), 1.0, atol=1e-5)
    assert np.all(history[1, :, 3:] == 0)
    # AttentiveRNN returns them by default with alignment_history
    decoder = kerasrnn.AttentiveRNN(cell)
    assert decoder.return_alignments
    np.testing.assert_allclose(
        _np(decoder(x, memories[0], memory_mask=masks[0])[1]), history, atol=1e-6
    )


CONFIGS = {
    "multi": lambda: AttentionWrapper(
        kerasrnn.LSTMCell(UNITS),
        [
            kerasrnn.BahdanauAttention(5, probability_fn="sparsemax"),
            BahdanauMonotonicAttention(4, mode="recursive", score_bias_init=-1.0),
        ],
        attention_layer_size=[3, 2],
        alignment_history=True,
    ),
    "coverage_output": lambda: kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        kerasrnn.BahdanauAttention(5, coverage=True),
        kerasrnn.RunThenAttend(output_attention=False),
    ),
    "attention_layer": lambda: kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        LuongMonotonicAttention(mode="hard"),
        kerasrnn.RunThenAttend(),
        keras.layers.Dense(4, activation="relu"),
    ),
    "raw_context": lambda: kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        kerasrnn.Attention("general", probability_fn="hardmax"),
        kerasrnn.RunThenAttend(),
        kerasrnn.ContextProjection(),
    ),
    "bahdanau_tanh": lambda: kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        kerasrnn.BahdanauAttention(5),
        kerasrnn.AttendThenRun(),
        kerasrnn.LuongProjection(4),
    ),
}


def _model(name):
    keras.utils.set_random_seed(0)
    cell = CONFIGS[name]()
    multi = len(cell.mechanisms) > 1
    memories, masks = _memories()
    target = keras.Input((None, DIN))
    sources = [keras.Input((None, m.shape[-1])) for m in memories[: 2 if multi else 1]]
    decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True, return_state=True)
    outputs, alignments, *states = decoder(target, sources if multi else sources[0])
    alignments = alignments if multi else [alignments]
    model = keras.Model([target, *sources], [outputs, *alignments, *states])
    data = [np.random.default_rng(2).normal(size=(B, TQ, DIN)).astype("float32")]
    data += memories[: len(sources)]
    return model, data


@pytest.mark.parametrize("name", list(CONFIGS))
def test_keras_file_round_trip_and_xla(tmp_path, name):
    model, data = _model(name)
    expected = [_np(r) for r in model(data)]
    path = tmp_path / f"{name}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    for got, want in zip(loaded.predict(data, verbose=0), expected):
        np.testing.assert_allclose(got, want, atol=1e-5)
    compiled = keras.Model(model.inputs, model.outputs)
    compiled.compile(jit_compile=keras.backend.backend() in ("tensorflow", "jax"))
    for got, want in zip(compiled.predict(data, verbose=0), expected):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_sigmoid_noise_trains_inside_the_decoder():
    """Noise is drawn inside the recurrence while training (on every backend)."""
    keras.utils.set_random_seed(0)
    memories, _ = _memories()
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS),
        BahdanauMonotonicAttention(5, sigmoid_noise=1.0),
        kerasrnn.RunThenAttend(),
    )
    target = keras.Input((None, DIN))
    source = keras.Input((None, 4))
    outputs = kerasrnn.AttentiveRNN(cell)(target, source)
    model = keras.Model([target, source], keras.layers.Dense(2)(outputs))
    x = np.ones((B, TQ, DIN), "float32")
    clean = _np(model([x, memories[0]], training=False))
    np.testing.assert_allclose(_np(model([x, memories[0]], training=False)), clean)
    assert np.abs(_np(model([x, memories[0]], training=True)) - clean).max() > 1e-4
    model.compile("sgd", "mse")
    history = model.fit([x, memories[0]], np.zeros((B, TQ, 2)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.large
def test_noise_drawn_before_the_loop_is_the_noise_each_step_uses():
    """`AttentiveRNN` in training draws every step's sigmoid noise before its loop
    (`AttentionCell.draw_noise`) and hands each step its own (`split_noise`): the
    teacher-forced pass equals the steps run by hand with the same draws. Two
    mechanisms, the noisy one second: each gets its own memory's columns."""
    memories, masks = _memories()
    noisy = BahdanauMonotonicAttention(4, sigmoid_noise=1.0, sigmoid_noise_seed=5)
    mechanisms = [kerasrnn.BahdanauAttention(5), noisy]
    cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(UNITS), mechanisms, kerasrnn.RunThenAttend())
    decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True)
    x = np.random.default_rng(3).normal(size=(B, TQ, DIN)).astype("float32")
    decoder(x, memories, memory_mask=masks)  # built
    start = _np(noisy.seed_generator.state)
    outputs, alignments = decoder(x, memories, memory_mask=masks, training=True)
    noisy.seed_generator.state.assign(start.astype(noisy.seed_generator.state.dtype))
    prepared = cell.prepare_memory(memories, mask=masks)
    columns = cell.draw_noise(prepared, B, TQ)
    assert tuple(columns.shape) == (B, TQ, 7)  # the second memory's Tk only
    states = cell.get_initial_state(batch_size=B, memory=prepared)
    for t in range(TQ):
        noise = cell.split_noise(columns[:, t], prepared)
        assert noise[0] is None and tuple(noise[1].shape) == (B, 7)
        output, states, step_alignments = cell.step(
            x[:, t], states, prepared, training=True, noise=noise
        )
        np.testing.assert_allclose(_np(outputs[:, t]), _np(output), atol=1e-5)
        for got, want in zip(alignments, step_alignments):
            np.testing.assert_allclose(_np(got[:, t]), _np(want), atol=1e-5)
    clean = _np(decoder(x, memories, memory_mask=masks, training=False)[0])
    assert np.abs(_np(outputs) - clean).max() > 1e-4  # the noise was used
    plain = kerasrnn.AttentionCell(kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5))
    assert plain.draw_noise(plain.prepare_memory(memories[0]), B, TQ) is None


# ---- the usual mistakes: one clear line each ----------------------------------------
def test_memory_batch_differs_from_the_states_names_the_tiling():
    cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5))
    memory = cell.prepare_memory(np.ones((2, 5, 4), "float32"))
    states = cell.get_initial_state(batch_size=6)  # a beam of 3, memory not repeated
    with pytest.raises(
        ValueError,
        match=r"batch size 2 .* batch size 6.*beam_size.*"
        r"memory\.repeat\(3\)",
    ):
        cell.step(np.ones((6, DIN), "float32"), states, memory)
    # the fix works
    output, _, _ = cell.step(np.ones((6, DIN), "float32"), states, memory.repeat(3))
    assert tuple(output.shape) == (6, UNITS + 4)
    luong = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(UNITS), kerasrnn.LuongAttention("general"), kerasrnn.RunThenAttend()
    )
    memory = luong.prepare_memory(np.ones((2, 5, 4), "float32"))
    with pytest.raises(ValueError, match=r"memory\.repeat\(2\)"):
        luong.step(np.ones((4, DIN), "float32"), luong.get_initial_state(4), memory)


def test_memory_of_another_width_is_named():
    cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(UNITS), kerasrnn.BahdanauAttention(5))
    decoder = kerasrnn.AttentiveRNN(cell)
    decoder(np.ones((2, 3, DIN), "float32"), np.ones((2, 5, 4), "float32"))
    with pytest.raises(
        ValueError,
        match=r"built for memory values of width 4; got 7\. "
        r"Its weights fix the width",
    ):
        decoder(np.ones((2, 3, DIN), "float32"), np.ones((2, 5, 7), "float32"))
    # the attention layer alone says the same of its keys
    layer = kerasrnn.BahdanauAttention(5)
    layer(np.ones((2, 3), "float32"), np.ones((2, 5, 4), "float32"))
    with pytest.raises(
        ValueError,
        match=r"built for a memory \(`keys`\) of width 4; "
        r"got keys of shape \(2, 5, 7\)",
    ):
        layer(np.ones((2, 3), "float32"), np.ones((2, 5, 7), "float32"))


def test_dot_score_width_error_names_the_score_and_the_fix():
    cell = kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(8), kerasrnn.LuongAttention("dot"), kerasrnn.RunThenAttend()
    )
    with pytest.raises(
        ValueError,
        match=r"The 'dot' score .* width 8 .* width 6\. .*LuongAttention\('general'\)",
    ):
        kerasrnn.AttentiveRNN(cell)(np.ones((2, 3, DIN), "float32"), np.ones((2, 5, 6), "float32"))


def test_step_order_and_projection_must_be_objects():
    with pytest.raises(TypeError, match=r"`step_order` must be kerasrnn.AttendThenRun\(\)"):
        kerasrnn.AttentionCell(
            kerasrnn.GRUCell(4), kerasrnn.BahdanauAttention(4), step_order="bahdanau"
        )
    with pytest.raises(TypeError, match="`projection` must be an attention projection"):
        kerasrnn.AttentionCell(kerasrnn.GRUCell(4), kerasrnn.BahdanauAttention(4), projection=6)


def test_bad_option_combinations_are_named():
    gru, attention = kerasrnn.GRUCell(4), kerasrnn.BahdanauAttention(4)
    with pytest.raises(ValueError, match="not both"):
        AttentionWrapper(
            gru, attention, attention_layer_size=3, attention_layer=keras.layers.Dense(3)
        )
    with pytest.raises(ValueError, match="one per attention mechanism"):
        kerasrnn.AttentionCell(
            gru,
            [attention, kerasrnn.BahdanauAttention(3)],
            projection=kerasrnn.LuongProjection([3]),
        )
    with pytest.raises(ValueError, match="one layer per attention mechanism"):
        kerasrnn.AttentionCell(
            gru,
            [attention, kerasrnn.BahdanauAttention(3)],
            kerasrnn.RunThenAttend(),
            [keras.layers.Dense(3)],
        )
    two = kerasrnn.AttentionCell(gru, [attention, kerasrnn.BahdanauAttention(3)])
    with pytest.raises(ValueError, match="`keys` must be a list with one entry per"):
        two.prepare_memory(np.ones((2, 5, 4), "float32"))
    memory = two.prepare_memory([np.ones((2, 5, 4), "float32")] * 2)
    with pytest.raises(ValueError, match="2 attention mechanism.*got 1 memories"):
        two.step(np.ones((2, 3), "float32"), two.get_initial_state(2), memory[:1])
    with pytest.raises(ValueError, match="needs 1 state tensors"):
        two.step(np.ones((2, 3), "float32"), [], memory)
    repeated = kerasrnn.attention.repeat_memory(memory, 3)
    assert all(tuple(m.values.shape) == (6, 5, 4) for m in repeated)


@pytest.mark.large
@pytest.mark.parametrize("mechanism", ["monotonic", "coverage"])
def test_stateful_attention_under_greedy_and_beam_search(mechanism):
    """The [batch, Tk] attention states are repeated and reordered with the beams like
    any state; a beam of one is greedy search."""
    keras.utils.set_random_seed(0)
    if mechanism == "monotonic":
        attention = BahdanauMonotonicAttention(6, mode="parallel", score_bias_init=-0.5)
    else:
        attention = kerasrnn.BahdanauAttention(6, coverage=True)
    cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(8), attention, kerasrnn.RunThenAttend())
    embed, readout = keras.layers.Embedding(9, 4), keras.layers.Dense(9)
    source = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    memory = cell.prepare_memory(source, mask=np.array([[1] * 5, [1, 1, 1, 0, 0]], bool))
    states = cell.get_initial_state(batch_size=2)

    def step_fn(memory):
        def step(tokens, states):
            output, states, _ = cell.step(embed(tokens), states, memory)
            return readout(output), states

        return step

    start = ops.convert_to_tensor([1, 1])
    step_fn(memory)(start, states)  # builds the layers outside JAX's loops
    greedy = kerasrnn.decoding.greedy_search(step_fn(memory), start, states, 6, end_token=2)
    beam = kerasrnn.decoding.beam_search(
        step_fn(memory.repeat(3)), start, states, 6, end_token=2, beam_size=3
    )
    one = kerasrnn.decoding.beam_search(
        step_fn(memory.repeat(1)),
        start,
        states,
        6,
        end_token=2,
        beam_size=1,
        scorer=kerasrnn.decoding.Scorer(None),
    )
    tokens = lambda result: _np(result.tokens).reshape(2, -1)[:, :6]  # noqa: E731
    np.testing.assert_array_equal(tokens(one), tokens(greedy))
    # Each kept hypothesis, rerun token by token from the start (teacher forcing), has
    # the log-probability beam search gave it: the attention states followed the beams.
    hypotheses = _np(beam.tokens).astype("int32")
    lengths = _np(beam.lengths)
    for n in range(hypotheses.shape[1]):
        state, previous, total = cell.get_initial_state(batch_size=2), start, np.zeros(2)
        for t in range(6):
            logits, state = step_fn(memory)(previous, state)
            z = _np(logits).astype("float64")
            log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
            total += np.where(t < lengths[:, n], log_p[[0, 1], hypotheses[:, n, t]], 0.0)
            previous = ops.convert_to_tensor(hypotheses[:, n, t].astype("int32"))
        np.testing.assert_allclose(total, _np(beam.log_probs)[:, n], atol=1e-4)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel is TF-only")
@pytest.mark.parametrize("name", ["multi", "coverage_output"])
def test_saved_model_with_stateful_attention(tmp_path, name):
    import tensorflow as tf

    model, data = _model(name)
    expected = model.predict(data, verbose=0)
    model.export(str(tmp_path / "saved"), verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "saved"))
    served = reloaded.serve(data)
    for got, want in zip(served, expected):
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)
