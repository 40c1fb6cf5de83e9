"""Training-step time of the recurrent cells against Keras' layers and PyTorch, one process.

The workload (issues 2 and 19): batch 64, 100 time steps, 128 inputs, 256 units, Adam, a
dense classifier head on the last state, one `train_on_batch` step with Keras' default
compile settings (the recipes': `jit_compile="auto"`, which is off on a TensorFlow CPU);
PyTorch's `nn.LSTM` / `nn.GRU` with the same head, optimiser and inputs is the reference.

Method, because this machine is shared and noisy: every contender is built and warmed up
first, then `--rounds` rounds each time `--steps` steps of every contender in turn (the
order rotates from round to round), all in this one process; a contender's figure in a
round is its median step, and its ratio in that round is that median over the
reference's median in the same round. The table gives, per contender, the median ms/step
over rounds and the ratio's median, interquartile range and min-max over rounds, and the
same ratio to keras.layers.LSTM / GRU (median and min-max), and the process' CPU time
per step (all threads; a round's figure the median of its steps) with its ratio to the
reference's (median, min-max), which other jobs on the machine move less. PyTorch
and TensorFlow get the same thread count (`--threads`, default all cores). How PyTorch's
threads wait is `OMP_WAIT_POLICY` (PASSIVE unless set; `default` on an idle machine lets
both sides run at their best: bench/omp_policy.py).

    python bench/cells.py                      # LSTM and GRU, all contenders
    OMP_WAIT_POLICY=default python bench/cells.py   # the same on an idle machine
    python bench/cells.py --only lstm          # LSTM rows only
    python bench/cells.py --json out.json      # also write rows and raw rounds as JSON

Without PyTorch (`pip install torch==2.13.0` takes the CPU wheel) the reference is
keras.layers.LSTM / GRU.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import omp_policy  # noqa: E402  (bench/: before torch loads)
import timing  # noqa: E402

OMP_POLICY = omp_policy.apply()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402
from keras.src.backend import rnn as backend_rnn  # noqa: E402

import kerasrnn  # noqa: E402

BATCH, STEPS, INPUTS, UNITS, CLASSES = 64, 100, 128, 256, 10


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, STEPS, INPUTS)).astype("float32")
    y = rng.integers(0, CLASSES, BATCH).astype("int32")
    return x, y


class OldRNN(kerasrnn.RNN):
    """kerasrnn.RNN as it was before the fast path (commit 4a679ed), for the old rows:
    the projection batch-major, so the time loop transposes the gates * units wide
    projected sequence."""

    def inner_loop(self, sequences, initial_state, mask, training=False):
        cell = self.cell
        states = cell.check_states(initial_state)
        if training and cell.dropout > 0:
            sequences = sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0]), 1)
        projected = cell.input_projection(sequences)

        def step(projected_t, states):
            return cell.call_projected(projected_t, list(states), training=training)

        return backend_rnn(
            step,
            projected,
            states,
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )


def keras_step(make_layer, jit_compile="auto"):
    """A compiled `train_on_batch` step (what `fit` runs) of layer -> Dense."""
    inputs = keras.Input((STEPS, INPUTS), batch_size=BATCH)
    outputs = keras.layers.Dense(CLASSES)(make_layer()(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(
        keras.optimizers.Adam(1e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    x, y = data()
    return lambda: model.train_on_batch(x, y)


def torch_step(kind):
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
        loss = loss_fn(net(x), y)
        loss.backward()
        optimizer.step()
        return float(loss.detach())  # waits for the step, like train_on_batch's returned loss

    return step


def contenders(kind, have_torch):
    """(label, step factory) pairs; the reference comes last."""
    cell = {"lstm": kerasrnn.LSTMCell, "gru": kerasrnn.GRUCell}[kind]
    keras_cell = {"lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell}[kind]
    keras_layer = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[kind]
    name, tf = cell.__name__, keras.backend.backend() == "tensorflow"
    rows = [
        (
            f"kerasrnn.{name} in keras.layers.RNN",
            lambda: keras_step(lambda: keras.layers.RNN(cell(UNITS))),
        ),
        (
            f"kerasrnn.{name} in keras.layers.RNN, jit_compile",
            lambda: keras_step(lambda: keras.layers.RNN(cell(UNITS)), True),
        ),
        ("kerasrnn.RNN, old (4a679ed)", lambda: keras_step(lambda: OldRNN(cell(UNITS)))),
        (
            "kerasrnn.RNN, generic loop (fast_path=False)",
            lambda: keras_step(lambda: kerasrnn.RNN(cell(UNITS), fast_path=False)),
        ),
        (
            "kerasrnn.RNN, generic loop, jit_compile",
            lambda: keras_step(lambda: kerasrnn.RNN(cell(UNITS), fast_path=False), True),
        ),
        ("kerasrnn.RNN, fast path", lambda: keras_step(lambda: kerasrnn.RNN(cell(UNITS)))),
        (
            "kerasrnn.RNN, fast path, own XLA loop off",
            lambda: keras_step(lambda: kerasrnn.RNN(cell(UNITS), jit_compile=False)),
        ),
        (
            "kerasrnn.RNN, fast path, jit_compile",
            lambda: keras_step(lambda: kerasrnn.RNN(cell(UNITS)), True),
        ),
        (
            f"keras.layers.{keras_cell.__name__} in keras.layers.RNN",
            lambda: keras_step(lambda: keras.layers.RNN(keras_cell(UNITS))),
        ),
        (f"keras.layers.{keras_layer.__name__}", lambda: keras_step(lambda: keras_layer(UNITS))),
    ]
    if not tf:  # JAX always compiles with XLA: the jit_compile rows would repeat others
        rows = [row for row in rows if "jit_compile" not in row[0] and "XLA" not in row[0]]
    if have_torch:
        rows.append((f"torch.nn.{kind.upper()}", lambda: torch_step(kind)))
    else:
        rows.append(rows.pop())  # keras.layers.LSTM / GRU as the reference
    return rows


def measure(kind, have_torch, rounds, steps, warmup, skip=()):
    """Interleaved rounds (`timing`); returns one dict per contender (the reference last)."""
    *others, reference = contenders(kind, have_torch)
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


def format_table(rows):
    lines = [
        f"{'contender':<50} {'ms/step':>8} {'ratio':>6} {'IQR':>11} {'min-max':>11}"
        f" {'vs Keras layer (min-max)':>25} {'CPU ms':>7} {'CPU ratio (min-max)':>20}"
    ]
    for row in rows:
        lines.append(
            f"{row['contender']:<50} {row['ms_per_step']:8.1f} {row['ratio']:6.2f} "
            f"{row['ratio_q1']:5.2f}-{row['ratio_q3']:<5.2f} "
            f"{row['ratio_min']:5.2f}-{row['ratio_max']:<5.2f} "
            f"{row['vs_keras_layer']:9.2f} ({row['vs_keras_layer_min']:.2f}-"
            f"{row['vs_keras_layer_max']:.2f}) {row['cpu_ms_per_step']:14.1f} "
            f"{row['cpu_ratio']:6.2f} ({row['cpu_ratio_min']:.2f}-{row['cpu_ratio_max']:.2f})"
        )
    return "\n".join(lines)


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["lstm", "gru"], help="one cell family only")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
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
    parser.add_argument("--json", help="also write the rows (with every round) to this file")
    args = parser.parse_args(argv)
    have_torch = set_threads(args.threads)
    header = (
        f"# {platform.machine()}, {os.cpu_count()} cores, keras {keras.__version__} "
        f"({keras.backend.backend()})"
        + (f", torch {__import__('torch').__version__}" if have_torch else ", no torch")
        + f"; {args.threads} threads each\n"
        f"# batch {BATCH}, {STEPS} steps, {INPUTS} inputs, {UNITS} units, Adam, "
        f"train_on_batch; {args.rounds} interleaved rounds x {args.steps} steps after "
        f"{args.warmup} warm-up; ratio = step time / reference's in the same round; "
        f"OMP_WAIT_POLICY={OMP_POLICY}"
    )
    print(header, flush=True)
    rows = []
    for kind in [args.only] if args.only else ["lstm", "gru"]:
        results = measure(kind, have_torch, args.rounds, args.steps, args.warmup, args.skip)
        print(f"\n{kind.upper()}\n" + format_table(results), flush=True)
        rows.extend(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "header": header,
                    "command": "python bench/cells.py "
                    + " ".join(argv if argv is not None else sys.argv[1:]),
                    "rows": rows,
                },
                f,
                indent=1,
            )
    return rows


if __name__ == "__main__":
    main()
