"""`Seq2Seq`: an attentive RNN encoder-decoder as one Keras model, trained with
`model.fit` and decoded with `generate` (greedy, sampling or beam search)."""
import collections

import keras
from keras import ops, tree

from kerasrnn.attention.layers import AttentionMemory, BahdanauAttention
from kerasrnn.cells.attentive import AttentionCell, AttentiveRNN, merge_bidirectional_states
from kerasrnn.cells.gru import GRUCell
from kerasrnn.layers.crf import _scan as scan_sequences
from kerasrnn.seq2seq import sampling
from kerasrnn.seq2seq.encoder import RNNEncoder
from kerasrnn.seq2seq.generation import GenerationMixin

BRIDGES = ("dense", "copy", "zeros")
# The special ids of kerasrnn.data's vocabularies ([PAD]=0, [UNK]=1, [START]=2,
# [END]=3); repeated here because the core never imports kerasrnn.data.
PAD_ID, START_ID, END_ID = 0, 2, 3


class Encoded(collections.namedtuple("Encoded", ["memory", "states", "lengths"])):
    """What `Seq2Seq.encode` returns for a batch of sources (a tuple of tensors, so it
    passes through `tf.function` and `jax.jit`).

    Attributes:
        memory: the prepared `kerasrnn.attention.AttentionMemory` (keys projected once,
            values, and the source mask).
        states: the decoder's initial states (after the bridge).
        lengths: int32 `(batch,)` real source tokens per example.
    """

    def tile_memory(self, count):
        """The memory repeated `count` times per source (rows b*count ...
        b*count+count-1 are source b), as a step function called by beam search on
        `batch * beam_size` rows needs it. The states stay per source: beam search
        repeats them itself."""
        return self._replace(memory=self.memory.repeat(count))


def _deserialize(obj):
    if isinstance(obj, dict):
        return keras.saving.deserialize_keras_object(obj)
    return obj


def _check_int(name, value, low, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"`{name}` must be an integer >= {low}, got {name}={value!r}.")


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2Seq(GenerationMixin, keras.Model):
    """An attentive encoder-decoder (Bahdanau et al. 2015; Luong et al. 2015) as a Keras
    model: source and target embeddings, a recurrent encoder, a bridge, an attentive
    decoder and a readout.

    .. math::

        h_1 \\dots h_{T_x}, \\; z &= \\text{encoder}(E_x x_1 \\dots E_x x_{T_x})
            \\qquad (z: \\text{the encoder's final states}) \\\\
        s_0 &= \\tanh(W_s z + b_s) \\qquad (\\text{bridge} = \\text{"dense"}) \\\\
        o_i, s_i &= \\text{AttentionCell}(E_y y_{i-1}, s_{i-1}; h) \\\\
        p(y_i \\mid y_{<i}, x) &= \\text{softmax}(W_o o_i + b_o)
            \\qquad (W_o = E_y \\text{ with tie\\_embeddings})

    Training is teacher-forced, `model.fit` on ``{"source": (batch, Tx),
    "target_in": (batch, Ty)}`` int ids -> ``target_out`` (batch, Ty), where
    ``target_in`` is ``[START] y_1 ... y_n`` and ``target_out`` is ``y_1 ... y_n [END]``
    (padded with `pad_id`); `call` returns the logits (batch, Ty, target_vocab_size).
    `compile()` defaults to Adam, `kerasrnn.losses.SequenceCrossEntropy` and
    `kerasrnn.metrics.MaskedAccuracy`. Source and target masks are built from
    `pad_id`, so padded source positions get no attention and padded target steps
    never change a state nor count in the loss.

    With `scheduled_sampling` (Bengio et al. 2015), training runs the decoder step by
    step and feeds, at each step t > 0 and with probability p, the model's own token
    (drawn from its distribution, or its argmax, per `sampling_mode`) instead of
    y_{t-1}; p follows the schedule of `kerasrnn.seq2seq.sampling_probability` over the
    model's training steps (`sampling_step`, saved with the model). Evaluation stays
    teacher-forced.

    Generation: `encode(source_ids)` once per batch, `step_fn(encoded)` gives
    `kerasrnn.decoding`'s step function, and `generate(source_ids, strategy)` runs a
    decoding strategy (`GreedySearch()`, `RandomSampling(...)`, `BeamSearch(...)`; the
    default is `compile(sampler=...)`'s, greedy before) and returns tokens, scores and
    attention alignments for every hypothesis.

    Args:
        source_vocab_size: source ids are in [0, source_vocab_size).
        target_vocab_size: target ids (and logits) are in [0, target_vocab_size).
        encoder: a `kerasrnn.seq2seq.RNNEncoder` (default: a bidirectional GRU of
            `units` units).
        decoder_cell: a `kerasrnn.AttentionCell` (default: a GRU of `units` units with
            `BahdanauAttention(units)`, Bahdanau mode).
        embedding_dim: width of both embeddings.
        units: the width of the default encoder and decoder cells.
        bridge: how the decoder starts: "dense" (s_0 = tanh(W_s z + b), any widths),
            "copy" (the encoder's final states as they are; a bidirectional
            encoder's forward and backward states are concatenated, so the widths
            must add up), or "zeros".
        dropout: dropout rate on the embeddings and on the decoder outputs.
        tie_embeddings: use the target embedding matrix as the readout weights (Press &
            Wolf 2017); the decoder output must then have width `embedding_dim` (set
            `projection=kerasrnn.LuongProjection(embedding_dim)` on the `AttentionCell`).
        pad_id: padding id of both sides (default 0, `kerasrnn.data`'s `[PAD]`).
        start_id: the target start id fed at the first step (default 2, `[START]`).
        end_id: the target end id that finishes a hypothesis (default 3, `[END]`).
        max_source_length: if set, sources are cut to this many tokens (in training,
            generation and export), so longer input is truncated, never an error.
        max_target_length: the default number of tokens `generate` produces at most.
        scheduled_sampling: "off" (default), "constant", "linear" or
            "inverse_sigmoid" (see above).
        sampling_probability: the p the schedule grows to.
        sampling_steps: the schedule's S (linear: steps to reach p; inverse_sigmoid:
            steps to reach p / 2).
        sampling_mode: "sample" (the fed token is drawn from the model's distribution,
            as TFA's `ScheduledEmbeddingTrainingSampler`) or "argmax".
        seed: seed of the scheduled-sampling draws.

    Example:

    >>> import numpy as np, kerasrnn
    >>> model = kerasrnn.seq2seq.Seq2Seq(20, 12, embedding_dim=8, units=8)
    >>> source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> target_in = np.array([[2, 4, 5], [2, 6, 0]])
    >>> tuple(model({"source": source, "target_in": target_in}).shape)
    (2, 3, 12)
    >>> beam = kerasrnn.decoding.BeamSearch(beam_size=3)
    >>> result = model.generate(source, beam, max_length=5)
    >>> tuple(result.tokens.shape), tuple(result.alignments.shape)
    ((2, 3, 5), (2, 3, 5, 4))
    """

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        encoder=None,
        decoder_cell=None,
        embedding_dim=128,
        units=128,
        bridge="dense",
        dropout=0.0,
        tie_embeddings=False,
        pad_id=PAD_ID,
        start_id=START_ID,
        end_id=END_ID,
        max_source_length=None,
        max_target_length=50,
        scheduled_sampling="off",
        sampling_probability=0.25,
        sampling_steps=5000,
        sampling_mode="sample",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_int("source_vocab_size", source_vocab_size, 1)
        _check_int("target_vocab_size", target_vocab_size, 1)
        _check_int("embedding_dim", embedding_dim, 1)
        _check_int("units", units, 1)
        for name, value in (("pad_id", pad_id), ("start_id", start_id), ("end_id", end_id)):
            _check_int(name, value, 0)
            if value >= target_vocab_size:
                raise ValueError(
                    f"`{name}`={value} is not a target id: target_vocab_size is "
                    f"{target_vocab_size} (ids 0..{target_vocab_size - 1})."
                )
        if pad_id >= source_vocab_size:
            raise ValueError(
                f"`pad_id`={pad_id} is not a source id: source_vocab_size is "
                f"{source_vocab_size}."
            )
        _check_int("max_source_length", max_source_length, 1, allow_none=True)
        _check_int("max_target_length", max_target_length, 1)
        if bridge not in BRIDGES:
            raise ValueError(f"`bridge` must be one of {BRIDGES}, got bridge={bridge!r}.")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not (
            0.0 <= dropout < 1.0
        ):
            raise ValueError(f"`dropout` must be in [0, 1), got dropout={dropout!r}.")
        sampling.check_schedule(scheduled_sampling, sampling_probability, sampling_steps,
                                sampling_mode)
        encoder = _deserialize(encoder)
        decoder_cell = _deserialize(decoder_cell)
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
        self.bridge = bridge
        self.dropout = float(dropout)
        self.tie_embeddings = bool(tie_embeddings)
        self.pad_id, self.start_id, self.end_id = pad_id, start_id, end_id
        self.max_source_length = max_source_length
        self.max_target_length = max_target_length
        self.scheduled_sampling = scheduled_sampling
        self.sampling_probability = float(sampling_probability)
        self.sampling_steps = sampling_steps
        self.sampling_mode = sampling_mode
        self.seed = seed

        self.source_embedding = keras.layers.Embedding(
            source_vocab_size, embedding_dim, name="source_embedding"
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocab_size, embedding_dim, name="target_embedding"
        )
        self.encoder = encoder
        self.decoder = AttentiveRNN(
            decoder_cell, return_alignments=True, bridge=bridge == "dense", name="decoder"
        )
        self.embedding_dropout = keras.layers.Dropout(self.dropout, name="embedding_dropout")
        self.output_dropout = keras.layers.Dropout(self.dropout, name="output_dropout")
        self.readout = None
        if not self.tie_embeddings:
            self.readout = keras.layers.Dense(target_vocab_size, name="readout")
        self.seed_generator = keras.random.SeedGenerator(seed)

    # ---- building ----------------------------------------------------------------
    def build(self, input_shape=None):
        """Creates every weight; the input shape does not matter (ids of any length)."""
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        embedded = (None, None, self.embedding_dim)
        self.encoder.build(embedded)
        memory_shape, state_shapes = self.encoder.compute_output_shape(embedded)
        self._check_bridge(state_shapes)
        self.decoder.build(embedded, memory_shape, [tuple(s) for s in state_shapes])
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
        self.sampling_step = self.add_weight(
            shape=(), dtype="int32", initializer="zeros", trainable=False,
            name="sampling_step", aggregation="only_first_replica",
        )
        self.built = True

    def _check_bridge(self, state_shapes):
        if self.bridge != "copy":
            return
        cell_sizes = list(self.decoder.cell._cell_sizes)
        widths = [s[-1] for s in state_shapes]
        if len(widths) == 2 * len(cell_sizes):  # bidirectional: concatenated pairwise
            half = len(cell_sizes)
            widths = [a + b for a, b in zip(widths[:half], widths[half:])]
        if widths != cell_sizes:
            raise ValueError(
                f"`bridge='copy'` passes the encoder's final states (widths {widths} "
                f"after joining directions) to the decoder cell, whose states have widths "
                f"{cell_sizes}; use bridge='dense' or matching units."
            )

    # ---- pieces ------------------------------------------------------------------
    def _source(self, source_ids):
        source_ids = ops.cast(ops.convert_to_tensor(source_ids), "int32")
        if len(source_ids.shape) != 2:
            raise ValueError(
                "`source` must be int ids of shape (batch, source_length); got shape "
                f"{tuple(source_ids.shape)}. (One sequence: source[None].)"
            )
        _check_ids("source", source_ids, self.source_vocab_size)
        if self.max_source_length is not None:
            source_ids = source_ids[:, : self.max_source_length]
        return source_ids

    def _unpack(self, inputs):
        if isinstance(inputs, dict):
            missing = {"source", "target_in"} - set(inputs)
            if missing:
                raise ValueError(
                    "Seq2Seq takes {'source': ids, 'target_in': ids}; missing "
                    f"{sorted(missing)} in the given keys {sorted(inputs)}."
                )
            source, target_in = inputs["source"], inputs["target_in"]
        elif isinstance(inputs, (list, tuple)) and len(inputs) == 2:
            source, target_in = inputs
        else:
            raise ValueError(
                "Seq2Seq takes {'source': (batch, Tx) ids, 'target_in': (batch, Ty) "
                f"ids}} (or a (source, target_in) pair); got {type(inputs).__name__}."
            )
        target_in = ops.cast(ops.convert_to_tensor(target_in), "int32")
        if len(target_in.shape) != 2:
            raise ValueError(
                "`target_in` must be int ids of shape (batch, target_length); got shape "
                f"{tuple(target_in.shape)}."
            )
        _check_ids("target_in", target_in, self.target_vocab_size)
        return self._source(source), target_in

    def _encode_source(self, source_ids, training=False):
        """(encoder outputs, encoder final states, source mask)."""
        mask = ops.not_equal(source_ids, self.pad_id)
        x = self.embedding_dropout(self.source_embedding(source_ids), training=training)
        memory, states = self.encoder(x, mask=mask, training=training)
        return memory, states, mask

    def _initial_states(self, encoder_states, batch_size):
        if self.bridge == "zeros":
            return self.decoder.initial_state_from(None, batch_size=batch_size)
        if self.bridge == "copy":
            states = list(encoder_states)
            if len(states) == 2 * len(self.decoder.cell._cell_sizes):
                states = merge_bidirectional_states(states)
            return self.decoder.cell.initial_state_from(states)
        return self.decoder.initial_state_from(encoder_states)

    def _logits(self, outputs, training=False):
        return self._readout(self.output_dropout(outputs, training=training))

    def _readout(self, outputs):
        if self.tie_embeddings:
            weights = ops.cast(self.target_embedding.embeddings, outputs.dtype)
            return ops.matmul(outputs, ops.transpose(weights)) + self.readout_bias
        return self.readout(outputs)

    # ---- the teacher-forced pass ---------------------------------------------------
    def call(self, inputs, training=False):
        source, target_in = self._unpack(inputs)
        if training and self.scheduled_sampling != "off":
            logits, _, _ = self.scheduled_pass(source, target_in, training=True)
            self.sampling_step.assign_add(1)
            return logits
        return self._teacher_forced(source, target_in, training)[0]

    def _teacher_forced(self, source, target_in, training=False):
        memory, encoder_states, source_mask = self._encode_source(source, training)
        if self.bridge == "zeros":
            states = None
        elif self.bridge == "copy":
            states = self._initial_states(encoder_states, None)
        else:  # the decoder applies its bridge itself
            states = list(encoder_states)
        y = self.embedding_dropout(self.target_embedding(target_in), training=training)
        outputs, alignments = self.decoder(
            y, memory, initial_state=states, mask=ops.not_equal(target_in, self.pad_id),
            memory_mask=source_mask, training=training,
        )
        return self._logits(outputs, training), alignments

    def alignments(self, inputs):
        """The teacher-forced attention weights `(batch, Ty, Tx)` for
        ``{"source", "target_in"}`` (zero rows at padded target steps): what a heatmap
        of a source and its (given) translation shows."""
        source, target_in = self._unpack(inputs)
        return self._teacher_forced(source, target_in, training=False)[1]

    # ---- scheduled sampling ----------------------------------------------------------
    def current_sampling_probability(self):
        """The scheduled-sampling probability p at the current training step."""
        return sampling.sampling_probability(
            self.sampling_step, self.scheduled_sampling, self.sampling_probability,
            self.sampling_steps,
        )

    def sampling_noise(self, shape, seed=None):
        """The uniform draws `(coin, uniform)`, each of `shape` (batch, Ty), that decide
        which tokens scheduled sampling feeds (see `scheduled_pass`)."""
        seed = self.seed_generator if seed is None else seed
        coin = keras.random.uniform(shape, seed=seed)
        uniform = keras.random.uniform(shape, seed=seed)
        return coin, uniform

    def scheduled_pass(self, source, target_in, probability=None, noise=None,
                       training=False):
        """The decoder run step by step with scheduled sampling.

        At step t the decoder is fed x_t = own_t if t > 0, coin_t < p and y_in_t is not
        padding, else the gold input y_in_t; own_t is drawn from the model's
        distribution at step t-1 by inverse transform sampling with uniform_t
        (`sampling_mode="sample"`), or its argmax ("argmax"), never the padding id.

        Args:
            source, target_in: int ids `(batch, Tx)`, `(batch, Ty)`.
            probability: p (default: the schedule's at the current step).
            noise: `(coin, uniform)` draws `(batch, Ty)` in [0, 1) (default: fresh ones
                from `sampling_noise`).
            training: dropout on or off.

        Returns:
            `(logits (batch, Ty, vocab), fed tokens (batch, Ty) int32, alignments
            (batch, Ty, Tx))`.
        """
        source = self._source(source)
        target_in = ops.cast(ops.convert_to_tensor(target_in), "int32")
        if not self.built:
            self.build()
        if probability is None:
            probability = self.current_sampling_probability()
        probability = ops.cast(probability, "float32")
        if noise is None:
            noise = self.sampling_noise(ops.shape(target_in))
        coin, uniform = (ops.cast(n, "float32") for n in noise)
        memory, encoder_states, source_mask = self._encode_source(source, training)
        batch_size = ops.shape(source)[0]
        states = self._initial_states(encoder_states, batch_size)
        prepared = self.decoder.prepare_memory(memory, mask=source_mask)
        cell = self.decoder.cell
        vocab = self.target_vocab_size
        # Random masks are drawn before the loop (as keras.layers.RNN fixes its dropout
        # masks): a seed generator must not advance inside a traced loop body (JAX).
        steps = ops.shape(target_in)[1]
        width = cell.output_size
        embedding_masks = self.embedding_dropout(
            ops.ones((batch_size, steps, self.embedding_dim)), training=training)
        output_masks = self.output_dropout(
            ops.ones((batch_size, steps, width)), training=training)
        if training:
            first = self.target_embedding(target_in[:, 0])
            cell.get_dropout_mask(first)
            cell.get_recurrent_dropout_mask(first)
        # (the noise first: scan_sequences packs all five into one tensor of its dtype)
        time_major = [ops.moveaxis(x, 1, 0) for x in
                      (coin, uniform, target_in, embedding_masks, output_masks)]

        def step(carry, xs):
            t, previous_logits, states = carry[:3]
            coin_t, uniform_t, gold, embedding_mask, output_mask = xs
            own = sampling.own_tokens(previous_logits, uniform_t, self.sampling_mode,
                                      self.pad_id)
            fed = sampling.fed_tokens(gold, own, coin_t, probability, t, self.pad_id)
            y = self.target_embedding(fed) * ops.cast(embedding_mask, "float32")
            output, new_states, alignments = self.decoder.step(y, states, prepared,
                                                               training=training)
            real = ops.not_equal(gold, self.pad_id)[:, None]
            new_states = [ops.where(real, n, s) for n, s in zip(new_states, states)]
            output = ops.where(real, output, ops.zeros_like(output))
            alignments = ops.where(real, ops.cast(alignments, "float32"),
                                   ops.zeros_like(alignments, "float32"))
            logits = self._readout(output * ops.cast(output_mask, output.dtype))
            carry = (t + 1, ops.cast(logits, "float32"), new_states, fed, alignments)
            # Keras' TensorFlow scan needs the per-step outputs shaped as the carry
            return carry, carry

        initial = (
            ops.convert_to_tensor(0, "int32"),
            ops.zeros((batch_size, vocab), "float32"),
            list(states),
            ops.zeros((batch_size,), "int32"),
            ops.zeros((batch_size, ops.shape(source)[1]), "float32"),
        )
        # One packed sequence, not five: Keras' TensorFlow scan fails on several when the
        # number of steps is unknown at trace time (fit on padded_batch batches).
        _, (_, logits, _, fed, alignments) = scan_sequences(step, initial, time_major)
        if training:
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()
        return (ops.moveaxis(logits, 0, 1), ops.moveaxis(fed, 0, 1),
                ops.moveaxis(alignments, 0, 1))

    # ---- generation ------------------------------------------------------------------
    def encode(self, source_ids):
        """Encodes a batch of sources once for decoding: an `Encoded` (the prepared
        attention memory with the source mask, the decoder's initial states, the
        source lengths).

        Args:
            source_ids: int ids `(batch, source_length)`, padded with `pad_id`.
        """
        if not self.built:
            self.build()
        source_ids = self._source(source_ids)
        memory, encoder_states, mask = self._encode_source(source_ids, training=False)
        states = self._initial_states(encoder_states, ops.shape(source_ids)[0])
        prepared = self.decoder.prepare_memory(memory, mask=mask)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        return Encoded(prepared, list(states), lengths)

    def step_fn(self, encoded, return_alignments=True, readout_dtype="float32"):
        """The decoder as `kerasrnn.decoding`'s step function against `encoded`:
        ``step(tokens (rows,), states) -> (logits (rows, target_vocab_size), states,
        alignments (rows, source_length))``. For beam search over k beams pass
        ``encoded.tile_memory(k)`` (`generate` does). The `pad_id` logit is set to
        -1e9: padding is never generated, and the probabilities are renormalised over
        the other ids. With `return_alignments=False` the step returns
        `(logits, states)` only. `readout_dtype` is `generate`'s. `step.take_rows(rows)`
        is the step function on the memory rows `rows` alone (beam search's
        `drop_finished`)."""
        memory = encoded.memory if isinstance(encoded, Encoded) else encoded
        if not isinstance(memory, AttentionMemory):
            raise ValueError(
                "`step_fn` takes what `encode` returned (an Encoded); got "
                f"{type(encoded).__name__}."
            )
        return self._step_on(memory, return_alignments, self._decoding_readout(readout_dtype))

    def _step_on(self, memory, return_alignments, readout):
        never = ops.arange(self.target_vocab_size) == self.pad_id

        def step(tokens, states):
            y = self.target_embedding(ops.cast(tokens, "int32"))
            output, states, alignments = self.decoder.step(y, states, memory)
            # [PAD] is never generated: a padding id inside an output would end it early
            # for every reader that masks by it (and the loss never trains it).
            logits = ops.where(never[None, :], -1e9, readout(output))
            if not return_alignments:
                return logits, states
            return logits, states, alignments

        # beam search's drop_finished: the same step on a subset of the rows
        step.take_rows = lambda rows: self._step_on(memory.take(rows), return_alignments,
                                                    readout)
        return step

    # ---- training defaults -------------------------------------------------------------
    def compile(self, optimizer="auto", loss="auto", metrics="auto", *, sampler="greedy",
                **kwargs):
        """`keras.Model.compile` with the defaults of a sequence model: "auto" gives
        Adam (learning rate 1e-3, gradient norm clipped at 5), the masked token
        cross-entropy `kerasrnn.losses.SequenceCrossEntropy(pad_id=pad_id)` and the
        per-token `kerasrnn.metrics.MaskedAccuracy(pad_id=pad_id)`. `sampler` is
        `generate`'s default decoding strategy (a `kerasrnn.decoding` strategy or a
        name: "greedy", "sample", "beam"), saved with the compile config, as
        keras-hub's `compile(sampler=...)`."""
        from kerasrnn.losses import SequenceCrossEntropy
        from kerasrnn.metrics import MaskedAccuracy

        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=5.0)
        if loss == "auto":
            loss = SequenceCrossEntropy(pad_id=self.pad_id)
        if metrics == "auto":
            metrics = [MaskedAccuracy(pad_id=self.pad_id)]
        self.set_sampler(sampler)  # checked before Keras compiles anything
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        self._compile_config.config["sampler"] = self.sampler

    def compile_from_config(self, config):
        # Keras skips restoring the compilation of a model whose `compile` is
        # overridden; this one only fills in defaults, so the saved arguments apply.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocab_size": self.source_vocab_size,
                "target_vocab_size": self.target_vocab_size,
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "decoder_cell": keras.saving.serialize_keras_object(self.decoder.cell),
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "bridge": self.bridge,
                "dropout": self.dropout,
                "tie_embeddings": self.tie_embeddings,
                "pad_id": self.pad_id,
                "start_id": self.start_id,
                "end_id": self.end_id,
                "max_source_length": self.max_source_length,
                "max_target_length": self.max_target_length,
                "scheduled_sampling": self.scheduled_sampling,
                "sampling_probability": self.sampling_probability,
                "sampling_steps": self.sampling_steps,
                "sampling_mode": self.sampling_mode,
                "seed": self.seed,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "decoder_cell"):
            config[key] = _deserialize(config.get(key))
        return cls(**config)


def _check_ids(name, ids, vocab_size):
    """Out-of-vocabulary ids fail here, when they are concrete (eager), not as an
    index error deep inside the embedding lookup."""
    try:
        values = ops.convert_to_numpy(ids)
    except Exception:  # symbolic (tf.function, jax.jit, functional model): not checkable
        return
    if values.size and (values.min() < 0 or values.max() >= vocab_size):
        raise ValueError(
            f"`{name}` holds ids outside [0, {vocab_size}) (min {values.min()}, max "
            f"{values.max()}): the model's {name.split('_')[0]} vocabulary has "
            f"{vocab_size} ids; was it built with the same vocabulary?"
        )
