"""kerasrnn.export and the recipes' command-line round trip: train -> export -> load the
SavedModel in a fresh process that never imports kerasrnn -> predict raw strings."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn.export import class_outputs, sequence_outputs
from recipes import classifier, common, tagger

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}

# Runs in a fresh interpreter: only TensorFlow, and it checks that kerasrnn stays out.
LOADER = r"""
import json, sys
import tensorflow as tf
classify = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
tag = tf.saved_model.load(sys.argv[2])
out = classify(text=tf.constant(["good film", "", "qqqzzz unknownword"]))
tokens = tf.constant([["Peter", "rejects", "Zqxwv"], ["", "", ""]])
tags = tag.signatures["serving_default"](tokens=tokens)
text_tags = tag.signatures["tag_text"](text=tf.constant(["Peter rejects Zqxwv", ""]))
print(json.dumps({
    "label": [x.decode() for x in out["label"].numpy()],
    "probabilities": out["probabilities"].numpy().tolist(),
    "tags": [[x.decode() for x in row] for row in tags["tags"].numpy()],
    "text_tags": [[x.decode() for x in row] for row in text_tags["tags"].numpy()],
    "kerasrnn_imported": any(m.startswith(("kerasrnn", "recipes")) for m in sys.modules),
}))
"""


def test_class_and_sequence_outputs():
    probs = tf.constant([[0.2, 0.8], [0.6, 0.4]])
    out = class_outputs(probs, ["neg", "pos"])
    assert out["label"].numpy().tolist() == [b"pos", b"neg"]
    np.testing.assert_allclose(out["probability"], [0.8, 0.6])
    assert out["labels"].numpy().tolist() == [[b"neg", b"pos"]] * 2
    seq = sequence_outputs(tf.constant([[[0.1, 0.9], [0.7, 0.3]]]), ["A", "B"], [1])
    assert seq["tags"].numpy().tolist() == [[b"B", b""]]
    np.testing.assert_allclose(seq["probability"], [[0.9, 0.0]])


def test_cli_round_trip_with_mirrored_strategy(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("pos\tgood film\nneg\tbad film\n" * 10)
    ner = tmp_path / "ner.txt"
    ner.write_text("Peter B-PER\nrejects O\nEU B-ORG\n\n" * 10)
    tiny = [
        "--epochs",
        "1",
        "--units",
        "8",
        "--embedding-dim",
        "8",
        "--verbose",
        "0",
        "--batch-size",
        "8",
    ]
    cls_run, tag_run = tmp_path / "cls", tmp_path / "tag"
    # --strategy mirrored needs a fresh process: it splits the CPU in two devices
    # before TensorFlow initialises them.
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.classifier",
            "train",
            "--train",
            str(tsv),
            "--output-dir",
            str(cls_run),
            "--strategy",
            "mirrored",
            "--valid-fraction",
            "0",
            *tiny,
        ],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads(train.stdout)["replicas"] == 2

    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.tagger",
            "train",
            "--train",
            str(ner),
            "--output-dir",
            str(tag_run),
            "--strategy",
            "mirrored",
            "--char-dim",
            "4",
            "--char-units",
            "4",
            *tiny,
        ],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads(train.stdout)["replicas"] == 2
    for recipe, run in ((classifier, cls_run), (tagger, tag_run)):
        assert recipe.main(["export", "--output-dir", str(run)]) == 0

    loaded = subprocess.run(
        [sys.executable, "-c", LOADER, str(cls_run / "saved_model"), str(tag_run / "saved_model")],
        env=ENV,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    served = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert not served["kerasrnn_imported"]

    # The SavedModel gives exactly what the in-process recipe gives.
    config = common.saved_config(classifier.DEFAULTS, str(cls_run))
    local = classifier.Classifier.from_run(config).predict(["good film", "", "qqqzzz unknownword"])
    assert served["label"] == [p["label"] for p in local]
    np.testing.assert_allclose(
        served["probabilities"],
        [[p["probabilities"][k] for k in ("neg", "pos")] for p in local],
        atol=1e-5,
    )
    tags = {"B-ORG", "B-PER", "O"}
    assert len(served["tags"][0]) == 3 and set(served["tags"][0]) <= tags
    assert served["tags"][1] == ["", "", ""]
    assert served["text_tags"][0] == served["tags"][0] and served["text_tags"][1] == [""] * 3


# Loads a Seq2Seq SavedModel where kerasrnn cannot be imported at all.
SEQ2SEQ_LOADER = r"""
import json, sys
sys.modules["kerasrnn"] = None  # any `import kerasrnn` now fails
import tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
texts = tf.constant(json.loads(sys.argv[2]))
greedy = loaded.signatures["serving_default"](text=texts)
n_best = loaded.signatures["translate_n_best"](text=texts)
print(json.dumps({
    "translation": [t.decode() for t in greedy["translation"].numpy()],
    "score": greedy["score"].numpy().tolist(),
    "translations": [[t.decode() for t in row] for row in n_best["translations"].numpy()],
    "scores": n_best["scores"].numpy().tolist(),
    "keras_imported": "keras" in sys.modules,
}))
"""


def test_seq2seq_saved_model_serves_strings_without_kerasrnn(tmp_path):
    import kerasrnn
    from kerasrnn.data import Vocabulary
    from kerasrnn.decoding import BeamSearch
    from kerasrnn.export import TextTranslator

    source_vocab = Vocabulary.build([["the", "cat", "sat"], ["a", "dog", "ran"]])
    target_vocab = Vocabulary.build([list("le chat"), list("un chien")])
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(
            len(source_vocab), len(target_vocab), embedding_dim=6, units=8
        ),
        max_source_length=4,
        max_target_length=7,
    )
    texts = ["the cat sat", "", "   ", "a dog ran the cat sat unknownword", "zebra"]
    TextTranslator(model, source_vocab, target_vocab, tokenize="word", detokenize="char").export(
        tmp_path / "sm", translate_n_best=BeamSearch(3, n_best=2)
    )
    result = subprocess.run(
        [sys.executable, "-c", SEQ2SEQ_LOADER, str(tmp_path / "sm"), json.dumps(texts)],
        env=ENV,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])

    # the same as the in-process model: ids -> generate -> tokens joined
    def local(strategy):
        rows = [source_vocab.encode(t.split()[:4]) or [0] for t in texts]
        ids = keras.utils.pad_sequences(rows, padding="post")
        out = model.generate(ids, strategy, max_length=7)
        tokens = keras.ops.convert_to_numpy(out.tokens)
        strings = [
            ["".join(target_vocab.decode(r, skip_special=True)) for r in row] for row in tokens
        ]
        return strings, keras.ops.convert_to_numpy(
            out.log_probs if strategy == "greedy" else out.scores
        )

    greedy, greedy_scores = local("greedy")
    beam, beam_scores = local(kerasrnn.decoding.BeamSearch(3, n_best=2))
    for i, text in enumerate(texts):
        if text.strip():
            assert served["translation"][i] == greedy[i][0]
            assert served["translations"][i] == beam[i]
            np.testing.assert_allclose(served["score"][i], greedy_scores[i, 0], atol=1e-4)
            np.testing.assert_allclose(served["scores"][i], beam_scores[i], atol=1e-4)
        else:  # empty or blank text: empty output, score 0
            assert served["translation"][i] == "" and served["score"][i] == 0.0
            assert served["translations"][i] == ["", ""]
    assert len(served["translations"][0]) == 2


def test_text_translator_errors():
    import kerasrnn
    from kerasrnn.data import Vocabulary
    from kerasrnn.export import TextTranslator

    vocab = Vocabulary.build([["a", "b"]])
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab) + 1, len(vocab), embedding_dim=4, units=4)
    )
    with pytest.raises(
        ValueError, match="`source_vocabulary` has 6 tokens but the model's source_vocab_size is 7"
    ):
        TextTranslator(model, vocab, vocab)
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab), len(vocab), embedding_dim=4, units=4)
    )
    with pytest.raises(ValueError, match="`tokenize` must be one of"):
        TextTranslator(model, vocab, vocab, tokenize="bpe")
    with pytest.raises(ValueError, match="`readout_dtype` must be one of"):
        TextTranslator(model, vocab, vocab, readout_dtype="int8")
    with pytest.raises(ValueError, match="must be a kerasrnn.seq2seq.Seq2Seq"):
        TextTranslator(keras.Sequential(), vocab, vocab)
    with pytest.raises(ValueError, match="Unknown decoding strategy .beams."):
        TextTranslator(model, vocab, vocab).translate(["a"], "beams")


def test_import_kerasrnn_does_not_import_tensorflow_on_jax():
    code = (
        "import sys, kerasrnn\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "import kerasrnn.tasks\n"
        "print(kerasrnn.tasks.date_translation_task(1)[1][0][4], "
        "kerasrnn.data.PAD_ID, callable(kerasrnn.seq2seq.Seq2Seq))\n"
        "assert 'tensorflow' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**ENV, "KERAS_BACKEND": "jax"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["-", "0", "True"]
    lazy = subprocess.run(
        [sys.executable, "-c", "import kerasrnn; print(kerasrnn.export.TextTranslator.__name__)"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert lazy.returncode == 0, lazy.stderr[-2000:]
    assert lazy.stdout.split()[-1] == "TextTranslator"


def test_text_translator_coverage_penalty_decodes_like_generate():
    """The coverage penalty reads alignments: TextTranslator must ask beam search for
    them (it did not, and the penalty raised) and then decode as generate does."""
    import kerasrnn
    from kerasrnn.data import Vocabulary
    from kerasrnn.export import TextTranslator

    vocab = Vocabulary.build([["a", "b", "c", "d"]])
    keras.utils.set_random_seed(3)
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab), len(vocab), embedding_dim=6, units=8),
        max_source_length=5,
    )
    beam = kerasrnn.decoding.BeamSearch(
        3, scorer=kerasrnn.decoding.Scorer("wu", coverage_penalty_weight=0.7)
    )
    texts = TextTranslator(model, vocab, vocab, max_length=6)
    rows = texts.translate(["a b c", "d a"], beam, return_scores=True)
    ids = keras.utils.pad_sequences(
        [vocab.encode(["a", "b", "c"]), vocab.encode(["d", "a"])], maxlen=5, padding="post"
    )
    expected = model.generate(ids, beam, max_length=6)
    tokens = keras.ops.convert_to_numpy(expected.tokens)
    scores = keras.ops.convert_to_numpy(expected.scores)
    for row, row_tokens, row_scores in zip(rows, tokens, scores):
        assert [h["translation"] for h in row] == [
            " ".join(vocab.decode(t, skip_special=True)) for t in row_tokens
        ]
        np.testing.assert_allclose([h["score"] for h in row], row_scores, atol=1e-5)


def test_text_translator_translate_batches_by_length_but_keeps_order():
    import kerasrnn
    from kerasrnn.data import Vocabulary
    from kerasrnn.export import TextTranslator

    vocab = Vocabulary.build([["a", "b", "c", "d"]])
    keras.utils.set_random_seed(5)
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab), len(vocab), embedding_dim=6, units=8),
        max_source_length=6,
    )
    texts = TextTranslator(model, vocab, vocab, max_length=5)
    sources = ["a b c d a", "b", "", "c d a", "d d", "a b c d b c"]
    beam = kerasrnn.decoding.BeamSearch(2)
    batched = texts.translate(sources, beam, return_scores=True, batch_size=2)
    alone = [texts.translate([s], beam, return_scores=True)[0] for s in sources]
    assert [[h["translation"] for h in row] for row in batched] == [
        [h["translation"] for h in row] for row in alone
    ]
    np.testing.assert_allclose(
        [[h["score"] for h in row] for row in batched],
        [[h["score"] for h in row] for row in alone],
        atol=1e-5,
    )
    assert batched[2] == [{"translation": "", "score": 0.0}] * 2


def test_text_translator_follows_a_change_of_its_settings():
    """`translate` keys its traced functions by the settings too: a new max_length or
    fusion is decoded with, not the first call's."""
    import kerasrnn
    from kerasrnn.data import END_ID, Vocabulary
    from kerasrnn.decoding import ShallowFusion
    from kerasrnn.export import TextTranslator
    from kerasrnn.models import LanguageModel, LanguageModelBackbone

    keras.utils.set_random_seed(3)
    source_vocab = Vocabulary.build([["the", "cat", "sat"], ["a", "dog", "ran"]])
    target_vocab = Vocabulary.build([list("le chat"), list("un chien")])
    model = kerasrnn.seq2seq.Seq2Seq(
        kerasrnn.seq2seq.Seq2SeqBackbone(
            len(source_vocab), len(target_vocab), embedding_dim=6, units=8
        ),
        max_source_length=4,
        max_target_length=7,
    )
    model.build()
    # no early end: every output runs to max_length, so its value shows
    readout = next(w for w in model.weights if w.path.endswith("readout/bias"))
    readout.assign(keras.ops.convert_to_numpy(readout) - 10.0 * np.eye(len(target_vocab))[END_ID])
    texts = ["the cat sat", "a dog ran", "dog"]
    ids = keras.utils.pad_sequences([source_vocab.encode(t.split()) for t in texts], padding="post")

    def expected(**settings):
        tokens = keras.ops.convert_to_numpy(model.generate(ids, "greedy", **settings).tokens)
        return ["".join(target_vocab.decode(row[0], skip_special=True)) for row in tokens]

    translator = TextTranslator(
        model, source_vocab, target_vocab, tokenize="word", detokenize="char"
    )
    assert translator.translate(texts) == expected(max_length=7)
    translator.settings["max_length"] = 2
    assert translator.translate(texts) == expected(max_length=2) != expected(max_length=7)
    lm = LanguageModel(LanguageModelBackbone(len(target_vocab), 4))
    fusion = ShallowFusion(lm, 5.0)
    translator.settings["fusion"] = fusion
    fused = expected(max_length=2, fusion=fusion)
    assert translator.translate(texts) == fused != expected(max_length=2)
