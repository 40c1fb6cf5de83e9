"""Training-step time of the recurrent cells against Keras' layers and PyTorch, one process.

The workload: batch 64, 100 time steps, 128 inputs, 256 units (`--size`), Adam, a dense
classifier head on the last state, one `train_on_batch` step with Keras' default compile
settings (the recipes': `jit_compile="auto"`, which is off on a TensorFlow CPU) and with
`jit_compile=True`; PyTorch's `nn.LSTM` / `nn.GRU` with the same head, optimiser and
inputs is the reference (without PyTorch: keras.layers.LSTM / GRU). `--masked`
right-pads the sequences to random lengths from half the steps to all of them behind a
`Masking` layer (PyTorch packs them; slow on a CPU, so compare the Keras rows).

Every contender is built and warmed up first, then `--rounds` rounds each time `--steps`
steps of every contender in turn, the order rotating (bench/timing.py). The table gives
per contender the median ms/step over rounds, the ratio to the reference (median, IQR,
min-max over rounds), the ratio to keras.layers.LSTM / GRU, and the process' CPU time
per step (all threads) with its ratio, which other jobs on the machine move less.
PyTorch and TensorFlow get the same thread count (`--threads`); PyTorch's threads wait
as `OMP_WAIT_POLICY` says (PASSIVE unless set; `default` on an idle machine).

    python -m bench cells                                   # LSTM and GRU
    OMP_WAIT_POLICY=default python -m bench cells --only lstm --rounds 7
    python -m bench cells --masked --only lstm              # padded sequences
    python -m bench cells --size 4x6x8 --rounds 1 --steps 1 --warmup 1 --results-dir /tmp/r
"""

import os
import platform
import statistics
import sys
import time

from bench import suite, timing

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
OMP_POLICY = suite.apply_omp_policy()  # before torch loads

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrnn  # noqa: E402

CLASSES = 10


class Workload:
    """The shapes and data of a run: batch x time x units, inputs = units / 2, and
    with `masked` each sequence right-padded from a random length in [time / 2, time]."""

    def __init__(self, batch=64, time=100, units=256, masked=False, seed=0):
        self.batch, self.time, self.units, self.inputs = batch, time, units, max(1, units // 2)
        self.masked = masked
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(batch, time, self.inputs)).astype("float32")
        self.y = rng.integers(0, CLASSES, batch).astype("int32")
        self.lengths = np.full(batch, time)
        if masked:
            self.lengths = rng.integers(max(1, time // 2), time + 1, batch)
            self.x[np.arange(time)[None, :] >= self.lengths[:, None]] = 0.0


def keras_step(work, make_layer, jit_compile="auto"):
    """A compiled `train_on_batch` step (what `fit` runs) of [Masking ->] layer -> Dense."""
    inputs = keras.Input((work.time, work.inputs), batch_size=work.batch)
    hidden = keras.layers.Masking()(inputs) if work.masked else inputs
    outputs = keras.layers.Dense(CLASSES)(make_layer()(hidden))
    model = keras.Model(inputs, outputs)
    model.compile(
        keras.optimizers.Adam(1e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    return lambda: model.train_on_batch(work.x, work.y)


def torch_step(work, kind):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
            self.rnn = rnn(work.inputs, work.units, batch_first=True)
            self.head = torch.nn.Linear(work.units, CLASSES)

        def forward(self, x):
            if not work.masked:
                out, _ = self.rnn(x)
                return self.head(out[:, -1])
            packed = torch.nn.utils.rnn.pack_padded_sequence(
                x, lengths, batch_first=True, enforce_sorted=False
            )
            _, state = self.rnn(packed)
            return self.head((state[0] if kind == "lstm" else state)[-1])

    net = Net()
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(work.x), torch.from_numpy(work.y).long()
    lengths = torch.from_numpy(work.lengths)

    def step():
        optimizer.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        optimizer.step()
        return float(loss.detach())  # waits for the step, like train_on_batch's returned loss

    return step


def contenders(work, kind, have_torch):
    """(label, step factory) pairs; the reference comes last."""
    cell = {"lstm": kerasrnn.LSTMCell, "gru": kerasrnn.GRUCell}[kind]
    keras_cell = {"lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell}[kind]
    keras_layer = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[kind]
    name, tf, units = cell.__name__, keras.backend.backend() == "tensorflow", work.units

    def step(make_layer, jit_compile="auto"):
        return lambda: keras_step(work, make_layer, jit_compile)

    rows = [
        (f"kerasrnn.{name} in keras.layers.RNN", step(lambda: keras.layers.RNN(cell(units)))),
        (
            f"kerasrnn.{name} in keras.layers.RNN, jit_compile",
            step(lambda: keras.layers.RNN(cell(units)), True),
        ),
        (
            "kerasrnn.RNN, generic loop (fast_path=False)",
            step(lambda: kerasrnn.RNN(cell(units), fast_path=False)),
        ),
        (
            "kerasrnn.RNN, generic loop, jit_compile",
            step(lambda: kerasrnn.RNN(cell(units), fast_path=False), True),
        ),
        (
            "kerasrnn.RNN, generic loop, hoisted projection",
            step(lambda: kerasrnn.RNN(cell(units), fast_path=False, hoist_projection=True)),
        ),
        ("kerasrnn.RNN, fast path", step(lambda: kerasrnn.RNN(cell(units)))),
        (
            "kerasrnn.RNN, fast path, own XLA loop off",
            step(lambda: kerasrnn.RNN(cell(units), jit_compile=False)),
        ),
        ("kerasrnn.RNN, fast path, jit_compile", step(lambda: kerasrnn.RNN(cell(units)), True)),
        (
            f"keras.layers.{keras_cell.__name__} in keras.layers.RNN",
            step(lambda: keras.layers.RNN(keras_cell(units))),
        ),
        (f"keras.layers.{keras_layer.__name__}", step(lambda: keras_layer(units))),
    ]
    if not tf:  # JAX always compiles with XLA: the jit_compile rows would repeat others
        rows = [row for row in rows if "jit_compile" not in row[0] and "XLA" not in row[0]]
    if have_torch:
        packed = ", packed" if work.masked else ""
        rows.append((f"torch.nn.{kind.upper()}{packed}", lambda: torch_step(work, kind)))
    else:
        rows.append(rows.pop())  # keras.layers.LSTM / GRU as the reference
    return rows


def measure(work, kind, have_torch, rounds, steps, warmup, skip=()):
    """Interleaved rounds (`timing`); returns one dict per contender (the reference last)."""
    *others, reference = contenders(work, kind, have_torch)
    chosen = [
        (label, make) for label, make in others if not any(word in label for word in skip)
    ] + [reference]
    built, cpu = [], {}
    for label, make in chosen:
        step = make()
        seconds, _ = timing.warm_up(step, warmup)
        print(f"# built {label} ({seconds:.1f} s warm-up)", file=sys.stderr)
        cpu[label] = []
        built.append((label, with_cpu_time(step, cpu[label])))
    per_round = {
        label: [1000 * s for s in seconds]
        for label, seconds in timing.interleaved_rounds(built, rounds, steps).items()
    }
    # the process' CPU time (all threads) per step, the round's figure the median of its
    # steps: less moved by other jobs on a loaded machine than the wall clock
    cpu_round = {
        label: [1000 * statistics.median(v[r * steps : (r + 1) * steps]) for r in range(rounds)]
        for label, v in cpu.items()
    }
    reference = built[-1][0]
    keras_layer = next(
        (label for label, _ in built if label.startswith("keras.layers.") and " in " not in label),
        reference,
    )
    results = []
    for label, _ in built:
        ms = per_round[label]
        ratio = timing.summary(timing.ratios(ms, per_round[reference]))
        versus_keras = timing.summary(timing.ratios(ms, per_round[keras_layer]))
        cpu_ratio = timing.summary(timing.ratios(cpu_round[label], cpu_round[reference]))
        results.append(
            {
                "kind": kind,
                "contender": label,
                "reference": reference,
                "ms_per_step": round(statistics.median(ms), 2),
                "ratio": round(ratio["median"], 3),
                "ratio_q1": round(ratio["q1"], 3),
                "ratio_q3": round(ratio["q3"], 3),
                "ratio_min": round(ratio["min"], 3),
                "ratio_max": round(ratio["max"], 3),
                "keras_layer": keras_layer,
                "vs_keras_layer": round(versus_keras["median"], 3),
                "vs_keras_layer_min": round(versus_keras["min"], 3),
                "vs_keras_layer_max": round(versus_keras["max"], 3),
                "round_ms": [round(v, 2) for v in ms],
                "cpu_ms_per_step": round(statistics.median(cpu_round[label]), 2),
                "cpu_ratio": round(cpu_ratio["median"], 3),
                "cpu_ratio_min": round(cpu_ratio["min"], 3),
                "cpu_ratio_max": round(cpu_ratio["max"], 3),
            }
        )
    return results


def with_cpu_time(step, record):
    """`step`, appending the process' CPU seconds (all threads) of each call to `record`."""

    def call():
        start = time.process_time()
        result = step()
        record.append(time.process_time() - start)
        return result

    return call


def _range(low, high):
    return lambda row: f"{row[low]:.2f}-{row[high]:.2f}"


COLUMNS = [
    ("contender", "contender", "s"),
    ("ms/step", "ms_per_step", ".1f"),
    ("ratio", "ratio", ".2f"),
    ("IQR", None, _range("ratio_q1", "ratio_q3")),
    ("min-max", None, _range("ratio_min", "ratio_max")),
    ("vs Keras layer", "vs_keras_layer", ".2f"),
    ("(min-max)", None, _range("vs_keras_layer_min", "vs_keras_layer_max")),
    ("CPU ms", "cpu_ms_per_step", ".1f"),
    ("CPU ratio", "cpu_ratio", ".2f"),
    ("(min-max)", None, _range("cpu_ratio_min", "cpu_ratio_max")),
]


def format_table(rows):
    return suite.format_table(rows, COLUMNS)


def set_threads(threads):
    """The same intra-op thread count for TensorFlow (when it is the backend) and torch."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    try:
        import torch
    except ImportError:
        return False
    torch.set_num_threads(threads)
    return True


# The contenders the results file keeps as figures (the docs quote them), by key suffix:
# the default path (key: the cell, "lstm" / "gru"), TensorFlow's plain loop and the
# hoisted projection.
HEADLINE_CONTENDERS = {
    "kerasrnn.RNN, fast path": "",
    "kerasrnn.RNN, fast path, own XLA loop off": "_plain_loop",
    "kerasrnn.RNN, generic loop, hoisted projection": "_hoisted",
}


def headline(rows):
    """The results file's figures: each of `HEADLINE_CONTENDERS`' ratio to the
    reference, per cell."""
    figures = {}
    for row in rows:
        suffix = HEADLINE_CONTENDERS.get(row["contender"])
        if suffix is not None:
            figures[row["kind"] + suffix] = suite.figure(
                row["ratio"],
                f"{row['kind'].upper()} training step, {row['contender']} / "
                f"{row['reference']}'s, median over rounds",
                unit="x",
                spread={"kind": "IQR", "low": row["ratio_q1"], "high": row["ratio_q3"]},
            )
    return figures


def main(argv=None):
    parser = suite.parser("cells", __doc__, rounds=5, steps=2, warmup=3)
    parser.add_argument("--only", choices=["lstm", "gru"], help="one cell family only")
    parser.add_argument(
        "--size", type=suite.size, default=(64, 100, 256), help="BxTxH (default 64x100x256)"
    )
    parser.add_argument("--masked", action="store_true", help="right-padded, masked sequences")
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count(),
        help="intra-op threads for TensorFlow and torch (default: all cores)",
    )
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="leave out contenders whose label contains one of these words",
    )
    args = parser.parse_args(argv)
    work = Workload(*args.size, masked=args.masked)
    have_torch = set_threads(args.threads)
    header = (
        f"# {platform.machine()}, {os.cpu_count()} cores, keras {keras.__version__} "
        f"({keras.backend.backend()})"
        + (f", torch {__import__('torch').__version__}" if have_torch else ", no torch")
        + f"; {args.threads} threads each\n"
        f"# batch {work.batch}, {work.time} steps{' (masked)' if work.masked else ''}, "
        f"{work.inputs} inputs, {work.units} units, Adam, train_on_batch; {args.rounds} "
        f"interleaved rounds x {args.steps} steps after {args.warmup} warm-up; ratio = step "
        f"time / reference's in the same round; OMP_WAIT_POLICY={OMP_POLICY}"
    )
    print(header, flush=True)
    rows = []
    for kind in [args.only] if args.only else ["lstm", "gru"]:
        results = measure(work, kind, have_torch, args.rounds, args.steps, args.warmup, args.skip)
        print(f"\n{kind.upper()}\n" + format_table(results), flush=True)
        rows.extend(results)
    figures = headline(rows)
    if figures:
        suite.write_result(
            args,
            "cells_masked" if work.masked else "cells",
            "LSTM training step against PyTorch's nn.LSTM (CPU)"
            + (", masked" if work.masked else ""),
            figures,
            headline=args.only or "lstm",
            baseline=suite.figure(1.0, "torch.nn.LSTM / GRU in the same rounds", unit="x"),
            details={"header": header, "rows": rows},
        )
    return rows


if __name__ == "__main__":
    main()
