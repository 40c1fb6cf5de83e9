"""Seq2Seq: the teacher-forced pass against the step function, generate() against NumPy
loops and teacher-forced log-probabilities, `.keras` round trips, options and errors."""

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.seq2seq import RNNEncoder, Seq2Seq, Seq2SeqBackbone

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0], [4, 5, 6, 7, 8]], "int32")
TARGET_IN = np.array([[2, 4, 5, 6], [2, 7, 0, 0], [2, 8, 9, 4]], "int32")
TARGET_OUT = np.array([[4, 5, 6, 3], [7, 3, 0, 0], [8, 9, 4, 3]], "int32")


def np_(x):
    return ops.convert_to_numpy(x)


TASK_OPTIONS = (
    "start_id",
    "end_id",
    "max_source_length",
    "max_target_length",
    "scheduled_sampling",
)


def seq2seq(**kwargs):
    """Seq2Seq(Seq2SeqBackbone(12, 10, ...), ...), each keyword to its owner."""
    task = {key: kwargs.pop(key) for key in TASK_OPTIONS if key in kwargs}
    return Seq2Seq(Seq2SeqBackbone(12, 10, **kwargs), **task)


def luong_model(**kwargs):
    cell = kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(6), kerasrnn.LuongAttention("general"), kerasrnn.RunThenAttend()
    )
    return seq2seq(
        encoder=RNNEncoder(kerasrnn.LSTMCell(3)), decoder_cell=cell, embedding_dim=5, **kwargs
    )


def bahdanau_model(**kwargs):
    return seq2seq(embedding_dim=5, units=6, **kwargs)


MODELS = {
    "bahdanau_dense": lambda: bahdanau_model(),
    "bahdanau_zeros": lambda: bahdanau_model(bridge="zeros"),
    "luong_copy": lambda: luong_model(bridge="copy"),
}


def step_by_step(model, source, target_in):
    """Logits and alignments (batch, Ty, ...) from `encode` + `step_fn` fed `target_in`."""
    encoded = model.encode(source)
    step = model.step_fn(encoded)
    states, logits, alignments = encoded.states, [], []
    for t in range(target_in.shape[1]):
        out, states, align = step(target_in[:, t], states)
        logits.append(np_(out))
        alignments.append(np_(align))
    return np.stack(logits, 1), np.stack(alignments, 1)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_teacher_forced_pass_equals_the_step_function(name):
    model = MODELS[name]()
    logits = np_(model({"source": SOURCE, "target_in": TARGET_IN}))
    assert logits.shape == (3, 4, 10)
    alignments = np_(model.alignments({"source": SOURCE, "target_in": TARGET_IN}))
    stepped, stepped_alignments = step_by_step(model, SOURCE, TARGET_IN)
    real = TARGET_IN != 0
    # the same logits, except that generation never produces [PAD] (id 0)
    np.testing.assert_allclose(logits[real][:, 1:], stepped[real][:, 1:], atol=1e-5)
    assert (stepped[..., 0] <= -1e9).all()
    np.testing.assert_allclose(alignments[real], stepped_alignments[real], atol=1e-6)
    # padded source positions get no attention; padded target steps no alignments
    np.testing.assert_array_equal(
        alignments[:, :, :][np.broadcast_to((SOURCE == 0)[:, None, :], alignments.shape)], 0.0
    )
    np.testing.assert_array_equal(alignments[~real], 0.0)
    np.testing.assert_allclose(alignments[real].sum(-1), 1.0, atol=1e-5)


def greedy_reference(model, source, max_length):
    """Argmax decoding written as a NumPy loop over `step_fn`."""
    encoded = model.encode(source)
    step = model.step_fn(encoded)
    batch = source.shape[0]
    tokens = np.zeros((batch, max_length), "int32")
    alignments = np.zeros((batch, max_length, source.shape[1]), "float32")
    log_probs, done = np.zeros(batch), np.zeros(batch, bool)
    last, states = np.full(batch, model.start_id, "int32"), encoded.states
    for t in range(max_length):
        logits, states, align = step(last, states)
        logits = np_(logits).astype("float64")
        assert (logits[:, model.pad_id] < -1e8).all()  # padding is never generated
        log_p = (
            logits
            - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
            - logits.max(1, keepdims=True)
        )
        best = log_p.argmax(1)
        for b in range(batch):
            if not done[b]:
                tokens[b, t] = best[b]
                alignments[b, t] = np_(align)[b]
                log_probs[b] += log_p[b, best[b]]
                done[b] = best[b] == model.end_id
        last = best.astype("int32")
    return tokens, log_probs, alignments


def test_greedy_matches_a_numpy_loop():
    model = bahdanau_model()
    result = model.generate(SOURCE, max_length=6)
    tokens, log_probs, alignments = greedy_reference(model, SOURCE, 6)
    assert tuple(result.tokens.shape) == (3, 1, 6)
    np.testing.assert_array_equal(np_(result.tokens)[:, 0], tokens)
    np.testing.assert_allclose(np_(result.log_probs)[:, 0], log_probs, rtol=1e-5)
    np.testing.assert_allclose(np_(result.alignments)[:, 0], alignments, atol=1e-6)


def teacher_forced_log_probs(model, source, tokens, lengths):
    """log p(y | x) of each hypothesis from the teacher-forced logits."""
    flat = tokens.reshape(-1, tokens.shape[-1])
    lengths = lengths.reshape(-1)
    target_in = np.concatenate([np.full((len(flat), 1), model.start_id), flat[:, :-1]], 1)
    target_in = np.where(np.arange(flat.shape[1]) < lengths[:, None], target_in, 0)
    repeated = np.repeat(source, tokens.shape[1], axis=0)
    logits = np_(model({"source": repeated, "target_in": target_in.astype("int32")}))
    logits = logits.astype("float64")
    logits[..., model.pad_id] = -np.inf  # generation never produces padding
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_p, flat[..., None].astype("int64"), -1)[..., 0]
    real = np.arange(flat.shape[1]) < lengths[:, None]
    return np.where(real, picked, 0.0).sum(1).reshape(tokens.shape[:2])


@pytest.mark.large
@pytest.mark.parametrize("name", ["bahdanau_dense", "luong_copy"])
def test_beam_search_hypotheses_score_as_the_model_says(name):
    model = MODELS[name]()
    beam = kerasrnn.decoding.BeamSearch(3, n_best=2, scorer=kerasrnn.decoding.Scorer(None))
    result = model.generate(SOURCE, beam, max_length=6)
    tokens, lengths = np_(result.tokens), np_(result.lengths)
    assert tokens.shape == (3, 2, 6) and np_(result.scores).shape == (3, 2)
    assert np_(result.alignments).shape == (3, 2, 6, 5)
    # tiling the memory wrongly would score each hypothesis against another source
    expected = teacher_forced_log_probs(model, SOURCE, tokens, lengths)
    np.testing.assert_allclose(np_(result.log_probs), expected, rtol=1e-4, atol=1e-4)
    assert (np.diff(np_(result.scores), axis=1) <= 1e-6).all()
    alignments = np_(result.alignments)
    for b in range(3):
        for k in range(2):
            length = lengths[b, k]
            np.testing.assert_allclose(alignments[b, k, :length].sum(-1), 1.0, atol=1e-5)
            np.testing.assert_array_equal(alignments[b, k, length:], 0.0)
            np.testing.assert_array_equal(alignments[b, k, :, SOURCE[b] == 0], 0.0)


@pytest.mark.large
def test_sampling_repeats_with_a_seed_and_scores_are_model_log_probs():
    model = bahdanau_model()
    sampling = kerasrnn.decoding.RandomSampling(temperature=2.0, seed=3)
    a = model.generate(SOURCE, sampling, max_length=6)
    b = model.generate(SOURCE, sampling, max_length=6)
    np.testing.assert_array_equal(np_(a.tokens), np_(b.tokens))
    assert tuple(a.tokens.shape) == (3, 1, 6)
    expected = teacher_forced_log_probs(model, SOURCE, np_(a.tokens), np_(a.lengths))
    np.testing.assert_allclose(np_(a.log_probs), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.large
def test_keras_file_round_trip_gives_identical_generation(tmp_path):
    model = luong_model(dropout=0.1, max_source_length=8)
    model.compile()
    model.fit({"source": SOURCE, "target_in": TARGET_IN}, TARGET_OUT, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded, Seq2Seq) and loaded.max_source_length == 8
    assert loaded.optimizer is not None and isinstance(
        loaded.loss, kerasrnn.losses.SequenceCrossEntropy
    )
    for strategy in ("greedy", "beam"):
        a = model.generate(SOURCE, strategy, max_length=5)
        b = loaded.generate(SOURCE, strategy, max_length=5)
        np.testing.assert_array_equal(np_(a.tokens), np_(b.tokens))
        np.testing.assert_allclose(np_(a.scores), np_(b.scores), rtol=1e-6)
        np.testing.assert_allclose(np_(a.alignments), np_(b.alignments), atol=1e-7)
    # the optimizer state came back too (training goes on from it)
    assert int(np_(loaded.optimizer.iterations)) == 1


def test_tied_embeddings_read_out_through_the_embedding_matrix():
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(6), kerasrnn.BahdanauAttention(4), projection=kerasrnn.LuongProjection(5)
    )
    model = seq2seq(decoder_cell=cell, embedding_dim=5, tie_embeddings=True)
    logits = np_(model({"source": SOURCE, "target_in": TARGET_IN}))
    assert model.backbone.readout is None
    names = [w.path for w in model.trainable_weights]
    assert not any("readout/kernel" in n for n in names)
    # logits = o E^T + b: moving the embedding moves the readout
    embeddings = model.backbone.target_embedding.embeddings
    embeddings.assign(embeddings * 2.0)
    doubled = np_(model({"source": SOURCE, "target_in": TARGET_IN}))
    assert not np.allclose(logits, doubled)
    with pytest.raises(ValueError, match=r"projection=kerasrnn.LuongProjection\(5\)"):
        bahdanau_model(tie_embeddings=True)({"source": SOURCE, "target_in": TARGET_IN})


def test_over_long_sources_are_truncated():
    model = bahdanau_model(max_source_length=3)
    long = model.generate(SOURCE, max_length=4)
    short = model.generate(SOURCE[:, :3], max_length=4)
    np.testing.assert_array_equal(np_(long.tokens), np_(short.tokens))
    assert np_(long.alignments).shape[-1] == 3


@pytest.mark.large
def test_fit_learns_and_compile_defaults():
    model = bahdanau_model()
    model.compile(optimizer=keras.optimizers.Adam(0.03))
    assert isinstance(model.loss, kerasrnn.losses.SequenceCrossEntropy)
    history = model.fit(
        {"source": SOURCE, "target_in": TARGET_IN}, TARGET_OUT, epochs=40, verbose=0
    )
    assert history.history["accuracy"][-1] == 1.0
    result = model.generate(SOURCE, kerasrnn.decoding.BeamSearch(2), max_length=5)
    best = np_(result.tokens)[:, 0]
    np.testing.assert_array_equal(best[:, :4], TARGET_OUT)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda m: m.generate(np.array([5, 6, 7])),
            r"`source` must be int ids of shape \(batch, source_length\); got shape \(3,\)",
        ),
        (
            lambda m: m.generate(np.array([[5, 60]])),
            r"`source` holds ids outside \[0, 12\).*same vocabulary",
        ),
        (
            lambda m: m.generate(SOURCE, "nucleus"),
            r"Unknown decoding strategy 'nucleus': use one of \['beam', 'greedy', 'sample'\]",
        ),
        (
            lambda m: m.generate(SOURCE, kerasrnn.decoding.BeamSearch(2, n_best=3)),
            r"`n_best` must be an integer in \[1, beam_size=2\].*raise beam_size",
        ),
        (lambda m: m.generate(SOURCE, max_length=0), "`max_length` must be an integer >= 1"),
        (lambda m: m({"source": SOURCE, "target": TARGET_IN}), r"missing \['target_in'\]"),
        (
            lambda m: m({"source": SOURCE, "target_in": TARGET_IN + 20}),
            r"`target_in` holds ids outside \[0, 10\)",
        ),
        (lambda m: m.step_fn(np.zeros(3)), "takes what `encode` returned"),
    ],
)
def test_bad_input_errors(call, message):
    model = bahdanau_model()
    with pytest.raises(ValueError, match=message):
        call(model)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"encoder": kerasrnn.GRUCell(4)}, "`encoder` must be a kerasrnn.seq2seq.RNNEncoder"),
        ({"decoder_cell": kerasrnn.GRUCell(4)}, "`decoder_cell` must be a kerasrnn.AttentionCell"),
        ({"bridge": "learned"}, "`bridge` must be one of"),
        ({"end_id": 10}, "`end_id`=10 is not a target id: target_vocab_size is 10"),
        ({"dropout": 1.0}, "`dropout` must be in"),
        (
            {"scheduled_sampling": "linear"},
            "`scheduled_sampling` must be None or a kerasrnn.seq2seq.ScheduledSampling",
        ),
        ({"max_source_length": 0}, "`max_source_length` must be an integer >= 1"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bahdanau_model(**kwargs)


def test_copy_bridge_width_mismatch():
    model = bahdanau_model(bridge="copy")  # encoder 2 x 6 wide, decoder 6
    with pytest.raises(ValueError, match=r"CopyBridge passes.*widths \[12\].*\[6\]"):
        model.build()


@pytest.mark.large
def test_generation_without_alignments_and_decoding_options():
    model = bahdanau_model()
    beam = kerasrnn.decoding.BeamSearch(2)
    plain = model.generate(SOURCE, beam, max_length=5, return_alignments=False)
    assert plain.alignments is None and tuple(plain.tokens.shape) == (3, 2, 5)
    with_them = model.generate(SOURCE, beam, max_length=5)
    np.testing.assert_array_equal(np_(plain.tokens), np_(with_them.tokens))
    # the strategy's constraints apply: no token before step 3 ends a sequence
    at_least_three = kerasrnn.decoding.Constraints(min_length=3)
    forced = model.generate(SOURCE, kerasrnn.decoding.GreedySearch(at_least_three), max_length=5)
    assert (np_(forced.lengths) >= 3).all()
