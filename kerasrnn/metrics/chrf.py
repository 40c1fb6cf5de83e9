"""chrF (Popović 2015) as sacreBLEU reports it with its defaults (chrF2: character
n-grams of orders 1 to 6, whitespace removed, beta = 2, no word n-grams), for a
corpus and for one sentence.

Written here, as `kerasrnn.metrics.bleu` is, so that the library scores translations
(and selects them: `kerasrnn.decoding.mbr_select`) without sacreBLEU installed; the
tests check it against sacreBLEU itself.
"""

import collections

from kerasrnn.metrics.bleu import reference_streams

CHAR_ORDER = 6
BETA = 2


def _char_ngrams(text):
    """The character n-gram counts of `text` without its whitespace, per order."""
    text = "".join(text.split())
    return [
        collections.Counter(text[i : i + n] for i in range(len(text) - n + 1))
        for n in range(1, CHAR_ORDER + 1)
    ]


def _statistics(hypothesis_ngrams, reference_ngrams):
    """[hypothesis count, reference count, matches] per order, flat; a hypothesis
    n-gram of an order the reference has none of is not counted."""
    statistics = []
    for hyp, ref in zip(hypothesis_ngrams, reference_ngrams):
        matches = sum(min(count, ref[ngram]) for ngram, count in hyp.items() if ngram in ref)
        statistics += [sum(hyp.values()) if ref else 0, sum(ref.values()), matches]
    return statistics


def _f_score(statistics):
    """100 F_beta of the precision and the recall averaged over the orders that both
    sides have n-grams of:

        chrF = 100 (1 + beta^2) P R / (beta^2 P + R)
    """
    precision = recall = 0.0
    orders = 0
    for n in range(CHAR_ORDER):
        hyp, ref, matches = statistics[3 * n : 3 * n + 3]
        if hyp > 0 and ref > 0:
            precision += matches / hyp
            recall += matches / ref
            orders += 1
    if orders:
        precision, recall = precision / orders, recall / orders
    if precision + recall == 0:
        return 0.0
    factor = BETA**2
    return 100 * (1 + factor) * precision * recall / (factor * precision + recall)


def _best_statistics(hypothesis, references):
    """The statistics against the reference that scores `hypothesis` best."""
    hyp = _char_ngrams(hypothesis)
    best, best_score = None, -1.0
    for reference in references:
        statistics = _statistics(hyp, _char_ngrams(reference))
        score = _f_score(statistics)
        if score > best_score:
            best, best_score = statistics, score
    return best


def _reference_list(references):
    references = [references] if isinstance(references, str) else list(references)
    if not references:
        raise ValueError("chrF: give at least one reference.")
    return references


def sentence_chrf(hypothesis, references):
    """chrF2 of one sentence against its reference(s) (the best-scoring one), 0-100.

    Example:

    >>> from kerasrnn.metrics import sentence_chrf
    >>> round(sentence_chrf("the cat sat", "the cat sat down"), 2)
    66.02
    """
    return _f_score(_best_statistics(hypothesis, _reference_list(references)))


def corpus_chrf(hypotheses, references):
    """chrF2 of a corpus: each sentence's statistics against its best reference,
    summed over the corpus, then one F score. `references`: one list of strings per
    reference set, or a plain list for one set (`corpus_bleu`'s layout).

    Example:

    >>> from kerasrnn.metrics import corpus_chrf
    >>> round(corpus_chrf(["the cat sat", "a dog"], ["the cat sat down", "a dog"]), 2)
    69.62
    """
    hypotheses, references = reference_streams(hypotheses, references, "corpus_chrf")
    total = [0] * (3 * CHAR_ORDER)
    for position, hypothesis in enumerate(hypotheses):
        statistics = _best_statistics(hypothesis, [stream[position] for stream in references])
        total = [a + b for a, b in zip(total, statistics)]
    return _f_score(total)
