"""A `Seq2Seq`'s graphs for onnxruntime and LiteRT: the whole decoding loop as one
ids-in / ids-out model per strategy (`GenerateIds`), and the streaming pair, the
encoder (`EncodeSource`) and one decoder step (`DecoderStep`), written with
``deploy.json`` and the numpy-only client by `translator_bundle`."""

import os

import keras
import numpy as np

from kerasrnn import decoding
from kerasrnn.data.text import SENTENCEPIECE_KINDS
from kerasrnn.export.bundle import export_bundle
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


def streaming_models(task):
    """``({"encoder": ..., "decoder_step": ...}, layout)`` (functional models, signature
    None) for streaming: the encoder (source ids (1, max_source_length) -> the attention
    memory (keys, values, mask), the decoder's initial states and the source length)
    and one decoder step (token (1,), states and the memory -> logits (1, target
    vocabulary) and the new states); `layout` counts the memory and state tensors."""
    width = task.max_source_length
    template = task.encode(np.ones((1, width), "int32"))
    memory = keras.tree.flatten(template.memory)
    states = keras.tree.flatten(template.states)
    ids = keras.Input((width,), dtype="int32", name="source_ids")
    encoder = keras.Model(ids, EncodeSource(task, name="encode")(ids), name="encoder")
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
    outputs = DecoderStep(task, template, name="decoder_step")(inputs)
    step = keras.Model(inputs, outputs, name="decoder_step")
    layout = {"memory": len(memory), "states": len(states)}
    return {"encoder": (encoder, None), "decoder_step": (step, None)}, layout


def _refused(task):
    """Why the runtimes' bundle cannot hold `task`'s decoding, or None."""
    preprocessor = task.preprocessor
    if task.copy_readout is not None:  # the client maps ids through the target vocabulary
        return "copy attention (a `copy_readout`)"
    if preprocessor.replace_unk:
        return "`replace_unk` (it reads the source words the client has not kept)"
    for name, side in (("source", preprocessor.source), ("target", preprocessor.target)):
        if side.kind == "wordpiece":
            return f"a {name} WordPiece tokenizer (the client has none)"
    if task.max_source_length is None:
        return "no `max_source_length` (the graph's source width)"
    return None


def translator_bundle(task, path, format_name, strategy=None, quantization=None, max_length=None):
    """Writes a `Seq2Seq`'s decoding graphs for onnxruntime or LiteRT (`export_bundle`):
    greedy search (with `strategy`'s constraints) and, when `strategy` (default the
    task's sampler) is a beam search, that search, each source ids (1,
    max_source_length) in, the best hypothesis' target ids (1, 1, max_length) and its
    score out, the whole loop inside the graph (an ONNX `Loop`, a LiteRT builtin
    `WHILE`); and the streaming ``encoder`` and ``decoder_step``; with both
    vocabularies, the subword models and the numpy-only ``client.py``
    (`Client.translate`)."""
    refused = _refused(task)
    if refused:
        raise ValueError(
            f"the {format_name} export of the translator cannot hold {refused}: export "
            "its SavedModel instead."
        )
    strategy = task.sampler if strategy is None else decoding.get(strategy)
    if isinstance(strategy, decoding.DiverseBeamSearch):
        raise ValueError(
            f"the {format_name} export runs greedy or beam search, not diverse beam "
            "search: export its SavedModel instead."
        )
    strategies = {"greedy": decoding.GreedySearch(strategy.constraints)}
    if isinstance(strategy, decoding.BeamSearch):
        strategies["beam"] = strategy
    settings = {"max_length": max_length or task.max_target_length}
    models = {}
    for name, chosen in strategies.items():
        ids = keras.Input((task.max_source_length,), dtype="int32", name="source_ids")
        layer = GenerateIds(task, runtime_strategy(chosen), settings)
        models[name] = (keras.Model(ids, layer(ids), name=f"translate_{name}"), None)
    streaming, layout = streaming_models(task)
    models.update(streaming)
    preprocessor = task.preprocessor
    metadata = {
        "task": "translator",
        "max_decode_length": settings["max_length"],
        "max_length_ratio": getattr(strategy.constraints, "max_length_ratio", None),
        "lowercase": preprocessor.source.lowercase,
        "source_tokenizer": preprocessor.source.kind,
        "target_tokenizer": preprocessor.target.kind,
        "subword_models": _write_subword_models(preprocessor, path),
        "max_source_length": task.max_source_length,
        "default": "beam" if "beam" in models else "greedy",
        "stream": layout,
        "vocabularies": {
            "source": preprocessor.source.vocabulary.tokens,
            "target": preprocessor.target.vocabulary.tokens,
        },
    }
    return export_bundle(path, models, format_name, metadata, None, quantization)


def _write_subword_models(preprocessor, folder):
    """Writes each side's SentencePiece model into `folder`, where the client tokenizes
    with it: ``{side: file name}``."""
    os.makedirs(folder, exist_ok=True)
    names = {}
    for name, side in (("source", preprocessor.source), ("target", preprocessor.target)):
        if side.kind in SENTENCEPIECE_KINDS:
            names[name] = f"{name}_subwords.model"
            with open(os.path.join(folder, names[name]), "wb") as file:
                file.write(side.subword_model)
    return names
