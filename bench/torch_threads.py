"""Keras' torch backend and CPU threads: a small recurrent model's training step with
PyTorch's default threads (one per core) against one thread per process, alone and with
a second such process training beside it (two pytest workers, two trainings).

Thread settings are fixed when torch starts, so every measurement is a child process:
it builds Embedding -> RNN(kerasrnn.LSTMCell(64)) -> Dense, warms up, times `--steps`
`train_on_batch` calls and prints their median. A round runs every setting once, alone
then in a pair, the settings' order rotating from round to round (bench/timing.py's
rotation); the table gives each setting's median over rounds, with min-max.

    PYTHONPATH=. .venv/bin/python bench/torch_threads.py [--rounds 3] [--steps 20]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import timing

SETTINGS = {
    "default threads": {},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
}

CHILD = r"""
import json, statistics, sys, time
import numpy as np, keras, torch, kerasrnn
steps = int(sys.argv[1])
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((30,), dtype="int32"), keras.layers.Embedding(500, 32),
                          keras.layers.RNN(kerasrnn.LSTMCell(64)), keras.layers.Dense(5)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
x, y = rng.integers(1, 500, (32, 30)), rng.integers(0, 5, (32,))
for _ in range(3):
    model.train_on_batch(x, y)
seconds = []
for _ in range(steps):
    start = time.perf_counter()
    model.train_on_batch(x, y)
    seconds.append(time.perf_counter() - start)
print(json.dumps({"ms": 1000 * statistics.median(seconds), "threads": torch.get_num_threads()}))
"""


def run(setting, steps, copies):
    """Starts `copies` children with `setting` at once; their median step times (ms)."""
    env = {**os.environ, "KERAS_BACKEND": "torch", "TF_CPP_MIN_LOG_LEVEL": "2"}
    for key in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        env.pop(key, None)
    env.update(SETTINGS[setting])
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(steps)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(copies)
    ]
    results = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    return [r["ms"] for r in results], results[0]["threads"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    times = {(s, c): [] for s in SETTINGS for c in (1, 2)}
    threads = {}
    for r in range(args.rounds):
        for setting in timing.rotated(SETTINGS, r):
            for copies in (1, 2):
                ms, threads[setting] = run(setting, args.steps, copies)
                times[setting, copies].append(statistics.median(ms))
                print(f"round {r}: {setting}, {copies} process(es): {ms}", file=sys.stderr)
    print(f"os.cpu_count() = {os.cpu_count()}; training step, median ms over rounds (min-max)")
    print(f"{'setting':<20} {'torch threads':>13} {'alone':>22} {'two processes':>22}")
    for setting in SETTINGS:
        cells = []
        for copies in (1, 2):
            values = times[setting, copies]
            cells.append(f"{statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})")
        print(f"{setting:<20} {threads[setting]:>13} {cells[0]:>22} {cells[1]:>22}")


if __name__ == "__main__":
    main()
