"""`kerasrnn.callbacks.language_model_perplexity` and `LanguageModelEvaluation` against a
NumPy perplexity of the model's own logits over whole streams (the stateful windows
joined back) and `LanguageModel.perplexity`; for a biLM per direction."""

import math

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import LanguageModelEvaluation, language_model_perplexity
from kerasrnn.data import Vocabulary
from kerasrnn.data.language_model import bidirectional_data, language_model_data
from kerasrnn.models import LanguageModel, LanguageModelBackbone

SENTENCES = [s.split() for s in ("the cat sat", "a dog ran home", "the dog sat")] * 3
VOCABULARY = Vocabulary.build(SENTENCES)
BATCH, STEPS = 2, 3


def np_(x):
    return keras.ops.convert_to_numpy(x)


def _model(bidirectional=False):
    keras.utils.set_random_seed(6)
    backbone = LanguageModelBackbone(
        len(VOCABULARY),
        6,
        bidirectional=bidirectional,
        initializer=keras.initializers.RandomUniform(-0.5, 0.5, seed=6),
    )
    model = LanguageModel(backbone)
    model.compile(keras.optimizers.SGD(0.5))
    return model


def _streams(windows):
    """Stateful windows (batch i = window i of each row) -> the rows, whole."""
    return np.concatenate(np.split(windows, len(windows) // BATCH), axis=1)


def _numpy_perplexity(model, x, y):
    """exp(mean NLL) of the real targets, the logits of one pass over whole rows."""
    z = np_(model(x, training=False)).astype("float64")
    z -= z.max(-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_p, y[..., None], -1)[..., 0]
    return math.exp(nll[y != 0].mean())


@pytest.mark.large
def test_perplexity_of_stateful_windows_is_that_of_the_whole_streams():
    model = _model()
    data = language_model_data(SENTENCES, VOCABULARY, BATCH, STEPS)
    x, y = data["forward"]
    want = _numpy_perplexity(model, _streams(x), _streams(y))
    got = language_model_perplexity(model, data, BATCH, stateful=True)
    np.testing.assert_allclose(got["perplexity"], want, rtol=1e-5)
    assert got == model.perplexity(x, y, BATCH, stateful=True)
    assert got["tokens"] == (y != 0).sum()
    # windows read on their own (no state carried) are another number
    alone = language_model_perplexity(model, data, BATCH)["perplexity"]
    assert abs(alone - want) > 1e-3
    # sentence batches: a dataset per direction
    sentences = language_model_data(SENTENCES, VOCABULARY, 4)
    (sx, sy), *_ = list(sentences["forward"])
    expected = model.perplexity(sentences["forward"])
    assert language_model_perplexity(model, sentences, 4) == expected
    assert expected["tokens"] == sum(len(s) + 1 for s in SENTENCES)


def test_the_callback_logs_each_epochs_perplexities():
    model = _model()
    data = language_model_data(SENTENCES, VOCABULARY, BATCH, STEPS)
    rows = []
    evaluation = LanguageModelEvaluation(
        {"valid": data}, BATCH, stateful=True, log=lambda epoch, row: rows.append((epoch, row))
    )
    x, y = data["forward"]
    history = model.fit(
        x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0, callbacks=[evaluation]
    ).history
    # after the last epoch the logged value is the trained model's
    want = _numpy_perplexity(model, _streams(x), _streams(y))
    np.testing.assert_allclose(history["valid_perplexity"][-1], want, rtol=1e-5)
    assert history["valid_perplexity"][0] != history["valid_perplexity"][1]  # it trained
    assert history["train_perplexity"] == history["perplexity"]
    np.testing.assert_allclose(history["learning_rate"], [0.5, 0.5])
    assert all(s >= 0 for s in history["train_seconds"] + history["eval_seconds"])
    assert [epoch for epoch, _ in rows] == [1, 2]
    assert rows[-1][1]["valid_perplexity"] == history["valid_perplexity"][-1]


def test_a_bidirectional_model_is_measured_per_direction():
    model = _model(bidirectional=True)
    data = language_model_data(SENTENCES, VOCABULARY, BATCH, STEPS, bidirectional=True)
    got = language_model_perplexity(model, data, BATCH, stateful=True)
    for direction in ("forward", "backward"):
        x, y = data[direction]
        part = keras.Model(model.backbone.input[direction], model.backbone.output[direction])
        want = _numpy_perplexity(part, _streams(x), _streams(y))
        np.testing.assert_allclose(got[direction]["perplexity"], want, rtol=1e-5)
    both = math.sqrt(got["forward"]["perplexity"] * got["backward"]["perplexity"])
    np.testing.assert_allclose(got["perplexity"], both, rtol=1e-5)  # equal token counts
    x, y = bidirectional_data(data)
    evaluation = LanguageModelEvaluation({"valid": data}, BATCH, stateful=True)
    history = model.fit(
        x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[evaluation]
    ).history
    train = [history[f"{d}_perplexity"][0] for d in ("forward", "backward")]
    assert history["train_perplexity"][0] == pytest.approx(math.sqrt(train[0] * train[1]))
    after = language_model_perplexity(model, data, BATCH, stateful=True)
    for direction in ("forward", "backward"):
        np.testing.assert_allclose(
            history[f"valid_{direction}_perplexity"][0], after[direction]["perplexity"], rtol=1e-6
        )


def test_stateful_training_carries_the_states_or_is_refused_on_jax():
    # Keras' JAX training step drops a stateful RNN's state updates: fit refuses there
    # rather than train every window from zeros
    stateful = _model().backbone.variant(stateful=True, batch_size=BATCH)
    model = LanguageModel(stateful)
    model.compile(keras.optimizers.SGD(0.5))
    x, y = language_model_data(SENTENCES, VOCABULARY, BATCH, STEPS)["forward"]
    if keras.backend.backend() == "jax":
        with pytest.raises(ValueError, match="fit: on JAX, Keras does not carry"):
            model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        with pytest.raises(ValueError, match="train_on_batch: on JAX, Keras does not carry"):
            model.train_on_batch(x[:BATCH], y[:BATCH])
        return
    model.fit(x[:BATCH], y[:BATCH], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    carried = [np_(s) for layer in stateful.rnn_layers() for s in layer.states]
    assert all(np.abs(state).max() > 0 for state in carried)
