"""Decoding throughput of a trained translator: batches in the order given against
batches of similar lengths (`TextTranslator.translate`, which sorts by length).

A batch decodes until its longest output ends, so grouping similar source lengths
wastes fewer steps. Both contenders run the same traced `decode` on test_2016_flickr
(1,000 sentences, batches of 64), interleaved round by round in one process; the
script checks that both give the same translations and prints sentences/s per round
and the speed-up's median and range.

    PYTHONPATH=. python bench/translator_batching.py runs/bench-translator-small-cased
"""

import argparse
import os
import statistics

import timing  # bench/
import trained_translator  # bench/: the run, its test set and model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    trained_translator.add_arguments(parser)
    parser.add_argument("--beam-sizes", type=int, nargs="+", default=[5, 1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    import tensorflow as tf

    sources = trained_translator.test_sources(args.data)
    model = trained_translator.load(args.run_dir)
    print(
        f"run: {args.run_dir}; {len(sources)} sentences, batches of {args.batch_size}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for beam in args.beam_sizes:
        model.translate(sources[:2], beam)  # traces the function both contenders call
        decode = model._functions[beam, None]

        def in_order():
            out = []
            for start in range(0, len(sources), args.batch_size):
                strings, _ = decode(tf.constant(sources[start : start + args.batch_size]))
                out += [row[0].decode("utf-8") for row in strings.numpy()]
            return out

        outputs = {}

        def report(round_, seconds, beam=beam):
            same = sum(a == b for a, b in zip(outputs["in order"], outputs["by length"]))
            print(
                f"beam {beam}, round {round_}: in order "
                f"{len(sources) / seconds['in order']:.1f} sentences/s, by length "
                f"{len(sources) / seconds['by length']:.1f}; identical outputs "
                f"{same}/{len(sources)}",
                flush=True,
            )

        seconds = timing.interleaved_rounds(
            [("in order", in_order), ("by length", lambda: model.translate(sources, beam))],
            args.rounds,
            after_call=outputs.__setitem__,
            after_round=report,
        )
        speedups = timing.ratios(seconds["in order"], seconds["by length"])
        print(
            f"beam {beam}: by length / in order, median {statistics.median(speedups):.2f}"
            f" (min {min(speedups):.2f}, max {max(speedups):.2f})"
        )


if __name__ == "__main__":
    main()
