"""The translator with a target-side language model (`--lm RUN --lm-weight W`, shallow
fusion): a language model trained by the language-model recipe with the session's tiny
translator's target vocabulary (``--vocabulary-file``) on its targets in target tokens
(what the translator's ``lm-text`` writes; tests/recipes/test_translator_subwords.py
runs that command); lambda = 0 translates as without it, a huge lambda as the LM alone
would write, and a language model of another vocabulary is refused in one line.

TensorFlow-specific (the recipes): not run on JAX."""

import types

import numpy as np
import pytest

from tests.conftest import main_json as _main

# Each test reads a module-scoped run or export that takes tens of seconds to make.
pytestmark = pytest.mark.large

SOURCES = ["1 may 2000", "march 3, 1999", "12/07/2014"]


@pytest.fixture(scope="module")
def runs(tiny_translator, tmp_path_factory):
    """``(translator run, language model run)``."""
    from kerasrnn.tasks import date_translation_task
    from recipes import common, language_model, translator

    folder = tmp_path_factory.mktemp("fusion")
    config = common.saved_config(translator.OPTIONS, str(tiny_translator), {})
    target = translator.RECIPE.load(config).preprocessor.target
    _, targets = date_translation_task(56, seed=5)
    lines = [" ".join(tokens) for tokens in target.tokenize(targets)]
    (folder / "train.txt").write_text("\n".join(lines[:48]) + "\n", encoding="utf-8")
    (folder / "valid.txt").write_text("\n".join(lines[48:]) + "\n", encoding="utf-8")
    lm_dir = str(folder / "lm")
    _main(
        language_model, "train",
        *("--train-file", str(folder / "train.txt"), "--valid-file", str(folder / "valid.txt")),
        *("--test-file", "", "--vocabulary-file", f"{tiny_translator}/target_vocab.txt"),
        *("--batching", "sentences", "--units", "8", "--num-layers", "1", "--epochs", "1"),
        *("--optimizer", "adam", "--learning-rate", "0.01", "--verbose", "0"),
        *("--output-dir", lm_dir),
    )  # fmt: skip
    return str(tiny_translator), lm_dir


def _translations(t_dir, *flags):
    from recipes import translator

    rows = _main(translator, "translate", "--output-dir", t_dir, "--beam-size", "1", *flags,
                 *SOURCES)  # fmt: skip
    return [row["translation"] for row in rows]


def test_weight_zero_translates_as_without_and_a_huge_weight_as_the_lm_alone(runs):
    from kerasrnn import decoding
    from kerasrnn.models import LanguageModel, Seq2Seq
    from kerasrnn.special_tokens import START_ID

    t_dir, lm_dir = runs
    plain = _translations(t_dir)
    assert _translations(t_dir, "--lm", lm_dir, "--lm-weight", "0") == plain
    # lambda = 1e4: the translator's log-probabilities no longer matter
    lm_only = _translations(t_dir, "--lm", lm_dir, "--lm-weight", "10000")
    translator_task = Seq2Seq.from_preset(t_dir, compile=False)
    lm = LanguageModel.from_preset(lm_dir, compile=False)
    assert lm.preprocessor.boundary_id == START_ID  # sentence batches: [START] first
    greedy = lm.generate(
        np.array([[START_ID]]), decoding.GreedySearch(), translator_task.max_target_length
    )
    tokens = np.asarray(greedy.tokens)[0, :1, : int(np.asarray(greedy.lengths)[0, 0])]
    written = translator_task.preprocessor.target.decode_graph(tokens).numpy()[0].decode()
    assert lm_only == [written] * len(SOURCES)
    assert lm_only != plain


def test_a_language_model_of_another_vocabulary_is_refused_in_one_line(runs, capsys):
    from kerasrnn.data import Vocabulary
    from recipes import common, translator
    from recipes.decoding import fusion

    t_dir, lm_dir = runs
    config = common.saved_config(translator.OPTIONS, t_dir, {})
    target = Vocabulary.load(f"{t_dir}/target_vocab.txt")

    def reading(tokens):  # a translator whose target side reads `tokens`
        return types.SimpleNamespace(
            preprocessor=types.SimpleNamespace(
                target=types.SimpleNamespace(vocabulary=Vocabulary(tokens))
            )
        )

    with pytest.raises(common.ConfigError, match=r"id \d+ is .*, the translator's '@'"):
        fusion(dict(config, lm=lm_dir), reading(target.tokens[:-1] + ["@"]))
    with pytest.raises(common.ConfigError, match=r"--vocabulary-file"):
        fusion(dict(config, lm=lm_dir), reading(target.tokens[4:-1]))
    # a translator run is no language model: one line, exit status 2
    capsys.readouterr()
    assert translator.main(["translate", "--output-dir", t_dir, "--lm", t_dir, "a"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "`lm`" in err and "not a LanguageModel" in err
