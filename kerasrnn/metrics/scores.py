"""Scores of a whole test set in plain Python: per-class precision, recall and F1
(`class_scores`), a tagger's token accuracy, per-tag and entity scores
(`tagging_scores`), a translator's BLEU and exact match (`translation_scores`), and the
report of decoding a test set with several strategies (`translation_report`)."""

import collections
import time

from kerasrnn.layers.tag_schemes import is_entity_tags
from kerasrnn.metrics.bleu import corpus_bleu
from kerasrnn.metrics.entities import entity_scores


def class_scores(gold, predicted, labels):
    """Precision, recall, F1 and support of every label in `labels` (gold and predicted
    labels, aligned), as ``{label: {"precision", "recall", "f1", "support"}}``.
    (Counted here rather than with `keras.metrics.F1Score`, which needs one-hot arrays
    of the whole set and gives no support counts.)

    >>> class_scores(["a", "b", "a"], ["a", "a", "a"], ["a", "b"])["a"]["precision"]
    0.6666666666666666
    """
    true_pos, gold_count, pred_count = (collections.Counter() for _ in range(3))
    for g, p in zip(gold, predicted):
        gold_count[g] += 1
        pred_count[p] += 1
        true_pos[g] += g == p
    scores = {}
    for label in labels:
        precision = true_pos[label] / pred_count[label] if pred_count[label] else 0.0
        recall = true_pos[label] / gold_count[label] if gold_count[label] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[label] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": gold_count[label],
        }
    return scores


def classification_scores(gold, predicted, labels):
    """``{"examples", "accuracy", "per_class"}`` of predicted labels against gold ones
    (`class_scores` per label)."""
    correct = sum(p == g for p, g in zip(predicted, gold))
    return {
        "examples": len(gold),
        "accuracy": correct / max(len(gold), 1),
        "per_class": class_scores(gold, predicted, labels),
    }


def tagging_scores(gold, predicted, tags):
    """A tagger's scores over tagged sentences (lists of tags, aligned): sentences,
    tokens, token accuracy, per-tag precision / recall / F1 (`class_scores` over
    `tags`) and, for entity tags, entity-level precision / recall / F1 overall and per
    type, counted as conlleval counts them (`entity_scores`)."""
    flat_gold = [t for s in gold for t in s]
    flat_pred = [t for s in predicted for t in s]
    correct = sum(g == p for g, p in zip(flat_gold, flat_pred))
    scores = {
        "sentences": len(gold),
        "tokens": len(flat_gold),
        "accuracy": correct / max(len(flat_gold), 1),
        "per_tag": class_scores(flat_gold, flat_pred, tags),
    }
    if is_entity_tags(tags):
        scores["entities"] = entity_scores(gold, predicted)
    return scores


def translation_scores(hypotheses, references):
    """``{"bleu", "exact_match"}``: corpus BLEU as sacreBLEU reports it (`corpus_bleu`)
    and the share of hypotheses equal to their reference."""
    matches = sum(h == r for h, r in zip(hypotheses, references))
    return {
        "bleu": corpus_bleu(hypotheses, references).score,
        "exact_match": matches / max(len(references), 1),
    }


def translation_report(task, sources, references, strategies, **settings):
    """``{"examples", "cased", <name>: {"bleu", "exact_match", "sentences_per_second",
    "samples"}}``: `task` (a `Seq2Seq` with its preprocessor) translates `sources` with
    each of `strategies` (``{name: decoding strategy}``) and `settings` (`generate`'s
    other arguments: ``max_length``, ``readout_dtype``, ``fusion``), scored against
    `references` by `translation_scores`, timed, with the first 5 translations.

    A task whose target side lower-cases can only write lower case, so its references
    are lower-cased the same way first (WordPiece case-folds, "ß" -> "ss"): the scores
    are then case-insensitive and ``"cased"`` is False. Each strategy first decodes two
    sentences untimed, so the speed leaves out tracing.
    """
    sources, references = list(sources), list(references)
    if len(sources) != len(references):
        raise ValueError(
            f"translation_report: {len(sources)} sources but {len(references)} references; "
            "give one reference per source sentence."
        )
    target = task.preprocessor.target
    references = target.normalize_case(references)
    report: dict = {"examples": len(sources), "cased": not target.lowercase}
    for name, strategy in strategies.items():
        task.generate(sources[:2], strategy, **settings)
        began = time.perf_counter()
        hypotheses = task.generate(sources, strategy, **settings)
        seconds = time.perf_counter() - began
        report[name] = {
            **translation_scores(hypotheses, references),
            "sentences_per_second": len(sources) / seconds,
            "samples": [
                {"source": s, "reference": r, "translation": h}
                for s, r, h in list(zip(sources, references, hypotheses))[:5]
            ],
        }
    return report


def relatedness_scores(gold, predicted):
    """``{"pairs", "pearson", "spearman", "mse"}`` of predicted scores against gold ones:
    Pearson's r, Spearman's rho (ties averaged; both 0 for constant predictions) and the
    mean squared error (SciPy's correlations)."""
    import numpy as np
    from scipy import stats

    gold, predicted = np.asarray(gold, np.float64), np.asarray(predicted, np.float64)
    constant = np.ptp(predicted) == 0
    return {
        "pairs": len(gold),
        "pearson": 0.0 if constant else float(stats.pearsonr(gold, predicted)[0]),
        "spearman": 0.0 if constant else float(stats.spearmanr(gold, predicted)[0]),
        "mse": float(np.mean((gold - predicted) ** 2)),
    }
