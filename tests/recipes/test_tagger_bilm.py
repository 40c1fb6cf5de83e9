"""The tagger with a biLM's contextual features (`--contextual-lm RUN_DIR`): end to end
from the command line, frozen versus fine-tuned, the word normalisation, the errors."""

import json

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from test_language_model import tiny_config  # noqa: E402

from recipes import common, language_model, tagger  # noqa: E402

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
# tagged sentences in the words of the biLM's corpus (test_language_model.write_corpus)
ROWS = (
    "The DET\ncat NOUN\nsat VERB\non ADP\na DET\nmat NOUN\n12 NUM\n\n"
    "the DET\nDog NOUN\nran VERB\n\n"
)


@pytest.fixture(scope="module")
def bilm_run(tmp_path_factory):
    """A tiny trained biLM (1 epoch); its run directory."""
    folder = tmp_path_factory.mktemp("bilm")
    config = tiny_config(
        folder, bidirectional=True, epochs=1, optimizer="adam", learning_rate=0.01, units=8
    )
    language_model.train(config)
    return config["output_dir"]


@pytest.fixture(scope="module")
def forward_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("forward_lm")
    config = tiny_config(folder, epochs=1, units=8)
    language_model.train(config)
    return config["output_dir"]


def _data(tmp_path):
    path = tmp_path / "pos.txt"
    path.write_text(ROWS * 4)
    return str(path)


def test_lm_normalisation_lowercases_and_writes_numbers_as_n():
    words = [["The", "1,000", "3.5", "12:30", "1/2", "-4", ".5", "A1", "2nd", "Éte", ""]]
    assert tagger.lm_sentences(words) == [
        ["the", "N", "N", "N", "N", "N", "N", "a1", "2nd", "éte", ""]
    ]


def test_cli_train_evaluate_predict_export(tmp_path, bilm_run, capsys):
    import tensorflow as tf

    data = _data(tmp_path)
    run = ["--output-dir", str(tmp_path / "run")]
    code = tagger.main(
        [
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
        ]
    )
    trained = json.loads(capsys.readouterr().out)
    assert code == 0 and trained["valid"]["tokens"] == 40
    assert (tmp_path / "run" / "lm_vocab.txt").exists()

    assert tagger.main(["evaluate", *run, "--test", data]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["accuracy"] == pytest.approx(trained["valid"]["accuracy"])

    assert tagger.main(["predict", *run, "The cat sat on 3 mats", ""]) == 0
    predicted = json.loads(capsys.readouterr().out)
    assert [len(p["tags"]) for p in predicted] == [6, 0]

    assert tagger.main(["export", *run, "--export-dir", str(tmp_path / "saved")]) == 0
    capsys.readouterr()
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["tag_text"](
        text=tf.constant(["The cat sat on 3 mats"])
    )
    assert [t.decode() for t in served["tags"].numpy()[0]] == predicted[0]["tags"]
    np.testing.assert_allclose(
        served["probability"].numpy()[0], predicted[0]["probabilities"], rtol=1e-5
    )


def test_the_biLM_moves_only_when_trainable(tmp_path, bilm_run):
    data = _data(tmp_path)
    changed = {}
    for trainable in (False, True):
        config = common.load_config(
            tagger.DEFAULTS,
            overrides={
                "train": data,
                "output_dir": str(tmp_path / f"run_{trainable}"),
                "epochs": 1,
                "embedding_dim": 8,
                "char_dim": 0,
                "units": 8,
                "batch_size": 4,
                "verbose": 0,
                "contextual_lm": bilm_run,
                "contextual_lm_trainable": trainable,
                "learning_rate": 0.05,
            },
        )
        recipe = tagger.RECIPE
        splits = recipe.load_splits(config)
        import os

        os.makedirs(config["output_dir"], exist_ok=True)
        prepared = recipe.prepare(config, splits)
        model = recipe.build(config, prepared)
        layers = model.backbone  # the biLM and its mix are the backbone's layers
        before = {
            name: [w.numpy().copy() for w in layers.get_layer(name).weights]
            for name in ("bilm", "bilm_mix")
        }
        model.fit(prepared.train, epochs=1, steps_per_epoch=2, shuffle=False, verbose=0)
        changed[trainable] = {
            name: max(
                float(np.abs(w.numpy() - b).max())
                for w, b in zip(layers.get_layer(name).weights, weights)
            )
            for name, weights in before.items()
        }
        assert (len(layers.get_layer("bilm").trainable_weights) > 0) == trainable
    assert changed[False]["bilm"] == 0.0 and changed[False]["bilm_mix"] > 0
    assert changed[True]["bilm"] > 0 and changed[True]["bilm_mix"] > 0


def test_contextual_lm_errors_are_one_line(tmp_path, forward_run, capsys):
    data = _data(tmp_path)
    tagger_run = tmp_path / "tagger_run"
    assert (
        tagger.main(
            ["train", "--train", data, "--epochs", "1", *TINY, "--output-dir", str(tagger_run)]
        )
        == 0
    )
    capsys.readouterr()
    cases = {
        str(tmp_path / "missing"): "no such run directory",
        str(tagger_run): "is not a language-model run",
        forward_run: "is not bidirectional; train one with --bidirectional true",
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
        assert code == 2 and message in err and len(err.splitlines()) == 1
