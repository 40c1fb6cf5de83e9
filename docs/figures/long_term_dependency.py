"""Figure: the classic hard long-dependency tasks against the time lag T, for each cell.

Two tasks of Hochreiter & Schmidhuber (1997) as set up by Arjovsky et al. (2016)
(`kerasrnn.tasks`): the adding problem (sum the two marked values of a T-step sequence;
scored as R^2 = 1 - MSE / (1/6), 0 for the best constant guess, 1 solved) and the copy
task (repeat `copy_length` symbols after a delay of T blanks; scored as accuracy on the
copied symbols, chance 1 / num_symbols). Every (task, cell, T, seed) trains a fresh model
with the same budget: one recurrent layer of `--units`, Adam with clipnorm 1, `--steps`
updates of `--batch-size` fresh sequences; it is scored on 1,000 held-out sequences.
Each point is the mean over seeds, its bar the range (min to max), the dots the seeds.

The defaults are the run drawn in docs (both tasks, T = 10, 50, 100 and 200, two seeds,
1,000 steps of 64 sequences, 32 units, Adam 3e-3; 35 minutes on the 2-core machine
shared with other jobs):

    PYTHONPATH=. python docs/figures/long_term_dependency.py

The full figure (three seeds and 2,000 steps; the same lags, model and optimiser; about
three times as long):

    PYTHONPATH=. python docs/figures/long_term_dependency.py --full

Any single part can be given instead (`--tasks copy --lengths 100 --cells GRU ...`).
"""

import argparse
import sys
import time

import numpy as np

from figlib import keras, kerasrnn, plt, save
from kerasrnn.tasks import adding_problem, copy_task

CELLS = {
    "SimpleRNN": lambda units, t_max: kerasrnn.SimpleRNNCell(units),
    "LSTM b_f=0": lambda units, t_max: kerasrnn.LSTMCell(units, unit_forget_bias=False),
    "LSTM b_f=1 (default)": lambda units, t_max: kerasrnn.LSTMCell(units),
    "LSTM chrono": lambda units, t_max: kerasrnn.LSTMCell(units, chrono_init=t_max),
    "LSTM 1997": lambda units, t_max: kerasrnn.LSTMCell(units, forget_gate=False),
    "GRU": lambda units, t_max: kerasrnn.GRUCell(units),
}
STYLES = {
    "SimpleRNN": ("tab:red", "o-"),
    "LSTM b_f=0": ("tab:cyan", "v--"),
    "LSTM b_f=1 (default)": ("tab:blue", "s-"),
    "LSTM chrono": ("tab:orange", "P-"),
    "LSTM 1997": ("tab:purple", "^-."),
    "GRU": ("tab:green", "D:"),
}
COPY_LENGTH, NUM_SYMBOLS = 10, 8
TEST_EXAMPLES = 1000
FULL = ["--seeds", "3", "--steps", "2000"]


def adding_run(cell, length, seed, args):
    """Trains on the adding problem; returns R^2 on held-out sequences."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((length, 2))
    h = keras.layers.RNN(CELLS[cell](args.units, length))(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(h))
    model.compile(keras.optimizers.Adam(args.learning_rate, clipnorm=1.0), "mse")
    x, y = adding_problem(args.steps * args.batch_size, length, seed=1000 + seed)
    model.fit(x, y, batch_size=args.batch_size, epochs=1, verbose=0)
    x, y = adding_problem(TEST_EXAMPLES, length, seed=2000 + seed)
    mse = float(np.mean((model.predict(x, batch_size=500, verbose=0)[:, 0] - y) ** 2))
    return 1.0 - mse / (1.0 / 6.0)


def copy_run(cell, delay, seed, args):
    """Trains on the copy task; returns the accuracy on the copied symbols."""
    keras.utils.set_random_seed(seed)
    total = delay + 2 * COPY_LENGTH
    inputs = keras.Input((total,), dtype="int32")
    x = keras.layers.Embedding(NUM_SYMBOLS + 2, 16)(inputs)
    h = keras.layers.RNN(CELLS[cell](args.units, total), return_sequences=True)(x)
    model = keras.Model(inputs, keras.layers.Dense(NUM_SYMBOLS + 1)(h))
    model.compile(
        keras.optimizers.Adam(args.learning_rate, clipnorm=1.0),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = copy_task(
        args.steps * args.batch_size, delay, COPY_LENGTH, NUM_SYMBOLS, seed=1000 + seed
    )
    model.fit(x, y, batch_size=args.batch_size, epochs=1, verbose=0)
    x, y = copy_task(TEST_EXAMPLES, delay, COPY_LENGTH, NUM_SYMBOLS, seed=2000 + seed)
    predicted = model.predict(x, batch_size=500, verbose=0).argmax(-1)
    return float(np.mean(predicted[:, -COPY_LENGTH:] == y[:, -COPY_LENGTH:]))


TASKS = {
    "adding": (adding_run, "adding problem: held-out $R^2$", 0.0, "constant guess"),
    "copy": (copy_run, "copy task: accuracy on copied symbols", 1.0 / NUM_SYMBOLS, "chance"),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--full", action="store_true", help=f"the full figure: {' '.join(FULL)} (flags given win)"
    )
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    parser.add_argument(
        "--lengths",
        nargs="+",
        type=int,
        default=[10, 50, 100, 200],
        help="time lags T (adding: sequence length; copy: delay)",
    )
    parser.add_argument("--seeds", type=int, default=2, help="seeds per point")
    parser.add_argument("--steps", type=int, default=1000, help="updates per run")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--units", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument(
        "--output", default="long_term_dependency.png", help="file name (in docs/figures) or a path"
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--full" in argv:
        argv = FULL + argv  # later flags override the preset
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    began = time.time()
    print(
        f"budget per run: {args.steps} steps x {args.batch_size} sequences, "
        f"{args.units} units, Adam {args.learning_rate:g} clipnorm 1, "
        f"{args.seeds} seeds; mean [min, max] over seeds"
    )
    results = {}
    for task in args.tasks:
        run, title, _, _ = TASKS[task]
        print("\n" + title.replace("$R^2$", "R^2"))
        print(f"{'cell':22}" + "".join(f"{f'T={t}':>22}" for t in args.lengths))
        for cell in args.cells:
            scores = [
                [run(cell, t, seed, args) for seed in range(args.seeds)] for t in args.lengths
            ]
            results[task, cell] = scores
            print(
                f"{cell:22}"
                + "".join(f"{np.mean(s):8.3f} [{min(s):5.2f},{max(s):5.2f}]" for s in scores),
                flush=True,
            )
    print("\nevery run (task, cell, T: the score of each seed)")
    for (task, cell), scores in results.items():
        for t, s in zip(args.lengths, scores):
            print(f"{task:7} {cell:22} T={t:<4}", " ".join(f"{v:.4f}" for v in s))

    fig, axes = plt.subplots(1, len(args.tasks), figsize=(6 * len(args.tasks), 4.2), squeeze=False)
    for ax, task in zip(axes[0], args.tasks):
        _, title, floor, floor_label = TASKS[task]
        for index, cell in enumerate(args.cells):
            color, style = STYLES[cell]
            scores = np.array(results[task, cell])
            # a small horizontal offset per cell keeps coinciding curves apart
            xs = np.array(args.lengths, float) * (1 + 0.03 * (index - len(args.cells) / 2))
            mean = scores.mean(1)
            ax.errorbar(
                xs,
                mean,
                yerr=[mean - scores.min(1), scores.max(1) - mean],
                fmt=style,
                color=color,
                label=cell,
                capsize=2,
                markersize=5,
            )
            for column in scores.T:
                ax.plot(xs, column, ".", color=color, alpha=0.35, markersize=4)
        ax.axhline(floor, color="grey", linestyle=":", label=floor_label)
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(args.lengths, [str(t) for t in args.lengths])
        ax.set_ylim(min(-0.05, floor - 0.05), 1.05)
        ax.set_xlabel("time lag T")
        ax.set_title(title)
    axes[0][0].legend(fontsize=8)
    save(fig, args.output)
    print(f"{time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
