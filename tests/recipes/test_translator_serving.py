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


def test_saved_model_blank_long_and_n_best_without_kerasrnn(run, tmp_path):
    import keras

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
    trained = translator.Translator.from_run(common.saved_config(translator.OPTIONS, str(run), {}))
    ids = keras.utils.pad_sequences(trained.source.encode(TEXTS[3:]), padding="post")
    import kerasrnn.decoding

    result = trained.model.generate(ids, kerasrnn.decoding.BeamSearch(K), max_length=8)
    np.testing.assert_allclose(scores[3:], np.asarray(result.scores), atol=1e-5)
    # translate (beam_size 2) gives the best of its own, narrower search.
    assert (
        served["translation"][4]
        == _main(translator, "translate", "--output-dir", str(run), TEXTS[4])[0]["translation"]
    )


def _forced_unk_translator(replace_unk):
    """An untrained translator whose readout always prefers [UNK]."""
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.text import TextSide
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
    model = translator.build_model(config, len(source.vocabulary), len(target.vocabulary))
    model.readout.kernel.assign(np.zeros(model.readout.kernel.shape, "float32"))
    model.readout.bias.assign(np.eye(len(target.vocabulary), dtype="float32")[1] * 10)
    return translator.Translator(model, source, target, config)


def test_replace_unk_copies_the_most_attended_source_token(tmp_path):
    import tensorflow as tf

    plain = _forced_unk_translator(False)
    assert plain.translate(["Zwiesel", ""]) == ["[UNK] [UNK] [UNK] [UNK]", ""]
    copying = _forced_unk_translator(True)
    # One source token: all attention is on it, every [UNK] becomes it (unknown to
    # the source vocabulary too: the text's own token is copied).
    assert copying.translate(["Zwiesel", ""]) == ["Zwiesel Zwiesel Zwiesel Zwiesel", ""]
    # Several: at each step, the source token with the highest weight in the
    # alignments greedy decoding returns (a NumPy argmax here).
    text = "ein Haus in Zwiesel"
    ids = np.array(copying.source.encode([text]), "int32")
    weights = np.asarray(copying.model.generate(ids, "greedy", max_length=4).alignments)
    expected = " ".join(text.split()[i] for i in weights[0, 0].argmax(-1))
    assert copying.translate([text]) == [expected]
    # The same in the SavedModel.
    path = copying.export(str(tmp_path / "sm"))
    served = (
        tf.saved_model.load(path)
        .signatures["translate"](text=tf.constant([text, "Zwiesel", " "]))["translation"]
        .numpy()
    )
    assert [t.decode() for t in served] == [expected, "Zwiesel Zwiesel Zwiesel Zwiesel", ""]


def test_readout_dtype_option_reaches_generate(monkeypatch):
    from recipes import translator

    exact = _forced_unk_translator(False)
    fast = translator.Translator(
        exact.model, exact.source, exact.target, dict(exact.config, readout_dtype="bfloat16")
    )
    seen, generate = [], exact.model.generate

    def recording(*args, **kwargs):
        seen.append(kwargs["readout_dtype"])
        return generate(*args, **kwargs)

    monkeypatch.setattr(exact.model, "generate", recording)
    # the bias prefers [UNK] by 10: rounding the readout cannot change the pick
    assert fast.translate(["ein Haus"]) == exact.translate(["ein Haus"]) == ["[UNK]" + " [UNK]" * 3]
    assert seen == ["bfloat16", "float32"]
