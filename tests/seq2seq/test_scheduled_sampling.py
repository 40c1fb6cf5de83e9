"""Scheduled sampling: the schedules, which tokens get fed (against a NumPy reference of
the step-wise rule), and training through `fit`."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.seq2seq import ScheduledSampling, Seq2Seq, Seq2SeqBackbone, sampling_probability

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0], [4, 5, 6, 7, 8], [3, 3, 0, 0, 0]], "int32")
TARGET_IN = np.array(
    [[2, 4, 5, 6, 7, 8], [2, 7, 0, 0, 0, 0], [2, 8, 9, 4, 4, 4], [2, 1, 1, 5, 0, 0]], "int32"
)


def np_(x):
    return ops.convert_to_numpy(x)


def test_schedules():
    assert float(np_(sampling_probability(123, "off", 0.5, 100))) == 0.0
    assert float(np_(sampling_probability(0, "constant", 0.3, 100))) == pytest.approx(0.3)
    for step, expected in [(0, 0.0), (50, 0.25), (100, 0.5), (400, 0.5)]:
        assert float(np_(sampling_probability(step, "linear", 0.5, 100))) == pytest.approx(expected)
    # Bengio et al.'s inverse sigmoid eps_i = k / (k + exp(i / k)), with k ln k = S
    steps = 1000
    k = [k for k in np.linspace(1.5, 1000, 2_000_000) if k * math.log(k) >= steps][0]
    for step in (0, 500, 1000, 3000):
        eps = k / (k + math.exp(step / k))
        got = float(np_(sampling_probability(step, "inverse_sigmoid", 0.8, steps)))
        assert got == pytest.approx(0.8 * (1 - eps), abs=1e-4)
    assert float(np_(sampling_probability(steps, "inverse_sigmoid", 0.8, steps))) == pytest.approx(
        0.4, abs=1e-5
    )
    with pytest.raises(ValueError, match="`steps` must be an integer >= 1"):
        sampling_probability(0, "linear", 0.5, 0)
    with pytest.raises(ValueError, match="`probability` must be in"):
        sampling_probability(0, "linear", 1.5, 10)
    with pytest.raises(ValueError, match="`mode` must be one of"):
        ScheduledSampling("linear", mode="beam")
    with pytest.raises(ValueError, match="`schedule` must be one of"):
        ScheduledSampling("always")


def model_with(sampling, embedding_dim=5, units=6, target_vocab_size=10, dropout=0.0):
    backbone = Seq2SeqBackbone(
        12, target_vocab_size, embedding_dim=embedding_dim, units=units, dropout=dropout
    )
    return Seq2Seq(backbone, scheduled_sampling=sampling)


def scheduled_pass(model, *args, **kwargs):
    return model.scheduled_sampling.decode(model.backbone, *args, **kwargs)


def reference_fed_tokens(logits, gold, coin, uniform, p, mode, pad_id=0):
    """The step-wise rule in NumPy: x_0 = y_0; for t > 0, x_t = own token from the
    logits of step t-1 where coin_t < p and y_t is not padding, else y_t."""
    batch, steps, vocab = logits.shape
    fed = gold.copy()
    for b in range(batch):
        for t in range(1, steps):
            if coin[b, t] < p and gold[b, t] != pad_id:
                z = logits[b, t - 1].astype("float64").copy()
                z[pad_id] = -np.inf
                if mode == "argmax":
                    fed[b, t] = int(np.argmax(z))
                else:
                    probs = np.exp(z - z.max())
                    probs /= probs.sum()
                    fed[b, t] = int(np.searchsorted(np.cumsum(probs), uniform[b, t], side="right"))
    return fed


@pytest.mark.parametrize("mode", ["sample", "argmax"])
def test_fed_tokens_match_a_numpy_reference(mode):
    model = model_with(ScheduledSampling("constant", 0.6, mode=mode))
    rng = np.random.default_rng(0)
    coin = rng.uniform(size=TARGET_IN.shape).astype("float32")
    uniform = rng.uniform(size=TARGET_IN.shape).astype("float32")
    logits, fed, alignments = scheduled_pass(
        model, SOURCE, TARGET_IN, probability=0.6, noise=(coin, uniform)
    )
    logits, fed = np_(logits), np_(fed)
    expected = reference_fed_tokens(logits, TARGET_IN, coin, uniform, 0.6, mode)
    np.testing.assert_array_equal(fed, expected)
    changed = (fed != TARGET_IN).sum()
    assert changed >= 3, "the draws above replace several gold tokens"
    # step-wise: each step's logits are the model's given the tokens actually fed
    teacher_forced = np_(model({"source": SOURCE, "target_in": fed}))
    real = TARGET_IN != 0
    np.testing.assert_allclose(logits[real], teacher_forced[real], atol=1e-5)
    np.testing.assert_allclose(
        np_(alignments)[real],
        np_(model.alignments({"source": SOURCE, "target_in": fed}))[real],
        atol=1e-6,
    )


def test_probability_zero_is_teacher_forcing_and_one_feeds_own_tokens():
    model = model_with(ScheduledSampling("constant", mode="argmax"))
    logits, fed, _ = scheduled_pass(model, SOURCE, TARGET_IN, probability=0.0)
    np.testing.assert_array_equal(np_(fed), TARGET_IN)
    teacher_forced = np_(model({"source": SOURCE, "target_in": TARGET_IN}))
    real = TARGET_IN != 0
    np.testing.assert_allclose(np_(logits)[real], teacher_forced[real], atol=1e-5)
    logits, fed, _ = scheduled_pass(model, SOURCE, TARGET_IN, probability=1.0)
    logits, fed = np_(logits), np_(fed)
    own = logits[:, :-1, 1:].argmax(-1) + 1
    np.testing.assert_array_equal(fed[:, 0], TARGET_IN[:, 0])
    np.testing.assert_array_equal(fed[:, 1:][real[:, 1:]], own[real[:, 1:]])
    np.testing.assert_array_equal(fed[~real], 0)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_probability_zero_in_training_is_the_teacher_forced_pass(dropout):
    """In training, the step-by-step loop at p = 0 computes the backbone's teacher-forced
    logits: the same embedding dropout, the same decoder-cell masks fixed across time
    steps and the same output dropout (with the random generators started alike, the
    very same masks)."""
    if dropout and keras.backend.backend() == "torch":
        pytest.skip(
            "torch's unseeded dropout draws from its global generator and lays the mask "
            "out in the input's memory order (time-major for the decoder's outputs): "
            "the same masks in distribution, not element for element"
        )
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(6, dropout=dropout, recurrent_dropout=dropout, seed=2),
        kerasrnn.BahdanauAttention(6),
    )
    backbone = Seq2SeqBackbone(12, 10, decoder_cell=cell, embedding_dim=6, units=6, dropout=dropout)
    backbone.build()
    start = [np_(v) for v in backbone.non_trainable_variables]  # the seed generators
    teacher_forced, alignments = backbone(SOURCE, TARGET_IN, training=True)
    for variable, value in zip(backbone.non_trainable_variables, start):
        variable.assign(value)
    sampling = ScheduledSampling("constant", 0.5, mode="argmax")
    logits, fed, sampled_alignments = sampling.decode(
        backbone, SOURCE, TARGET_IN, probability=0.0, training=True
    )
    np.testing.assert_array_equal(np_(fed), TARGET_IN)
    np.testing.assert_allclose(np_(logits), np_(teacher_forced), atol=1e-5)
    np.testing.assert_allclose(np_(sampled_alignments), np_(alignments), atol=1e-6)
    if dropout:  # (the dropout was on: not the inference pass)
        inference = np_(backbone(SOURCE, TARGET_IN, training=False)[0])
        assert np.abs(np_(logits) - inference).max() > 1e-3


def test_the_loop_runs_the_backbone_decoder_step():
    """Each step goes through the backbone's own `call_decoder_step`: a subclass that
    counts its calls and shifts its logits is seen in the scheduled-sampling pass."""
    calls = []

    class ShiftedBackbone(Seq2SeqBackbone):
        def call_decoder_step(self, *args, **kwargs):
            calls.append(1)
            logits, states, alignments = super().call_decoder_step(*args, **kwargs)
            return logits + 1.0, states, alignments

    base = Seq2SeqBackbone(12, 10, embedding_dim=5, units=6)
    shifted = ShiftedBackbone(12, 10, embedding_dim=5, units=6)
    base.build()
    shifted.build()
    shifted.set_weights(base.get_weights())
    sampling = ScheduledSampling("constant", 0.5)
    logits, _, _ = sampling.decode(shifted, SOURCE, TARGET_IN, probability=0.0)
    assert calls, "the loop did not call the backbone's decoder step"
    np.testing.assert_allclose(np_(logits), np_(base(SOURCE, TARGET_IN)[0]) + 1.0, atol=1e-5)


def test_sampled_tokens_follow_the_model_distribution():
    """Over many draws, the own tokens fed at step 1 are distributed as softmax(logits_0)
    (without [PAD])."""
    model = model_with(
        ScheduledSampling("constant", 1.0), embedding_dim=4, units=4, target_vocab_size=6
    )
    source = np.repeat(SOURCE[:1], 4000, axis=0)
    target_in = np.repeat(TARGET_IN[:1, :2], 4000, axis=0)
    logits, fed, _ = scheduled_pass(model, source, target_in, probability=1.0)
    z = np_(logits)[0, 0].astype("float64")
    z[0] = -np.inf
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    counts = np.bincount(np_(fed)[:, 1], minlength=6) / 4000
    np.testing.assert_allclose(counts, probs, atol=0.03)


@pytest.mark.large
def test_fit_follows_the_schedule_and_saves_its_step(tmp_path):
    model = model_with(ScheduledSampling("linear", 0.5, steps=4, seed=1), dropout=0.1)
    model.compile()
    target_out = np.concatenate([TARGET_IN[:, 1:], np.zeros((4, 1), "int32")], 1)
    history = model.fit(
        {"source": SOURCE, "target_in": TARGET_IN}, target_out, batch_size=2, epochs=3, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()
    assert int(np_(model.scheduled_sampling.step)) == 6
    assert float(np_(model.scheduled_sampling.probability())) == pytest.approx(0.5)
    model.save(tmp_path / "s.keras")
    loaded = keras.saving.load_model(tmp_path / "s.keras")
    assert int(np_(loaded.scheduled_sampling.step)) == 6
    assert (loaded.scheduled_sampling.schedule, loaded.scheduled_sampling.steps) == ("linear", 4)


@pytest.mark.large
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.data padded_batch")
def test_fit_on_batches_of_unknown_length():
    """`fit` on a tf.data dataset whose batches are padded to their own longest
    sentence: the traced training step sees source and target lengths of None, and
    the step-wise scheduled-sampling loop runs over however many steps a batch has."""
    import tensorflow as tf

    pairs = [(SOURCE[b][SOURCE[b] != 0], TARGET_IN[b][TARGET_IN[b] != 0]) for b in range(4)] * 2
    target_out = [np.append(t[1:], 3) for _, t in pairs]

    def examples():
        for (source, target_in), out in zip(pairs, target_out):
            yield {"source": source, "target_in": target_in}, out

    spec = tf.TensorSpec([None], tf.int32)
    data = (
        tf.data.Dataset.from_generator(
            examples, output_signature=({"source": spec, "target_in": spec}, spec)
        )
        .apply(tf.data.experimental.assert_cardinality(8))
        .padded_batch(3)
    )
    assert data.element_spec[1].shape.as_list() == [None, None]
    model = model_with(ScheduledSampling("constant", 0.5, mode="sample", seed=3), dropout=0.1)
    model.compile()
    history = model.fit(data, epochs=2, verbose=0, shuffle=False)
    assert np.isfinite(history.history["loss"]).all()
    assert int(np_(model.scheduled_sampling.step)) == 6  # 3 batches (3 + 3 + 2 pairs) x 2 epochs
    # The same batches, padded to one fixed length, give the same loss: the loop
    # over an unknown number of steps computes what the static-length one does.
    for batch in data.take(1):
        x, y = batch
        fixed = {k: np.pad(v.numpy(), [(0, 0), (0, 2)]) for k, v in x.items()}
        noise = model.scheduled_sampling.noise(ops.shape(fixed["target_in"]), seed=5)
        short = [n[:, : x["target_in"].shape[1]] for n in noise]
        unknown = tf.function(
            lambda s, t, c, u: scheduled_pass(model, s, t, 0.5, (c, u))[0],
            input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2
            + [tf.TensorSpec([None, None], tf.float32)] * 2,
        )(x["source"], x["target_in"], *short)
        padded = scheduled_pass(model, fixed["source"], fixed["target_in"], 0.5, noise)[0]
        np.testing.assert_allclose(np_(unknown), np_(padded)[:, : unknown.shape[1]], atol=1e-5)
