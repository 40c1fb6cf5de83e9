"""kerasrnn.layers: pooling, word dropout, masks and reshapes, against NumPy; `.keras`
round trips with `import kerasrnn` alone, and beside the recipes' older classes."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.layers import (
    MaskedPooling1D,
    MergeBatchTime,
    NotPadding,
    SplitBatchTime,
    WordDropout,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def np_(x):
    return keras.ops.convert_to_numpy(x)


def test_masked_pooling_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 2)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], bool)
    mean = np_(MaskedPooling1D("mean")(x, mask=mask))
    high = np_(MaskedPooling1D("max")(x, mask=mask))
    for row in range(2):
        real = x[row][mask[row]]
        np.testing.assert_allclose(mean[row], real.mean(0), rtol=1e-6)
        np.testing.assert_allclose(high[row], real.max(0), rtol=1e-6)
    np.testing.assert_array_equal(mean[2], 0.0)  # an empty row: zeros, not NaN
    np.testing.assert_array_equal(high[2], 0.0)
    np.testing.assert_allclose(np_(MaskedPooling1D()(x)), x.mean(1), rtol=1e-6)
    with pytest.raises(ValueError, match="`mode` must be one of"):
        MaskedPooling1D("sum")


def test_word_dropout_replaces_real_tokens_only():
    ids = np.where(np.arange(4000).reshape(40, 100) % 10 < 7, 7, 0)
    layer = WordDropout(0.3, unk_id=1, seed=3)
    np.testing.assert_array_equal(np_(layer(ids)), ids)  # inference: unchanged
    out = np_(layer(ids, training=True))
    assert set(np.unique(out[ids == 0])) == {0}
    dropped = out[ids == 7] == 1
    assert set(np.unique(out[ids == 7])) <= {1, 7}
    assert abs(dropped.mean() - 0.3) < 0.03  # 2800 draws: std ~0.009
    with pytest.raises(ValueError, match="`rate` must be in"):
        WordDropout(1.0)


def test_not_padding_and_reshapes():
    ids = np.array([[5, 0, 3], [0, 0, 9]])
    np.testing.assert_array_equal(np_(NotPadding()(ids)), ids != 0)
    np.testing.assert_array_equal(np_(NotPadding(pad_id=9)(ids)), ids != 9)
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    merged = np_(MergeBatchTime()(x))
    np.testing.assert_array_equal(merged, x.reshape(6, 4, 5))
    split = np_(SplitBatchTime()([merged.reshape(6, 20), x]))
    np.testing.assert_array_equal(split, x.reshape(2, 3, 20))


def _model():
    words = keras.Input((None,), dtype="int32")
    chars = keras.Input((None, None), dtype="int32")
    dropped = WordDropout(0.1, seed=1)(words)
    x = keras.layers.Embedding(10, 4, mask_zero=True)(dropped)
    c = keras.layers.Embedding(10, 3)(MergeBatchTime()(chars))
    c = SplitBatchTime()([keras.layers.GlobalAveragePooling1D()(c), chars])
    x = keras.layers.Concatenate()([x, c])
    pooled = MaskedPooling1D("max")(x)
    mask = keras.ops.cast(NotPadding()(words), "float32")
    out = keras.layers.Dense(2)(pooled)
    return keras.Model([words, chars], [out, mask])


def test_round_trip_and_registered_names(tmp_path):
    model = _model()
    words = np.array([[1, 2, 0], [3, 0, 0]])
    chars = np.ones((2, 3, 4), "int32")
    expected = [np_(o) for o in model([words, chars])]
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    for a, b in zip(expected, loaded([words, chars])):
        np.testing.assert_allclose(np_(b), a, rtol=1e-6)
    for cls in (MaskedPooling1D, WordDropout, NotPadding, MergeBatchTime, SplitBatchTime):
        assert keras.saving.get_registered_name(cls) == f"kerasrnn>{cls.__name__}"


LOAD_WITH_KERASRNN_ONLY = r"""
import sys
import keras, kerasrnn
model = keras.saving.load_model(sys.argv[1])
assert not any(m.startswith("recipes") for m in sys.modules)
print(type(model.layers[-1]).__name__)
"""


@pytest.mark.large
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="recipes need TensorFlow")
def test_recipe_files_load_with_kerasrnn_alone_and_names_do_not_clash(tmp_path):
    """A model saved while the recipes' own classes of the same registered names were
    imported (the previous layout) loads in a process with `import kerasrnn` alone, and
    the other way round too, whichever class Keras' registry (which keeps the last
    class registered under a name) holds."""
    import recipes.classifier
    import recipes.tagger
    import recipes.translator  # noqa: F401

    words = keras.Input((None,), dtype="int32")
    x = WordDropout(0.1)(words)
    x = keras.layers.Embedding(10, 4, mask_zero=True)(x)
    x = kerasrnn.layers.MaskedPooling1D("mean")(x)
    mask = kerasrnn.layers.NotPadding()(words)
    model = keras.Model(words, [keras.layers.Dense(2)(x), mask])
    model.save(tmp_path / "old.keras")
    result = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_KERASRNN_ONLY, str(tmp_path / "old.keras")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == "NotPadding"
    # and a file written with kerasrnn's classes loads while the recipes' are registered
    _model().save(tmp_path / "new.keras")
    keras.saving.load_model(tmp_path / "new.keras")
    metric = kerasrnn.metrics.MaskedAccuracy()
    assert "pad_id" not in metric.get_config()
    assert kerasrnn.metrics.MaskedAccuracy(pad_id=5).get_config()["pad_id"] == 5
    assert WordDropout(0.1, unk_id=7).get_config()["unk_id"] == 7


def test_naive_bayes_expert_matches_counting_by_hand(tmp_path):
    from kerasrnn.layers import NaiveBayesExpert

    vocab, buckets = 6, 7
    sentences = [[1, 2, 2], [2, 3], [4, 5, 1]]
    classes = [0, 0, 1]
    expert = NaiveBayesExpert(vocab, 2, order=2, buckets=buckets, scale=0.5)
    expert.estimate(sentences, classes)

    def grams(ids):  # unigrams and hashed bigrams, once per sentence
        return set(ids) | {(a * vocab + b) % buckets + vocab for a, b in zip(ids, ids[1:])}

    counts = np.zeros((vocab + buckets, 2))
    for ids, c in zip(sentences, classes):
        for g in grams(ids):
            counts[g, c] += 1
    seen = counts.sum(1) > 0
    table = np.where(seen[:, None], np.log((counts + 1) / (counts + 1)[seen].sum(0)), 0.0)
    np.testing.assert_allclose(np_(expert.log_likelihood), table, rtol=1e-5)
    ids = np.array([[2, 3, 0], [5, 1, 1]])
    model_probs = np.array([[0.3, 0.7], [0.6, 0.4]], "float32")
    got = np_(expert([ids, model_probs]))
    for row in range(2):
        real = [i for i in ids[row] if i]
        s = sum(table[g] for g in real) + sum(
            table[(a * vocab + b) % buckets + vocab] for a, b in zip(real, real[1:])
        )
        logits = np.log(model_probs[row]) + 0.5 * s
        np.testing.assert_allclose(got[row], np.exp(logits) / np.exp(logits).sum(), rtol=1e-5)
    inputs = [keras.Input((None,), dtype="int32"), keras.Input((2,))]
    model = keras.Model(inputs, expert(inputs))
    model.save(tmp_path / "nb.keras")
    loaded = keras.saving.load_model(tmp_path / "nb.keras")
    np.testing.assert_allclose(np_(loaded([ids, model_probs])), got, rtol=1e-6)


def test_character_features_keep_the_word_mask():
    """Padded words (all character ids 0) stay masked after the character features are
    concatenated to the masked word embeddings: padding a sentence changes no output."""
    words = keras.Input((None,), dtype="int32")
    chars = keras.Input((None, None), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(words)
    c = keras.layers.Embedding(10, 3)(MergeBatchTime()(chars))
    c = SplitBatchTime()([keras.layers.GlobalAveragePooling1D()(c), chars])
    x = keras.layers.Concatenate()([x, c])
    out = keras.layers.Bidirectional(keras.layers.SimpleRNN(5, return_sequences=True))(x)
    model = keras.Model([words, chars], out)
    w = np.array([[4, 5, 6]])
    ch = np.random.default_rng(0).integers(1, 10, (1, 3, 4))
    padded_w = np.concatenate([w, np.zeros((1, 3), "int64")], 1)
    padded_ch = np.concatenate([ch, np.zeros((1, 3, 4), "int64")], 1)
    alone = np_(model([w, ch]))
    padded = np_(model([padded_w, padded_ch]))
    np.testing.assert_allclose(padded[:, :3], alone, rtol=1e-5, atol=1e-6)
    mask = SplitBatchTime().compute_mask([np.zeros((6, 3)), padded_ch])
    np.testing.assert_array_equal(np_(mask), [[True] * 3 + [False] * 3])
