"""The CRF layer, loss and decoding against brute-force enumeration of all tag paths and
a NumPy forward / Viterbi written here; gradients by finite differences."""

import itertools

import keras
import numpy as np
import pytest

from kerasrnn.layers import (
    CRF,
    CRFAccuracy,
    CRFLoss,
    crf_decode,
    crf_log_likelihood,
    crf_log_norm,
    crf_marginals,
    crf_sequence_score,
)
from tests.autodiff import gradients

B, T, D, K = 3, 5, 4, 3
# Detaches on torch, where np.asarray refuses a tensor that requires grad.
numpy = keras.ops.convert_to_numpy
# right padding, a hole in the middle, left padding
MASK = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 1, 1], [0, 1, 1, 1, 1]], bool)


def make_layer(rng, use_boundary=True, use_kernel=True, features=D):
    layer = CRF(K, use_boundary=use_boundary, use_kernel=use_kernel)
    layer.build((None, None, features))
    for w in layer.weights:
        w.assign(rng.normal(0, 0.8, w.shape).astype(w.dtype))
    return layer


def parts(layer):
    w = {v.path.split("/")[-1]: np.asarray(v.numpy(), np.float64) for v in layer.weights}
    zeros = np.zeros(K)
    return w, w.get("start_transitions", zeros), w.get("end_transitions", zeros)


def np_emissions(layer, x):
    w, _, _ = parts(layer)
    return x @ w["kernel"] + w["bias"] if layer.use_kernel else np.asarray(x, np.float64)


def path_score(e, A, start, end, path):
    """The textbook CRF score of one path over the real steps of one row."""
    score = start[path[0]] + end[path[-1]] + sum(e[t, y] for t, y in enumerate(path))
    return score + sum(A[a, b] for a, b in zip(path[:-1], path[1:]))


def brute_force(layer, x, mask):
    """log Z, the best path and its score, and marginals, by enumerating K^n paths."""
    e_all = np_emissions(layer, x)
    w, start, end = parts(layer)
    results = []
    for row in range(len(x)):
        steps = np.flatnonzero(mask[row])
        e = e_all[row, steps]
        paths = list(itertools.product(range(K), repeat=len(steps)))
        scores = np.array([path_score(e, w["transitions"], start, end, p) for p in paths])
        log_z = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
        best = paths[int(np.argmax(scores))]
        marginals = np.zeros((x.shape[1], K))
        for p, s in zip(paths, scores):
            for t, y in zip(steps, p):
                marginals[t, y] += np.exp(s - log_z)
        full_best = np.zeros(x.shape[1], int)
        full_best[steps] = best
        results.append((log_z, full_best, scores.max(), marginals))
    return results


def np_forward_viterbi(psi, mask):
    """Forward algorithm and Viterbi over pairwise potentials, with plain loops."""
    log_zs, paths = [], []
    for row in range(len(psi)):
        steps = np.flatnonzero(mask[row])
        alpha = delta = None
        pointers = []
        for t in steps:
            if alpha is None:  # the first real step does not depend on the previous tag
                alpha, delta = psi[row, t, 0].copy(), psi[row, t, 0].copy()
                continue
            m = alpha[:, None] + psi[row, t]
            alpha = np.log(np.exp(m - m.max(0)).sum(0)) + m.max(0)
            s = delta[:, None] + psi[row, t]
            pointers.append(s.argmax(0))
            delta = s.max(0)
        if alpha is None:  # no real step: the empty path, score 0
            log_zs.append(0.0)
            paths.append(np.zeros(psi.shape[1], int))
            continue
        log_zs.append(np.log(np.exp(alpha - alpha.max()).sum()) + alpha.max())
        path = [int(delta.argmax())]
        for pointer in reversed(pointers):
            path.insert(0, int(pointer[path[0]]))
        full = np.zeros(psi.shape[1], int)
        full[steps] = path
        paths.append(full)
    return np.array(log_zs), np.array(paths)


@pytest.mark.parametrize("use_boundary", [True, False])
def test_log_norm_best_path_and_marginals_match_brute_force(use_boundary):
    rng = np.random.default_rng(0)
    layer = make_layer(rng, use_boundary)
    x = rng.normal(size=(B, T, D)).astype("float32")
    psi = layer(x, mask=MASK)
    log_z = numpy(crf_log_norm(psi, MASK))
    tags, best = (numpy(v) for v in crf_decode(psi, MASK))
    marginals = numpy(crf_marginals(psi, MASK))
    for row, (ref_z, ref_path, ref_best, ref_marginals) in enumerate(brute_force(layer, x, MASK)):
        np.testing.assert_allclose(log_z[row], ref_z, rtol=1e-5)
        np.testing.assert_array_equal(tags[row], ref_path)
        np.testing.assert_allclose(best[row], ref_best, rtol=1e-5)
        np.testing.assert_allclose(marginals[row], ref_marginals, atol=1e-5)
    # the likelihood of each path is its textbook score minus log Z
    gold = rng.integers(0, K, (B, T))
    w, start, end = parts(layer)
    e = np_emissions(layer, x)
    expected = [
        path_score(
            e[r, MASK[r]],
            w["transitions"],
            start if use_boundary else 0 * start,
            end if use_boundary else 0 * end,
            gold[r, MASK[r]],
        )
        - log_z[r]
        for r in range(B)
    ]
    np.testing.assert_allclose(numpy(crf_log_likelihood(psi, gold, MASK)), expected, rtol=1e-5)


def test_forward_and_viterbi_match_numpy_on_arbitrary_potentials():
    """Longer sequences than enumeration allows, any potentials (the first real step
    reads row 0, the convention of a virtual start tag)."""
    rng = np.random.default_rng(1)
    psi = rng.normal(0, 2, (4, 30, 6, 6))
    mask = rng.random((4, 30)) < 0.8
    mask[3] = False  # an empty row: log Z = 0, no tags
    ref_z, ref_paths = np_forward_viterbi(psi, mask)
    np.testing.assert_allclose(crf_log_norm(psi, mask), ref_z, rtol=1e-5)
    tags, _ = crf_decode(psi, mask)
    np.testing.assert_array_equal(numpy(tags), ref_paths)
    # the Viterbi path's score is the best score decode reports
    _, best = crf_decode(psi, mask)
    np.testing.assert_allclose(crf_sequence_score(psi, ref_paths, mask), best, rtol=1e-5)


def test_padding_is_the_same_as_truncation():
    rng = np.random.default_rng(2)
    layer = make_layer(rng)
    x = rng.normal(size=(1, 6, D)).astype("float32")
    gold = np.array([[2, 0, 1, 2, 1, 0]])
    short = layer(x[:, :4])
    padded_x = x.copy()
    padded_x[:, 4:] = 99.0  # whatever sits in the padding must not matter
    mask = np.array([[1, 1, 1, 1, 0, 0]], bool)
    padded = layer(padded_x, mask=mask)
    np.testing.assert_allclose(
        numpy(crf_log_likelihood(padded, gold, mask)),
        numpy(crf_log_likelihood(short, gold[:, :4])),
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        numpy(crf_decode(padded, mask)[0])[:, :4], numpy(crf_decode(short)[0])
    )
    assert np.all(numpy(crf_decode(padded, mask)[0])[:, 4:] == 0)


def test_loss_uses_sample_weights_or_negative_labels_as_the_mask():
    rng = np.random.default_rng(3)
    layer = make_layer(rng)
    x = rng.normal(size=(B, T, D)).astype("float32")
    psi = layer(x, mask=MASK)
    gold = rng.integers(0, K, (B, T))
    expected = -numpy(crf_log_likelihood(psi, gold, MASK))
    loss = CRFLoss()
    np.testing.assert_allclose(
        numpy(loss(gold, psi, sample_weight=MASK.astype("float32"))), expected.mean(), rtol=1e-6
    )
    np.testing.assert_allclose(
        numpy(loss(np.where(MASK, gold, -1), psi)), expected.mean(), rtol=1e-6
    )
    np.testing.assert_allclose(
        numpy(CRFLoss(reduction=None)(gold, psi, sample_weight=MASK.astype("float32"))),
        expected,
        rtol=1e-6,
    )
    per_sequence = np.array([1.0, 0.0, 2.0], "float32")
    np.testing.assert_allclose(
        numpy(CRFLoss(reduction="sum")(np.where(MASK, gold, -1), psi, per_sequence)),
        (expected * per_sequence).sum(),
        rtol=1e-6,
    )


# Off TensorFlow, Keras computes parts of float64 in float32 (tests/attention/test_scores.py
# says where), so the differences need larger steps and tolerances there.
FINITE_DIFFERENCE = {"tensorflow": (1e-6, 1e-6), "jax": (1e-3, 2e-3), "torch": (3e-3, 1e-2)}


@pytest.mark.large
def test_gradients_match_finite_differences(float64):
    """d(NLL)/d(every weight and every input), float64 central differences."""
    rng = np.random.default_rng(4)
    layer = CRF(K, dtype="float64")
    x = rng.normal(size=(B, T, D))
    layer(x, mask=MASK)
    gold = rng.integers(0, K, (B, T))
    point = [rng.normal(0, 0.8, w.shape) for w in layer.trainable_weights] + [x]
    n = len(layer.trainable_weights)

    def loss(values):
        psi = layer.stateless_call(values[:n], [], values[n], mask=MASK)[0]
        return keras.ops.sum(-crf_log_likelihood(psi, gold, MASK))

    analytic = gradients(loss, point)
    eps, rtol = FINITE_DIFFERENCE[keras.backend.backend()]
    if keras.backend.backend() == "jax":
        import jax

        loss = jax.jit(loss)  # one trace instead of ~200 eager scans
    for i, value in enumerate(point):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus = [v.copy() for v in point]
            minus = [v.copy() for v in point]
            plus[i][index] += eps
            minus[i][index] -= eps
            numeric[index] = (float(loss(plus)) - float(loss(minus))) / (2 * eps)
        np.testing.assert_allclose(analytic[i], numeric, rtol=rtol, atol=rtol)
    assert np.all(analytic[n][~MASK] == 0)  # padded inputs get no gradient


def tagger(num_words=12):
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(num_words, 8, mask_zero=True)(inputs)
    x = keras.layers.Bidirectional(keras.layers.GRU(8, return_sequences=True))(x)
    model = keras.Model(inputs, CRF(K, name="crf")(x))
    model.compile(keras.optimizers.Adam(0.05), CRFLoss(), weighted_metrics=[CRFAccuracy()])
    return model


def copy_task(rng, n=64):
    """tag = word id mod 3, except that a word after word 5 takes tag 2: needs the
    transition (or the context), padded with 0."""
    words = rng.integers(1, 12, (n, 7))
    lengths = rng.integers(2, 8, n)
    words[np.arange(7)[None] >= lengths[:, None]] = 0
    tags = words % 3
    tags[:, 1:][words[:, :-1] == 5] = 2
    return words, np.where(words > 0, tags, 0), (words > 0).astype("float32")


@pytest.mark.large
def test_trains_with_fit_and_round_trips_through_a_keras_file(tmp_path):
    rng = np.random.default_rng(5)
    words, tags, weights = copy_task(rng, 128)
    model = tagger()
    history = model.fit(words, tags, sample_weight=weights, epochs=30, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    psi = model.predict(words, verbose=0)
    decoded, _ = crf_decode(psi, words > 0)
    accuracy = (numpy(decoded) == tags)[words > 0].mean()
    assert accuracy > 0.95
    assert abs(history.history["crf_accuracy"][-1] - accuracy) < 0.1
    path = str(tmp_path / "crf.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(words, verbose=0), psi, atol=1e-6)
    assert isinstance(loaded.loss, CRFLoss)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="num_tags"):
        CRF(0)
    with pytest.raises(ValueError, match=r"\(batch, time, features\)"):
        CRF(3)(np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError, match="use_kernel=False"):
        CRF(3, use_kernel=False)(np.zeros((2, 4, 5), "float32"))
    with pytest.raises(ValueError, match="num_tags, num_tags"):
        crf_log_norm(np.zeros((2, 4, 3), "float32"))


def test_config_round_trip():
    layer = CRF(4, use_boundary=False, transition_initializer="orthogonal", name="c")
    clone = CRF.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_every_function_runs_in_a_graph_of_unknown_length():
    """A serving signature sees (None, None, K, K) potentials."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.function input signatures are TensorFlow's")
    import tensorflow as tf

    rng = np.random.default_rng(6)
    psi = rng.normal(size=(2, 7, K, K)).astype("float32")
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3], bool)
    tags = rng.integers(0, K, (2, 7)).astype("int32")

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None, K, K]),
            tf.TensorSpec([None, None], tf.bool),
            tf.TensorSpec([None, None], tf.int32),
        ]
    )
    def everything(p, m, y):
        return (crf_decode(p, m)[0], crf_marginals(p, m), crf_log_likelihood(p, y, m))

    for graph, eager in zip(
        everything(psi, mask, tags),
        (crf_decode(psi, mask)[0], crf_marginals(psi, mask), crf_log_likelihood(psi, tags, mask)),
    ):
        np.testing.assert_allclose(numpy(graph), numpy(eager), rtol=1e-6)
