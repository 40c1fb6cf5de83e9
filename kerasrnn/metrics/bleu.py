"""Corpus BLEU exactly as sacreBLEU reports it (its defaults: 13a tokenisation, mixed
case, exponential smoothing, closest reference length).

keras-hub's `Bleu` metric measures the brevity penalty against the shortest reference
and tokenises differently, so its numbers are not comparable to published ones; this
module reproduces sacreBLEU's corpus score and is tested against sacreBLEU itself.
"""

import collections
import dataclasses
import math
import re

MAX_ORDER = 4

# mteval-v13a's tokenisation: split off punctuation and symbols, and periods/commas
# unless they sit inside a number, and a dash after a digit.
_SYMBOLS = re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])")
_PUNCT_AFTER_NON_DIGIT = re.compile(r"([^0-9])([\.,])")
_PUNCT_BEFORE_NON_DIGIT = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")
_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def tokenize_13a(line):
    """mteval-v13a tokenisation (WMT's standard), returning the tokens joined by spaces."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in _ENTITIES:
            line = line.replace(entity, char)
    line = _SYMBOLS.sub(r" \1 ", f" {line} ")
    line = _PUNCT_AFTER_NON_DIGIT.sub(r"\1 \2 ", line)
    line = _PUNCT_BEFORE_NON_DIGIT.sub(r" \1 \2", line)
    line = _DASH_AFTER_DIGIT.sub(r"\1 \2 ", line)
    return " ".join(line.split())


@dataclasses.dataclass
class BleuScore:
    """A corpus BLEU score and its sufficient statistics (sacreBLEU's fields)."""

    score: float
    counts: list
    totals: list
    precisions: list
    bp: float
    sys_len: int
    ref_len: int

    def __str__(self):
        precisions = "/".join(f"{p:.1f}" for p in self.precisions)
        return (
            f"BLEU = {self.score:.2f} {precisions} (BP = {self.bp:.3f} ratio = "
            f"{self.sys_len / self.ref_len if self.ref_len else 0:.3f} "
            f"hyp_len = {self.sys_len} ref_len = {self.ref_len})"
        )


def _ngrams(tokens):
    counts = collections.Counter()
    for n in range(1, MAX_ORDER + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i : i + n])] += 1
    return counts


def _closest_length(hyp_len, ref_lens):
    # Ties go to the shorter reference, as in mteval and sacreBLEU.
    return min(ref_lens, key=lambda ref_len: (abs(hyp_len - ref_len), ref_len))


def reference_streams(hypotheses, references, metric):
    """`hypotheses` as a list and `references` as a list of reference sets (a plain list
    of strings is one set), each as long as `hypotheses`, or a one-line error naming
    `metric`."""
    hypotheses = list(hypotheses)
    references = list(references)
    if references and isinstance(references[0], str):
        references = [references]
    for index, stream in enumerate(references):
        if len(stream) != len(hypotheses):
            raise ValueError(
                f"{metric}: reference set {index} has {len(stream)} sentences but "
                f"there are {len(hypotheses)} hypotheses."
            )
    return hypotheses, references


def _prepare(lowercase, tokenize):
    """The tokenisation of `corpus_bleu` / `sentence_bleu`: a line -> its tokens."""
    if tokenize == "13a":
        tokenizer = tokenize_13a
    elif tokenize == "none":
        tokenizer = lambda line: line  # noqa: E731
    else:
        raise ValueError(f"`tokenize` must be '13a' or 'none', got {tokenize!r}.")

    def prepare(line):
        line = line.lower() if lowercase else line
        return tokenizer(line.rstrip()).split()

    return prepare


def _statistics(hypotheses, references, prepare):
    """BLEU's sufficient statistics over aligned hypotheses and reference sets: clipped
    n-gram matches and n-gram totals per order, the hypothesis length and the sum of
    the closest reference lengths."""
    counts = [0] * MAX_ORDER
    totals = [0] * MAX_ORDER
    sys_len = ref_len = 0
    for position, hypothesis in enumerate(hypotheses):
        hyp_tokens = prepare(hypothesis)
        ref_counts: collections.Counter = collections.Counter()
        ref_lens = []
        for stream in references:
            ref_tokens = prepare(stream[position])
            ref_lens.append(len(ref_tokens))
            ref_counts |= _ngrams(ref_tokens)  # clip by the max count over references
        sys_len += len(hyp_tokens)
        ref_len += _closest_length(len(hyp_tokens), ref_lens)
        for ngram, count in _ngrams(hyp_tokens).items():
            totals[len(ngram) - 1] += count
            counts[len(ngram) - 1] += min(count, ref_counts[ngram])
    return counts, totals, sys_len, ref_len


def _score(counts, totals, sys_len, ref_len, effective_order):
    """BLEU from its statistics, with NIST "exp" smoothing; `effective_order`: the
    geometric mean runs over the orders the hypothesis has n-grams of (sentence BLEU)."""
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * MAX_ORDER
    if not any(counts):
        return BleuScore(0.0, counts, totals, precisions, bp, sys_len, ref_len)
    smoothing, order = 1.0, MAX_ORDER
    for n in range(MAX_ORDER):
        if totals[n] == 0:
            break  # later orders keep precision 0, which makes the score ~0
        if effective_order:
            order = n + 1
        if counts[n] == 0:
            smoothing *= 2
            precisions[n] = 100.0 / (smoothing * totals[n])
        else:
            precisions[n] = 100.0 * counts[n] / totals[n]
    log_sum = sum(math.log(p) if p > 0 else -9999999999 for p in precisions[:order])
    score = bp * math.exp(log_sum / order)
    return BleuScore(score, counts, totals, precisions, bp, sys_len, ref_len)


def corpus_bleu(hypotheses, references, lowercase=False, tokenize="13a"):
    """Corpus-level BLEU (Papineni et al. 2002) with sacreBLEU's default settings.

        BLEU = BP * exp(1/4 sum_{n=1..4} log p_n),   BP = min(1, exp(1 - r / c))

    where p_n is the clipped n-gram precision summed over the corpus, c the total
    hypothesis length and r the sum of the closest reference lengths. An order with no
    match gets p_n = 1 / (2^k * total_n) for the k-th such order (NIST "exp" smoothing).

    Args:
        hypotheses: list of detokenised hypothesis strings.
        references: one list of reference strings per reference set (sacreBLEU's
            layout: `[[ref1_sent1, ref1_sent2, ...], [ref2_sent1, ...]]`), or a plain
            list of strings for a single reference set.
        lowercase: compare lower-cased text.
        tokenize: "13a" (default) or "none" (split on whitespace only).

    Returns:
        A `BleuScore`; `.score` is on sacreBLEU's 0-100 scale.

    Example:

    >>> from kerasrnn.metrics import corpus_bleu
    >>> round(corpus_bleu(["the cat sat on the mat."], ["the cat sat on a mat."]).score, 2)
    48.89
    """
    hypotheses, references = reference_streams(hypotheses, references, "corpus_bleu")
    prepare = _prepare(lowercase, tokenize)
    return _score(*_statistics(hypotheses, references, prepare), effective_order=False)


def sentence_bleu(hypothesis, references, lowercase=False, tokenize="13a"):
    """BLEU of one sentence, as sacreBLEU's `sentence_bleu` computes it: the corpus
    formula over one hypothesis, "exp" smoothing, and the geometric mean over the
    orders the hypothesis has n-grams of (a 2-word hypothesis is scored on unigrams
    and bigrams, not given 0 for lacking 4-grams).

    Args:
        hypothesis: a detokenised string.
        references: a reference string, or a list of them.
        lowercase, tokenize: as in `corpus_bleu`.

    Returns:
        A `BleuScore` (0-100).

    Example:

    >>> from kerasrnn.metrics import sentence_bleu
    >>> round(sentence_bleu("the cat sat", "the cat sat down").score, 2)
    71.65
    """
    references = [references] if isinstance(references, str) else list(references)
    if not references:
        raise ValueError("sentence_bleu: give at least one reference.")
    prepare = _prepare(lowercase, tokenize)
    statistics = _statistics([hypothesis], [[r] for r in references], prepare)
    return _score(*statistics, effective_order=True)
