"""`kerasrnn.data.text`'s tokenizers as the translator uses them (moved here from the
recipe's tests): words, characters and WordPiece pieces back to text, the word
tokenizer's round trip (its detokenizer traced, as it runs inside a SavedModel) and on
Multi30k's English side."""

import gzip

import pytest

tf = pytest.importorskip("tensorflow")

from kerasrnn.data.text import detokenize_graph, tokenize_texts  # noqa: E402


def test_tokenizers_round_trip():
    texts = ["A man, in a red hat.", "", "  two  spaces "]
    words = tokenize_texts(texts, "word")
    assert words[0] == ["A", "man", ",", "in", "a", "red", "hat", "."]
    assert words[1] == []
    chars = tokenize_texts(texts, "char", lowercase=True)
    assert chars[2] == list("two▁spaces")
    back = detokenize_graph(tf.ragged.constant(words[:1]), "word")
    assert back.numpy()[0].decode() == "A man, in a red hat."
    back = detokenize_graph(tf.ragged.constant(chars[2:]), "char")
    assert back.numpy()[0].decode() == "two spaces"
    pieces = tf.ragged.constant([["A", "man", ",", "play", "##ing", "foot", "##ball", "."]])
    back = detokenize_graph(pieces, "wordpiece")
    assert back.numpy()[0].decode() == "A man, playing football."


def _word_round_trip(texts):
    """detokenize(tokenize(texts)) with the "word" tokeniser, the detokeniser traced
    (it runs inside the SavedModel)."""
    tokens = tf.ragged.constant(tokenize_texts(texts, "word"), dtype=tf.string)
    detokenize = tf.function(lambda t: detokenize_graph(t, "word"), autograph=False)
    return [t.decode("utf-8") for t in detokenize(tokens).numpy()]


def test_word_tokens_keep_intra_word_hyphens_apostrophes_and_brackets():
    texts = [
        "A man in a red t-shirt holds a man's hat.",
        "A dog (wearing a collar) runs [fast] {here}.",
        "My mother-in-law's 3-year-old O'Neil isn't here.",
        'She says "hello there!" and "bye".',
        "A T\u2019shirt, a Gro\u00df-Stadt and 2-3 \u00e9t\u00e9s.",
    ]
    assert tokenize_texts(texts[:1], "word")[0][5:8] == ["t", "-", "shirt"]
    assert _word_round_trip(texts) == texts
    # Spacing that only the original text knew is normalised, not glued wrongly.
    assert _word_round_trip(["( a ) ,b - c"]) == ["(a), b-c"]


def test_word_tokens_round_trip_on_multi30k(shared_data):
    """sacreBLEU's 13a tokeniser keeps "t-shirt" and "man's" whole: a word-level
    translation must come back in that form or it loses BLEU it earned."""
    import sacrebleu

    with gzip.open(shared_data("multi30k", "train.en.gz"), "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line, _ in zip(f, range(2000))]
    assert len(lines) == 2000
    back = _word_round_trip(lines)
    exact = sum(b == line for b, line in zip(back, lines)) / len(lines)
    assert exact >= 0.99, [(b, line) for b, line in zip(back, lines) if b != line][:5]
    assert sacrebleu.corpus_bleu(back, [lines]).score >= 99.5
