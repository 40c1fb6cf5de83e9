"""`Seq2SeqBackbone`: the layers of an attentive RNN encoder-decoder (embeddings,
encoder, bridge, attentive decoder, readout), with the encoder and one decoder step
callable on their own, as keras-hub's backbones are; `kerasrnn.seq2seq.Seq2Seq` is the
task (fit, generate) around it."""

import collections

import keras
from keras import ops, tree

from kerasrnn.attention.layers import BahdanauAttention
from kerasrnn.cells.attentive import AttentionCell, AttentiveRNN
from kerasrnn.cells.gru import GRUCell
from kerasrnn.layers import bridge as bridges
from kerasrnn.models.backbone import Backbone
from kerasrnn.ops import lengths_from_mask, padding_mask
from kerasrnn.seq2seq.encoder import RNNEncoder
from kerasrnn.serialization import deserialize
from kerasrnn.special_tokens import PAD_ID
from kerasrnn.validation import check_int, check_rate


class Encoded(
    collections.namedtuple("Encoded", ["memory", "states", "lengths", "source"], defaults=(None,))
):
    """What `Seq2SeqBackbone.call_encoder` (and `Seq2Seq.encode`) returns for a batch of
    sources (a tuple of tensors, so it passes through `tf.function` and `jax.jit`).

    Attributes:
        memory: the prepared `kerasrnn.attention.AttentionMemory` (keys projected once,
            values, and the source mask).
        states: the decoder's initial states (after the bridge).
        lengths: int32 `(batch,)` real source tokens per example.
        source: the source ids `(batch, Tx)` (what a `CopyReadout` copies from).
    """

    def tile_memory(self, count):
        """The memory repeated `count` times per source (rows b*count ...
        b*count+count-1 are source b), as a step function called by beam search on
        `batch * beam_size` rows needs it. The states stay per source: beam search
        repeats them itself."""
        source = None if self.source is None else ops.repeat(self.source, count, axis=0)
        return self._replace(memory=self.memory.repeat(count), source=source)


def cell_state_sizes(cell):
    """The widths of a cell's states, flattened: ``[units]`` for a GRU,
    ``[units, units]`` for an LSTM (the `state_size` of Keras' cell contract)."""
    return [int(size) for size in tree.flatten(cell.state_size)]


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2SeqBackbone(Backbone, keras.Model):
    """The layers of an attentive encoder-decoder (Bahdanau et al. 2015; Luong et al.
    2015): source and target embeddings, a recurrent encoder, a bridge, an attentive
    decoder and a readout.

    .. math::

        h_1 \\dots h_{T_x}, \\; z &= \\text{encoder}(E_x x_1 \\dots E_x x_{T_x})
            \\qquad (z: \\text{the encoder's final states}) \\\\
        s_0 &= \\text{bridge}(z) \\qquad (\\text{e.g. } \\tanh(W_s z + b_s)) \\\\
        o_i, s_i &= \\text{AttentionCell}(E_y y_{i-1}, s_{i-1}; h) \\\\
        z_i &= W_o o_i + b_o
            \\qquad (W_o = E_y \\text{ with tie\\_embeddings})

    Source and target masks are built from `pad_id`: padded source positions get no
    attention, padded target steps never change a state.

    Args:
        source_vocab_size: source ids are in [0, source_vocab_size).
        target_vocab_size: target ids (and logits) are in [0, target_vocab_size).
        encoder: a `kerasrnn.seq2seq.RNNEncoder` (default: a bidirectional GRU of
            `units` units).
        decoder_cell: a `kerasrnn.AttentionCell` (default: a GRU of `units` units with
            `BahdanauAttention(units)`).
        bridge: a `kerasrnn.layers.Bridge`, or its name: "dense" (s_0 = tanh(W_s z + b),
            any widths), "copy" (the encoder's final states, directions concatenated:
            the widths must add up), "zeros", or "none" (the decoder cell's own initial
            state).
        embedding_dim: width of both embeddings.
        units: the width of the default encoder and decoder cells.
        dropout: dropout rate on the embeddings and on the decoder outputs.
        tie_embeddings: use the target embedding matrix as the readout weights (Press &
            Wolf 2017); the decoder output must then have width `embedding_dim` (set
            `projection=kerasrnn.LuongProjection(embedding_dim)` on the `AttentionCell`).
        pad_id: padding id of both sides (default 0, `kerasrnn.data`'s `[PAD]`).

    Call arguments:
        source_ids: int ids `(batch, Tx)`; target_in: int ids `(batch, Ty)`, the
            decoder's (teacher-forced) inputs; training: dropout on or off.

    Returns:
        `call`: `(logits (batch, Ty, target_vocab_size), alignments (batch, Ty, Tx))`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> backbone = kerasrnn.seq2seq.Seq2SeqBackbone(20, 12, bridge="dense",
    ...                                             embedding_dim=8, units=8)
    >>> source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> logits, alignments = backbone(source, np.array([[2, 4, 5], [2, 6, 0]]))
    >>> tuple(logits.shape), tuple(alignments.shape)
    ((2, 3, 12), (2, 3, 4))
    >>> encoded = backbone.call_encoder(source)  # once per source, then step by step:
    >>> logits, states, alignments = backbone.call_decoder_step(
    ...     np.array([2, 2]), encoded.states, encoded.memory)
    >>> tuple(logits.shape)
    (2, 12)
    """

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        encoder=None,
        decoder_cell=None,
        bridge="dense",
        embedding_dim=128,
        units=128,
        dropout=0.0,
        tie_embeddings=False,
        pad_id=PAD_ID,
        **kwargs,
    ):
        super().__init__(**kwargs)
        source_vocab_size = check_int("source_vocab_size", source_vocab_size)
        target_vocab_size = check_int("target_vocab_size", target_vocab_size)
        embedding_dim = check_int("embedding_dim", embedding_dim)
        units = check_int("units", units)
        pad_id = check_int("pad_id", pad_id, minimum=0)
        for side, size in (("source", source_vocab_size), ("target", target_vocab_size)):
            if pad_id >= size:
                raise ValueError(
                    f"`pad_id`={pad_id} is not a {side} id: {side}_vocab_size is {size}."
                )
        dropout = check_rate("dropout", dropout)
        encoder, decoder_cell = deserialize(encoder), deserialize(decoder_cell)
        if encoder is None:
            encoder = RNNEncoder(GRUCell(units), bidirectional=True, name="encoder")
        if not isinstance(encoder, RNNEncoder):
            raise ValueError(
                "`encoder` must be a kerasrnn.seq2seq.RNNEncoder (e.g. "
                f"RNNEncoder(kerasrnn.LSTMCell(256))); got {encoder!r}."
            )
        if decoder_cell is None:
            decoder_cell = AttentionCell(GRUCell(units), BahdanauAttention(units))
        if not isinstance(decoder_cell, AttentionCell):
            raise ValueError(
                "`decoder_cell` must be a kerasrnn.AttentionCell (e.g. AttentionCell("
                "kerasrnn.GRUCell(256), kerasrnn.BahdanauAttention(256))); got "
                f"{decoder_cell!r}."
            )
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.dropout = float(dropout)
        self.tie_embeddings = bool(tie_embeddings)
        self.pad_id = pad_id

        self.source_embedding = keras.layers.Embedding(
            source_vocab_size, embedding_dim, name="source_embedding"
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocab_size, embedding_dim, name="target_embedding"
        )
        self.encoder = encoder
        # (the layers are made in this order for a fixed random initialisation)
        self.bridge = bridges.get(bridge)
        self.bridge.set_state_sizes(cell_state_sizes(decoder_cell.cell))
        self.decoder = AttentiveRNN(decoder_cell, return_alignments=True, name="decoder")
        self.embedding_dropout = keras.layers.Dropout(self.dropout, name="embedding_dropout")
        self.output_dropout = keras.layers.Dropout(self.dropout, name="output_dropout")
        self.readout = None
        if not self.tie_embeddings:
            self.readout = keras.layers.Dense(target_vocab_size, name="readout")

    # ---- building ----------------------------------------------------------------
    def build(self, source_ids_shape=None, target_in_shape=None):
        """Creates every weight; the input shapes do not matter (ids of any length)."""
        if self.built:  # (deserialised inside a Seq2Seq, it arrives built)
            return
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        embedded = (None, None, self.embedding_dim)
        self.encoder.build(embedded)
        memory_shape, state_shapes = self.encoder.compute_output_shape(embedded)
        self.decoder.build(embedded, memory_shape)
        # after the decoder, as AttentiveRNN built its own bridge: the same random init
        self.bridge.build([tuple(s) for s in state_shapes])
        width = self.decoder.cell.output_size
        if self.tie_embeddings:
            if width != self.embedding_dim:
                raise ValueError(
                    f"`tie_embeddings=True` needs decoder outputs of width embedding_dim="
                    f"{self.embedding_dim}, but the decoder cell outputs {width}: set "
                    f"projection=kerasrnn.LuongProjection({self.embedding_dim}) on the "
                    f"AttentionCell."
                )
            self.readout_bias = self.add_weight(
                shape=(self.target_vocab_size,), initializer="zeros", name="readout_bias"
            )
        else:
            self.readout.build((None, width))
        self.built = True

    # ---- the encoder -------------------------------------------------------------
    def _encode(self, source_ids, training=False):
        """(encoder outputs, the decoder's initial cell states or None, source mask)."""
        mask = padding_mask(source_ids, self.pad_id)
        x = self.embedding_dropout(self.source_embedding(source_ids), training=training)
        memory, states = self.encoder(x, mask=mask, training=training)
        return memory, self.bridge(list(states)), mask

    def call_encoder(self, source_ids, training=False):
        """Encodes a batch of sources once for step-by-step decoding.

        Args:
            source_ids: int ids `(batch, Tx)`, padded with `pad_id`.
            training: dropout on or off.

        Returns:
            An `Encoded`: the prepared attention memory (with the source mask), the
            decoder's full initial states, the source lengths.
        """
        if not self.built:
            self.build()
        source_ids = ops.cast(ops.convert_to_tensor(source_ids), "int32")
        memory, states, mask = self._encode(source_ids, training)
        prepared = self.decoder.prepare_memory(memory, mask=mask)
        states = self.decoder.initial_state_from(
            states, batch_size=ops.shape(source_ids)[0], memory=prepared
        )
        return Encoded(prepared, list(states), lengths_from_mask(mask), source_ids)

    # ---- the decoder -------------------------------------------------------------
    def readout_logits(self, outputs):
        """Decoder outputs `(..., width)` -> logits `(..., target_vocab_size)`:
        W_o o + b_o (W_o the target embedding matrix with `tie_embeddings`)."""
        if self.tie_embeddings:
            weights = ops.cast(self.target_embedding.embeddings, outputs.dtype)
            return ops.matmul(outputs, ops.transpose(weights)) + self.readout_bias
        return self.readout(outputs)

    def readout_weights(self):
        """`(kernel (width, target_vocab_size), bias (target_vocab_size,))` of the
        readout (the kernel is the transposed target embedding with `tie_embeddings`)."""
        if self.tie_embeddings:
            return ops.transpose(self.target_embedding.embeddings), self.readout_bias
        return self.readout.kernel, self.readout.bias

    def call_decoder_step(
        self, tokens, states, memory, readout=None, training=False, embedding_mask=None
    ):
        """One decoder step: the previous tokens in, the next logits out.

        Args:
            tokens: int ids `(rows,)`, the previous target tokens.
            states: the decoder's flat states (`Encoded.states` at the first step).
            memory: the prepared memory (`Encoded.memory`, or `Encoded.tile_memory(k)`
                on `batch * k` rows).
            readout: decoder outputs -> logits (default `readout_logits`).
            training: dropout on or off.
            embedding_mask: a dropout mask `(rows, embedding_dim)` multiplied into the
                embedded tokens: the embedding dropout of a step-by-step training
                loop, drawn before the loop (default: none).

        Returns:
            `(logits (rows, target_vocab_size), new states, alignments (rows, Tx))`.
        """
        output, states, alignments, _ = self.decoder_step_outputs(
            tokens, states, memory, training, embedding_mask=embedding_mask
        )
        return (readout or self.readout_logits)(output), states, alignments

    def decoder_step_outputs(self, tokens, states, memory, training=False, embedding_mask=None):
        """`call_decoder_step` before the readout: `(decoder output, new states,
        alignments, embedded tokens)` (what a `CopyReadout` reads besides the logits)."""
        y = self.target_embedding(ops.cast(tokens, "int32"))
        if embedding_mask is not None:
            y = y * ops.cast(embedding_mask, y.dtype)
        output, states, alignments = self.decoder.step(y, states, memory, training=training)
        return output, states, alignments, y

    # ---- the teacher-forced pass ---------------------------------------------------
    def call(self, source_ids, target_in, training=False):
        outputs, alignments, _ = self.decoder_outputs(source_ids, target_in, training)
        return self.readout_logits(outputs["outputs"]), alignments

    def decoder_outputs(self, source_ids, target_in, training=False):
        """The teacher-forced pass before the readout: `(pieces, alignments (batch, Ty,
        Tx), source mask)`, pieces a dict of the decoder "outputs" (after dropout),
        the embedded decoder "inputs" and the encoder outputs "memory" (what a
        `CopyReadout` reads besides the logits)."""
        source_ids = ops.cast(ops.convert_to_tensor(source_ids), "int32")
        target_in = ops.cast(ops.convert_to_tensor(target_in), "int32")
        memory, states, source_mask = self._encode(source_ids, training)
        y = self.embedding_dropout(self.target_embedding(target_in), training=training)
        outputs, alignments = self.decoder(
            y,
            memory,
            initial_state=states,
            mask=padding_mask(target_in, self.pad_id),
            memory_mask=source_mask,
            training=training,
        )
        outputs = self.output_dropout(outputs, training=training)
        return {"outputs": outputs, "inputs": y, "memory": memory}, alignments, source_mask

    def compute_output_shape(self, source_ids_shape, target_in_shape):
        return (
            (*target_in_shape, self.target_vocab_size),
            (*target_in_shape, source_ids_shape[-1]),
        )

    def get_config(self):
        return {
            **super().get_config(),
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "decoder_cell": keras.saving.serialize_keras_object(self.decoder.cell),
            "bridge": keras.saving.serialize_keras_object(self.bridge),
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "dropout": self.dropout,
            "tie_embeddings": self.tie_embeddings,
            "pad_id": self.pad_id,
        }
