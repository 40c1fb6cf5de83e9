"""A `TextTranslator`'s graphs for onnxruntime and LiteRT: the whole decoding loop as one
ids-in / ids-out model per strategy (`GenerateIds`), and the streaming pair, the
encoder (`EncodeSource`) and one decoder step (`DecoderStep`), written with
``deploy.json`` and the numpy-only client by `export_translator_runtime`."""

import keras
import numpy as np

from kerasrnn.export.runtime_decoding import runtime_strategy


class GenerateIds(keras.layers.Layer):
    """A `Seq2Seq`'s `generate` with one strategy as a layer: source ids (batch, S)
    -> ``[tokens (batch, n, max_length) int32, scores (batch, n) float32]``, so that
    a functional model (and the ONNX / LiteRT export) holds the decoding loop."""

    def __init__(self, seq2seq, strategy, settings, **kwargs):
        super().__init__(**kwargs)
        self.seq2seq, self.strategy, self.settings = seq2seq, strategy, dict(settings)

    def call(self, ids):
        result = self.seq2seq.generate(ids, self.strategy, **self.settings)
        return [
            keras.ops.cast(result.tokens, "int32"),
            keras.ops.cast(result.scores, "float32"),
        ]


class EncodeSource(keras.layers.Layer):
    """`Seq2Seq.encode` as a layer: source ids (batch, S) -> ``[memory tensors...,
    decoder states..., lengths]``, flat (`keras.tree.flatten` of the `Encoded`): the
    streaming export's encoder."""

    def __init__(self, seq2seq, **kwargs):
        super().__init__(**kwargs)
        self.seq2seq = seq2seq

    def call(self, ids):
        encoded = self.seq2seq.encode(ids)
        return [
            *keras.tree.flatten(encoded.memory),
            *keras.tree.flatten(encoded.states),
            encoded.lengths,
        ]


class DecoderStep(keras.layers.Layer):
    """One decoder step of a `Seq2Seq` (`step_fn`, no alignments) as a layer:
    ``[token (batch,), states..., memory...]`` -> ``[logits, states...]`` (flat, in the
    order of `template`, an `Encoded` of one source): the streaming export's step."""

    def __init__(self, seq2seq, template, **kwargs):
        super().__init__(**kwargs)
        self.seq2seq = seq2seq
        self.memory_template, self.states_template = template.memory, template.states

    def call(self, inputs):
        count = len(keras.tree.flatten(self.states_template))
        token, states, memory = inputs[0], inputs[1 : 1 + count], inputs[1 + count :]
        memory = keras.tree.pack_sequence_as(self.memory_template, memory)
        states = keras.tree.pack_sequence_as(self.states_template, states)
        step = self.seq2seq.step_fn(memory, return_alignments=False)
        logits, states = step(token, states)
        return [logits, *keras.tree.flatten(states)]


def streaming_models(translator):
    """``({"encoder": ..., "decoder_step": ...}, layout)`` (functional models, signature
    None) for streaming: the encoder (source ids (1, max_source_length) -> the attention
    memory (keys, values, mask), the decoder's initial states and the source length)
    and one decoder step (token (1,), states and the memory -> logits (1, target
    vocabulary) and the new states); `layout` counts the memory and state tensors."""
    model, width = translator.model, translator.max_source_length
    template = model.encode(np.ones((1, width), "int32"))
    memory = keras.tree.flatten(template.memory)
    states = keras.tree.flatten(template.states)
    ids = keras.Input((width,), dtype="int32", name="source_ids")
    encoder = keras.Model(ids, EncodeSource(model, name="encode")(ids), name="encoder")
    token = keras.Input((), dtype="int32", name="token")
    state_inputs = [
        keras.Input(tuple(s.shape[1:]), dtype=str(s.dtype.name), name=f"state_{i}")
        for i, s in enumerate(states)
    ]
    memory_inputs = [
        keras.Input(tuple(m.shape[1:]), dtype=str(m.dtype.name), name=f"memory_{i}")
        for i, m in enumerate(memory)
    ]
    inputs = [token, *state_inputs, *memory_inputs]
    outputs = DecoderStep(model, template, name="decoder_step")(inputs)
    step = keras.Model(inputs, outputs, name="decoder_step")
    layout = {"memory": len(memory), "states": len(states)}
    return {"encoder": (encoder, None), "decoder_step": (step, None)}, layout


def export_translator_runtime(
    translator, path, format_name, strategies, metadata, quantization=None
):
    """Writes a `TextTranslator`'s decoding graphs for onnxruntime or LiteRT
    (`kerasrnn.export.bundle.export_bundle`): per strategy of `strategies` (``{name:
    strategy}``, each made `runtime_strategy`), source ids (1, max_source_length) in, the
    best hypothesis' target ids (1, 1, max_length) and its score out, the whole loop
    inside the graph (an ONNX `Loop`, a LiteRT builtin `WHILE`); and the streaming
    ``encoder`` and ``decoder_step``; with both vocabularies and the numpy-only
    ``client.py`` (`Client.translate`). `metadata`: what the client reads beside (the
    tokenisation), joined by the vocabularies, the lengths, the stream layout and the
    default strategy (``beam`` when given)."""
    from kerasrnn.export.bundle import export_bundle

    if translator.model.copy_readout is not None:
        # (the runtimes' client maps output ids through the target vocabulary alone)
        raise ValueError(
            "The ONNX and LiteRT bundles do not decode a model with copy attention (a "
            "`copy_readout`): export its SavedModel (TextTranslator.export) instead."
        )
    models = {}
    for name, strategy in strategies.items():
        ids = keras.Input((translator.max_source_length,), dtype="int32", name="source_ids")
        layer = GenerateIds(translator.model, runtime_strategy(strategy), translator.settings)
        models[name] = (keras.Model(ids, layer(ids), name=f"translate_{name}"), None)
    streaming, layout = streaming_models(translator)
    models.update(streaming)
    metadata = {
        "task": "translator",
        "max_decode_length": translator.settings["max_length"]
        or translator.model.max_target_length,
        **metadata,
        "max_source_length": translator.max_source_length,
        "default": "beam" if "beam" in models else "greedy",
        "stream": layout,
        "vocabularies": {
            "source": translator.source_vocabulary.tokens,
            "target": translator.target_vocabulary.tokens,
        },
    }
    return export_bundle(path, models, format_name, metadata, None, quantization)
