"""Beam search's `drop_finished`: examples leave the loop as they finish, and every
result is the same as when all rows run to the end."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

END, VOCAB, UNITS, SOURCE = 3, 12, 6, 5
BATCH, BEAM = 9, 3
DYNAMIC = keras.backend.backend() != "jax"


def memory_step(memory, seen=None, seed=0):
    """A recurrent decoder reading a per-row memory `(rows, 1 + UNITS)`, as an attentive
    decoder reads its source: column 0 biases the end token, so the examples end at
    different steps; it returns alignments over SOURCE positions and offers
    `take_rows`. `seen` collects the number of rows of each call."""
    rng = np.random.default_rng(seed)
    emb, w, out, a = (
        ops.convert_to_tensor(rng.normal(size=shape).astype("float32"))
        for shape in ((VOCAB, UNITS), (UNITS, UNITS), (UNITS, VOCAB), (UNITS, SOURCE))
    )
    is_end = ops.convert_to_tensor((np.arange(VOCAB) == END).astype("float32"))

    def step(tokens, states):
        if seen is not None:
            seen.append(int(ops.shape(tokens)[0]))
        (h,) = states
        h = ops.tanh(ops.matmul(h, w) + ops.take(emb, tokens, axis=0) + memory[:, 1:])
        logits = ops.matmul(h, out) + memory[:, :1] * is_end[None, :]
        return logits, (h,), ops.softmax(ops.matmul(h, a), axis=-1)

    step.take_rows = lambda rows: memory_step(ops.take(memory, rows, axis=0), seen, seed)
    return step


def inputs(seed=1):
    rng = np.random.default_rng(seed)
    end_bias = np.linspace(-3.0, 4.0, BATCH).astype("float32")[:, None]
    memory = np.concatenate([end_bias, rng.normal(size=(BATCH, UNITS))], 1).astype("float32")
    h0 = rng.normal(size=(BATCH, UNITS)).astype("float32")
    return np.repeat(memory, BEAM, axis=0), h0


def np_(x):
    return None if x is None else ops.convert_to_numpy(x)


def assert_same(a, b):
    """The same hypotheses, and scores to float rounding (a matmul over fewer rows may
    round its last bit differently)."""
    for field in ("tokens", "lengths"):
        np.testing.assert_array_equal(np_(getattr(a, field)), np_(getattr(b, field)), err_msg=field)
    for field in ("scores", "log_probs", "alignments"):
        np.testing.assert_allclose(
            np_(getattr(a, field)), np_(getattr(b, field)), rtol=1e-6, atol=1e-7, err_msg=field
        )


OPTIONS = {  # (strategy class, its options)
    "set aside": (decoding.BeamSearch, dict()),
    "set aside, n-best 2, wu, coverage": (
        decoding.BeamSearch,
        dict(n_best=2, scorer=decoding.Scorer("wu", coverage_penalty_weight=0.3)),
    ),
    "compete": (decoding.CompetingBeamSearch, dict()),
    "compete, TFA scoring, coverage": (
        decoding.CompetingBeamSearch,
        dict(scorer=decoding.TFAScorer(0.6, coverage_penalty_weight=0.3)),
    ),
}


@pytest.mark.skipif(not DYNAMIC, reason="JAX compiles static shapes only")
@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_dropping_finished_examples_changes_no_result(case):
    memory, h0 = inputs()
    starts = np.zeros(BATCH, "int32")
    strategy, options = OPTIONS[case]
    every_row = strategy(beam_size=BEAM, drop_finished=False, **options)(
        memory_step(ops.convert_to_tensor(memory)), starts, (h0,), 12, END
    )
    seen = []
    dropping = strategy(beam_size=BEAM, drop_finished=True, **options)(
        memory_step(ops.convert_to_tensor(memory), seen), starts, (h0,), 12, END
    )
    assert_same(every_row, dropping)
    # the examples end at different steps, and the later steps ran on fewer rows
    assert len(set(np_(every_row.lengths)[:, 0].tolist())) > 3
    assert min(seen) < BATCH * BEAM and max(seen) == BATCH * BEAM


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF-only")
@pytest.mark.parametrize("batch", [None, BATCH])
def test_in_a_tf_function_of_known_or_unknown_batch_size(batch):
    import tensorflow as tf

    memory, h0 = inputs()

    def search(memory, h0, drop_finished):
        beam = decoding.BeamSearch(
            beam_size=BEAM,
            drop_finished=drop_finished,
            scorer=decoding.Scorer(coverage_penalty_weight=0.3),
        )
        return tuple(beam(memory_step(memory), tf.zeros_like(h0[:, 0], tf.int32), (h0,), 12, END))

    spec = [
        tf.TensorSpec([None if batch is None else batch * BEAM, 1 + UNITS]),
        tf.TensorSpec([batch, UNITS]),
    ]
    every_row = tf.function(lambda m, h: search(m, h, False), input_signature=spec)
    dropping = tf.function(lambda m, h: search(m, h, True), input_signature=spec)
    assert_same(
        decoding.DecodeResult(*every_row(memory, h0)), decoding.DecodeResult(*dropping(memory, h0))
    )


@pytest.mark.large
def test_seq2seq_generate_drops_finished_examples_with_the_same_results():
    keras.utils.set_random_seed(3)
    model = Seq2Seq(Seq2SeqBackbone(30, 20, embedding_dim=8, units=12), max_target_length=9)
    ids = np.random.default_rng(0).integers(4, 30, (8, 6)).astype("int32")
    ids[::3, 2:] = 0  # sources of 2, 4 and 6 tokens: with max_length_ratio=1 the
    ids[1::3, 4:] = 0  # examples end at steps 2, 4 and 6
    for jit_compile in ("auto", False):
        rules = decoding.Constraints(max_length_ratio=1.0)
        every_row = model.generate(
            ids,
            decoding.BeamSearch(3, constraints=rules, drop_finished=False),
            jit_compile=jit_compile,
        )
        default = model.generate(
            ids, decoding.BeamSearch(3, constraints=rules), jit_compile=jit_compile
        )
        assert_same(every_row, default)
    assert sorted(set(np_(every_row.lengths)[:, 0].tolist())) == [2, 4, 6]


def test_needs_a_step_function_with_take_rows_and_dynamic_shapes():
    memory, h0 = inputs()
    step = memory_step(ops.convert_to_tensor(memory))
    plain = lambda tokens, states: step(tokens, states)  # noqa: E731
    with pytest.raises(ValueError, match="take_rows"):
        decoding.BeamSearch(beam_size=BEAM, drop_finished=True)(
            plain, np.zeros(BATCH, "int32"), (h0,), 5, END
        )
    if not DYNAMIC:
        with pytest.raises(ValueError, match="pass drop_finished='auto' or False"):
            decoding.BeamSearch(beam_size=BEAM, drop_finished=True)(
                step, np.zeros(BATCH, "int32"), (h0,), 5, END
            )
