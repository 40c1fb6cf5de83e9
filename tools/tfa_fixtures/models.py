"""A small tf.keras model built from TFA cells, its saved weights and its predictions.

Embedding(mask_zero) -> RNN(LayerNormLSTMCell, sequences) -> RNN(LayerNormSimpleRNNCell)
-> Dense, trained for a few steps on a toy task (so the weights are a trained model's, not
an initialisation), saved the two ways TF <= 2.15 users have them:

    tests/fixtures/tfa/model.h5               model.save_weights("model.h5")
    tests/fixtures/tfa/model_ckpt/model.*     model.save_weights("model_ckpt/model") (TF checkpoint)
    tests/fixtures/tfa/model.npz              token ids (with padding) and the predictions

and a second model, Embedding -> Bidirectional(RNN(PeepholeLSTMCell)) ->
RNN(NASCell(projection, use_bias)) -> Dense, as model_bidirectional.h5 / .npz.

`kerasrnn.compat.tfa` must load either file into the kerasrnn model and predict the same.
Run from the repository root in the reference environment (README.md):

    python tools/tfa_fixtures/models.py
"""

import shutil

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa
from common import FIXTURES, rng, save, versions

VOCAB, EMBED, LSTM_UNITS, RNN_UNITS, CLASSES, TIME = 12, 6, 8, 5, 3, 7


def build():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Embedding(VOCAB, EMBED, mask_zero=True, name="embed"),
            tf.keras.layers.RNN(
                tfa.rnn.LayerNormLSTMCell(LSTM_UNITS), return_sequences=True, name="encoder"
            ),
            tf.keras.layers.RNN(tfa.rnn.LayerNormSimpleRNNCell(RNN_UNITS), name="summary"),
            tf.keras.layers.Dense(CLASSES, name="classify"),
        ]
    )


def build_bidirectional():
    """A second model for the converter: a bidirectional peephole LSTM and a NAS cell."""
    return tf.keras.Sequential(
        [
            tf.keras.layers.Embedding(VOCAB, EMBED, mask_zero=True, name="embed"),
            tf.keras.layers.Bidirectional(
                tf.keras.layers.RNN(tfa.rnn.PeepholeLSTMCell(LSTM_UNITS), return_sequences=True),
                name="encoder",
            ),
            tf.keras.layers.RNN(
                tfa.rnn.NASCell(RNN_UNITS, projection=4, use_bias=True), name="summary"
            ),
            tf.keras.layers.Dense(CLASSES, name="classify"),
        ]
    )


def train(model, tokens, labels):
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.05),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(tokens, labels, epochs=5, batch_size=16, verbose=0)


def main():
    generator = rng(21)
    tf.keras.utils.set_random_seed(21)
    tokens = generator.integers(1, VOCAB, (64, TIME))
    lengths = generator.integers(2, TIME + 1, 64)
    tokens[np.arange(TIME)[None, :] >= lengths[:, None]] = 0
    labels = tokens[:, 0] % CLASSES  # the class of the first token: learnable
    model = build()
    train(model, tokens, labels)
    probe = tokens[:5]
    predictions = model.predict(probe, verbose=0)
    model.save_weights(str(FIXTURES / "model.h5"))
    checkpoint = FIXTURES / "model_ckpt"
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_weights(str(checkpoint / "model"))
    save("model", tokens=probe.astype("int32"), predictions=predictions, versions=versions())
    other = build_bidirectional()
    train(other, tokens, labels)
    other.save_weights(str(FIXTURES / "model_bidirectional.h5"))
    save(
        "model_bidirectional",
        tokens=probe.astype("int32"),
        predictions=other.predict(probe, verbose=0),
        versions=versions(),
    )
    for path in sorted(
        [FIXTURES / "model.h5", FIXTURES / "model_bidirectional.h5", *checkpoint.iterdir()]
    ):
        print(path.relative_to(FIXTURES.parents[2]), path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
