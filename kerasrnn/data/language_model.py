"""Language-model data: corpora as token streams, stateful `batch x steps` windows and
padded per-sentence batches.

Two ways to feed a language model, both predicting token t+1 from tokens <= t:

* **stream** (the PTB protocol of Mikolov and Zaremba et al.): the corpus is one token
  stream, every line closed by `[END]` (PTB's `<eos>`); it is cut into `batch_size`
  contiguous rows, and each row into windows of `steps` tokens. Batch i holds window i
  of every row, so a stateful RNN carries its state from window to window (truncated
  BPTT). The stream is preceded by one `[END]` so that every token of the corpus,
  including the first, is predicted and counted; the last window is padded with
  `[PAD]` (id 0), which losses and metrics ignore.
* **sentences**: every line is an example `[START] w_1 .. w_n` -> `w_1 .. w_n [END]`,
  padded per batch; the RNN starts from zero states for each sentence.
"""

import numpy as np

from kerasrnn.data.loaders import DataFormatError, read_lines
from kerasrnn.data.vocabulary import END_ID, START_ID, UNK, Vocabulary
from kerasrnn.validation import check_int


def split_line(line, level="word"):
    """Tokens of one line: whitespace-separated words, or characters (`level="char"`,
    spaces kept as tokens)."""
    if level == "word":
        return line.split()
    if level == "char":
        return list(line)
    raise ValueError(f"`level` must be 'word' or 'char', got level={level!r}.")


def read_corpus(path, level="word", unk_token="<unk>"):
    """The sentences (lists of tokens) of a one-sentence-per-line text file (gzip read
    transparently). Blank lines are skipped at word level. `unk_token`, the corpus' own
    marker of rare words (PTB's `<unk>`), is mapped to the vocabulary's `[UNK]`.

    Raises `DataFormatError` (naming the file) when it holds no tokens at all.
    """
    sentences = []
    for _, line in read_lines(path):
        tokens = split_line(line, level)
        if level == "word" and not tokens:
            continue
        if unk_token:
            tokens = [UNK if token == unk_token else token for token in tokens]
        sentences.append(tokens)
    if not any(sentences):
        raise DataFormatError(path, None, "the corpus is empty: it contains no tokens.")
    return sentences


def build_vocabulary(sentences, max_size=None, min_freq=1):
    return Vocabulary.build(sentences, max_size=max_size, min_freq=min_freq)


def encode_stream(sentences, vocabulary):
    """The corpus as one int32 id stream, `[END]` after every sentence."""
    ids = []
    for tokens in sentences:
        ids.extend(vocabulary.encode(tokens))
        ids.append(END_ID)
    return np.asarray(ids, dtype="int32")


def backward_stream(stream):
    """The stream a backward LM (a biLM's second direction) reads, for `stream_windows`.

    The forward LM has inputs x = [END] + S[:-1] and targets y = S (S ends with
    [END]). The backward LM reads the same tokens right to left and predicts the
    previous one: its inputs are reverse(y) and its targets reverse(x), so that at
    every reversed position the target is the token just before (in reading order,
    just after) the last one read. `stream_windows` builds x from y as [END] + y[:-1],
    so its stream here is reverse([END] + S[:-1]): since reverse(S) starts with S's
    final [END], that gives exactly inputs reverse(S), targets reverse(x). Every
    sentence w_1 .. w_n thus reads as [END] w_n .. w_1 -> w_n .. w_1 [END], the mirror
    of the forward [END] w_1 .. w_n -> w_1 .. w_n [END]; both directions predict the
    same number of tokens."""
    stream = np.asarray(stream, "int32")
    return np.concatenate([[END_ID], stream[:-1]]).astype("int32")[::-1].copy()


def stream_windows(stream, batch_size, steps):
    """Cuts an id stream into stateful truncated-BPTT windows.

    With the targets y = stream and the inputs x = [END] + stream[:-1], both are split
    into `batch_size` contiguous rows of length L = ceil(len / batch_size) (the last row
    padded with 0) and each row into ceil(L / steps) windows of `steps` tokens.

    Returns:
        `(inputs, targets)`, int32 arrays of shape `(num_windows * batch_size, steps)`,
        ordered so that rows `[i * batch_size, (i + 1) * batch_size)` are batch i and row
        b of batch i + 1 continues row b of batch i. Feed them to `model.fit(...,
        batch_size=batch_size, shuffle=False)` with a stateful model.

    Raises:
        ValueError: an empty stream, or a window longer than a row (there would be
            fewer than `steps` tokens per row).
    """
    stream = np.asarray(stream, dtype="int32")
    check_int("batch_size", batch_size)
    check_int("steps", steps)
    if stream.ndim != 1 or stream.size == 0:
        raise ValueError(
            f"the token stream is empty (shape {stream.shape}); there is nothing to model."
        )
    row_length = -(-stream.size // batch_size)
    if steps > row_length:
        raise ValueError(
            f"window longer than the corpus: a batch_size x steps = {batch_size} x {steps} "
            f"window needs {steps} tokens in each of {batch_size} rows, but the corpus has "
            f"only {stream.size} tokens ([END]s included), {row_length} per row; use "
            f"fewer steps or a smaller batch."
        )
    windows = -(-row_length // steps)
    width = windows * steps
    targets = np.zeros((batch_size * width,), "int32")
    targets[: stream.size] = stream
    inputs = np.zeros_like(targets)
    inputs[0] = END_ID
    inputs[1 : stream.size] = stream[:-1]

    def arrange(flat):
        rows = flat.reshape(batch_size, windows, steps)
        return rows.transpose(1, 0, 2).reshape(windows * batch_size, steps)

    return arrange(inputs), arrange(targets)


def sentence_examples(sentences, vocabulary, max_length=None):
    """Per-sentence examples: inputs `[START] w_1 .. w_n`, targets `w_1 .. w_n [END]`
    (sentences cut to `max_length` tokens first). Returns two lists of id lists."""
    encoded = [vocabulary.encode(tokens)[:max_length] for tokens in sentences if len(tokens)]
    if not encoded:
        raise ValueError("no sentences to batch: every sentence is empty.")
    return [[START_ID] + ids for ids in encoded], [ids + [END_ID] for ids in encoded]


def sentence_dataset(
    sentences,
    vocabulary,
    batch_size,
    shuffle=True,
    seed=None,
    max_length=None,
    bucket_boundaries=None,
):
    """A `tf.data.Dataset` of `(inputs, targets)` batches of `sentence_examples`, padded
    with 0 per batch (optionally length-bucketed), via `kerasrnn.data.pipeline`."""
    from kerasrnn.data.pipeline import sequence_dataset

    inputs, targets = sentence_examples(sentences, vocabulary, max_length)
    return sequence_dataset(
        inputs,
        targets,
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
        bucket_boundaries=bucket_boundaries,
        target_weights=False,
    )


def language_model_data(
    sentences,
    vocabulary,
    batch_size,
    steps=None,
    shuffle=False,
    seed=None,
    max_length=None,
    bidirectional=False,
):
    """What a `kerasrnn.models.LanguageModel` trains or is measured on, for one direction
    or both.

    With `steps`, the corpus as one stream (`encode_stream`) in stateful windows of
    `batch_size` rows x `steps` tokens (`stream_windows`): ``(inputs, targets)`` arrays
    in order (fit them with ``shuffle=False``); without, padded sentence batches
    (`sentence_dataset`, sentences cut to `max_length` tokens, shuffled with `shuffle`).

    Returns:
        ``{"forward": data}``, with `bidirectional` also ``"backward"``: the backward
        LM's reads the text right to left and predicts the previous token
        (`backward_stream`; reversed sentences in sentence batches).
        `bidirectional_data` joins the two for a biLM's `fit`.
    """
    data = {}
    for direction in ("forward", "backward") if bidirectional else ("forward",):
        if steps:
            stream = encode_stream(sentences, vocabulary)
            if direction == "backward":
                stream = backward_stream(stream)
            data[direction] = stream_windows(stream, batch_size, steps)
        else:
            if direction == "backward":
                sentences = [list(reversed(s)) for s in sentences]
            data[direction] = sentence_dataset(
                sentences, vocabulary, batch_size, shuffle, seed, max_length
            )
    return data


def bidirectional_data(data):
    """`language_model_data`'s two directions as a biLM takes them: ``({"forward": x,
    "backward": x'}, {"forward": y, "backward": y'})`` windows, or a zipped dataset of
    such pairs."""
    forward, backward = data["forward"], data["backward"]
    if isinstance(forward, tuple):
        return tuple({"forward": f, "backward": b} for f, b in zip(forward, backward))
    import tensorflow as tf

    return tf.data.Dataset.zip((forward, backward)).map(
        lambda f, b: ({"forward": f[0], "backward": b[0]}, {"forward": f[1], "backward": b[1]})
    )
