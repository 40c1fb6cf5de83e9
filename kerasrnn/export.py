"""SavedModel export with string-in / string-out serving signatures.

A recipe exports its trained Keras model together with the text preprocessing (the
tokenizer and `Vocabulary.lookup()` layers) and the postprocessing (ids -> labels or
tokens), so that the SavedModel takes raw strings and returns strings. It is a plain
TensorFlow SavedModel: ``tf.saved_model.load(path).signatures["serving_default"]``
works in a process that has never imported kerasrnn (or Keras).

Typical use (what the classifier recipe does)::

    lookup = vocabulary.lookup()

    def classify(texts):
        ids = encode_tokens(split_words(texts), lookup)
        return class_outputs(model(ids, training=False), labels)

    export_saved_model(path, model, {
        "serving_default": (classify, [tf.TensorSpec([None], tf.string, name="text")]),
    }, track=[lookup])

Language models and translators export their generation function the same way (the
function may run a decoding loop); `export_seq2seq` does it for a `kerasrnn.seq2seq.Seq2Seq`
(greedy and n-best beam-search signatures, strings in and out).
"""
import os

import tensorflow as tf

__all__ = [
    "export_saved_model",
    "export_seq2seq",
    "class_outputs",
    "sequence_outputs",
    "ids_to_strings",
]
TOKENIZERS = ("words", "chars")


def export_saved_model(path, model, endpoints, track=(), verbose=False):
    """Writes a SavedModel whose signatures are `endpoints`.

    Args:
        path: the output folder (created; an existing SavedModel there is replaced).
        model: the Keras model the endpoint functions call (its variables are saved).
        endpoints: an ordered dict ``{name: (fn, input_signature)}``; `fn` takes
            tensors matching `input_signature` (a list of `tf.TensorSpec`) and returns
            a dict of tensors. The first endpoint is also ``serving_default`` unless
            one is named so.
        track: further layers (e.g. `Vocabulary.lookup()` layers) or TensorFlow
            resources the functions use outside `model`; they must be listed, or
            their tables would be missing from the SavedModel.
        verbose: let Keras print the saved variables.

    Returns:
        `path`.
    """
    import keras

    if not endpoints:
        raise ValueError("`endpoints` is empty: give at least one serving function.")
    archive = keras.export.ExportArchive()
    archive.track(model)
    for resource in track:
        if isinstance(resource, keras.layers.Layer) and not resource.built:
            # Lookup layers own their table from construction but count as unbuilt.
            resource.build(None)
        archive.track(resource)
    for name, (fn, signature) in endpoints.items():
        if not isinstance(signature, (list, tuple)):
            raise TypeError(
                f"endpoint {name!r}: the input signature must be a list of "
                f"tf.TensorSpec, got {type(signature).__name__}."
            )
        archive.add_endpoint(name, tf.function(fn, input_signature=list(signature)))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    archive.write_out(os.fspath(path), verbose=verbose)
    return path


def ids_to_strings(ids, names):
    """Maps an int tensor of indices into the Python list `names` to strings."""
    return tf.gather(tf.constant(list(names), tf.string), tf.cast(ids, tf.int32))


def class_outputs(probabilities, labels):
    """Serving outputs of a classifier.

    Args:
        probabilities: (batch, classes) class probabilities.
        labels: the class names, in output order.

    Returns:
        A dict: ``label`` (batch,) the most probable class name, ``probability``
        (batch,) its probability, ``probabilities`` (batch, classes), ``labels``
        (batch, classes) the class names of those columns.
    """
    probabilities = tf.cast(probabilities, tf.float32)
    best = tf.argmax(probabilities, axis=-1)
    names = ids_to_strings(tf.range(len(labels)), labels)
    return {
        "label": ids_to_strings(best, labels),
        "probability": tf.reduce_max(probabilities, axis=-1),
        "probabilities": probabilities,
        "labels": tf.tile(names[tf.newaxis], [tf.shape(probabilities)[0], 1]),
    }


def sequence_outputs(probabilities, tags, lengths):
    """Serving outputs of a tagger (one class per position).

    Args:
        probabilities: (batch, time, tags) per-position probabilities.
        tags: the tag names, in output order.
        lengths: (batch,) number of real positions of each row.

    Returns:
        A dict: ``tags`` (batch, time) the best tag per position, "" on padding;
        ``probability`` (batch, time) its probability, 0 on padding; ``lengths``.
    """
    probabilities = tf.cast(probabilities, tf.float32)
    mask = tf.sequence_mask(lengths, tf.shape(probabilities)[1])
    best = ids_to_strings(tf.argmax(probabilities, axis=-1), tags)
    return {
        "tags": tf.where(mask, best, tf.constant("", tf.string)),
        "probability": tf.where(mask, tf.reduce_max(probabilities, axis=-1), 0.0),
        "lengths": tf.cast(lengths, tf.int32),
    }


def _tokenizer(tokenize, lowercase):
    """strings (batch,) -> ragged tokens, as TensorFlow ops."""
    if callable(tokenize):
        return tokenize
    if tokenize not in TOKENIZERS:
        raise ValueError(
            f"`tokenize` must be one of {TOKENIZERS} or a function (strings -> ragged "
            f"tokens); got tokenize={tokenize!r}."
        )

    def split(texts):
        if lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        if tokenize == "words":
            return tf.strings.split(texts)
        return tf.strings.unicode_split(tf.strings.strip(texts), "UTF-8", errors="replace")

    return split


def _detokenizer(detokenize, tokenize):
    """ragged tokens -> strings (batch,), as TensorFlow ops."""
    if callable(detokenize):
        return detokenize
    if detokenize is None:
        detokenize = tokenize if tokenize in TOKENIZERS else "words"
    if detokenize not in TOKENIZERS:
        raise ValueError(
            f"`detokenize` must be one of {TOKENIZERS}, a function (ragged tokens -> "
            f"strings) or None; got detokenize={detokenize!r}."
        )
    separator = " " if detokenize == "words" else ""
    return lambda tokens: tf.strings.reduce_join(tokens, axis=-1, separator=separator)


def _vocabulary_tokens(vocabulary, name):
    from kerasrnn.data import SPECIAL_TOKENS, Vocabulary

    if isinstance(vocabulary, Vocabulary):
        return vocabulary
    tokens = list(vocabulary)
    if tokens[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
        raise ValueError(
            f"`{name}` must be a kerasrnn.data.Vocabulary or its token list starting "
            f"with {list(SPECIAL_TOKENS)}; got {tokens[:4]!r}..."
        )
    return Vocabulary(tokens)


def export_seq2seq(
    path,
    model,
    source_vocabulary,
    target_vocabulary,
    tokenize="words",
    detokenize=None,
    lowercase=False,
    beam_size=4,
    n_best=None,
    max_length=None,
    length_normalization="average",
    verbose=False,
):
    """Exports a `kerasrnn.seq2seq.Seq2Seq` as a SavedModel that translates strings.

    Signatures (plain TensorFlow: ``tf.saved_model.load(path)`` in a process without
    kerasrnn or Keras):

    * ``serving_default`` / ``translate``: ``text`` string `(batch,)` ->
      ``translation`` string `(batch,)` (greedy search) and ``score`` float32
      `(batch,)` (its log-probability);
    * ``translate_n_best``: ``text`` -> ``translations`` string `(batch, n_best)` and
      ``scores`` float32 `(batch, n_best)` (beam search, best first, the ranking
      score).

    An empty or blank text gives "" (score 0). A text longer than the model's
    `max_source_length` is cut to it (not an error). Tokens the source vocabulary
    lacks map to `[UNK]`.

    Args:
        path: the output folder.
        model: a built `Seq2Seq`.
        source_vocabulary: a `kerasrnn.data.Vocabulary` (or its token list) with the
            model's source ids.
        target_vocabulary: the same for the target ids.
        tokenize: "words" (whitespace split), "chars" (Unicode characters of the
            stripped text, spaces included), or a function of TensorFlow ops from a
            string tensor `(batch,)` to a ragged token tensor `(batch, None)`.
        detokenize: "words" (join with spaces), "chars" (join with nothing), a
            function from ragged target tokens to strings `(batch,)`, or None (the
            same kind as `tokenize`, "words" for a function).
        lowercase: lower-case the text before the built-in tokenizers.
        beam_size: beam search's k for ``translate_n_best``.
        n_best: hypotheses per text in ``translate_n_best`` (default `beam_size`).
        max_length: the most tokens generated (default the model's
            `max_target_length`).
        length_normalization: beam search's ranking (None, "average", "gnmt").
        verbose: let Keras print the saved variables.

    Returns:
        `path`.
    """
    from kerasrnn.data import END_ID, PAD_ID, START_ID
    from kerasrnn.data.tokenizers import encode_tokens
    from kerasrnn.seq2seq import Seq2Seq

    if not isinstance(model, Seq2Seq):
        raise ValueError(f"`model` must be a kerasrnn.seq2seq.Seq2Seq; got {type(model).__name__}.")
    source_vocabulary = _vocabulary_tokens(source_vocabulary, "source_vocabulary")
    target_vocabulary = _vocabulary_tokens(target_vocabulary, "target_vocabulary")
    for name, vocab, size in (
        ("source_vocabulary", source_vocabulary, model.source_vocab_size),
        ("target_vocabulary", target_vocabulary, model.target_vocab_size),
    ):
        if len(vocab) != size:
            raise ValueError(
                f"`{name}` has {len(vocab)} tokens but the model's "
                f"{name.split('_')[0]}_vocab_size is {size}: export with the vocabulary "
                "the model was trained with."
            )
    if (model.pad_id, model.start_id, model.end_id) != (PAD_ID, START_ID, END_ID):
        raise ValueError(
            "export_seq2seq uses kerasrnn.data's special ids ([PAD]=0, [START]=2, "
            f"[END]=3); the model has pad_id={model.pad_id}, start_id={model.start_id}, "
            f"end_id={model.end_id}."
        )
    n_best = beam_size if n_best is None else n_best
    if isinstance(n_best, bool) or not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(
            f"`n_best` must be an integer in [1, beam_size={beam_size}]; got n_best={n_best!r}."
        )
    max_length = model.max_target_length if max_length is None else max_length
    split = _tokenizer(tokenize, lowercase)
    join = _detokenizer(detokenize, tokenize)
    lookup = source_vocabulary.lookup()
    target_tokens = tf.constant(target_vocabulary.tokens, tf.string)
    if not model.built:
        model.build()

    def encode(texts):
        ids = encode_tokens(split(texts), lookup)
        if model.max_source_length is not None:
            ids = ids[:, : model.max_source_length]
        empty = tf.reduce_all(tf.equal(ids, PAD_ID), axis=1)
        return ids, empty

    def to_strings(ids):
        """(rows, length) ids -> (rows,) strings, special ids dropped."""
        keep = (ids != PAD_ID) & (ids != START_ID) & (ids != END_ID)
        return join(tf.gather(target_tokens, tf.ragged.boolean_mask(ids, keep)))

    def translate(text):
        ids, empty = encode(text)
        # (the served outputs hold no alignments; their buffer would need a static
        # source length)
        result = model.generate(ids, method="greedy", max_length=max_length,
                                return_alignments=False)
        strings = to_strings(result.tokens[:, 0])
        return {
            "translation": tf.where(empty, tf.constant(""), strings),
            "score": tf.where(empty, 0.0, tf.cast(result.log_probs[:, 0], tf.float32)),
        }

    def translate_n_best(text):
        ids, empty = encode(text)
        result = model.generate(ids, method="beam", beam_size=beam_size, n_best=n_best,
                                max_length=max_length,
                                length_normalization=length_normalization,
                                return_alignments=False)
        tokens = result.tokens
        strings = tf.reshape(to_strings(tf.reshape(tokens, (-1, tf.shape(tokens)[-1]))),
                             (-1, n_best))
        empty = tf.tile(empty[:, None], [1, n_best])
        return {
            "translations": tf.where(empty, tf.constant(""), strings),
            "scores": tf.where(empty, 0.0, tf.cast(result.scores, tf.float32)),
        }

    signature = [tf.TensorSpec([None], tf.string, name="text")]
    return export_saved_model(
        path, model,
        {"serving_default": (translate, signature),
         "translate": (translate, signature),
         "translate_n_best": (translate_n_best, signature)},
        track=[lookup], verbose=verbose,
    )
