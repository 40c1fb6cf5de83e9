"""`TextGenerator`: a `kerasrnn.models.LanguageModel` at the string level -- prompts in,
continuations out -- in Python (`generate`), as a SavedModel (`export`: tokenisation,
the prompt pass, decoding and detokenisation in the graph, and the streaming step) and
for onnxruntime / LiteRT (`export_runtime`: the ids-in / ids-out graphs with
``deploy.json`` and the numpy-only client). `LanguageModelStep` and
`LanguageModelGenerate` are those graphs as Keras layers."""

import keras
import numpy as np

from kerasrnn import decoding
from kerasrnn.data.vocabulary import END_ID, PAD_ID, UNK_ID
from kerasrnn.models.language_model import LanguageModel, prompt_states


def _flat_states(counts, flat):
    """Flat state tensors -> one list per layer (`counts[i]` states in layer i)."""
    states, flat = [], list(flat)
    for count in counts:
        states.append(flat[:count])
        flat = flat[count:]
    return states


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
    ids (batch, max_length), the first hypothesis of `strategy`
    (`kerasrnn.export.runtime_decoding.runtime_strategy` makes one the runtimes hold)."""

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


class TextGenerator:
    """A language model with its vocabulary, generating text from text prompts.

    Args:
        model: a `kerasrnn.models.LanguageModel` (a biLM generates with its forward LM).
        vocabulary: the `kerasrnn.data.Vocabulary` it was trained with.
        strategy: a `kerasrnn.decoding` strategy (or name); beam search returns its
            best hypothesis.
        max_length: the most tokens generated per prompt.
        level: "word" (whitespace-separated tokens, joined by spaces) or "char".
        first_token: the id read before each prompt, the boundary the model was
            trained on (`[END]` in a stream of sentences, `[START]` for per-sentence
            batches).
    """

    def __init__(
        self, model, vocabulary, strategy="greedy", max_length=30, level="word", first_token=END_ID
    ):
        if not isinstance(model, LanguageModel):
            raise ValueError(f"`model` must be a kerasrnn.models.LanguageModel, got {model!r}.")
        if level not in ("word", "char"):
            raise ValueError(f"`level` must be 'word' or 'char', got {level!r}.")
        self.model, self.vocabulary, self.max_length = model, vocabulary, max_length
        self.strategy, self.level, self.first_token = decoding.get(strategy), level, first_token
        self.joiner = "" if level == "char" else " "

    def _decode(self, ids, lengths, strategy=None):
        step, initial_states = self.model.step_fn()
        states, start = prompt_states(step, initial_states, ids, lengths)
        strategy = strategy or self.strategy
        result = strategy(step, start, states, self.max_length, end_token=self.model.end_id)
        return result.tokens[:, 0]

    def generate(self, prompts):
        """Continues each prompt (a string; "" starts a new sentence), stopping at the
        end of the sentence. Returns one dict per prompt: the prompt, its
        continuation and how many of its tokens were unknown."""
        from kerasrnn.data.language_model import split_line

        encoded = [
            [self.first_token] + self.vocabulary.encode(split_line(p, self.level)) for p in prompts
        ]
        ids = np.zeros((len(encoded), max(len(s) for s in encoded)), "int32")
        for row, sequence in enumerate(encoded):
            ids[row, : len(sequence)] = sequence
        lengths = np.asarray([len(s) for s in encoded], "int32")
        out = keras.ops.convert_to_numpy(self._decode(ids, lengths))
        results = []
        for prompt, sequence, row in zip(prompts, encoded, out):
            words = self.vocabulary.decode([int(i) for i in row], skip_special=False)
            words = words[: words.index("[END]")] if "[END]" in words else words
            results.append(
                {
                    "prompt": prompt,
                    "continuation": self.joiner.join(w for w in words if w != "[PAD]"),
                    "unknown_prompt_tokens": int(sum(i == UNK_ID for i in sequence)),
                }
            )
        return results

    def _state_shapes(self):
        _, initial_states = self.model.step_fn()
        return [[tuple(s.shape[1:]) for s in layer] for layer in initial_states(1)]

    def export(self, path):
        """A SavedModel with `serving_default(prompt: tf.string[batch]) ->
        {"continuation": tf.string[batch]}` (tokenisation, the prompt pass, decoding
        with greedy or beam search, detokenisation) and the streaming step
        ``step(token: int32[batch], state_<layer>_<i>: float32[batch, units]...) ->
        {"logits", "state_<layer>_<i>"...}`` (zeros are the initial states)."""
        import tensorflow as tf

        from kerasrnn.export.savedmodel import export_saved_model
        from kerasrnn.export.serving import ids_to_strings

        if not isinstance(self.strategy, (decoding.GreedySearch, decoding.BeamSearch)):
            raise ValueError(
                f"export runs greedy or beam search, got {type(self.strategy).__name__}."
            )
        lookup = self.vocabulary.lookup()
        names = self.vocabulary.tokens
        step, _ = self.model.step_fn()

        def serve(prompt):
            if self.level == "char":
                pieces = tf.strings.unicode_split(prompt, "UTF-8")
            else:
                pieces = tf.strings.split(prompt)
            ids = tf.cast(lookup(pieces), tf.int32)
            ids = tf.concat([tf.fill([ids.nrows(), 1], self.first_token), ids], axis=1)
            out = self._decode(ids.to_tensor(0), ids.row_lengths())
            # As `generate`: cut at the first [END], drop [PAD]; [UNK] stays (it stands
            # for a real word, and `generate` shows it).
            before_end = tf.cumsum(tf.cast(out == END_ID, tf.int32), axis=1) == 0
            keep = before_end & (out != PAD_ID)
            words = tf.ragged.boolean_mask(ids_to_strings(out, names), keep)
            return {"continuation": tf.strings.reduce_join(words, axis=1, separator=self.joiner)}

        shapes = self._state_shapes()
        counts = [len(layer) for layer in shapes]
        state_names = [f"state_{i}_{j}" for i, n in enumerate(counts) for j in range(n)]

        def stream_step(token, *flat):
            logits, states = step(token, _flat_states(counts, flat))
            return {"logits": logits, **dict(zip(state_names, [s for ss in states for s in ss]))}

        step_signature = [tf.TensorSpec([None], tf.int32, name="token")] + [
            tf.TensorSpec([None, *shape], tf.float32, name=name)
            for name, shape in zip(state_names, [s for layer in shapes for s in layer])
        ]
        signature = [tf.TensorSpec([None], tf.string, name="prompt")]
        export_saved_model(
            path,
            self.model.backbone,
            {"serving_default": (serve, signature), "step": (stream_step, step_signature)},
            track=[lookup],
        )
        return path

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """Writes the language model for onnxruntime or LiteRT
        (`kerasrnn.export.bundle.export_bundle`) as two graphs: ``generate`` (prompt
        ids (1, `sequence_length`) and their length (1,) -> the continuation's ids (1,
        max_length): the prompt pass and the decoding loop, `runtime_strategy`) and
        ``step``, the streaming step (token (1,) and every layer's states -> logits (1,
        vocabulary) and the new states); with the vocabulary and the numpy-only
        ``client.py`` (`Client.generate`, `Client.stream`). `quantization`: the weights,
        as `export_bundle` takes it."""
        from kerasrnn.export.bundle import export_bundle
        from kerasrnn.export.runtime_decoding import runtime_strategy

        shapes = self._state_shapes()
        token = keras.Input((), dtype="int32", name="token")
        states = [
            keras.Input(shape, name=f"state_{i}_{j}")
            for i, layer in enumerate(shapes)
            for j, shape in enumerate(layer)
        ]
        counts = [len(layer) for layer in shapes]
        step = LanguageModelStep(self.model, counts)([token, *states])
        stepper = keras.Model([token, *states], step, name="step")
        ids = keras.Input((sequence_length,), dtype="int32", name="prompt_ids")
        lengths = keras.Input((), dtype="int32", name="prompt_length")
        strategy = runtime_strategy(self.strategy)
        generated = LanguageModelGenerate(self.model, strategy, self.max_length)([ids, lengths])
        generator = keras.Model([ids, lengths], generated, name="generate")
        metadata = {
            "task": "language_model",
            "level": self.level,
            "first_token": self.first_token,
            "gen_length": self.max_length,
            "states": [[list(shape) for shape in layer] for layer in shapes],
            "vocabularies": {"words": self.vocabulary.tokens},
        }
        models = {"generate": (generator, None), "step": (stepper, None)}
        return export_bundle(path, models, format_name, metadata, sequence_length, quantization)
