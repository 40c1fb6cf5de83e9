"""ULMFiT transfer (recipes.transfer): a tiny LM trained for one epoch on a slice of the
polarity text, then the classifier with --pretrained-lm: its vocabulary and transferred
weights are the LM's, the LM fine-tuning stage, the fine-tuning options, the errors."""

import collections
import json
import os
import shutil

import numpy as np
import pytest

from recipes import classifier, common, language_model, transfer
from tests.conftest import require_data

LM = {
    "units": 8,
    "embedding_dim": 6,
    "num_layers": 2,
    "batch_size": 4,
    "steps": 6,
    "epochs": 1,
    "learning_rate": 1.0,
    "jit_compile": False,
    "valid_file": "",
    "test_file": "",
    "verbose": 0,
}
TINY = {
    "batch_size": 16,
    "epochs": 1,
    "verbose": 0,
    "valid_fraction": 0.2,
    "lowercase": True,
    "bucket_boundaries": [],
}


def _polarity(shared_data, n):
    from kerasrnn.data import load_class_files

    folder = shared_data("sentence_polarity")
    texts, labels = load_class_files(
        [folder / "rt-polarity.pos", folder / "rt-polarity.neg"], encoding="cp1252"
    )
    order = np.random.default_rng(0).permutation(len(texts))[:n]
    return [texts[i] for i in order], [labels[i] for i in order]


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    """A tiny word-level LM trained for one epoch on 150 polarity sentences, once per
    module (the tests only read it; one that edits it takes a copy)."""
    texts, _ = _polarity(require_data, 150)
    output_dir = str(tmp_path_factory.mktemp("transfer") / "lm")
    config = common.load_config(language_model.DEFAULTS, overrides={**LM, "output_dir": output_dir})
    sentences = [t.lower().split() for t in texts]
    language_model.train(config, splits={"train": sentences, "valid": None, "test": None})
    return output_dir


def _lm_weights(run):
    stored = common.saved_config(language_model.OPTIONS, run)
    trained = language_model.LanguageModel.from_run(stored).model
    rnns = language_model.rnn_layers(trained)
    return [trained.get_layer("embedding").get_weights()[0]] + [
        w for layer in rnns for w in layer.get_weights()
    ]


def _classifier_weights(run):
    model = transfer.encoder_of(common.load_best_model({"output_dir": run}))
    return [model.get_layer("embedding").get_weights()[0]] + [
        w for layer in model.get_layer("rnn").rnn_layers for w in layer.get_weights()
    ]


def _config(tmp_path, **overrides):
    return common.load_config(
        classifier.DEFAULTS,
        overrides={**TINY, "output_dir": str(tmp_path / "clf"), **overrides},
    )


def test_transferred_weights_and_vocabulary_are_the_lms(tmp_path, lm_run):
    config = transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, units=99))
    assert (config["units"], config["num_layers"], config["embedding_dim"]) == (8, 2, 6)
    assert config["bidirectional"] is False
    from kerasrnn.data import Vocabulary

    vocab = Vocabulary.load(os.path.join(lm_run, "vocabulary.txt"))
    model = classifier.build_model(config, len(vocab), 2)
    copied = transfer.copy_lm_weights(model, lm_run)
    assert copied == 1 + 2 * 3  # the embedding, then kernel, recurrent kernel, bias x 2
    encoder = transfer.encoder_of(model)  # the classifier's backbone
    ours = [encoder.get_layer("embedding").get_weights()[0]] + [
        w for layer in encoder.get_layer("rnn").rnn_layers for w in layer.get_weights()
    ]
    for mine, lms in zip(ours, _lm_weights(lm_run), strict=True):
        np.testing.assert_array_equal(mine, lms)
    # a model of other shapes: one line naming what differs
    wrong = classifier.build_model(dict(config, units=5), len(vocab), 2)
    with pytest.raises(common.ConfigError, match="rnn_0 weights have shapes"):
        transfer.copy_lm_weights(wrong, lm_run)
    wrong = classifier.build_model(dict(config, num_layers=1), len(vocab), 2)
    with pytest.raises(common.ConfigError, match="2 recurrent layers, the model 1"):
        transfer.copy_lm_weights(wrong, lm_run)


def _no_holdouts():
    return {"valid": None, "test": None}


def test_end_to_end_with_lm_finetuning_and_ulmfit_options(tmp_path, shared_data, lm_run):
    texts, labels = _polarity(shared_data, 160)
    config = _config(
        tmp_path,
        pretrained_lm=lm_run,
        lm_finetune_epochs=1,
        pooling="concat",
        lr_schedule="slanted_triangular",
        discriminative_decay=2.6,
        gradual_unfreezing=True,
        learning_rate=0.01,
    )
    results = classifier.train(config, splits={"train": (texts, labels)} | _no_holdouts())
    run = str(tmp_path / "clf")
    finetuned = os.path.join(run, "lm_finetune")
    assert results["pretrained_lm_weights"] == finetuned
    assert results["lm_finetune"]["epochs"] == 1
    with open(os.path.join(run, "vocab.txt")) as ours:
        with open(os.path.join(lm_run, "vocabulary.txt")) as lms:
            assert ours.read() == lms.read()
    # one epoch with gradual unfreezing trains only the head: the encoder of best.keras
    # is exactly the fine-tuned LM's, which moved away from the pretrained one
    for mine, lms in zip(_classifier_weights(run), _lm_weights(finetuned), strict=True):
        np.testing.assert_array_equal(mine, lms)
    assert not np.array_equal(_lm_weights(finetuned)[0], _lm_weights(lm_run)[0])
    # a resumed or continued run reuses the finished stage
    stamp = os.path.getmtime(os.path.join(finetuned, "best.keras"))
    assert transfer.finetune_lm(config, [["again"]])[0] == finetuned
    assert os.path.getmtime(os.path.join(finetuned, "best.keras")) == stamp
    stored = json.load(open(os.path.join(run, "config.json")))
    assert stored["units"] == 8 and stored["bidirectional"] is False
    # predict works from the run alone (vocabulary, concat pooling, optimizer load)
    predicted = classifier.Classifier.from_run(config).predict(["a good film"])
    assert predicted[0]["label"] in ("neg", "pos")


def test_extended_vocabulary_starts_new_words_at_the_mean_row(tmp_path, shared_data, lm_run):
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import tokenize

    # the rule on its own: old rows kept, new rows (axis of the vocabulary) the mean
    embedding, kernel, bias = np.arange(12.0).reshape(4, 3), np.ones((3, 4)), np.arange(4.0)
    grown = language_model.extended_weights(
        [embedding, kernel, bias], [(6, 3), (3, 6), (6,)], 4, "lm"
    )
    np.testing.assert_array_equal(grown[0][:4], embedding)
    np.testing.assert_array_equal(grown[0][4:], [[4.5, 5.5, 6.5]] * 2)
    np.testing.assert_array_equal(grown[1], np.ones((3, 6)))
    np.testing.assert_array_equal(grown[2], [0, 1, 2, 3, 1.5, 1.5])
    for shapes in ([(6, 3), (3, 6)], [(6, 2), (3, 6), (6,)], [(3, 3), (3, 4), (4,)]):
        with pytest.raises(common.ConfigError, match="do not fit this model"):
            language_model.extended_weights([embedding, kernel, bias], shapes, 4, "lm")
    # through the classifier: the fine-tuned LM's vocabulary is the LM's, then the
    # training texts' words seen twice or more that it lacks; the classifier reads it
    texts, labels = _polarity(shared_data, 300)
    config = _config(tmp_path, pretrained_lm=lm_run, lm_finetune_epochs=1, lm_extend_vocabulary=2)
    classifier.train(config, splits={"train": (texts[150:], labels[150:])} | _no_holdouts())
    start = Vocabulary.load(os.path.join(lm_run, "vocabulary.txt")).tokens
    extended = Vocabulary.load(os.path.join(tmp_path, "clf", "lm_finetune", "vocabulary.txt"))
    counts = collections.Counter(w for words in tokenize(texts[150:], True) for w in words)
    assert extended.tokens[: len(start)] == start
    assert set(extended.tokens[len(start) :]) == {
        w for w, n in counts.items() if n >= 2 and w not in start
    }
    assert len(extended) > len(start)
    with open(os.path.join(tmp_path, "clf", "vocab.txt")) as ours:
        assert ours.read().split("\n")[: len(extended)] == extended.tokens
    with pytest.raises(common.ConfigError, match="needs `lm_finetune_epochs`"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, lm_extend_vocabulary=2))
    lm = common.load_config(
        language_model.DEFAULTS,
        overrides={**LM, "extend_vocabulary": 2, "output_dir": str(tmp_path / "lm2")},
    )
    with pytest.raises(common.ConfigError, match="needs `init_from`"):
        language_model.train(lm, splits={"train": [["a"]], "valid": None, "test": None})
    assert not os.path.exists(tmp_path / "lm2")


def test_fine_tuning_options_without_a_pretrained_lm(tmp_path, shared_data):
    from kerasrnn.callbacks import DiscriminativeAdam, SlantedTriangular

    texts, labels = _polarity(shared_data, 64)
    config = _config(
        tmp_path,
        embedding_dim=8,
        units=4,
        num_layers=2,
        lr_schedule="slanted_triangular",
        discriminative_decay=2.0,
        epochs=2,
    )
    recipe = classifier.RECIPE
    prepared = recipe.prepare(config, {"train": (texts, labels), "valid": None})
    os.makedirs(config["output_dir"], exist_ok=True)
    model = recipe.build(config, prepared)
    optimizer = model.optimizer
    assert isinstance(optimizer, DiscriminativeAdam)
    schedule = optimizer._learning_rate
    assert isinstance(schedule, SlantedTriangular)
    assert int(schedule.get_config()["total_steps"]) == 2 * 4  # 2 epochs x ceil(64 / 16)
    factors = optimizer.factors
    assert factors["embedding/embeddings"] == pytest.approx(1 / 8)
    for depth, want in ((0, 1 / 4), (1, 1 / 2)):  # both directions of each layer
        paths = [k for k in factors if k.startswith(f"rnn/bidirectional_{depth}/")]
        assert len(paths) == 6 and all(factors[k] == pytest.approx(want) for k in paths), factors
    assert factors["classes/kernel"] == 1.0


def test_transfer_errors_are_one_line(tmp_path, lm_run):
    lm_run = str(shutil.copytree(lm_run, tmp_path / "lm"))  # edited below
    with pytest.raises(common.ConfigError, match="needs `pretrained_lm`"):
        transfer.adopt_lm(_config(tmp_path, lm_finetune_epochs=2))
    with pytest.raises(common.ConfigError, match="no language-model config.json"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=str(tmp_path)))
    with pytest.raises(common.ConfigError, match="both initialise"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, embeddings="vectors.txt"))
    stored = json.load(open(os.path.join(lm_run, "config.json")))
    stored["level"] = "char"
    json.dump(stored, open(os.path.join(lm_run, "config.json"), "w"))
    with pytest.raises(common.ConfigError, match="word-level"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run))


def test_pair_classifier_takes_the_lm_into_its_shared_encoder(tmp_path, shared_data, lm_run):
    from recipes import pair_classifier

    a, b, scores, labels = pair_classifier.load_pairs(shared_data("sick", "SICK_train.txt.gz"))
    train = (a[:64], b[:64], scores[:64], labels[:64])
    config = common.load_config(
        pair_classifier.DEFAULTS,
        overrides={
            "output_dir": str(tmp_path / "pair"),
            "pretrained_lm": lm_run,
            "gradual_unfreezing": True,
            "discriminative_decay": 2.6,
            "pooling": "concat",
            "batch_size": 16,
            "epochs": 1,
            "verbose": 0,
        },
    )
    results = pair_classifier.train(config, splits={"train": train, "valid": None, "test": None})
    assert results["pretrained_lm_weights"] == lm_run
    model = common.load_best_model({"output_dir": str(tmp_path / "pair")})
    encoder = model.get_layer("encoder")
    mine = [encoder.get_layer("embedding").get_weights()[0]] + [
        w for layer in encoder.get_layer("rnn").rnn_layers for w in layer.get_weights()
    ]
    for ours, lms in zip(mine, _lm_weights(lm_run), strict=True):  # frozen in epoch 1
        np.testing.assert_array_equal(ours, lms)


def test_transferred_encoder_computes_the_lms_hidden_states(tmp_path, lm_run):
    import keras

    config = transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, pooling="mean"))
    from kerasrnn.data import Vocabulary

    vocab = Vocabulary.load(os.path.join(lm_run, "vocabulary.txt"))
    model = classifier.build_model(config, len(vocab), 2)
    transfer.copy_lm_weights(model, lm_run)
    stored = common.saved_config(language_model.OPTIONS, lm_run)
    lm = language_model.LanguageModel.from_run(stored).model
    lm_states = keras.Model(lm.input, lm.get_layer("rnn_1").output)
    encoder = transfer.encoder_of(model)  # the classifier's backbone
    ours = keras.Model(encoder.input, encoder.get_layer("rnn").output)
    ids = np.array([[5, 9, 7, 12, 4, 0, 0], [8, 6, 0, 0, 0, 0, 0]], "int32")
    want, got = lm_states.predict(ids, verbose=0), ours.predict(ids, verbose=0)
    for row, length in enumerate((5, 2)):  # the real steps of each row
        np.testing.assert_allclose(got[row, :length], want[row, :length], rtol=1e-5, atol=1e-6)
