"""Figure: the loss of a run that explodes without gradient clipping, and of the same run
with it.

The language-model recipe's building blocks on the first 100,000 tokens of the Penn
Treebank training text: Zaremba et al.'s "small" model (2 x 200 LSTM, stateful, 20
unrolled steps, batch 20, weights uniform in +-0.1, loss summed over the 20 steps),
trained by plain SGD with their learning rate 1. The same seed, data and initial
weights twice: once unclipped, once with the global gradient norm clipped at 5
(`global_clipnorm=5`, Zaremba et al.'s setting). Prints the loss every 25 batches and
the largest gradient norm of each run.

    PYTHONPATH=. python docs/figures/gradient_clipping.py [--cell lstm] [--lr 1.0]
"""

import argparse
import math
import time

import keras
import numpy as np
import tensorflow as tf

from figlib import plt, save
from kerasrnn.data import language_model as lm_data
from kerasrnn.losses import SequenceCrossEntropy
from kerasrnn.models import LanguageModelPreprocessor
from recipes import language_model

TOKENS = 100_000
CONFIG = dict(
    language_model.DEFAULTS,
    units=200,
    num_layers=2,
    steps=20,
    batch_size=20,
    init_scale=0.1,
    seed=5,
    valid_file=None,
    test_file=None,
)


def train_curve(x, y, clipnorm, vocabulary, lr):
    """Per-batch loss (NaN once diverged) and gradient norm of one epoch."""
    keras.utils.set_random_seed(CONFIG["seed"])
    preprocessor = LanguageModelPreprocessor(vocabulary, CONFIG["level"])
    model = language_model.build_model(CONFIG, preprocessor, stateful=True)
    # the recipe's loss: the mean over the real tokens, times the window length with
    # loss_reduction sum_over_time
    loss_fn = SequenceCrossEntropy(per_sequence=CONFIG["loss_reduction"] == "sum_over_time")
    optimizer = keras.optimizers.SGD(lr, global_clipnorm=clipnorm)

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            loss = loss_fn(targets, model(inputs, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss, tf.linalg.global_norm(gradients)

    losses, norms = [], []
    batch = CONFIG["batch_size"]
    for start in range(0, len(x), batch):
        loss, norm = (float(v) for v in step(x[start : start + batch], y[start : start + batch]))
        losses.append(loss if math.isfinite(loss) else float("nan"))
        norms.append(norm if math.isfinite(norm) else float("inf"))
        if not math.isfinite(loss):  # diverged: every later loss is NaN too
            losses += [float("nan")] * (len(x) // batch - len(losses))
            break
    return np.array(losses), np.array(norms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="lstm", help="a language_model cell name")
    parser.add_argument("--lr", type=float, default=1.0, help="SGD learning rate")
    parser.add_argument("--output", default="gradient_clipping.png")
    args = parser.parse_args()
    CONFIG["cell"] = args.cell
    began = time.time()
    splits = language_model.read_splits(CONFIG)
    vocabulary = lm_data.build_vocabulary(
        splits["train"], max_size=CONFIG["max_vocab"] or None, min_freq=CONFIG["min_freq"]
    )
    stream = lm_data.encode_stream(splits["train"], vocabulary)[:TOKENS]
    x, y = lm_data.stream_windows(stream, CONFIG["batch_size"], CONFIG["steps"])
    runs = {
        "no clipping": train_curve(x, y, None, vocabulary, args.lr),
        "global_clipnorm=5": train_curve(x, y, 5.0, vocabulary, args.lr),
    }

    print(
        f"loss per batch (summed over {CONFIG['steps']} steps, mean over the batch), "
        f"{args.cell} cell, SGD lr {args.lr}"
    )
    print(f"{'batch':>8}" + "".join(f"{name:>20}" for name in runs))
    for i in range(len(runs["no clipping"][0])):  # every plotted point
        print(f"{i:8d}" + "".join(f"{run[0][i]:20.1f}" for run in runs.values()))
    for name, (losses, norms) in runs.items():
        finite = losses[np.isfinite(losses)]
        print(
            f"{name}: largest gradient norm {norms.max():.3g}, "
            f"{np.isnan(losses).sum()} of {len(losses)} batches without a finite loss, "
            f"final loss {finite[-1]:.1f}"
        )

    fig, ax = plt.subplots(figsize=(7, 3.8))
    for (name, (losses, _)), color in zip(runs.items(), ("tab:red", "tab:blue")):
        ax.plot(losses, color=color, label=name, linewidth=1)
        if np.isnan(losses).any():
            last = int(np.argmax(np.isnan(losses)))
            ax.axvline(last, color=color, linestyle=":", linewidth=1)
            ax.annotate(
                "loss is NaN from here",
                (last, np.nanmax(losses)),
                color=color,
                xytext=(5, -10),
                textcoords="offset points",
                fontsize=8,
            )
    ax.set_yscale("log")
    ax.set_xlabel("training batch")
    ax.set_ylabel(f"loss (summed over {CONFIG['steps']} steps)")
    ax.set_title(f"PTB language model ({args.cell}), SGD lr {args.lr}, with and without clipping")
    ax.legend()
    save(fig, args.output)
    print(f"{time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
