"""Quantisation on the trained recipe models: file size, batch-1 latency and the task
metric of float32 vs LiteRT dynamic-range int8, LiteRT float16 and ONNX dynamic int8.

For the tagger (UPOS accuracy on UD English EWT dev and test) and the classifier
(sentence polarity accuracy on the run's held-out test split), the run's task
(`from_preset`) as a Keras model (token ids in, probabilities out; `bench/serving.py`'s
`serving_model`) is written as

- a SavedModel (float32; the reference: its metric equals Keras' model),
- LiteRT float32, dynamic-range int8 and float16 (`export_litert(quantization=...)`),
- ONNX float32 and dynamic int8 (`export_onnx(quantization=...)`),

and each file is run on every dev / test example (padded to the longest sentence and
word, batches of ``--eval-batch``; LiteRT's shapes are fixed, so it has one file at that
shape and one at batch 1 for the latency). The metric's change is in percentage points
against the float32 SavedModel, with the share of tokens (sentences) whose predicted tag
(label) changed. Batch-1 latency: `timing.interleaved_rounds` over ``--sentences`` test
sentences of at most ``--length`` tokens (words of at most ``--width`` characters)
padded to that size, as `bench/serving.py` does; the
ratio is to the SavedModel's batch-1 latency in the same round.

    python -m bench quantization --tagger runs/ewt --classifier runs/polarity

The translator (``--translator RUN_DIR``, a run trained on Multi30k): the recipe's
beam-search export (`kerasrnn.export.export_task` to onnx / litert: the whole decoding
loop in the graph)
in each variant, BLEU on test_2016_flickr with every sentence translated alone (batch
1), beside the SavedModel's ``translate`` signature; latency per sentence.

    python -m bench quantization --tagger '' --classifier '' \
        --translator runs/mt-budget30
"""

import itertools
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench import serving, suite, timing  # noqa: E402

# (label, format, quantization)
VARIANTS = [
    ("SavedModel float32", "saved_model", None),
    ("LiteRT float32", "litert", None),
    ("LiteRT dynamic int8", "litert", "dynamic_int8"),
    ("LiteRT float16", "litert", "float16"),
    ("ONNX float32", "onnx", None),
    ("ONNX dynamic int8", "onnx", "dynamic_int8"),
]


# ------------------------------------------------------------------- pure helpers


def size_of(path):
    """Bytes of a file, or of every file under a folder (a SavedModel)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(
        os.path.getsize(os.path.join(folder, name))
        for folder, _, names in os.walk(path)
        for name in names
    )


def predict_all(run, arrays, batch_size):
    """`run` over every row of `arrays` in full batches of `batch_size` (the last one
    wrapped around, as fixed-shape files need): the first output, one row per input row."""
    count = len(arrays[0])
    outputs = [run(batch)[0] for batch in serving.batches_of(arrays, batch_size)]
    return np.concatenate(outputs)[:count]


def token_accuracy(probabilities, gold, word_ids):
    """Accuracy of argmax tags over the real tokens (word_ids != 0); `gold` (n, time)
    tag ids, anything on padding."""
    mask = word_ids != 0
    predicted = probabilities.argmax(-1)
    return float((predicted == gold)[mask].mean())


def changed_share(predicted, reference, mask=None):
    """The share of predictions (where `mask`) that differ from the reference's."""
    changed = predicted != reference
    return float(changed[mask].mean() if mask is not None else changed.mean())


# --------------------------------------------------------------------- the models


def tagger_task(run_dir, length, width, count):
    """The tagger's serving model, its latency inputs and its evaluation sets:
    ``{split: (arrays, gold tag ids)}`` over every dev and test sentence."""
    config, trained, splits = serving.tagger_run(run_dir)
    if trained.crf:
        raise SystemExit(f"{run_dir}: a CRF tagger; this bench takes the softmax tagger")
    tag_index = {t: i for i, t in enumerate(trained.tags)}
    sentences = serving.latency_sentences(splits["test"][0], length, width, count)
    latency = serving.tagger_arrays(trained, sentences, length, width)
    evaluation = {}
    everything = splits["valid"][0] + splits["test"][0]
    longest = max(len(s) for s in everything)
    widest = min(config["max_chars"], max(len(t) for s in everything for t in s))
    for split in ("valid", "test"):
        sentences, tags = splits[split]
        arrays = serving.tagger_arrays(trained, sentences, longest, widest)
        gold = serving.pad_ids([[tag_index[t] for t in s] for s in tags], longest)
        evaluation["dev" if split == "valid" else "test"] = (arrays, gold)
    model = serving.serving_model(trained, False)
    return model, latency, evaluation, "UPOS accuracy"


def classifier_task(run_dir, length, width, count):
    _, trained, (texts, labels) = serving.classifier_run(run_dir)
    ids = serving.classifier_ids(trained, texts)
    lengths = (ids != 0).sum(axis=1)
    rows = [row[:n] for row, n in zip(ids, lengths) if 0 < n <= length][:count]
    gold = np.array([trained.preprocessor.labels.index(label) for label in labels])
    model = serving.serving_model(trained, False)
    return model, (serving.pad_ids(rows, length),), {"test": ((ids,), gold)}, "accuracy"


def metric(probabilities, arrays, gold):
    """Token accuracy (tagger: probabilities (n, time, tags)) or accuracy (classifier)."""
    if probabilities.ndim == 3:
        return token_accuracy(probabilities, gold, arrays[0])
    return float((probabilities.argmax(-1) == gold).mean())


def build_variant(model, fmt, quantization, latency, evaluation, folder, args):
    """``(path, batch-1 runner, evaluation runner)`` of one variant."""
    names = [x.name for x in model.inputs]
    tag = f"{fmt}_{quantization or 'float32'}"
    if fmt == "saved_model":
        run, path = serving.saved_model_runner(model, folder)
        return path, run, run
    if fmt == "onnx":
        path = os.path.join(folder, f"{tag}.onnx")
        serving.export_onnx_file(model, path, False, None, None, None, quantization)
        run = serving.onnx_session(path, args.threads)
        return path, run, run
    arrays = next(iter(evaluation.values()))[0]
    width = latency[1].shape[2] if len(latency) > 1 else None
    path = os.path.join(folder, f"{tag}_b1.tflite")
    serving.export_litert_file(model, path, 1, latency[0].shape[1], width, quantization)
    eval_path = os.path.join(folder, f"{tag}_eval.tflite")
    eval_width = arrays[1].shape[2] if len(arrays) > 1 else None
    serving.export_litert_file(
        model, eval_path, args.eval_batch, arrays[0].shape[1], eval_width, quantization
    )
    return (
        path,
        serving.litert_runner(path, args.threads, names),
        serving.litert_runner(eval_path, args.threads, names),
    )


HEADER = ["file", "size MB", "x float32 size", "batch 1: ms [IQR]", "x SavedModel b1"]


def variant_cells(name, sizes, per_round):
    """A variant's `HEADER` cells: its size (MB, and against the same format's float32
    file) and its batch-1 latency (ms, and against the SavedModel's in the same rounds)."""
    base = VARIANTS[0][0]
    float_name = "ONNX float32" if name.startswith("ONNX") else "LiteRT float32"
    float_name = base if name == base else float_name
    return [
        name,
        f"{sizes[name] / 1e6:.2f}",
        f"{sizes[name] / sizes.get(float_name, sizes[name]):.2f}x",
        serving.ms_cell(per_round.get(name, [])),
        serving.ratio_cell(per_round.get(name, []), per_round.get(base, [])),
    ]


# the results file's figures: LiteRT dynamic int8 against float32, per model; and its
# tables, each model's as printed (docs/deploying.md shows them)
FIGURES = {}
TABLES = {}
INT8 = "LiteRT dynamic int8"


def int8_figures(model, sizes, per_round, change, metric_name):
    """Records the int8 LiteRT file's size, batch-1 latency and metric change in FIGURES."""
    base, float_name = VARIANTS[0][0], "LiteRT float32"
    if INT8 in sizes and float_name in sizes:
        FIGURES[f"{model}_int8_size"] = suite.figure(
            sizes[INT8] / sizes[float_name], f"{model} file size / float32's", unit="x"
        )
    ratios = timing.ratios(per_round.get(INT8, []), per_round.get(base, []))
    if ratios:
        s = timing.summary(ratios)
        FIGURES[f"{model}_int8_latency"] = suite.figure(
            s["median"],
            f"{model} batch-1 latency / the SavedModel's",
            unit="x",
            spread={"kind": "min-max", "low": s["min"], "high": s["max"]},
        )
    if change is not None:
        FIGURES[f"{model}_int8_change"] = suite.figure(
            change, f"{model} {metric_name} change (points)", signed=True
        )


def run_task(label, task, args, log):
    model, latency, evaluation, metric_name = task
    rows, reference, sizes, timed = [], {}, {}, []
    with tempfile.TemporaryDirectory() as folder:
        for name, fmt, quantization in VARIANTS:
            start = time.perf_counter()
            try:
                path, run_1, run_eval = build_variant(
                    model, fmt, quantization, latency, evaluation, folder, args
                )
            except Exception as error:  # reported in the table, not fatal
                rows.append([name, f"does not build: {str(error).splitlines()[0][:200]}"])
                continue
            sizes[name] = size_of(path)
            scores = {}
            for split, (arrays, gold) in evaluation.items():
                probabilities = predict_all(run_eval, arrays, args.eval_batch)
                predicted = probabilities.argmax(-1)
                if name == VARIANTS[0][0]:
                    reference[split] = predicted
                mask = arrays[0] != 0 if probabilities.ndim == 3 else None
                scores[split] = (
                    metric(probabilities, arrays, gold),
                    changed_share(predicted, reference[split], mask),
                )
            log(f"  {name}: built and evaluated in {time.perf_counter() - start:.1f} s")
            stream = itertools.cycle(serving.batches_of(latency, 1))
            timed.append((name, lambda run=run_1, stream=stream: run(next(stream))))
            rows.append([name, scores])
        for _, call in timed:
            timing.warm_up(call, 3)
        per_round = timing.interleaved_rounds(timed, rounds=args.rounds, steps=args.steps)
    base, model_key = VARIANTS[0][0], label.split(" (")[0]
    splits = list(evaluation)
    header = list(HEADER)
    for split in splits:
        header += [f"{split} {metric_name}", "change (points)", "predictions changed"]
    table = []
    base_scores = next((s for n, s in rows if n == base and isinstance(s, dict)), None)
    for name, scores in rows:
        if isinstance(scores, str):
            table.append([name, scores] + [""] * (len(header) - 2))
            continue
        cells = variant_cells(name, sizes, per_round)
        for split in splits:
            value, changed = scores[split]
            delta = (value - base_scores[split][0]) * 100 if base_scores else float("nan")
            cells += [f"{value * 100:.2f}%", f"{delta:+.2f}", f"{changed * 100:.2f}%"]
        table.append(cells)
        if name == INT8:
            int8_figures(model_key, sizes, per_round, delta, f"{splits[-1]} {metric_name}")
    TABLES[model_key] = suite.markdown_table(header, table)
    print(f"\n{label}\n")
    print(TABLES[model_key])


# ------------------------------------------------------------------- the translator


def translator_task(run_dir, args, log):
    """Multi30k test_2016_flickr BLEU of the run's beam search in the SavedModel and in
    each runtime variant (`serving.translator_runner`: the recipe's export, the loop in
    the graph), each sentence translated alone (batch 1); the batch-1 latency of every
    variant interleaved; the share of translations that differ from the SavedModel's."""
    from kerasrnn.metrics import corpus_bleu

    config, trained = serving.translator_run(run_dir)
    sources, references = serving.multi30k_test(args.multi30k, args.translator_sentences, config)
    runtimes = {"saved_model": "saved_model", "onnx": "onnxruntime", "litert": "litert"}
    rows, sizes, translations, timed = [], {}, {}, []
    latency_sources = itertools.cycle(sources)
    with tempfile.TemporaryDirectory() as folder:
        for name, fmt, quantization in VARIANTS:
            start = time.perf_counter()
            try:
                run, path = serving.translator_runner(
                    config, trained, runtimes[fmt], folder, quantization
                )
            except Exception as error:  # reported in the table, not fatal
                rows.append([name, f"does not build: {str(error).splitlines()[0][:200]}"])
                continue
            sizes[name] = size_of(path)
            translations[name] = [run([text])[0] for text in sources]
            log(f"  {name}: built and translated in {time.perf_counter() - start:.1f} s")
            timed.append((name, lambda run=run: run([next(latency_sources)])))
            rows.append([name, corpus_bleu(translations[name], references).score])
        for _, call in timed:
            timing.warm_up(call, 3)
        per_round = timing.interleaved_rounds(timed, rounds=args.rounds, steps=args.steps)
    base = VARIANTS[0][0]
    base_bleu = dict(rows)[base]
    header = HEADER + [f"BLEU beam {config['beam_size']}", "change", "translations changed"]
    table = []
    for name, bleu in rows:
        if isinstance(bleu, str):
            table.append([name, bleu] + [""] * (len(header) - 2))
            continue
        changed = np.mean([a != b for a, b in zip(translations[name], translations[base])])
        if name == INT8:
            int8_figures("translator", sizes, per_round, bleu - base_bleu, "BLEU")
        table.append(
            [
                *variant_cells(name, sizes, per_round),
                f"{bleu:.2f}",
                f"{bleu - base_bleu:+.2f}",
                f"{changed * 100:.1f}%",
            ]
        )
    case = "case-insensitive" if config["lowercase"] else "cased"
    print(
        f"\ntranslator (Multi30k test_2016_flickr, {len(sources)} sentences one at a time, "
        f"BLEU {case}): {run_dir}\n"
    )
    TABLES["translator"] = suite.markdown_table(header, table)
    print(TABLES["translator"])


def main(argv=None):
    parser = suite.parser("quantization", __doc__)
    parser.add_argument("--tagger", default="runs/ewt", help="tagger run folder ('' skips)")
    parser.add_argument("--classifier", default="runs/polarity", help="classifier run folder")
    parser.add_argument(
        "--translator", default="", help="a translator run trained on Multi30k ('' skips)"
    )
    parser.add_argument("--multi30k", default=str(serving.MULTI30K), help="the multi30k folder")
    parser.add_argument(
        "--translator-sentences", type=int, default=0, help="test sentences (0: all 1,000)"
    )
    parser.add_argument("--sentences", type=int, default=256, help="latency: sentences cycled")
    parser.add_argument("--length", type=int, default=32, help="latency: tokens padded to")
    parser.add_argument("--width", type=int, default=20, help="latency: word characters")
    parser.add_argument("--eval-batch", type=int, default=64, help="evaluation batch size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="timed batch-1 calls per round")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads per runtime")
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    print("$ " + suite.command_line("quantization", argv))
    print(serving.environment(args.threads))
    tasks = [
        ("tagger (UD English EWT UPOS)", tagger_task, args.tagger),
        ("classifier (sentence polarity, held-out test split)", classifier_task, args.classifier),
    ]
    for label, make, run_dir in tasks:
        if not run_dir or not os.path.exists(os.path.join(run_dir, "best.keras")):
            print(f"\n{label}: skipped (no trained model at {run_dir!r})")
            continue
        log(f"{label}: {run_dir}")
        task = make(run_dir, args.length, args.width, args.sentences)
        run_task(f"{label}: {run_dir}", task, args, log)
    if args.translator and os.path.exists(os.path.join(args.translator, "best.keras")):
        log(f"translator: {args.translator}")
        translator_task(args.translator, args, log)
    else:
        print(f"\ntranslator: skipped (no trained model at {args.translator!r})")
    if FIGURES:
        suite.write_result(
            args,
            "quantization",
            "Quantisation: LiteRT dynamic-range int8 against float32",
            dict(FIGURES),
            headline=next((k for k in FIGURES if k.endswith("_int8_change")), None),
            tables=dict(TABLES),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
