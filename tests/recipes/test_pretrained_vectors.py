"""recipes.vectors: pretrained vectors in the tagger, pair classifier and translator,
and the language model's export-embeddings feeding the tagger's --embeddings."""

import os

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras  # noqa: E402

from kerasrnn.data import Vocabulary  # noqa: E402
from kerasrnn.data.vectors import write_vectors  # noqa: E402
from recipes import common, language_model, pair_classifier, tagger, translator  # noqa: E402
from recipes.vectors import find_layer  # noqa: E402
from tests.conftest import main_json  # noqa: E402

# in the words of the shared LM's text (tests/conftest.py's LM_SENTENCES: the cat sat on
# mat dog ran home a), all but "home"
SENTENCES = [["The", "cat", "sat", "on", "a", "mat"], ["A", "dog", "ran", "on", "the", "mat"]] * 8
TAGS = [["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]] * 16


def _rows(model, name):
    return keras.ops.convert_to_numpy(find_layer(model, name).embeddings)


def _prepared(module, tmp_path, splits, **overrides):
    """A recipe's config (the defaults with `overrides`, its run folder under `tmp_path`),
    its prepared data and its built (untrained) model: what the run reads of the vectors."""
    config = common.load_config(
        module.DEFAULTS, overrides=dict(output_dir=str(tmp_path / "run"), **overrides)
    )
    os.makedirs(config["output_dir"])
    prepared = module.RECIPE.prepare(config, splits)
    return config, prepared, module.RECIPE.build(config, prepared)


@pytest.fixture(scope="module")
def lm_vectors(tiny_language_model, tmp_path_factory):
    """The shared LM run's embedding, exported by the command line (outside the run)."""
    from kerasrnn.models import LanguageModel

    out = str(tmp_path_factory.mktemp("lm_vectors") / "lm.vec")
    written = main_json(language_model, "export-embeddings", str(tiny_language_model), out)
    trained = LanguageModel.from_preset(tiny_language_model, compile=False)
    vocabulary = trained.preprocessor.vocabulary
    assert written == {"vectors": out, "words": len(vocabulary) - 4, "dim": 8}
    return out, vocabulary, _rows(trained, "embedding")


def test_lm_vectors_start_a_frozen_tagger(tmp_path, lm_vectors, capsys):
    path, lm_vocab, lm_rows = lm_vectors
    assert open(path).readline() == f"{len(lm_vocab) - 4} 8\n"
    config = common.load_config(
        tagger.DEFAULTS,
        overrides=dict(
            output_dir=str(tmp_path / "tagger"),
            embeddings=path,
            freeze_embeddings=True,
            embeddings_extend=1,
            units=8,
            char_dim=0,
            epochs=1,
            verbose=0,
            bucket_boundaries=[],
        ),
    )
    results = tagger.train(config, {"train": (SENTENCES, TAGS), "valid": None, "test": None})
    # the tagger's lower-cased words: the cat sat on a mat dog ran, all in the LM; one
    # added from the file (its most frequent word the data lacks: home)
    words = tagger.RECIPE.load(config).preprocessor.words
    assert (
        words.tokens[4:-1]
        == Vocabulary.build([[w.lower() for w in s] for s in SENTENCES]).tokens[4:]
    )
    assert words.tokens[-1] == "home"
    coverage = results["pretrained_vectors"]["embeddings"]
    assert (coverage["vocabulary"], coverage["found"], coverage["found_lowercase"]) == (8, 8, 0)
    assert coverage["added"] == 1 and coverage["dim"] == 8 and coverage["coverage"] == 1.0
    assert "8 of 8 words have a 8-d vector" in capsys.readouterr().err
    # frozen: after fit the rows are still the LM's (written to 6 digits in the file)
    rows = _rows(tagger.RECIPE.load(config), "word_embedding")
    for token in words.tokens[4:]:
        np.testing.assert_allclose(
            rows[words.token_to_id(token)], lm_rows[lm_vocab.token_to_id(token)], atol=1e-5
        )
    np.testing.assert_array_equal(rows[0], 0.0)


def test_pair_classifier_starts_from_the_files_rows(tmp_path):
    a = ["a man plays a guitar", "a woman cuts an onion"] * 4
    b = ["a person plays music", "nobody cuts anything"] * 4
    splits = {"train": (a, b, [4.5, 1.5] * 4, ["ENTAILMENT", "NEUTRAL"] * 4)}
    vec = write_vectors(tmp_path / "v.vec", ["A", "man", "guitar"], np.eye(3, 5) + 1)
    config, prepared, model = _prepared(pair_classifier, tmp_path, splits, embeddings=vec, units=4)
    vocab = Vocabulary.load(os.path.join(config["output_dir"], "vocab.txt"))
    rows = _rows(model, "embedding")
    assert rows.shape == (len(vocab), 5)  # the file's width, not embedding_dim
    for i, token in enumerate(("A", "man", "guitar")):
        np.testing.assert_array_equal(rows[vocab.token_to_id(token.lower())], np.eye(3, 5)[i] + 1)
    coverage = prepared.info["pretrained_vectors"]["embeddings"]
    assert (coverage["found"], coverage["found_lowercase"]) == (2, 1)
    assert find_layer(model, "embedding").trainable  # fine-tuned by default


def test_translator_source_and_target_vectors(tmp_path):
    sources, targets = ["ein Hund", "eine Katze"] * 4, ["a dog", "a cat"] * 4
    src = write_vectors(tmp_path / "de.vec", ["Hund", "Katze", "Maus"], np.ones((3, 6)))
    tgt = write_vectors(tmp_path / "en.vec", ["dog", "cat"], 2 * np.ones((2, 6)))
    config, prepared, model = _prepared(
        translator,
        tmp_path,
        {"train": (sources, targets)},
        source_embeddings=src,
        target_embeddings=tgt,
        freeze_embeddings=True,
        embeddings_extend=1,
        encoder_units=4,
        decoder_units=4,
        attention_units=4,
    )
    recipe = translator.RECIPE
    source_vocab = Vocabulary.load(os.path.join(config["output_dir"], "source_vocab.txt"))
    assert "Maus" in source_vocab  # the source side extended from its file
    for name, vocab_file, token, value in (
        ("source_embedding", "source_vocab.txt", "Katze", 1.0),
        ("target_embedding", "target_vocab.txt", "cat", 2.0),
    ):
        vocab = Vocabulary.load(os.path.join(config["output_dir"], vocab_file))
        np.testing.assert_array_equal(_rows(model, name)[vocab.token_to_id(token)], value)
        assert not find_layer(model, name).trainable
    info = prepared.info["pretrained_vectors"]
    assert info["source_embedding"]["added"] == 1 and info["target_embedding"]["found"] == 2
    narrow = write_vectors(tmp_path / "narrow.vec", ["dog"], np.ones((1, 3)))
    with pytest.raises(common.ConfigError, match=r"en.vec is 6-d|narrow.vec is 3-d"):
        recipe.build(
            dict(config, target_embeddings=narrow),
            recipe.prepare(dict(config, target_embeddings=narrow), {"train": (sources, targets)}),
        )


def test_embeddings_flags_and_bad_files_on_the_command_line(tmp_path, capsys):
    bad = tmp_path / "bad.vec"
    bad.write_text("2 3\ncat 1 2 3\ndog 1 2\n")
    data = tmp_path / "train.txt"
    data.write_text("The DET\ncat NOUN\n\n")
    code = tagger.main(
        [
            "train",
            "--train",
            str(data),
            "--embeddings",
            str(bad),
            "--no-freeze-embeddings",
            "--output-dir",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].endswith(
        "bad.vec, line 3: expected 3 numbers after the word (as the header "
        "line has), got 2; fix or drop the line"
    )


def test_a_frozen_embedding_stays_frozen_in_the_preset(tmp_path):
    from kerasrnn.models import SequenceTagger

    vec = write_vectors(tmp_path / "v.vec", ["cat", "dog"], np.ones((2, 4)))
    splits = {"train": (SENTENCES, TAGS), "valid": None}
    _, _, model = _prepared(
        tagger, tmp_path, splits, embeddings=vec, freeze_embeddings=True, char_dim=0, units=4
    )
    assert not find_layer(model, "word_embedding").trainable
    loaded = SequenceTagger.from_preset(model.save_to_preset(tmp_path / "preset"))
    assert not find_layer(loaded, "word_embedding").trainable
