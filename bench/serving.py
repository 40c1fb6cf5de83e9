"""Serving speed: the trained tagger and classifier in Keras, the TF SavedModel,
onnxruntime and LiteRT, side by side in one process.

For each trained recipe model (its task, `from_preset` of the run folder, as a Keras
model: token ids in, probabilities out; with the CRF, the Viterbi tags), every runtime
gets the same padded id batches:

- ``keras predict``: ``model.predict(x, batch_size=len(x))``;
- ``keras call``: ``model(x, training=False)``, the direct (eager) call;
- ``saved_model``: ``tf.saved_model.load(path).signatures["serving_default"]`` of a
  SavedModel written by `kerasrnn.export.export_saved_model` (ids in, dynamic shapes);
- ``onnxruntime``: `kerasrnn.export.export_onnx` (dynamic shapes from Keras' exporter,
  standard LSTM / GRU layers as ONNX's `LSTM` / `GRU` operators; the CRF model goes
  through the LiteRT graph at the fixed shape of each batch size);
- ``onnxruntime_loop``: the same with ``native_recurrences=False``, every time loop an
  ONNX `Loop`;
- ``litert``: `kerasrnn.export.export_litert`, one file per batch size (fixed shapes),
  run by ``ai_edge_litert``'s Interpreter without the Flex delegate: standard LSTM
  layers on LiteRT's fused ``UNIDIRECTIONAL_SEQUENCE_LSTM`` kernel, the other loops a
  builtin `WHILE`;
- ``litert_while``: the same with ``native_recurrences=False`` (every time loop a
  builtin `WHILE`).

Before any timing each runtime's outputs on the first batches are checked against
``keras call`` (probabilities within ``--atol``, tags exactly); a runtime that differs
is reported and left out. Then `timing.interleaved_rounds` times batch 1 (one sentence
per call, cycling through ``--sentences`` test sentences of at most ``--length`` tokens
(the tagger's: words of at most ``--width`` characters), each padded to that size)
and, separately, batch ``--batch-size``; a contender's figure in a round is the median
of its calls there, the table the median over rounds, and the ratio

    r_c = t_c(round) / t_saved_model(round)   (same batch size, same round)

its median and range over rounds. The goal of issue 28: the fastest runtime at batch 1
at <= 0.5x the SavedModel's batch-1 latency.

    python -m bench serving --tagger runs/ewt --tagger-crf runs/ewt-crf \\
        --classifier runs/polarity

First, with no training needed, the masked BiLSTM tagger shape (``--bilstm-units``, by
default 128, 256 and 512 units per direction): ids -> `Embedding(mask_zero=True)` ->
`Bidirectional(kerasrnn.RNN(LSTMCell(H)))` -> `Dense` softmax, Keras' initial weights,
``--sentences`` rows of random ids right-padded to ``--bilstm-length`` (30) steps,
through the same runtimes; its figures include the batched ratio (``..._b64``).
``--bilstm-units`` with no value skips it.

The run folders come from the recipes' ``train`` commands (see docs/deploying.md).

The translator (``--translator RUN_DIR``, trained on Multi30k) is timed on German test
sentences (test_2016_flickr, raw strings in, translations out) with its beam search:
``keras`` (`Seq2Seq.generate` on text), the recipe's SavedModel (``translate`` signature), and
the recipe's ``export --format onnx|litert`` folders run by their numpy-only client (batch-1
files with the decoding loop inside the graph; a batch is a sentence after another). Its
check counts the translations that differ from the SavedModel's.
"""

import datetime
import itertools
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench import suite, timing  # noqa: E402

RUNTIMES = (
    "keras_predict",
    "keras_call",
    "saved_model",
    "onnxruntime",
    "onnxruntime_loop",
    "litert",
    "litert_while",
)
REFERENCE = "saved_model"
# the order of the serving models' inputs (the recipes' input names)
INPUT_ORDER = ["word_ids", "char_ids", "lm_ids", "token_ids"]
# ../shared/data/multi30k beside the checkout (a worktree one level deeper looks one up)
MULTI30K = next(
    (
        p / "shared" / "data" / "multi30k"
        for p in ROOT.parents
        if (p / "shared" / "data" / "multi30k").is_dir()
    ),
    pathlib.Path("../shared/data/multi30k"),
)
TRANSLATOR_RUNTIMES = ("keras", "saved_model", "onnxruntime", "litert")


# ------------------------------------------------------------------- pure helpers


def pad_ids(rows, length):
    """Token id lists -> int32 (len(rows), length), right-padded with 0; a row longer
    than `length` is an error (select the rows first)."""
    out = np.zeros((len(rows), length), "int32")
    for i, row in enumerate(rows):
        if len(row) > length:
            raise ValueError(f"row {i} has {len(row)} ids, more than length={length}")
        out[i, : len(row)] = row
    return out


def pad_chars(rows, length, width):
    """Per-token character id lists -> int32 (len(rows), length, width), 0-padded;
    a token's characters beyond `width` are cut (as the recipe's `max_chars`)."""
    out = np.zeros((len(rows), length, width), "int32")
    for i, row in enumerate(rows):
        if len(row) > length:
            raise ValueError(f"row {i} has {len(row)} tokens, more than length={length}")
        for j, chars in enumerate(row):
            chars = list(chars)[:width]
            out[i, j, : len(chars)] = chars
    return out


def latency_sentences(sentences, length, width, count):
    """The first `count` non-empty sentences (token lists) of at most `length` tokens
    whose words have at most `width` characters (None: any)."""
    return [
        s
        for s in sentences
        if 0 < len(s) <= length and (width is None or all(len(t) <= width for t in s))
    ][:count]


def batches_of(arrays, batch_size):
    """The consecutive batches of `batch_size` rows of `arrays` (a tuple of arrays with
    the same first dimension), wrapping around at the end so that every batch is full
    and there is at least one."""
    count = len(arrays[0])
    if count == 0:
        raise ValueError("no rows to batch")
    starts = range(0, max(count, batch_size), batch_size)
    out = []
    for start in starts:
        rows = [(start + k) % count for k in range(batch_size)]
        out.append(tuple(a[rows] for a in arrays))
    return out


def max_difference(outputs, expected):
    """The largest |a - b| over the corresponding arrays of two output lists (inf when
    their number or shapes differ)."""
    if len(outputs) != len(expected):
        return float("inf")
    worst = 0.0
    for a, b in zip(outputs, expected):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            worst = max(worst, float(np.max(np.abs(a.astype("float64") - b.astype("float64")))))
    return worst


# the results file's figures, filled by `report`: each model's batch-1 latency ratios;
# and its tables, each model's as `report` prints it (docs/deploying.md shows them)
FIGURES = {}
TABLES = {}


def ratio_figure(key, values, reference, batch_size=1):
    """Records `key`'s median batch-`batch_size` latency ratio over rounds, with its
    min-max, in FIGURES."""
    ratios = timing.ratios(values, reference)
    if ratios:
        s = timing.summary(ratios)
        FIGURES[key] = suite.figure(
            s["median"],
            key.replace("_", " ") + f": batch-{batch_size} latency / the SavedModel's",
            unit="x",
            spread={"kind": "min-max", "low": s["min"], "high": s["max"]},
        )


def ratio_cell(values, reference):
    """``"0.42x [0.40-0.45]"``: the median ratio over rounds and its range."""
    ratios = timing.ratios(values, reference)
    if not ratios:
        return "-"
    s = timing.summary(ratios)
    return f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"


def ms_cell(values):
    """``"3.10 [2.90-3.40]"``: median milliseconds over rounds and the interquartile range."""
    if not values:
        return "-"
    s = timing.summary([v * 1e3 for v in values])
    return f"{s['median']:.2f} [{s['q1']:.2f}-{s['q3']:.2f}]"


# --------------------------------------------------------------------- the models


def _keras():
    import keras

    return keras


def serving_model(model, crf):
    """The recipe model as a functional model with a list of inputs in `INPUT_ORDER`
    (the runtimes take inputs by name; the tagger's dict inputs would reach
    `export_onnx` / `export_litert` in `model.inputs`' sorted order, which does not
    match the dict): probabilities, or with the CRF the Viterbi tags."""
    keras = _keras()
    from kerasrnn.layers import crf_decode

    by_name = {x.name: x for x in model.inputs}
    names = [n for n in INPUT_ORDER if n in by_name] + sorted(set(by_name) - set(INPUT_ORDER))
    inputs = [
        keras.Input(tuple(by_name[n].shape[1:]), dtype=by_name[n].dtype, name=n) for n in names
    ]
    # one input as a tensor (the classifier), several as the recipe's dict (the tagger)
    feed = inputs[0] if len(inputs) == 1 else dict(zip(names, inputs))
    outputs = model(feed)
    if crf:

        class ViterbiTags(keras.layers.Layer):
            """The CRF's Viterbi path on the real steps (word_ids != 0)."""

            def call(self, potentials, word_ids):
                tags, _ = crf_decode(potentials, keras.ops.not_equal(word_ids, 0))
                return tags

            def compute_mask(self, *args, **kwargs):
                return None

        outputs = ViterbiTags(name="viterbi")(outputs, feed["word_ids"])
    return keras.Model(
        inputs[0] if len(inputs) == 1 else inputs, outputs, name=f"{model.name}_serving"
    )


def input_specs(model, batch_size=None, length=None, width=None):
    """`tf.TensorSpec`s of the serving model's inputs: dynamic, or every dimension fixed
    (batch, `length` tokens, `width` characters)."""
    import tensorflow as tf

    specs = []
    for x in model.inputs:
        shape = [batch_size] + [None] * (len(x.shape) - 1)
        if length is not None and len(shape) > 1:
            shape[1] = length
        if width is not None and len(shape) > 2:
            shape[2] = width
        specs.append(tf.TensorSpec(shape, x.dtype, name=x.name))
    return specs


def _flat(outputs):
    return [np.asarray(o) for o in _keras().tree.flatten(outputs)]


def keras_predict_runner(model):
    def run(xs):
        x = list(xs) if len(xs) > 1 else xs[0]
        return _flat(model.predict(x, batch_size=len(xs[0]), verbose=0))

    return run


def keras_call_runner(model):
    def run(xs):
        return _flat(model(list(xs) if len(xs) > 1 else xs[0], training=False))

    return run


def saved_model_runner(model, folder):
    """Writes the model's ids-in SavedModel and returns a runner of its loaded
    `serving_default` signature (and the folder)."""
    import tensorflow as tf

    from kerasrnn.export import export_saved_model

    keras = _keras()
    specs = input_specs(model)

    def serve(*args):
        outputs = keras.tree.flatten(model(list(args) if len(args) > 1 else args[0]))
        return {f"output_{i}": o for i, o in enumerate(outputs)}

    path = os.path.join(folder, "saved_model")
    export_saved_model(path, model, {"serving_default": (serve, specs)})
    signature = tf.saved_model.load(path).signatures["serving_default"]
    names = [s.name for s in specs]

    def run(xs):
        out = signature(**{n: tf.constant(x) for n, x in zip(names, xs)})
        return [out[f"output_{i}"].numpy() for i in range(len(out))]

    return run, path


def onnx_session(path, threads):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    def run(xs):
        feed = {i.name: x for i, x in zip(sorted_inputs(session), xs)}
        return session.run(None, feed)

    return run


def sorted_inputs(session):
    """The session's inputs in the serving model's order: the ONNX file may list them
    in another order, so they are matched by name to `INPUT_ORDER`."""
    inputs = {i.name: i for i in session.get_inputs()}
    return [inputs[name] for name in INPUT_ORDER if name in inputs] or list(inputs.values())


def litert_runner(path, threads, names):
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=path, num_threads=threads).get_signature_runner()

    def run(xs):
        out = runner(**dict(zip(names, xs)))
        return [out[f"output_{i}"] for i in range(len(out))]

    return run


def export_onnx_file(model, path, crf, batch_size, length, width, quantization=None, native=True):
    """`export_onnx` of the serving model: dynamic shapes, or (the CRF, which only the
    LiteRT route converts) fixed at `batch_size` x `length` (x `width`); `native`:
    standard LSTM / GRU layers as ONNX's own operators, else as a `Loop`."""
    from kerasrnn.export import export_onnx

    signature = input_specs(model, batch_size, length, width) if crf else None
    return export_onnx(
        model,
        path,
        input_signature=signature,
        batch_size=batch_size,
        quantization=quantization,
        native_recurrences=native,
    )


def export_litert_file(model, path, batch_size, length, width, quantization=None, native=True):
    from kerasrnn.export import export_litert

    return export_litert(
        model,
        path,
        input_signature=input_specs(model, batch_size, length, width),
        quantization=quantization,
        native_recurrences=native,
    )


# ------------------------------------------------------------------------ the data

# The masked BiLSTM tagger shape (`--bilstm-units`): a vocabulary, embedding width and
# tag set of a UD tagger's size
BILSTM_VOCABULARY, BILSTM_EMBEDDING, BILSTM_TAGS = 20000, 128, 17


def bilstm_tagger(units, seed=0):
    """ids -> Embedding(mask_zero=True) -> Bidirectional(kerasrnn.RNN(LSTMCell(units)))
    -> Dense softmax per token, with Keras' initial weights (the latency does not
    depend on their values)."""
    keras = _keras()
    import kerasrnn

    keras.utils.set_random_seed(seed)
    ids = keras.Input((None,), dtype="int32", name="word_ids")
    x = keras.layers.Embedding(BILSTM_VOCABULARY, BILSTM_EMBEDDING, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(kerasrnn.RNN(kerasrnn.LSTMCell(units), return_sequences=True))(x)
    outputs = keras.layers.Dense(BILSTM_TAGS, activation="softmax")(x)
    return keras.Model(ids, outputs, name=f"bilstm_h{units}")


def bilstm_ids(count, length, seed=0):
    """`count` rows of random ids right-padded to `length`, each of 1 to `length` real
    steps (a sentence length spread like a test set's, padding masked)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, length + 1, size=count)
    rows = [rng.integers(1, BILSTM_VOCABULARY, size=n) for n in lengths]
    return pad_ids(rows, length)


def tagger_run(run_dir):
    """``(config, trained SequenceTagger, splits)`` of the tagger run in `run_dir` (the
    task of its preset, `SequenceTagger.from_preset`)."""
    from kerasrnn.models import SequenceTagger
    from recipes import tagger
    from recipes.files import saved_config

    config = saved_config(tagger.DEFAULTS, run_dir)
    trained = SequenceTagger.from_preset(run_dir, compile=False)
    splits = tagger.RECIPE.load_splits(config)
    return config, trained, splits


def tagger_arrays(trained, sentences, length=None, width=None):
    """Padded (word_ids, char_ids) of tokenized sentences (the task's preprocessor, so
    the ids are those the SavedModel's string lookup gives):
    `length` / `width` default to the longest sentence / word."""
    encoded = trained.preprocessor.id_lists(sentences)
    length = length or max(len(s) for s in sentences)
    arrays = [pad_ids(encoded["word_ids"], length)]
    if "char_ids" in encoded:
        width = width or max(len(c) for s in encoded["char_ids"] for c in s)
        arrays.append(pad_chars(encoded["char_ids"], length, width))
    return tuple(arrays)


def classifier_ids(trained, texts):
    """The classifier's token ids of raw texts, as its serving function computes them
    (the preprocessor: whitespace split, vocabulary lookup), padded to the longest."""
    return trained.preprocessor.encode(list(texts)).numpy()


def classifier_run(run_dir):
    """``(config, trained TextClassifier, test split)`` of the classifier run in
    `run_dir` (the task of its preset)."""
    from kerasrnn.models import TextClassifier
    from recipes import classifier
    from recipes.files import saved_config

    config = saved_config(classifier.DEFAULTS, run_dir)
    trained = TextClassifier.from_preset(run_dir, compile=False)
    return config, trained, classifier.RECIPE.load_splits(config)["test"]


def load_serving_inputs(kind, run_dir, length, width, count):
    """``(serving model, crf, inputs)``: `count` test examples of at most `length`
    tokens (the tagger's: words of at most `width` characters), padded to `length`
    (and `width`): a tuple of arrays in the model's input order."""
    if kind == "classifier":
        _, trained, (texts, _) = classifier_run(run_dir)
        ids = classifier_ids(trained, texts)
        lengths = (ids != 0).sum(axis=1)
        rows = [row[:n] for row, n in zip(ids, lengths) if 0 < n <= length][:count]
        return serving_model(trained, False), False, (pad_ids(rows, length),)
    _, trained, splits = tagger_run(run_dir)
    sentences = latency_sentences(splits["test"][0], length, width, count)
    crf = trained.crf
    inputs = tagger_arrays(trained, sentences, length, width)
    return serving_model(trained, crf), crf, inputs


# ------------------------------------------------------------------- the translator


def load_client(folder):
    """The numpy-only client that an export wrote beside its model files."""
    import importlib.util

    name = f"client_{abs(hash(folder))}"
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "client.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load(folder)


def multi30k_test(folder, count, config):
    """``(German sources, English references)`` of test_2016_flickr (the first `count`;
    0: all), the references lower-cased where the run's target side lower-cases."""
    from kerasrnn.data import load_parallel_text
    from kerasrnn.data.text import lower_graph

    folder = pathlib.Path(folder)
    sources, references = load_parallel_text(
        folder / "test_2016_flickr.de.gz", folder / "test_2016_flickr.en.gz"
    )
    if count:
        sources, references = sources[:count], references[:count]
    if config["lowercase"]:  # a lower-casing target side writes lower case only
        lowered = lower_graph(list(references), config["target_tokenizer"]).numpy()
        references = [r.decode("utf-8") for r in lowered]
    return list(sources), list(references)


def translator_runner(config, trained, runtime, folder, quantization=None):
    """``(translate(texts) -> translations, the measured file or folder)`` of the run's
    beam search (its beam size, `recipes.translator.search_strategy`) in `runtime`:
    ``keras`` (`Seq2Seq.generate` on text with the run's decoding settings, the
    library's graph, the batch as given), ``saved_model`` (the recipe's SavedModel,
    `kerasrnn.export.export_task`, ``translate`` signature), ``onnxruntime`` /
    ``litert`` (the recipe's ``export --format`` folder and its client, one sentence
    per call: the files run batch 1, the decoding loop inside the graph)."""
    import tensorflow as tf

    from kerasrnn.export import export_task
    from recipes import translator
    from recipes.decoding import generate_settings

    path = os.path.join(folder, f"{runtime}_{quantization or 'float32'}")
    if runtime == "keras":
        strategy = translator.search_strategy(config)
        settings = generate_settings(config, trained)
        return (lambda texts: trained.generate(list(texts), strategy, **settings)), None
    options = translator.RECIPE.export_options(config)
    if runtime == "saved_model":
        export_task(trained, path, **options)
        signature = tf.saved_model.load(path).signatures["translate"]

        def run(texts):
            out = signature(text=tf.constant(list(texts)))["translation"].numpy()
            return [t.decode("utf-8") for t in out]

        return run, path
    fmt = "onnx" if runtime == "onnxruntime" else runtime
    export_task(trained, path, fmt, quantization=quantization, **options)
    client = load_client(path)
    beam = next(f for f in os.listdir(path) if f.startswith("beam.") or f.startswith("greedy."))
    return (lambda texts: [r["translation"] for r in client.translate(texts)]), os.path.join(
        path, beam
    )


def translator_run(run_dir):
    """``(config, trained Seq2Seq)`` of the translator run in `run_dir` (the task of its
    preset)."""
    from kerasrnn.seq2seq import Seq2Seq
    from recipes import translator
    from recipes.files import saved_config

    config = saved_config(translator.DEFAULTS, run_dir)
    return config, Seq2Seq.from_preset(run_dir, compile=False)


def time_translator(label, run_dir, args, log):
    """Batch-1 latency and batched throughput of the translator's beam search in each
    runtime, after checking their translations against the SavedModel's."""
    config, trained = translator_run(run_dir)
    sources, _ = multi30k_test(args.multi30k, args.sentences, config)
    runners, failed = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        for runtime in TRANSLATOR_RUNTIMES:
            try:
                runners[runtime] = translator_runner(config, trained, runtime, folder)[0]
            except Exception as error:  # reported, not fatal
                failed[runtime] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            log(f"  translator: {runtime} ready")
        checked = sources[: args.batch_size]
        expected = runners[REFERENCE](checked)
        same = {
            r: sum(a == b for a, b in zip(run(checked), expected)) for r, run in runners.items()
        }
        results = {}
        for b in (1, args.batch_size):
            contenders = []
            for runtime, run in runners.items():
                stream = itertools.cycle(range(0, len(sources), b))
                contenders.append(
                    (runtime, lambda run=run, s=stream: run(sources[(i := next(s)) : i + b]))
                )
            for _, call in contenders:
                timing.warm_up(call, 1 if b > 1 else 3)
            steps = args.steps if b == 1 else args.batch_steps
            results[b] = timing.interleaved_rounds(contenders, rounds=args.rounds, steps=steps)
            log(f"  translator: batch {b} timed")
    for runtime, reason in failed.items():
        print(f"\n{label}: {runtime} left out, it does not build: {reason}")
    differences = {(r, 1): float(len(checked) - n) for r, n in same.items()}
    report(
        f"{label}: beam search {config['beam_size']}, {len(sources)} test sentences cycled",
        results,
        [1, args.batch_size],
        differences,
        TRANSLATOR_RUNTIMES,
        (f"of the first {len(checked)}, translations unlike the SavedModel's", ".0f"),
    )


# ---------------------------------------------------------------------- the bench


def build_runners(model, crf, inputs, batch_sizes, runtimes, threads, folder, log):
    """``{(runtime, batch_size): run}`` for every runtime that builds, with the
    seconds each export took; the failures as ``{runtime: reason}``."""
    import time

    width = inputs[1].shape[2] if len(inputs) > 1 else None
    length = inputs[0].shape[1]
    names = [x.name for x in model.inputs]
    runners, failed = {}, {}
    for runtime in runtimes:
        start = time.perf_counter()
        try:
            if runtime == "keras_predict":
                run = keras_predict_runner(model)
                runners.update({(runtime, b): run for b in batch_sizes})
            elif runtime == "keras_call":
                run = keras_call_runner(model)
                runners.update({(runtime, b): run for b in batch_sizes})
            elif runtime == "saved_model":
                run, _ = saved_model_runner(model, folder)
                runners.update({(runtime, b): run for b in batch_sizes})
            elif runtime in ("onnxruntime", "onnxruntime_loop"):
                native = runtime == "onnxruntime"
                if crf:
                    for b in batch_sizes:
                        path = os.path.join(folder, f"{runtime}_b{b}.onnx")
                        export_onnx_file(model, path, crf, b, length, width, native=native)
                        runners[(runtime, b)] = onnx_session(path, threads)
                else:
                    path = os.path.join(folder, f"{runtime}.onnx")
                    export_onnx_file(model, path, crf, None, None, None, native=native)
                    run = onnx_session(path, threads)
                    runners.update({(runtime, b): run for b in batch_sizes})
            elif runtime in ("litert", "litert_while"):
                native = runtime == "litert"
                for b in batch_sizes:
                    path = os.path.join(folder, f"{runtime}_b{b}.tflite")
                    export_litert_file(model, path, b, length, width, native=native)
                    runners[(runtime, b)] = litert_runner(path, threads, names)
        except Exception as error:  # a runtime that does not build is reported, not fatal
            failed[runtime] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            for b in batch_sizes:
                runners.pop((runtime, b), None)
        log(f"  {runtime}: ready in {time.perf_counter() - start:.1f} s")
    return runners, failed


def check_outputs(runners, inputs, batch_sizes, atol, crf):
    """Each runner's outputs on the first batches against ``keras_call``'s:
    ``{(runtime, batch): max |difference|}``; tags must match exactly."""
    differences = {}
    for b in batch_sizes:
        batches = batches_of(inputs, b)[:2] if b > 1 else batches_of(inputs, 1)[:8]
        expected = [runners[("keras_call", b)](x) for x in batches]
        for key, run in runners.items():
            if key[1] != b:
                continue
            worst = max(max_difference(run(x), e) for x, e in zip(batches, expected))
            differences[key] = worst
    limit = 0.0 if crf else atol
    return differences, {k for k, d in differences.items() if d > limit}


def time_model(label, runners, inputs, batch_sizes, args, log):
    """Interleaved rounds per batch size; the table rows."""
    results = {}
    for b in batch_sizes:
        contenders = []
        for (runtime, size), run in runners.items():
            if size != b:
                continue
            stream = itertools.cycle(batches_of(inputs, b))
            contenders.append((runtime, lambda run=run, stream=stream: run(next(stream))))
        for _, call in contenders:  # warm-up: tracing, XNNPACK packing, caches
            timing.warm_up(call, 3)
        steps = args.steps if b == 1 else args.batch_steps
        results[b] = timing.interleaved_rounds(contenders, rounds=args.rounds, steps=steps)
        log(f"  {label}: batch {b} timed ({args.rounds} rounds x {steps} calls)")
    return results


def time_serving_model(label, model, crf, inputs, batch_sizes, args, log):
    """Builds every runtime of `model`, checks it against Keras, times the ones that
    agree and prints the table."""
    with tempfile.TemporaryDirectory() as folder:
        runners, failed = build_runners(
            model, crf, inputs, batch_sizes, args.runtimes, args.threads, folder, log
        )
        for runtime, reason in failed.items():
            print(f"\n{label}: {runtime} left out, it does not build: {reason}")
        if ("keras_call", 1) not in runners:
            print(f"\n{label}: skipped (no keras_call reference)")
            return
        differences, mismatched = check_outputs(runners, inputs, batch_sizes, args.atol, crf)
        for key in sorted(mismatched):
            print(
                f"\n{label}: {key[0]} at batch {key[1]} left out, outputs differ "
                f"from keras by {differences[key]:.2e}"
            )
            runners.pop(key)
        shape = " x ".join(str(d) for d in inputs[-1].shape[1:])
        results = time_model(label, runners, inputs, batch_sizes, args, log)
    report(
        f"{label}: {len(inputs[0])} test sentences padded to {shape} "
        f"({'tags: exactly equal' if crf else f'probabilities within {args.atol:g}'})",
        results,
        batch_sizes,
        differences,
    )


def report(
    label, results, batch_sizes, differences, runtimes=RUNTIMES, check=("max diff vs keras", ".1e")
):
    """Prints the timing table; `check` is the header and number format of the column
    that compares each runtime's outputs (a difference, or a count of changed outputs)."""
    check, spec = check
    b1, bn = batch_sizes[0], batch_sizes[-1]
    reference_1 = results[b1].get(REFERENCE, [])
    reference_n = results[bn].get(REFERENCE, [])
    rows = []
    model = label.split(" (")[0] + ("_crf" if "CRF" in label else "")
    for runtime in runtimes:
        if runtime not in results[b1]:
            continue
        t1, tn = results[b1][runtime], results[bn].get(runtime, [])
        if runtime != REFERENCE:
            ratio_figure(f"{model}_{runtime}", t1, reference_1)
            if model.startswith("bilstm_"):  # the BiLSTM shape's batched ratio too
                ratio_figure(f"{model}_{runtime}_b{bn}", tn, reference_n, bn)
        throughput = bn / timing.summary(tn)["median"] if tn else float("nan")
        rows.append(
            [
                runtime,
                f"{differences.get((runtime, b1), float('nan')):{spec}}",
                ms_cell(t1),
                ratio_cell(t1, reference_1),
                ms_cell(tn),
                f"{throughput:.0f}",
                ratio_cell(tn, reference_n),
            ]
        )
    header = [
        "runtime",
        check,
        "batch 1: ms [IQR]",
        "x saved_model b1 [range]",
        f"batch {bn}: ms [IQR]",
        "sentences/s",
        f"x saved_model b{bn} [range]",
    ]
    TABLES[model] = suite.markdown_table(header, rows)
    print(f"\n{label}\n")
    print(TABLES[model])
    fastest = min(
        (r for r in results[b1] if r != REFERENCE and results[b1][r]),
        key=lambda r: timing.summary(timing.ratios(results[b1][r], reference_1))["median"],
        default=None,
    )
    if fastest is not None and reference_1:
        ratio = timing.summary(timing.ratios(results[b1][fastest], reference_1))["median"]
        verdict = "met" if ratio <= 0.5 else "not met"
        print(
            f"\nfastest at batch 1: {fastest}, {ratio:.2f}x the SavedModel's latency "
            f"(goal <= 0.5x: {verdict})"
        )


def environment(threads):
    import ai_edge_litert
    import keras
    import onnxruntime
    import tensorflow as tf

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        commit = "?"
    litert = getattr(ai_edge_litert, "__version__", "?")
    return (
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, code {commit}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (load "
        f"{os.getloadavg()[0]:.1f}), threads {threads}; Python {platform.python_version()}, "
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, onnxruntime "
        f"{onnxruntime.__version__}, ai-edge-litert {litert}"
    )


def main(argv=None):
    parser = suite.parser("serving", __doc__)
    parser.add_argument("--tagger", default="runs/ewt", help="tagger run folder ('' skips)")
    parser.add_argument("--tagger-crf", default="runs/ewt-crf", help="CRF tagger run folder")
    parser.add_argument("--classifier", default="runs/polarity", help="classifier run folder")
    parser.add_argument(
        "--translator", default="", help="a translator run trained on Multi30k ('' skips)"
    )
    parser.add_argument("--multi30k", default=str(MULTI30K), help="the multi30k folder")
    parser.add_argument(
        "--bilstm-units",
        type=int,
        nargs="*",
        default=[128, 256, 512],
        help="the masked BiLSTM tagger shape at these units per direction (none: skip)",
    )
    parser.add_argument(
        "--bilstm-length", type=int, default=30, help="the BiLSTM shape's padded steps"
    )
    parser.add_argument("--sentences", type=int, default=256, help="test sentences cycled")
    parser.add_argument("--length", type=int, default=32, help="tokens each input is padded to")
    parser.add_argument(
        "--width", type=int, default=20, help="tagger: characters each word is padded to"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="the batched size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="timed batch-1 calls per round")
    parser.add_argument("--batch-steps", type=int, default=2, help="timed batched calls per round")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads per runtime")
    parser.add_argument("--atol", type=float, default=1e-5, help="probabilities' tolerance")
    parser.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=RUNTIMES)
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    print("$ " + suite.command_line("serving", argv))
    print(environment(args.threads))
    batch_sizes = [1, args.batch_size]
    models = [
        (f"tagger ({args.tagger}, softmax)", "tagger", args.tagger),
        (f"tagger ({args.tagger_crf}, CRF: Viterbi tags)", "tagger", args.tagger_crf),
        (f"classifier ({args.classifier})", "classifier", args.classifier),
    ]
    for units in args.bilstm_units:
        label = f"bilstm_h{units} (masked BiLSTM tagger shape, random weights)"
        log(f"{label}: {args.bilstm_length} steps")
        model = bilstm_tagger(units)
        inputs = (bilstm_ids(args.sentences, args.bilstm_length),)
        time_serving_model(label, model, False, inputs, batch_sizes, args, log)
    for label, kind, run_dir in models:
        if not run_dir or not os.path.exists(os.path.join(run_dir, "best.keras")):
            print(f"\n{label}: skipped (no trained model at {run_dir!r})")
            continue
        log(f"{label}: {run_dir}")
        model, crf, inputs = load_serving_inputs(
            kind, run_dir, args.length, args.width, args.sentences
        )
        time_serving_model(label, model, crf, inputs, batch_sizes, args, log)
    if args.translator and os.path.exists(os.path.join(args.translator, "best.keras")):
        log(f"translator: {args.translator}")
        time_translator("translator (Multi30k de-en)", args.translator, args, log)
    else:
        print(f"\ntranslator: skipped (no trained model at {args.translator!r})")
    if FIGURES:
        suite.write_result(
            args,
            "serving",
            "Serving the trained models: batch-1 latency against the SavedModel",
            dict(FIGURES),
            # the BiLSTM shape at 256 units through onnxruntime when it ran, else the
            # first model's
            headline=next((k for k in ("bilstm_h256_onnxruntime", *FIGURES) if k in FIGURES), None),
            baseline=suite.figure(1.0, "the SavedModel in the same rounds", unit="x"),
            tables=dict(TABLES),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
