"""Replace unknown-word outputs by the source word they attended to most
(OpenNMT's `-replace_unk`, Luong et al. 2015 "Addressing the rare word problem")."""

import numpy as np
from keras import ops


def unk_source_positions(result, unk_id):
    """For every generated `unk_id`, the source position with the highest attention
    weight at that step; -1 everywhere else.

    Args:
        result: a `DecodeResult` with alignments (the step function must return them).
        unk_id: the id of the unknown-word token in the output vocabulary.

    Returns:
        int32 `(batch, n_best, max_length)` (keras.ops: usable inside a `tf.function`,
        a SavedModel signature or `jax.jit`).
    """
    if result.alignments is None:
        raise ValueError(
            "replace_unk needs the alignments: the step function must return "
            "(logits, states, alignments), and the DecodeResult has alignments=None."
        )
    best = ops.cast(ops.argmax(result.alignments, axis=-1), "int32")
    return ops.where(ops.equal(result.tokens, unk_id), best, -1)


def replace_unk(result, source_tokens, output_tokens=None, unk_id=1):
    """Copies the most attended source token wherever the output is the unknown token.

    Where hypothesis n of example b produced `unk_id` at step t, its token becomes
    `source_tokens[b, argmax_i alignments[b, n, t, i]]`.

    Args:
        result: a `DecodeResult` with alignments.
        source_tokens: `(batch, source_length)` source words (str) or ids, aligned with
            the attention's source axis (the encoder's input positions).
        output_tokens: `(batch, n_best, max_length)` the outputs as words (e.g. the
            target vocabulary's strings for `result.tokens`); None copies into
            `result.tokens` itself (a shared vocabulary).
        unk_id: the id of the unknown token in `result.tokens`.

    Returns:
        `output_tokens` (or the ids) with the unknown tokens replaced: a NumPy array,
        or a `tf.Tensor` when `source_tokens` is a string `tf.Tensor` (graph-safe, for
        a serving signature).

    Example:

    >>> import numpy as np, kerasrnn
    >>> result = kerasrnn.decoding.DecodeResult(
    ...     tokens=np.array([[[5, 1, 3]]]), lengths=np.array([[3]]),
    ...     scores=np.zeros((1, 1)), log_probs=np.zeros((1, 1)),
    ...     alignments=np.array([[[[.8, .1, .1], [.1, .2, .7], [.3, .3, .4]]]]))
    >>> source = np.array([["ein", "Haus", "Zwiesel"]])
    >>> words = np.array([[["a", "[UNK]", "[END]"]]])
    >>> kerasrnn.decoding.replace_unk(result, source, words, unk_id=1).tolist()
    [[['a', 'Zwiesel', '[END]']]]
    """
    positions = unk_source_positions(result, unk_id)
    if _is_tf_tensor(source_tokens) or _is_tf_tensor(output_tokens):
        import tensorflow as tf

        positions = tf.convert_to_tensor(positions)
        source = tf.convert_to_tensor(source_tokens)
        output = tf.convert_to_tensor(result.tokens if output_tokens is None else output_tokens)
        copied = tf.gather(source, tf.maximum(positions, 0), batch_dims=1)
        return tf.where(positions >= 0, tf.cast(copied, output.dtype), output)
    positions = np.asarray(ops.convert_to_numpy(positions))
    source = np.asarray(source_tokens)
    if source.ndim != 2 or source.shape[0] != positions.shape[0]:
        raise ValueError(
            f"`source_tokens` must have shape (batch={positions.shape[0]}, "
            f"source_length); got shape {source.shape}."
        )
    if output_tokens is None:
        output = np.asarray(ops.convert_to_numpy(result.tokens))
    else:
        output = np.asarray(output_tokens)
    if output.shape != positions.shape:
        raise ValueError(
            f"`output_tokens` must have the shape of result.tokens, {positions.shape}; "
            f"got {output.shape}."
        )
    batch = np.arange(source.shape[0])[:, None, None]
    copied = source[batch, np.maximum(positions, 0)]
    if output.dtype.kind in "US" or copied.dtype.kind in "US":
        output = output.astype(object)
    return np.where(positions >= 0, copied, output)


def _is_tf_tensor(value):
    return type(value).__module__.startswith("tensorflow") and hasattr(value, "dtype")
