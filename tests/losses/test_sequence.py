"""SequenceCrossEntropy and MaskedAccuracy against NumPy written here (TFA's
`sequence_loss` reductions, label smoothing, masks, weights)."""

import keras
import numpy as np
import pytest

from kerasrnn.losses import MaskedSequenceCrossEntropy, SequenceCrossEntropy
from kerasrnn.metrics import MaskedAccuracy


def np_(x):
    return keras.ops.convert_to_numpy(x)


def reference_losses(targets, logits, eps=0.0, from_logits=True):
    """-log p with label smoothing eps: cross-entropy against (1-eps) onehot + eps/V."""
    if from_logits:
        shifted = logits - logits.max(-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    else:
        log_p = np.log(np.clip(logits, 1e-7, 1.0))
    vocab = logits.shape[-1]
    smoothed = (1 - eps) * np.eye(vocab)[targets] + eps / vocab
    return -(smoothed * log_p).sum(-1)


def reference_reduce(losses, weights, avg_t, avg_b, sum_t, sum_b):
    """TFA's sequence_loss, written from its documented semantics."""
    weighted = losses * weights
    nonzero = (weights != 0).astype("float64")

    def div(a, b):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))

    if avg_t and avg_b:
        return div(weighted.sum(), weights.sum())
    if sum_t and sum_b:
        return div(weighted.sum(), nonzero.sum())
    if avg_t or avg_b:
        axis = 0 if avg_b else 1
        return div(weighted.sum(axis), weights.sum(axis))
    if sum_t or sum_b:
        axis = 0 if sum_b else 1
        return div(weighted.sum(axis), nonzero.sum(axis))
    return weighted


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 7)).astype("float32")
    targets = rng.integers(1, 7, size=(3, 5))
    targets[0, 3:] = 0
    targets[1, 1:] = 0  # one real token
    weights = rng.uniform(0.5, 2.0, size=(3, 5)).astype("float32")
    weights[2, 4] = 0.0
    return logits, targets, weights


FLAGS = [
    (True, True, False, False),
    (False, False, True, True),
    (True, False, False, False),
    (False, True, False, False),
    (False, False, True, False),
    (False, False, False, True),
    (True, False, False, True),
    (False, True, True, False),
    (False, False, False, False),
]


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("pad_id", [0, None])
def test_reductions_match_tfa_semantics(batch, flags, pad_id):
    logits, targets, weights = batch
    loss = SequenceCrossEntropy(
        pad_id=pad_id,
        **dict(
            zip(
                [
                    "average_across_timesteps",
                    "average_across_batch",
                    "sum_over_timesteps",
                    "sum_over_batch",
                ],
                flags,
            )
        ),
    )
    got = np_(loss(targets, logits, sample_weight=weights))
    mask = (targets != 0) if pad_id == 0 else np.ones_like(targets, bool)
    expected = reference_reduce(reference_losses(targets, logits), weights * mask, *flags)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_default_is_the_mean_over_real_tokens_with_label_smoothing(batch):
    logits, targets, _ = batch
    got = np_(SequenceCrossEntropy(label_smoothing=0.1)(targets, logits))
    per_token = reference_losses(targets, logits, eps=0.1)
    np.testing.assert_allclose(got, per_token[targets != 0].mean(), rtol=1e-5)


def test_probabilities_and_per_sequence_weights(batch):
    logits, targets, _ = batch
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    seq_weights = np.array([1.0, 0.0, 2.0], "float32")
    got = np_(SequenceCrossEntropy(from_logits=False)(targets, probs, seq_weights))
    w = (targets != 0) * seq_weights[:, None]
    per_token = reference_losses(targets, probs, from_logits=False)
    np.testing.assert_allclose(got, (per_token * w).sum() / w.sum(), rtol=1e-5)


def test_per_sequence_is_the_token_mean_times_the_window_length(batch):
    """Zaremba et al.'s loss over truncated-BPTT windows: each window's summed
    cross-entropy averaged over the batch, i.e. the token mean times T (padding not
    counted in the mean, as ever)."""
    logits, targets, weights = batch
    per_token = reference_losses(targets, logits)
    real = targets != 0
    loss = SequenceCrossEntropy(per_sequence=True)
    got = np_(loss(targets, logits))
    np.testing.assert_allclose(got, per_token[real].mean() * targets.shape[1], rtol=1e-5)
    unpadded = np.where(real, targets, 1)  # nothing padded: the per-window sum's mean
    np.testing.assert_allclose(
        np_(loss(unpadded, logits)), reference_losses(unpadded, logits).sum(1).mean(), rtol=1e-5
    )
    weighted = np_(loss(targets, logits, sample_weight=weights))
    w = weights * real
    np.testing.assert_allclose(weighted, (per_token * w).sum() / w.sum() * 5, rtol=1e-5)
    again = SequenceCrossEntropy.from_config(loss.get_config())
    assert again.per_sequence and again.get_config() == loss.get_config()
    with pytest.raises(ValueError, match="`per_sequence` scales the average over time and batch"):
        SequenceCrossEntropy(per_sequence=True, average_across_timesteps=False)


def test_all_padding_gives_zero_not_nan():
    got = np_(SequenceCrossEntropy()(np.zeros((2, 3), "int32"), np.ones((2, 3, 4), "float32")))
    assert got == 0.0


def test_gradient_is_finite_difference_of_the_loss(float64):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 4))
    targets = np.array([[1, 2, 0], [3, 0, 0]])
    loss = SequenceCrossEntropy(label_smoothing=0.2, dtype="float64")

    def value(x):
        return float(np_(loss(targets, x.astype("float64"))))

    # d/dz of the smoothed cross-entropy: softmax(z) - smoothed target, over |M| tokens
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    smoothed = 0.8 * np.eye(4)[targets] + 0.2 / 4
    analytic = (probs - smoothed) * (targets != 0)[..., None] / 3
    h = 1e-6
    numeric = np.zeros_like(logits)
    for index in np.ndindex(logits.shape):
        up, down = logits.copy(), logits.copy()
        up[index] += h
        down[index] -= h
        numeric[index] = (value(up) - value(down)) / (2 * h)
    np.testing.assert_allclose(numeric, analytic, atol=1e-6)


def test_trains_in_fit_and_round_trips(tmp_path):
    model = keras.Sequential(
        [keras.Input((4,), dtype="int32"), keras.layers.Embedding(6, 5), keras.layers.Dense(6)]
    )
    model.compile(
        keras.optimizers.Adam(0.05),
        loss=SequenceCrossEntropy(label_smoothing=0.1),
        metrics=[MaskedAccuracy()],
    )
    x = np.array([[1, 2, 3, 0], [4, 5, 0, 0]] * 8)
    history = model.fit(x, x, epochs=30, verbose=0)
    assert history.history["accuracy"][-1] == 1.0
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.loss, SequenceCrossEntropy)
    assert loaded.loss.label_smoothing == pytest.approx(0.1)
    config = SequenceCrossEntropy(
        pad_id=None, sum_over_batch=True, average_across_batch=False
    ).get_config()
    again = SequenceCrossEntropy.from_config(config)
    assert (again.pad_id, again.sum_over_batch, again.average_across_batch) == (None, True, False)


def test_old_translator_loss_name_loads():
    """The recipe's former loss config (in old `.keras` compile configs) builds
    kerasrnn's class of the same registered name."""
    config = {
        "name": "masked_cross_entropy",
        "reduction": "sum_over_batch_size",
        "dtype": None,
        "label_smoothing": 0.1,
    }
    restored = MaskedSequenceCrossEntropy.from_config(config)
    assert restored.label_smoothing == pytest.approx(0.1) and restored.pad_id == 0
    assert (
        keras.saving.get_registered_name(MaskedSequenceCrossEntropy)
        == "kerasrnn>MaskedSequenceCrossEntropy"
    )
    targets, logits = np.array([[2, 0]]), np.zeros((1, 2, 4), "float32")
    assert float(np_(restored(targets, logits))) == pytest.approx(np.log(4), rel=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"label_smoothing": 1.0}, "`label_smoothing` must be in"),
        ({"pad_id": "0"}, "`pad_id` must be"),
        (
            {"average_across_timesteps": True, "sum_over_timesteps": True},
            "`average_across_timesteps` and `sum_over_timesteps`",
        ),
        (
            {"average_across_batch": True, "sum_over_batch": True},
            "`average_across_batch` and `sum_over_batch`",
        ),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SequenceCrossEntropy(**kwargs)


def test_bad_shapes():
    loss = SequenceCrossEntropy()
    with pytest.raises(ValueError, match="`y_pred` must be \\(batch, time, vocab_size\\)"):
        loss(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="`y_true` must be \\(batch, time\\)"):
        loss(np.zeros((2,)), np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="`sample_weight` must be"):
        loss(np.zeros((2, 3)), np.zeros((2, 3, 4)), np.zeros((2, 3, 1)))


def test_masked_accuracy_counts_tokens_not_batches():
    metric = MaskedAccuracy()
    eye = np.eye(5, dtype="float32")
    # batch 1: 1 real token, right; batch 2: 3 real tokens, 1 right
    metric.update_state(np.array([[2, 0, 0]]), eye[[[2, 4, 4]]])
    metric.update_state(np.array([[1, 2, 3]]), eye[[[1, 0, 0]]])
    assert float(np_(metric.result())) == pytest.approx(2 / 4)  # a batch mean gives 2/3
    metric.update_state(np.array([[4, 4]]), eye[[[4, 0]]], sample_weight=np.array([2.0]))
    assert float(np_(metric.result())) == pytest.approx((2 + 2) / (4 + 4))
    metric.reset_state()
    assert float(np_(metric.result())) == 0.0
    everything = MaskedAccuracy(pad_id=None)
    everything.update_state(np.array([[2, 0]]), eye[[[2, 0]]])
    assert float(np_(everything.result())) == 1.0
    assert MaskedAccuracy.from_config(everything.get_config()).pad_id is None
    with pytest.raises(ValueError, match="one more axis"):
        metric.update_state(np.array([[1, 2]]), np.array([[1, 2]]))
