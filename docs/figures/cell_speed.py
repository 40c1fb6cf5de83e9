"""Figure: training-step time of the cells against Keras' layers and PyTorch (bench/cells.py).

Runs `python -m bench cells` (batch 64, 100 steps, 128 inputs, 256 units, Adam, interleaved
rounds in one process; PyTorch's CPU LSTM/GRU as the reference when torch is installed)
and draws each contender's step time as a ratio to the reference: the bar is the median
over rounds, the whisker the min-max, and writes the rows to docs/figures/cell_speed.json.
`--json FILE` plots such a file (or a `bench/results/cells.json`, whose rows are under
"details") instead of measuring again.

    PYTHONPATH=. python docs/figures/cell_speed.py [--json docs/figures/cell_speed.json]
"""

import argparse
import json
import os
import sys

from figlib import HERE, plt, save

sys.path.insert(0, os.path.join(HERE, "..", ".."))
MEASURED = os.path.join(HERE, "cell_speed.json")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="plot the rows of this file, do not measure")
    args = parser.parse_args()
    from bench import cells

    if args.json:
        with open(args.json) as f:
            measured = json.load(f)
        measured = measured.get("details", measured)  # a bench/results file
        if "rows" not in measured:  # a result kept as its figures only
            sys.exit(
                f"{args.json} has no per-contender rows to plot; write a file with them "
                "by `python -m bench cells` (bench/results/cells.json) or by this script "
                "without --json."
            )
        rows = measured["rows"]
        print(measured["header"])
        for kind in dict.fromkeys(row["kind"] for row in rows):
            print(
                f"\n{kind.upper()}\n"
                + cells.format_table([row for row in rows if row["kind"] == kind])
            )
    else:
        rows = cells.main(["--no-results"])  # prints its table as it measures
        with open(MEASURED, "w") as f:
            json.dump({"header": f"OMP_WAIT_POLICY={cells.OMP_POLICY}", "rows": rows}, f, indent=1)

    kinds = list(dict.fromkeys(row["kind"] for row in rows))  # in the bench's order
    # PyTorch's step depends on how its OpenMP threads wait (bench/README.md), so the
    # axis names the policy the reference ran under.
    policy = cells.OMP_POLICY
    if args.json:
        policy = measured["header"].rsplit("OMP_WAIT_POLICY=", 1)[-1].split()[0]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        chosen = [row for row in rows if row["kind"] == kind][::-1]
        colors = [
            "tab:grey"
            if row["contender"] == row["reference"]
            else "tab:blue"
            if row["contender"].startswith("kerasrnn")
            else "tab:orange"
            for row in chosen
        ]
        ratios = [row["ratio"] for row in chosen]
        spread = [
            [row["ratio"] - row["ratio_min"] for row in chosen],
            [row["ratio_max"] - row["ratio"] for row in chosen],
        ]
        ax.barh(
            range(len(chosen)),
            ratios,
            color=colors,
            xerr=spread,
            capsize=2,
            error_kw={"linewidth": 0.8},
        )
        ax.set_yticks(range(len(chosen)), [row["contender"] for row in chosen], fontsize=7)
        for i, row in enumerate(chosen):
            ax.text(row["ratio_max"], i, f" {row['ratio']:.2f}x", va="center", fontsize=7)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel(
            f"step time / {chosen[0]['reference']}'s (median, min-max)\n"
            f"PyTorch with OMP_WAIT_POLICY={policy}",
            fontsize=9,
        )
        ax.set_title(kind.upper())
        ax.set_xlim(0, max(row["ratio_max"] for row in chosen) * 1.3)
    fig.tight_layout()
    save(fig, "cell_speed.png")


if __name__ == "__main__":
    main()
