"""recipes.tagger --crf: a CRF output layer trained end to end on a slice of UD EWT,
with Viterbi decoding in predict, evaluate and the exported SavedModel."""

import json

import numpy as np
import pytest

from recipes import tagger

TINY = [
    "--embedding-dim",
    "16",
    "--units",
    "16",
    "--char-dim",
    "8",
    "--char-units",
    "8",
    "--batch-size",
    "16",
    "--verbose",
    "0",
    "--bucket-boundaries",
    "[10, 20]",
    "--dropout",
    "0",
    "--embedding-dropout",
    "0",
    "--word-dropout",
    "0",
]


def write_conllu(path, sentences, tags):
    with open(path, "w", encoding="utf-8") as f:
        for words, labels in zip(sentences, tags):
            for i, (w, t) in enumerate(zip(words, labels), 1):
                f.write(f"{i}\t{w}\t_\t{t}\t_\t_\t_\t_\t_\t_\n")
            f.write("\n")


def test_crf_tagger_command_line_end_to_end(tmp_path, capsys, shared_data):
    import tensorflow as tf

    from kerasrnn.data import load_conllu
    from kerasrnn.layers import crf_decode

    sentences, tags = load_conllu(shared_data("ud_en_ewt", "en_ewt-ud-dev.conllu.gz"))
    train, test = tmp_path / "train.conllu", tmp_path / "test.conllu"
    write_conllu(train, sentences[:80], tags[:80])
    write_conllu(test, sentences[80:110], tags[80:110])
    run = ["--output-dir", str(tmp_path / "run")]
    code = tagger.main(
        [
            "train",
            "--train",
            str(train),
            "--valid",
            str(train),
            "--test",
            str(test),
            "--crf",
            "true",
            "--epochs",
            "3",
            "--learning-rate",
            "0.02",
            *TINY,
            *run,
        ]
    )
    assert code == 0
    results = json.loads(capsys.readouterr().out)
    assert results["valid"]["accuracy"] > 0.6  # 17 tags; most frequent about 17%
    assert "accuracy" in results["history"] and "val_accuracy" in results["history"]

    code = tagger.main(["evaluate", *run, "--test", str(test)])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == results["test"]["accuracy"]

    code = tagger.main(["predict", *run, "The cat sat on the mat .", ""])
    assert code == 0
    predicted = json.loads(capsys.readouterr().out)
    assert len(predicted[0]["tags"]) == 7 and predicted[1]["tags"] == []
    assert all(0 < p <= 1 for p in predicted[0]["probabilities"])

    # predict is Viterbi over the saved model's potentials
    config = tagger.common.saved_config(tagger.DEFAULTS, str(tmp_path / "run"))
    model = tagger.Tagger.from_run(config)
    assert model.crf
    batch = [sentences[80], sentences[81][:3]]
    inputs = model.encoder.inputs(batch)
    width = max(len(s) for s in batch)
    words = np.array([w + [0] * (width - len(w)) for w in inputs["word_ids"]])
    chars = np.zeros((2, width, max(len(c) for s in inputs["char_ids"] for c in s)), int)
    for i, sentence in enumerate(inputs["char_ids"]):
        for j, c in enumerate(sentence):
            chars[i, j, : len(c)] = c
    potentials = model.model({"word_ids": words, "char_ids": chars})
    best = np.asarray(crf_decode(potentials, words > 0)[0])
    expected = [[model.tags[k] for k in best[i, : len(s)]] for i, s in enumerate(batch)]
    assert [p["tags"] for p in model.predict(batch)] == expected

    code = tagger.main(["export", *run])
    assert code == 0
    path = json.loads(capsys.readouterr().out)["saved_model"]
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["tag_text"](text=tf.constant([" ".join(sentences[80])]))
    tags_out = [t.decode() for t in out["tags"].numpy()[0]]
    assert tags_out == expected[0]


def test_crf_option_must_be_a_boolean(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # at parse time, before any data is read
        tagger.main(["train", "--train", str(tmp_path / "x.conllu"), "--crf", "maybe"])
    assert exit_.value.code == 2
    assert "argument --crf: must be true or false, got 'maybe'" in capsys.readouterr().err
