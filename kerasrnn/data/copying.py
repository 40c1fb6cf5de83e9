"""The ids copy attention reads and writes (`kerasrnn.seq2seq.CopyReadout`): which
source words the target vocabulary has, the training targets in the extended
vocabulary, and decoded ids back to words. Pure Python over `Vocabulary` objects."""

from kerasrnn.data.vocabulary import END_ID, SPECIAL_TOKENS, UNK_ID


def copy_vocabulary_map(source_vocabulary, target_vocabulary):
    """One entry per source id: the target id of the same word, or -1 where the target
    vocabulary lacks it (`CopyReadout(source_to_target=...)`). The special tokens map
    to their own ids ([UNK] copies as [UNK]).

    Example:

    >>> from kerasrnn.data import Vocabulary, copy_vocabulary_map
    >>> source = Vocabulary(["Anna", "sieht", "Bob"])
    >>> target = Vocabulary(["sees", "Anna"])
    >>> copy_vocabulary_map(source, target)[4:]  # Anna, sieht, Bob
    [5, -1, -1]
    """
    table = []
    for token in source_vocabulary.tokens:
        if token in SPECIAL_TOKENS or token in target_vocabulary:
            table.append(target_vocabulary.token_to_id(token))
        else:
            table.append(-1)
    return table


def copy_target_ids(source_tokens, target_tokens, source_vocabulary, target_vocabulary):
    """One example's decoder targets in the extended vocabulary (`[END]` appended): a
    target word's id where the target vocabulary has it, else V + i (V = the target
    vocabulary's size) when the word is a source word at position i (its first
    position; a source word the source vocabulary lacks is [UNK] there and cannot be
    copied), else [UNK].

    Example:

    >>> from kerasrnn.data import Vocabulary, copy_target_ids
    >>> source = Vocabulary(["Anna", "sieht", "Bob"])
    >>> target = Vocabulary(["sees", "Anna"])  # 6 ids
    >>> copy_target_ids(["Bob", "sieht", "Anna"], ["Bob", "sees", "Anna"], source, target)
    [6, 4, 5, 3]
    """
    size = len(target_vocabulary)
    first = {}
    for i, token in enumerate(source_tokens):
        if source_vocabulary.token_to_id(token) != UNK_ID:
            first.setdefault(token, i)
    ids = []
    for token in target_tokens:
        if token in target_vocabulary:
            ids.append(target_vocabulary.token_to_id(token))
        elif token in first:
            ids.append(size + first[token])
        else:
            ids.append(UNK_ID)
    return ids + [END_ID]


def copy_decode(ids, source_tokens, target_vocabulary):
    """Decoded ids (one hypothesis) -> tokens: an id past the target vocabulary is the
    source token at position id - V."""
    size = len(target_vocabulary)
    return [source_tokens[i - size] if i >= size else target_vocabulary.id_to_token(i) for i in ids]
