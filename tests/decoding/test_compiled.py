"""Every decoding feature inside a compiled graph: tf.function (with XLA) on
TensorFlow and jax.jit on JAX give the eager results."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, np_

END = 3
MODEL, OTHER = RecurrentDecoder(vocab=6, seed=0), RecurrentDecoder(vocab=6, seed=5)


def no_token_four(step, tokens, logits):
    return ops.where(ops.arange(6)[None, :] == 4, -1e9, logits)


def run_all(h, memory):
    start = ops.zeros(ops.shape(h)[:1], "int32")
    states = (h, memory)
    constraints = decoding.Constraints(
        min_length=2, block_ngram_repeat=2, logits_processors=[no_token_four]
    )
    return {
        "greedy": decoding.greedy_search(MODEL, start, states, 7, END, constraints=constraints),
        "beam": decoding.beam_search(
            MODEL,
            start,
            states,
            7,
            END,
            beam_size=3,
            constraints=constraints,
            scorer=decoding.Scorer("wu", alpha=0.8, coverage_penalty_weight=0.4),
        ),
        "compete": decoding.CompetingBeamSearch(
            beam_size=3,
            scorer=decoding.TFAScorer(0.6, coverage_penalty_weight=0.4),
        )(MODEL, start, states, 7, END),
        "ensemble": decoding.beam_search(
            decoding.Ensemble([MODEL, OTHER]),
            start,
            (states, states),
            7,
            END,
            beam_size=2,
        ),
    }


def inputs():
    return MODEL.initial_states(3, seed=9)


def assert_same(eager, compiled):
    for name in eager:
        a, b = eager[name], compiled[name]
        np.testing.assert_array_equal(np_(a.tokens), np_(b.tokens), err_msg=name)
        np.testing.assert_array_equal(np_(a.lengths), np_(b.lengths), err_msg=name)
        np.testing.assert_allclose(np_(a.scores), np_(b.scores), rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(np_(a.alignments), np_(b.alignments), atol=1e-6, err_msg=name)
    greedy = np_(eager["greedy"].tokens)
    assert (greedy[:, 0, :2] != END).all() and not (greedy == 4).any()


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF-only")
@pytest.mark.parametrize("jit_compile", [False, True])
def test_every_feature_in_tf_function_and_xla(jit_compile):
    import tensorflow as tf

    h, memory = inputs()
    spec = [tf.TensorSpec([None, 5]), tf.TensorSpec([None, 3, 5])]  # unknown batch
    compiled = tf.function(run_all, input_signature=spec, jit_compile=jit_compile)
    assert_same(run_all(h, memory), compiled(h, memory))


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="jax.jit is JAX-only")
def test_every_feature_under_jax_jit():
    import jax

    h, memory = inputs()
    assert_same(run_all(h, memory), jax.jit(run_all)(h, memory))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel is TF's")
def test_every_feature_in_a_saved_model(tmp_path):
    import tensorflow as tf

    spec = [tf.TensorSpec([None, 5]), tf.TensorSpec([None, 3, 5])]
    module = tf.Module()

    @tf.function(input_signature=spec)
    def serve(h, memory):
        out = run_all(h, memory)
        return {
            f"{name}_{field}": getattr(result, field)
            for name, result in out.items()
            for field in ("tokens", "lengths", "scores", "alignments")
        }

    module.serve = serve
    tf.saved_model.save(module, str(tmp_path / "decoder"))
    loaded = tf.saved_model.load(str(tmp_path / "decoder"))
    h, memory = inputs()
    got = loaded.serve(tf.constant(h), tf.constant(memory))
    eager = run_all(h, memory)
    for name, result in eager.items():
        np.testing.assert_array_equal(got[f"{name}_tokens"].numpy(), np_(result.tokens))
        np.testing.assert_allclose(got[f"{name}_scores"].numpy(), np_(result.scores), rtol=1e-5)
        np.testing.assert_allclose(
            got[f"{name}_alignments"].numpy(), np_(result.alignments), atol=1e-6
        )
