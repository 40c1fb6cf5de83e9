"""n-best (list) Viterbi against brute-force enumeration of every tag path: random
potentials, masks with holes and left padding, tag-scheme constraints, ties."""

import itertools

import keras
import numpy as np
import pytest

from kerasrnn.layers import allowed_transitions, crf_decode, crf_decode_n_best

numpy = keras.ops.convert_to_numpy
K = 3
# right padding, a hole in the middle, left padding, one real step, no real step
MASK = np.array(
    [[1, 1, 1, 1, 0], [1, 1, 0, 1, 1], [0, 1, 1, 1, 1], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0]], bool
)


def brute_force(psi, mask, allowed=None):
    """Every path of every row, sorted best first (ties: the tags read backwards,
    lexicographically): [(score, tags over all steps, 0 on padding), ...] per row. A
    path's score sums psi_t(y_t', y_t) over the real steps, y_t' = 0 before the first."""
    rows = []
    for row in range(len(psi)):
        steps = np.flatnonzero(mask[row])
        found = []
        for path in itertools.product(range(K), repeat=len(steps)):
            if allowed is not None and path:
                pairs = zip((K,) + path, path + (K + 1,))
                if not all(allowed[a, b] for a, b in pairs):
                    continue
            score, previous = np.float32(0), 0
            for t, y in zip(steps, path):
                score, previous = np.float32(score + psi[row, t, previous, y]), y
            tags = np.zeros(psi.shape[1], int)
            tags[steps] = path
            found.append((float(score), tags))
        found.sort(key=lambda p: (-p[0], tuple(p[1][steps][::-1])))
        rows.append(found)
    return rows


def check(psi, mask, k, allowed=None, exact=True, given_mask=True):
    tags, scores = crf_decode_n_best(psi, k, mask if given_mask else None, allowed)
    tags, scores = numpy(tags), numpy(scores)
    assert tags.shape == (len(psi), k, psi.shape[1]) and scores.shape == (len(psi), k)
    for row, paths in enumerate(brute_force(psi, mask, allowed)):
        n = min(k, len(paths))
        expected = np.array([s for s, _ in paths[:n]])
        np.testing.assert_allclose(scores[row, :n], expected, rtol=1e-6, atol=1e-5)
        if exact:
            np.testing.assert_array_equal(tags[row, :n], np.array([p for _, p in paths[:n]]))
        else:  # continuous scores: no ties, the paths themselves must agree
            for rank in range(n):
                assert any((tags[row, rank] == p).all() for _, p in paths[: n + 1])
        # fewer allowed paths than k: the ranks past them are -inf, tags 0
        assert np.all(np.isneginf(scores[row, n:])) and not tags[row, n:].any()


def test_random_potentials_with_masks():
    psi = np.random.default_rng(0).normal(size=(len(MASK), 5, K, K)).astype("float32")
    check(psi, MASK, 7, exact=False)


def test_ties_are_broken_deterministically():
    # small integers: many paths of equal score, summed exactly
    psi = np.random.default_rng(1).integers(-1, 2, size=(len(MASK), 5, K, K)).astype("float32")
    check(psi, MASK, 12)


def test_constraints_and_fewer_paths_than_k():
    allowed = allowed_transitions(["B-PER", "I-PER", "O"], "BIO")
    psi = np.random.default_rng(2).normal(size=(len(MASK), 5, K, K)).astype("float32")
    # one real step: only B-PER and O may begin and end a sentence, so 2 < k paths
    check(psi, MASK, 10, allowed, exact=False)


def test_one_best_is_crf_decode():
    psi = np.random.default_rng(3).normal(size=(len(MASK), 5, K, K)).astype("float32")
    allowed = allowed_transitions(["B-PER", "I-PER", "O"], "BIO")
    best, score = crf_decode(psi, MASK, allowed)
    tags, scores = crf_decode(psi, MASK, allowed, n_best=1)
    np.testing.assert_array_equal(numpy(tags)[:, 0], numpy(best))
    np.testing.assert_allclose(numpy(scores)[:, 0], numpy(score), rtol=1e-6)


def test_mask_carried_by_crf_potentials():
    from kerasrnn.layers import CRF

    layer = CRF(K)
    layer.build((None, None, 5))
    rng = np.random.default_rng(4)
    for weight in layer.weights:
        weight.assign(rng.normal(size=weight.shape).astype(weight.dtype))
    x = rng.normal(size=(len(MASK), 5, 5)).astype("float32")
    # the padded steps' identity potentials tell the mask; brute force gets it directly
    check(numpy(layer(x, mask=MASK)), MASK, 5, exact=False, given_mask=False)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "3"])
def test_bad_n_best(bad):
    with pytest.raises(ValueError, match="n_best"):
        crf_decode_n_best(np.zeros((1, 2, K, K), "float32"), bad)
