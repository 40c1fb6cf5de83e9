"""The translator recipe with SentencePiece subwords (``--source-tokenizer
sentencepiece --target-tokenizer bpe``): the learned models are saved with the run, the
SavedModel takes and gives raw strings with no kerasrnn present, and the ONNX client
tokenises with the same model as the recipe."""

import json
import os
import subprocess
import sys

import pytest

from tests.export.test_recipe_runtimes import run_client
from tests.recipes.test_translator import ENV, _date_corpus, _main, _split_flags

TEXTS = ["12 march 2014", "", "zzzz qqqq unknownword", "THE 3RD OF MAY 1999 !!"]


@pytest.fixture(scope="module")
def subword_run(tmp_path_factory):
    """`train` through the command line (in this process): a SentencePiece unigram
    source and a BPE target, greedy decoding, on a tiny generated corpus."""
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
    return out, _main("train", *_split_flags(files), *args)


def test_the_run_keeps_its_subword_models(subword_run):
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import sentencepiece_vocabulary

    out, results = subword_run
    for side in ("source", "target"):
        with open(out / f"{side}_subwords.model", "rb") as f:
            pieces = sentencepiece_vocabulary(f.read()).tokens
        assert Vocabulary.load(out / f"{side}_vocab.txt").tokens == pieces
        assert results[f"{side}_vocabulary"] == len(pieces) <= 60
    assert results["history"]["loss"][1] < results["history"]["loss"][0]
    # a run whose config still names the option by its earlier name loads as before
    translated = _main("translate", "--output-dir", str(out), *TEXTS)
    with open(out / "config.json") as f:
        config = json.load(f)
    config["wordpiece_vocab_size"] = config.pop("subword_vocab_size")
    with open(out / "config.json", "w") as f:
        json.dump(config, f)
    assert _main("translate", "--output-dir", str(out), *TEXTS) == translated


def test_a_missing_subword_model_is_named(subword_run, tmp_path):
    import shutil

    from recipes import translator

    out, _ = subword_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    os.remove(copy / "target_subwords.model")
    assert translator.main(["translate", "--output-dir", str(copy), "a"]) == 2


LOAD_WITH_TENSORFLOW_TEXT_ONLY = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece kernels
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["translate"](text=tf.constant(json.loads(sys.argv[2])))
assert not {"kerasrnn", "recipes", "keras_hub"} & set(sys.modules)
print(json.dumps([t.decode("utf-8") for t in out["translation"].numpy()]))
"""


def test_saved_model_and_onnx_client_translate_raw_strings_as_the_recipe(subword_run, tmp_path):
    out, _ = subword_run
    recipe = [row["translation"] for row in _main("translate", "--output-dir", str(out), *TEXTS)]
    assert any(recipe)
    exported = _main("export", "--output-dir", str(out), "--export-dir", str(tmp_path / "sm"))[
        "saved_model"
    ]
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_TENSORFLOW_TEXT_ONLY, exported, json.dumps(TEXTS)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == recipe

    folder = _main(
        "export", "--output-dir", str(out), "--format", "onnx",
        "--export-dir", str(tmp_path / "onnx"),
    )["onnx"]  # fmt: skip
    assert {"source_subwords.model", "target_subwords.model"} <= set(os.listdir(folder))
    client = run_client(folder, TEXTS, "translate_greedy")  # TensorFlow blocked
    assert [row["translation"] for row in client] == recipe


def test_diverse_beam_search_through_the_recipe(subword_run):
    """``translate --beam-groups 2`` is the library's `DiverseBeamSearch` with the run's
    length normalisation; a beam that the groups cannot split is refused."""
    from kerasrnn import decoding
    from kerasrnn.export import TextTranslator
    from recipes import common, translator

    out, _ = subword_run
    flags = ["--beam-size", "4", "--beam-groups", "2", "--beam-diversity", "2.0"]
    rows = _main("translate", "--output-dir", str(out), *flags, "--n-best", "4", *TEXTS)
    trained = translator.Translator.from_run(common.saved_config(translator.DEFAULTS, str(out)))
    search = decoding.DiverseBeamSearch(4, 2, 2.0, n_best=4, scorer=decoding.Scorer("average"))
    expected = TextTranslator.translate(trained, TEXTS, search, return_scores=True)
    got = [row["hypotheses"] for row in rows]
    assert [[h["translation"] for h in row] for row in got] == [
        [h["translation"] for h in row] for row in expected
    ]
    assert [h["score"] for row in got for h in row] == pytest.approx(
        [h["score"] for row in expected for h in row], abs=1e-6
    )
    assert all(len(row["hypotheses"]) == 4 for row in rows)
    assert translator.main(["translate", "--output-dir", str(out), "--beam-size", "3",
                            "--beam-groups", "2", "a"]) == 2  # fmt: skip
