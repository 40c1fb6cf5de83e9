"""Beam-search throughput of a trained translator with and without `drop_finished`
(beam search stops computing the rows of examples that have finished).

Both contenders are the translator's own `translate` (batches of similar lengths) on
test_2016_flickr, one with `drop_finished=False` passed through to beam search. They
run interleaved, round by round, in one process; the script checks that both give the
same translations and prints sentences/s per round and the speed-up's median and range.

    PYTHONPATH=. python bench/translator_drop_finished.py runs/bench-translator-small-cased
"""
import argparse
import os
import statistics
import time

import trained_translator  # bench/: the run, its test set and model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    trained_translator.add_arguments(parser)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    sources = trained_translator.test_sources(args.data)
    contenders = {}
    for name, drop in (("all rows", False), ("drop finished", True)):
        model = trained_translator.load(args.run_dir)
        model.options["drop_finished"] = drop
        model.translate(sources[:2], args.beam_size)  # trace outside the timing
        contenders[name] = model
    print(f"run: {args.run_dir}; {len(sources)} sentences, batches of {args.batch_size}, "
          f"beam {args.beam_size}; load average {os.getloadavg()[0]:.1f}")
    speedups = []
    for round_ in range(args.rounds):
        timed = {}
        names = list(contenders) if round_ % 2 == 0 else list(contenders)[::-1]
        for name in names:
            began = time.perf_counter()
            out = contenders[name].translate(sources, args.beam_size,
                                             batch_size=args.batch_size)
            timed[name] = out, time.perf_counter() - began
        (base, base_s), (new, new_s) = timed["all rows"], timed["drop finished"]
        same = sum(a == b for a, b in zip(base, new))
        speedups.append(base_s / new_s)
        print(f"round {round_}: all rows {len(sources) / base_s:.1f} sentences/s, drop "
              f"finished {len(sources) / new_s:.1f}; identical outputs "
              f"{same}/{len(sources)}", flush=True)
    print(f"drop finished / all rows: median {statistics.median(speedups):.2f} "
          f"(min {min(speedups):.2f}, max {max(speedups):.2f}); load average "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
