"""BLEU of a trained translator under beam-search settings: length normalisation, the
GNMT length and coverage penalties, and the two stop rules
(`kerasrnn.decoding.BeamSearch`, `CompetingBeamSearch`).

Decodes test_2016_flickr (1,000 sentences) with a run of `bench/translator.py` once per
setting and prints one table: sacreBLEU corpus BLEU (cased unless the run lower-cased),
the mean output length against the references', and decoding speed.

    PYTHONPATH=. python bench/translator_beam_settings.py runs/bench-translator-small-cased

The run is read as `python -m recipes.translator evaluate --set output_dir=RUN` reads it;
only the decoding options change between rows.
"""

import argparse
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import timing  # noqa: E402  (bench/, the script's folder)
from kerasrnn.decoding import BeamSearch, CompetingBeamSearch, Scorer  # noqa: E402
from recipes import common, translator  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"
# (label, the beam search of k beams); the first row is the recipe's default.
SETTINGS = [
    ("average (default)", lambda k: BeamSearch(k, scorer=Scorer("average"))),
    ("none", lambda k: BeamSearch(k, scorer=Scorer(None))),
    ("wu alpha=0.6", lambda k: BeamSearch(k, scorer=Scorer("wu", 0.6))),
    ("wu alpha=1.0", lambda k: BeamSearch(k, scorer=Scorer("wu", 1.0))),
    ("wu alpha=0.6, coverage beta=0.2", lambda k: BeamSearch(k, scorer=Scorer("wu", 0.6, 0.2))),
    ("wu alpha=0.6, coverage beta=0.4", lambda k: BeamSearch(k, scorer=Scorer("wu", 0.6, 0.4))),
    ("wu alpha=1.0, coverage beta=0.2", lambda k: BeamSearch(k, scorer=Scorer("wu", 1.0, 0.2))),
    (
        "average, coverage beta=0.2",
        lambda k: BeamSearch(k, scorer=Scorer("average", coverage_penalty_weight=0.2)),
    ),
    ("average, stop_rule=compete", lambda k: CompetingBeamSearch(k, scorer=Scorer("average"))),
    ("wu alpha=0.6, stop_rule=compete", lambda k: CompetingBeamSearch(k, scorer=Scorer("wu", 0.6))),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a trained translator run (bench/translator.py)")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument(
        "--test-sentences",
        type=int,
        default=0,
        help="score the first N test sentences only (0: all)",
    )
    args = parser.parse_args()

    import tensorflow as tf

    from kerasrnn.data import load_parallel_text
    from kerasrnn.metrics import corpus_bleu

    config = common.saved_config(translator.DEFAULTS, args.run_dir)
    data = pathlib.Path(args.data)
    sources, references = load_parallel_text(
        data / "test_2016_flickr.de.gz", data / "test_2016_flickr.en.gz"
    )
    if args.test_sentences:
        sources, references = sources[: args.test_sentences], references[: args.test_sentences]
    base = translator.Translator.from_run(config)
    tf.get_logger().setLevel("ERROR")  # one tf.function per row is the point: no retrace note
    if config["lowercase"]:  # as the recipe's evaluate: the target tokenizer's lower-casing
        from kerasrnn.data.text import lower_graph

        references = [
            r.decode("utf-8")
            for r in lower_graph(list(references), config["target_tokenizer"]).numpy()
        ]
    reference_words = sum(len(r.split()) for r in references) / len(references)
    print(
        f"run: {args.run_dir}; test_2016_flickr, {len(sources)} sentences, beam "
        f"{args.beam_size}; BLEU {'cased' if not config['lowercase'] else 'lower-cased'}"
        f"; reference length {reference_words:.2f} words"
    )
    print(f"{'setting':36}{'BLEU':>7}{'words':>7}{'sent/s':>8}")
    for label, search in SETTINGS:
        strategy = search(args.beam_size)
        base.translate(sources[:2], strategy)  # trace outside the timing
        hypotheses, seconds = timing.timed(lambda: base.translate(sources, strategy))
        words = sum(len(h.split()) for h in hypotheses) / len(hypotheses)
        bleu = corpus_bleu(hypotheses, references).score
        print(f"{label:36}{bleu:7.2f}{words:7.2f}{len(sources) / seconds:8.1f}", flush=True)


if __name__ == "__main__":
    main()
