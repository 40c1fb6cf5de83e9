"""The suite runs warning-clean for warnings from our code (pyproject's filterwarnings
ignores, by message and with a reason, the third-party ones we cannot avoid). These
tests pin the ones we fixed."""

import warnings

import keras
import numpy as np

from kerasrnn.data.pipeline import sequence_dataset


def _bucketed(n=100, batch_size=8, boundaries=(5, 10, 20), seed=0):
    rng = np.random.default_rng(seed)
    inputs = [list(rng.integers(1, 30, size=int(rng.integers(1, 30)))) for _ in range(n)]
    return sequence_dataset(
        inputs,
        [i % 2 for i in range(n)],
        batch_size=batch_size,
        shuffle=True,
        seed=1,
        bucket_boundaries=list(boundaries),
    )


def test_bucketed_datasets_know_their_number_of_batches():
    rng = np.random.default_rng(0)
    for seed in range(10):
        n, batch = int(rng.integers(1, 120)), int(rng.integers(1, 20))
        dataset = _bucketed(n, batch, sorted(set(rng.integers(1, 30, size=3).tolist())), seed)
        batches = list(dataset)
        assert int(dataset.cardinality()) == len(batches)  # checked by tf.data too
        assert sum(int(b[0].shape[0]) for b in batches) == n


def test_training_on_bucketed_data_raises_no_warning():
    # Without a known cardinality Keras warns "Your input ran out of data" at the end of
    # every first pass over a dataset (fit, and evaluate on the validation set).
    dataset = _bucketed()
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(30, 4, mask_zero=True),
            keras.layers.GRU(4),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile("adam", "sparse_categorical_crossentropy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(dataset, validation_data=dataset, epochs=2, shuffle=False, verbose=0)
        model.evaluate(dataset, verbose=0)
    assert [str(w.message) for w in caught] == []
