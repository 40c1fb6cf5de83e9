"""Generation shared by the sequence tasks (`Seq2Seq`, `kerasrnn.models.LanguageModel`):
`generate` with a decoding strategy object, the model's default strategy
(`compile(sampler=...)`), the readout precision and the cache of compiled decoders.

`GenerationMixin` needs of the model: `_generation_inputs(ids)` (the checked int ids),
`_decoding_setup(ids, rows, aligned, readout)` -> `(step, start_tokens, states,
source_lengths)` (what the strategy runs: an encoder-decoder encodes the source, a
language model reads the prompt), `_logits(outputs)`, `_readout_weights()` (the readout's
kernel and bias), and `end_id`, `pad_id`, `max_target_length`.
"""

import contextlib
from typing import Any, Callable

import keras
import numpy as np
from keras import ops

from kerasrnn import decoding
from kerasrnn.validation import check_int

# `generate`'s readout precisions (`_decoding_readout`)
READOUT_DTYPES = ("float32", "bfloat16", "float16")


def check_readout_dtype(dtype):
    if dtype not in READOUT_DTYPES:
        raise ValueError(f"`readout_dtype` must be one of {READOUT_DTYPES}; got {dtype!r}.")


def check_source_ids(source_ids, pad_id):
    """Token ids given as strings or as a ragged list fail here, in one line, before any
    op runs (a tensor or an array of numbers passes through)."""
    if isinstance(source_ids, (list, tuple)):
        try:
            values = np.asarray(source_ids)
        except ValueError:
            values = None
        if values is None or values.dtype == object:
            lengths = sorted({len(row) for row in source_ids if isinstance(row, (list, tuple))})
            raise ValueError(
                f"`source_ids` is a ragged list (rows of lengths {lengths}): pad every "
                f"row to one length with pad_id={pad_id}, e.g. "
                f"keras.utils.pad_sequences(rows, padding='post', value={pad_id})."
            )
        source_ids = values
    dtype = getattr(source_ids, "dtype", None)
    if dtype is not None:
        if isinstance(source_ids, np.ndarray) and dtype.kind in "USO":
            kind = "string"
        else:
            try:
                kind = keras.backend.standardize_dtype(dtype)
            except ValueError:
                kind = str(dtype)
        if kind == "string" or "str" in kind:
            raise TypeError(
                "`source_ids` holds strings; `generate` takes integer token ids: map the "
                "text to ids with the vocabulary the model was trained with first (or "
                "decode text with kerasrnn.export.TextTranslator)."
            )
    return source_ids


class _GenerateCache:
    """`generate`'s compiled functions, by (strategy, settings, source shape), and how
    many times any of them was traced (`traces`: a test counts retracing)."""

    def __init__(self):
        self.functions, self.traces = {}, 0


class GenerationMixin:
    """`generate` and the default decoding strategy of a sequence model: the same
    `kerasrnn.decoding` strategies, compile cache and readout precisions for an
    encoder-decoder and a language model (each task supplies `_decoding_setup`)."""

    # What the model provides (declared for the type checker; no values here, so the
    # model's own attributes and Keras' methods are not shadowed).
    max_target_length: int
    start_id: int
    end_id: int
    pad_id: int
    built: bool
    build: Callable[..., Any]
    _generation_inputs: Callable[..., Any]
    _decoding_setup: Callable[..., Any]
    _logits: Callable[..., Any]
    _readout_weights: Callable[..., Any]

    @property
    def sampler(self):
        """The default decoding strategy of `generate` (`compile(sampler=...)`;
        `GreedySearch()` before)."""
        sampler = self.__dict__.get("_sampler")
        return decoding.GreedySearch() if sampler is None else sampler

    def set_sampler(self, sampler):
        # A plain attribute Keras does not track (it is no layer, no variable).
        object.__setattr__(self, "_sampler", decoding.get(sampler))

    def compile_from_config(self, config):
        # Keras skips restoring the compilation of a model whose `compile` is
        # overridden; the tasks' `compile` only fills in defaults, so the saved
        # arguments apply.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def generate(
        self,
        source_ids: Any,
        strategy: "str | dict | decoding.DecodingStrategy | None" = None,
        max_length: int | None = None,
        *,
        return_alignments: bool = True,
        readout_dtype: str = "float32",
        jit_compile: "bool | str" = "auto",
        fusion: "decoding.ShallowFusion | None" = None,
    ) -> decoding.DecodeResult:
        """Decodes a batch of sources.

        Greedy and beam search run compiled: one function per (strategy, settings,
        source shape) is built on the first call and reused after (a `tf.function`
        graph on TensorFlow, `jax.jit` on JAX), so decoding batch after batch of one
        shape traces once instead of running the loop op by op; a new strategy or
        source shape traces once more (expected, and silent: each has its own
        function). Called inside a graph (`tf.function`, `jax.jit`) it nests the
        compiled function in it. Sampling, and the torch backend, run as called.

        Args:
            source_ids: int ids `(batch, source_length)`, padded with `pad_id`.
            strategy: a `kerasrnn.decoding` strategy (`GreedySearch()`,
                `RandomSampling(...)`, `BeamSearch(...)`, your own subclass), a name
                ("greedy", "sample", "beam") or None: the model's `sampler` (set by
                `compile(sampler=...)`; greedy search before). Beam search completes
                all `beam_size` hypotheses, then returns the `n_best` best. Its
                `constraints` may set `max_length_ratio`: source b then gets at most
                ceil(max_length_ratio * length_b) tokens.
            max_length: the most tokens generated (default `max_target_length`).
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
            fusion: None, or a `kerasrnn.decoding.ShallowFusion` (a language model of
                the target side, sharing the target vocabulary, its weighted
                log-probabilities added to the model's at every step of any strategy;
                the result's scores are then the fused ones). Any object with
                ``fuse(step_fn, start_tokens, states) -> (step_fn, states)`` works.

        Returns:
            A `kerasrnn.decoding.DecodeResult` with tokens int32 `(batch, n, max_length)`
            (the end token included, `pad_id` after it), lengths and scores /
            log_probs `(batch, n)`, and alignments float32
            `(batch, n, max_length, source_length)` (zero rows after the end), where
            n = the strategy's `n_best` (1 for greedy search and sampling;
            alignments None with `return_alignments=False`).
        """
        strategy = self.sampler if strategy is None else decoding.get(strategy)
        max_length = self.max_target_length if max_length is None else max_length
        max_length = check_int("max_length", max_length)
        check_readout_dtype(readout_dtype)
        if jit_compile not in ("auto", True, False):
            raise ValueError(f"`jit_compile` must be 'auto', True or False, got {jit_compile!r}.")
        source_ids = self._generation_inputs(source_ids)
        if fusion is not None and not callable(getattr(fusion, "fuse", None)):
            raise TypeError(
                "`fusion` must be a kerasrnn.decoding.ShallowFusion (an object with "
                f"fuse(step_fn, start_tokens, states)) or None; got {fusion!r}."
            )
        if fusion is not None and getattr(self, "copy_readout", None) is not None:
            raise ValueError(
                "`fusion` with a `copy_readout`: copy attention decodes over an extended "
                "vocabulary (source positions past the target ids) that a language model "
                "does not predict; decode without fusion."
            )
        settings = dict(
            strategy=strategy,
            max_length=max_length,
            return_alignments=bool(return_alignments),
            readout_dtype=readout_dtype,
            fusion=fusion,
        )
        key = strategy.cache_key()
        if key is not None and fusion is not None:
            fusion_key = getattr(fusion, "cache_key", lambda: None)()
            key = None if fusion_key is None else (key, fusion_key)
        compilable = strategy.jit_compilable and keras.backend.backend() in _COMPILERS
        if jit_compile is True and not compilable:
            raise ValueError(
                f"`jit_compile=True`: {type(strategy).__name__} on the "
                f"{keras.backend.backend()} backend runs uncompiled (greedy and beam "
                "search compile on tensorflow and jax); pass jit_compile='auto' or False."
            )
        # an unhashable option (a tensor, an array) cannot key the cache: run as called
        if jit_compile is False or not compilable or key is None:
            with _no_gradients():
                return self._decode(source_ids, **settings)
        if not self.built:  # weights made here, not in the trace (which would run twice)
            self.build()
        xla = _XLA_BY_DEFAULT if jit_compile == "auto" else True
        key = (
            key,
            max_length,
            bool(return_alignments),
            readout_dtype,
            tuple(source_ids.shape),
            xla,
        )
        cache = self._generate_cache()
        if key not in cache.functions:
            cache.functions[key] = _COMPILERS[keras.backend.backend()](
                self, settings, tuple(source_ids.shape), cache, xla
            )
        return cache.functions[key](source_ids)

    def _generate_cache(self):
        # A plain object, not a dict: Keras and TensorFlow track dict attributes (and
        # would save tf.functions found in them with the model).
        cache = self.__dict__.get("_compiled_generate")
        if cache is None:
            cache = _GenerateCache()
            object.__setattr__(self, "_compiled_generate", cache)
        return cache

    def _decode(
        self,
        source_ids,
        strategy,
        max_length,
        return_alignments,
        readout_dtype="float32",
        fusion=None,
    ):
        """`generate` without the checks and the compile cache: the decoding itself."""
        rows = strategy.rows_per_example
        n_best = strategy.n_best
        trimmed = strategy.stops_at_n_best and n_best < rows
        if trimmed:
            # All hypotheses are completed, then the n best kept: stopping once n_best
            # are complete would return whichever end first, often too short ones.
            strategy = strategy.with_options(n_best=None)
        readout = self._decoding_readout(readout_dtype)
        # The strategy's own needs (the coverage penalty) get the alignments even when
        # the caller does not want them back.
        aligned = return_alignments or strategy.needs_alignments
        step, start_tokens, states, source_lengths = self._decoding_setup(
            source_ids, rows, aligned, readout
        )
        if fusion is not None:
            step, states = fusion.fuse(step, start_tokens, states)
        result = strategy(
            step,
            start_tokens,
            states,
            max_length,
            end_token=self.end_id,
            pad_token=self.pad_id,
            source_lengths=source_lengths,
        )
        if trimmed:
            result = decoding.DecodeResult(
                *(None if field is None else field[:, :n_best] for field in result)
            )
        if not return_alignments:
            result = result._replace(alignments=None)
        return result

    def _decoding_readout(self, dtype):
        """Decoder outputs -> float32 logits, the matmul's operands in `dtype`.

        logits = round(round(o) round(W)) + b, round() to `dtype`: exact for "float32";
        for "bfloat16" / "float16" the decoder output o and the kernel W are rounded,
        and so are their products' sums before the float32 bias b is added."""
        check_readout_dtype(dtype)
        if dtype == "float32":
            return lambda outputs: ops.cast(self._logits(outputs), "float32")
        kernel, bias = self._readout_weights()
        # cast once per decoding: the loop reuses it at every step
        kernel = ops.cast(kernel, dtype)

        def readout(outputs):
            logits = ops.cast(ops.matmul(ops.cast(outputs, dtype), kernel), "float32")
            return logits if bias is None else logits + ops.cast(bias, "float32")

        return readout


def _no_gradients():
    """Generation records no gradients. Only torch records them eagerly: on a GPU one beam
    search (batch 256, 200 source steps, 1024 units) kept 35.3 GiB of step tensors for a
    backward pass that never comes, 5.2 GiB without (bench/README.md, GPU)."""
    if keras.backend.backend() != "torch":
        return contextlib.nullcontext()
    import torch

    return torch.no_grad()


def _without_dropping(strategy):
    """The strategy with beam search's `drop_finished` off where it was "auto": XLA
    compiles static shapes only."""
    if getattr(strategy, "drop_finished", False) != "auto":
        return strategy
    return strategy.with_options(drop_finished=False)


class _Decode:
    """The function one compiled TensorFlow decoder traces. A callable object, not a
    closure: TensorFlow counts traces per function code, so the closures of one `def`
    would share one count and print its retracing warning from the sixth strategy
    tried on, though each is traced once."""

    def __init__(self, model, settings, cache):
        self.model, self.settings, self.cache = model, settings, cache

    def __call__(self, source_ids):
        self.cache.traces += 1
        return tuple(self.model._decode(source_ids, **self.settings))


def _tensorflow_decoder(model, settings, shape, cache, xla):
    """tf.function (with XLA if `xla`) over `_decode`, traced once for this source
    shape (None dimensions, inside an outer graph, stay unknown: XLA then compiles
    per concrete shape at run time)."""
    import tensorflow as tf

    if xla:
        settings = dict(settings, strategy=_without_dropping(settings["strategy"]))
    function = tf.function(
        _Decode(model, settings, cache),
        jit_compile=xla,
        autograph=False,
        input_signature=[tf.TensorSpec(shape, tf.int32)],
    )
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
