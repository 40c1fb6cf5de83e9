"""What the figure scripts share: the cells compared, the long-dependency classifier and
where a figure is written. Each script prints the numbers it plots."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402, F401  (re-exported for the scripts)

import kerasrnn  # noqa: E402
from kerasrnn.tasks import long_dependency_task  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = {
    "SimpleRNN": kerasrnn.SimpleRNNCell,
    "LSTM": kerasrnn.LSTMCell,  # forget gate, its bias initialised to 1 (Keras' default)
    "LSTM 1997": lambda units: kerasrnn.LSTMCell(units, forget_gate=False),
    "GRU": kerasrnn.GRUCell,
}
COLORS = {"SimpleRNN": "tab:red", "LSTM": "tab:blue", "LSTM 1997": "tab:purple", "GRU": "tab:green"}
NUM_CLASSES = 4
VOCAB = 16


def long_dependency_model(cell_name, units=32, seed=0):
    """Embedding -> one recurrent layer -> softmax over the relevant symbols."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, 16, name="embedding")(inputs)
    x = keras.layers.RNN(CELLS[cell_name](units), name="rnn")(x)
    outputs = keras.layers.Dense(NUM_CLASSES, activation="softmax", name="answer")(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        keras.optimizers.Adam(3e-3, clipnorm=1.0),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


class StopAtAccuracy(keras.callbacks.Callback):
    """Stops once the training accuracy of an epoch reaches `target` (the task is solved)."""

    def __init__(self, target=0.99):
        super().__init__()
        self.target = target

    def on_epoch_end(self, epoch, logs=None):
        if logs["accuracy"] >= self.target:
            self.model.stop_training = True


def train_long_dependency(cell_name, distractors, examples=2048, epochs=20, seed=0):
    """Trains a fresh model on T = `distractors`; returns it and its held-out accuracy."""
    x, y = long_dependency_task(examples, distractors, NUM_CLASSES, VOCAB, seed=seed + 1)
    x_test, y_test = long_dependency_task(1024, distractors, NUM_CLASSES, VOCAB, seed=seed + 2)
    model = long_dependency_model(cell_name, seed=seed)
    model.fit(x, y, batch_size=64, epochs=epochs, verbose=0, callbacks=[StopAtAccuracy()])
    return model, model.evaluate(x_test, y_test, verbose=0)[1]


def save(fig, name):
    path = os.path.join(HERE, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {os.path.relpath(path)}")
    return path
