"""The recipes exported to ONNX and LiteRT (`export --format onnx|litert`): the
reference client (`kerasrnn/export/client.py`, copied beside the model) runs in a
process where tensorflow, keras and kerasrnn cannot be imported, and reproduces the
recipe's own SavedModel on the same inputs. Tiny models (8 units), untrained or trained
for one epoch on a few synthetic sentences."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from recipes import classifier, common, tagger
from tests.conftest import main_json

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
method = getattr(runner, sys.argv[3]) if len(sys.argv) > 3 else runner.predict
print(json.dumps(method(inputs)))
assert not any(m.split(".")[0] in ("tensorflow", "keras") for m in sys.modules)
"""


def run_client(folder, inputs, method=None):
    """The client's predictions in a process that cannot import TensorFlow or Keras."""
    argv = [sys.executable, "-c", BLOCKED_CLIENT, str(folder), json.dumps(inputs)]
    done = subprocess.run(
        argv + ([method] if method else []), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def _train_tiny(main, folder, train_name, lines, *flags):
    """The run flags (``--output-dir``) of a tiny model (8 units, one epoch) that a
    recipe's `main` trained through its command line on `lines` written to
    `folder`/`train_name`."""
    (folder / train_name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = ["--output-dir", str(folder / "run")]
    tiny = ["--epochs", "1", "--embedding-dim", "8", "--units", "8", "--verbose", "0"]
    assert main(["train", "--train", str(folder / train_name), *tiny, *flags, *run]) == 0
    return run


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory):
    """A classifier trained for one epoch through the command line."""
    texts = _texts(48)
    labels = ["pos" if ("good" in t or "great" in t) else "neg" for t in texts]
    lines = [f"{label}\t{text}" for label, text in zip(labels, texts)]
    folder = tmp_path_factory.mktemp("classifier")
    return _train_tiny(classifier.main, folder, "train.tsv", lines, "--valid-fraction", "0",
                       "--lowercase", "true")  # fmt: skip


@pytest.mark.parametrize("format_name", FORMATS)
def test_classifier_client_reproduces_the_saved_model(classifier_run, format_name, capfd):
    import tensorflow as tf

    capfd.readouterr()
    assert classifier.main(["export", *classifier_run]) == 0
    out, err = capfd.readouterr()
    saved = json.loads(out)["saved_model"]
    assert_no_third_party_messages(err)
    assert classifier.main(["export", *classifier_run, "--format", format_name]) == 0
    out, err = capfd.readouterr()
    folder = json.loads(out)[format_name]
    assert_no_third_party_messages(err)
    assert sorted(os.listdir(folder)) == sorted(
        ["client.py", "deploy.json", "model." + {"onnx": "onnx", "litert": "tflite"}[format_name]]
    )
    if format_name == "litert":  # the BiLSTM on LiteRT's fused kernel, one per direction
        ops = litert_ops(folder)
        assert ops.count(FUSED_LSTM) == 2 and "WHILE" not in ops
    if format_name == "onnx":  # the BiLSTM as one bidirectional LSTM operator
        ops = operators(os.path.join(folder, "model.onnx"))
        assert ops.count("LSTM") == 1 and "Loop" not in ops
    texts = ["Good film", "awful PLOT never-seen-word", "", "the  cat sat on a mat fine"]
    out = tf.saved_model.load(saved).signatures["serving_default"](text=tf.constant(texts))
    got = run_client(folder, texts)
    assert [g["label"] for g in got] == [t.decode() for t in out["label"].numpy()]
    labels = list(got[0]["probabilities"])
    probabilities = np.array([[g["probabilities"][k] for k in labels] for g in got])
    np.testing.assert_allclose(probabilities, out["probabilities"].numpy(), atol=1e-5)
    np.testing.assert_allclose(
        [g["probability"] for g in got], out["probability"].numpy(), atol=1e-5
    )


def test_export_format_errors_are_one_line(classifier_run, capsys):
    with pytest.raises(SystemExit) as exit_:
        classifier.main(["export", *classifier_run, "--format", "tflite"])
    assert exit_.value.code == 2
    assert "argument --format: invalid choice: 'tflite'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "format_name, quantization", [("onnx", "dynamic_int8"), ("litert", "float16")]
)
def test_quantized_export_stays_close_to_the_saved_model(
    classifier_run, format_name, quantization, tmp_path, capsys
):
    import tensorflow as tf

    folder = str(tmp_path / quantization)
    capsys.readouterr()
    assert classifier.main(["export", *classifier_run, "--export-dir", str(tmp_path / "sm")]) == 0
    export = ["export", *classifier_run, "--format", format_name, "--export-dir", folder]
    assert classifier.main([*export, "--quantization", quantization]) == 0
    with open(os.path.join(folder, "deploy.json"), encoding="utf-8") as file:
        assert json.load(file)["quantization"] == quantization
    texts = ["Good film", "awful PLOT never-seen-word", "the  cat sat on a mat fine"]
    out = tf.saved_model.load(str(tmp_path / "sm")).signatures["serving_default"](
        text=tf.constant(texts)
    )
    got = run_client(folder, texts)
    labels = list(got[0]["probabilities"])
    probabilities = np.array([[g["probabilities"][k] for k in labels] for g in got])
    # 8-bit or 16-bit weights: close to float32, not equal
    np.testing.assert_allclose(probabilities, out["probabilities"].numpy(), atol=2e-2)


def test_quantization_a_format_cannot_take_is_a_one_line_error(classifier_run, capsys):
    for fmt, quantization, fix in [
        ("saved_model", "dynamic_int8", "use --format onnx or litert"),
        ("onnx", "float16", "use --format litert"),
    ]:
        capsys.readouterr()
        code = classifier.main(["export", *classifier_run, "--format", fmt,
                                "--quantization", quantization])  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err
        assert f"--quantization {quantization} does not apply to --format {fmt}: {fix}" in err


def _tagger(tmp_path, crf, chars=True, seed=0):
    """An untrained tagger (fixed seed) with its vocabularies, and its SavedModel."""
    import keras

    from kerasrnn.data import Vocabulary

    keras.utils.set_random_seed(seed)
    config = common.load_config(
        tagger.DEFAULTS,
        overrides={
            "embedding_dim": 8,
            "units": 8,
            "char_dim": 8 if chars else 0,
            "char_units": 8,
            "max_chars": 6,
            "crf": crf,
            "output_dir": str(tmp_path / "run"),
        },
    )
    sentences = [t.split() for t in _texts(20, seed=1)]
    words = Vocabulary.build([[w.lower() for w in s] for s in sentences])
    char_vocab = Vocabulary.build([list(w) for s in sentences for w in s]) if chars else None
    tags = ["ADJ", "NOUN", "VERB", "DET"]
    model = tagger.build_model(config, len(words), len(char_vocab) if chars else 0, len(tags))
    if crf:  # random transitions, so that the Viterbi path is not the per-word argmax
        for weight in model.weights:
            if "transition" in weight.path:
                weight.assign(np.random.default_rng(seed).normal(size=weight.shape))
    trained = tagger.Tagger(model, words, char_vocab, tags, True, 6)
    saved = str(tmp_path / "saved_model")
    trained.export(saved)
    return trained, saved


TAGGER_INPUTS = [
    "The cat sat on a mat".split(),
    "good Unseen-Word-longer-than-six film".split(),
    [],
    ["FINE"],
]


def _saved_tags(saved, sentences):
    """The SavedModel's tags and probabilities, each sentence alone."""
    import tensorflow as tf

    serve = tf.saved_model.load(saved).signatures["serving_default"]
    results = []
    for sentence in sentences:
        n = len(sentence)
        out = serve(tokens=tf.constant([sentence or [""]]))  # an empty one: one pad
        tags = [t.decode() for t in out["tags"].numpy()[0, :n]]
        results.append((tags, out["probability"].numpy()[0, :n]))
    return results


@pytest.mark.parametrize("format_name", FORMATS)
@pytest.mark.parametrize(
    "crf, chars", [(False, True), (True, True), (False, False)], ids=["softmax", "crf", "words"]
)
def test_tagger_client_reproduces_the_saved_model(tmp_path, format_name, crf, chars, capfd, caplog):
    trained, saved = _tagger(tmp_path, crf, chars)
    capfd.readouterr()
    folder = trained.export_runtime(str(tmp_path / format_name), format_name, 12)
    err = capfd.readouterr().err
    assert_no_third_party_messages(err)
    if format_name == "litert":
        # the word BiLSTM (and the character one) on LiteRT's fused kernel, one per
        # direction; a loop only for the CRF's Viterbi decode
        ops = litert_ops(folder)
        assert ops.count(FUSED_LSTM) == (4 if chars else 2)
        assert ("WHILE" in ops) == crf
    if format_name == "onnx" and not crf:
        # the sentence BiLSTM (and the characters' one) as LSTM operators, no Loop left
        ops = operators(os.path.join(folder, "model.onnx"))
        assert ops.count("LSTM") == (2 if chars else 1) and "Loop" not in ops
    if crf and format_name == "onnx":  # the Viterbi loop goes through the LiteRT graph
        # (one line on the logger "kerasrnn.export", which pytest captures)
        notes = [r.getMessage() for r in caplog.records if r.name == "kerasrnn.export"]
        assert len(notes) == 1 and "the loop of layer 'viterbi' (ViterbiOutputs)" in notes[0]
    # each sentence alone, unpadded: the client pads to the LiteRT file's fixed length,
    # and padding words must change nothing (they stay masked with character features)
    expected = _saved_tags(saved, TAGGER_INPUTS)
    got = run_client(folder, TAGGER_INPUTS)
    assert [g["tags"] for g in got] == [tags for tags, _ in expected]
    assert any(got[0]["tags"])
    for g, (_, probability) in zip(got, expected):
        np.testing.assert_allclose(g["probabilities"], probability, atol=1e-5)


@pytest.fixture(scope="module")
def translator_run(tiny_translator):
    """The session's tiny translator run (words -> characters, beam size 2, trained one
    epoch on generated dates; tests/conftest.py)."""
    return tiny_translator


TRANSLATOR_INPUTS = ["3rd of May 1999", "12 march, 2014", "", "zzzz qqqq", "5 june 1987 a b c d"]


_EXPORTED: dict = {}


def _translator_folder(run, format_name):
    """``translator export --format FORMAT`` of the run through the command line, once
    per format (the ONNX export of the decoding loops takes the longest)."""
    from recipes import translator

    key = (str(run), format_name)
    if key not in _EXPORTED:
        exported = main_json(
            translator, "export", "--output-dir", str(run), "--format", format_name
        )
        _EXPORTED[key] = exported[format_name]
    return _EXPORTED[key]


@pytest.mark.parametrize("format_name", FORMATS)
def test_translator_client_reproduces_the_saved_model(translator_run, format_name):
    """Beam search (the run's beam size, 2) against the SavedModel's ``translate``
    signature; greedy search against the library's own graph (`Translator.translate`
    with beam size 1): translations identical, scores within 1e-5."""
    import tensorflow as tf

    from recipes import translator

    saved = str(translator_run / "sm")
    if not os.path.exists(saved):
        translator.Translator.from_run(
            common.saved_config(translator.DEFAULTS, str(translator_run))
        ).export(saved)
    folder = _translator_folder(translator_run, format_name)
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
    served = tf.saved_model.load(str(translator_run / "sm")).signatures["translate"](
        text=tf.constant(TRANSLATOR_INPUTS)
    )
    beam = run_client(folder, TRANSLATOR_INPUTS, "translate")
    assert [b["translation"] for b in beam] == [t.decode() for t in served["translation"].numpy()]
    assert any(b["translation"] for b in beam)
    np.testing.assert_allclose([b["score"] for b in beam], served["score"].numpy(), atol=1e-5)

    trained = translator.Translator.from_run(
        common.saved_config(translator.DEFAULTS, str(translator_run))
    )
    expected = trained.translate(TRANSLATOR_INPUTS, 1, return_scores=True)
    greedy = run_client(folder, TRANSLATOR_INPUTS, "translate_greedy")
    assert [g["translation"] for g in greedy] == [e[0]["translation"] for e in expected]
    np.testing.assert_allclose(
        [g["score"] for g in greedy], [e[0]["score"] for e in expected], atol=1e-5
    )


@pytest.fixture(scope="module")
def language_model_run():
    """A tiny untrained word-level language model (2 LSTM layers of 8 units, fixed
    seed: its greedy continuations are not empty), greedy decoding."""
    import keras

    from kerasrnn.data import Vocabulary
    from recipes import language_model

    keras.utils.set_random_seed(3)
    words = Vocabulary.build([["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log"]])
    config = dict(language_model.DEFAULTS)
    config.update(
        units=8, num_layers=2, init_scale=0.5, seed=3, gen_length=8, method="greedy",
        output_dir="unused",
    )  # fmt: skip
    model = language_model.build_model(config, len(words))
    return language_model.LanguageModel(model, words, config)


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
    language_model_run, format_name, tmp_path, capfd
):
    """The in-graph loop (``generate``) equals the SavedModel; the streaming loop
    (``step``, one call per token) equals the library's `generate` (GreedySearch)."""
    import tensorflow as tf

    from recipes import language_model

    trained = language_model_run
    saved = str(tmp_path / "saved_model")
    trained.export(saved)
    served = tf.saved_model.load(saved).signatures["serving_default"](prompt=tf.constant(PROMPTS))
    expected = [c.decode() for c in served["continuation"].numpy()]
    assert expected == [r["continuation"] for r in trained.generate(PROMPTS)]
    # the SavedModel's streaming step, in a greedy loop
    step = tf.saved_model.load(saved).signatures["step"]
    first = language_model.first_token(trained.config)
    streamed = [_stream(step, [first, *trained.vocabulary.encode(p.split())], 8) for p in PROMPTS]
    assert [" ".join(trained.vocabulary.decode(ids, skip_special=True)) for ids in streamed] == (
        expected
    )
    capfd.readouterr()
    folder = trained.export_runtime(str(tmp_path / format_name), format_name, 6)
    assert_no_third_party_messages(capfd.readouterr().err)
    assert run_client(folder, PROMPTS) == expected
    assert run_client(folder, PROMPTS, "stream") == expected
    assert any(expected)


@pytest.mark.parametrize("format_name", FORMATS)
def test_translator_streaming_loop_equals_greedy_generate(translator_run, format_name, tmp_path):
    """The client's loop over the ``encoder`` and ``decoder_step`` graphs gives the
    tokens of the library's `Seq2Seq.generate` with `GreedySearch`."""
    from recipes import translator

    trained = translator.Translator.from_run(
        common.saved_config(translator.DEFAULTS, str(translator_run))
    )
    folder = _translator_folder(translator_run, format_name)
    expected = trained.translate(TRANSLATOR_INPUTS, 1, return_scores=True)
    streamed = run_client(folder, TRANSLATOR_INPUTS, "stream_translate")
    assert [s["translation"] for s in streamed] == [e[0]["translation"] for e in expected]
    np.testing.assert_allclose(
        [s["score"] for s in streamed], [e[0]["score"] for e in expected], atol=1e-4
    )


def test_translator_saved_model_streaming_signatures(translator_run, tmp_path):
    """The SavedModel's ``encode`` and ``decoder_step`` signatures, in a greedy loop,
    give the library's greedy translations (`Translator.translate` with beam size 1)."""
    import tensorflow as tf

    from kerasrnn.data import END_ID, START_ID
    from kerasrnn.export.client import detokenize
    from recipes import translator

    trained = translator.Translator.from_run(
        common.saved_config(translator.DEFAULTS, str(translator_run))
    )
    loaded = tf.saved_model.load(trained.export(str(tmp_path / "sm")))
    encode, step = loaded.signatures["encode"], loaded.signatures["decoder_step"]
    texts = [t for t in TRANSLATOR_INPUTS if t]  # a blank text has no translation to stream
    encoded = encode(text=tf.constant(texts))
    memory = {k: v for k, v in encoded.items() if k.startswith("memory_")}
    states = {k: v for k, v in encoded.items() if k.startswith("state_")}
    token = tf.fill([len(texts)], START_ID)
    done = np.zeros(len(texts), bool)
    out = []
    for _ in range(trained.settings["max_length"]):  # the run's max_length_ratio is None
        outputs = step(token=token, **states, **memory)
        states = {k: outputs[k] for k in states}
        chosen = outputs["logits"].numpy().argmax(-1)
        out.append(np.where(done, END_ID, chosen))
        done |= chosen == END_ID
        token = tf.constant(chosen, tf.int32)
    target = trained.target_vocabulary.tokens
    streamed = []
    for row in np.stack(out, 1):
        ids = list(row[: list(row).index(END_ID)] if END_ID in row else row)
        streamed.append(detokenize([target[i] for i in ids], "char"))
    assert streamed == trained.translate(texts, 1)


def test_formats_a_recipe_cannot_hold_are_one_line_errors(language_model_run, tmp_path):
    from recipes import language_model

    trained = language_model_run
    sampling = language_model.LanguageModel(
        trained.model, trained.vocabulary, {**trained.config, "method": "sample"}
    )
    with pytest.raises(common.ConfigError, match="pass --method greedy") as error:
        sampling.export_runtime(str(tmp_path / "x"), "onnx")
    assert "\n" not in str(error.value) and "the onnx export" in str(error.value)
    assert not os.path.exists(tmp_path / "x")


PAIRS = [
    ("A man is playing a guitar", "a person plays THE guitar"),
    ("", "nobody here"),
    ("cats sat on the mat unseen-word", "the dog sat"),
]


def _saved_pairs(saved, pairs):
    import tensorflow as tf

    serve = tf.saved_model.load(saved).signatures["serving_default"]
    a, b = zip(*pairs)
    return serve(sentence_a=tf.constant(a), sentence_b=tf.constant(b))


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory):
    """An entailment pair model trained for one epoch through the command line."""
    from recipes import pair_classifier

    rng = np.random.default_rng(0)
    rows = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
    for i in range(30):
        a, b = (" ".join(rng.choice(WORDS, rng.integers(2, 6))) for _ in range(2))
        rows.append(f"{i}\t{a}\t{b}\t{rng.uniform(1, 5):.1f}\t{pair_classifier.LABELS[i % 3]}")
    folder = tmp_path_factory.mktemp("pairs")
    return _train_tiny(pair_classifier.main, folder, "train.txt", rows, "--hidden-units", "8")


@pytest.mark.parametrize("format_name", FORMATS)
def test_pair_classifier_client_reproduces_the_saved_model(pair_run, format_name, capsys):
    from recipes import pair_classifier

    capsys.readouterr()
    assert pair_classifier.main(["export", *pair_run]) == 0
    saved = json.loads(capsys.readouterr().out)["saved_model"]
    assert pair_classifier.main(["export", *pair_run, "--format", format_name]) == 0
    folder = json.loads(capsys.readouterr().out)[format_name]
    out = _saved_pairs(saved, PAIRS)
    got = run_client(folder, PAIRS)
    assert [g["label"] for g in got] == [t.decode() for t in out["label"].numpy()]
    probabilities = [[g["probabilities"][k] for k in pair_classifier.LABELS] for g in got]
    np.testing.assert_allclose(probabilities, out["probabilities"].numpy(), atol=1e-5)


@pytest.mark.parametrize("format_name", FORMATS)
def test_pair_relatedness_client_reproduces_the_saved_model(tmp_path, format_name):
    """Tai et al.'s distribution head (a dict of outputs): the client gets the score."""
    import keras

    from kerasrnn.data import Vocabulary
    from recipes import pair_classifier

    keras.utils.set_random_seed(0)
    overrides = {"task": "relatedness", "relatedness_target": "distribution", "units": 8,
                 "embedding_dim": 8, "hidden_units": 8, "max_length": 4}  # fmt: skip
    config = common.load_config(pair_classifier.DEFAULTS, overrides=overrides)
    words = Vocabulary.build([s.lower().split() for pair in PAIRS for s in pair])
    model = pair_classifier.build_model(config, len(words))
    trained = pair_classifier.PairClassifier(model, words, "relatedness", True, 4)
    trained.export(str(tmp_path / "saved_model"))
    folder = trained.export_runtime(str(tmp_path / format_name), format_name, 4)
    expected = _saved_pairs(str(tmp_path / "saved_model"), PAIRS)["score"].numpy()
    got = [g["score"] for g in run_client(folder, PAIRS)]
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.ptp(got) > 0  # the pairs differ, and so do their scores
