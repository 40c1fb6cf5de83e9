"""`CopyReadout`: copy attention, the pointer-generator readout of See, Liu & Manning
(2017), which mixes the decoder's vocabulary distribution with its attention over the
source, so a decoder can emit a source word its target vocabulary lacks."""

import keras
import numpy as np
from keras import ops

from kerasrnn.attention.coverage import coverage_loss
from kerasrnn.validation import check_int, check_number

# log p is floored at log(TINY): an id no distribution reaches (an unused extended id)
# gets a finite log-probability, so losses (label smoothing sums them all) stay finite.
TINY = 1e-30


@keras.saving.register_keras_serializable(package="kerasrnn")
class CopyReadout(keras.layers.Layer):
    """Copy attention (a pointer-generator readout; See et al. 2017): each step's
    distribution over an extended vocabulary mixes generating from the target
    vocabulary with copying a source word through the attention weights.

    .. math::

        p_{gen} &= \\sigma(w_c^\\top c_t + w_s^\\top s_t + w_x^\\top x_t + b) \\\\
        p(w) &= p_{gen} P_{vocab}(w) + (1 - p_{gen}) \\sum_{i: x_i = w} a_{t,i}

    with P_vocab = softmax(z_t) the backbone's readout, a_t the attention weights,
    c_t = sum_i a_{t,i} h_i the context, s_t the decoder output (with the default
    `AttendThenRun` decoder, [s_t; c_t]) and x_t the embedded decoder input.

    **The extended vocabulary** of an example: target ids 0 .. V-1 (V =
    `target_vocab_size`), then V + i for the source word at position i when that word
    is outside the target vocabulary (i its first position: a word occurring twice
    has one id and both attention weights). `source_to_target[s]` is the target id of
    source id s, or -1 where the target vocabulary lacks the word;
    `kerasrnn.data.copy_vocabulary_map(source_vocabulary, target_vocabulary)` builds
    it (special tokens map to their own ids, so a source [UNK] copies as [UNK]). The
    task's outputs are log-probabilities over V + Tx ids (Tx the source length);
    decoding feeds an extended id back as `unk_id` and returns it as is: the word is
    the source token at position id - V (`kerasrnn.export.TextTranslator` writes it
    back). Training targets use the same ids
    (`kerasrnn.data.copy_targets`).

    Args:
        source_to_target: int sequence, one target id (or -1) per source id; None: one
            shared vocabulary (source id s is target id s for s < V, the rest OOV).
        coverage_weight: lambda of the coverage loss (See et al.: 1.0) added in
            training: lambda * mean_t sum_i min(a_{t,i}, sum_{t' < t} a_{t',i})
            (`kerasrnn.attention.coverage.coverage_loss`); 0 for none.
        unk_id: the target id fed to the decoder after it emitted an extended id.

    Example:

    >>> import keras, numpy as np, kerasrnn
    >>> from kerasrnn.seq2seq import CopyReadout, Seq2Seq, Seq2SeqBackbone
    >>> model = Seq2Seq(Seq2SeqBackbone(20, 12, embedding_dim=8, units=8),
    ...                 copy_readout=CopyReadout(source_to_target=list(range(12)) + [-1] * 8))
    >>> source = np.array([[5, 16, 7, 0]])  # source id 16 is not a target word
    >>> log_p = model({"source": source, "target_in": np.array([[2, 4]])})
    >>> tuple(log_p.shape)  # 12 target ids + 4 source positions
    (1, 2, 16)
    >>> p = np.exp(keras.ops.convert_to_numpy(log_p))
    >>> round(float(p[0, 0, [*range(12), 13]].sum()), 4)  # 13 = 12 + position 1
    1.0
    """

    def __init__(self, source_to_target=None, coverage_weight=0.0, unk_id=1, **kwargs):
        super().__init__(**kwargs)
        if source_to_target is not None:
            table = np.asarray(source_to_target)
            if table.ndim != 1 or table.size == 0 or table.dtype.kind not in "iu":
                raise ValueError(
                    "`source_to_target` must be a non-empty list of int target ids (-1 for "
                    f"none), one per source id; got {type(source_to_target).__name__} of "
                    f"shape {table.shape}, dtype {table.dtype}."
                )
            if table.min() < -1:
                raise ValueError(
                    f"`source_to_target` holds {int(table.min())}: entries are target ids "
                    "or -1 (no target word)."
                )
            source_to_target = [int(v) for v in table]
        self.source_to_target = source_to_target
        self.coverage_weight = check_number("coverage_weight", coverage_weight, "[0, inf)")
        self.unk_id = check_int("unk_id", unk_id, minimum=0)
        self.target_vocab_size = None
        self.supports_masking = True  # the decoder outputs' target mask passes through

    # ---- building ----------------------------------------------------------------
    def build_for(self, source_vocab_size, target_vocab_size, context_dim, output_dim, input_dim):
        """Creates w_c, w_s, w_x and b, and checks the id map against the vocabularies
        (`Seq2Seq` calls it with its backbone's sizes)."""
        if self.source_to_target is None:
            table = np.arange(source_vocab_size)
            table[table >= target_vocab_size] = -1
        else:
            table = np.asarray(self.source_to_target)
            if table.size != source_vocab_size:
                raise ValueError(
                    f"`source_to_target` has {table.size} entries; the source vocabulary "
                    f"has {source_vocab_size} ids (one entry per source id)."
                )
            if table.max() >= target_vocab_size:
                raise ValueError(
                    f"`source_to_target` holds target id {int(table.max())}; the target "
                    f"vocabulary has {target_vocab_size} ids."
                )
        if self.unk_id >= target_vocab_size:
            raise ValueError(
                f"`unk_id`={self.unk_id} is not a target id (target_vocab_size is "
                f"{target_vocab_size})."
            )
        self._table = table.astype("int32")
        self.target_vocab_size = int(target_vocab_size)
        if self.built:
            return
        self.w_c = self.add_weight(shape=(context_dim, 1), name="w_c")
        self.w_s = self.add_weight(shape=(output_dim, 1), name="w_s")
        self.w_x = self.add_weight(shape=(input_dim, 1), name="w_x")
        self.b = self.add_weight(shape=(1,), initializer="zeros", name="b")
        self.built = True

    # ---- the extended vocabulary --------------------------------------------------------
    def extended_ids(self, source_ids, source_mask):
        """Source ids `(batch, Tx)` -> (each position's id in the extended vocabulary,
        int32 `(batch, Tx)`; whether extended id V + i is a word of the example, bool
        `(batch, Tx)`: position i holds the first occurrence of an out-of-target-
        vocabulary source word)."""
        source_ids = ops.cast(source_ids, "int32")
        mapped = ops.take(ops.convert_to_tensor(self._table), source_ids, axis=0)
        same = ops.equal(source_ids[:, :, None], source_ids[:, None, :])
        first = ops.cast(ops.argmax(ops.cast(same, "int32"), axis=-1), "int32")  # first i
        positions = ops.arange(ops.shape(source_ids)[1], dtype="int32")[None, :]
        outside = ops.logical_and(mapped < 0, source_mask)
        ids = ops.where(outside, self.target_vocab_size + first, ops.maximum(mapped, 0))
        used = ops.logical_and(outside, ops.equal(first, positions))
        return ids, used

    def fed_back(self, tokens):
        """Extended ids -> the target ids the decoder embeds (`unk_id` past V)."""
        return ops.where(tokens >= self.target_vocab_size, self.unk_id, tokens)

    # ---- the distribution ---------------------------------------------------------------
    def call(self, logits, outputs, inputs, alignments, values, extended, training=False):
        """log p(w) over the extended vocabulary.

        Args:
            logits: z_t `(..., V)`, the backbone's readout.
            outputs: s_t `(..., d_s)`, the decoder outputs.
            inputs: x_t `(..., d_x)`, the embedded decoder inputs.
            alignments: a_t `(..., Tx)`, the attention weights (zero on padding).
            values: h `(batch, Tx, d_c)`, the attended encoder outputs (c_t =
                a_t h); `...` is `(batch,)` or `(batch, Ty)`.
            extended: `extended_ids(source_ids, mask)`.

        Returns:
            float32 log-probabilities `(..., V + Tx)`, floored at log(1e-30).
        """
        ids, _ = extended
        alignments = ops.cast(alignments, "float32")
        values = ops.cast(values, "float32")
        per_step = len(alignments.shape) == 3  # (batch, Ty, Tx): teacher forcing
        if per_step:
            context = ops.einsum("bti,bid->btd", alignments, values)
        else:
            context = ops.einsum("bi,bid->bd", alignments, values)
        gate = (
            ops.matmul(context, self.w_c)
            + ops.matmul(ops.cast(outputs, "float32"), self.w_s)
            + ops.matmul(ops.cast(inputs, "float32"), self.w_x)
            + self.b
        )
        p_gen = ops.sigmoid(gate)  # (..., 1)
        vocab = ops.softmax(ops.cast(logits, "float32"), axis=-1)
        tx = ops.shape(alignments)[-1]
        size = self.target_vocab_size + tx
        # (1 - p_gen) * a scattered onto the extended ids, duplicates summed
        flat = ops.reshape(alignments * (1.0 - p_gen), (-1, tx))
        rows = ops.shape(flat)[0]
        if per_step:
            ids = ops.broadcast_to(ids[:, None, :], ops.shape(alignments))
        row_ids = ops.repeat(ops.arange(rows, dtype="int32")[:, None], tx, axis=1)
        index = ops.stack([ops.reshape(row_ids, (-1,)), ops.reshape(ids, (-1,))], axis=-1)
        copied = ops.scatter(index, ops.reshape(flat, (-1,)), (rows, size))
        generated = ops.concatenate(
            [ops.reshape(p_gen * vocab, (rows, -1)), ops.zeros((rows, tx), "float32")], axis=-1
        )
        probabilities = ops.reshape(generated + copied, (*ops.shape(alignments)[:-1], size))
        return ops.log(ops.maximum(probabilities, TINY))

    def add_coverage_loss(self, alignments, target_mask):
        """Adds coverage_weight x the batch mean of the coverage loss (training)."""
        if self.coverage_weight:
            loss = ops.mean(coverage_loss(alignments, target_mask))
            self.add_loss(self.coverage_weight * loss)

    def get_config(self):
        return {
            **super().get_config(),
            "source_to_target": self.source_to_target,
            "coverage_weight": self.coverage_weight,
            "unk_id": self.unk_id,
        }
