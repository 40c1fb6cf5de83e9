"""Figure: training-step time of the cells against Keras' layers and PyTorch (bench/cells.py).

Runs `bench/cells.py` (batch 64, 100 steps, 128 inputs, 256 units, Adam; PyTorch's CPU
LSTM/GRU as the reference when torch is installed) and draws each contender's ms/step as
a ratio to the reference measured in the same process. `--json FILE` plots an earlier
run's figures instead of measuring again.

    PYTHONPATH=. python docs/figures/cell_speed.py [--json docs/figures/cell_speed.json]
"""
import argparse
import json
import os
import sys

from figlib import HERE, plt, save

sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
MEASURED = os.path.join(HERE, "cell_speed.json")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="plot this bench/cells.py --json file, do not measure")
    args = parser.parse_args()
    if args.json:
        with open(args.json) as f:
            rows = json.load(f)
        print(f"{'contender':<52} {'ms/step':>9} {'ratio':>7}")
        for row in rows:
            print(f"{row['contender']:<52} {row['ms_per_step']:9.1f} {row['ratio']:7.2f}x")
    else:
        import cells  # bench/cells.py: prints its table as it measures

        rows = cells.main(["--json", MEASURED])

    kinds = list(dict.fromkeys(row["kind"] for row in rows))  # in the bench's order
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        chosen = [row for row in rows if row["kind"] == kind][::-1]
        colors = ["tab:grey" if row["contender"] == row["reference"] else
                  "tab:blue" if row["contender"].startswith("kerasrnn") else "tab:orange"
                  for row in chosen]
        ax.barh(range(len(chosen)), [row["ratio"] for row in chosen], color=colors)
        ax.set_yticks(range(len(chosen)), [row["contender"] for row in chosen], fontsize=8)
        for i, row in enumerate(chosen):
            ax.text(row["ratio"], i, f" {row['ratio']:.2f}x", va="center", fontsize=8)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel(f"step time relative to {chosen[0]['reference']}")
        ax.set_title(kind.upper())
        ax.set_xlim(0, max(row["ratio"] for row in chosen) * 1.25)
    save(fig, "cell_speed.png")


if __name__ == "__main__":
    main()
