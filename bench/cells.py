"""Training-step time of the recurrent cells against Keras' layers and PyTorch, one process.

The workload (issue 2): batch 64, 100 time steps, 128 inputs, 256 units, Adam, a dense
classifier head on the last state. Each contender runs `--steps` timed training steps
after `--warmup` untimed ones (tracing, XLA compilation); the figure is the median
ms/step, and every row is also given as a ratio to PyTorch's step time measured in the
same process, because this machine is noisy and only ratios travel.

    python bench/cells.py                 # all contenders
    python bench/cells.py --only lstm     # LSTM rows only
    python bench/cells.py --json out.json # also write the figures as JSON

PyTorch is optional (`pip install torch==2.13.0` takes the CPU wheel); without it the
ratios are to keras.layers.LSTM / GRU instead.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrnn  # noqa: E402

BATCH, STEPS, INPUTS, UNITS, CLASSES = 64, 100, 128, 256, 10


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, STEPS, INPUTS)).astype("float32")
    y = rng.integers(0, CLASSES, BATCH).astype("int32")
    return x, y


def keras_model(recurrent_layer):
    inputs = keras.Input((STEPS, INPUTS), batch_size=BATCH)
    outputs = keras.layers.Dense(CLASSES)(recurrent_layer(inputs))
    return keras.Model(inputs, outputs)


def time_keras(make_layer, warmup, steps, jit_compile=False):
    """Median ms per `train_on_batch` step (a compiled train function, like fit)."""
    model = keras_model(make_layer())
    model.compile(
        keras.optimizers.Adam(1e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    x, y = data()
    for _ in range(warmup):
        model.train_on_batch(x, y)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def time_torch(kind, warmup, steps):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
            self.rnn = rnn(INPUTS, UNITS, batch_first=True)
            self.head = torch.nn.Linear(UNITS, CLASSES)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    net = Net()
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = data()
    x, y = torch.from_numpy(x), torch.from_numpy(y).long()

    def step():
        optimizer.zero_grad()
        loss_fn(net(x), y).backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def contenders(kind):
    cell = {"lstm": kerasrnn.LSTMCell, "gru": kerasrnn.GRUCell}[kind]
    keras_layer = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[kind]
    name = cell.__name__
    return [
        (f"kerasrnn.{name} in kerasrnn.RNN", lambda: kerasrnn.RNN(cell(UNITS)), False),
        (f"kerasrnn.{name} in kerasrnn.RNN, jit_compile",
         lambda: kerasrnn.RNN(cell(UNITS)), True),
        (f"kerasrnn.{name} in keras.layers.RNN",
         lambda: keras.layers.RNN(cell(UNITS)), False),
        (f"kerasrnn.{name} in keras.layers.RNN, jit_compile",
         lambda: keras.layers.RNN(cell(UNITS)), True),
        (f"keras.layers.{keras_layer.__name__}", lambda: keras_layer(UNITS), False),
        (f"keras.layers.{keras_layer.__name__}, jit_compile",
         lambda: keras_layer(UNITS), True),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["lstm", "gru"], help="one cell family only")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads per framework (0: each framework's default)")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="skip contenders whose label contains one of these words")
    args = parser.parse_args(argv)
    if args.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"keras {keras.__version__} ({keras.backend.backend()})"
          + (f", torch {torch.__version__}" if have_torch else ", no torch"))
    print(f"# batch {BATCH}, {STEPS} steps, {INPUTS} inputs, {UNITS} units, Adam; "
          f"median of {args.steps} steps after {args.warmup} warm-up; "
          f"threads: {args.threads or 'default'}")
    rows = []
    for kind in [args.only] if args.only else ["lstm", "gru"]:
        results = []
        for label, make, jit in contenders(kind):
            if any(word in label for word in args.skip):
                continue
            results.append((label, time_keras(make, args.warmup, args.steps, jit)))
        if have_torch:
            reference_label = f"torch.nn.{kind.upper()} (CPU)"
            if args.threads:
                torch.set_num_threads(args.threads)
            results.append((reference_label, time_torch(kind, args.warmup, args.steps)))
        else:
            reference_label = next(label for label, _ in results
                                   if label.startswith("keras.layers"))
        reference = dict(results)[reference_label]
        print(f"\n{'contender':<52} {'ms/step':>9} {'ratio':>7}")
        for label, ms in results:
            ratio = ms / reference
            print(f"{label:<52} {ms:9.1f} {ratio:7.2f}x")
            rows.append({"kind": kind, "contender": label, "ms_per_step": round(ms, 2),
                         "ratio": round(ratio, 3), "reference": reference_label})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
