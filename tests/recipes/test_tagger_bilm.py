"""The tagger with a biLM's contextual features (`--contextual-lm RUN_DIR`): end to end
from the command line, frozen versus fine-tuned, the errors. (The biLM's word
normalisation is the tagger preprocessor's: tests/models/test_from_recipes.py.)"""

import json
import os

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from recipes import common, language_model, tagger  # noqa: E402
from tests.conftest import LM_SENTENCES, main_json  # noqa: E402

TINY = [
    "--embedding-dim",
    "8",
    "--char-dim",
    "4",
    "--char-units",
    "4",
    "--units",
    "8",
    "--batch-size",
    "4",
    "--verbose",
    "0",
    "--bucket-boundaries",
    "[]",
]
# tagged sentences in the words of the biLM's text (tests/conftest.py's LM_SENTENCES)
ROWS = (
    "The DET\ncat NOUN\nsat VERB\non ADP\nthe DET\nmat NOUN\n12 NUM\n\n"
    "the DET\nDog NOUN\nran VERB\nhome NOUN\n\n"
)


@pytest.fixture(scope="module")
def bilm_run(tmp_path_factory):
    """A tiny word biLM trained one epoch; its run folder."""
    folder = tmp_path_factory.mktemp("bilm") / "run"
    overrides = dict(
        bidirectional=True,
        units=8,
        num_layers=1,
        steps=5,
        batch_size=4,
        epochs=1,
        optimizer="adam",
        learning_rate=0.01,
        verbose=0,
        output_dir=str(folder),
    )
    config = common.load_config(language_model.DEFAULTS, overrides=overrides)
    language_model.train(config, {"train": LM_SENTENCES, "valid": LM_SENTENCES[:6], "test": None})
    return str(folder)


def _data(tmp_path):
    path = tmp_path / "pos.txt"
    path.write_text(ROWS * 4)
    return str(path)


@pytest.mark.large
def test_cli_train_evaluate_predict_export(tmp_path, bilm_run):
    import tensorflow as tf

    from kerasrnn.models import LanguageModel, SequenceTagger

    data = _data(tmp_path)
    run = ["--output-dir", str(tmp_path / "run")]
    trained = main_json(
        tagger,
        "train",
        "--train",
        data,
        "--valid",
        data,
        "--epochs",
        "1",
        "--contextual-lm",
        bilm_run,
        *TINY,
        *run,
    )
    assert trained["valid"]["tokens"] == 44
    task = SequenceTagger.from_preset(tmp_path / "run")
    bilm = LanguageModel.from_preset(bilm_run, compile=False)
    # the biLM's vocabulary in the preprocessor, its weights in the tagger's best.keras
    assert task.preprocessor.lm_words.tokens == bilm.preprocessor.vocabulary.tokens
    assert "lm_ids" in task.preprocessor.encode([["the", "cat"]])
    features = task.backbone.get_layer("bilm")
    pairs = [(features.embedding, bilm.backbone.token_embedding)]
    pairs += list(zip(features.forward_layers, bilm.backbone.rnn_layers("forward")))
    pairs += list(zip(features.backward_layers, bilm.backbone.rnn_layers("backward")))
    for ours, lms in pairs:  # frozen by default: as the biLM run trained them
        for mine, theirs in zip(ours.get_weights(), lms.get_weights(), strict=True):
            np.testing.assert_array_equal(mine, theirs)
    assert not features.trainable_weights
    mix = task.backbone.get_layer("bilm_mix")  # learned either way: moved from (0, 1)
    assert np.abs(np.asarray(mix.scalar_weights)).max() > 0 and float(mix.gamma) != 1.0

    evaluated = main_json(tagger, "evaluate", *run, "--test", data)
    assert evaluated["accuracy"] == pytest.approx(trained["valid"]["accuracy"])

    predicted = main_json(tagger, "predict", *run, "The cat sat on 3 mats", "")
    assert [len(p["tags"]) for p in predicted] == [6, 0]

    saved = main_json(tagger, "export", *run, "--export-dir", str(tmp_path / "saved"))
    served = tf.saved_model.load(saved["saved_model"]).signatures["tag_text"](
        text=tf.constant(["The cat sat on 3 mats"])
    )
    assert [t.decode() for t in served["tags"].numpy()[0]] == predicted[0]["tags"]
    np.testing.assert_allclose(
        served["probability"].numpy()[0], predicted[0]["probabilities"], rtol=1e-5
    )


@pytest.mark.large
def test_the_biLM_moves_when_trainable(tmp_path, bilm_run):
    """--contextual-lm-trainable: the biLM's weights train with the tagger (frozen, the
    default, they stay: test_cli_train_evaluate_predict_export)."""
    config = common.load_config(
        tagger.DEFAULTS,
        overrides={
            "train": _data(tmp_path),
            "output_dir": str(tmp_path / "run"),
            "embedding_dim": 8,
            "char_dim": 0,
            "units": 8,
            "batch_size": 4,
            "verbose": 0,
            "contextual_lm": bilm_run,
            "contextual_lm_trainable": True,
            "learning_rate": 0.05,
        },
    )
    recipe = tagger.RECIPE
    os.makedirs(config["output_dir"], exist_ok=True)
    prepared = recipe.prepare(config, recipe.load_splits(config))
    model = recipe.build(config, prepared)
    layers = model.backbone  # the biLM and its mix are the backbone's layers
    assert len(layers.get_layer("bilm").trainable_weights) > 0
    before = {
        name: [w.numpy().copy() for w in layers.get_layer(name).weights]
        for name in ("bilm", "bilm_mix")
    }
    model.fit(prepared.train, epochs=1, steps_per_epoch=2, shuffle=False, verbose=0)
    for name, weights in before.items():
        moved = max(
            float(np.abs(w.numpy() - b).max())
            for w, b in zip(layers.get_layer(name).weights, weights)
        )
        assert moved > 0, name


def test_contextual_lm_errors_are_one_line(tmp_path, tiny_tagger, tiny_language_model, capsys):
    data = _data(tmp_path)
    cases = {
        str(tmp_path / "missing"): "`contextual_lm`: no preset folder at",
        str(tiny_tagger): "holds a SequenceTagger, not a LanguageModel",
        str(tiny_language_model): "is not bidirectional; train one with --bidirectional true",
    }
    for run_dir, message in cases.items():
        code = tagger.main(
            [
                "train",
                "--train",
                data,
                "--contextual-lm",
                run_dir,
                *TINY,
                "--output-dir",
                str(tmp_path / "run"),
            ]
        )
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not os.path.exists(tmp_path / "run" / "config.json")  # refused before training
    assert json.loads((tiny_tagger / "results.json").read_text())  # the shared runs untouched
