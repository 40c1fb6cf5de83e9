"""The recipes exported to ONNX and LiteRT (`export --format onnx|litert`): the
reference client (`kerasrnn/export/client.py`, copied beside the model) runs in a
process where tensorflow, keras and kerasrnn cannot be imported, and reproduces the
recipe's own task (its `predict` / `generate`) or SavedModel on the same inputs.

The session's trained runs (tests/conftest.py) where one exists for the network under
test, each converted once per format; untrained tiny models (8 units) built by the
recipes for the variants that change the network (a tagger without a CRF or without
characters, the relatedness head, a language model whose greedy continuations are not
empty)."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from recipes import classifier, common, language_model, pair_classifier, tagger, translator
from tests.conftest import main_json

# Each test reads a module-scoped run or export that takes tens of seconds to make.
pytestmark = pytest.mark.large

FORMATS = ("onnx", "litert")

# Runs `client.py` of a folder by file path with tensorflow, keras and kerasrnn blocked:
# argv: folder, JSON list of inputs; prints the predictions as JSON.
BLOCKED_CLIENT = r"""
import importlib.abc, importlib.util, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "tf_keras", "kerasrnn"):
            raise ImportError(f"{name} is blocked in this process")

sys.meta_path.insert(0, Block())
folder, inputs = sys.argv[1], json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("client", folder + "/client.py")
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)
runner = client.load(folder)
method = getattr(runner, sys.argv[3])
found = {"one": method(inputs)}
if len(sys.argv) > 4:
    found["batched"] = method(inputs, batch_size=int(sys.argv[4]))
print(json.dumps(found))
assert not any(m.split(".")[0] in ("tensorflow", "keras") for m in sys.modules)
"""

# the client's methods that take a batch_size (the streaming ones run one input at a time)
BATCHED = ("predict", "translate", "translate_greedy", "generate")


def assert_same_predictions(got, want, atol=1e-5, path="predictions"):
    """`got` equals `want` (JSON values): strings, labels and ints exactly, floats
    within `atol`."""
    if isinstance(want, float):
        assert got == pytest.approx(want, abs=atol), path
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for key in want:
            assert_same_predictions(got[key], want[key], atol, f"{path}[{key!r}]")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_predictions(g, w, atol, f"{path}[{i}]")
    else:
        assert got == want, path


def run_client(folder, inputs, method="predict", batch_size=3, atol=1e-5):
    """The client's predictions (one input a call) in a process that cannot import
    TensorFlow or Keras; for a method that batches, also checks that `batch_size`
    inputs a call (sorted by length, padded per batch) give the same predictions
    (floats within `atol`)."""
    argv = [sys.executable, "-c", BLOCKED_CLIENT, str(folder), json.dumps(inputs), method]
    if method in BATCHED:
        argv.append(str(batch_size))
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if "batched" in found:
        assert_same_predictions(found["batched"], found["one"], atol)
    return found["one"]


def assert_dynamic_onnx_shapes(folder, model="model", width=None):
    """deploy.json's shapes of an ONNX model file: any batch and, but for a fixed
    `width`, any length (null)."""
    with open(os.path.join(folder, "deploy.json"), encoding="utf-8") as file:
        shapes = json.load(file)["models"][model]["shapes"]
    for shape in shapes:
        assert shape[0] is None and (len(shape) < 2 or shape[1] == width), shapes


def client_command(folder, *args):
    """``python FOLDER/client.py FOLDER ARGS...``: its JSON output."""
    script = os.path.join(folder, "client.py")
    done = subprocess.run(
        [sys.executable, script, str(folder), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# TensorFlow's C++ log lines ("E0000 12:00:00.0 123 util.cc:131] ..."), governed by
# TF_CPP_MIN_LOG_LEVEL, which the tests leave at 2 and the command lines set to 3
# (tests/recipes/test_quiet.py runs those in fresh processes)
_CPP_LOG = re.compile(r"^[IWEF]\d{4} \S+\s+\d+ \S+:\d+\] ")


def assert_no_third_party_messages(err):
    """`err`, what an export wrote on stderr (file descriptor 2), holds nothing of the
    converters: only the one-line note of an ONNX file that went through the LiteRT
    graph."""
    for line in err.splitlines():
        if line.strip() and not _CPP_LOG.match(line):
            assert "ONNX through the LiteRT graph (fixed shapes), as tf2onnx cannot map" in line, (
                err
            )


def litert_ops(folder):
    """The op names of a LiteRT folder's model file."""
    from ai_edge_litert.interpreter import Interpreter

    loaded = Interpreter(model_path=os.path.join(folder, "model.tflite"))
    return [op["op_name"] for op in loaded._get_ops_details()]


FUSED_LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"


def operators(path):
    """The op types of an ONNX file's main graph (a Loop's body not included)."""
    import onnx

    return [node.op_type for node in onnx.load(str(path)).graph.node]


def test_the_blocker_blocks(tmp_path):
    (tmp_path / "client.py").write_text("import keras\n")
    argv = [sys.executable, "-c", BLOCKED_CLIENT, str(tmp_path), "[]"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "keras is blocked" in done.stderr


WORDS = "good bad film plot great dull fine awful The cat sat on a mat".split()


def _texts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, rng.integers(2, 7))) for _ in range(n)]


def _export(recipe, run, format_name, folder, *flags):
    """``<recipe> export --format FORMAT --export-dir FOLDER`` of a run (the session's
    runs are never written into); the folder."""
    exported = main_json(
        recipe, "export", "--output-dir", str(run), "--format", format_name,
        "--export-dir", str(folder), *flags,
    )  # fmt: skip
    assert exported == {format_name: str(folder)}
    return str(folder)


def _built(recipe, tmp_path, splits, **overrides):
    """An untrained task as `recipe` builds it for `splits` (its vocabularies written
    into a scratch run folder), with the recipe's config."""
    import keras

    keras.utils.set_random_seed(0)
    config = common.load_config(
        recipe.DEFAULTS, overrides=dict(output_dir=str(tmp_path / "built"), **overrides)
    )
    os.makedirs(config["output_dir"])
    prepared = recipe.RECIPE.prepare(config, splits)
    return recipe.RECIPE.build(config, prepared), config


def _class_rows(rows, labels):
    """(labels, probabilities (n, classes) in the order `labels`, probability) of
    `{label, probability, probabilities}` results."""
    return (
        [r["label"] for r in rows],
        np.array([[r["probabilities"][k] for k in labels] for r in rows]),
        np.array([r["probability"] for r in rows]),
    )


# -------------------------------------------------------------------------- classifier

CLASSIFIER_TEXTS = ["Good film", "awful PLOT never-seen-word", "", "a  gripping good film dull"]


@pytest.mark.parametrize("format_name", FORMATS)
def test_classifier_client_reproduces_the_task(tiny_classifier, format_name, tmp_path, capfd):
    from kerasrnn.models import TextClassifier

    capfd.readouterr()
    folder = _export(classifier, tiny_classifier, format_name, tmp_path / format_name)
    assert_no_third_party_messages(capfd.readouterr().err)
    assert sorted(os.listdir(folder)) == sorted(
        ["client.py", "deploy.json", "model." + {"onnx": "onnx", "litert": "tflite"}[format_name]]
    )
    if format_name == "litert":  # the BiLSTM on LiteRT's fused kernel, one per direction
        ops = litert_ops(folder)
        assert ops.count(FUSED_LSTM) == 2 and "WHILE" not in ops
    if format_name == "onnx":  # the BiLSTM as one bidirectional LSTM operator
        ops = operators(os.path.join(folder, "model.onnx"))
        assert ops.count("LSTM") == 1 and "Loop" not in ops
        assert_dynamic_onnx_shapes(folder)
    expected = TextClassifier.from_preset(tiny_classifier).predict(CLASSIFIER_TEXTS)
    got = run_client(folder, CLASSIFIER_TEXTS)
    # the command line: a text a line of a file (the blank one included), 2 a call
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(CLASSIFIER_TEXTS) + "\n", encoding="utf-8")
    assert_same_predictions(client_command(folder, "--batch-size", "2", "--input", texts), got)
    labels = list(got[0]["probabilities"])
    assert sorted(labels) == ["neg", "pos"]
    (want_labels, want, want_best), (got_labels, probabilities, best) = (
        _class_rows(expected, labels),
        _class_rows(got, labels),
    )
    assert got_labels == want_labels
    np.testing.assert_allclose(probabilities, want, atol=1e-5)
    np.testing.assert_allclose(best, want_best, atol=1e-5)


def test_export_format_errors_are_one_line(tiny_classifier, capsys):
    with pytest.raises(SystemExit) as exit_:
        classifier.main(["export", "--output-dir", str(tiny_classifier), "--format", "tflite"])
    assert exit_.value.code == 2
    assert "argument --format: invalid choice: 'tflite'" in capsys.readouterr().err


def test_quantized_export_stays_close_to_the_task(tiny_classifier, tmp_path):
    from kerasrnn.models import TextClassifier

    quantization = "dynamic_int8"
    folder = _export(
        classifier, tiny_classifier, "onnx", tmp_path / "q", "--quantization", quantization
    )
    with open(os.path.join(folder, "deploy.json"), encoding="utf-8") as file:
        assert json.load(file)["quantization"] == quantization
    texts = CLASSIFIER_TEXTS[:2] + CLASSIFIER_TEXTS[3:]
    expected = TextClassifier.from_preset(tiny_classifier).predict(texts)
    # onnxruntime quantises the activations per call, with the batch's own scale: a
    # batch's probabilities move within the quantisation's error
    got = run_client(folder, texts, atol=2e-3)
    labels = list(got[0]["probabilities"])
    # 8-bit weights: close to float32, not equal
    np.testing.assert_allclose(
        _class_rows(got, labels)[1], _class_rows(expected, labels)[1], atol=2e-2
    )


def test_quantization_a_format_cannot_take_is_a_one_line_error(tiny_classifier, tmp_path, capsys):
    for fmt, quantization, fix in [
        ("saved_model", "dynamic_int8", "use --format onnx or litert"),
        ("onnx", "float16", "use --format litert"),
    ]:
        capsys.readouterr()
        code = classifier.main(["export", "--output-dir", str(tiny_classifier), "--format", fmt,
                                "--quantization", quantization,
                                "--export-dir", str(tmp_path / fmt)])  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err
        assert f"--quantization {quantization} does not apply to --format {fmt}: {fix}" in err
        assert not (tmp_path / fmt).exists()


# ------------------------------------------------------------------------------ tagger

TAGGER_INPUTS = [
    "Peter Blackburn flew to Brussels .".split(),
    "good Unseen-Word-longer-than-six film".split(),
    ["EU"],
    ["FINE", "cat", "."],
]


def _tagger(variant, tmp_path, tiny_tagger):
    """The tagger of a variant: "crf" the session's run (a CRF constrained to BIOES,
    characters, trained in BIOES and reporting BIO); "softmax" (characters) and
    "words" (no characters) untrained as the recipe builds them, 6 characters a word."""
    from kerasrnn.models import SequenceTagger

    if variant == "crf":
        return SequenceTagger.from_preset(tiny_tagger), tiny_tagger
    sentences = [t.split() for t in _texts(20, seed=1)]
    tags = [["ADJ", "NOUN", "VERB", "DET"][: len(s)] + ["NOUN"] * (len(s) - 4) for s in sentences]
    task, _ = _built(
        tagger, tmp_path, {"train": (sentences, tags)},
        embedding_dim=8, units=8, char_dim=8 if variant == "softmax" else 0, char_units=8,
        max_chars=6, crf=False, bucket_boundaries=[],
    )  # fmt: skip
    return task, None


@pytest.mark.parametrize("format_name", FORMATS)
@pytest.mark.parametrize("variant", ["crf", "softmax", "words"])
def test_tagger_client_reproduces_the_task(
    tiny_tagger, variant, format_name, tmp_path, capfd, caplog
):
    from kerasrnn.export import export_task

    task, run = _tagger(variant, tmp_path, tiny_tagger)
    chars = task.preprocessor.chars is not None
    capfd.readouterr()
    folder = str(tmp_path / format_name)
    if run is not None:  # the recipe's command line, sequences of 12 tokens
        _export(tagger, run, format_name, folder, "--sequence-length", "12")
    else:
        export_task(task, folder, format_name, sequence_length=12)
    assert_no_third_party_messages(capfd.readouterr().err)
    crf = variant == "crf"
    if format_name == "litert":
        # the word BiLSTM (and the character one) on LiteRT's fused kernel, one per
        # direction; a loop only for the CRF's Viterbi decode
        ops = litert_ops(folder)
        assert ops.count(FUSED_LSTM) == (4 if chars else 2)
        assert ("WHILE" in ops) == crf
    if format_name == "onnx":
        # the sentence BiLSTM (and the characters' one) as LSTM operators; a CRF's
        # Viterbi decode and marginals as Loops; any batch and length
        ops = operators(os.path.join(folder, "model.onnx"))
        assert ops.count("LSTM") == (2 if chars else 1) and ("Loop" in ops) == crf
        with open(os.path.join(folder, "deploy.json"), encoding="utf-8") as file:
            shapes = json.load(file)["models"]["model"]["shapes"]
        assert all(shape[:2] == [None, None] for shape in shapes), shapes
    # each sentence alone, unpadded: the client pads to the LiteRT file's fixed length,
    # and padding words must change nothing (they stay masked with character features);
    # then 3 a call (run_client), and on ONNX a batch of 32 up to 124 tokens long
    inputs = TAGGER_INPUTS
    if format_name == "onnx":
        rng = np.random.default_rng(3)
        words = [w for s in TAGGER_INPUTS for w in s]
        inputs = (
            inputs
            + [list(rng.choice(words, 124))]
            + [list(rng.choice(words, n)) for n in rng.integers(1, 40, 27)]
        )
    expected = task.predict(inputs)
    got = run_client(folder, inputs + [[]], batch_size=32)
    assert got[-1] == {"tags": [], "probabilities": []}  # no tokens, no tags
    assert [g["tags"] for g in got[:-1]] == [e["tags"] for e in expected]
    assert all(g["tags"] for g in got[:-1])
    if crf:  # trained in BIOES, reported in BIO
        assert not {t[:2] for g in got for t in g["tags"]} & {"E-", "S-"}
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g["probabilities"], e["probabilities"], atol=1e-5)


# ------------------------------------------------------------------------- translator

TRANSLATOR_INPUTS = ["3rd of May 1999", "12 march, 2014", "", "zzzz qqqq", "5 june 1987 a b c d"]


@pytest.fixture(scope="module")
def translator_exports(tiny_translator, tmp_path_factory):
    """``get(format)``: ``translator export --format FORMAT`` of the session's tiny
    translator run (words -> characters, beam size 2) through the command line, once
    per format ("saved_model" too)."""
    folder, exported = tmp_path_factory.mktemp("translator_exports"), {}

    def get(format_name):
        if format_name not in exported:
            exported[format_name] = _export(
                translator, tiny_translator, format_name, folder / format_name
            )
        return exported[format_name]

    return get


@pytest.fixture(scope="module")
def translator_greedy(tiny_translator):
    """The task's greedy translations of the inputs (the run's greedy search, its
    constraints included), with their scores; and the task."""
    config = common.saved_config(translator.OPTIONS, str(tiny_translator), {})
    task = translator.RECIPE.load(config)
    found = task.generate(
        TRANSLATOR_INPUTS, translator.search_strategy(config, 1), return_scores=True
    )
    return [row[0] for row in found], task


@pytest.mark.parametrize("format_name", FORMATS)
def test_translator_client_reproduces_the_saved_model_and_the_task(
    translator_exports, translator_greedy, format_name
):
    """Beam search (the run's beam size, 2) against the SavedModel's ``translate``
    signature; greedy search against the task's own `generate`: translations identical,
    scores within 1e-5."""
    import tensorflow as tf

    folder = translator_exports(format_name)
    extension = "onnx" if format_name == "onnx" else "tflite"
    if format_name == "onnx":  # the bidirectional GRU encoder as one operator
        for graph in ("beam", "greedy", "encoder"):
            assert operators(os.path.join(folder, f"{graph}.onnx")).count("GRU") == 1, graph
    assert sorted(os.listdir(folder)) == [
        f"beam.{extension}",
        "client.py",
        f"decoder_step.{extension}",
        "deploy.json",
        f"encoder.{extension}",
        f"greedy.{extension}",
    ]
    saved = tf.saved_model.load(translator_exports("saved_model"))
    served = saved.signatures["translate"](text=tf.constant(TRANSLATOR_INPUTS))
    beam = run_client(folder, TRANSLATOR_INPUTS, "translate")
    assert [b["translation"] for b in beam] == [t.decode() for t in served["translation"].numpy()]
    assert any(b["translation"] for b in beam) and beam[2]["translation"] == ""
    np.testing.assert_allclose([b["score"] for b in beam], served["score"].numpy(), atol=1e-5)

    expected, _ = translator_greedy
    greedy = run_client(folder, TRANSLATOR_INPUTS, "translate_greedy")
    assert [g["translation"] for g in greedy] == [e["text"] for e in expected]
    np.testing.assert_allclose(
        [g["score"] for g in greedy], [e["score"] for e in expected], atol=1e-5
    )


@pytest.mark.parametrize("format_name", FORMATS)
def test_translator_streaming_loop_equals_greedy_generate(
    translator_exports, translator_greedy, format_name
):
    """The client's loop over the ``encoder`` and ``decoder_step`` graphs gives the
    task's greedy translations and scores."""
    expected, _ = translator_greedy
    streamed = run_client(translator_exports(format_name), TRANSLATOR_INPUTS, "stream_translate")
    assert [s["translation"] for s in streamed] == [e["text"] for e in expected]
    np.testing.assert_allclose(
        [s["score"] for s in streamed], [e["score"] for e in expected], atol=1e-4
    )


def test_translator_saved_model_streaming_signatures(translator_exports, translator_greedy):
    """The SavedModel's ``encode`` and ``decoder_step`` signatures, in a greedy loop,
    give the task's greedy translations."""
    import tensorflow as tf

    from kerasrnn.data import END_ID, START_ID

    expected, task = translator_greedy
    loaded = tf.saved_model.load(translator_exports("saved_model"))
    encode, step = loaded.signatures["encode"], loaded.signatures["decoder_step"]
    texts = [t for t in TRANSLATOR_INPUTS if t]  # a blank text has no translation to stream
    encoded = encode(text=tf.constant(texts))
    memory = {k: v for k, v in encoded.items() if k.startswith("memory_")}
    states = {k: v for k, v in encoded.items() if k.startswith("state_")}
    token = tf.fill([len(texts)], START_ID)
    done = np.zeros(len(texts), bool)
    out = []
    for _ in range(task.max_target_length):  # the run's max_length_ratio is None
        outputs = step(token=token, **states, **memory)
        states = {k: outputs[k] for k in states}
        chosen = outputs["logits"].numpy().argmax(-1)
        out.append(np.where(done, END_ID, chosen))
        done |= chosen == END_ID
        token = tf.constant(chosen, tf.int32)
    streamed = task.preprocessor.target.decode_graph(np.stack(out, 1)).numpy()
    greedy = [e["text"] for t, e in zip(TRANSLATOR_INPUTS, expected) if t]
    assert [s.decode() for s in streamed] == greedy


def test_formats_a_recipe_cannot_hold_are_one_line_errors(
    tiny_translator, tiny_language_model, tmp_path, capsys
):
    """Diverse beam search (the translator) and sampling (the language model) have no
    runtime graph: one line, exit status 2, nothing written."""
    for recipe, flags in (
        (translator, ["--output-dir", str(tiny_translator), "--beam-size", "4",
                      "--beam-groups", "2"]),
        (language_model, ["--output-dir", str(tiny_language_model), "--method", "sample"]),
    ):  # fmt: skip
        capsys.readouterr()
        folder = tmp_path / recipe.__name__
        args = ["export", *flags, "--format", "onnx", "--export-dir", str(folder)]
        code = recipe.main(args)
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err, err
        assert not folder.exists()
        if recipe is translator:
            assert "runs greedy or beam search, not diverse beam search" in err
        else:
            assert "export supports method 'greedy' or 'beam', got 'sample'" in err


# --------------------------------------------------------------------- language model


@pytest.fixture(scope="module")
def language_model_task(tmp_path_factory):
    """A tiny untrained word-level language model as the recipe builds it (2 LSTM
    layers of 8 units, large initial weights and a fixed seed: its greedy continuations
    are not empty), its export options (greedy, 8 tokens) and its SavedModel."""
    import keras

    from kerasrnn.data import Vocabulary
    from kerasrnn.export import export_task
    from kerasrnn.models import LanguageModelPreprocessor

    keras.utils.set_random_seed(3)
    config = common.load_config(
        language_model.DEFAULTS,
        overrides=dict(units=8, num_layers=2, init_scale=0.5, seed=3, gen_length=8),
    )
    words = Vocabulary.build([["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log"]])
    first = language_model.first_token(config)
    task = language_model.build_model(config, LanguageModelPreprocessor(words, "word", first))
    options = language_model.RECIPE.export_options(config)
    saved = export_task(task, str(tmp_path_factory.mktemp("lm") / "saved_model"), **options)
    return task, options, saved


def _stream(step, ids, max_length):
    """Greedy ids after `ids` by the SavedModel's ``step`` signature, one call per
    token, until [END] (included) or `max_length` tokens."""
    import tensorflow as tf

    from kerasrnn.data import END_ID

    specs = step.structured_input_signature[1]
    states = {k: tf.zeros([1, *v.shape[1:]]) for k, v in specs.items() if k != "token"}

    def feed(token):
        outputs = step(token=tf.constant([token], tf.int32), **states)
        states.update({k: outputs[k] for k in states})
        return outputs["logits"].numpy()[0]

    for token in ids:
        logits = feed(token)
    out: list = []
    while len(out) < max_length:
        out.append(int(np.argmax(logits)))
        if out[-1] == END_ID:
            break
        logits = feed(out[-1])
    return out


PROMPTS = ["the", "the dog", "a zebra", ""]


@pytest.mark.parametrize("format_name", FORMATS)
def test_language_model_client_generates_and_streams_as_generate(
    language_model_task, format_name, tmp_path, capfd
):
    """The in-graph loop (``generate``) and the SavedModel equal the task's `generate`;
    the streaming loop (``step``, one call per token) does too, by the SavedModel's
    step and by the client's."""
    import tensorflow as tf

    from kerasrnn.export import export_task

    task, options, saved = language_model_task
    expected = task.generate(PROMPTS, options["strategy"], options["max_length"])
    assert any(expected)
    loaded = tf.saved_model.load(saved)
    served = loaded.signatures["serving_default"](prompt=tf.constant(PROMPTS))
    assert [c.decode() for c in served["continuation"].numpy()] == expected
    # the SavedModel's streaming step, in a greedy loop
    preprocessor = task.preprocessor
    streamed = [
        _stream(loaded.signatures["step"], preprocessor.encode([p]).numpy()[0], 8) for p in PROMPTS
    ]
    words = preprocessor.vocabulary
    assert [" ".join(words.decode(ids, skip_special=True)) for ids in streamed] == expected
    capfd.readouterr()
    folder = export_task(task, str(tmp_path / format_name), format_name, sequence_length=6,
                         **options)  # fmt: skip
    assert_no_third_party_messages(capfd.readouterr().err)
    if format_name == "onnx":
        assert_dynamic_onnx_shapes(folder, "generate")
    assert run_client(folder, PROMPTS) == expected
    assert run_client(folder, PROMPTS, "stream") == expected


# ------------------------------------------------------------------ pair classifier

PAIRS = [
    ("A man is playing a guitar", "a person plays THE guitar"),
    ("", "nobody here"),
    ("cats sat on the mat unseen-word", "the dog sat"),
]


@pytest.mark.parametrize("format_name", FORMATS)
def test_pair_classifier_client_reproduces_the_task(tiny_pair_classifier, format_name, tmp_path):
    from kerasrnn.models import PairClassifier

    folder = _export(pair_classifier, tiny_pair_classifier, format_name, tmp_path / format_name)
    if format_name == "onnx":
        assert_dynamic_onnx_shapes(folder)
    expected = PairClassifier.from_preset(tiny_pair_classifier).predict(PAIRS)
    got = run_client(folder, PAIRS)
    # the command line: a pair on the command line, the others a line each of a file
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{a}\t{b}\n" for a, b in PAIRS[1:]), encoding="utf-8")
    command = client_command(folder, *PAIRS[0], "--input", pairs, "--batch-size", "8")
    assert_same_predictions(command, got)
    labels = pair_classifier.LABELS
    assert _class_rows(got, labels)[0] == _class_rows(expected, labels)[0]
    np.testing.assert_allclose(
        _class_rows(got, labels)[1], _class_rows(expected, labels)[1], atol=1e-5
    )


@pytest.mark.parametrize("format_name", FORMATS)
def test_pair_relatedness_client_reproduces_the_task(tmp_path, format_name):
    """Tai et al.'s distribution head (a dict of outputs): the client gets the score."""
    from kerasrnn.export import export_task

    a, b = (list(column) for column in zip(*PAIRS))
    task, _ = _built(
        pair_classifier, tmp_path, {"train": (a, b, [4.5, 1.0, 3.0], None)},
        task="relatedness", relatedness_target="distribution", units=8, embedding_dim=8,
        hidden_units=8, max_length=4,
    )  # fmt: skip
    folder = export_task(task, str(tmp_path / format_name), format_name, sequence_length=4)
    expected = [row["score"] for row in task.predict(PAIRS)]
    got = [g["score"] for g in run_client(folder, PAIRS)]
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.ptp(got) > 0  # the pairs differ, and so do their scores
