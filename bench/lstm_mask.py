"""The masked LSTM's training step with Keras' default compile settings: kerasrnn.RNN's
own XLA cluster (`jit_compile="auto"`) against its plain loop (`jit_compile=False`) and
PyTorch's `nn.LSTM` over a packed sequence, interleaved in one process (`timing`).

The workload is bench/cells.py's (batch 64, 100 steps, 128 inputs, 256 units, Adam, a
dense head on the last state) with right-padded sequences of random lengths 50-100 (a
`Masking` layer; PyTorch packs them). Besides the wall clock it records the process' CPU
time per step (all threads), which other jobs on the machine move less.

    PYTHONPATH=. python bench/lstm_mask.py --rounds 9
"""

import argparse
import os
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

import kerasrnn  # noqa: E402

BATCH, STEPS, INPUTS, UNITS, CLASSES = 64, 100, 128, 256, 10


def data(seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(STEPS // 2, STEPS + 1, BATCH)
    x = rng.normal(size=(BATCH, STEPS, INPUTS)).astype("float32")
    x[np.arange(STEPS)[None, :] >= lengths[:, None]] = 0.0
    return x, rng.integers(0, CLASSES, BATCH).astype("int32"), lengths


def keras_step(jit_compile):
    model = keras.Sequential(
        [
            keras.Input((STEPS, INPUTS), batch_size=BATCH),
            keras.layers.Masking(),
            kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), jit_compile=jit_compile),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x, y, _ = data()
    return lambda: model.train_on_batch(x, y)


def torch_step():
    import torch

    rnn, head = torch.nn.LSTM(INPUTS, UNITS, batch_first=True), torch.nn.Linear(UNITS, CLASSES)
    optimizer = torch.optim.Adam([*rnn.parameters(), *head.parameters()], 1e-3)
    x, y, lengths = data()
    x, y = torch.from_numpy(x), torch.from_numpy(y).long()
    lengths = torch.from_numpy(lengths)

    def step():
        optimizer.zero_grad()
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False
        )
        _, (h, _) = rnn(packed)
        loss = torch.nn.functional.cross_entropy(head(h[-1]), y)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    args = parser.parse_args(argv)
    import torch

    threads = os.cpu_count()
    torch.set_num_threads(threads)
    contenders = [
        ('kerasrnn.RNN, masked, jit_compile="auto"', lambda: keras_step("auto")),
        ("kerasrnn.RNN, masked, jit_compile=False", lambda: keras_step(False)),
        ("torch.nn.LSTM, packed", torch_step),
    ]
    built, cpu = [], {}
    for label, make in contenders:
        step = make()
        timing.warm_up(step, args.warmup)
        cpu[label] = []

        def timed(step=step, record=cpu[label]):
            start = time.process_time()
            result = step()
            record.append(time.process_time() - start)
            return result

        built.append((label, timed))
    wall = timing.interleaved_rounds(built, args.rounds, args.steps)
    reference = built[-1][0]
    cpu_round = {
        label: [
            statistics.median(v[r * args.steps : (r + 1) * args.steps]) for r in range(args.rounds)
        ]
        for label, v in cpu.items()
    }
    print(
        f"# {os.cpu_count()} cores, keras {keras.__version__} ({keras.backend.backend()}), "
        f"torch {torch.__version__}; batch {BATCH}, {STEPS} steps (lengths 50-100), "
        f"{INPUTS} inputs, {UNITS} units; {args.rounds} rounds x {args.steps} steps; "
        f"OMP_WAIT_POLICY={OMP_POLICY}"
    )
    print(
        f"{'contender':<42} {'ms/step':>8} {'ratio (min-max)':>18} {'CPU ms':>7} "
        f"{'CPU ratio (min-max)':>20}"
    )
    for label, _ in built:
        ratio = timing.summary(timing.ratios(wall[label], wall[reference]))
        cpu_ratio = timing.summary(timing.ratios(cpu_round[label], cpu_round[reference]))
        print(
            f"{label:<42} {1000 * statistics.median(wall[label]):8.1f} "
            f"{ratio['median']:6.2f} ({ratio['min']:.2f}-{ratio['max']:.2f}) "
            f"{1000 * statistics.median(cpu_round[label]):7.1f} "
            f"{cpu_ratio['median']:6.2f} ({cpu_ratio['min']:.2f}-{cpu_ratio['max']:.2f})"
        )


if __name__ == "__main__":
    main()
