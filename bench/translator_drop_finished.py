"""Beam-search throughput of a trained translator with and without `drop_finished`
(beam search stops computing the rows of examples that have finished).

Both contenders are the translator's own `translate` (batches of similar lengths) on
test_2016_flickr, one with `drop_finished=False` passed through to beam search. They
run interleaved, round by round, in one process; the script checks that both give the
same translations and prints sentences/s per round and the speed-up's median and range.

    PYTHONPATH=. python bench/translator_drop_finished.py runs/bench-translator-small-cased
"""

import argparse

import trained_translator  # bench/: the run, its test set and model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    trained_translator.add_comparison_arguments(parser)
    args = parser.parse_args()
    trained_translator.compare_options(
        args.run_dir,
        args.data,
        {"all rows": {"drop_finished": False}, "drop finished": {"drop_finished": True}},
        args.beam_size,
        args.rounds,
        args.batch_size,
    )


if __name__ == "__main__":
    main()
