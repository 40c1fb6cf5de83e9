"""The SavedModel signatures of a `kerasrnn.seq2seq.Seq2Seq` with its preprocessor:
texts in, translations out (the task's own `decode_texts`, one signature per decoding
strategy), and the streaming pair, the encoder and one decoder step, for a decoding
loop the caller runs."""

import keras
import numpy as np

from kerasrnn import decoding


def _settings(task, strategy, max_length, readout_dtype):
    # the SavedModel holds the translator alone: no language model is fused in
    return dict(
        strategy=decoding.get(strategy),
        max_length=max_length or task.max_target_length,
        readout_dtype=readout_dtype,
        jit_compile="auto",
        fusion=None,
    )


def translator_endpoints(
    task, strategy=None, n_best_strategy=None, max_length=None, readout_dtype="float32"
):
    """The signatures (plain TensorFlow: ``tf.saved_model.load(path)`` in a process
    without kerasrnn or Keras), each `Seq2Seq.decode_texts` with its strategy:

    * ``serving_default`` / ``translate``: ``text`` string `(batch,)` -> ``translation``
      string `(batch,)` and ``score`` float32 `(batch,)`, the best hypothesis of
      `strategy` (default the task's sampler);
    * ``translate_n_best``: ``text`` -> ``translations`` string `(batch, n)` and
      ``scores`` float32 `(batch, n)`, best first: the `n_best` hypotheses of
      `n_best_strategy` (default ``BeamSearch(4)``, all 4 beams);
    * streaming, a decoder loop run by the caller: ``encode``: ``text`` -> ``memory_<i>``
      (the attention memory: keys, values, mask), ``state_<i>`` (the decoder's initial
      states) and ``lengths``; ``decoder_step``: ``token`` int32 `(batch,)`, the
      ``state_<i>`` and the ``memory_<i>`` -> ``logits`` `(batch, target vocabulary)`
      and the new ``state_<i>`` (start with [START], id 2). With copy attention (a
      `CopyReadout`) ``encode`` also returns ``source_ids`` (padded to
      `max_source_length`), ``decoder_step`` takes them last and its ``logits`` are
      log-probabilities over the extended vocabulary.

    `max_length` and `readout_dtype` are `generate`'s (default the task's
    `max_target_length`, float32).
    """
    import tensorflow as tf

    single = _settings(
        task, task.sampler if strategy is None else strategy, max_length, readout_dtype
    )
    several = _settings(
        task,
        decoding.BeamSearch(4) if n_best_strategy is None else n_best_strategy,
        max_length,
        readout_dtype,
    )

    def translate_best(text):
        strings, scores = task.decode_texts(text, single)
        return {"translation": strings[:, 0], "score": scores[:, 0]}

    def translate_n(text):
        strings, scores = task.decode_texts(text, several)
        return {"translations": strings, "scores": scores}

    signature = [tf.TensorSpec([None], tf.string, name="text")]
    encode, decoder_step, step_signature = _streaming_functions(task)
    return {
        "serving_default": (translate_best, signature),
        "translate": (translate_best, signature),
        "translate_n_best": (translate_n, signature),
        "encode": (encode, signature),
        "decoder_step": (decoder_step, step_signature),
    }


def _streaming_functions(task):
    """The ``encode`` and ``decoder_step`` functions of `translator_endpoints` and the
    latter's input signature (shapes from encoding one source)."""
    import tensorflow as tf

    from kerasrnn.seq2seq.backbone import Encoded

    preprocessor, width = task.preprocessor, task.max_source_length
    template = task.encode(np.ones((1, 1), "int32"))
    memory = keras.tree.flatten(template.memory)
    states = keras.tree.flatten(template.states)
    copies = task.copy_readout is not None

    def encode(text):
        ids, _, _ = preprocessor.encode(text, width, static_width=copies)
        encoded = task.encode(ids)
        return {
            **({"source_ids": ids} if copies else {}),
            **{f"memory_{i}": m for i, m in enumerate(keras.tree.flatten(encoded.memory))},
            **{f"state_{i}": s for i, s in enumerate(keras.tree.flatten(encoded.states))},
            "lengths": encoded.lengths,
        }

    def decoder_step(token, *flat):
        source = flat[-1] if copies else None
        flat = flat[:-1] if copies else flat
        memory_now = keras.tree.pack_sequence_as(template.memory, list(flat[len(states) :]))
        step = task.step_fn(
            Encoded(memory_now, None, None, source) if copies else memory_now,
            return_alignments=False,
        )
        logits, new = step(token, keras.tree.pack_sequence_as(template.states, flat[: len(states)]))
        return {
            "logits": logits,
            **{f"state_{i}": s for i, s in enumerate(keras.tree.flatten(new))},
        }

    signature = (
        [tf.TensorSpec([None], tf.int32, name="token")]
        + [
            tf.TensorSpec([None, *s.shape[1:]], tf.as_dtype(s.dtype), name=f"state_{i}")
            for i, s in enumerate(states)
        ]
        + [  # the source length (axis 1) varies (not with copy attention)
            tf.TensorSpec(
                [None, width if copies else None, *m.shape[2:]],
                tf.as_dtype(m.dtype),
                name=f"memory_{i}",
            )
            for i, m in enumerate(memory)
        ]
        + ([tf.TensorSpec([None, width], tf.int32, name="source_ids")] if copies else [])
    )
    return encode, decoder_step, signature
