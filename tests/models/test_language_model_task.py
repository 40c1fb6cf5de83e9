"""kerasrnn.models.LanguageModel against NumPy and step-by-step references: perplexity
from the model's own logits, greedy generation as an argmax loop over full passes,
stateful evaluation as one long pass, `.keras` (with `import kerasrnn` alone) and
SavedModel round trips."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.models import LanguageModel, LanguageModelBackbone, LanguageModelRegularization

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V, END = 13, 3


def np_(x):
    return keras.ops.convert_to_numpy(x)


def _model(**options):
    options.setdefault("initializer", keras.initializers.RandomUniform(-0.5, 0.5, seed=1))
    return LanguageModel(LanguageModelBackbone(V, 6, num_layers=2, **options))


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_perplexity_is_exp_of_the_mean_nll_of_the_models_own_logits():
    model = _model(tie_embeddings=True)
    rng = np.random.default_rng(0)
    x = rng.integers(1, V, (5, 7))
    y = rng.integers(1, V, (5, 7))
    y[1, 4:] = 0  # padding targets do not count
    x[1, 5:] = 0
    logp = _log_softmax(np_(model(x)).astype("float64"))
    nll = -np.take_along_axis(logp, y[..., None], -1)[..., 0]
    real = y != 0
    expected = np.exp(nll[real].mean())
    result = model.perplexity(x, y, batch_size=2)
    assert result["tokens"] == real.sum()
    np.testing.assert_allclose(result["perplexity"], expected, rtol=1e-5)
    np.testing.assert_allclose(result["bits_per_token"], nll[real].mean() / np.log(2), rtol=1e-5)


def test_stateful_evaluation_over_windows_equals_one_long_pass():
    model = _model()
    rng = np.random.default_rng(1)
    streams = rng.integers(1, V, (3, 12))  # three streams, four windows of 3 steps each
    targets = np.roll(streams, -1, axis=1)
    windows = [streams[:, i : i + 3] for i in range(0, 12, 3)]
    window_targets = [targets[:, i : i + 3] for i in range(0, 12, 3)]
    # batch k holds window k of every stream (stream_windows' layout)
    x, y = np.concatenate(windows), np.concatenate(window_targets)
    whole = model.perplexity(streams, targets, batch_size=3)
    carried = model.perplexity(x, y, batch_size=3, stateful=True)
    np.testing.assert_allclose(carried["perplexity"], whole["perplexity"], rtol=1e-5)
    # without carrying the states it is another number (the test can fail)
    cut = model.perplexity(x, y, batch_size=3)
    assert abs(cut["perplexity"] - whole["perplexity"]) > 1e-4
    with pytest.raises(ValueError, match="multiple of batch_size"):
        model.perplexity(x[:5], y[:5], batch_size=3, stateful=True)


def test_greedy_generation_is_an_argmax_loop_over_full_passes():
    model = _model()
    prompts = np.array([[END, 5, 6, 7], [END, 8, 0, 0], [END, 0, 0, 0]])
    result = model.generate(prompts, kerasrnn.decoding.GreedySearch(), max_length=6)
    tokens = np_(result.tokens)[:, 0]
    for row, prompt in enumerate(prompts):
        sequence = [int(t) for t in prompt if t]
        expected = []
        for _ in range(6):
            logits = np_(model(np.array([sequence])))[0, -1]
            logits[0] = -np.inf  # padding is never generated
            expected.append(int(np.argmax(logits)))
            sequence.append(expected[-1])
            if expected[-1] == END:
                break
        expected += [0] * (6 - len(expected))
        assert tokens[row].tolist() == expected
    # the same strategies as Seq2Seq: beam search returns its n best, best first
    beam = model.generate(prompts, kerasrnn.decoding.BeamSearch(beam_size=3, n_best=2), 6)
    assert np_(beam.tokens).shape == (3, 2, 6)
    assert (np.diff(np_(beam.scores), axis=1) <= 1e-6).all()
    with pytest.raises(ValueError, match="at least one token"):
        model.generate(np.array([[0, 4]]))


def test_awd_regularisers_are_wired_and_the_loss_gets_ar_and_tar():
    regularization = LanguageModelRegularization(
        dropout=0.1, locked_dropout=0.2, embedding_dropout=0.1, weight_drop=0.3, ar_alpha=2.0
    )
    backbone = _model(regularization=regularization).backbone
    assert isinstance(backbone.get_layer("embedding"), kerasrnn.layers.EmbeddingDropout)
    assert all(isinstance(r.cell, kerasrnn.layers.WeightDrop) for r in backbone.rnn_layers())
    assert backbone.get_layer("locked_dropout_1").rate == 0.2
    x = np.array([[4, 5, 6, 0]])
    backbone(x, training=True)
    assert len(backbone.losses) == 1  # AR only
    with pytest.raises(ValueError, match="tie_embeddings"):
        _model(regularization=regularization, tie_embeddings=True)
    # inference ignores every dropout: two calls agree
    np.testing.assert_array_equal(np_(backbone(x)), np_(backbone(x)))


LOAD_WITH_KERASRNN_ONLY = r"""
import sys
import numpy as np, keras, kerasrnn
model = keras.saving.load_model(sys.argv[1])
prompts = np.array([[3, 5, 6], [3, 7, 0]])
np.save(sys.argv[2], keras.ops.convert_to_numpy(model.generate(prompts, max_length=5).tokens))
np.save(sys.argv[3], keras.ops.convert_to_numpy(model(np.array([[3, 5, 6, 7]]))))
"""


@pytest.mark.large
def test_keras_file_round_trip_with_kerasrnn_alone(tmp_path):
    model = _model(tie_embeddings=True, regularization=LanguageModelRegularization(0.1))
    model.compile(sampler=kerasrnn.decoding.BeamSearch(beam_size=2, n_best=1))
    model.save(tmp_path / "lm.keras")
    result = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_KERASRNN_ONLY]
        + [str(tmp_path / name) for name in ("lm.keras", "tokens.npy", "logits.npy")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    prompts = np.array([[3, 5, 6], [3, 7, 0]])
    np.testing.assert_array_equal(
        np.load(tmp_path / "tokens.npy"), np_(model.generate(prompts, max_length=5).tokens)
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "logits.npy"), np_(model(np.array([[3, 5, 6, 7]]))), atol=1e-6
    )


@pytest.mark.large
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel is TensorFlow")
def test_saved_model_round_trip(tmp_path):
    import tensorflow as tf

    from kerasrnn.export import export_saved_model

    model = _model()
    greedy = kerasrnn.decoding.GreedySearch()

    def serve(prompts):
        return {"tokens": model.generate(prompts, greedy, max_length=5, jit_compile=False).tokens}

    def logits(tokens):
        return {"logits": model(tokens)}

    ids = tf.TensorSpec([None, None], tf.int32)
    export_saved_model(
        tmp_path / "saved", model, {"serving_default": (serve, [ids]), "logits": (logits, [ids])}
    )
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    prompts = np.array([[3, 5, 6], [3, 7, 0]], "int32")
    np.testing.assert_array_equal(
        loaded.serving_default(prompts)["tokens"].numpy(),
        np_(model.generate(prompts, greedy, max_length=5).tokens),
    )
    np.testing.assert_allclose(
        loaded.logits(prompts)["logits"].numpy(), np_(model(prompts)), atol=1e-6
    )


def test_stateless_is_the_same_model_without_the_fixed_batch():
    stateful = LanguageModel(
        LanguageModelBackbone(
            V,
            6,
            initializer=keras.initializers.RandomUniform(-0.5, 0.5, seed=1),
            rnn_options={"stateful": True, "batch_size": 2},
        ),
        max_length=4,
    )
    plain = stateful.stateless()
    assert plain is not stateful and not plain.backbone.rnn_options.get("stateful")
    assert (plain.end_id, plain.max_length, plain.preprocessor) == (END, 4, None)
    x = np.array([[3, 5, 6], [3, 7, 8]])
    for layer in stateful.backbone.rnn_layers():
        layer.reset_state()
    np.testing.assert_allclose(np_(plain(x)), np_(stateful(x)), atol=1e-6)
    # any batch size now, and the first window again (no state carried)
    three = np.concatenate([x, x[:1]])
    np.testing.assert_allclose(np_(plain(three))[:2], np_(plain(x)), atol=1e-6)
    model = _model()
    assert model.stateless() is model


def test_extended_weights_give_new_words_the_mean_of_the_old_ones():
    from kerasrnn.models.language_model import extended_weights

    embedding = np.arange(8.0).reshape(4, 2)
    kernel = np.arange(8.0).reshape(2, 4)
    bias = np.array([1.0, 2.0, 3.0, 6.0])
    lstm = np.ones((2, 8))  # not a vocabulary axis: kept as it is
    grown = extended_weights([embedding, kernel, bias, lstm], [(6, 2), (2, 6), (6,), (2, 8)], 4)
    np.testing.assert_array_equal(grown[0], np.concatenate([embedding, [[3.0, 4.0]] * 2]))
    np.testing.assert_array_equal(grown[1], np.concatenate([kernel, [[1.5] * 2, [5.5] * 2]], 1))
    np.testing.assert_array_equal(grown[2], [1.0, 2.0, 3.0, 6.0, 3.0, 3.0])
    assert grown[3] is lstm
    same = extended_weights([embedding], [(4, 2)], 4)
    np.testing.assert_array_equal(same[0], embedding)
    for weights, shapes in (
        ([embedding], [(6, 2), (2,)]),  # another number of weights
        ([embedding], [(6, 3)]),  # two axes differ
        ([embedding], [(3, 2)]),  # smaller
        ([embedding], [(6, 2, 1)]),  # another rank
        ([np.ones((5, 2))], [(6, 2)]),  # the axis that grew is not the vocabulary's
    ):
        with pytest.raises(ValueError, match="weights do not fit this one"):
            extended_weights(weights, shapes, 4)


def test_export_embeddings_writes_the_word_rows_load_vectors_reads(tmp_path):
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.vectors import load_vectors
    from kerasrnn.models import LanguageModelPreprocessor

    words = Vocabulary(["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far"])
    model = LanguageModel(
        LanguageModelBackbone(len(words), 6, num_layers=1),
        preprocessor=LanguageModelPreprocessor(words, "word"),
    )
    model.build()
    written = model.export_embeddings(tmp_path / "lm.vec")
    assert written == {"vectors": str(tmp_path / "lm.vec"), "words": 9, "dim": 6}
    loaded = load_vectors(tmp_path / "lm.vec", words)
    matrix = np_(model.backbone.token_embedding.embeddings)
    np.testing.assert_allclose(loaded.matrix[4:], matrix[4:], rtol=1e-5, atol=1e-6)
    characters = LanguageModel(
        LanguageModelBackbone(len(words), 6, num_layers=1),
        preprocessor=LanguageModelPreprocessor(words, "char"),
    )
    with pytest.raises(ValueError, match="needs a word-level language model.*char-level"):
        characters.export_embeddings(tmp_path / "chars.vec")
    with pytest.raises(ValueError, match="missing"):
        _model().export_embeddings(tmp_path / "none.vec")
