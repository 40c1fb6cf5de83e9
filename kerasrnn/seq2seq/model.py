"""`Seq2Seq`: the attentive encoder-decoder task around a `Seq2SeqBackbone`, trained
with `model.fit` (teacher forcing, or a `ScheduledSampling` regime) and decoded with
`generate` (greedy, sampling or beam search)."""
import keras
from keras import ops

from kerasrnn import decoding
from kerasrnn.attention.layers import AttentionMemory
from kerasrnn.ops import NEG_INF
from kerasrnn.seq2seq.backbone import END_ID, START_ID, Encoded, Seq2SeqBackbone
from kerasrnn.seq2seq.backbone import check_int as _check_int
from kerasrnn.seq2seq.sampling import ScheduledSampling

METHODS = ("greedy", "beam", "sample")
# `generate`'s readout precisions (`_decoding_readout`)
READOUT_DTYPES = ("float32", "bfloat16", "float16")


def _deserialize(obj):
    if isinstance(obj, dict):
        return keras.saving.deserialize_keras_object(obj)
    return obj


def _check_readout_dtype(dtype):
    if dtype not in READOUT_DTYPES:
        raise ValueError(f"`readout_dtype` must be one of {READOUT_DTYPES}; got {dtype!r}.")


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2Seq(keras.Model):
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
    `kerasrnn.decoding`'s step function, and `generate(source_ids, method=...)` runs
    greedy search, sampling or beam search and returns tokens, scores and attention
    alignments for every hypothesis.

    Args:
        backbone: a `kerasrnn.seq2seq.Seq2SeqBackbone`.
        start_id: the target start id fed at the first step (default 2, `[START]`).
        end_id: the target end id that finishes a hypothesis (default 3, `[END]`).
        max_source_length: if set, sources are cut to this many tokens (in training,
            generation and export), so longer input is truncated, never an error.
        max_target_length: the default number of tokens `generate` produces at most.
        scheduled_sampling: None (teacher forcing) or a `ScheduledSampling`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone
    >>> model = Seq2Seq(Seq2SeqBackbone(20, 12, embedding_dim=8, units=8))
    >>> source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> target_in = np.array([[2, 4, 5], [2, 6, 0]])
    >>> tuple(model({"source": source, "target_in": target_in}).shape)
    (2, 3, 12)
    >>> result = model.generate(source, method="beam", beam_size=3, max_length=5)
    >>> tuple(result.tokens.shape), tuple(result.alignments.shape)
    ((2, 3, 5), (2, 3, 5, 4))
    """

    def __init__(
        self,
        backbone,
        start_id=START_ID,
        end_id=END_ID,
        max_source_length=None,
        max_target_length=50,
        scheduled_sampling=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        backbone = _deserialize(backbone)
        if not isinstance(backbone, Seq2SeqBackbone):
            raise ValueError(
                "`backbone` must be a kerasrnn.seq2seq.Seq2SeqBackbone (e.g. "
                f"Seq2SeqBackbone(source_vocab_size, target_vocab_size)); got {backbone!r}."
            )
        for name, value in (("start_id", start_id), ("end_id", end_id)):
            _check_int(name, value, 0)
            if value >= backbone.target_vocab_size:
                raise ValueError(
                    f"`{name}`={value} is not a target id: target_vocab_size is "
                    f"{backbone.target_vocab_size} (ids 0..{backbone.target_vocab_size - 1})."
                )
        _check_int("max_source_length", max_source_length, 1, allow_none=True)
        _check_int("max_target_length", max_target_length, 1)
        scheduled_sampling = _deserialize(scheduled_sampling)
        if scheduled_sampling is not None and not isinstance(scheduled_sampling,
                                                             ScheduledSampling):
            raise ValueError(
                "`scheduled_sampling` must be None or a kerasrnn.seq2seq.ScheduledSampling "
                f"(e.g. ScheduledSampling('linear', 0.25, steps=5000)); got "
                f"{scheduled_sampling!r}."
            )
        self.backbone = backbone
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
            logits, _, _ = self.scheduled_sampling.decode(self.backbone, source, target_in,
                                                          training=True)
            self.scheduled_sampling.advance()
            return logits
        return self.backbone(source, target_in, training=training)[0]

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
        return self._step_on(memory, return_alignments, self._decoding_readout(readout_dtype))

    def _step_on(self, memory, return_alignments, readout):
        never = ops.arange(self.target_vocab_size) == self.pad_id

        def step(tokens, states):
            logits, states, alignments = self.backbone.call_decoder_step(
                tokens, states, memory, readout=readout)
            # [PAD] is never generated: a padding id inside an output would end it early
            # for every reader that masks by it (and the loss never trains it).
            logits = ops.where(never[None, :], NEG_INF, logits)
            if not return_alignments:
                return logits, states
            return logits, states, alignments

        # beam search's drop_finished: the same step on a subset of the rows
        step.take_rows = lambda rows: self._step_on(memory.take(rows), return_alignments,
                                                    readout)
        return step

    def _decoding_readout(self, dtype):
        """Decoder outputs -> float32 logits, the matmul's operands in `dtype`.

        logits = round(round(o) round(W)) + b, round() to `dtype`: exact for "float32";
        for "bfloat16" / "float16" the decoder output o and the kernel W are rounded,
        and so are their products' sums before the float32 bias b is added."""
        _check_readout_dtype(dtype)
        if dtype == "float32":
            return lambda outputs: ops.cast(self._logits(outputs), "float32")
        if self.tie_embeddings:
            kernel, bias = ops.transpose(self.target_embedding.embeddings), self.readout_bias
        else:
            kernel, bias = self.readout.kernel, self.readout.bias
        # cast once per decoding: the loop reuses it at every step
        kernel = ops.cast(kernel, dtype)

        def readout(outputs):
            logits = ops.cast(ops.matmul(ops.cast(outputs, dtype), kernel), "float32")
            return logits if bias is None else logits + ops.cast(bias, "float32")

        return readout

    def generate(
        self,
        source_ids,
        method="greedy",
        max_length=None,
        beam_size=4,
        n_best=None,
        length_normalization="average",
        alpha=0.6,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
        max_length_ratio=None,
        return_alignments=True,
        readout_dtype="float32",
        jit_compile="auto",
        **options,
    ):
        """Decodes a batch of sources.

        Greedy and beam search run compiled: one function per (method, options,
        source shape) is built on the first call and reused after (a `tf.function`
        graph on TensorFlow, `jax.jit` on JAX), so decoding batch after batch of one
        shape traces once instead of running the loop op by op. Called inside a
        graph (`tf.function`, `jax.jit`) it nests the compiled function in it.
        Sampling, and the torch backend, run as called.

        Args:
            source_ids: int ids `(batch, source_length)`, padded with `pad_id`.
            method: "greedy", "beam" or "sample" (see `kerasrnn.decoding`).
            max_length: the most tokens generated (default `max_target_length`).
            beam_size: beam search's k.
            n_best: beam search: how many hypotheses to return per source, best first
                (1 <= n_best <= beam_size; default beam_size). The search always
                completes beam_size hypotheses and returns the n_best best of them.
                Greedy and sampling return one.
            length_normalization: beam search's ranking: None, "average" or "gnmt".
            alpha: GNMT's exponent.
            temperature: sampling temperature.
            top_k: sampling: draw among the k most likely tokens.
            top_p: sampling: nucleus probability.
            seed: sampling seed (an int repeats the draw).
            max_length_ratio: if set, source b gets at most
                ceil(max_length_ratio * length_b) tokens.
            return_alignments: collect the attention weights of every generated
                token (the decoding loops need a static source length for them; in a
                graph with a variable source length pass False).
            readout_dtype: the precision of the readout matmul, decoding's largest
                cost: "float32" (exact) or "bfloat16" / "float16", whose rounded
                operands make it faster where the hardware multiplies them natively
                (a CPU with AVX512-BF16 or AMX; a GPU) and slower where it does not.
                Approximate: the logits carry the rounding (about 3 significant
                digits for bfloat16), so near ties can pick another token.
                `bench/README.md` measures speed and BLEU on the translator.
            jit_compile: "auto" (compile greedy and beam search as above), True
                (the same with XLA on TensorFlow, which measured 1.6-2.7x slower than
                the graph for beam search on a CPU, `bench/decoding.py`; an error
                where it cannot compile: sampling or torch) or False (run the loops
                as called: op by op in eager code).
            **options: further arguments of the `kerasrnn.decoding` function
                (`min_length`, `block_ngram_repeat`, `logits_processor`; for beam
                search `coverage_penalty_weight`, `stop_rule`, ...). Beam search drops
                the rows of finished sources (`drop_finished`, same results) except
                on JAX and under XLA; pass `drop_finished=False` to keep them.

        Returns:
            A `kerasrnn.decoding.DecodeResult` with tokens int32 `(batch, n, max_length)`
            (the end token included, `pad_id` after it), lengths and scores /
            log_probs `(batch, n)`, and alignments float32
            `(batch, n, max_length, source_length)` (zero rows after the end), where
            n = n_best for beam search and 1 otherwise (alignments None with
            `return_alignments=False`).
        """
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}, got method={method!r}.")
        max_length = self.max_target_length if max_length is None else max_length
        _check_int("max_length", max_length, 1)
        _check_int("beam_size", beam_size, 1)
        if method == "beam":
            n_best = beam_size if n_best is None else n_best
            _check_int("n_best", n_best, 1)
            if n_best > beam_size:
                raise ValueError(
                    f"`n_best`={n_best} hypotheses need at least as many beams: "
                    f"beam_size={beam_size}; raise beam_size or lower n_best."
                )
        elif n_best not in (None, 1):
            raise ValueError(
                f"`n_best`={n_best!r}: method={method!r} gives one hypothesis per source; "
                "use method='beam' for n-best lists."
            )
        _check_readout_dtype(readout_dtype)
        if jit_compile not in ("auto", True, False):
            raise ValueError(
                f"`jit_compile` must be 'auto', True or False, got {jit_compile!r}."
            )
        source_ids = self._source(source_ids)
        settings = dict(method=method, max_length=max_length, beam_size=beam_size,
                        n_best=n_best, length_normalization=length_normalization,
                        alpha=alpha, max_length_ratio=max_length_ratio,
                        return_alignments=return_alignments,
                        readout_dtype=readout_dtype, **options)
        key = _settings_key(settings)
        compilable = method != "sample" and keras.backend.backend() in _COMPILERS
        if jit_compile is True and not compilable:
            raise ValueError(
                f"`jit_compile=True`: method={method!r} on the {keras.backend.backend()} "
                "backend runs uncompiled (greedy and beam search compile on tensorflow "
                "and jax); pass jit_compile='auto' or False."
            )
        # an unhashable option (a tensor, an array) cannot key the cache: run as called
        compilable = compilable and key is not None
        if jit_compile is False or not compilable:
            return self._decode(source_ids, temperature=temperature, top_k=top_k,
                                top_p=top_p, seed=seed, **settings)
        if not self.built:  # weights made here, not in the trace (which would run twice)
            self.build()
        xla = _XLA_BY_DEFAULT if jit_compile == "auto" else True
        return self._compiled_decoder(settings, key, source_ids, xla)(source_ids)

    def _compiled_decoder(self, settings, settings_key, source_ids, xla):
        """The cached compiled `_decode` for these settings and this source shape."""
        shape = tuple(source_ids.shape)
        key = (settings_key, shape, xla)
        cache = self._generate_cache()
        if key not in cache.functions:
            cache.functions[key] = _COMPILERS[keras.backend.backend()](
                self, settings, shape, cache, xla
            )
        return cache.functions[key]

    def _generate_cache(self):
        # A plain object, not a dict: Keras and TensorFlow track dict attributes (and
        # would save tf.functions found in them with the model).
        cache = self.__dict__.get("_compiled_generate")
        if cache is None:
            cache = _GenerateCache()
            object.__setattr__(self, "_compiled_generate", cache)
        return cache

    def _decode(self, source_ids, method, max_length, beam_size, n_best,
                length_normalization, alpha, max_length_ratio, return_alignments,
                readout_dtype="float32", temperature=1.0, top_k=None, top_p=None,
                seed=None, drop_finished=None, **options):
        """`generate` without the checks and the compile cache: the decoding itself.
        Beam search drops finished examples (`drop_finished`) where shapes may change
        at run time: by default on every backend but JAX, and the TensorFlow decoder
        turns it off under XLA."""
        if drop_finished is None:
            drop_finished = keras.backend.backend() != "jax"
        readout = self._decoding_readout(readout_dtype)
        encoded = self.encode(source_ids)
        batch_size = ops.shape(source_ids)[0]
        starts = ops.full((batch_size,), self.start_id, "int32")
        if max_length_ratio is not None:
            options.update(source_lengths=ops.maximum(encoded.lengths, 1),
                           max_length_ratio=max_length_ratio)
        options.update(end_token=self.end_id, pad_token=self.pad_id)
        if method == "greedy":
            step = self._step_on(encoded.memory, return_alignments, readout)
            return decoding.greedy_search(step, starts, encoded.states, max_length,
                                          **options)
        if method == "sample":
            step = self._step_on(encoded.memory, return_alignments, readout)
            return decoding.sample(step, starts, encoded.states, max_length,
                                   temperature=temperature, top_k=top_k, top_p=top_p,
                                   seed=seed, **options)
        # beam search calls the step function on batch * beam_size rows
        step = self._step_on(encoded.tile_memory(beam_size).memory, return_alignments,
                             readout)
        # All k hypotheses are completed, then the n best kept: stopping once n_best
        # are complete would return whichever end first, often too short ones.
        result = decoding.beam_search(
            step, starts, encoded.states, max_length, beam_size=beam_size,
            n_best=beam_size, length_normalization=length_normalization, alpha=alpha,
            drop_finished=drop_finished, **options,
        )
        if n_best == beam_size:
            return result
        return decoding.DecodeResult(
            *(None if field is None else field[:, :n_best] for field in result)
        )

    # ---- training defaults -------------------------------------------------------------
    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the defaults of a sequence model: "auto" gives
        Adam (learning rate 1e-3, gradient norm clipped at 5), the masked token
        cross-entropy `kerasrnn.losses.SequenceCrossEntropy(pad_id=pad_id)` and the
        per-token `kerasrnn.metrics.MaskedAccuracy(pad_id=pad_id)`."""
        from kerasrnn.losses import SequenceCrossEntropy
        from kerasrnn.metrics import MaskedAccuracy

        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=5.0)
        if loss == "auto":
            loss = SequenceCrossEntropy(pad_id=self.pad_id)
        if metrics == "auto":
            metrics = [MaskedAccuracy(pad_id=self.pad_id)]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        # Keras skips restoring the compilation of a model whose `compile` is
        # overridden; this one only fills in defaults, so the saved arguments apply.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "start_id": self.start_id,
            "end_id": self.end_id,
            "max_source_length": self.max_source_length,
            "max_target_length": self.max_target_length,
            "scheduled_sampling": None if self.scheduled_sampling is None else
            keras.saving.serialize_keras_object(self.scheduled_sampling),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("backbone", "scheduled_sampling"):
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


class _GenerateCache:
    """`Seq2Seq.generate`'s compiled functions, by (settings, source shape), and how
    many times any of them was traced (`traces`: a test counts retracing)."""

    def __init__(self):
        self.functions, self.traces = {}, 0


def _settings_key(settings):
    """`generate`'s settings as a hashable cache key, or None if one cannot be."""
    def frozen(value):
        if isinstance(value, (list, tuple)):
            return tuple(frozen(v) for v in value)
        if isinstance(value, dict):
            return tuple(sorted((k, frozen(v)) for k, v in value.items()))
        hash(value)  # TypeError for arrays and tensors
        return value

    try:
        return frozen(settings)
    except TypeError:
        return None


def _tensorflow_decoder(model, settings, shape, cache, xla):
    """tf.function (with XLA if `xla`) over `_decode`, traced once for this source
    shape (None dimensions, inside an outer graph, stay unknown: XLA then compiles
    per concrete shape at run time)."""
    import tensorflow as tf

    def decode(source_ids):
        cache.traces += 1
        # XLA compiles static shapes only
        return tuple(model._decode(source_ids, **{"drop_finished": not xla, **settings}))

    function = tf.function(decode, jit_compile=xla, autograph=False,
                           input_signature=[tf.TensorSpec(shape, tf.int32)])
    return lambda source_ids: decoding.DecodeResult(*function(source_ids))


def _jax_decoder(model, settings, shape, cache, xla):
    """jax.jit over `_decode`, the model's variables passed in (not baked into the
    compiled function as constants, so new weights need no recompilation)."""
    import jax

    variables = model.variables

    def decode(values, source_ids):
        cache.traces += 1
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return tuple(model._decode(source_ids, **settings))

    function = jax.jit(decode)
    return lambda source_ids: decoding.DecodeResult(
        *function([v.value for v in variables], source_ids)
    )


_COMPILERS = {"tensorflow": _tensorflow_decoder, "jax": _jax_decoder}
# XLA on TensorFlow only when asked: beam-5 decoding of the reduced Multi30k model
# measured 0.37-0.61x the graph's speed with it on a CPU in two runs (bench/decoding.py;
# XLA's CPU top_k sorts, and the loop's gathers are not fused away).
_XLA_BY_DEFAULT = False
