"""kerasrnn.models.PairClassifier: the head against a NumPy forward over the shared
backbone's sentence vectors, each head's training, `.keras` and SavedModel round trips."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.models import PairClassifier, SentenceEncoder, score_distribution

PAIR = {
    "sentence_a": np.array([[4, 5, 6, 0], [7, 0, 0, 0]], "int32"),
    "sentence_b": np.array([[8, 9, 0, 0], [4, 4, 5, 6]], "int32"),
}


def _model(head="classes", classes=3):
    keras.utils.set_random_seed(2)
    encoder = SentenceEncoder(12, 6, kerasrnn.GRUCell(4), pooling="max")
    return PairClassifier(encoder, head, classes, hidden_units=5, dropout=0.2)


def _numpy_head(model, pair):
    """[u; v; |u - v|; u v] -> tanh layer -> the head, in NumPy."""
    u, v = (model.backbone.predict(pair[k], verbose=0) for k in ("sentence_a", "sentence_b"))
    w, b = model.get_layer("hidden").get_weights()
    h = np.tanh(np.concatenate([u, v, np.abs(u - v), u * v], 1) @ w + b)
    if model.head == "score":
        w, b = model.get_layer("unit_score").get_weights()
        return 1 + 4 / (1 + np.exp(-(h @ w + b)))
    w, b = model.get_layer(model.head == "classes" and "judgment" or "distribution").get_weights()
    z = np.exp(h @ w + b - (h @ w + b).max(1, keepdims=True))
    p = z / z.sum(1, keepdims=True)
    if model.head == "classes":
        return p
    return {"distribution": p, "score": p @ np.arange(1, 6)[:, None]}


@pytest.mark.parametrize("head,classes", [("classes", 3), ("score", 3), ("distribution", 5)])
def test_outputs_equal_a_numpy_forward(head, classes):
    model = _model(head, classes)
    got, want = model.predict(PAIR, verbose=0), _numpy_head(model, PAIR)
    keras.tree.map_structure(lambda g, w: np.testing.assert_allclose(g, w, atol=1e-5), got, want)


@pytest.mark.large
def test_each_head_trains_with_its_default_compile():
    a = np.array([[4, 5, 0], [6, 7, 0], [8, 9, 0], [4, 6, 0]] * 4, "int32")
    pair = {"sentence_a": a, "sentence_b": a[::-1]}
    scores = np.array([1.0, 2.5, 4.0, 5.0] * 4, "float32")
    for head, classes, y in (
        ("classes", 3, np.array([0, 1, 2, 0] * 4)),
        ("score", 3, scores[:, None]),
        ("distribution", 5, {"distribution": score_distribution(scores), "score": scores[:, None]}),
    ):
        model = _model(head, classes)
        model.compile(keras.optimizers.Adam(0.02))
        history = model.fit(pair, y, epochs=8, verbose=0).history["loss"]
        assert history[-1] < history[0], head


@pytest.mark.large
def test_keras_file_loads_with_kerasrnn_alone(tmp_path, load_in_fresh_process):
    model = _model("distribution", 5)
    model.save(tmp_path / "pair.keras")
    loaded = load_in_fresh_process(tmp_path / "pair.keras", PAIR, tmp_path)
    want = model.predict(PAIR, verbose=0)
    for key in ("distribution", "score"):
        np.testing.assert_allclose(loaded[key], want[key], atol=1e-6)
    assert keras.saving.load_model(tmp_path / "pair.keras").get_config() == model.get_config()


def test_saved_model_export_gives_the_same_outputs(tmp_path, saved_model_outputs):
    model = _model()
    exported = saved_model_outputs(model, PAIR, tmp_path)
    np.testing.assert_allclose(exported, model.predict(PAIR, verbose=0), atol=1e-6)


def test_dataset_of_string_pairs_feeds_fit():
    from kerasrnn.data import Vocabulary
    from kerasrnn.models import PairClassifierPreprocessor

    words = Vocabulary(["a", "man", "dog", "runs"])
    judged = PairClassifierPreprocessor(words, ["yes", "no", "maybe"], lowercase=True)
    pairs = [("A man runs", "a dog"), ("a dog", "")]
    inputs, y = next(iter(judged.dataset(pairs, ["no", "yes"], batch_size=2)))
    np.testing.assert_array_equal(inputs["sentence_a"], [[4, 5, 7], [4, 6, 0]])
    np.testing.assert_array_equal(inputs["sentence_b"], [[4, 6], [0, 0]])
    np.testing.assert_array_equal(y, [1, 0])
    scored = PairClassifierPreprocessor(words)
    _, y = next(iter(scored.dataset(pairs, np.array([1.5, 4.0]), batch_size=2)))
    assert y.shape == (2, 1) and y.dtype == "float32"
    both = {"distribution": score_distribution([1.5, 4.0]), "score": np.array([1.5, 4.0])}
    _, y = next(iter(scored.dataset(pairs, both, batch_size=2)))
    assert y["distribution"].shape == (2, 5) and y["score"].shape == (2, 1)
    with pytest.raises(ValueError, match="2 pairs but 1 targets"):
        scored.dataset(pairs, [1.0])
    with pytest.raises(ValueError, match=r"labels \['yes'\] are not among"):
        scored.dataset(pairs, ["yes", "yes"])


def test_score_distribution_is_tai_et_al_target():
    p = score_distribution([1.0, 3.2, 5.0])
    np.testing.assert_allclose(p @ np.arange(1, 6), [1.0, 3.2, 5.0], rtol=1e-6)
    np.testing.assert_allclose(p[1], [0, 0, 0.8, 0.2, 0], atol=1e-6)


def test_bad_arguments_are_one_line_errors():
    encoder = SentenceEncoder(12, 4, kerasrnn.GRUCell(4))
    with pytest.raises(ValueError, match="`head` must be one of"):
        PairClassifier(encoder, "regression")
    with pytest.raises(ValueError, match="`score_range`"):
        PairClassifier(encoder, "score", score_range=(5, 1))
