"""What the benchmarks of a trained translator share: the run directory and data
arguments, the Multi30k test set (test_2016_flickr, 1,000 sentences), the model, and a
timed comparison of two sets of decoding options."""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"


def add_arguments(parser):
    parser.add_argument("run_dir", help="a trained translator run (bench/translator.py)")
    parser.add_argument("--data", default=str(DATA))


def add_comparison_arguments(parser):
    """`add_arguments` and the decoding settings of `compare_options`."""
    add_arguments(parser)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)


def test_pairs(data):
    """test_2016_flickr: (German sources, English references), lists of str."""
    from kerasrnn.data import load_parallel_text

    data = pathlib.Path(data)
    return load_parallel_text(data / "test_2016_flickr.de.gz", data / "test_2016_flickr.en.gz")


def test_sources(data):
    """The German side of test_2016_flickr, a list of str."""
    return test_pairs(data)[0]


def load(run_dir):
    """The run's `recipes.translator.Translator`."""
    from recipes import common, translator

    return translator.Translator.from_run(common.saved_config(translator.DEFAULTS, run_dir))


def compare_options(run_dir, data, contenders, beam_size, rounds, batch_size):
    """Times the run's `translate` under two sets of decoding options, interleaved in
    one process (`timing.interleaved_rounds`: the order alternating each round), on
    test_2016_flickr. `contenders` is {name: options}, the baseline first; an option is
    a key of the run's config (e.g. `readout_dtype`) or an argument of its beam search
    (e.g. `drop_finished`). Prints sentences/s and identical outputs per round, the
    second's speed-up (median, min, max) and each one's BLEU."""
    import statistics

    import timing  # bench/
    from kerasrnn.metrics import corpus_bleu
    from recipes import translator

    sources, references = test_pairs(data)
    models, strategies = {}, {}
    for name, options in contenders.items():
        model = load(run_dir)
        settings = {k: v for k, v in options.items() if k in translator.DEFAULTS}
        if settings:
            model = translator.Translator(
                model.model, model.source, model.target, {**model.config, **settings}
            )
        strategy = model.strategy(beam_size)
        searched = {k: v for k, v in options.items() if k not in settings}
        strategies[name] = type(strategy).from_config({**strategy.get_config(), **searched})
        models[name] = model
        model.translate(sources[:2], strategies[name])  # trace outside the timing
    (base, base_options), (new, new_options) = contenders.items()
    print(
        f"run: {run_dir}; {len(sources)} sentences, batches of {batch_size}, beam "
        f"{beam_size}; {new}: {new_options}; load average {os.getloadavg()[0]:.1f}"
    )
    outputs = {}

    def report(round_, seconds):
        base_s, new_s = seconds[base], seconds[new]
        same = sum(a == b for a, b in zip(outputs[base], outputs[new]))
        print(
            f"round {round_}: {base} {len(sources) / base_s:.1f} sentences/s, {new} "
            f"{len(sources) / new_s:.1f}; identical outputs {same}/{len(sources)}",
            flush=True,
        )

    seconds = timing.interleaved_rounds(
        [
            (
                name,
                lambda name=name: models[name].translate(
                    sources, strategies[name], batch_size=batch_size
                ),
            )
            for name in models
        ],
        rounds,
        after_call=outputs.__setitem__,
        after_round=report,
    )
    speedups = timing.ratios(seconds[base], seconds[new])
    print(
        f"{new} / {base}: median {statistics.median(speedups):.2f} (min "
        f"{min(speedups):.2f}, max {max(speedups):.2f}); load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        "BLEU: "
        + ", ".join(
            f"{name} {corpus_bleu(out, references).score:.2f}" for name, out in outputs.items()
        )
    )
