"""The translator with a target-side language model (`--lm RUN --lm-weight W`): the LM
trained by the language model recipe on `recipes.translator_lm`'s text with the
translator's target vocabulary; lambda = 0 translates as without it, a huge lambda as
the LM alone would write.

TensorFlow-specific (the recipes): not run on JAX."""

import json

import numpy as np
import pytest

from tests.conftest import main_json as _main
from tests.recipes.test_translator import _date_corpus


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from recipes import language_model, translator, translator_lm

    folder = tmp_path_factory.mktemp("fusion")
    files = _date_corpus(folder, {"train": (64, 1), "valid": (8, 2)})
    t_dir, lm_dir, text_dir = (str(folder / name) for name in ("t", "lm", "text"))
    _main(
        translator,
        "train",
        *(a for split in files for a in (f"--{split}", json.dumps(files[split]))),
        *("--target-tokenizer", "char", "--embedding-dim", "5", "--encoder-units", "6"),
        *("--decoder-units", "7", "--attention-units", "4", "--epochs", "1", "--heatmaps", "0"),
        *("--beam-size", "1", "--max-decode-length", "12", "--verbose", "0"),
        *("--output-dir", t_dir),
    )
    text = _main(translator_lm, "--output-dir", t_dir, "--text-dir", text_dir)
    _main(
        language_model,
        "train",
        *("--train-file", text["train"]["path"], "--valid-file", text["valid"]["path"]),
        *("--test-file", "", "--vocabulary-file", f"{t_dir}/target_vocab.txt"),
        *("--batching", "sentences", "--units", "8", "--num-layers", "1", "--epochs", "1"),
        *("--optimizer", "adam", "--learning-rate", "0.01", "--verbose", "0"),
        *("--output-dir", lm_dir),
    )
    return t_dir, lm_dir, text


SOURCES = ["1 may 2000", "march 3, 1999", "12/07/2014"]


def _translations(t_dir, *flags):
    from recipes import translator

    rows = _main(translator, "translate", "--output-dir", t_dir, *flags, *SOURCES)
    return [row["translation"] for row in rows]


def test_the_lm_text_is_the_targets_in_target_tokens(runs):
    _, _, text = runs
    with open(text["train"]["path"], encoding="utf-8") as f:
        first = f.readline().split()
    assert text["train"]["lines"] == 64 and text["valid"]["lines"] == 8
    assert len(first) == 10 and first[4] == "-"  # 'YYYY-MM-DD', one character a token


def test_weight_zero_translates_as_without_and_a_huge_weight_as_the_lm_alone(runs):
    from kerasrnn import decoding
    from recipes import common, language_model

    t_dir, lm_dir, _ = runs
    plain = _translations(t_dir)
    assert _translations(t_dir, "--lm", lm_dir, "--lm-weight", "0") == plain
    # lambda = 1e4: the translator's log-probabilities no longer matter
    lm_only = _translations(t_dir, "--lm", lm_dir, "--lm-weight", "10000")
    trained = language_model.LanguageModel.from_run(
        common.saved_config(language_model.OPTIONS, lm_dir)
    )
    greedy = trained.task.generate(np.array([[2]]), decoding.GreedySearch(), max_length=12)
    tokens = np.asarray(greedy.tokens)[0, 0, : int(np.asarray(greedy.lengths)[0, 0])]
    words = [trained.vocabulary.tokens[i] for i in tokens if i > 3]
    assert lm_only == ["".join(words).replace("▁", " ")] * len(SOURCES)


def test_a_language_model_of_another_vocabulary_is_refused_in_one_line(runs):
    from kerasrnn.data import Vocabulary
    from recipes import common, translator_lm

    t_dir, lm_dir, _ = runs
    target = Vocabulary.load(f"{t_dir}/target_vocab.txt")
    other = Vocabulary(target.tokens[:-1] + ["@"])
    with pytest.raises(common.ConfigError, match=r"id \d+ is .* --vocabulary-file"):
        translator_lm.load_language_model(lm_dir, other)
    with pytest.raises(common.ConfigError, match="not a trained language model run"):
        translator_lm.load_language_model(t_dir, target)
