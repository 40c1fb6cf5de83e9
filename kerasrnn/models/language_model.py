"""`LanguageModel`: the recurrent language model task around a `LanguageModelBackbone`:
`fit` with next-token targets, `perplexity` (stateless or stateful over a stream), and
`generate(prompts, strategy)` with the `kerasrnn.decoding` strategies `Seq2Seq` uses,
through the same `GenerativeTask`, on ids or, with a `LanguageModelPreprocessor`, on
text."""

import math

import keras
import numpy as np
from keras import ops

from kerasrnn.models.generation import check_source_ids
from kerasrnn.models.language_model_backbone import DIRECTIONS, LanguageModelBackbone
from kerasrnn.models.language_model_preprocessor import LanguageModelPreprocessor
from kerasrnn.models.task import GenerativeTask, from_backend, to_backend
from kerasrnn.ops import NEG_INF
from kerasrnn.serialization import deserialize
from kerasrnn.special_tokens import END_ID, PAD_ID
from kerasrnn.validation import check_int


def token_nll(targets, logits):
    """-log p(target) of every position `(batch, time)`, 0 where the target is padding
    (id 0)."""
    targets = ops.cast(targets, "int32")
    nll = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
    return nll * ops.cast(ops.not_equal(targets, PAD_ID), nll.dtype)


def _batches(inputs, targets, batch_size):
    if targets is None:  # an iterable of (inputs, targets) batches (a tf.data.Dataset)
        for x, y in inputs:
            yield ops.convert_to_numpy(x), ops.convert_to_numpy(y)
        return
    for i in range(0, len(inputs), batch_size):
        yield np.asarray(inputs[i : i + batch_size]), np.asarray(targets[i : i + batch_size])


def _batch_predictor(model):
    """The model's logits of one batch: `model.predict_on_batch` (the compiled predict
    function: an eager call runs every time step op by op), except in two cases.

    - Under a TensorFlow distribution strategy of several replicas `predict_on_batch`
      hands every replica the whole batch and concatenates their outputs (every row
      twice with two replicas); `model.predict` splits the batch between them.
    - Keras keeps a stateful RNN's states out of the model's variables; JAX's compiled
      predict is stateless, so it drops their update and every batch would start from
      zeros. There the states go in and out of one jitted call explicitly
      (`keras.StatelessScope`)."""
    from kerasrnn._private import keras_nested_layers

    strategy = getattr(model, "distribute_strategy", None)  # the TensorFlow backend's
    if strategy is not None and strategy.num_replicas_in_sync > 1:
        return lambda x: model.predict(x, batch_size=len(x), verbose=0)
    states = [
        state
        for layer in keras_nested_layers(model)
        if getattr(layer, "stateful", False)
        for state in getattr(layer, "states", None) or ()
    ]
    if keras.backend.backend() != "jax" or not states:
        return model.predict_on_batch
    import jax

    variables = model.variables

    def run(values, state_values, x):
        mapping = [*zip(variables, values), *zip(states, state_values)]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            logits = model(x, training=False)
        return logits, [scope.get_current_value(state) for state in states]

    run = jax.jit(run)

    def predict(x):
        logits, carried = run([v.value for v in variables], [s.value for s in states], x)
        for state, value in zip(states, carried):
            state.assign(value)
        return np.asarray(logits)

    return predict


def perplexity(model, inputs, targets=None, batch_size=32, metrics=()):
    """The perplexity of a Keras model `model` (token ids -> logits) on next-token data:

    .. math::  \\text{PPL} = \\exp\\Big(\\frac{1}{N} \\sum_{b,t:\\, y_{bt} \\ne 0}
        -\\log p(y_{bt} \\mid x_{b, \\le t})\\Big)

    over the N real (non-padding) targets, the batches run in order (a stateful model
    carries its states from one to the next).

    Args:
        model: a Keras model from ids `(batch, time)` to logits `(batch, time, V)`.
        inputs: ids `(rows, time)`, or an iterable of ``(inputs, targets)`` batches
            (then `targets` is None).
        targets: the next-token ids `(rows, time)`, 0 where padded.
        batch_size: rows per batch for arrays.
        metrics: Keras metrics also fed every ``(targets, logits)`` batch; their
            results join the returned dict under their names.

    Returns:
        ``{"nll": mean NLL per token, "tokens": N, "perplexity": exp(nll),
        "bits_per_token": nll / ln 2, <metric name>: result ...}``.
    """
    total, count = 0.0, 0
    predict = _batch_predictor(model)
    for x, y in _batches(inputs, targets, batch_size):
        logits = predict(x)
        total += float(np.sum(ops.convert_to_numpy(token_nll(y, logits)), dtype="float64"))
        count += int((y != PAD_ID).sum())
        for metric in metrics:
            metric.update_state(y, logits)
    mean = total / max(count, 1)
    result = {
        "nll": mean,
        "tokens": count,
        "perplexity": math.exp(mean),
        "bits_per_token": mean / math.log(2),
    }
    for metric in metrics:
        result[metric.name] = float(ops.convert_to_numpy(metric.result()))
    return result


def prompt_states(step, initial_states, ids, lengths):
    """Runs the step function over each prompt but its last token (`ids` padded on the
    right, `lengths` >= 1); returns the states and that last token, the first input of
    decoding."""
    lengths = ops.cast(lengths, "int32")

    def body(t, states):
        _, new_states = step(ids[:, t], states)
        keep = (t < lengths - 1)[:, None]
        return [
            [ops.where(keep, n, o) for n, o in zip(ns, os_)] for ns, os_ in zip(new_states, states)
        ]

    states = ops.fori_loop(0, ops.shape(ids)[1] - 1, body, initial_states(ops.shape(ids)[0]))
    last = ops.take_along_axis(ids, (lengths - 1)[:, None], axis=1)[:, 0]
    return states, last


@keras.saving.register_keras_serializable(package="kerasrnn")
class LanguageModel(GenerativeTask, keras.Model):
    """A recurrent language model task, keras-hub style: a `LanguageModelBackbone`
    with `compile` defaults, `perplexity` and `generate`.

    .. math::  p(w_t \\mid w_{<t}) = \\text{softmax}(z_t), \\qquad
        z_t = \\text{backbone}(w_{<t})_t

    Trained with `fit` on ids `(batch, time)` -> the next ids `(batch, time)` (0 is
    padding: masked in the loss); a biLM backbone takes and gives
    ``{"forward": ..., "backward": ...}``. `compile()` defaults to Adam (gradient norm
    clipped at 5), the masked token cross-entropy and the perplexity metric.

    `perplexity` measures a stream or padded sentences (``stateful=True``: windows of a
    stream in order, each row's states carried to its next window, as truncated BPTT
    trains). `generate(prompts, strategy)` reads each prompt and continues it with a
    `kerasrnn.decoding` strategy (greedy, sampling, beam search: the same objects and
    compiled-decoder cache as `Seq2Seq.generate`; a biLM generates with its forward
    LM). With a `LanguageModelPreprocessor`, `generate` takes prompts as strings and
    returns their continuations as text.

    Args:
        backbone: a `LanguageModelBackbone`.
        end_id: the id that ends a sentence, where generation stops (default 3,
            `[END]`).
        max_length: the default number of tokens `generate` produces at most.
        preprocessor: None, or a `kerasrnn.models.LanguageModelPreprocessor` (the
            vocabulary: prompts in, continuations out).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.models import LanguageModel, LanguageModelBackbone
    >>> model = LanguageModel(LanguageModelBackbone(12, 8))
    >>> prompts = np.array([[3, 5, 6], [3, 7, 0]])  # [END] w..., padded with 0
    >>> result = model.generate(prompts, kerasrnn.decoding.BeamSearch(beam_size=2), 4)
    >>> tuple(result.tokens.shape)
    (2, 2, 4)
    """

    preprocessor_cls = LanguageModelPreprocessor
    # keras-hub's Perplexity, which `compile` adds, registers on import
    compile_modules = ("keras_hub",)

    def __init__(self, backbone, end_id=END_ID, max_length=30, preprocessor=None, **kwargs):
        super().__init__(preprocessor=preprocessor, **kwargs)
        backbone = deserialize(backbone)
        if not isinstance(backbone, LanguageModelBackbone):
            raise ValueError(
                "`backbone` must be a kerasrnn.models.LanguageModelBackbone, got "
                f"{type(backbone).__name__}."
            )
        self.backbone = backbone
        self.end_id = check_int("end_id", end_id, minimum=0)
        self.max_length = check_int("max_length", max_length)
        self.pad_id = PAD_ID
        self.built = True  # the functional backbone holds every weight already

    @property
    def max_target_length(self):  # GenerationMixin's default length
        return self.max_length

    @property
    def tie_embeddings(self):
        return self.backbone.tie_embeddings

    def build(self, input_shape=None):
        self.built = True  # the functional backbone has every weight

    def call(self, inputs, training=False):
        return self.backbone(inputs, training=training)

    # ---- evaluation ---------------------------------------------------------------------
    def perplexity(self, x, y=None, batch_size=32, stateful=False, metrics=()):
        """The perplexity of next-token data (the module function `perplexity`).

        Args:
            x, y: ids and next ids `(rows, time)` (for a biLM dicts by direction), or
                an iterable of ``(x, y)`` batches (a biLM's by direction, or a dict of
                one such iterable per direction) and y None.
            batch_size: rows per batch.
            stateful: run `x` as consecutive windows of `batch_size` streams (row i of
                a batch continues row i of the batch before, as
                `kerasrnn.data.language_model.stream_windows` lays a stream out), the
                states carried across batches: the perplexity of the whole streams.
            metrics: extra Keras metrics fed every batch (per direction: fresh copies
                are not made, so pass them for a forward LM).

        Returns:
            `perplexity`'s dict; for a biLM one per direction under "forward" and
            "backward", and together nll (the mean over both directions' tokens),
            tokens, perplexity and bits_per_token.
        """
        batch_size = check_int("batch_size", batch_size)
        backbone = self.backbone
        if stateful:
            rows = len(x[DIRECTIONS[0]] if isinstance(x, dict) else x)
            if y is None or rows % batch_size:
                raise ValueError(
                    "`stateful=True` takes arrays whose rows are consecutive windows of "
                    f"`batch_size` streams: {rows} rows are not a multiple of batch_size="
                    f"{batch_size} (or y is missing)."
                )
            backbone = self._variant(stateful=True, batch_size=batch_size)
            for direction in DIRECTIONS[: 1 + backbone.bidirectional]:
                for layer in backbone.rnn_layers(direction):
                    layer.reset_state()
        elif backbone.rnn_options.get("stateful"):  # trained on windows: rows on their own
            backbone = self._variant()
        if not backbone.bidirectional:
            return perplexity(backbone, x, y, batch_size, metrics)
        results = {}
        for d in DIRECTIONS:
            part = keras.Model(backbone.input[d], backbone.output[d], name=f"{d}_lm")
            if y is None:
                data = x[d] if isinstance(x, dict) else ((xb[d], yb[d]) for xb, yb in x)
                results[d] = perplexity(part, data, None, batch_size, metrics)
            else:
                results[d] = perplexity(part, x[d], y[d], batch_size, metrics)
        tokens = sum(r["tokens"] for r in results.values())
        nll = sum(r["nll"] * r["tokens"] for r in results.values()) / max(tokens, 1)
        return dict(
            results,
            nll=nll,
            tokens=tokens,
            perplexity=math.exp(nll),
            bits_per_token=nll / math.log(2),
        )

    def stateless(self):
        """This language model over a backbone without stateful RNNs (and without the
        fixed batch size a stateful one needs), with the same weights: itself when it
        has none. A model trained on stateful windows is served and exported this way."""
        if not self.backbone.rnn_options.get("stateful"):
            return self
        return type(self)(
            self.backbone.variant(),
            self.end_id,
            self.max_length,
            self.preprocessor,
            name=self.name,
        )

    def export_embeddings(self, path):
        """Writes a word-level model's input embedding as a word2vec / fastText ``.vec``
        text file (`kerasrnn.data.vectors.write_vectors`; the special tokens left out),
        which `kerasrnn.data.vectors.load_vectors` reads to start another model's
        embedding (ULMFiT's transfer). Returns ``{"vectors", "words", "dim"}``.

        Raises:
            ValueError: no preprocessor, or a character-level one (its tokens are not
                words).
        """
        import os

        from kerasrnn.data.vectors import write_vectors
        from kerasrnn.special_tokens import SPECIAL_TOKENS

        level = getattr(self.preprocessor, "level", None)
        if level != "word":
            raise ValueError(
                "export_embeddings needs a word-level language model with its preprocessor; "
                f"this one's is {f'{level}-level' if level else 'missing'} (its tokens are "
                "not words)."
            )
        matrix = ops.convert_to_numpy(self.backbone.token_embedding.embeddings)
        words = self.preprocessor.vocabulary.tokens[len(SPECIAL_TOKENS) :]
        write_vectors(path, words, matrix[len(SPECIAL_TOKENS) :])
        return {"vectors": os.fspath(path), "words": len(words), "dim": int(matrix.shape[1])}

    def _variant(self, **rnn_options):
        """The backbone's `variant` with `rnn_options`, with this one's weights; made once
        per options (its compiled predict function is kept), its weights refreshed."""
        variants = self.__dict__.setdefault("_variants", {})
        key = tuple(sorted(rnn_options.items()))
        if key not in variants:
            variants[key] = self.backbone.variant(**rnn_options)
        else:
            variants[key].set_weights(self.backbone.get_weights())
        return variants[key]

    # ---- generation -------------------------------------------------------------------
    def step_fn(self, readout=None):
        """The forward LM as `kerasrnn.decoding`'s step function: returns
        ``(step, initial_states)`` with ``step(tokens (rows,), states) -> (logits (rows,
        V), states)``, the padding logit `kerasrnn.ops.NEG_INF` (0 is never generated),
        states one list per recurrent layer, and
        ``initial_states(batch_size)``. Dropout is off (inference). `readout`: a
        function of the last layer's outputs (default the backbone's readout)."""
        backbone = self.backbone
        embedding = backbone.token_embedding
        layers = backbone.rnn_layers()
        readout = readout or backbone.logits
        never = ops.arange(backbone.vocabulary_size) == PAD_ID

        def step(tokens, states):
            # The lookup without the layer call: one token per row needs no padding
            # mask, and the mask the layer attaches would make every cell warn.
            x = ops.cast(ops.take(embedding.embeddings, tokens, axis=0), embedding.compute_dtype)
            new_states = []
            for layer, state in zip(layers, states):
                x, state = layer.cell(x, list(state), training=False)
                new_states.append(list(state))
            # padding is never generated (as Seq2Seq's step): the model never reads it
            # as a token (it is masked), so a generated 0 would end the text for readers
            return ops.where(never[None, :], NEG_INF, readout(x)), new_states

        def initial_states(batch_size):
            return [list(layer.cell.get_initial_state(batch_size)) for layer in layers]

        return step, initial_states

    def prompt_states(self, prompts):
        """``(states, last_tokens)`` after reading `prompts` (ids `(batch, time)` padded
        on the right with 0, each row at least one token): the decoding start."""
        prompts = self._generation_inputs(prompts)
        step, initial_states = self.step_fn()
        lengths = ops.sum(ops.cast(ops.not_equal(prompts, PAD_ID), "int32"), axis=1)
        return prompt_states(step, initial_states, prompts, lengths)

    def generate(self, prompts, strategy=None, max_length=None, **options):
        """Continues each prompt with a decoding strategy (`GenerativeTask.generate`).

        Args:
            prompts: int ids `(batch, time)`, each row the boundary token the model was
                trained to read before a sentence (`[END]` in a stream, `[START]` for
                sentence batches) then the prompt's tokens, padded on the right with 0;
                or, with a preprocessor, a prompt string or a list of them ("" starts a
                new sentence).
            strategy: a `kerasrnn.decoding` strategy, a name ("greedy", "sample",
                "beam") or None (the model's `sampler`: `compile(sampler=...)`'s, greedy
                before).
            max_length: the most tokens generated (default `max_length`).
            **options: `readout_dtype`, `jit_compile` and (text) `return_scores`, as
                in `GenerativeTask.generate`.

        Returns:
            For ids, a `kerasrnn.decoding.DecodeResult`: tokens int32 `(batch, n,
            max_length)` (the end token included, 0 after it), lengths and scores
            `(batch, n)`, n = the strategy's `n_best`; no alignments. For text, each
            prompt's continuation (the tokens before the first ``[END]``).
        """
        unknown = set(options) - {"readout_dtype", "jit_compile", "return_scores"}
        if unknown:
            raise TypeError(
                "`generate` takes readout_dtype, jit_compile and return_scores; got "
                f"{sorted(unknown)}."
            )
        return super().generate(prompts, strategy, max_length, return_alignments=False, **options)

    def decode_texts(self, prompts, settings):
        """Prompts (batch,) strings -> their continuations (batch, n) strings and
        scores (batch, n) (TensorFlow ops around the decoding: the graph a SavedModel
        serves)."""
        preprocessor = self._text_preprocessor()
        ids = to_backend(preprocessor.encode(prompts))
        result = from_backend(self.generate_ids(ids, False, **settings))
        return preprocessor.decode(result.tokens), result.scores

    # GenerativeTask's hooks
    def _generation_inputs(self, prompts):
        prompts = check_source_ids(prompts, PAD_ID)
        prompts = ops.cast(ops.convert_to_tensor(prompts), "int32")
        if len(prompts.shape) != 2:
            raise ValueError(
                "`prompts` must be int ids of shape (batch, time); got shape "
                f"{tuple(prompts.shape)}. (One prompt: prompts[None].)"
            )
        try:
            values = ops.convert_to_numpy(prompts)
        except Exception:  # symbolic (inside a traced function): not checkable
            return prompts
        if values.size and (values[:, 0] == PAD_ID).any():
            raise ValueError(
                "every prompt needs at least one token (the boundary token before a "
                "sentence, e.g. [END] = 3); a row starts with padding (0)."
            )
        if values.size and values.max() >= self.backbone.vocabulary_size:
            raise ValueError(
                f"`prompts` holds ids >= the vocabulary size {self.backbone.vocabulary_size}."
            )
        return prompts

    def _decoding_setup(self, prompts, rows, aligned, readout):
        del rows, aligned  # no memory to repeat per beam; no attention
        step, initial_states = self.step_fn(readout)
        lengths = ops.sum(ops.cast(ops.not_equal(prompts, PAD_ID), "int32"), axis=1)
        states, start = prompt_states(step, initial_states, prompts, lengths)
        return step, start, states, None

    def _logits(self, outputs):
        return self.backbone.logits(outputs)

    def _readout_weights(self):
        backbone = self.backbone
        if backbone.tie_embeddings:
            return ops.transpose(backbone.token_embedding.embeddings), None
        return backbone.readout.kernel, backbone.readout.bias

    # ---- training defaults ------------------------------------------------------------
    def compile(self, optimizer="auto", loss="auto", metrics="auto", *, sampler="greedy", **kwargs):
        """`keras.Model.compile` with a language model's defaults: "auto" gives Adam
        (learning rate 1e-3, gradient norm clipped at 5), the token cross-entropy
        averaged over the real targets (`kerasrnn.losses.SequenceCrossEntropy`, padding
        0 masked) and keras-hub's `Perplexity` metric; a biLM given one loss gets a copy
        per direction, weighted 0.5 each. `sampler` is `generate`'s default strategy."""
        from kerasrnn.losses import SequenceCrossEntropy

        _register_keras_hub()
        import keras_hub

        directions = DIRECTIONS if self.backbone.bidirectional else None
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, global_clipnorm=5.0)
        if loss == "auto":
            loss = SequenceCrossEntropy(pad_id=PAD_ID)
        if directions and not isinstance(loss, dict):  # one copy per direction, averaged
            loss = {d: keras.losses.get(keras.losses.serialize(loss)) for d in directions}
            kwargs.setdefault("loss_weights", {d: 0.5 for d in directions})
        if metrics == "auto":

            def metric():
                return keras_hub.metrics.Perplexity(
                    from_logits=True, mask_token_id=PAD_ID, name="perplexity"
                )

            metrics = {d: [metric()] for d in directions} if directions else [metric()]
        self.set_sampler(sampler)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        self._compile_config.config["sampler"] = self.sampler

    def fit(self, *args, **kwargs):
        """`keras.Model.fit`; a stateful backbone on JAX is refused (Keras keeps a
        stateful RNN's states out of the model's variables, and JAX's compiled training
        step drops their update: every window would start from zeros)."""
        self._check_stateful_training("fit")
        return super().fit(*args, **kwargs)

    def train_on_batch(self, *args, **kwargs):
        """`keras.Model.train_on_batch`; refused on JAX for a stateful backbone, as `fit`."""
        self._check_stateful_training("train_on_batch")
        return super().train_on_batch(*args, **kwargs)

    def _check_stateful_training(self, method):
        if keras.backend.backend() == "jax" and self.backbone.rnn_options.get("stateful"):
            raise ValueError(
                f"LanguageModel.{method}: on JAX, Keras does not carry a stateful RNN's "
                "states from one training batch to the next; train stateful windows on the "
                "TensorFlow or torch backend, or train on sentences (no `stateful`)."
            )

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "end_id": self.end_id,
            "max_length": self.max_length,
        }


def _register_keras_hub():
    # keras-hub's metrics (Perplexity) register on import; imported on use only, since
    # `import kerasrnn` does not import it.
    import keras_hub  # noqa: F401


def extended_weights(weights, shapes, start_size):
    """The weights of a language model started from `weights` (of a vocabulary of
    `start_size` tokens) for a model of weight `shapes`: each array as it is, or, where
    the vocabulary grew (ULMFiT's target vocabulary), with the new words' rows (the
    embedding's rows, the readout's columns and biases) set to the mean of the
    start's. Raises a one-line ValueError for any other difference.

    >>> import numpy as np
    >>> [w.tolist() for w in extended_weights([np.array([[1.0], [3.0]])], [(3, 1)], 2)]
    [[[1.0], [3.0], [2.0]]]
    """
    error = ValueError(
        "the language model's weights do not fit this one (the regularisers that wrap "
        "layers, weight_drop / embedding_dropout / tie_embeddings, must match)."
    )
    if len(weights) != len(shapes):
        raise error
    fitted = []
    for weight, shape in zip(weights, shapes):
        differ = [axis for axis, (a, b) in enumerate(zip(weight.shape, shape)) if a != b]
        if len(weight.shape) != len(shape) or len(differ) > 1:
            raise error
        if differ:
            axis = differ[0]
            if weight.shape[axis] != start_size or shape[axis] < start_size:
                raise error
            mean = weight.mean(axis=axis, keepdims=True)
            rows = np.repeat(mean, shape[axis] - start_size, axis=axis)
            weight = np.concatenate([weight, rows], axis=axis)
        fitted.append(weight)
    return fitted
