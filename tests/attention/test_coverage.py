"""Coverage attention (See et al. 2017) and its loss against NumPy."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.attention import CoverageLoss, coverage_loss

B, TK, DK, DQ, UNITS, STEPS = 3, 6, 5, 4, 7, 5


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def _data():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(B, TK, DK)).astype("float32")
    mask = np.ones((B, TK), bool)
    mask[2, 4:] = False
    queries = rng.normal(size=(STEPS, B, DQ)).astype("float32")
    return memory, mask, queries


def test_coverage_attention_matches_numpy_over_steps():
    memory, mask, queries = _data()
    layer = kerasrnn.BahdanauAttention(UNITS, coverage=True)
    layer.build((None, DQ), memory.shape)
    layer.score.coverage_kernel.assign(np.linspace(-2, 2, UNITS)[None].astype("float32"))
    w = {v.path.split("/")[-1]: _np(v) for v in layer.weights}
    prepared = layer.prepare(memory, mask=mask)
    state = layer.initial_state(prepared)
    coverage = np.zeros((B, TK))
    for query in queries:
        context, alpha, state = layer.step(query, prepared, state)
        hidden = np.tanh(
            (query @ w["query_kernel"])[:, None]
            + memory @ w["key_kernel"]
            + coverage[..., None] * w["coverage_kernel"][0]
        )
        energies = np.where(mask, (hidden @ w["attention_v"])[..., 0], -np.inf)
        expected = np.exp(energies - energies.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        np.testing.assert_allclose(_np(alpha), expected, atol=1e-5)
        coverage = coverage + expected
        np.testing.assert_allclose(_np(state), coverage, atol=1e-5)
    # the coverage changes the alignments: the same layer without it gives others
    plain = kerasrnn.BahdanauAttention(UNITS)
    plain.build((None, DQ), memory.shape)
    for name in ("query_kernel", "key_kernel", "attention_v"):
        getattr(plain.score, name).assign(getattr(layer.score, name))
    last = _np(plain.attend(queries[-1], plain.prepare(memory, mask=mask))[1])
    assert np.abs(last - _np(alpha)).max() > 1e-3


def test_coverage_in_the_decoder_is_the_running_sum_of_its_alignments():
    memory, mask, _ = _data()
    x = np.random.default_rng(1).normal(size=(B, STEPS, 3)).astype("float32")
    target_mask = np.ones((B, STEPS), bool)
    target_mask[1, 3:] = False
    for order in (kerasrnn.AttendThenRun(), kerasrnn.RunThenAttend()):
        cell = kerasrnn.AttentionCell(
            kerasrnn.GRUCell(DQ), kerasrnn.BahdanauAttention(UNITS, coverage=True), order
        )
        decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True, return_state=True)
        _, alignments, *states = decoder(x, memory, mask=target_mask, memory_mask=mask)
        np.testing.assert_allclose(_np(states[-1]), _np(alignments).sum(axis=1), atol=1e-5)
        assert tuple(states[-1].shape) == (B, TK)


def test_coverage_loss_matches_numpy():
    rng = np.random.default_rng(2)
    alignments = rng.dirichlet(np.ones(TK), size=(B, STEPS)).astype("float32")
    target_mask = np.ones((B, STEPS), bool)
    target_mask[0, 2:] = False
    expected = []
    for b in range(B):
        coverage, total, steps = np.zeros(TK), 0.0, 0
        for t in range(STEPS):
            if not target_mask[b, t]:
                continue
            total += np.minimum(alignments[b, t], coverage).sum()
            coverage += alignments[b, t]
            steps += 1
        expected.append(total / steps)
    got = _np(coverage_loss(alignments, target_mask))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    # attending a new position each step costs nothing; attending the same one does
    diagonal = np.eye(4, dtype="float32")[None]
    assert float(_np(coverage_loss(diagonal))[0]) == 0.0
    same = np.tile(np.eye(4, dtype="float32")[:1], (1, 4, 1))  # always position 0
    np.testing.assert_allclose(_np(coverage_loss(same)), [0.75])


@pytest.mark.large
def test_coverage_loss_layer_adds_to_the_training_loss():
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(12, 6, mask_zero=True)(source)
    cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(8), kerasrnn.BahdanauAttention(5, coverage=True))
    outputs, alignments = kerasrnn.AttentiveRNN(cell, return_alignments=True)(
        keras.layers.Embedding(12, 4, mask_zero=True)(target), memory
    )
    outputs = CoverageLoss(weight=2.0)(alignments, outputs)
    logits = keras.layers.Dense(12)(outputs)
    model = keras.Model([source, target], logits)
    src = np.array([[3, 4, 5, 0], [6, 7, 8, 9]])
    tgt = np.array([[1, 2, 3], [4, 5, 0]])
    model([src, tgt])
    assert len(model.losses) == 1 and float(_np(model.losses[0])) > 0
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit([src, tgt], tgt, epochs=1, verbose=0)
    config = CoverageLoss(weight=0.5).get_config()
    assert CoverageLoss.from_config(config).weight == 0.5


def test_coverage_needs_an_additive_score():
    with pytest.raises(ValueError, match="`coverage` does not apply to score='dot'"):
        kerasrnn.Attention("dot", coverage=True)
    with pytest.raises(ValueError, match="`alignments`"):
        coverage_loss(np.ones((2, 3), "float32"))
