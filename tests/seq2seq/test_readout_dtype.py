"""Seq2Seq.generate(readout_dtype=...): the readout matmul on rounded operands, against
NumPy with ml_dtypes' rounding; compiled and uncompiled decoding agree; errors."""

import keras
import ml_dtypes
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0], [4, 5, 6, 7, 8]], "int32")
ROUNDED = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
EPSILON = {"bfloat16": 2.0**-7, "float16": 2.0**-10}  # one unit in the last place at 1


def np_(x):
    return ops.convert_to_numpy(x)


def rounded(x, dtype):
    return np.asarray(x, "float32").astype(ROUNDED[dtype]).astype("float64")


def model(**kwargs):
    return Seq2Seq(Seq2SeqBackbone(12, 10, embedding_dim=5, units=6), **kwargs)


@pytest.mark.parametrize("dtype", sorted(ROUNDED))
@pytest.mark.parametrize("tied", [False, True], ids=["readout", "tied"])
def test_readout_rounds_its_operands(dtype, tied):
    if tied:
        cell = kerasrnn.AttentionCell(
            kerasrnn.GRUCell(6),
            kerasrnn.BahdanauAttention(4),
            projection=kerasrnn.LuongProjection(5),
        )
        seq2seq = Seq2Seq(
            Seq2SeqBackbone(12, 10, decoder_cell=cell, embedding_dim=5, tie_embeddings=True)
        )
    else:
        seq2seq = model()
    seq2seq.build()
    rng = np.random.default_rng(0)
    width = seq2seq.backbone.decoder.cell.output_size
    outputs = rng.normal(size=(4, width)).astype("float32")
    if tied:
        kernel, bias = np_(seq2seq.target_embedding.embeddings).T, seq2seq.readout_bias
    else:
        kernel, bias = np_(seq2seq.readout.kernel), seq2seq.readout.bias
    bias.assign(rng.normal(size=10).astype("float32"))
    logits = np_(seq2seq._decoding_readout(dtype)(outputs))
    # round(round(o) round(W)) + b, the sum taken in float64 and rounded once: the
    # backends sum in float32 first, so allow one unit in the last place of `dtype`
    products = rounded(outputs, dtype) @ rounded(kernel, dtype)
    expected = rounded(products, dtype) + np_(bias)
    ulp = np.abs(products) * EPSILON[dtype]
    assert logits.dtype == np.float32
    assert np.all(np.abs(logits - expected) <= ulp + 1e-6)
    exact = np_(seq2seq._decoding_readout("float32")(outputs))
    np.testing.assert_allclose(
        exact, outputs.astype("float64") @ kernel + np_(bias), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("dtype", sorted(ROUNDED))
def test_operands_are_rounded_before_they_are_multiplied(dtype):
    # 1 + 2^-12 is 1 in both half precisions: `width` products of 1 sum to exactly
    # `width`, where float32 gives width (1 + 2^-12)^2
    seq2seq = model()
    seq2seq.build()
    width = seq2seq.backbone.decoder.cell.output_size
    one_and_a_bit = 1 + 2.0**-12
    seq2seq.readout.kernel.assign(np.full((width, 10), one_and_a_bit, "float32"))
    seq2seq.readout.bias.assign(np.full(10, 0.5, "float32"))
    outputs = np.full((2, width), one_and_a_bit, "float32")
    np.testing.assert_array_equal(np_(seq2seq._decoding_readout(dtype)(outputs)), width + 0.5)
    np.testing.assert_allclose(
        np_(seq2seq._decoding_readout("float32")(outputs)),
        width * one_and_a_bit**2 + 0.5,
        rtol=1e-6,
    )


@pytest.mark.large
def test_beam_search_with_a_bfloat16_readout():
    # (greedy search and sampling take the same readout function, tested above)
    seq2seq = model()
    beam = kerasrnn.decoding.BeamSearch(3)
    options = dict(max_length=6, return_alignments=False)
    exact = seq2seq.generate(SOURCE, beam, **options)
    fast = seq2seq.generate(SOURCE, beam, readout_dtype="bfloat16", **options)
    uncompiled = seq2seq.generate(
        SOURCE, beam, readout_dtype="bfloat16", jit_compile=False, **options
    )
    # the compiled decoder is keyed by the dtype: it is not the float32 one reused
    np.testing.assert_array_equal(np_(fast.tokens), np_(uncompiled.tokens))
    np.testing.assert_allclose(np_(fast.scores), np_(uncompiled.scores), atol=1e-6)
    difference = np.abs(np_(fast.scores) - np_(exact.scores))
    assert 0 < difference.max() < 0.05


def test_bad_readout_dtype():
    seq2seq = model()
    with pytest.raises(ValueError, match=r"`readout_dtype` must be one of .*'int8'"):
        seq2seq.generate(SOURCE, readout_dtype="int8")
    with pytest.raises(ValueError, match="`readout_dtype`"):
        seq2seq.step_fn(seq2seq.encode(SOURCE), readout_dtype=keras.config.floatx)
