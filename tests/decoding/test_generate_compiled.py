"""`Seq2Seq.generate` compiled once per (strategy, settings, source shape): the compiled
decoder gives the uncompiled loop's results, and a second call of the same shape
reuses it without tracing again."""

import functools

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

COMPILES = keras.backend.backend() in ("tensorflow", "jax")
CASES = {  # generate's arguments
    "greedy": dict(strategy="greedy"),
    "beam": dict(strategy=decoding.BeamSearch(3)),
    "beam, n_best, ratio, gnmt": dict(
        strategy=decoding.BeamSearch(
            3,
            n_best=2,
            scorer=decoding.Scorer("gnmt"),
            constraints=decoding.Constraints(max_length_ratio=1.5),
        )
    ),
    "beam, constraints": dict(
        strategy=decoding.BeamSearch(
            2, constraints=decoding.Constraints(min_length=2, block_ngram_repeat=2)
        ),
        return_alignments=False,
    ),
}


def np_(x):
    return None if x is None else keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1)
    return Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=7)


def sources(batch=4, length=6, seed=0):
    ids = np.random.default_rng(seed).integers(4, 40, (batch, length)).astype("int32")
    ids[1, length - 2 :] = 0  # padded rows: the mask must reach the compiled encoder
    ids[2, 2:] = 0
    return ids


def assert_same(eager, compiled):
    assert (compiled.alignments is None) == (eager.alignments is None)
    np.testing.assert_array_equal(np_(compiled.tokens), np_(eager.tokens))
    np.testing.assert_array_equal(np_(compiled.lengths), np_(eager.lengths))
    np.testing.assert_allclose(np_(compiled.scores), np_(eager.scores), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(compiled.log_probs), np_(eager.log_probs), rtol=1e-5, atol=1e-6)
    if eager.alignments is not None:
        np.testing.assert_allclose(np_(compiled.alignments), np_(eager.alignments), atol=1e-6)


@pytest.mark.large
@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_generate_gives_the_uncompiled_results(model, case):
    ids = sources()
    eager = model.generate(ids, jit_compile=False, **CASES[case])
    compiled = model.generate(ids, **CASES[case])
    assert_same(eager, compiled)
    assert np_(eager.tokens).shape[:2] == (4, decoding.get(CASES[case]["strategy"]).n_best)


@pytest.mark.large
@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_xla_decoder_gives_the_uncompiled_results(model):
    """jit_compile=True: XLA on TensorFlow (jax.jit either way on JAX)."""
    case = CASES["beam, n_best, ratio, gnmt"]
    ids = sources()
    assert_same(
        model.generate(ids, jit_compile=False, **case),
        model.generate(ids, jit_compile=True, **case),
    )


@pytest.mark.large
@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_one_trace_per_shape_and_options():
    keras.utils.set_random_seed(2)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=6)
    ids = sources()
    first = model.generate(ids, decoding.BeamSearch(2))
    cache = model._compiled_generate
    assert cache.traces == 1 and len(cache.functions) == 1
    # the same shape and options (another object with the same config), other ids: the
    # compiled decoder is reused
    again = model.generate(sources(seed=5), decoding.BeamSearch(beam_size=2))
    assert cache.traces == 1
    assert not np.array_equal(np_(first.tokens), np_(again.tokens))
    # another source length, another beam size, another strategy: one trace each
    model.generate(sources(length=5), decoding.BeamSearch(2))
    model.generate(ids, decoding.BeamSearch(3))
    model.generate(ids, "greedy")
    assert cache.traces == 4 and len(cache.functions) == 4
    model.generate(ids, decoding.GreedySearch())
    assert cache.traces == 4


@pytest.mark.large
@pytest.mark.skipif(not COMPILES, reason="generate compiles on tensorflow and jax")
def test_compiled_decoder_reads_the_current_weights():
    """Weights set after the first compile are used (not frozen into the function)."""
    keras.utils.set_random_seed(3)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=6)
    ids = sources()
    before = model.generate(ids, decoding.BeamSearch(2))
    rng = np.random.default_rng(4)
    model.set_weights([rng.normal(0, 1, w.shape).astype(w.dtype) for w in model.get_weights()])
    after = model.generate(ids, decoding.BeamSearch(2))
    assert model._compiled_generate.traces == 1
    assert_same(model.generate(ids, decoding.BeamSearch(2), jit_compile=False), after)
    assert not np.allclose(np_(before.scores), np_(after.scores))


@pytest.mark.large
def test_jit_compile_is_checked(model):
    with pytest.raises(ValueError, match="jit_compile"):
        model.generate(sources(), jit_compile="yes")
    with pytest.raises(ValueError, match="RandomSampling on the"):
        model.generate(sources(), "sample", jit_compile=True)
    if not COMPILES:
        with pytest.raises(ValueError, match="backend runs uncompiled"):
            model.generate(sources(), "greedy", jit_compile=True)
    else:  # sampling runs as called, also with "auto"
        model.generate(sources(), decoding.RandomSampling(seed=1))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF's")
def test_nested_in_an_outer_tf_function_with_unknown_shape(model):
    """The translator's path: generate inside a tf.function over (None, None) ids."""
    import tensorflow as tf

    outer = tf.function(
        lambda ids: tuple(model.generate(ids, decoding.BeamSearch(2), return_alignments=False)),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
        autograph=False,
    )
    for ids in (sources(), sources(batch=3, length=5, seed=1)):
        eager = model.generate(
            ids, decoding.BeamSearch(2), return_alignments=False, jit_compile=False
        )
        compiled = tuple(outer(ids))
        np.testing.assert_array_equal(np_(compiled[0]), np_(eager.tokens))
        np.testing.assert_allclose(np_(compiled[2]), np_(eager.scores), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TF's retracing warning")
def test_new_option_sets_trace_once_each_without_the_retracing_warning(caplog):
    """Each strategy config has its own compiled function, traced once: trying option
    set after option set never retraces one function (TensorFlow's warning)."""
    import logging

    keras.utils.set_random_seed(2)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=5)
    ids = sources()
    # greedy search compiles in a fraction of beam search's time; six option sets are
    # one more than TensorFlow's warning threshold
    with caplog.at_level(logging.WARNING):
        for min_length in range(1, 7):
            rules = decoding.Constraints(min_length=min_length)
            model.generate(ids, decoding.GreedySearch(constraints=rules))
    assert model._compiled_generate.traces == 6
    assert "retracing" not in caplog.text


@pytest.mark.large
def test_compile_sets_the_default_strategy_and_saves_it(tmp_path):
    keras.utils.set_random_seed(4)
    model = Seq2Seq(Seq2SeqBackbone(40, 30, embedding_dim=8, units=12), max_target_length=5)
    ids = sources()
    assert type(model.sampler) is decoding.GreedySearch
    beam = decoding.BeamSearch(3, n_best=2, scorer=decoding.Scorer("gnmt", 0.8))
    model.compile(sampler=beam)
    # uncompiled (XLA compiles would be most of this test's time, and tell nothing here)
    generate = functools.partial(model.generate, jit_compile=False)
    assert_same(generate(ids, beam), generate(ids))
    target = ids % 30  # target ids in [0, 30)
    model.fit({"source": ids, "target_in": target[:, :4]}, target[:, 1:5], epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.sampler.get_config() == beam.get_config()
    assert_same(generate(ids), loaded.generate(ids, jit_compile=False))
    with pytest.raises(ValueError, match="Unknown decoding strategy 'topk'"):
        model.compile(sampler="topk")


def test_token_ids_as_strings_or_ragged_lists_fail_in_one_line(model):
    # strings are text, which a task without a preprocessor does not take
    with pytest.raises(ValueError, match="has no preprocessor, so it takes token ids, not text"):
        model.generate(np.array([["5", "6"]]))
    with pytest.raises(ValueError, match="has no preprocessor, so it takes token ids, not text"):
        model.generate([["a", "b"]])
    # ids mixed with strings are neither
    with pytest.raises(TypeError, match="holds strings.*integer token ids"):
        model.generate(np.array([[5, "6"]], dtype=object))
    with pytest.raises(TypeError, match="holds strings"):
        model.generate([[5, "a"]])
    with pytest.raises(
        ValueError,
        match=r"ragged list \(rows of lengths \[1, 3\]\).*"
        r"pad_sequences",
    ):
        model.generate([[5, 6, 7], [8]])


@pytest.mark.large
def test_the_coverage_penalty_gets_alignments_even_when_not_returned(model):
    """A Seq2Seq user never wrote a step function: the coverage penalty asks the
    decoder for its alignments itself, and they are dropped from the result."""
    # 3 steps of near-uniform attention over 6 positions cover none of them fully
    # uncompiled: the compiled decoder runs the same Python (test_compiled_generate_...)
    covered = decoding.BeamSearch(2, scorer=decoding.Scorer(coverage_penalty_weight=1.0))
    options = dict(max_length=3, jit_compile=False)
    without = model.generate(sources(), covered, return_alignments=False, **options)
    with_them = model.generate(sources(), covered, **options)
    assert without.alignments is None and with_them.alignments is not None
    np.testing.assert_allclose(np_(without.scores), np_(with_them.scores), rtol=1e-5)
    plain = model.generate(sources(), decoding.BeamSearch(2), **options)
    assert not np.allclose(np_(plain.scores), np_(with_them.scores))
