"""The translator's serving behaviours: blank and over-long inputs, n-best with scores
(`translate --n-best`, the ``translate_n_best`` signature) and `replace_unk`, through
the exported SavedModel loaded in a process that cannot import kerasrnn.

TensorFlow-specific (tf.strings, SavedModel): not run on JAX.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import TINY_TRANSLATOR_MAX_SOURCE, TINY_TRANSLATOR_N_BEST
from tests.conftest import main_json as _main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
ENV["TF_CPP_MIN_LOG_LEVEL"] = "3"
LONG = ("12 march 2014 " * 800)[:10_000]  # 10,000 characters, 2,143 words
MAX_SOURCE = TINY_TRANSLATOR_MAX_SOURCE
CUT = " ".join(LONG.split()[:MAX_SOURCE])  # what the model may read of it
TEXTS = ["", "   \t ", LONG, CUT, "3rd of may 1999", "zzzz qqqq"]
K = TINY_TRANSLATOR_N_BEST

SERVE = r"""
import json, sys
sys.modules["kerasrnn"] = None  # importing kerasrnn (or recipes) now fails
sys.modules["recipes"] = None
import tensorflow as tf
texts = tf.constant(json.loads(sys.argv[2]))
model = tf.saved_model.load(sys.argv[1])
one = model.signatures["translate"](text=texts)
many = model.signatures["translate_n_best"](text=texts)
print(json.dumps({
    "translation": [t.decode() for t in one["translation"].numpy()],
    "translations": [[t.decode() for t in row] for row in many["translations"].numpy()],
    "scores": many["scores"].numpy().tolist(),
}))
"""


@pytest.fixture(scope="module")
def run(tiny_translator):
    """The session's tiny translator run (tests/conftest.py)."""
    return tiny_translator


@pytest.mark.large
def test_saved_model_blank_long_and_n_best_without_kerasrnn(run, tmp_path):
    from kerasrnn import decoding
    from recipes import common, translator

    exported = _main(
        translator, "export", "--output-dir", str(run), "--export-dir", str(tmp_path / "sm")
    )["saved_model"]
    done = subprocess.run(
        [sys.executable, "-c", SERVE, exported, json.dumps(TEXTS)],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    served = json.loads(done.stdout.strip().splitlines()[-1])

    # Blank inputs: "" (score 0), not the model's answer for an all-[PAD] source.
    assert served["translation"][:2] == ["", ""]
    assert served["translations"][:2] == [[""] * K] * 2
    assert served["scores"][:2] == [[0.0] * K] * 2
    # The 10,000-character input is read as its first max_source_length tokens.
    assert served["translations"][2] == served["translations"][3]
    np.testing.assert_allclose(served["scores"][2], served["scores"][3], atol=1e-6)
    assert served["translation"][2] == served["translation"][3]

    # translate_n_best: K columns, best first, the scores of the in-process search.
    scores = np.array(served["scores"])
    assert scores.shape == (len(TEXTS), K) and np.isfinite(scores).all()
    assert (np.diff(scores[2:], axis=1) <= 1e-6).all()
    cli = _main(translator, "translate", "--output-dir", str(run), "--n-best", str(K), *TEXTS[2:])
    assert [len(row["hypotheses"]) for row in cli] == [K] * 4
    assert [[h["translation"] for h in row["hypotheses"]] for row in cli] == served["translations"][
        2:
    ]
    np.testing.assert_allclose(
        [[h["score"] for h in row["hypotheses"]] for row in cli], scores[2:], atol=1e-5
    )
    # ... which are Seq2Seq.generate's beam-search scores on the encoded sources.
    config = common.saved_config(translator.OPTIONS, str(run), {})
    task = translator.RECIPE.load(config)
    ids, _, _ = task.preprocessor.encode(TEXTS[3:], task.max_source_length)
    scorer = decoding.Scorer(config["length_normalization"])
    result = task.generate(ids.numpy(), decoding.BeamSearch(K, n_best=K, scorer=scorer))
    np.testing.assert_allclose(scores[3:], np.asarray(result.scores), atol=1e-5)
    # translate (beam_size 2) gives the best of its own, narrower search.
    assert (
        served["translation"][4]
        == _main(translator, "translate", "--output-dir", str(run), TEXTS[4])[0]["translation"]
    )


def _forced_unk_translator(replace_unk):
    """An untrained translator whose readout always prefers [UNK], and its config."""
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.text import TextSide
    from kerasrnn.seq2seq import Seq2SeqPreprocessor
    from recipes import common, translator

    config = common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            embedding_dim=5,
            encoder_units=6,
            decoder_units=7,
            attention_units=4,
            dropout=0.0,
            beam_size=1,
            max_decode_length=4,
            max_source_length=5,
            replace_unk=replace_unk,
        ),
    )
    source = TextSide(Vocabulary([*Vocabulary([]).tokens, "ein", "Haus"]))
    target = TextSide(Vocabulary([*Vocabulary([]).tokens, "a", "house"]))
    preprocessor = Seq2SeqPreprocessor(source, target, replace_unk=config["replace_unk"])
    task = translator.build_model(config, preprocessor)
    # weights of unit scale, so that the attention is decisive (a fresh model's is
    # nearly uniform, its argmax a matter of rounding)
    rng = np.random.default_rng(0)
    for weight in task.backbone.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    readout = task.backbone.readout
    readout.kernel.assign(np.zeros(readout.kernel.shape, "float32"))
    readout.bias.assign(np.eye(len(target.vocabulary), dtype="float32")[1] * 10)
    return task, config


def _translate(task, config, texts):
    from recipes import translator
    from recipes.decoding import generate_settings

    settings = generate_settings(config, task)
    return task.generate(texts, translator.search_strategy(config), **settings)


@pytest.mark.large
def test_replace_unk_copies_the_most_attended_source_token(tmp_path):
    import tensorflow as tf

    from kerasrnn.export import export_task
    from recipes import translator

    plain, config = _forced_unk_translator(False)
    assert _translate(plain, config, ["Zwiesel", ""]) == ["[UNK] [UNK] [UNK] [UNK]", ""]
    copying, config = _forced_unk_translator(True)
    # One source token: all attention is on it, every [UNK] becomes it (unknown to
    # the source vocabulary too: the text's own token is copied).
    assert _translate(copying, config, ["Zwiesel", ""]) == ["Zwiesel Zwiesel Zwiesel Zwiesel", ""]
    # Several: at each step, the source token with the highest weight in the
    # alignments greedy decoding returns (a NumPy argmax here).
    text = "in Zwiesel Haus ein"
    ids = np.array(copying.preprocessor.source.encode([text]), "int32")
    weights = np.asarray(copying.generate(ids, "greedy", max_length=4).alignments)
    expected = " ".join(text.split()[i] for i in weights[0, 0].argmax(-1))
    assert len(set(expected.split())) > 1  # the test can tell the positions apart
    assert _translate(copying, config, [text]) == [expected]
    # The same in the SavedModel the recipe exports.
    path = export_task(copying, str(tmp_path / "sm"), **translator.RECIPE.export_options(config))
    served = (
        tf.saved_model.load(path)
        .signatures["translate"](text=tf.constant([text, "Zwiesel", " "]))["translation"]
        .numpy()
    )
    assert [t.decode() for t in served] == [expected, "Zwiesel Zwiesel Zwiesel Zwiesel", ""]


@pytest.mark.large
def test_readout_dtype_option_reaches_generate(run, monkeypatch):
    """``--readout-dtype bfloat16`` reaches `Seq2Seq.generate` (float32 by default)."""
    from kerasrnn.seq2seq import Seq2Seq
    from recipes import common, translator
    from recipes.decoding import generate_settings

    seen, generate = [], Seq2Seq.generate

    def recording(self, *args, **kwargs):
        seen.append(kwargs.get("readout_dtype"))
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(Seq2Seq, "generate", recording)
    texts = ["3rd of may 1999", "12 march 2014"]
    flags = ["--output-dir", str(run), "--readout-dtype", "bfloat16"]
    fast = _main(translator, "translate", *flags, *texts)
    assert seen == ["bfloat16"]
    assert [r["text"] for r in fast] == texts
    assert all(isinstance(r["translation"], str) for r in fast)
    task, config = _forced_unk_translator(False)
    settings = generate_settings(common.load_config(translator.DEFAULTS), task)
    assert settings == {"max_length": 80, "readout_dtype": "float32", "fusion": None}
