"""The cells end to end: train a stacked bidirectional model, save it, reload it.

    python -m kerasrnn.demo [--cell lstm|gru|simple] [--epochs 3]

The task is generated here (`kerasrnn.tasks.marker_order_task`): which of two marked
symbols comes first in a sequence of 20 to 60 steps. The script trains with `model.fit`,
prints the held-out accuracy, saves the model as a `.keras` file, reloads it and checks
that the reloaded model predicts exactly the same probabilities.
"""

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrnn  # noqa: E402
from kerasrnn.tasks import marker_order_task  # noqa: E402

CELLS = {
    "lstm": lambda units: kerasrnn.LSTMCell(units, peephole=True),
    "gru": lambda units: kerasrnn.GRUCell(units),
    "simple": lambda units: kerasrnn.SimpleRNNCell(units),
}


def build_model(cell, vocab_size=10):
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(vocab_size, 16, mask_zero=True)(inputs)
    x = kerasrnn.RNNStack(cell, num_layers=2, bidirectional=True)(x)
    outputs = keras.layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Train, save and reload a kerasrnn model.", allow_abbrev=False
    )
    parser.add_argument("--cell", choices=sorted(CELLS), default="lstm")
    parser.add_argument("--units", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--examples", type=int, default=2048)
    args = parser.parse_args(argv)

    keras.utils.set_random_seed(0)
    x_train, y_train = marker_order_task(args.examples, seed=1)
    x_test, y_test = marker_order_task(512, seed=2)
    model = build_model(CELLS[args.cell](args.units))
    model.compile(
        keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    model.fit(x_train, y_train, batch_size=64, epochs=args.epochs, verbose=2)
    accuracy = model.evaluate(x_test, y_test, verbose=0)[1]
    print(f"held-out accuracy ({args.cell}, 20-60 steps): {accuracy:.4f}")

    predictions = model.predict(x_test, verbose=0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "demo.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
    same = np.array_equal(reloaded.predict(x_test, verbose=0), predictions)
    print(f"saved and reloaded: predictions identical = {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
