"""AttentionCell / AttentiveRNN against NumPy, step by step, masked, saved, and learning."""

import functools

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.attention import scores

B, TQ, TK, DIN, DM, UNITS = 3, 5, 6, 4, 7, 8

# Detaches on torch, where np.asarray refuses a tensor that requires grad.
numpy = ops.convert_to_numpy


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, TQ, DIN)).astype("float32")
    memory = rng.normal(size=(B, TK, DM)).astype("float32")
    source_mask = np.ones((B, TK), bool)
    source_mask[1, 3:] = False
    target_mask = np.ones((B, TQ), bool)
    target_mask[2, 3:] = False
    return x, memory, source_mask, target_mask


def _weights(layer):
    return {v.path.split("/")[-1]: np.asarray(v.numpy(), np.float64) for v in layer.weights}


def _np_attention(query, memory, mask, w):
    """Bahdanau additive attention for one query [B, d]."""
    e = np.tanh((query @ w["query_kernel"])[:, None] + memory @ w["key_kernel"])
    e = (e @ w["attention_v"])[..., 0]
    e = np.where(mask, e, -np.inf)
    a = np.exp(e - e.max(-1, keepdims=True)) * mask
    a = a / a.sum(-1, keepdims=True)
    return np.einsum("bk,bkd->bd", a, memory), a


def _np_decoder(mode, cell, x, memory, source_mask, target_mask, feeding=True, inner=None):
    """The textbook equations (no Keras involved) with a simple tanh RNN inside, or
    `inner`: a NumPy step ``(input, states) -> (h, states)`` and its initial states."""
    w = _weights(cell)
    if inner is None:
        W, U, b = w["kernel"], w["recurrent_kernel"], w["bias"]

        def simple(inp, states):
            h = np.tanh(inp @ W + states[0] @ U + b)
            return h, [h]

        inner = (simple, [np.zeros((B, UNITS))])
    step, states = inner
    s = np.zeros((B, UNITS))  # the inner cell's output h
    feed = np.zeros((B, UNITS))
    outputs, alignments = [], []
    for t in range(TQ):
        if mode == "bahdanau":
            c, a = _np_attention(s, memory, source_mask, w)  # query s_{i-1}
            new_s, new_states = step(np.concatenate([x[:, t], c], -1), states)
            out = np.concatenate([new_s, c], -1)
        else:
            inp = np.concatenate([x[:, t], feed], -1) if feeding else x[:, t]
            new_s, new_states = step(inp, states)
            c, a = _np_attention(new_s, memory, source_mask, w)  # query h_t
            out = np.tanh(np.concatenate([c, new_s], -1) @ w["attention_kernel"])
        keep = target_mask[:, t : t + 1]
        s = np.where(keep, new_s, s)  # padded steps keep the state
        states = tree_where(keep, new_states, states)
        if mode == "luong":
            feed = np.where(keep, out, feed)
        outputs.append(np.where(keep, out, 0.0))
        alignments.append(np.where(keep, a, 0.0))
    return np.stack(outputs, 1), np.stack(alignments, 1), s


def tree_where(keep, new, old):
    if isinstance(new, (list, tuple)):
        return [tree_where(keep, n, o) for n, o in zip(new, old)]
    return np.where(keep, new, old)


def _np_inner(cell):
    """A NumPy step and zero initial states for a Keras or kerasrnn cell, or a
    StackedRNNCells of them (tests/cells/reference.py's equations)."""
    from tests.cells import reference

    cells = cell.cells if isinstance(cell, keras.layers.StackedRNNCells) else [cell]
    steps, states = [], []
    for one in cells:
        config = {"coupled": False, "forget_gate": True, "peephole": False, **one.get_config()}
        step = reference.STEPS[type(one).__name__]
        steps.append(functools.partial(step, reference.weights_by_name(one), config))
        sizes = one.state_size if isinstance(one.state_size, (list, tuple)) else [one.state_size]
        states.append([np.zeros((B, size)) for size in sizes])

    def stacked(inp, states):
        new_states = []
        for step, state in zip(steps, states):
            inp, state = step(inp, state)
            new_states.append(state)
        return inp, new_states

    return stacked, states


def _order(mode, feeding=True):
    """The step order of each paper: attend-then-run (Bahdanau), run-then-attend (Luong)."""
    if mode == "bahdanau":
        return kerasrnn.AttendThenRun()
    return kerasrnn.RunThenAttend(input_feeding=feeding)


def _cell(mode, feeding=True, inner=None):
    return kerasrnn.AttentionCell(
        inner or kerasrnn.SimpleRNNCell(UNITS),
        kerasrnn.BahdanauAttention(5),
        _order(mode, feeding),
    )


@pytest.mark.parametrize("mode,feeding", [("bahdanau", True), ("luong", True), ("luong", False)])
def test_decoder_matches_numpy_equations(mode, feeding):
    x, memory, source_mask, target_mask = _data()
    cell = _cell(mode, feeding)
    decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True, return_state=True)
    outputs, alignments, *states = decoder(x, memory, mask=target_mask, memory_mask=source_mask)
    expected, expected_alignments, final = _np_decoder(
        mode, cell, x, memory, source_mask, target_mask, feeding
    )
    np.testing.assert_allclose(numpy(outputs), expected, atol=1e-5)
    np.testing.assert_allclose(numpy(alignments), expected_alignments, atol=1e-5)
    np.testing.assert_allclose(numpy(states[0]), final, atol=1e-5)
    assert tuple(alignments.shape) == (B, TQ, TK)
    assert np.all(numpy(alignments)[1, :, 3:] == 0.0)  # padded keys: zero weight


def test_padded_decoder_steps_do_not_change_states():
    x, memory, source_mask, target_mask = _data()
    decoder = kerasrnn.AttentiveRNN(_cell("luong"), return_state=True)
    _, *padded = decoder(x, memory, mask=target_mask, memory_mask=source_mask)
    _, *cut = decoder(x[:, :3], memory, memory_mask=source_mask)
    for a, b in zip(padded, cut):
        np.testing.assert_allclose(numpy(a)[2], numpy(b)[2], atol=1e-6)


def test_luong_sequence_attention_equals_step_by_step_in_the_cell():
    """Without input feeding, h_t does not depend on attention: attending all h_t at once
    (teacher forcing) must give what the cell computed step by step."""
    x, memory, source_mask, _ = _data()
    attention = kerasrnn.LuongAttention("general")
    cell = kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(UNITS), attention, kerasrnn.RunThenAttend(input_feeding=False)
    )
    decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True)
    outputs, alignments = decoder(x, memory, memory_mask=source_mask)
    h = keras.layers.RNN(cell.cell, return_sequences=True)(x)  # the same LSTM weights
    context, weights = attention(h, memory, mask=source_mask, return_attention_scores=True)
    attentional = ops.tanh(
        ops.matmul(ops.concatenate([context, h], -1), cell.projection.kernels[0])
    )
    np.testing.assert_allclose(numpy(alignments), numpy(weights), atol=1e-5)
    np.testing.assert_allclose(numpy(outputs), numpy(attentional), atol=1e-5)


@pytest.mark.parametrize("mode", ["bahdanau", "luong"])
def test_step_api_equals_teacher_forced_pass(mode):
    """What a greedy or beam decoder does: prepare the memory once, then step."""
    x, memory, source_mask, _ = _data()
    encoder_states = [np.random.default_rng(1).normal(size=(B, UNITS)).astype("float32")] * 2
    inner = kerasrnn.LSTMCell(UNITS)
    decoder = kerasrnn.AttentiveRNN(_cell(mode, inner=inner), return_alignments=True)
    outputs, alignments = decoder(x, memory, initial_state=encoder_states, memory_mask=source_mask)
    prepared = decoder.prepare_memory(memory, mask=source_mask)
    states = decoder.initial_state_from(encoder_states)
    for t in range(TQ):
        out, states, align = decoder.step(x[:, t], states, prepared)
        np.testing.assert_allclose(numpy(out), numpy(outputs)[:, t], atol=1e-5)
        np.testing.assert_allclose(numpy(align), numpy(alignments)[:, t], atol=1e-6)
    # beam layout: each source repeated, rows line up with the unrepeated ones
    beam = decoder.prepare_memory(memory, mask=source_mask).repeat(2)
    states = [np.repeat(numpy(s), 2, axis=0) for s in decoder.initial_state_from(encoder_states)]
    out, _, _ = decoder.step(np.repeat(x[:, 0], 2, axis=0), states, beam)
    np.testing.assert_allclose(numpy(out)[1::2], numpy(outputs)[:, 0], atol=1e-5)


def test_key_projection_runs_once_per_call(monkeypatch):
    x, memory, source_mask, _ = _data()
    decoder = kerasrnn.AttentiveRNN(_cell("bahdanau"))
    decoder(x, memory)
    counts = {"prepare": 0, "score": 0}
    prepare, call = scores.AdditiveScore.prepare_keys, scores.AdditiveScore.call

    def counting_prepare(self, keys):
        counts["prepare"] += 1
        return prepare(self, keys)

    def counting_call(self, query, prepared, **kwargs):
        counts["score"] += 1
        return call(self, query, prepared, **kwargs)

    monkeypatch.setattr(scores.AdditiveScore, "prepare_keys", counting_prepare)
    monkeypatch.setattr(scores.AdditiveScore, "call", counting_call)
    decoder(x, memory, memory_mask=source_mask)
    assert counts["prepare"] == 1 and counts["score"] >= 1


def test_keras_cells_and_stacks_can_be_wrapped():
    x, memory, source_mask, target_mask = _data()
    factories = (
        ("bahdanau", lambda: keras.layers.GRUCell(UNITS)),
        ("luong", lambda: keras.layers.LSTMCell(UNITS)),
        (
            "luong",
            lambda: keras.layers.StackedRNNCells([kerasrnn.GRUCell(6), kerasrnn.LSTMCell(UNITS)]),
        ),
        (
            "bahdanau",
            lambda: keras.layers.StackedRNNCells([kerasrnn.GRUCell(6), kerasrnn.LSTMCell(UNITS)]),
        ),
    )
    for mode, make in factories:
        cell = _cell(mode, inner=make())
        out = kerasrnn.AttentiveRNN(cell)(x, memory, mask=target_mask, memory_mask=source_mask)
        want, _, _ = _np_decoder(
            mode, cell, x, memory, source_mask, target_mask, inner=_np_inner(cell.cell)
        )
        np.testing.assert_allclose(numpy(out), want, atol=1e-5, err_msg=f"{mode} {cell.cell}")


def test_plain_keras_rnn_with_bound_memory():
    x, memory, source_mask, _ = _data()
    cell = _cell("luong")
    decoder = kerasrnn.AttentiveRNN(cell)
    expected = decoder(x, memory, memory_mask=source_mask)
    bound = cell.with_memory(cell.prepare_memory(memory, mask=source_mask))
    out = keras.layers.RNN(bound, return_sequences=True)(x)
    np.testing.assert_allclose(numpy(out), numpy(expected), atol=1e-6)
    # the cell call takes the memory as an argument, too
    states = cell.get_initial_state(batch_size=B)
    prepared = cell.prepare_memory(memory, mask=source_mask)
    first, _ = cell(x[:, 0], states, memory=prepared)
    np.testing.assert_allclose(numpy(first), numpy(expected)[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="no encoder memory"):
        keras.layers.RNN(cell, return_sequences=True)(x)


def test_the_cell_draws_and_resets_the_masks_of_a_loop():
    """`draw_dropout_masks` draws the wrapped cell's masks once (the input mask as wide
    as what the wrapped cell reads, the recurrent mask as its state); each step of a
    loop then uses the same; `reset_dropout_masks` forgets them."""
    x, memory, _, _ = _data()
    inner = kerasrnn.GRUCell(UNITS, dropout=0.5, recurrent_dropout=0.5, seed=3)
    cell = _cell("bahdanau", inner=inner)
    prepared = cell.prepare_memory(memory)
    states = cell.get_initial_state(batch_size=B)
    cell.draw_dropout_masks(x[:, 0], states)
    mask, recurrent = numpy(inner._dropout_mask), numpy(inner._recurrent_dropout_mask)
    assert mask.shape == (B, DIN + DM) and recurrent.shape == (B, UNITS)
    assert set(np.unique(mask)) == {0.0, 2.0} and set(np.unique(recurrent)) == {0.0, 2.0}
    for t in range(2):
        _, states, _ = cell.step(x[:, t], states, prepared, training=True)
        np.testing.assert_array_equal(numpy(inner._dropout_mask), mask)
        np.testing.assert_array_equal(numpy(inner._recurrent_dropout_mask), recurrent)
    cell.reset_dropout_masks()
    assert inner._dropout_mask is None and inner._recurrent_dropout_mask is None


def test_dropout_masks_are_fixed_and_only_in_training():
    x, memory, _, _ = _data()
    inner = kerasrnn.GRUCell(UNITS, dropout=0.5, recurrent_dropout=0.5, seed=3)
    decoder = kerasrnn.AttentiveRNN(_cell("bahdanau", inner=inner))
    a = numpy(decoder(x, memory, training=False))
    np.testing.assert_allclose(a, numpy(decoder(x, memory, training=False)))
    b = numpy(decoder(x, memory, training=True))
    assert np.all(np.isfinite(b)) and not np.allclose(a, b)
    assert inner._dropout_mask is None  # masks are reset after each call


def _translator(mode="bahdanau", bridge=True):
    """A small functional encoder-decoder: masks flow from the Embedding layers."""
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(12, 6, mask_zero=True)(src)
    sequence, *states = keras.layers.Bidirectional(
        keras.layers.RNN(kerasrnn.LSTMCell(4), return_sequences=True, return_state=True)
    )(x)
    if not bridge:
        states = kerasrnn.merge_bidirectional_states(states)  # 2 x 4 = the decoder's 8
    y = keras.layers.Embedding(12, 6, mask_zero=True)(tgt)
    attention = (
        kerasrnn.BahdanauAttention(5) if mode == "bahdanau" else kerasrnn.LuongAttention("dot")
    )
    cell = kerasrnn.AttentionCell(kerasrnn.LSTMCell(UNITS), attention, _order(mode))
    outputs, alignments = kerasrnn.AttentiveRNN(cell, return_alignments=True, bridge=bridge)(
        y, sequence, initial_state=states
    )
    return keras.Model([src, tgt], [keras.layers.Dense(12)(outputs), alignments])


def _token_batch():
    rng = np.random.default_rng(2)
    source = rng.integers(1, 12, (B, TK)).astype("int32")
    source[1, 4:] = 0
    target = rng.integers(1, 12, (B, TQ)).astype("int32")
    target[2, 3:] = 0
    return source, target


@pytest.mark.large
@pytest.mark.parametrize("mode,bridge", [("bahdanau", True), ("luong", False)])
def test_keras_file_round_trip(tmp_path, mode, bridge):
    model = _translator(mode, bridge)
    source, target = _token_batch()
    logits, alignments = model.predict([source, target], verbose=0)
    assert np.all(alignments[1, :, 4:] == 0) and np.all(alignments[2, 3:] == 0)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    again, again_alignments = loaded.predict([source, target], verbose=0)
    np.testing.assert_array_equal(again, logits)
    np.testing.assert_array_equal(again_alignments, alignments)


def test_serialised_names_and_import_paths_are_kept():
    """The attentive cell's modules are split by concept; the names a `.keras` file
    records, and the imports from `kerasrnn.cells.attentive`, stay what they were."""
    from kerasrnn.cells import attentive

    names = {
        kerasrnn.AttentionCell: "kerasrnn>AttentionCell",
        kerasrnn.AttentiveRNN: "kerasrnn>AttentiveRNN",
        kerasrnn.AttendThenRun: "kerasrnn>AttendThenRun",
        kerasrnn.RunThenAttend: "kerasrnn>RunThenAttend",
        kerasrnn.ConcatProjection: "kerasrnn>ConcatProjection",
        kerasrnn.LuongProjection: "kerasrnn>LuongProjection",
    }
    for cls, name in names.items():
        assert keras.saving.get_registered_name(cls) == name
        assert keras.saving.get_registered_object(name) is cls
    for name in ("AttentionCell", "AttentiveRNN", "BoundAttentionCell"):
        assert getattr(attentive, name) is getattr(kerasrnn, name)
    assert attentive.merge_bidirectional_states is kerasrnn.merge_bidirectional_states


def test_keras_file_naming_the_former_module_loads(tmp_path):
    """A `.keras` file whose config names `kerasrnn.cells.attentive` as the module of
    every attentive class (as files written before the split do) loads to the same
    outputs."""
    import json
    import zipfile

    model = _translator("luong", bridge=True)
    source, target = _token_batch()
    logits, alignments = model.predict([source, target], verbose=0)
    model.save(tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    text = files["config.json"].decode("utf-8")
    moved = [f'"module": "kerasrnn.cells.{m}"' for m in ("attention_cell", "attentive")]
    assert moved[0] in text  # the cell's config names its module
    files["config.json"] = text.replace(moved[0], moved[1]).encode("utf-8")
    assert moved[0] not in files["config.json"].decode("utf-8")
    json.loads(files["config.json"])
    with zipfile.ZipFile(tmp_path / "former.keras", "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    loaded = keras.models.load_model(tmp_path / "former.keras")
    again, again_alignments = loaded.predict([source, target], verbose=0)
    np.testing.assert_array_equal(again, logits)
    np.testing.assert_array_equal(again_alignments, alignments)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow-only"
)
def test_saved_model_reload(tmp_path):
    import tensorflow as tf

    model = _translator("luong", bridge=True)
    source, target = _token_batch()
    logits, alignments = model.predict([source, target], verbose=0)
    model.export(str(tmp_path / "saved"), verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "saved"))  # keep it alive while serving
    served = reloaded.serve([source, target])
    np.testing.assert_allclose(numpy(served[0]), logits, atol=1e-6)
    np.testing.assert_allclose(numpy(served[1]), alignments, atol=1e-6)


def test_initial_state_from_bidirectional_encoder():
    x, memory, _, _ = _data()
    rng = np.random.default_rng(4)
    forward = [rng.normal(size=(B, 4)).astype("float32") for _ in range(2)]
    backward = [rng.normal(size=(B, 4)).astype("float32") for _ in range(2)]
    cell = _cell("luong", inner=kerasrnn.LSTMCell(UNITS))
    merged = kerasrnn.merge_bidirectional_states(forward + backward)
    states = cell.initial_state_from(merged)
    np.testing.assert_array_equal(numpy(states[0]), np.concatenate([forward[0], backward[0]], -1))
    assert len(states) == 3 and not np.any(numpy(states[2]))  # h~_0 = 0
    decoder = kerasrnn.AttentiveRNN(cell, return_state=True)
    _, h, c, _ = decoder(x[:, :1], memory, initial_state=merged)
    _, h0, c0, _ = decoder(x[:, :1], memory)
    assert not np.allclose(numpy(c), numpy(c0))  # the given state was used
    with pytest.raises(ValueError, match="initial_state"):
        cell.initial_state_from(forward[:1])
    with pytest.raises(ValueError, match="initial_state"):
        cell.initial_state_from(forward)  # width 4, the cell needs 8


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="`step_order`"):
        kerasrnn.AttentionCell(kerasrnn.GRUCell(4), kerasrnn.BahdanauAttention(4), "luong")
    with pytest.raises(TypeError, match="`projection`"):
        kerasrnn.AttentionCell(
            kerasrnn.GRUCell(4), kerasrnn.BahdanauAttention(4), projection="tanh"
        )
    with pytest.raises(ValueError, match="`attention`"):
        kerasrnn.AttentionCell(kerasrnn.GRUCell(4), "additive")
    with pytest.raises(ValueError, match="`cell`"):
        kerasrnn.AttentionCell(keras.layers.Dense(4), kerasrnn.BahdanauAttention(4))
    with pytest.raises(ValueError, match="`units`"):
        kerasrnn.LuongProjection(0)
    with pytest.raises(ValueError, match="`cell`"):
        kerasrnn.AttentiveRNN(kerasrnn.GRUCell(4))
    with pytest.raises(ValueError, match="return_sequences"):
        kerasrnn.AttentiveRNN(_cell("luong"), return_sequences=False, return_alignments=True)
    x, memory, _, _ = _data()
    with pytest.raises(ValueError, match="`mask`"):
        kerasrnn.AttentiveRNN(_cell("luong"))(x, memory, memory_mask=np.ones((B, 2), bool))
    with pytest.raises(ValueError, match="memory"):
        _cell("luong").step(x[:, 0], [np.zeros((B, UNITS))] * 2, None)


@pytest.mark.large
@pytest.mark.learns
def test_attention_learns_to_reverse_digit_strings():
    """A smaller run of `bench/attention.py learning` (strings of 3-8 digits here, 5-15
    there): >= 95% exact match with attention, markedly worse without."""
    from bench.attention import build_reverser, exact_match, reversal_data

    rng = np.random.default_rng(0)
    train = reversal_data(2000, rng, 3, 8)
    held_out = reversal_data(500, rng, 3, 8)
    scores_by_model = {}
    for attention in ("additive", None):
        keras.utils.set_random_seed(0)
        model = build_reverser(attention, units=32)
        # 6 epochs: with attention 0.998 / 0.994 / 1.0 exact match, without 0.42 / 0.52 /
        # 0.54 (data and weights seeded 0 / 1 / 2)
        model.fit([train[0], train[1]], train[2], batch_size=32, epochs=6, verbose=0)
        scores_by_model[attention] = exact_match(model, held_out)
    print(
        f"reverse 3-8 digits, exact match: with attention {scores_by_model['additive']:.3f}, "
        f"without {scores_by_model[None]:.3f}"
    )
    assert scores_by_model["additive"] >= 0.95
    assert scores_by_model[None] <= scores_by_model["additive"] - 0.25
