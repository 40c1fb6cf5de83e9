"""Beam-search translation throughput: `Seq2Seq.generate` compiled once per shape
against the old path, interleaved in one process.

The model has the reduced Multi30k translator's shape (issue 19 item 3): vocabularies
of 8,050 German / 6,197 English ids, 128-d embeddings, a bidirectional GRU encoder of
128 + 128 units, a GRU decoder of 256 units with Bahdanau attention of 128 units, the
learned bridge. Its weights are random (seeded): both contenders decode the same model,
so the ratio is the figure; random weights rarely pick the end token, so every
hypothesis runs to `--max-length` (60) steps, which makes the absolute sentences/s a
pessimistic bound for a trained model (whose hypotheses end after ~15 tokens).

Sources: the first `--sentences` sentences of the Multi30k 2016 test set (German),
as random ids of each sentence's real length (words and punctuation), in batches of
64 in file order, padded per batch, as the translator feeds them.

Contenders, each over the same batches:

* old: what the translator ran before (and what `generate(jit_compile=False)` still
  is): the whole `generate` inside one `tf.function` over (batch, source_length) of
  any size, the decoding loop as graph ops.
* new, in the translator's tf.function: the same outer `tf.function`, `generate`
  nesting its cached decoder compiled with XLA (`jit_compile=True`; without XLA the
  nested graph is the old path's).
* old, eager call: `model.generate(ids, "beam")` from Python as it was (and as
  `jit_compile=False` still is): the loop op by op.
* new, eager call: the same call now, the cached compiled decoder per source shape
  (a tf.function graph); and with `jit_compile=True` (XLA).

Method: every contender first runs over all batches (tracing and XLA compiling each
shape, timed and reported), then `--rounds` interleaved rounds each time one pass over
all batches per contender, the order rotating; a contender's ratio in a round is the
old path's time over its time in that same round (> 1: faster).

With `--against REF` (a git revision) the contenders are the decoding code of REF
and of the working tree instead, each through `generate` compiled (the default) and
as called (`jit_compile=False`): REF's `kerasrnn/decoding/beam_search.py` and
`sampling.py` are loaded from git under another name (their classes over this tree's
`DecodingStrategy`, constraints and scorer), so both run in one process, interleaved.

    python -m bench decoding                 # 256 sentences, 3 rounds
    python -m bench decoding --method greedy
    python -m bench decoding --against main --rounds 5
"""

import gzip
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrnn  # noqa: E402
from bench import suite, timing  # noqa: E402
from kerasrnn.seq2seq import RNNEncoder, Seq2Seq, Seq2SeqBackbone  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"
SOURCE_VOCAB, TARGET_VOCAB, EMBEDDING, ENCODER, DECODER, ATTENTION = 8050, 6197, 128, 128, 256, 128


def build_model(seed=0):
    keras.utils.set_random_seed(seed)
    encoder = RNNEncoder(kerasrnn.GRUCell(ENCODER), bidirectional=True)
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(DECODER), kerasrnn.BahdanauAttention(ATTENTION), kerasrnn.AttendThenRun()
    )
    model = Seq2Seq(
        Seq2SeqBackbone(
            SOURCE_VOCAB,
            TARGET_VOCAB,
            encoder=encoder,
            decoder_cell=cell,
            bridge="dense",
            embedding_dim=EMBEDDING,
        )
    )
    model.build()
    return model


def source_batches(path, sentences, batch_size=64, seed=0):
    """Random ids of the real sentence lengths, batch by batch, padded with 0."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lengths = [len(re.findall(r"\w+|[^\w\s]", line)) for line, _ in zip(f, range(sentences))]
    rng = np.random.default_rng(seed)
    batches = []
    for start in range(0, len(lengths), batch_size):
        chunk = lengths[start : start + batch_size]
        ids = np.zeros((len(chunk), max(chunk)), "int32")
        for row, length in enumerate(chunk):
            ids[row, :length] = rng.integers(4, SOURCE_VOCAB, length)
        batches.append(ids)
    return lengths, batches


def contenders(model, options):
    import tensorflow as tf

    spec = [tf.TensorSpec([None, None], tf.int32)]
    old = tf.function(
        lambda ids: model.generate(ids, jit_compile=False, **options).tokens, input_signature=spec
    )
    nested = tf.function(
        lambda ids: model.generate(ids, jit_compile=True, **options).tokens, input_signature=spec
    )

    def called(jit_compile):
        return lambda ids: keras.ops.convert_to_numpy(
            model.generate(ids, jit_compile=jit_compile, **options).tokens
        )

    return [
        ("old: generate in tf.function", lambda ids: old(ids).numpy()),
        ("new: generate (XLA) in tf.function", lambda ids: nested(ids).numpy()),
        ("old: generate, eager call", called(False)),
        ("new: generate, eager call", called("auto")),
        ("new: generate, eager call, XLA", called(True)),
    ]


def reference_strategies(revision):
    """REF's `BeamSearch` and `GreedySearch` classes (see the module docstring)."""
    classes = {}
    for name in ("sampling", "beam_search"):
        try:
            source = subprocess.run(
                ["git", "show", f"{revision}:kerasrnn/decoding/{name}.py"],
                check=True,
                capture_output=True,
                text=True,
                cwd=pathlib.Path(__file__).resolve().parent.parent,
            ).stdout
        except subprocess.CalledProcessError as error:
            sys.exit(f"decoding.py: error: --against {revision}: {error.stderr.strip()}")
        # registered under another package, not over this tree's classes
        source = source.replace('package="kerasrnn"', 'package="kerasrnn_against"')
        module = types.ModuleType(f"kerasrnn_against_{name}")
        exec(compile(source, f"{revision}:kerasrnn/decoding/{name}.py", "exec"), module.__dict__)
        classes.update(vars(module))
    return classes["BeamSearch"], classes["GreedySearch"]


def against_contenders(model, options, reference):
    """This tree's strategy and REF's, through `generate` compiled and as called."""

    def called(strategy, jit_compile):
        settings = dict(options, strategy=strategy)
        return lambda ids: keras.ops.convert_to_numpy(
            model.generate(ids, jit_compile=jit_compile, **settings).tokens
        )

    return [
        ("REF: generate, compiled", called(reference, "auto")),
        ("this tree: generate, compiled", called(options["strategy"], "auto")),
        ("REF: generate, eager loop", called(reference, False)),
        ("this tree: generate, eager loop", called(options["strategy"], False)),
    ]


def main(argv=None):
    parser = suite.parser("decoding", __doc__)
    parser.add_argument("--data", default=str(DATA / "test_2016_flickr.de.gz"))
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--method", choices=["beam", "greedy"], default="beam")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--against",
        metavar="REF",
        help="time the decoding code of git revision REF against this tree's instead",
    )
    args = parser.parse_args(argv)
    if keras.backend.backend() != "tensorflow":
        parser.error("the old path is the translator's tf.function: run on tensorflow")
    lengths, batches = source_batches(args.data, args.sentences)
    model = build_model()
    strategy = (
        kerasrnn.decoding.BeamSearch(args.beam_size)
        if args.method == "beam"
        else kerasrnn.decoding.GreedySearch()
    )
    options = dict(strategy=strategy, max_length=args.max_length, return_alignments=False)
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, keras {keras.__version__}; "
        f"load {os.getloadavg()[0]:.1f}; {args.method}"
        + (f" {args.beam_size}" if args.method == "beam" else "")
        + f", max_length {args.max_length}, {len(lengths)} sentences (mean length "
        f"{statistics.mean(lengths):.1f}, max {max(lengths)}) in {len(batches)} batches "
        f"of 64; {args.rounds} interleaved rounds",
        flush=True,
    )
    if args.against:
        beam, greedy = reference_strategies(args.against)
        reference = beam(args.beam_size) if args.method == "beam" else greedy()
        runs = against_contenders(model, options, reference)
    else:
        runs = contenders(model, options)
    outputs = {}
    for label, run in runs:
        outputs[label], took = timing.timed(lambda run=run: [run(ids) for ids in batches])
        print(f"# {label}: first pass (tracing, compiling) {took:.1f} s", flush=True)
    reference = outputs[runs[0][0]]
    for label, _ in runs[1:]:
        # the same model: the same best hypotheses, up to float rounding (random weights
        # give near-uniform distributions, where a last-bit difference can flip a pick)
        same = sum(
            int(np.all(a[:, 0] == b[:, 0], axis=-1).sum())
            for a, b in zip(reference, outputs[label])
        )
        print(f"# {label}: {same}/{len(lengths)} best hypotheses token-identical to the first's")

    def one_pass(run):
        for ids in batches:
            run(ids)

    seconds = timing.interleaved_rounds(
        [(label, lambda run=run: one_pass(run)) for label, run in runs],
        args.rounds,
        after_round=lambda r, _: print(
            f"# round {r + 1}: load {os.getloadavg()[0]:.1f}", flush=True
        ),
    )
    # Where the time goes: the readout matmul alone, (batch x beam) rows x 512 x 6,197
    # at each of max_length steps, as one graph (the decoder's own readout weights).
    if args.method == "beam" and not args.against:
        import tensorflow as tf

        kernel = model.readout.kernel
        rows = tf.random.normal((64 * args.beam_size, kernel.shape[0]))
        readout = tf.function(lambda h: tf.reduce_sum(tf.matmul(h, kernel)))
        readout(rows)
        _, alone = timing.timed(
            lambda: [readout(rows) for _ in range(args.max_length * len(batches))]
        )
        share = alone / statistics.median(seconds[runs[0][0]])
        print(
            f"# the readout matmul alone ({64 * args.beam_size} x {kernel.shape[0]} x "
            f"{kernel.shape[1]}, {args.max_length} steps per batch): {100 * share:.0f}% "
            "of the old path's time",
            flush=True,
        )
    # the speed-up of each contender over the old path (--against: over REF's code on
    # the same path, the row above)
    baseline = "REF" if args.against else "old"
    print(f"{'contender':<40} {'sentences/s':>11} {'speed-up vs ' + baseline:>16} {'min-max':>11}")
    for i, (label, _) in enumerate(runs):
        old = seconds[runs[i - i % 2 if args.against else 0][0]]
        speedups = timing.ratios(old, seconds[label])
        rate = len(lengths) / statistics.median(seconds[label])
        print(
            f"{label:<40} {rate:11.1f} {statistics.median(speedups):16.2f} "
            f"{min(speedups):5.2f}-{max(speedups):<5.2f}"
        )
    if args.against:
        return  # a comparison of two revisions: printed, not the canonical figure
    eager = timing.ratios(
        seconds["old: generate, eager call"], seconds["new: generate, eager call"]
    )
    rate = len(lengths) / statistics.median(seconds["new: generate, eager call"])
    suite.write_result(
        args,
        "decoding",
        "Beam-search decoding throughput of Seq2Seq.generate",
        {
            "eager_speedup": suite.figure(
                statistics.median(eager),
                "eager generate: compiled per shape / the uncompiled loop",
                1,
                "x",
                spread={"kind": "min-max", "low": min(eager), "high": max(eager)},
            ),
            "sentences_per_second": suite.figure(rate, "eager generate, sentences/s", 1),
        },
        baseline=suite.figure(
            len(lengths) / statistics.median(seconds["old: generate, eager call"]),
            "the uncompiled loop called eagerly, sentences/s",
            1,
        ),
    )


if __name__ == "__main__":
    main()
