"""`Task` and `GenerativeTask`: what every library task shares (keras-hub's task shape):
a backbone and a head as one `keras.Model`, a `Preprocessor` for text in and text out,
`predict` / `generate` on strings, presets (`from_preset`, `save_to_preset`) and the
saved compilation restored on loading.

Both are mixins listed before `keras.Model` (``class TextClassifier(Task,
keras.Model)``), not subclasses of it: Keras turns the base of the first functional
model built into a `Functional`, which would then break the subclassed tasks
(`LanguageModel`, `Seq2Seq`) sharing that base.
"""

import importlib
from typing import Any, Callable

import keras
import numpy as np

from kerasrnn import decoding
from kerasrnn.models import generation
from kerasrnn.models.preprocessor import Preprocessor, is_text
from kerasrnn.models.preset import load_preset, save_preset
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_int

# Texts per batch of `predict` / `generate` on strings, when no batch size is given.
TEXT_BATCH_SIZE = 64


class Task:
    """A task: its ``backbone`` (a `kerasrnn.models.Backbone`), the head it adds, and
    its ``preprocessor`` (None, or the task's `Preprocessor`: text to ids and back).

    `predict` takes the model's ids (Keras' own `predict`) or text: with a
    preprocessor, a string (or a list of them; token lists for a tagger, sentence pairs
    for a pair classifier) comes back as the task's readable result, computed batch by
    batch in order of length. `from_preset(folder)` loads a task that `save_to_preset`
    or a recipe's ``train`` wrote; `compile()` fills in the task's defaults, and a
    loaded task gets back the compilation it was saved with.
    """

    preprocessor_cls: Any = Preprocessor
    # modules whose Keras objects the task's saved compilation may name (imported
    # before it is restored: they register their objects on import)
    compile_modules: tuple = ()
    # what the mixin's methods use of the keras.Model it is mixed into (for the checker)
    name: str
    trainable: bool
    built: bool
    optimizer: Any
    trainable_variables: list
    compile: Callable[..., Any]
    predict_on_batch: Callable[..., Any]

    def __init__(self, *args, preprocessor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.preprocessor = self._checked_preprocessor(preprocessor)

    @classmethod
    def _checked_preprocessor(cls, preprocessor):
        preprocessor = deserialize(preprocessor)
        if preprocessor is not None and not isinstance(preprocessor, cls.preprocessor_cls):
            raise ValueError(
                f"`preprocessor` must be None or a kerasrnn "
                f"{cls.preprocessor_cls.__name__}; got {type(preprocessor).__name__}."
            )
        return preprocessor

    def _text_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                f"this {type(self).__name__} has no preprocessor, so it takes token ids, "
                f"not text: give ids, or set `preprocessor=` (a "
                f"{self.preprocessor_cls.__name__}) when building it."
            )
        return self.preprocessor

    # ---- text in, results out ----------------------------------------------------------
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """`keras.Model.predict` on the model's ids; on text (with a preprocessor), the
        task's readable results, one per example in the order given (a single example
        gives its result alone)."""
        if is_text(x):
            return self._each_text_batch(x, batch_size, self._text_results)
        return super().predict(
            x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks
        )

    def _each_text_batch(self, x, batch_size, results_of):
        """``results_of(examples)`` over `batch_size` examples of `x` at a time, the
        examples taken in order of length (a batch is padded to its longest), the
        results put back in the order given."""
        preprocessor = self._text_preprocessor()
        examples, single = preprocessor.examples(x)
        batch_size = check_int("batch_size", batch_size or TEXT_BATCH_SIZE)
        order = sorted(range(len(examples)), key=lambda i: preprocessor.length(examples[i]))
        results: list = [None] * len(examples)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            for row, result in zip(rows, results_of([examples[i] for i in rows])):
                results[row] = result
        return results[0] if single else results

    def _text_results(self, examples):
        """The readable results of a batch of checked examples (each task's own)."""
        raise NotImplementedError

    def _text_function(self, name, function, *specs):
        """`function` of text tensors (TensorFlow ops around the model) as one
        `tf.function` per `name` on TensorFlow, traced once for `specs` (every batch
        shape shares it); as it is on the other backends."""
        if keras.backend.backend() != "tensorflow":
            return function
        import tensorflow as tf

        functions = self.__dict__.setdefault("_text_functions", {})
        if name not in functions:
            functions[name] = tf.function(Traced(function), input_signature=list(specs))
        return functions[name]

    def _call_on(self, inputs):
        """The model called on the preprocessor's inputs (TensorFlow tensors), in
        inference; on another backend, through NumPy both ways."""
        return from_backend(self(to_backend(inputs), training=False))

    # ---- presets -----------------------------------------------------------------------
    @classmethod
    def from_preset(cls, preset, compile=True):
        """The task saved in the preset folder `preset` (by `save_to_preset`, or a run
        folder a recipe's ``train`` wrote), with its preprocessor, ready to `predict`.

        Args:
            preset: the folder (it holds ``preset.json``).
            compile: restore the compilation the task was saved with (False: an
                uncompiled task, for `predict` / `generate` only).

        Raises:
            kerasrnn.models.PresetError: no preset there, a run of an earlier version,
                or a preset of another task class (one line, naming the fix).
        """
        return load_preset(preset, cls, compile=compile)

    def save_to_preset(self, preset):
        """Writes the task (its backbone, head and preprocessor, one ``task.keras``) and
        ``preset.json`` into the folder `preset`, which `from_preset` and the recipes'
        ``predict`` / ``export`` read. Returns `preset`."""
        return save_preset(self, preset)

    # ---- configuration -----------------------------------------------------------------
    def get_config(self):
        # Not Keras' own: a functional model's is its graph, which no task's constructor
        # takes; each task adds its constructor's arguments.
        return {
            "name": self.name,
            "trainable": self.trainable,
            "preprocessor": None
            if self.preprocessor is None
            else keras.saving.serialize_keras_object(self.preprocessor),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**{key: deserialize(value) for key, value in config.items()})

    def compile_from_config(self, config):
        # Keras skips restoring the compilation of a model whose `compile` is
        # overridden; the tasks' `compile` only fills in defaults, so the saved
        # arguments apply.
        for module in self.compile_modules:
            importlib.import_module(module)
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)


class GenerativeTask(Task):
    """A task that generates sequences: `kerasrnn.models.LanguageModel` and
    `kerasrnn.seq2seq.Seq2Seq`. `generate` runs a `kerasrnn.decoding` strategy on token
    ids, or on text through the preprocessor; `compile(sampler=...)` sets the default
    strategy.

    What the task provides: `_generation_inputs(ids)` (the checked int ids),
    `_decoding_setup(ids, rows, aligned, readout)` -> ``(step, start_tokens, states,
    source_lengths)`` (what the strategy runs: an encoder-decoder encodes the source, a
    language model reads the prompt), `_logits(outputs)`, `_readout_weights()` (the
    readout's kernel and bias), `_generated_texts(examples, strategy, settings)` (the
    text path), and `end_id`, `pad_id`, `max_target_length`.
    """

    max_target_length: int
    start_id: int
    end_id: int
    pad_id: int
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

    def generate(
        self,
        inputs: Any,
        strategy: "str | dict | decoding.DecodingStrategy | None" = None,
        max_length: int | None = None,
        *,
        return_alignments: bool | None = None,
        readout_dtype: str = "float32",
        jit_compile: "bool | str" = "auto",
        fusion: "decoding.ShallowFusion | None" = None,
        return_scores: bool = False,
        batch_size: int | None = None,
    ) -> Any:
        """Decodes a batch of token ids, or text.

        Greedy and beam search run compiled: one function per (strategy, settings,
        input shape) is built on the first call and reused after (a `tf.function`
        graph on TensorFlow, `jax.jit` on JAX), so decoding batch after batch of one
        shape traces once instead of running the loop op by op; a new strategy or
        shape traces once more (expected, and silent: each has its own function).
        Called inside a graph (`tf.function`, `jax.jit`) it nests the compiled function
        in it. Sampling, and the torch backend, run as called.

        Args:
            inputs: int ids `(batch, length)` padded with `pad_id` (a `Seq2Seq`'s
                sources; a `LanguageModel`'s prompts, each starting with the boundary
                token it was trained to read before a sentence); or, with a
                preprocessor, text: a string or a list of strings (decoded in
                batches of `batch_size`, in order of length).
            strategy: a `kerasrnn.decoding` strategy (`GreedySearch()`,
                `RandomSampling(...)`, `BeamSearch(...)`, your own subclass), a name
                ("greedy", "sample", "beam") or None: the task's `sampler` (set by
                `compile(sampler=...)`; greedy search before). Beam search completes
                all `beam_size` hypotheses, then returns the `n_best` best. Its
                `constraints` may set `max_length_ratio`: source b then gets at most
                ceil(max_length_ratio * length_b) tokens.
            max_length: the most tokens generated (default `max_target_length`).
            return_alignments: ids: collect the attention weights of every generated
                token (default True; the decoding loops need a static source length
                for them: in a graph with a variable source length pass False). Text:
                not taken (`Seq2Seq.attention` gives one text's alignments).
            readout_dtype: the precision of the readout matmul, decoding's largest
                cost: "float32" (exact) or "bfloat16" / "float16", whose rounded
                operands make it faster where the hardware multiplies them natively
                (a CPU with AVX512-BF16 or AMX; a GPU) and slower where it does not.
                Approximate: the logits carry the rounding (about 3 significant
                digits for bfloat16), so near ties can pick another token.
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
            return_scores: text only: each result is the list of the strategy's
                `n_best` hypotheses, best first, as ``{"text", "score"}`` dicts (else
                the best hypothesis' text alone).
            batch_size: text only: texts decoded per batch (default 64).

        Returns:
            For ids, a `kerasrnn.decoding.DecodeResult` with tokens int32 `(batch, n,
            max_length)` (the end token included, `pad_id` after it), lengths and
            scores / log_probs `(batch, n)`, and alignments float32 `(batch, n,
            max_length, source_length)` (zero rows after the end; None with
            `return_alignments=False` or without attention), where n = the
            strategy's `n_best`. For text, per input the best hypothesis' text, or
            with `return_scores` the `n_best` hypotheses with their scores; a single
            string gives its result alone.
        """
        strategy = self.sampler if strategy is None else decoding.get(strategy)
        max_length = self.max_target_length if max_length is None else max_length
        max_length = check_int("max_length", max_length)
        generation.check_readout_dtype(readout_dtype)
        if jit_compile not in ("auto", True, False):
            raise ValueError(f"`jit_compile` must be 'auto', True or False, got {jit_compile!r}.")
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
            readout_dtype=readout_dtype,
            jit_compile=jit_compile,
            fusion=fusion,
        )
        if is_text(inputs):
            if return_alignments:
                raise ValueError(
                    "`return_alignments` is for token ids; on text, "
                    "Seq2Seq.attention(text) gives one text's alignments."
                )

            def hypotheses(examples):
                found = self._generated_texts(examples, settings)
                if return_scores:
                    return [[{"text": t, "score": s} for t, s in row] for row in found]
                return [row[0][0] for row in found]

            return self._each_text_batch(inputs, batch_size, hypotheses)
        if return_scores or batch_size is not None:
            raise ValueError(
                "`return_scores` and `batch_size` are for text; a DecodeResult holds the "
                "scores of the batch of ids given."
            )
        return self.generate_ids(
            self._generation_inputs(inputs), return_alignments is not False, **settings
        )

    def _generated_texts(self, examples, settings):
        """Per example of a batch of checked text examples, its hypotheses as ``(text,
        score)`` pairs, best first."""
        import tensorflow as tf

        strings, scores = self._text_decoder(settings)(tf.constant(examples, tf.string))
        return [
            [(t.decode("utf-8"), float(s)) for t, s in zip(row, row_scores)]
            for row, row_scores in zip(np.asarray(strings), np.asarray(scores))
        ]

    def decode_texts(self, texts, settings):
        """Text (batch,) strings -> the generated texts (batch, n) strings and their
        scores (batch, n), best first, n the strategy's `n_best` (TensorFlow ops
        around the decoding: the graph a SavedModel serves; each task's own).
        `settings`: `generate_ids`' keywords but the alignments."""
        raise NotImplementedError

    def _text_decoder(self, settings):
        """`decode_texts` with `settings`: on TensorFlow one traced function per
        strategy and settings (every batch shape shares it), made once; eager on the
        other backends (their decoders compile per shape)."""
        if keras.backend.backend() != "tensorflow":
            return lambda texts: self.decode_texts(texts, settings)
        import tensorflow as tf

        key = settings_key(settings)
        functions = self.__dict__.setdefault("_text_decoders", {})
        if key is None or key not in functions:
            function = tf.function(
                Traced(self.decode_texts, settings),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
            if key is None:
                return function
            functions[key] = function
        return functions[key]

    def generate_ids(
        self, ids, return_alignments, strategy, max_length, readout_dtype, jit_compile, fusion
    ):
        """`generate` on checked ids, its settings checked: the compile cache, then the
        decoding."""
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
        compilable = strategy.jit_compilable and keras.backend.backend() in generation.COMPILERS
        if jit_compile is True and not compilable:
            raise ValueError(
                f"`jit_compile=True`: {type(strategy).__name__} on the "
                f"{keras.backend.backend()} backend runs uncompiled (greedy and beam "
                "search compile on tensorflow and jax); pass jit_compile='auto' or False."
            )
        # an unhashable option (a tensor, an array) cannot key the cache: run as called
        if jit_compile is False or not compilable or key is None:
            with generation.no_gradients():
                return self._decode(ids, **settings)
        if not self.built:  # weights made here, not in the trace (which would run twice)
            self.build()
        xla = generation.XLA_BY_DEFAULT if jit_compile == "auto" else True
        key = (key, max_length, bool(return_alignments), readout_dtype, tuple(ids.shape), xla)
        cache = self._generate_cache()
        if key not in cache.functions:
            compiler = generation.COMPILERS[keras.backend.backend()]
            cache.functions[key] = compiler(self, settings, tuple(ids.shape), cache, xla)
        return cache.functions[key](ids)

    def _generate_cache(self):
        # A plain object, not a dict: Keras and TensorFlow track dict attributes (and
        # would save tf.functions found in them with the model).
        cache = self.__dict__.get("_compiled_generate")
        if cache is None:
            cache = generation.GenerateCache()
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
        generation.check_readout_dtype(dtype)
        if dtype == "float32":
            return lambda outputs: keras.ops.cast(self._logits(outputs), "float32")
        kernel, bias = self._readout_weights()
        # cast once per decoding: the loop reuses it at every step
        kernel = keras.ops.cast(kernel, dtype)

        def readout(outputs):
            logits = keras.ops.matmul(keras.ops.cast(outputs, dtype), kernel)
            logits = keras.ops.cast(logits, "float32")
            return logits if bias is None else logits + keras.ops.cast(bias, "float32")

        return readout


def settings_key(settings):
    """What a traced `decode_texts` depends on: the strategy and the decoding settings
    (a fusion by its own ``cache_key``); None where one cannot key a cache (the call
    then traces a function of its own)."""
    keys = [settings["strategy"].cache_key()]
    for name, value in sorted(settings.items()):
        if name == "strategy":
            continue
        if name == "fusion" and value is not None:
            value = getattr(value, "cache_key", lambda: None)()
            keys.append(None if value is None else (name, value))
        else:
            keys.append((name, value))
    return None if None in keys else tuple(keys)


class Traced:
    """What one `tf.function` of a task traces: `function` with `arguments` after the
    call's own. A callable object, not a closure: TensorFlow counts traces per
    function code, so the closures of one `def` (one per task, one per strategy) would
    share one count and warn of retracing, though each is traced once."""

    def __init__(self, function, *arguments):
        self.function, self.arguments = function, arguments

    def __call__(self, *args):
        return self.function(*args, *self.arguments)


def to_backend(structure):
    """TensorFlow tensors (the preprocessors') as the backend takes them: themselves on
    TensorFlow, NumPy arrays on the other backends."""
    if keras.backend.backend() == "tensorflow":
        return structure
    return keras.tree.map_structure(np.asarray, structure)


def from_backend(structure):
    """The backend's tensors as the preprocessors' TensorFlow ops take them: themselves
    on TensorFlow, NumPy arrays from the other backends (None kept)."""
    if keras.backend.backend() == "tensorflow":
        return structure
    return keras.tree.map_structure(
        lambda x: None if x is None else keras.ops.convert_to_numpy(x), structure
    )
