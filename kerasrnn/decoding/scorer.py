"""How beam search ranks hypotheses: `Scorer` (length normalisation and GNMT's coverage
penalty) and `TFAScorer`, TensorFlow Addons' way of counting the end token."""

import keras
from keras import ops

LENGTH_NORMALIZATIONS = (None, "average", "gnmt", "wu")


def length_penalty(lengths, length_normalization, alpha=0.6):
    """The divisor lp(t) of the ranking score log p(y) / lp(t).

    * `None`: lp = 1, the raw log-probability (favours short outputs);
    * `"average"`: lp = t, the mean log-probability per token (1/t sum_i log p(y_i|...));
    * `"gnmt"` or its alias `"wu"`: lp = ((5 + t) / 6) ** alpha (Wu et al. 2016, GNMT).
    """
    lengths = ops.cast(lengths, "float32")
    if length_normalization is None:
        return ops.ones_like(lengths)
    if length_normalization == "average":
        return ops.maximum(lengths, 1.0)
    if length_normalization in ("gnmt", "wu"):
        return ops.power((5.0 + lengths) / 6.0, float(alpha))
    raise ValueError(
        "`length_normalization` must be None, 'average', 'gnmt' or 'wu' (the same), got "
        f"length_normalization={length_normalization!r}."
    )


def coverage_penalty(coverage, beta):
    """GNMT's coverage penalty cp = beta * sum_i log(min(c_i, 1)), with c_i = sum_t a_{t,i}
    the attention source position i received over the hypothesis (Wu et al. 2016).

    `coverage` is `(..., source_length)`; the result has its leading shape. A position
    whose coverage is exactly 0 counts as covered (log 1 = 0), as in TensorFlow Addons:
    padded positions never receive attention and must not make the penalty -inf.
    """
    coverage = ops.where(ops.equal(coverage, 0.0), 1.0, coverage)
    return float(beta) * ops.sum(ops.log(ops.minimum(coverage, 1.0)), axis=-1)


@keras.saving.register_keras_serializable(package="kerasrnn")
class Scorer:
    """The ranking score of a hypothesis y in beam search:

        score(y) = log p(y | x) / lp(|y|) + cp(y)

    with lp = 1 (`length_normalization=None`), lp = |y| (`"average"`, the mean
    log-probability per token) or lp = ((5 + |y|) / 6) ** alpha (`"gnmt"`, alias
    `"wu"`, Wu et al. 2016), and GNMT's coverage penalty
    cp = beta * sum_i log(min(sum_t a_{t,i}, 1)) (beta = `coverage_penalty_weight`,
    a = the alignments the step function returns; a source position with zero total
    attention counts as covered). |y| counts the end token (`count_end_token = True`;
    `TFAScorer` does not).

    Subclass it and override `__call__` for a rescoring of your own (a word reward,
    a language-model bonus, ...): beam search calls it on every candidate.

    Args:
        length_normalization: None, "average", "gnmt" or "wu".
        alpha: GNMT's exponent.
        coverage_penalty_weight: beta >= 0; needs the step function's alignments.

    Example:

    >>> import numpy as np, kerasrnn
    >>> gnmt = kerasrnn.decoding.Scorer("gnmt", alpha=1.0)
    >>> float(np.asarray(gnmt(np.float32([-2.0]), np.int32([7]))[0]))  # -2 / 2
    -1.0
    """

    # Whether |y| counts the end token when the hypothesis that picks it is scored.
    count_end_token = True

    def __init__(self, length_normalization="average", alpha=0.6, coverage_penalty_weight=0.0):
        if length_normalization not in LENGTH_NORMALIZATIONS:
            raise ValueError(
                "`length_normalization` must be None, 'average', 'gnmt' or 'wu' (the "
                f"same), got length_normalization={length_normalization!r}."
            )
        beta = float(coverage_penalty_weight)
        if beta < 0:
            raise ValueError(
                f"`coverage_penalty_weight` must be >= 0, got {coverage_penalty_weight!r}."
            )
        self.length_normalization = length_normalization
        self.alpha = float(alpha)
        self.coverage_penalty_weight = beta

    @property
    def needs_alignments(self):
        return self.coverage_penalty_weight > 0

    def __call__(self, log_probs, lengths, coverage=None):
        """log_probs / lp(lengths) (+ cp(coverage) when `coverage` is given), any
        matching shapes (`coverage` with a trailing source axis)."""
        score = log_probs / length_penalty(lengths, self.length_normalization, self.alpha)
        if coverage is not None and self.coverage_penalty_weight > 0:
            score = score + self.coverage_penalty(coverage)
        return score

    def coverage_penalty(self, coverage):
        return coverage_penalty(coverage, self.coverage_penalty_weight)

    def get_config(self):
        return {
            "length_normalization": self.length_normalization,
            "alpha": self.alpha,
            "coverage_penalty_weight": self.coverage_penalty_weight,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


@keras.saving.register_keras_serializable(package="kerasrnn")
class TFAScorer(Scorer):
    """TensorFlow Addons' `BeamSearchDecoder` scoring: GNMT length penalty with
    alpha = `length_penalty_weight` (0: lp = 1) and the coverage penalty, but the
    step that picks the end token is scored like a live hypothesis (|y| without the
    end token, no coverage penalty). With `CompetingBeamSearch` it is TFA's beam
    search exactly; `kerasrnn.compat.tfa.beam_search_decoder` builds that pair.

    Example:

    >>> import kerasrnn
    >>> scorer = kerasrnn.decoding.TFAScorer(length_penalty_weight=0.6)
    >>> scorer.length_normalization, scorer.alpha, scorer.count_end_token
    ('gnmt', 0.6, False)
    """

    count_end_token = False

    def __init__(self, length_penalty_weight=0.0, coverage_penalty_weight=0.0):
        super().__init__("gnmt", float(length_penalty_weight), coverage_penalty_weight)

    def get_config(self):
        return {
            "length_penalty_weight": self.alpha,
            "coverage_penalty_weight": self.coverage_penalty_weight,
        }


def get_scorer(scorer):
    """None -> `Scorer()`; a `Scorer` as is; a dict -> its config."""
    if scorer is None:
        return Scorer()
    if isinstance(scorer, Scorer):
        return scorer
    if isinstance(scorer, dict):
        if "class_name" in scorer:
            return keras.saving.deserialize_keras_object(scorer)
        return Scorer(**scorer)
    raise TypeError(
        f"`scorer` must be a kerasrnn.decoding.Scorer, its config dict or None; got {scorer!r}."
    )
