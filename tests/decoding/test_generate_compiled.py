"""`Seq2Seq.generate` compiled once per (method, options, source shape): the compiled
decoder gives the uncompiled loop's results, and a second call of the same shape
reuses it without tracing again."""
import keras
import numpy as np
import pytest

from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

pytestmark = pytest.mark.core

COMPILES = keras.backend.backend() in ("tensorflow", "jax")
CASES = {
    "greedy": dict(method="greedy"),
    "beam": dict(method="beam", beam_size=3),
    "beam, n_best, ratio, gnmt": dict(method="beam", beam_size=3, n_best=2,
                                      max_length_ratio=1.5, length_normalization="gnmt"),
    "beam, constraints": dict(method="beam", beam_size=2, min_length=2,
                              block_ngram_repeat=2, return_alignments=False),
}


def np_(x):
    return None if x is None else keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1)
    return Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=7)


def sources(batch=4, length=6, seed=0):
    ids = np.random.default_rng(seed).integers(4, 40, (batch, length)).astype("int32")
    ids[1, length - 2:] = 0  # padded rows: the mask must reach the compiled encoder
    ids[2, 2:] = 0
    return ids


def assert_same(eager, compiled):
    assert (compiled.alignments is None) == (eager.alignments is None)
    np.testing.assert_array_equal(np_(compiled.tokens), np_(eager.tokens))
    np.testing.assert_array_equal(np_(compiled.lengths), np_(eager.lengths))
    np.testing.assert_allclose(np_(compiled.scores), np_(eager.scores), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(compiled.log_probs), np_(eager.log_probs),
                               rtol=1e-5, atol=1e-6)
    if eager.alignments is not None:
        np.testing.assert_allclose(np_(compiled.alignments), np_(eager.alignments),
                                   atol=1e-6)


@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_generate_gives_the_uncompiled_results(model, case):
    ids = sources()
    eager = model.generate(ids, jit_compile=False, **CASES[case])
    compiled = model.generate(ids, **CASES[case])
    assert_same(eager, compiled)
    assert np_(eager.tokens).shape[:2] == (4, CASES[case].get("n_best", CASES[case].get(
        "beam_size", 1)))


@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_xla_decoder_gives_the_uncompiled_results(model):
    """jit_compile=True: XLA on TensorFlow (jax.jit either way on JAX)."""
    case = CASES["beam, n_best, ratio, gnmt"]
    ids = sources()
    assert_same(model.generate(ids, jit_compile=False, **case),
                model.generate(ids, jit_compile=True, **case))


@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_one_trace_per_shape_and_options():
    keras.utils.set_random_seed(2)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=6)
    ids = sources()
    first = model.generate(ids, "beam", beam_size=2)
    cache = model._compiled_generate
    assert cache.traces == 1 and len(cache.functions) == 1
    # the same shape and options, other ids: the compiled decoder is reused
    again = model.generate(sources(seed=5), "beam", beam_size=2)
    assert cache.traces == 1
    assert not np.array_equal(np_(first.tokens), np_(again.tokens))
    # another source length, another beam size, another method: one trace each
    model.generate(sources(length=5), "beam", beam_size=2)
    model.generate(ids, "beam", beam_size=3)
    model.generate(ids, "greedy")
    assert cache.traces == 4 and len(cache.functions) == 4
    model.generate(ids, "greedy")
    assert cache.traces == 4


@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_compiled_decoder_reads_the_current_weights():
    """Weights set after the first compile are used (not frozen into the function)."""
    keras.utils.set_random_seed(3)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=6)
    ids = sources()
    before = model.generate(ids, "beam", beam_size=2)
    rng = np.random.default_rng(4)
    model.set_weights([rng.normal(0, 1, w.shape).astype(w.dtype) for w in model.get_weights()])
    after = model.generate(ids, "beam", beam_size=2)
    assert model._compiled_generate.traces == 1
    assert_same(model.generate(ids, "beam", beam_size=2, jit_compile=False), after)
    assert not np.allclose(np_(before.scores), np_(after.scores))


def test_jit_compile_is_checked(model):
    with pytest.raises(ValueError, match="jit_compile"):
        model.generate(sources(), jit_compile="yes")
    with pytest.raises(ValueError, match="method='sample'"):
        model.generate(sources(), "sample", jit_compile=True)
    if not COMPILES:
        with pytest.raises(ValueError, match="backend runs uncompiled"):
            model.generate(sources(), "greedy", jit_compile=True)
    else:  # sampling runs as called, also with "auto"
        model.generate(sources(), "sample", seed=1)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF's")
def test_nested_in_an_outer_tf_function_with_unknown_shape(model):
    """The translator's path: generate inside a tf.function over (None, None) ids."""
    import tensorflow as tf

    outer = tf.function(lambda ids: tuple(model.generate(ids, "beam", beam_size=2,
                                                         return_alignments=False)),
                        input_signature=[tf.TensorSpec([None, None], tf.int32)],
                        autograph=False)
    for ids in (sources(), sources(batch=3, length=5, seed=1)):
        eager = model.generate(ids, "beam", beam_size=2, return_alignments=False,
                               jit_compile=False)
        compiled = tuple(outer(ids))
        np.testing.assert_array_equal(np_(compiled[0]), np_(eager.tokens))
        np.testing.assert_allclose(np_(compiled[2]), np_(eager.scores), rtol=1e-5, atol=1e-6)
