"""Figure: held-out accuracy against the number of inert distractors T, for each cell.

The long-term dependency problem (Bengio et al. 1994, `kerasrnn.tasks.long_dependency_task`):
one relevant symbol of four, then T distractors, the answer asked for at the end. Each
(cell, T) trains a fresh 32-unit model (`figlib.long_dependency_model`: Adam 3e-3,
clipnorm 1) for at most 20 epochs of 2,048 sequences (stopping once it is solved) and is
scored on 1,024 held-out ones; chance is 25%.

    PYTHONPATH=. python docs/figures/inert_distractors.py

(The page's main long-dependency figure, on the adding and copy tasks, is
`long_term_dependency.py`; this one shows why a task with inert distractors is not a
test of long memory.)
"""

import time

from figlib import CELLS, COLORS, NUM_CLASSES, plt, save, train_long_dependency

DISTRACTORS = (10, 25, 50, 100, 200)


def main():
    began = time.time()
    print("held-out accuracy by number of distractors T")
    print(f"{'cell':10}" + "".join(f"{f'T={t}':>8}" for t in DISTRACTORS))
    results = {}
    for name in CELLS:
        results[name] = [train_long_dependency(name, t)[1] for t in DISTRACTORS]
        print(f"{name:10}" + "".join(f"{a:8.3f}" for a in results[name]), flush=True)

    fig, ax = plt.subplots(figsize=(6, 3.8))
    # Curves that coincide stay visible: each cell its own marker size and dash.
    styles = zip(("o-", "s--", "^-.", "D:"), (11, 8, 6, 4))
    for (name, accuracies), (style, size) in zip(results.items(), styles):
        ax.plot(
            DISTRACTORS,
            accuracies,
            style,
            color=COLORS[name],
            label=name,
            markersize=size,
            markerfacecolor="none" if size > 6 else COLORS[name],
        )
    ax.axhline(1 / NUM_CLASSES, color="grey", linestyle=":", label="chance")
    ax.set_xscale("log")
    ax.set_xticks(DISTRACTORS, [str(t) for t in DISTRACTORS])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("distractors T between the relevant symbol and the answer")
    ax.set_ylabel("held-out accuracy")
    ax.set_title("One symbol, then T inert distractors")
    ax.legend()
    save(fig, "inert_distractors.png")
    print(f"{time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
