"""Decoding throughput of this code's translator against an older version's, side by side.

Each version decodes Multi30k's test_2016_flickr (1,000 sentences, batches of 64) with
its own `Translator.translate` on a model it trained itself with the same command. The
versions take turns, one fresh process per measurement (the old code cannot be imported
beside the new), for `--rounds` rounds; each process traces its decoder on two sentences
first, then times one pass over the test set per beam size.

    git worktree add ../kerasrnn-4a679ed 4a679ed     # the code of issue 19's 65.7 sent/s
    (cd ../kerasrnn-4a679ed && PYTHONPATH=. python bench/translator.py --set \\
        output_dir=runs/old-small-cased epochs=14 lowercase=false embedding_dim=128 \\
        encoder_units=128 decoder_units=256 attention_units=128 dropout=0.3)
    PYTHONPATH=. python bench/translator_side_by_side.py \\
        --old ../kerasrnn-4a679ed ../kerasrnn-4a679ed/runs/old-small-cased \\
        --new . runs/bench-translator-small-cased

`--new-set KEY=VALUE ...` changes the new run's config for decoding (e.g.
`readout_dtype=bfloat16`, an option the old code does not have).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

import timing  # bench/, the script's folder

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"


def time_one(run_dir, data, beam_sizes, overrides):
    """In a process whose PYTHONPATH is one version's root: {beam: sentences/s}."""
    from kerasrnn.data import load_parallel_text
    from recipes import common, translator

    sources, _ = load_parallel_text(
        pathlib.Path(data) / "test_2016_flickr.de.gz", pathlib.Path(data) / "test_2016_flickr.en.gz"
    )
    model = translator.Translator.from_run(
        common.saved_config(translator.DEFAULTS, run_dir, overrides)
    )
    speeds = {}
    for beam in beam_sizes:
        model.translate(sources[:2], beam)  # trace outside the timing
        _, seconds = timing.timed(lambda: model.translate(sources, beam))
        speeds[beam] = len(sources) / seconds
    return speeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", nargs=2, metavar=("REPO", "RUN_DIR"))
    parser.add_argument("--new", nargs=2, metavar=("REPO", "RUN_DIR"))
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--beam-sizes", type=int, nargs="+", default=[5, 1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--new-set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="config changes for the new run (strings)",
    )
    parser.add_argument("--time-one", metavar="RUN_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--overrides", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_one:  # the child process
        print(
            json.dumps(
                time_one(args.time_one, args.data, args.beam_sizes, json.loads(args.overrides))
            )
        )
        return
    if not (args.old and args.new):
        parser.error("--old and --new are both required")

    versions = {"old": args.old, "new": args.new}
    if any("=" not in item for item in args.new_set):
        parser.error("--new-set takes KEY=VALUE items")
    overrides = {"old": {}, "new": dict(item.split("=", 1) for item in args.new_set)}
    speeds = {name: {beam: [] for beam in args.beam_sizes} for name in versions}
    print(
        f"# load average {os.getloadavg()[0]:.1f}; test_2016_flickr, 1,000 sentences; "
        f"new run's config changes: {overrides['new'] or 'none'}"
    )
    for round_ in range(args.rounds):
        # one process per measurement; the order of the two rotates (alternates) by round
        for name, (repo, run_dir) in timing.rotated(versions.items(), round_):
            child = subprocess.run(
                [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--data",
                    os.path.abspath(args.data),
                    "--beam-sizes",
                    *map(str, args.beam_sizes),
                    "--time-one",
                    os.path.abspath(run_dir),
                    "--overrides",
                    json.dumps(overrides[name]),
                ],
                cwd=repo,
                capture_output=True,
                text=True,
                check=True,
                env=dict(os.environ, PYTHONPATH=os.path.abspath(repo), TF_CPP_MIN_LOG_LEVEL="2"),
            )
            measured = json.loads(child.stdout.strip().splitlines()[-1])
            for beam in args.beam_sizes:
                speeds[name][beam].append(measured[str(beam)])
            print(
                f"round {round_}, {name}: "
                + ", ".join(f"beam {b} {measured[str(b)]:.1f}" for b in args.beam_sizes)
                + " sentences/s",
                flush=True,
            )
    for beam in args.beam_sizes:
        ratios = timing.ratios(speeds["new"][beam], speeds["old"][beam])
        print(
            f"beam {beam}: old {statistics.median(speeds['old'][beam]):.1f}, new "
            f"{statistics.median(speeds['new'][beam]):.1f} sentences/s (medians); "
            f"new / old per round: median {statistics.median(ratios):.2f} "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
        )
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
