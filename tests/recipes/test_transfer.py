"""ULMFiT transfer (recipes.transfer) from the shared LM run (tests/conftest.py's
`tiny_language_model`, word-level, one layer), the classifier with --pretrained-lm: its
vocabulary and transferred weights are the LM's, the LM fine-tuning stage with the
vocabulary extension, the fine-tuning options, the errors; the pair classifier's shared
encoder from the LM. (The extension rule itself, `extended_weights`, is the library's:
tests/models/test_from_recipes.py.)"""

import collections
import json
import os
import shutil

import numpy as np
import pytest

from recipes import classifier, common, language_model, transfer
from tests.conftest import CLASSIFIER_LABELS, CLASSIFIER_TEXTS, PAIRS, main_json

# Each test reads a module-scoped run or export that takes tens of seconds to make.
pytestmark = pytest.mark.large

TINY = {
    "batch_size": 16,
    "epochs": 1,
    "verbose": 0,
    "valid_fraction": 0.2,
    "lowercase": True,
    "bucket_boundaries": [],
}


def _lm(run):
    from kerasrnn.models import LanguageModel

    return LanguageModel.from_preset(run, compile=False)


def _lm_weights(run):
    backbone = _lm(run).backbone
    return [backbone.token_embedding.get_weights()[0]] + [
        w for layer in backbone.rnn_layers("forward") for w in layer.get_weights()
    ]


def _encoder_weights(task):
    from kerasrnn.models.transfer import encoder_of

    encoder = encoder_of(task)
    return [encoder.get_layer("embedding").get_weights()[0]] + [
        w for layer in encoder.get_layer("rnn").rnn_layers for w in layer.get_weights()
    ]


def _config(tmp_path, **overrides):
    return common.load_config(
        classifier.DEFAULTS,
        overrides={**TINY, "output_dir": str(tmp_path / "clf"), **overrides},
    )


def _no_holdouts():
    return {"valid": None, "test": None}


def test_transferred_weights_and_vocabulary_are_the_lms(tmp_path, tiny_language_model):
    lm_run = str(tiny_language_model)
    config = transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, units=99))
    assert (config["units"], config["num_layers"], config["embedding_dim"]) == (8, 1, 8)
    assert config["bidirectional"] is False
    vocab = transfer.lm_vocabulary(lm_run)
    assert vocab.tokens == _lm(lm_run).preprocessor.vocabulary.tokens
    model = classifier.build_model(config, len(vocab), 2)
    copied = transfer.copy_lm_weights(model, lm_run)
    assert copied == 1 + 3  # the embedding, then kernel, recurrent kernel, bias
    for mine, lms in zip(_encoder_weights(model), _lm_weights(lm_run), strict=True):
        np.testing.assert_array_equal(mine, lms)
    # a model of other shapes: one line naming what differs
    wrong = classifier.build_model(dict(config, units=5), len(vocab), 2)
    with pytest.raises(common.ConfigError, match="rnn_0 weights have shapes"):
        transfer.copy_lm_weights(wrong, lm_run)
    wrong = classifier.build_model(dict(config, num_layers=2), len(vocab), 2)
    with pytest.raises(common.ConfigError, match="1 recurrent layers, the encoder 2"):
        transfer.copy_lm_weights(wrong, lm_run)


def test_transferred_encoder_computes_the_lms_hidden_states(tmp_path, tiny_language_model):
    import keras

    lm_run = str(tiny_language_model)
    config = transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, pooling="mean"))
    vocab = transfer.lm_vocabulary(lm_run)
    model = classifier.build_model(config, len(vocab), 2)
    transfer.copy_lm_weights(model, lm_run)
    lm = _lm(lm_run).stateless().backbone  # (trained on stateful windows)
    lm_states = keras.Model(lm.input, lm.get_layer("rnn_0").output)
    encoder = model.backbone
    ours = keras.Model(encoder.input, encoder.get_layer("rnn").output)
    ids = np.array([[5, 9, 7, 12, 4, 0, 0], [8, 6, 0, 0, 0, 0, 0]], "int32") % len(vocab)
    want, got = lm_states.predict(ids, verbose=0), ours.predict(ids, verbose=0)
    for row, length in enumerate((5, 2)):  # the real steps of each row
        np.testing.assert_allclose(got[row, :length], want[row, :length], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def ulmfit_run(tmp_path_factory, tiny_language_model):
    """A classifier trained one epoch with ULMFiT's three stages on: the LM fine-tuned one
    epoch on its training texts with their frequent new words added, concat pooling, the
    slanted triangular schedule, discriminative rates and gradual unfreezing. Returns
    (its config, its results)."""
    folder = tmp_path_factory.mktemp("ulmfit")
    config = _config(
        folder,
        pretrained_lm=str(tiny_language_model),
        lm_finetune_epochs=1,
        lm_extend_vocabulary=2,
        pooling="concat",
        lr_schedule="slanted_triangular",
        discriminative_decay=2.6,
        gradual_unfreezing=True,
        learning_rate=0.01,
    )
    # (x 3: one window of the fine-tuning's 20 x 20 tokens, language_model's defaults)
    splits = {"train": (CLASSIFIER_TEXTS * 3, CLASSIFIER_LABELS * 3)} | _no_holdouts()
    return config, classifier.train(config, splits=splits)


def test_ulmfit_finetunes_and_extends_the_lm_then_trains_the_head(ulmfit_run, tiny_language_model):
    from kerasrnn.data.tokenizers import tokenize

    config, results = ulmfit_run
    run = config["output_dir"]
    finetuned = os.path.join(run, "lm_finetune")
    assert results["pretrained_lm_weights"] == finetuned
    assert results["lm_finetune"]["epochs"] == 1
    # the fine-tuned LM's vocabulary: the LM's, then the training texts' words seen twice
    # or more that it lacks; the classifier's is that one
    start = transfer.lm_vocabulary(str(tiny_language_model)).tokens
    extended = transfer.lm_vocabulary(finetuned).tokens
    counts = collections.Counter(w for words in tokenize(CLASSIFIER_TEXTS, True) for w in words)
    assert extended[: len(start)] == start
    assert set(extended[len(start) :]) == {
        w for w, n in counts.items() if n >= 2 and w not in start
    }
    assert len(extended) > len(start)
    task = classifier.RECIPE.load(config)
    assert task.preprocessor.vocabulary.tokens == extended
    with open(os.path.join(run, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[: len(extended)] == extended
    # one epoch with gradual unfreezing trains only the head: the encoder of best.keras
    # is exactly the fine-tuned LM's, which moved away from the pretrained one
    for mine, lms in zip(_encoder_weights(task), _lm_weights(finetuned), strict=True):
        np.testing.assert_array_equal(mine, lms)
    moved = _lm_weights(finetuned)[0][: len(start)]
    assert not np.array_equal(moved, _lm_weights(str(tiny_language_model))[0])
    stored = json.load(open(os.path.join(run, "config.json")))
    assert stored["units"] == 8 and stored["bidirectional"] is False
    # predict works from the run alone (vocabulary, concat pooling, optimizer load)
    predicted = main_json(classifier, "predict", "--output-dir", run, "a good film")
    assert predicted[0]["label"] in ("neg", "pos")


def test_a_resumed_run_reuses_the_finished_lm_stage(ulmfit_run):
    config, _ = ulmfit_run
    finetuned = os.path.join(config["output_dir"], "lm_finetune")
    stamp = os.path.getmtime(os.path.join(finetuned, "best.keras"))
    assert transfer.finetune_lm(config, [["again"]])[0] == finetuned
    assert os.path.getmtime(os.path.join(finetuned, "best.keras")) == stamp


def test_fine_tuning_options_without_a_pretrained_lm(tmp_path):
    from kerasrnn.callbacks import DiscriminativeAdam, SlantedTriangular

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
    os.makedirs(config["output_dir"], exist_ok=True)
    texts, labels = CLASSIFIER_TEXTS, CLASSIFIER_LABELS  # 40: 3 batches of 16
    prepared = recipe.prepare(config, {"train": (texts, labels), "valid": None})
    model = recipe.build(config, prepared)
    optimizer = model.optimizer
    assert isinstance(optimizer, DiscriminativeAdam)
    schedule = optimizer._learning_rate
    assert isinstance(schedule, SlantedTriangular)
    assert int(schedule.get_config()["total_steps"]) == 2 * 3  # 2 epochs x ceil(40 / 16)
    factors = optimizer.factors
    embedding = model.backbone.get_layer("embedding").embeddings.path
    assert factors[embedding] == pytest.approx(1 / 8)
    for depth, want in ((0, 1 / 4), (1, 1 / 2)):  # both directions of each layer
        layer = model.backbone.get_layer("rnn").rnn_layers[depth]
        paths = [w.path for w in layer.weights]
        assert len(paths) == 6 and all(factors[k] == pytest.approx(want) for k in paths), factors
    assert factors[model.get_layer("classes").kernel.path] == 1.0
    assert len(factors) == 1 + 12 + 2  # every trainable weight has its factor


def test_transfer_errors_are_one_line(tmp_path, tiny_language_model):
    lm_run = str(shutil.copytree(tiny_language_model, tmp_path / "lm"))  # edited below
    with pytest.raises(common.ConfigError, match="needs `pretrained_lm`"):
        transfer.adopt_lm(_config(tmp_path, lm_finetune_epochs=2))
    with pytest.raises(common.ConfigError, match="needs `lm_finetune_epochs`"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, lm_extend_vocabulary=2))
    with pytest.raises(common.ConfigError, match="no language-model config.json"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=str(tmp_path)))
    with pytest.raises(common.ConfigError, match="both initialise"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run, embeddings="vectors.txt"))
    stored = json.load(open(os.path.join(lm_run, "config.json")))
    json.dump(dict(stored, level="char"), open(os.path.join(lm_run, "config.json"), "w"))
    with pytest.raises(common.ConfigError, match="word-level"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run))
    json.dump(stored, open(os.path.join(lm_run, "config.json"), "w"))
    os.remove(os.path.join(lm_run, "best.keras"))
    with pytest.raises(common.ConfigError, match="has no best.keras; train it first"):
        transfer.adopt_lm(_config(tmp_path, pretrained_lm=lm_run))
    # the language model recipe's own stage option needs its start
    lm = common.load_config(
        language_model.DEFAULTS,
        overrides={"extend_vocabulary": 2, "output_dir": str(tmp_path / "lm2"), "verbose": 0},
    )
    with pytest.raises(common.ConfigError, match="needs `init_from`"):
        language_model.train(lm, splits={"train": [["a"]], "valid": None, "test": None})
    assert not os.path.exists(tmp_path / "lm2")


def test_pair_classifier_takes_the_lm_into_its_shared_encoder(tmp_path, tiny_language_model):
    from recipes import pair_classifier

    lm_run = str(tiny_language_model)
    train = tuple(list(column) for column in zip(*PAIRS))
    config = common.load_config(
        pair_classifier.DEFAULTS,
        overrides={
            "output_dir": str(tmp_path / "pair"),
            "pretrained_lm": lm_run,
            "gradual_unfreezing": True,
            "discriminative_decay": 2.6,
            "pooling": "concat",
            "hidden_units": 8,
            "batch_size": 16,
            "epochs": 1,
            "verbose": 0,
        },
    )
    results = pair_classifier.train(config, splits={"train": train, "valid": None, "test": None})
    assert results["pretrained_lm_weights"] == lm_run and "lm_finetune" not in results
    task = pair_classifier.RECIPE.load(config)
    assert task.preprocessor.vocabulary.tokens == transfer.lm_vocabulary(lm_run).tokens
    for ours, lms in zip(_encoder_weights(task), _lm_weights(lm_run), strict=True):
        np.testing.assert_array_equal(ours, lms)  # frozen in epoch 1
