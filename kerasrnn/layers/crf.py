"""Linear-chain conditional random field: a layer, its loss, Viterbi and marginals.

The layer turns per-step features into *pairwise potentials*: the score of tag j at step
t after tag i at the previous real step, with the learned transition matrix (and the
start and end transitions, and any forbidden transitions of a tag scheme) already folded
in. Everything a CRF needs then travels in one tensor, the Keras mask included: a padded
step's potentials are the identity transition (0 on the diagonal, "minus infinity" off
it), which leaves every path's score, the partition function and Viterbi unchanged, and
which every function here reads back as padding when no mask is passed. So the loss is an
ordinary stateless Keras loss that honours ``Embedding(mask_zero=True)`` on every backend,
the model an ordinary functional model (`model.fit`, `.keras` files, SavedModels), and
decoding (the best path, or the n best) a function of the model's output. keras.ops
only: TensorFlow, JAX and PyTorch.
"""

import keras
import numpy as np
from keras import ops

from kerasrnn.ops import scan as _scan
from kerasrnn.validation import check_int

# A finite "minus infinity": exp() of it underflows to 0 in float32, sums of a few of
# them stay finite (no inf - inf = nan in the gradients).
_NEG = -1e30


def _float(x):
    """CRF arithmetic in float32 (float64 kept): log-sum-exp over paths loses too much
    in float16."""
    x = ops.convert_to_tensor(x)
    if keras.backend.standardize_dtype(x.dtype) == "float64":
        return x
    return ops.cast(x, "float32")


def potentials_mask(potentials):
    """The real steps of a `CRF` layer's output, (batch, time) bool: a padded step is the
    identity transition (diagonal 0, every other entry "minus infinity"), which no real
    step has."""
    potentials = ops.convert_to_tensor(potentials)
    eye = ops.eye(potentials.shape[-1], dtype="bool")
    identity = ops.where(eye, potentials == 0, potentials <= _NEG / 2)
    return ops.logical_not(ops.all(identity, axis=(-2, -1)))


def _mask_or_ones(potentials, mask):
    """The explicit mask, or the one the potentials carry (all real for potentials not
    made by `CRF`)."""
    if mask is None:
        return potentials_mask(potentials)
    return ops.cast(mask, "bool")


def _boundaries(real):
    """(first, last): the first and the last real step of each row, (batch, time) bool."""
    count = ops.cumsum(ops.cast(real, "int32"), axis=1)
    first = ops.logical_and(real, count == 1)
    last = ops.logical_and(real, count == count[:, -1:])
    return first, last


def _identity(potentials):
    """Padding: the identity transition, 0 from each tag to itself, _NEG elsewhere."""
    eye = ops.eye(potentials.shape[-1], dtype="bool")
    return ops.where(eye, ops.zeros_like(potentials), ops.zeros_like(potentials) + _NEG)


def _check_allowed(allowed, num_tags):
    """`allowed` -> a (num_tags + 2, num_tags + 2) NumPy bool matrix (a (num_tags,
    num_tags) one gets no start / end constraints)."""
    allowed = np.asarray(allowed)
    if allowed.dtype != bool and not np.isin(allowed, (0, 1)).all():
        raise ValueError(
            "allowed_transitions must be a boolean matrix (True: allowed), as "
            "kerasrnn.layers.allowed_transitions returns; got values other than 0 and 1."
        )
    allowed = allowed.astype(bool)
    if allowed.shape == (num_tags, num_tags):
        full = np.ones((num_tags + 2, num_tags + 2), bool)
        full[:num_tags, :num_tags] = allowed
        return full
    if allowed.shape != (num_tags + 2, num_tags + 2):
        raise ValueError(
            f"allowed_transitions must have shape (num_tags + 2, num_tags + 2) = "
            f"({num_tags + 2}, {num_tags + 2}) (the tags, then START and END, as "
            f"kerasrnn.layers.allowed_transitions returns) or ({num_tags}, {num_tags}) for "
            f"num_tags={num_tags}; got shape {allowed.shape}."
        )
    return allowed


def _penalties(allowed, num_tags, dtype):
    """Additive log-space constraints: (transitions (K, K), start (K,), end (K,)), 0 where
    allowed and _NEG where forbidden."""
    allowed = _check_allowed(allowed, num_tags)
    k = num_tags
    pen = np.where(allowed, 0.0, _NEG)
    return tuple(
        ops.convert_to_tensor(p, dtype=dtype) for p in (pen[:k, :k], pen[k, :k], pen[:k, k + 1])
    )


def _pairwise(emissions, transitions, start, end, real):
    """psi from e (batch, time, K), A (K, K), s and e' (K,) and the real steps."""
    first, last = _boundaries(real)
    e = emissions[:, :, None, :]
    end = ops.where(last[:, :, None, None], end, ops.zeros_like(end))
    potentials = transitions + e + end
    entry = start + e + end + ops.zeros_like(transitions)
    potentials = ops.where(first[:, :, None, None], entry, potentials)
    return ops.where(real[:, :, None, None], potentials, _identity(potentials))


def constrain(potentials, allowed_transitions, mask=None):
    """Forbids transitions in potentials already made (decode-time constraints for a
    model trained without them): psi_t(i, j) = -inf where i -> j is not allowed, and at
    the first (last) real step for tags that may not start (end) a sequence.

    Args:
        potentials: (batch, time, num_tags, num_tags), the output of `CRF`.
        allowed_transitions: the (num_tags + 2, num_tags + 2) bool matrix of
            `allowed_transitions` (START and END last).
        mask: (batch, time) bool; None: the mask the potentials carry.
    """
    potentials = _float(potentials)
    _check_potentials(potentials)
    real = _mask_or_ones(potentials, mask)
    transitions, start, end = _penalties(
        allowed_transitions, potentials.shape[-1], potentials.dtype
    )
    zeros = ops.zeros_like(potentials[:, :, 0, :])
    penalty = _pairwise(zeros, transitions, start, end, real)
    return ops.where(real[:, :, None, None], potentials + penalty, potentials)


def _check_potentials(potentials):
    if len(potentials.shape) != 4 or potentials.shape[-1] != potentials.shape[-2]:
        raise ValueError(
            "CRF potentials must have shape (batch, time, num_tags, num_tags) (the "
            f"output of kerasrnn.layers.CRF); got {tuple(potentials.shape)}."
        )


def _time_major(x):
    return ops.moveaxis(x, 1, 0)


def _start_state(potentials):
    """log-space indicator of a virtual start tag 0: [0, -inf, ..., -inf] per row. The
    first real step's potentials do not depend on the previous tag, so the choice of 0
    is arbitrary and exact."""
    num_tags = potentials.shape[-1]
    row = ops.where(ops.arange(num_tags) == 0, 0.0, _NEG)
    row = ops.cast(row, potentials.dtype)
    return ops.zeros_like(potentials[:, 0, 0, :]) + row


def crf_forward(potentials, mask=None):
    """The forward algorithm: log alpha_t(j) after every step, and log Z.

    alpha_t(j) = logsumexp_i(alpha_{t'}(i) + psi_t(i, j)) over real steps (t' the previous
    real step); a padded step leaves alpha unchanged.

    Args:
        potentials: (batch, time, num_tags, num_tags), the output of `CRF`.
        mask: (batch, time) bool, True on real steps; None: the mask the potentials
            carry (all real for potentials not made by `CRF`).

    Returns:
        (log_alpha (batch, time, num_tags), log_z (batch,)).
    """
    potentials = _float(potentials)
    _check_potentials(potentials)
    mask = _mask_or_ones(potentials, mask)

    def step(alpha, inputs):
        psi, real = inputs
        new = ops.logsumexp(alpha[:, :, None] + psi, axis=1)
        alpha = ops.where(real[:, None], new, alpha)
        return alpha, alpha

    alpha, alphas = _scan(
        step, _start_state(potentials), (_time_major(potentials), _time_major(mask))
    )
    return _time_major(alphas), ops.logsumexp(alpha, axis=-1)


def crf_log_norm(potentials, mask=None):
    """log Z: the log of the summed exp-scores of all tag paths, (batch,)."""
    return crf_forward(potentials, mask)[1]


def crf_sequence_score(potentials, tags, mask=None):
    """The score of the given tag paths: the sum over real steps of psi_t(y_{t'}, y_t),
    t' the previous real step. tags: (batch, time) int; returns (batch,)."""
    potentials = _float(potentials)
    _check_potentials(potentials)
    mask = _mask_or_ones(potentials, mask)
    tags = ops.cast(tags, "int32")

    def step(carry, inputs):
        score, previous = carry
        psi, tag, real = inputs
        row = ops.take_along_axis(psi, previous[:, None, None], axis=1)[:, 0, :]
        value = ops.take_along_axis(row, tag[:, None], axis=1)[:, 0]
        score = score + ops.where(real, value, ops.zeros_like(value))
        previous = ops.where(real, tag, previous)
        return (score, previous), (score, previous)

    init = (ops.zeros_like(potentials[:, 0, 0, 0]), ops.zeros_like(tags[:, 0]))
    (score, _), _ = _scan(
        step, init, (_time_major(potentials), _time_major(tags), _time_major(mask))
    )
    return score


def crf_log_likelihood(potentials, tags, mask=None):
    """log p(tags | x) = score(tags) - log Z, (batch,)."""
    return crf_sequence_score(potentials, tags, mask) - crf_log_norm(potentials, mask)


def _argmax(x, maximum, axis):
    """The first index where `x` reaches `maximum` (its max along `axis`): argmax as an
    int32 argmax of the comparison. Float `ops.argmax` on TensorFlow tests the sign bit
    with a BitwiseAnd, which is not a LiteRT builtin (kerasrnn.export.export_litert)."""
    hit = ops.cast(x == ops.expand_dims(maximum, axis), "int32")
    return ops.cast(ops.argmax(hit, axis=axis), "int32")


def crf_decode(potentials, mask=None, allowed_transitions=None, n_best=None):
    """Viterbi decoding: the highest-scoring tag path and its score (or the n best).

    delta_t(j) = max_i(delta_{t'}(i) + psi_t(i, j)) with back-pointers, then the path is
    read backwards from argmax_j delta_T(j). With `n_best` = k, list Viterbi (see
    `crf_decode_n_best`): the k best paths, best first.

    Args:
        potentials: (batch, time, num_tags, num_tags), the output of `CRF`.
        mask: (batch, time) bool, True on real steps; None: the mask the potentials
            carry (all real for potentials not made by `CRF`).
        allowed_transitions: constraints at decoding only (see `constrain`), for a
            model trained without them; None: the potentials as they are.
        n_best: None: the best path; an int k >= 1: the k best paths.

    Returns:
        (tags int32 (batch, time), 0 on padded steps; best_score (batch,)); with
        `n_best` = k: tags (batch, k, time) and scores (batch, k), as `crf_decode_n_best`.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.layers import crf_decode
    >>> psi = np.log([[[[1, 1], [1, 1]], [[4, 1], [2, 3]]]]).astype("float32")
    >>> tags, scores = crf_decode(psi, n_best=3)  # exp(score): 00 4, 11 3, 10 2, 01 1
    >>> np.asarray(tags).tolist(), np.round(np.exp(np.asarray(scores)), 3).tolist()
    ([[[0, 0], [1, 1], [1, 0]]], [[4.0, 3.0, 2.0]])
    """
    if n_best is not None:
        return crf_decode_n_best(potentials, n_best, mask, allowed_transitions)
    potentials = _float(potentials)
    _check_potentials(potentials)
    mask = _mask_or_ones(potentials, mask)
    if allowed_transitions is not None:
        potentials = constrain(potentials, allowed_transitions, mask)
    num_tags = potentials.shape[-1]
    stay = ops.zeros_like(ops.cast(potentials[:, 0, 0, :], "int32")) + ops.arange(
        num_tags, dtype="int32"
    )

    def forward(carry, inputs):
        delta, _ = carry
        psi, real = inputs
        scores = delta[:, :, None] + psi
        best = ops.max(scores, axis=1)
        pointer = _argmax(scores, best, axis=1)
        # a padded step keeps delta and points every tag to itself
        delta = ops.where(real[:, None], best, delta)
        pointer = ops.where(real[:, None], pointer, stay)
        return (delta, pointer), (delta, pointer)

    (delta, _), (_, pointers) = _scan(
        forward,
        (_start_state(potentials), stay),
        (_time_major(potentials), _time_major(mask)),
    )
    best_score = ops.max(delta, axis=-1)
    last = _argmax(delta, best_score, axis=-1)

    def backward(tag, pointer):
        previous = ops.take_along_axis(pointer, tag[:, None], axis=1)[:, 0]
        return previous, tag

    # pointers[t] maps the tag at step t to the tag at t - 1: walk t = T-1 .. 0, output
    # the tag at t (over all T steps, so a one-step batch scans once, not zero times,
    # which the torch backend's scan cannot). A forward scan over the flipped pointers,
    # not reverse=True: tf2onnx cannot map a reversed scan's outputs to an ONNX Loop.
    _, tags = _scan(lambda tag, xs: backward(tag, xs[0]), last, [ops.flip(pointers, axis=0)])
    tags = ops.moveaxis(ops.flip(tags, axis=0), 0, 1)
    return ops.where(mask, tags, ops.zeros_like(tags)), best_score


def _top_k(x, k):
    """The k largest entries of x (batch, n) and their indices, best first; among equal
    values the lower index first, on every backend (k rounds of a first-index argmax:
    `ops.top_k` breaks ties differently on torch). k is small (an n-best list)."""
    values, indices = [], []
    removed = ops.cast(float("-inf"), x.dtype)
    for _ in range(k):
        best = ops.max(x, axis=-1)
        index = _argmax(x, best, axis=-1)
        values.append(best)
        indices.append(index)
        hit = ops.arange(x.shape[-1], dtype="int32")[None, :] == index[:, None]
        x = ops.where(hit, removed, x)
    return ops.stack(values, axis=-1), ops.stack(indices, axis=-1)


def crf_decode_n_best(potentials, n_best, mask=None, allowed_transitions=None):
    """List Viterbi: the k highest-scoring tag paths and their scores, best first.

    Viterbi with a list of the k best partial paths per tag (Nilsson & Goldberger
    2001's list Viterbi; NCRF++'s n-best decoding):

    .. math::

        \\delta_t(j, \\cdot) = \\operatorname{top-}k_{\\,i,\\, r}
            \\big(\\delta_{t'}(i, r) + \\psi_t(i, j)\\big)

    over every previous tag i and rank r < k (t' the previous real step), each entry
    with its back-pointer (i, r); the k best of delta_T(j, r) over all (j, r) are
    read backwards. A padded step keeps every list as it is, so masks and the
    constraints of `constrain` (``allowed_transitions``) hold as in `crf_decode`, and
    with k = 1 the path and score are `crf_decode`'s.

    Ties are broken deterministically, on every backend: among paths of equal score
    the one whose tags, read from the last step backwards, are lexicographically
    smaller comes first (as `crf_decode` takes the lowest tag index).

    Args:
        potentials: (batch, time, num_tags, num_tags), the output of `CRF`.
        n_best: k >= 1, the number of paths.
        mask: (batch, time) bool, True on real steps; None: the mask the potentials
            carry.
        allowed_transitions: decode-time constraints (see `constrain`); None: none.

    Returns:
        (tags int32 (batch, k, time), 0 on padded steps; scores (batch, k), sorted
        descending). A row with fewer than k allowed paths (a short sentence, or the
        constraints) fills the ranks past them with score -inf and tags 0.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.layers import crf_decode_n_best
    >>> rng = np.random.default_rng(0)
    >>> psi = rng.normal(size=(2, 5, 3, 3)).astype("float32")
    >>> tags, scores = crf_decode_n_best(psi, 4, mask=np.array([[1] * 5, [1] * 3 + [0] * 2]))
    >>> tuple(tags.shape), tuple(scores.shape), bool(np.all(np.diff(scores, axis=1) <= 0))
    ((2, 4, 5), (2, 4), True)
    """
    k = check_int("n_best", n_best)
    potentials = _float(potentials)
    _check_potentials(potentials)
    mask = _mask_or_ones(potentials, mask)
    if allowed_transitions is not None:
        potentials = constrain(potentials, allowed_transitions, mask)
    num_tags = potentials.shape[-1]
    # the lists, (batch, tags, k): one real entry (tag 0, rank 0, score 0) before the
    # first real step, whose potentials do not depend on the previous tag
    start = _start_state(potentials)[:, :, None]
    ranks = ops.cast(ops.arange(k) == 0, potentials.dtype)
    delta = start * ranks + (1.0 - ranks) * _NEG
    # back-pointers are flat (i, r) indices i * k + r; a padded step points to itself
    stay = ops.zeros_like(ops.cast(delta, "int32")) + ops.reshape(
        ops.arange(num_tags * k, dtype="int32"), (num_tags, k)
    )

    def forward(carry, inputs):
        delta, _ = carry
        psi, real = inputs
        # candidates (batch, tags j, previous (i, r) flat): delta(i, r) + psi(i, j)
        scores = delta[:, :, :, None] + psi[:, :, None, :]
        scores = ops.reshape(ops.transpose(scores, (0, 3, 1, 2)), (-1, num_tags * k))
        best, pointer = _top_k(scores, k)
        best = ops.reshape(best, (-1, num_tags, k))
        pointer = ops.reshape(pointer, (-1, num_tags, k))
        delta = ops.where(real[:, None, None], best, delta)
        pointer = ops.where(real[:, None, None], pointer, stay)
        return (delta, pointer), (delta, pointer)

    (delta, _), (_, pointers) = _scan(
        forward, (delta, stay), (_time_major(potentials), _time_major(mask))
    )
    scores, last = _top_k(ops.reshape(delta, (-1, num_tags * k)), k)

    def backward(state, pointer):
        flat = ops.reshape(pointer, (-1, num_tags * k))
        return ops.take_along_axis(flat, state, axis=1), state // k

    # as in crf_decode: a forward scan over the flipped pointers
    _, tags = _scan(lambda tag, xs: backward(tag, xs[0]), last, [ops.flip(pointers, axis=0)])
    tags = ops.transpose(ops.flip(tags, axis=0), (1, 2, 0))  # (batch, k, time)
    # a score of "minus infinity" (a forbidden transition, or a list entry that never
    # held a path) is no allowed path
    valid = scores > _NEG / 2
    keep = ops.logical_and(valid[:, :, None], mask[:, None, :])
    tags = ops.where(keep, tags, ops.zeros_like(tags))
    return tags, ops.where(valid, scores, ops.cast(float("-inf"), scores.dtype))


def crf_marginals(potentials, mask=None):
    """Posterior marginals p(y_t = j | x) by the forward-backward algorithm.

    p_t(j) = exp(log alpha_t(j) + log beta_t(j) - log Z), beta the backward messages
    over the later real steps. Returns (batch, time, num_tags), 0 on padded steps.
    """
    potentials = _float(potentials)
    _check_potentials(potentials)
    mask = _mask_or_ones(potentials, mask)
    alphas, log_z = crf_forward(potentials, mask)

    def step(beta, inputs):
        psi, real = inputs
        # beta (the messages after step t) goes out first, then becomes the messages
        # for step t - 1 through psi_t
        earlier = ops.logsumexp(psi + beta[:, None, :], axis=2)
        earlier = ops.where(real[:, None], earlier, beta)
        return earlier, beta

    # a forward scan over the flipped sequence rather than reverse=True: tf2onnx maps
    # the reversed TensorFlow scan (through the LiteRT graph) to a wrong ONNX Loop
    _, betas = _scan(
        step,
        ops.zeros_like(potentials[:, 0, 0, :]),
        (ops.flip(_time_major(potentials), 0), ops.flip(_time_major(mask), 0)),
    )
    log_p = alphas + _time_major(ops.flip(betas, 0)) - log_z[:, None, None]
    return ops.where(mask[:, :, None], ops.exp(log_p), ops.zeros_like(log_p))


@keras.saving.register_keras_serializable(package="kerasrnn")
class CRF(keras.layers.Layer):
    """Linear-chain CRF output layer: features -> pairwise potentials.

    With emission scores e_t = W x_t + b (or the inputs themselves when
    ``use_kernel=False``), transition matrix A, start and end transitions s and e':

    .. math::

        \\psi_t(i, j) &= A_{ij} + e_t(j)
            \\qquad \\psi_{t_0}(i, j) = s_j + e_{t_0}(j) \\\\
        \\psi_{t_n}(i, j) &\\mathrel{+}= e'_j \\\\
        \\mathrm{score}(y) &= \\sum_{\\text{real } t} \\psi_t(y_{t'}, y_t),
        \\qquad p(y \\mid x) = \\exp(\\mathrm{score}(y) - \\log Z)

    t_0 and t_n are the first and last real (unmasked) steps of each row and t' the
    real step before t. Masks: the Keras mask that flows in (``Embedding(mask_zero=True)``)
    or the ``mask`` argument marks the real steps; a padded step's potentials are the
    identity transition (psi(i, i) = 0, psi(i, j) = -inf), so it changes no path's score,
    log Z or the Viterbi path, and every CRF function (and `CRFLoss`, `CRFAccuracy`)
    reads the mask back from the potentials when none is passed. Tag-scheme
    constraints (``allowed_transitions``) add -inf to the forbidden entries of A, s and
    e', so the partition function sums over the allowed paths only and Viterbi never
    outputs a forbidden one. The output, (batch, time, num_tags, num_tags), is what the loss
    `CRFLoss`, the metric `CRFAccuracy` and the functions `crf_decode` (Viterbi),
    `crf_marginals` (forward-backward), `crf_log_likelihood` and `crf_log_norm`
    (forward algorithm) take; the Keras mask passes through.

    Args:
        num_tags: number of tags K.
        use_kernel: project the inputs with a dense kernel (and bias) to the K emission
            scores; False: the inputs already are the emission scores (last axis K).
        use_boundary: learn the start and end transitions s and e'.
        allowed_transitions: None, or a (num_tags + 2, num_tags + 2) bool matrix, True
            where tag i may be followed by tag j (row num_tags: START, column
            num_tags + 1: END), e.g. ``allowed_transitions(tag_names, "BIO")``; applied
            in training and decoding. For constraints at decoding only, pass the matrix
            to `crf_decode` instead.
        kernel_initializer, transition_initializer, boundary_initializer: initializers
            of W (b starts at zeros), A, and s and e'.
        kernel_regularizer, transition_regularizer: their regularizers.

    Example:

    >>> import numpy as np, keras
    >>> from kerasrnn.layers import CRF, CRFLoss, crf_decode
    >>> inputs = keras.Input((None,), dtype="int32")
    >>> x = keras.layers.Embedding(20, 8, mask_zero=True)(inputs)
    >>> lstm = keras.layers.LSTM(8, return_sequences=True)
    >>> potentials = CRF(5)(keras.layers.Bidirectional(lstm)(x))
    >>> model = keras.Model(inputs, potentials)
    >>> model.compile("adam", CRFLoss())
    >>> words = np.array([[3, 4, 5, 0], [6, 7, 0, 0]])
    >>> tags = np.array([[1, 2, 3, 0], [4, 1, 0, 0]])
    >>> _ = model.fit(words, tags, verbose=0)  # the mask of mask_zero=True: no weights
    >>> best, score = crf_decode(model.predict(words, verbose=0))  # padding: tag 0
    >>> tuple(best.shape), bool((keras.ops.convert_to_numpy(best)[words == 0] == 0).all())
    ((2, 4), True)
    """

    def __init__(
        self,
        num_tags,
        use_kernel=True,
        use_boundary=True,
        allowed_transitions=None,
        kernel_initializer="glorot_uniform",
        transition_initializer="zeros",
        boundary_initializer="zeros",
        kernel_regularizer=None,
        transition_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_tags = check_int("num_tags", num_tags)
        self.use_kernel = bool(use_kernel)
        self.use_boundary = bool(use_boundary)
        self.allowed_transitions = (
            None if allowed_transitions is None else _check_allowed(allowed_transitions, num_tags)
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.transition_initializer = keras.initializers.get(transition_initializer)
        self.boundary_initializer = keras.initializers.get(boundary_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.transition_regularizer = keras.regularizers.get(transition_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "CRF takes a sequence of shape (batch, time, features); got inputs of "
                f"shape {tuple(input_shape)}."
            )
        features = input_shape[-1]
        if self.use_kernel:
            if features is None:
                raise ValueError(
                    f"CRF needs a known feature dimension; got inputs of shape "
                    f"{tuple(input_shape)}."
                )
            self.kernel = self.add_weight(
                shape=(features, self.num_tags),
                name="kernel",
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )
            self.bias = self.add_weight(shape=(self.num_tags,), name="bias", initializer="zeros")
        elif features not in (None, self.num_tags):
            raise ValueError(
                f"CRF(use_kernel=False) takes the emission scores themselves, last axis "
                f"num_tags={self.num_tags}; got inputs of shape {tuple(input_shape)} "
                "(use use_kernel=True to project features)."
            )
        self.transitions = self.add_weight(
            shape=(self.num_tags, self.num_tags),
            name="transitions",
            initializer=self.transition_initializer,
            regularizer=self.transition_regularizer,
        )
        if self.use_boundary:
            self.start_transitions = self.add_weight(
                shape=(self.num_tags,),
                name="start_transitions",
                initializer=self.boundary_initializer,
            )
            self.end_transitions = self.add_weight(
                shape=(self.num_tags,),
                name="end_transitions",
                initializer=self.boundary_initializer,
            )
        self.built = True

    def emissions(self, inputs):
        """e_t: (batch, time, num_tags)."""
        if self.use_kernel:
            return ops.matmul(inputs, self.kernel) + self.bias
        return inputs

    def call(self, inputs, mask=None):
        emissions = self.emissions(inputs)
        if mask is None:
            real = ops.ones(ops.shape(emissions)[:2], dtype="bool")
        else:
            real = ops.cast(mask, "bool")
        transitions = ops.convert_to_tensor(self.transitions)
        if self.use_boundary:
            start = ops.convert_to_tensor(self.start_transitions)
            end = ops.convert_to_tensor(self.end_transitions)
        else:
            start = end = ops.zeros_like(transitions[0])
        if self.allowed_transitions is not None:
            # forbidden transitions get -inf in training (log Z over the allowed paths
            # only) and in Viterbi alike, as AllenNLP's CRF does
            forbid_transitions, forbid_start, forbid_end = _penalties(
                self.allowed_transitions, self.num_tags, transitions.dtype
            )
            transitions = transitions + forbid_transitions
            start, end = start + forbid_start, end + forbid_end
        return _pairwise(emissions, transitions, start, end, real)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.num_tags, self.num_tags)

    def decode(self, potentials, mask=None, allowed_transitions=None, n_best=None):
        """Viterbi path and score of this layer's output, or the `n_best` paths and
        scores (see `crf_decode`)."""
        return crf_decode(potentials, mask, allowed_transitions, n_best)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_tags": self.num_tags,
                "use_kernel": self.use_kernel,
                "use_boundary": self.use_boundary,
                "allowed_transitions": (
                    None if self.allowed_transitions is None else self.allowed_transitions.tolist()
                ),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "transition_initializer": keras.initializers.serialize(self.transition_initializer),
                "boundary_initializer": keras.initializers.serialize(self.boundary_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "transition_regularizer": keras.regularizers.serialize(self.transition_regularizer),
            }
        )
        return config


def _sequence_mask(y_true, y_pred, sample_weight):
    """Real steps: the mask the potentials carry (the Keras mask the `CRF` layer got),
    y_true >= 0 (a negative label marks padding) and, for per-step sample weights
    (batch, time), a weight > 0. Returns (mask, per-sequence weight or None)."""
    y_true = ops.convert_to_tensor(y_true)
    mask = ops.logical_and(y_true >= 0, potentials_mask(y_pred))
    weight = None
    if sample_weight is not None:
        sample_weight = ops.convert_to_tensor(sample_weight)
        if len(sample_weight.shape) == 2:
            mask = ops.logical_and(mask, sample_weight > 0)
        else:
            weight = ops.reshape(sample_weight, (-1,))
    return mask, weight


@keras.saving.register_keras_serializable(package="kerasrnn")
class CRFLoss(keras.losses.Loss):
    """Negative log-likelihood of the gold tag paths under a `CRF` layer's potentials.

    loss = -(score(y) - log Z) per sequence (forward algorithm), averaged over the batch
    (``reduction="sum_over_batch_size"``), summed (``"sum"``) or per sequence (None).

    Padding: the Keras mask the `CRF` layer got (``Embedding(mask_zero=True)``), which
    its potentials carry, marks the real steps, so labels may be padded with anything;
    so do per-step sample weights (batch, time), as `kerasrnn.data.sequence_dataset`
    yields them (weight > 0), and labels >= 0 (pad with -1). A step is real only when
    all of them say so. Per-sequence weights (batch,) weight the sequences.
    """

    def __init__(self, reduction="sum_over_batch_size", name="crf_loss", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        mask, _ = _sequence_mask(y_true, y_pred, None)
        tags = ops.where(mask, ops.cast(y_true, "int32"), 0)
        return -crf_log_likelihood(y_pred, tags, mask)

    def __call__(self, y_true, y_pred, sample_weight=None):
        mask, weight = _sequence_mask(y_true, y_pred, sample_weight)
        tags = ops.where(mask, ops.cast(y_true, "int32"), 0)
        losses = -crf_log_likelihood(y_pred, tags, mask)
        if weight is not None:
            losses = losses * ops.cast(weight, losses.dtype)
        if self.reduction in (None, "none"):
            return losses
        total = ops.sum(losses)
        if self.reduction == "sum":
            return total
        return total / ops.cast(ops.shape(losses)[0], losses.dtype)


@keras.saving.register_keras_serializable(package="kerasrnn")
class CRFAccuracy(keras.metrics.Mean):
    """Token accuracy of the Viterbi paths of a `CRF` layer's potentials (padding, as
    in `CRFLoss`, counts neither way)."""

    def __init__(self, name="crf_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        mask, _ = _sequence_mask(y_true, y_pred, sample_weight)
        tags, _ = crf_decode(y_pred, mask)
        correct = ops.cast(tags == ops.cast(y_true, "int32"), "float32")
        return super().update_state(correct, sample_weight=ops.cast(mask, "float32"))

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
