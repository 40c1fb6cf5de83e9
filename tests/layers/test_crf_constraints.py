"""The CRF with Keras masks and tag-scheme constraints: masked loss and decoding against
each sequence cut to its length, constrained log Z / Viterbi / marginals against
brute-force enumeration of the allowed tag paths, and a property test that constrained
decoding never takes a forbidden transition."""

import itertools

import keras
import numpy as np
import pytest

from kerasrnn.layers import (
    CRF,
    CRFAccuracy,
    CRFLoss,
    allowed_transitions,
    check_tags,
    convert_tags,
    crf_decode,
    crf_log_likelihood,
    crf_log_norm,
    crf_marginals,
    detect_scheme,
    potentials_mask,
)

numpy = keras.ops.convert_to_numpy

TAGS = {
    "BIO": ["O", "B-A", "I-A", "B-B", "I-B"],
    "IOB1": ["O", "B-A", "I-A", "B-B", "I-B"],
    "BIOES": ["O", "B-A", "I-A", "E-A", "S-A"],
}
# right padding, a hole in the middle, a single real step
MASK = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 1, 1], [0, 0, 1, 0, 0]], bool)


def test_allowed_transitions_by_hand():
    """The BIO matrix of one type, written out (rows: from O, B, I, START)."""
    m = allowed_transitions(["O", "B-X", "I-X"], "BIO")
    expected = np.array(
        [
            # O  B  I  START END
            [1, 1, 0, 0, 1],  # O
            [1, 1, 1, 0, 1],  # B-X
            [1, 1, 1, 0, 1],  # I-X
            [1, 1, 0, 0, 0],  # START
            [0, 0, 0, 0, 0],  # END
        ],
        bool,
    )
    np.testing.assert_array_equal(m, expected)
    m = allowed_transitions(["O", "B-X", "I-X", "E-X", "S-X", "B-Y"], "BIOUL".replace("UL", "ES"))
    assert not m[1, 0] and m[1, 2] and m[1, 3] and not m[1, 4]  # B-X: only I-X, E-X
    assert m[3, 0] and m[3, 5] and m[4, 4] and not m[3, 2]  # E-X: O, B-Y, S; not I
    assert m[6, 4] and not m[6, 2] and not m[1, 7] and m[3, 7]  # START->S, B-X-/>END
    m = allowed_transitions(["O", "B-X", "I-X", "I-Y"], "IOB1")
    assert m[0, 2] and m[4, 2] and not m[0, 1] and m[2, 1] and not m[3, 1]
    # BIOUL spells E and S as L and U
    np.testing.assert_array_equal(
        allowed_transitions(["O", "B-X", "I-X", "L-X", "U-X"], "BIOUL"),
        allowed_transitions(["O", "B-X", "I-X", "E-X", "S-X"], "BIOES"),
    )


def allowed_path(allowed, path):
    k = len(allowed) - 2
    steps = [k] + list(path) + [k + 1]
    return all(allowed[a, b] for a, b in itertools.pairwise(steps))


def make_crf(rng, allowed, features=4):
    layer = CRF(len(allowed) - 2, allowed_transitions=allowed)
    layer.build((None, None, features))
    for w in layer.weights:
        w.assign(rng.normal(0, 1.0, w.shape).astype(w.dtype))
    return layer


def enumerate_paths(layer, x, mask, allowed):
    """log Z, best path and marginals over the allowed paths only, with NumPy."""
    w = {v.path.split("/")[-1]: np.asarray(v.numpy(), np.float64) for v in layer.weights}
    e_all = x @ w["kernel"] + w["bias"]
    k = layer.num_tags
    out = []
    for row in range(len(x)):
        steps = np.flatnonzero(mask[row])
        e = e_all[row, steps]
        paths = [
            p for p in itertools.product(range(k), repeat=len(steps)) if allowed_path(allowed, p)
        ]
        scores = np.array(
            [
                w["start_transitions"][p[0]]
                + w["end_transitions"][p[-1]]
                + sum(e[t, y] for t, y in enumerate(p))
                + sum(w["transitions"][a, b] for a, b in itertools.pairwise(p))
                for p in paths
            ]
        )
        log_z = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
        marginals = np.zeros((x.shape[1], k))
        for p, s in zip(paths, scores):
            marginals[steps, list(p)] += np.exp(s - log_z)
        best = np.zeros(x.shape[1], int)
        best[steps] = paths[int(np.argmax(scores))]
        out.append((log_z, best, marginals))
    return out


@pytest.mark.parametrize("scheme", ["BIO", "IOB1", "BIOES"])
def test_constrained_crf_matches_brute_force_over_allowed_paths(scheme):
    rng = np.random.default_rng(10)
    allowed = allowed_transitions(TAGS[scheme], scheme)
    layer = make_crf(rng, allowed)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    psi = layer(x, mask=MASK)
    log_z = numpy(crf_log_norm(psi))  # the mask travels in the potentials
    tags = numpy(crf_decode(psi)[0])
    marginals = numpy(crf_marginals(psi))
    for row, (ref_z, ref_best, ref_marginals) in enumerate(
        enumerate_paths(layer, x, MASK, allowed)
    ):
        np.testing.assert_allclose(log_z[row], ref_z, rtol=1e-5)
        np.testing.assert_array_equal(tags[row], ref_best)
        np.testing.assert_allclose(marginals[row], ref_marginals, atol=1e-5)

    # decode-only: the same weights without constraints, constrained at decoding
    free = CRF(layer.num_tags)
    free.build((None, None, 4))
    for source, target in zip(layer.weights, free.weights):
        target.assign(source)
    free_psi = free(x, mask=MASK)
    np.testing.assert_array_equal(numpy(crf_decode(free_psi, allowed_transitions=allowed)[0]), tags)
    np.testing.assert_array_equal(numpy(free.decode(free_psi, MASK, allowed)[0]), tags)


@pytest.mark.parametrize("scheme", ["BIO", "IOB1", "BIOES"])
def test_constrained_decoding_never_takes_a_forbidden_transition(scheme):
    """Property test: random weights and inputs, strongly biased towards forbidden
    transitions, and every decoded path is still allowed."""
    allowed = allowed_transitions(TAGS[scheme], scheme)
    k = len(TAGS[scheme])
    for seed in range(5):
        rng = np.random.default_rng(seed)
        layer = make_crf(rng, allowed)
        # forbidden transitions score highest without the constraints
        layer.transitions.assign(np.where(allowed[:k, :k], -3.0, 3.0).astype("float32"))
        layer.start_transitions.assign(np.where(allowed[k, :k], -3.0, 3.0).astype("float32"))
        x = rng.normal(0, 3, size=(16, 9, 4)).astype("float32")
        lengths = rng.integers(1, 10, 16)
        mask = np.arange(9)[None] < lengths[:, None]
        tags = numpy(crf_decode(layer(x, mask=mask))[0])
        for row, n in zip(tags, lengths):
            assert allowed_path(allowed, row[:n]), (seed, row[:n])
        free = numpy(crf_decode(layer(x, mask=mask), allowed_transitions=None)[0])
        assert np.array_equal(free, tags)  # already constrained: decoding agrees


def tagger_model(num_tags=4):
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(inputs)
    x = keras.layers.Bidirectional(
        keras.layers.RNN(keras.layers.LSTMCell(6), return_sequences=True)
    )(x)
    model = keras.Model(inputs, CRF(num_tags)(x))
    model.compile("adam", CRFLoss(), metrics=[CRFAccuracy()])
    return model


@pytest.mark.large
def test_keras_mask_loss_and_decoding_equal_each_sequence_alone():
    """Embedding(mask_zero=True) -> Bidirectional(RNN) -> CRF: labels padded with 0
    (not -1), no sample weights; the loss and the Viterbi paths are those of each
    sequence cut to its length."""
    keras.utils.set_random_seed(0)
    model = tagger_model()
    rng = np.random.default_rng(11)
    lengths = [6, 3, 1, 4]
    words = np.zeros((4, 6), "int32")
    tags = np.zeros((4, 6), "int32")
    for i, n in enumerate(lengths):
        words[i, :n] = rng.integers(1, 20, n)
        tags[i, :n] = rng.integers(0, 4, n)
    alone_losses, alone_paths = [], []
    for i, n in enumerate(lengths):
        psi = model(words[i : i + 1, :n])
        alone_losses.append(float(numpy(-crf_log_likelihood(psi, tags[i : i + 1, :n]))[0]))
        alone_paths.append(numpy(crf_decode(psi)[0])[0])
    psi = model(words)
    np.testing.assert_array_equal(numpy(potentials_mask(psi)), words > 0)
    loss = float(numpy(CRFLoss()(tags, psi)))
    np.testing.assert_allclose(loss, np.mean(alone_losses), rtol=1e-5)
    np.testing.assert_allclose(
        model.evaluate(words, tags, batch_size=4, verbose=0)[0], np.mean(alone_losses), rtol=1e-5
    )
    padded = numpy(crf_decode(psi)[0])
    for i, n in enumerate(lengths):
        np.testing.assert_array_equal(padded[i, :n], alone_paths[i])
        assert np.all(padded[i, n:] == 0)
    # explicit masks and -1 labels still work, and agree
    np.testing.assert_allclose(
        float(
            numpy(
                CRFLoss()(
                    np.where(words > 0, tags, -1), psi, sample_weight=(words > 0).astype("float32")
                )
            )
        ),
        loss,
        rtol=1e-6,
    )
    metric = CRFAccuracy()
    metric.update_state(tags, psi)
    decoded = np.concatenate([p for p in alone_paths])
    gold = np.concatenate([tags[i, :n] for i, n in enumerate(lengths)])
    np.testing.assert_allclose(float(numpy(metric.result())), (decoded == gold).mean(), rtol=1e-6)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="tag 'NN' fits no BIO tag"):
        allowed_transitions(["O", "NN"], "BIO")
    with pytest.raises(ValueError, match="unknown tag scheme 'BILOU2'"):
        allowed_transitions(["O"], "BILOU2")
    with pytest.raises(ValueError, match=r"I-PER after O is not allowed in BIO.*IOB1"):
        check_tags([["O", "B-LOC"], ["O", "I-PER", "I-PER"]], "BIO", "train.txt")
    with pytest.raises(ValueError, match=r"shape \(num_tags \+ 2, num_tags \+ 2\) = \(5, 5\)"):
        CRF(3, allowed_transitions=np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="boolean matrix"):
        CRF(1, allowed_transitions=np.full((3, 3), 0.5))


def test_config_round_trip_keeps_the_constraints():
    allowed = allowed_transitions(TAGS["BIOES"], "BIOES")
    layer = CRF(5, allowed_transitions=allowed, name="c")
    clone = CRF.from_config(layer.get_config())
    np.testing.assert_array_equal(clone.allowed_transitions, allowed)
    assert clone.get_config() == layer.get_config()


def test_scheme_conversions_and_detection():
    bio = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"], ["B-ORG"], ["O", "O"]]
    bioes = [convert_tags(s, "BIOES") for s in bio]
    assert bioes[0] == ["B-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC"]
    assert bioes[1] == ["S-ORG"]
    assert [convert_tags(s, "BIO") for s in bioes] == bio
    iob1 = [convert_tags(s, "IOB1") for s in bio]
    assert iob1[0] == ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC"]
    assert [convert_tags(s, "BIO") for s in iob1] == bio
    assert detect_scheme(bio) == "BIO" and detect_scheme(iob1) == "IOB1"
    assert detect_scheme(bioes) == "BIOES" and detect_scheme([["NN", "VB"]]) is None
