"""How a `kerasrnn.models.GenerativeTask` decodes from ids: the readout precisions,
the checks of the ids given, and the cache of compiled decoders (a `tf.function` on
TensorFlow, `jax.jit` on JAX) that `GenerativeTask.generate_ids` keeps per strategy,
settings and input shape."""

import contextlib

import keras
import numpy as np

from kerasrnn import decoding

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
                "give the task text itself, with its preprocessor)."
            )
    return source_ids


class GenerateCache:
    """`generate`'s compiled functions, by (strategy, settings, source shape), and how
    many times any of them was traced (`traces`: a test counts retracing)."""

    def __init__(self):
        self.functions, self.traces = {}, 0


def no_gradients():
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


COMPILERS = {"tensorflow": _tensorflow_decoder, "jax": _jax_decoder}
# XLA on TensorFlow only when asked: beam-5 decoding of the reduced Multi30k model
# measured 0.37-0.61x the graph's speed with it on a CPU in two runs (bench/decoding.py;
# XLA's CPU top_k sorts, and the loop's gathers are not fused away).
XLA_BY_DEFAULT = False
