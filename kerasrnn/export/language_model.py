"""The writers of a `LanguageModel`: its SavedModel signatures (prompts in,
continuations out, the task's own `decode_texts`; and the streaming step) and its
onnxruntime / LiteRT bundle (the ids-in / ids-out graphs `LanguageModelGenerate` and
`LanguageModelStep`, with ``deploy.json`` and the numpy-only client)."""

import keras

from kerasrnn import decoding
from kerasrnn.export.bundle import export_bundle
from kerasrnn.export.runtime_decoding import runtime_strategy
from kerasrnn.models.language_model import prompt_states


def _flat_states(counts, flat):
    """Flat state tensors -> one list per layer (`counts[i]` states in layer i)."""
    states, flat = [], list(flat)
    for count in counts:
        states.append(flat[:count])
        flat = flat[count:]
    return states


def _state_shapes(task):
    _, initial_states = task.step_fn()
    return [[tuple(s.shape[1:]) for s in layer] for layer in initial_states(1)]


def _exported_strategy(task, strategy):
    strategy = task.sampler if strategy is None else decoding.get(strategy)
    if not isinstance(strategy, (decoding.GreedySearch, decoding.BeamSearch)):
        raise ValueError(f"export runs greedy or beam search, got {type(strategy).__name__}.")
    return strategy


class LanguageModelStep(keras.layers.Layer):
    """The language model's step as a layer: ``[token (batch,), states...]`` (the states
    flat, layer by layer) -> ``[logits (batch, vocabulary), states...]``: the streaming
    step of the ONNX / LiteRT export."""

    def __init__(self, language_model, counts, **kwargs):
        super().__init__(**kwargs)
        self.language_model, self.counts = language_model, list(counts)

    def call(self, inputs):
        step, _ = self.language_model.step_fn()
        logits, states = step(inputs[0], _flat_states(self.counts, inputs[1:]))
        return [logits] + [s for layer in states for s in layer]


class LanguageModelGenerate(keras.layers.Layer):
    """Generation without the strings: ``[prompt ids (batch, length) padded on the
    right, each starting with the boundary token, lengths (batch,)]`` -> continuation
    ids (batch, max_length), the first hypothesis of `strategy` (`runtime_strategy`
    makes one the runtimes hold)."""

    def __init__(self, language_model, strategy, max_length, **kwargs):
        super().__init__(**kwargs)
        self.language_model, self.strategy, self.max_length = language_model, strategy, max_length

    def call(self, inputs):
        ids, lengths = inputs
        step, initial_states = self.language_model.step_fn()
        states, start = prompt_states(step, initial_states, ids, lengths)
        end = self.language_model.end_id
        result = self.strategy(step, start, states, self.max_length, end_token=end)
        return keras.ops.cast(result.tokens[:, 0], "int32")


def language_model_endpoints(task, strategy=None, max_length=None):
    """``serving_default(prompt: string[batch]) -> {"continuation": string[batch]}``
    (tokenisation, the prompt pass, decoding with greedy or beam search,
    detokenisation: `LanguageModel.decode_texts`) and the streaming step
    ``step(token: int32[batch], state_<layer>_<i>: float32[batch, units]...) ->
    {"logits", "state_<layer>_<i>"...}`` (zeros are the initial states)."""
    import tensorflow as tf

    strategy = _exported_strategy(task, strategy)
    settings = dict(
        strategy=strategy,
        max_length=max_length or task.max_length,
        readout_dtype="float32",
        jit_compile="auto",
        fusion=None,
    )
    step, _ = task.step_fn()

    def serve(prompt):
        continuations, _ = task.decode_texts(prompt, settings)
        return {"continuation": continuations[:, 0]}

    shapes = _state_shapes(task)
    counts = [len(layer) for layer in shapes]
    names = [f"state_{i}_{j}" for i, n in enumerate(counts) for j in range(n)]

    def stream_step(token, *flat):
        logits, states = step(token, _flat_states(counts, flat))
        return {"logits": logits, **dict(zip(names, [s for ss in states for s in ss]))}

    step_signature = [tf.TensorSpec([None], tf.int32, name="token")] + [
        tf.TensorSpec([None, *shape], tf.float32, name=name)
        for name, shape in zip(names, [s for layer in shapes for s in layer])
    ]
    return {
        "serving_default": (serve, [tf.TensorSpec([None], tf.string, name="prompt")]),
        "step": (stream_step, step_signature),
    }


def language_model_bundle(
    task, path, format_name, sequence_length=64, quantization=None, strategy=None, max_length=None
):
    """The language model for onnxruntime or LiteRT (`export_bundle`) as two graphs:
    ``generate`` (prompt ids (batch, length) and their lengths (batch,) -> the
    continuation's ids (batch, max_length), the prompts of any length in an ONNX file
    and of `sequence_length` in a LiteRT file (batch 1): the prompt pass and the
    decoding loop, `runtime_strategy`) and ``step``, the streaming step (token (batch,)
    and every layer's states -> logits (batch, vocabulary) and the new states); with the
    vocabulary and the
    numpy-only ``client.py`` (`Client.generate`, `Client.stream`)."""
    if task.backbone.bidirectional:
        raise ValueError(
            f"the {format_name} export takes a forward language model; a biLM exports "
            "its SavedModel (which generates with its forward LM)."
        )
    preprocessor = task.preprocessor
    max_length = max_length or task.max_length
    shapes = _state_shapes(task)
    token = keras.Input((), dtype="int32", name="token")
    states = [
        keras.Input(shape, name=f"state_{i}_{j}")
        for i, layer in enumerate(shapes)
        for j, shape in enumerate(layer)
    ]
    counts = [len(layer) for layer in shapes]
    step = LanguageModelStep(task, counts)([token, *states])
    stepper = keras.Model([token, *states], step, name="step")
    # an ONNX file takes prompts of any length; a LiteRT file's shapes are fixed
    width = None if format_name == "onnx" else sequence_length
    ids = keras.Input((width,), dtype="int32", name="prompt_ids")
    lengths = keras.Input((), dtype="int32", name="prompt_length")
    chosen = runtime_strategy(_exported_strategy(task, strategy))
    generated = LanguageModelGenerate(task, chosen, max_length)([ids, lengths])
    generator = keras.Model([ids, lengths], generated, name="generate")
    metadata = {
        "task": "language_model",
        "level": preprocessor.level,
        "first_token": preprocessor.boundary_id,
        "gen_length": max_length,
        "states": [[list(shape) for shape in layer] for layer in shapes],
        "vocabularies": {"words": preprocessor.vocabulary.tokens},
    }
    models = {"generate": (generator, None), "step": (stepper, None)}
    return export_bundle(path, models, format_name, metadata, sequence_length, quantization)
