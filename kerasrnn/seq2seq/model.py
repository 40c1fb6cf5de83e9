"""`Seq2Seq`: the attentive encoder-decoder task around a `Seq2SeqBackbone`, trained
with `model.fit` (teacher forcing, or a `ScheduledSampling` regime) and decoded with
`generate` (greedy, sampling or beam search)."""

import keras
import numpy as np
from keras import ops

from kerasrnn import decoding
from kerasrnn.attention.layers import AttentionMemory
from kerasrnn.models.generation import check_source_ids
from kerasrnn.models.task import GenerativeTask, from_backend, to_backend
from kerasrnn.ops import NEG_INF, padding_mask
from kerasrnn.seq2seq.backbone import Encoded, Seq2SeqBackbone
from kerasrnn.seq2seq.pointer import CopyReadout
from kerasrnn.seq2seq.preprocessor import Seq2SeqPreprocessor
from kerasrnn.seq2seq.sampling import ScheduledSampling
from kerasrnn.serialization import deserialize
from kerasrnn.special_tokens import END_ID, START_ID
from kerasrnn.validation import check_int


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2Seq(GenerativeTask, keras.Model):
    """An attentive encoder-decoder task, as keras-hub's `BartSeq2SeqLM`: a
    `kerasrnn.seq2seq.Seq2SeqBackbone` (embeddings, encoder, bridge, attentive decoder,
    readout) with `fit`, `compile` defaults and `generate`.

    .. math::

        p(y_i \\mid y_{<i}, x) = \\text{softmax}(z_i), \\qquad
        z_i = \\text{backbone}(x, y_{<i})_i

    Training is teacher-forced, `model.fit` on ``{"source": (batch, Tx),
    "target_in": (batch, Ty)}`` int ids -> ``target_out`` (batch, Ty), where
    ``target_in`` is ``[START] y_1 ... y_n`` and ``target_out`` is ``y_1 ... y_n [END]``
    (padded with the backbone's `pad_id`); `call` returns the logits
    (batch, Ty, target_vocab_size). `compile()` defaults to Adam,
    `kerasrnn.losses.SequenceCrossEntropy` and `kerasrnn.metrics.MaskedAccuracy`.
    Padded source positions get no attention and padded target steps never change a
    state nor count in the loss.

    With a `kerasrnn.seq2seq.ScheduledSampling` regime (Bengio et al. 2015), training
    runs the decoder step by step and sometimes feeds the model's own tokens instead
    of the gold ones (see there); evaluation stays teacher-forced.

    Generation: `encode(source_ids)` once per batch, `step_fn(encoded)` gives
    `kerasrnn.decoding`'s step function, and `generate(source_ids, strategy)` runs a
    decoding strategy (`GreedySearch()`, `RandomSampling(...)`, `BeamSearch(...)`; the
    default is `compile(sampler=...)`'s, greedy before) and returns tokens, scores and
    attention alignments for every hypothesis. With a `Seq2SeqPreprocessor`,
    `generate` also takes source texts and returns their translations, and
    `attention(text)` what decoding one text attended to.

    Args:
        backbone: a `kerasrnn.seq2seq.Seq2SeqBackbone`.
        start_id: the target start id fed at the first step (default 2, `[START]`).
        end_id: the target end id that finishes a hypothesis (default 3, `[END]`).
        max_source_length: if set, sources are cut to this many tokens (in training,
            generation and export), so longer input is truncated, never an error.
        max_target_length: the default number of tokens `generate` produces at most.
        scheduled_sampling: None (teacher forcing) or a `ScheduledSampling`.
        copy_readout: None (p = softmax(z)) or a `kerasrnn.seq2seq.CopyReadout`:
            copy attention, `call` then returning log-probabilities over the
            extended vocabulary (see there) and `generate` ids past the target
            vocabulary for copied source words.
        preprocessor: None, or a `kerasrnn.seq2seq.Seq2SeqPreprocessor` (both sides'
            tokenizers and vocabularies: texts in, translations out).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone
    >>> model = Seq2Seq(Seq2SeqBackbone(20, 12, embedding_dim=8, units=8))
    >>> source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> target_in = np.array([[2, 4, 5], [2, 6, 0]])
    >>> tuple(model({"source": source, "target_in": target_in}).shape)
    (2, 3, 12)
    >>> beam = kerasrnn.decoding.BeamSearch(beam_size=3)
    >>> result = model.generate(source, beam, max_length=5)
    >>> tuple(result.tokens.shape), tuple(result.alignments.shape)
    ((2, 3, 5), (2, 3, 5, 4))
    """

    preprocessor_cls = Seq2SeqPreprocessor

    def __init__(
        self,
        backbone,
        start_id=START_ID,
        end_id=END_ID,
        max_source_length=None,
        max_target_length=50,
        scheduled_sampling=None,
        copy_readout=None,
        preprocessor=None,
        **kwargs,
    ):
        super().__init__(preprocessor=preprocessor, **kwargs)
        backbone = deserialize(backbone)
        if not isinstance(backbone, Seq2SeqBackbone):
            raise ValueError(
                "`backbone` must be a kerasrnn.seq2seq.Seq2SeqBackbone (e.g. "
                f"Seq2SeqBackbone(source_vocab_size, target_vocab_size)); got {backbone!r}."
            )
        start_id = check_int("start_id", start_id, minimum=0)
        end_id = check_int("end_id", end_id, minimum=0)
        for name, value in (("start_id", start_id), ("end_id", end_id)):
            if value >= backbone.target_vocab_size:
                raise ValueError(
                    f"`{name}`={value} is not a target id: target_vocab_size is "
                    f"{backbone.target_vocab_size} (ids 0..{backbone.target_vocab_size - 1})."
                )
        max_source_length = check_int("max_source_length", max_source_length, allow_none=True)
        max_target_length = check_int("max_target_length", max_target_length)
        scheduled_sampling = deserialize(scheduled_sampling)
        if scheduled_sampling is not None and not isinstance(scheduled_sampling, ScheduledSampling):
            raise ValueError(
                "`scheduled_sampling` must be None or a kerasrnn.seq2seq.ScheduledSampling "
                f"(e.g. ScheduledSampling('linear', 0.25, steps=5000)); got "
                f"{scheduled_sampling!r}."
            )
        copy_readout = deserialize(copy_readout)
        if copy_readout is not None and not isinstance(copy_readout, CopyReadout):
            raise ValueError(
                "`copy_readout` must be None or a kerasrnn.seq2seq.CopyReadout (e.g. "
                f"CopyReadout(source_to_target)); got {copy_readout!r}."
            )
        if copy_readout is not None and scheduled_sampling is not None:
            raise ValueError(
                "`copy_readout` and `scheduled_sampling` do not combine: scheduled sampling "
                "decodes with the plain readout; pass one of them."
            )
        if copy_readout is not None and len(backbone.decoder.cell.mechanisms) != 1:
            raise ValueError(
                "`copy_readout` copies through one attention; the backbone's decoder "
                f"cell has {len(backbone.decoder.cell.mechanisms)} mechanisms."
            )
        if self.preprocessor is not None:  # (a mismatch fails deep in a traced lookup)
            for side, size in (
                ("source", backbone.source_vocab_size),
                ("target", backbone.target_vocab_size),
            ):
                tokens = len(getattr(self.preprocessor, side).vocabulary)
                if tokens != size:
                    raise ValueError(
                        f"the preprocessor's {side} vocabulary has {tokens} tokens but the "
                        f"backbone's {side}_vocab_size is {size}: give the vocabularies "
                        "the model was built with."
                    )
        self.backbone = backbone
        self.copy_readout = copy_readout
        self.start_id, self.end_id = start_id, end_id
        self.max_source_length = max_source_length
        self.max_target_length = max_target_length
        self.scheduled_sampling = scheduled_sampling

    # ---- the backbone's vocabulary ---------------------------------------------------
    @property
    def source_vocab_size(self):
        return self.backbone.source_vocab_size

    @property
    def target_vocab_size(self):
        return self.backbone.target_vocab_size

    @property
    def pad_id(self):
        return self.backbone.pad_id

    # ---- read by the generation methods below (`_decoding_readout`) ---------------------
    @property
    def tie_embeddings(self):
        return self.backbone.tie_embeddings

    @property
    def target_embedding(self):
        return self.backbone.target_embedding

    @property
    def readout(self):
        return self.backbone.readout

    @property
    def readout_bias(self):
        return self.backbone.readout_bias

    def _logits(self, outputs):
        return self.backbone.readout_logits(outputs)

    # ---- building ----------------------------------------------------------------
    def build(self, input_shape=None):
        """Creates every weight; the input shape does not matter (ids of any length)."""
        self.backbone.build()
        if self.copy_readout is not None:
            backbone = self.backbone
            embedded = (None, None, backbone.embedding_dim)
            memory_shape, _ = backbone.encoder.compute_output_shape(embedded)
            self.copy_readout.build_for(
                self.source_vocab_size,
                self.target_vocab_size,
                int(memory_shape[-1]),
                int(backbone.decoder.cell.output_size),
                backbone.embedding_dim,
            )
        if self.scheduled_sampling is not None:
            self.scheduled_sampling.build()
        self.built = True

    # ---- inputs ------------------------------------------------------------------
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

    # ---- the teacher-forced pass ---------------------------------------------------
    def call(self, inputs, training=False):
        source, target_in = self._unpack(inputs)
        if training and self.scheduled_sampling is not None:
            logits, _, _ = self.scheduled_sampling.decode(
                self.backbone, source, target_in, training=True
            )
            self.scheduled_sampling.advance()
            return logits
        if self.copy_readout is not None:
            return self._copy_log_probs(source, target_in, training)
        return self.backbone(source, target_in, training=training)[0]

    def _copy_log_probs(self, source, target_in, training):
        """The teacher-forced log-probabilities of the `copy_readout`."""
        if not self.built:
            self.build()
        pieces, alignments, source_mask = self.backbone.decoder_outputs(source, target_in, training)
        logits = self.backbone.readout_logits(pieces["outputs"])
        copying = self.copy_readout
        if training:
            copying.add_coverage_loss(alignments, padding_mask(target_in, self.pad_id))
        return copying(
            logits,
            pieces["outputs"],
            pieces["inputs"],
            alignments,
            pieces["memory"],
            copying.extended_ids(source, source_mask),
        )

    def alignments(self, inputs):
        """The teacher-forced attention weights `(batch, Ty, Tx)` for
        ``{"source", "target_in"}`` (zero rows at padded target steps): what a heatmap
        of a source and its (given) translation shows."""
        source, target_in = self._unpack(inputs)
        return self.backbone(source, target_in, training=False)[1]

    # ---- generation ------------------------------------------------------------------
    def encode(self, source_ids):
        """Encodes a batch of sources once for decoding (`max_source_length` applied):
        the backbone's `call_encoder`, an `Encoded` (the prepared attention memory with
        the source mask, the decoder's initial states, the source lengths).

        Args:
            source_ids: int ids `(batch, source_length)`, padded with `pad_id`.
        """
        if not self.built:
            self.build()
        return self.backbone.call_encoder(self._source(source_ids))

    def step_fn(self, encoded, return_alignments=True, readout_dtype="float32"):
        """The decoder as `kerasrnn.decoding`'s step function against `encoded`:
        ``step(tokens (rows,), states) -> (logits (rows, target_vocab_size), states,
        alignments (rows, source_length))``. For beam search over k beams pass
        ``encoded.tile_memory(k)`` (`generate` does). The `pad_id` logit is set to
        `kerasrnn.ops.NEG_INF`: padding is never generated, and the probabilities are
        renormalised over the other ids. With `return_alignments=False` the step returns
        `(logits, states)` only. `readout_dtype` is `generate`'s. `step.take_rows(rows)`
        is the step function on the memory rows `rows` alone (beam search's
        `drop_finished`)."""
        memory = encoded.memory if isinstance(encoded, Encoded) else encoded
        if not isinstance(memory, AttentionMemory):
            raise ValueError(
                "`step_fn` takes what `encode` returned (an Encoded); got "
                f"{type(encoded).__name__}."
            )
        source = encoded.source if isinstance(encoded, Encoded) else None
        return self._step_on(
            memory, return_alignments, self._decoding_readout(readout_dtype), source
        )

    # ---- GenerationMixin's hooks -------------------------------------------------------
    def _generation_inputs(self, source_ids):
        return self._source(check_source_ids(source_ids, self.pad_id))

    def _decoding_setup(self, source_ids, rows, aligned, readout):
        """The source encoded once; the step function attends its memory (repeated
        `rows` times per example: beam search calls the step on batch * rows rows)."""
        encoded = self.encode(source_ids)
        if rows > 1:
            encoded = encoded.tile_memory(rows)
        step = self._step_on(encoded.memory, aligned, readout, encoded.source)
        start = ops.full((ops.shape(source_ids)[0],), self.start_id, "int32")
        return step, start, encoded.states, ops.maximum(encoded.lengths, 1)

    def _readout_weights(self):
        if self.tie_embeddings:
            return ops.transpose(self.target_embedding.embeddings), self.readout_bias
        return self.readout.kernel, self.readout.bias

    def _step_on(self, memory, return_alignments, readout, source=None):
        if self.copy_readout is not None:
            return self._copy_step_on(memory, return_alignments, readout, source)
        never = ops.arange(self.target_vocab_size) == self.pad_id

        def step(tokens, states):
            logits, states, alignments = self.backbone.call_decoder_step(
                tokens, states, memory, readout=readout
            )
            # [PAD] is never generated: a padding id inside an output would end it early
            # for every reader that masks by it (and the loss never trains it).
            logits = ops.where(never[None, :], NEG_INF, logits)
            if not return_alignments:
                return logits, states
            return logits, states, alignments

        # beam search's drop_finished: the same step on a subset of the rows
        step.take_rows = lambda rows: self._step_on(memory.take(rows), return_alignments, readout)
        return step

    def _copy_step_on(self, memory, return_alignments, readout, source):
        """`_step_on` with the `copy_readout`: log-probabilities over the extended
        vocabulary, an extended id fed back as `unk_id`; [PAD] and the extended ids
        of no source word are never generated."""
        if source is None:
            raise ValueError(
                "A Seq2Seq with a `copy_readout` decodes against its source ids: pass "
                "`step_fn` what `encode` returned (an Encoded with its source)."
            )
        copying = self.copy_readout
        extended = copying.extended_ids(source, padding_mask(source, self.pad_id))
        never = ops.arange(self.target_vocab_size) == self.pad_id
        blocked = ops.concatenate(
            [
                ops.broadcast_to(never[None, :], (ops.shape(source)[0], self.target_vocab_size)),
                ops.logical_not(extended[1]),
            ],
            axis=-1,
        )

        def step(tokens, states):
            output, states, alignments, y = self.backbone.decoder_step_outputs(
                copying.fed_back(ops.cast(tokens, "int32")), states, memory
            )
            log_p = copying(readout(output), output, y, alignments, memory.values, extended)
            log_p = ops.where(blocked, NEG_INF, log_p)
            if not return_alignments:
                return log_p, states
            return log_p, states, alignments

        step.take_rows = lambda rows: self._copy_step_on(
            memory.take(rows), return_alignments, readout, ops.take(source, rows, axis=0)
        )
        return step

    # ---- text ------------------------------------------------------------------------
    def decode_texts(self, texts, settings):
        """Source strings (batch,) -> translations (batch, n) strings and their scores
        (batch, n), best first, n the strategy's `n_best` (TensorFlow ops: the graph a
        SavedModel serves). `settings`: `generate_ids`' keywords but the alignments."""
        import tensorflow as tf

        preprocessor = self._text_preprocessor()
        strategy = settings["strategy"]
        aligned = preprocessor.replace_unk
        # alignments, the coverage penalty and copy attention need a static width
        static = aligned or strategy.needs_alignments or self.copy_readout is not None
        ids, words, blank = preprocessor.encode(
            texts, self.max_source_length, static_width=static and not tf.executing_eagerly()
        )
        result = self.generate_ids(self._source(to_backend(ids)), aligned, **settings)
        return preprocessor.decode(from_backend(result), words, blank)

    def attention(
        self, text, strategy=None, max_length=None, *, readout_dtype="float32", fusion=None
    ):
        """What decoding one source text attended to: ``(result, source_tokens,
        output_tokens)``, the `DecodeResult` with its alignments, the source tokens
        read (a list of str) and the best hypothesis' output tokens up to its length,
        the end token included; ``kerasrnn.visualize.plot_alignments(result,
        source_tokens, output_tokens)`` draws them. `strategy`, `max_length`,
        `readout_dtype` and `fusion` are `generate`'s, so the alignments are those of
        the translation `generate` gives with the same settings."""
        preprocessor = self._text_preprocessor()
        strategy = self.sampler if strategy is None else decoding.get(strategy)
        ids, words, _ = preprocessor.encode([text], self.max_source_length)
        source = [w.decode("utf-8") for w in words.numpy()[0] if w]
        if not source:
            raise ValueError(
                f"attention: {text!r} has no source tokens, so nothing to attend to; "
                "give a sentence that is not blank."
            )
        result = self.generate(
            np.asarray(ids), strategy, max_length, readout_dtype=readout_dtype, fusion=fusion
        )
        names = preprocessor.output_tokens(from_backend(result), words).numpy()
        length = int(ops.convert_to_numpy(result.lengths)[0, 0])
        return result, source, [w.decode("utf-8") for w in names[0, 0, :length]]

    # ---- training defaults -------------------------------------------------------------
    def fit(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.fit`, with the ids of array inputs (NumPy arrays, lists) checked
        against the vocabularies first: an id outside them fails in one line naming the
        input, not as an index error inside the traced training step."""
        self._check_array_ids(x, y)
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate`, with array ids checked as in `fit`."""
        self._check_array_ids(x, y)
        return super().evaluate(x, y, *args, **kwargs)

    def _check_array_ids(self, x, y):
        if isinstance(x, dict):
            for name, size in (
                ("source", self.source_vocab_size),
                ("target_in", self.target_vocab_size),
            ):
                if isinstance(x.get(name), (np.ndarray, list)):
                    _check_ids(name, np.asarray(x[name]), size)
        if isinstance(y, (np.ndarray, list)):
            size = self.target_vocab_size
            if self.copy_readout is not None and isinstance(x, dict) and "source" in x:
                size += np.shape(x["source"])[-1]  # the extended vocabulary's ids
            _check_ids("target_out", np.asarray(y), size)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *, sampler="greedy", **kwargs):
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

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "start_id": self.start_id,
            "end_id": self.end_id,
            "max_source_length": self.max_source_length,
            "max_target_length": self.max_target_length,
            "scheduled_sampling": None
            if self.scheduled_sampling is None
            else keras.saving.serialize_keras_object(self.scheduled_sampling),
            "copy_readout": None
            if self.copy_readout is None
            else keras.saving.serialize_keras_object(self.copy_readout),
        }


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
