"""The translator recipe with subwords: one run with SentencePiece subwords
(``--source-tokenizer sentencepiece --target-tokenizer bpe``) whose learned models are
saved with it, whose preset alone translates, whose SavedModel takes and gives raw
strings with only TensorFlow and tensorflow-text present, whose ONNX client tokenises
with the same models as the recipe, and whose ``lm-text`` writes its targets in its
target pieces; and WordPiece sides (untrained: no network needs training for them)
through the SavedModel the same way."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.export.test_recipe_runtimes import run_client
from tests.recipes.test_translator import ENV, _date_corpus, _main, _split_flags

# Each test reads a module-scoped run or export that takes tens of seconds to make.
pytestmark = pytest.mark.large

TEXTS = ["12 march 2014", "", "zzzz qqqq unknownword", "THE 3RD OF MAY 1999 !!"]
ENV_WITHOUT_KERASRNN = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}

LOAD_WITH_TENSORFLOW_TEXT_ONLY = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece and WordPiece kernels
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["translate"](text=tf.constant(json.loads(sys.argv[2])))
assert not {"kerasrnn", "recipes", "keras_hub"} & set(sys.modules)
print(json.dumps([t.decode("utf-8") for t in out["translation"].numpy()]))
"""


def _serve(saved, texts, cwd):
    """The SavedModel's translations in a process with TensorFlow and tensorflow-text
    alone."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_TENSORFLOW_TEXT_ONLY, str(saved), json.dumps(texts)],
        cwd=cwd, env=ENV_WITHOUT_KERASRNN, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def subword_run(tmp_path_factory):
    """`train` through the command line (in this process): a SentencePiece unigram
    source and a BPE target, greedy decoding, on a tiny generated corpus in files."""
    folder = tmp_path_factory.mktemp("subwords")
    files = _date_corpus(folder, {"train": (96, 1), "valid": (16, 2)})
    out = folder / "run"
    flags = dict(
        output_dir=out, source_tokenizer="sentencepiece", target_tokenizer="bpe",
        subword_vocab_size=60, lowercase="true", epochs=4, learning_rate=0.01, batch_size=16,
        embedding_dim=8, encoder_units=8, decoder_units=16, attention_units=8,
        bucket_boundaries="[]", beam_size=1, max_source_length=12, max_decode_length=10, verbose=0,
    )  # fmt: skip
    args = [a for k, v in flags.items() for a in ("--" + k.replace("_", "-"), str(v))]
    return out, files, _main("train", *_split_flags(files), *args)


def _translations(run, texts=TEXTS):
    return [row["translation"] for row in _main("translate", "--output-dir", str(run), *texts)]


def test_the_run_keeps_its_subword_models_and_its_preset_translates_alone(subword_run, tmp_path):
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import sentencepiece_vocabulary

    out, _, results = subword_run
    for side in ("source", "target"):
        with open(out / f"{side}_subwords.model", "rb") as f:
            pieces = sentencepiece_vocabulary(f.read()).tokens
        assert Vocabulary.load(out / f"{side}_vocab.txt").tokens == pieces
        assert results[f"{side}_vocabulary"] == len(pieces) <= 60
    assert results["history"]["loss"][-1] < results["history"]["loss"][0]
    translated = _translations(out)
    assert any(translated)
    # The run's preset holds the subword models: without the files written for the
    # user's tools, and with its config naming an option by its earlier name, the
    # run translates as before.
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("preset.json", "best.keras", "config.json"):
        shutil.copy(out / name, copy / name)
    with open(copy / "config.json") as f:
        config = json.load(f)
    config["wordpiece_vocab_size"] = config.pop("subword_vocab_size")
    with open(copy / "config.json", "w") as f:
        json.dump(config, f)
    assert _translations(copy) == translated


def test_saved_model_and_onnx_client_translate_raw_strings_as_the_recipe(subword_run, tmp_path):
    out, _, _ = subword_run
    recipe = _translations(out)
    exported = _main("export", "--output-dir", str(out), "--export-dir", str(tmp_path / "sm"))
    assert _serve(exported["saved_model"], TEXTS, tmp_path) == recipe

    folder = _main(
        "export", "--output-dir", str(out), "--format", "onnx",
        "--export-dir", str(tmp_path / "onnx"),
    )["onnx"]  # fmt: skip
    assert {"source_subwords.model", "target_subwords.model"} <= set(os.listdir(folder))
    client = run_client(folder, TEXTS, "translate_greedy")  # TensorFlow blocked
    assert [row["translation"] for row in client] == recipe


def test_lm_text_writes_the_targets_in_target_pieces(subword_run, tmp_path):
    """``translator lm-text``: the run's training and validation targets in its own
    target tokens, one sentence a line, every token one of its target vocabulary's (the
    text of a language model trained with ``--vocabulary-file target_vocab.txt``)."""
    from kerasrnn.data import Vocabulary
    from recipes import translator

    out, files, _ = subword_run
    written = _main("lm-text", "--output-dir", str(out), "--text-dir", str(tmp_path / "text"))
    target = translator.RECIPE.load({"output_dir": str(out)}).preprocessor.target
    vocabulary = Vocabulary.load(out / "target_vocab.txt")
    for split, count in (("train", 96), ("valid", 16)):
        assert written[split] == {"path": str(tmp_path / "text" / f"{split}.txt"), "lines": count}
        with open(written[split]["path"], encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(files[split][1], encoding="utf-8") as f:
            targets = f.read().splitlines()
        assert lines == [" ".join(tokens) for tokens in target.tokenize(targets)]
        tokens = {token for line in lines for token in line.split()}
        assert tokens <= set(vocabulary.tokens[4:])
        assert any(token.startswith("▁") for token in tokens)  # BPE pieces, not words


def test_wordpiece_sides_and_their_saved_model_without_kerasrnn(tmp_path):
    """``--source-tokenizer wordpiece --target-tokenizer wordpiece``: each side's learned
    pieces (at most `subword_vocab_size`, the special tokens first), a SavedModel whose
    graph tokenises and detokenises them with tensorflow-text alone, as the task does
    in Python; the runtimes' client has no WordPiece: refused in one line."""
    from kerasrnn.export import export_task
    from kerasrnn.seq2seq import Seq2SeqPreprocessor
    from kerasrnn.tasks import date_translation_task
    from recipes import common, translator

    config = common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            source_tokenizer="wordpiece", target_tokenizer="wordpiece", subword_vocab_size=60,
            embedding_dim=8, encoder_units=8, decoder_units=16, attention_units=8,
            beam_size=1, max_source_length=12, max_decode_length=8,
        ),
    )  # fmt: skip
    sides, _ = translator.build_sides(config, *date_translation_task(96, seed=1))
    for side in sides:
        tokens = side.vocabulary.tokens
        assert tokens[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
        assert len(tokens) <= 60 and any(t.startswith("##") for t in tokens)
        assert side.kind == "wordpiece"
    task = translator.build_model(config, Seq2SeqPreprocessor(*sides))
    options = translator.RECIPE.export_options(config)
    saved = export_task(task, str(tmp_path / "sm"), **options)
    expected = task.generate(TEXTS, options["strategy"])
    assert _serve(saved, TEXTS, tmp_path) == expected
    assert expected[1] == ""
    with pytest.raises(ValueError, match="WordPiece tokenizer"):
        export_task(task, str(tmp_path / "onnx"), "onnx", **options)
    assert not (tmp_path / "onnx").exists()
