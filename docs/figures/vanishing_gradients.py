"""Figure: the norm of dL/dh_j against the distance J - j, for each cell, at
initialisation and after training on the long-dependency task.

Each model (`figlib.long_dependency_model`: embedding, one 32-unit recurrent layer,
softmax) is run step by step over 256 sequences of the long-dependency task with T
distractors (J = T + 1 steps), so that every state h_j is a tensor of its own; L is the
summed cross-entropy of the answer after the last step. The curve is the mean over the
sequences of ||dL/dh_j||, first for the untrained model, then for the same model after
`figlib.train_long_dependency`. A trained model's loss, and with it every gradient, is
small, so the figure divides each curve by its value at distance 0: what it shows is how
much of the error signal at the last step still reaches h_j. For the LSTM, h_j is the
output state; the gradient reaching it includes every path to the loss, the one through
the cell state c too.

    PYTHONPATH=. python docs/figures/vanishing_gradients.py
"""

import time

import keras
import numpy as np
import tensorflow as tf

from figlib import (
    CELLS,
    COLORS,
    NUM_CLASSES,
    VOCAB,
    long_dependency_model,
    plt,
    save,
    train_long_dependency,
)
from kerasrnn.tasks import long_dependency_task

DISTRACTORS = 50
DISTANCES = (0, 1, 2, 5, 10, 20, 30, 40, 50)


def state_gradient_norms(model, tokens, labels):
    """Mean over the batch of ||dL/dh_j|| for j = 1..J, L the summed loss at step J."""
    embedded = model.get_layer("embedding")(tokens)
    cell = model.get_layer("rnn").cell
    states = cell.get_initial_state(tokens.shape[0])
    hidden = []
    with tf.GradientTape() as tape:
        for t in range(tokens.shape[1]):
            _, states = cell(embedded[:, t], states)
            hidden.append(states[0])  # the tensor that step t + 1 reads
        probabilities = model.get_layer("answer")(states[0])
        loss = tf.reduce_sum(keras.losses.sparse_categorical_crossentropy(labels, probabilities))
    gradients = tape.gradient(loss, hidden)
    return np.array([float(tf.reduce_mean(tf.norm(g, axis=-1))) for g in gradients])


def main():
    began = time.time()
    tokens, labels = long_dependency_task(256, DISTRACTORS, NUM_CLASSES, VOCAB, seed=7)
    curves = {}
    for name in CELLS:
        initial = state_gradient_norms(long_dependency_model(name), tokens, labels)
        model, accuracy = train_long_dependency(name, DISTRACTORS)
        trained = state_gradient_norms(model, tokens, labels)
        curves[name] = (initial[::-1], trained[::-1], accuracy)  # index = distance J - j

    print(f"mean ||dL/dh_j|| by distance J - j (T = {DISTRACTORS} distractors)")
    print(f"{'cell':10} {'':9}" + "".join(f"{d:>9}" for d in DISTANCES))
    for name, (initial, trained, accuracy) in curves.items():
        for label, norms in (("init", initial), ("trained", trained)):
            print(f"{name:10} {label:9}" + "".join(f"{norms[d]:9.1e}" for d in DISTANCES))
        print(f"{name:10} held-out accuracy after training: {accuracy:.3f}")
    # Every plotted point: the curves divided by their value at distance 0, as drawn.
    columns = [
        (name, label, curve[index] / curve[index][0])
        for name, curve in curves.items()
        for index, label in ((0, "init"), (1, "trained"))
    ]
    print("\nplotted: mean ||dL/dh_j|| / mean ||dL/dh_J|| by distance J - j")
    print(f"{'J - j':>5}" + "".join(f"{f'{name} {label}':>20}" for name, label, _ in columns))
    for distance in range(len(columns[0][2])):
        print(f"{distance:5d}" + "".join(f"{values[distance]:20.3e}" for *_, values in columns))

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, index, title in ((axes[0], 0, "at initialisation"), (axes[1], 1, "after training")):
        for name, curve in curves.items():
            distances = np.arange(len(curve[index]))
            ax.semilogy(distances, curve[index] / curve[index][0], color=COLORS[name], label=name)
        ax.set_title(title)
        ax.set_xlabel("distance J - j")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("mean ||dL/dh_j|| / mean ||dL/dh_J||")
    axes[1].legend()
    save(fig, "vanishing_gradients.png")
    print(f"{time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
