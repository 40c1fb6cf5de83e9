"""Shallow fusion: a decoder's log-probabilities plus a weighted language model's, at every
step of any decoding strategy (Gulcehre et al. 2015; fairseq's `--lm-path/--lm-weight`)."""

from keras import ops

from kerasrnn.validation import check_int, check_number


class ShallowFusion:
    """Decodes with a language model (LM) of the target side added to a decoder's scores.

    .. math::

        s(y_t) = \\log p_{TM}(y_t \\mid y_{<t}, x) + \\lambda \\log p_{LM}(y_t \\mid y_{<t})

    Each term is the log-softmax of its model's logits. The fused scores are used as
    they are (`outputs_log_probs`): beam search ranks hypotheses by
    sum_t s(y_t), a `DecodeResult`'s `log_probs` and `scores` are those fused sums, and
    sampling draws from the renormalised p_TM * p_LM^lambda. With lambda = 0 every
    strategy decodes exactly as without the LM.

    `fuse(step_fn, start_tokens, states)` returns the fused step function and its
    states ``(decoder states, LM states, position)`` (`position`: int32 `(rows,)`,
    tokens the LM has read). The LM reads the same tokens as the decoder, so it must
    share the decoder's target vocabulary: the same size (checked at the first step)
    and the same ids (a kerasrnn recipe checks the vocabulary files). Its recurrent
    states are ordinary decoder states, so beam search repeats them per beam and
    re-orders them with the beams, and every strategy (greedy, sampling, beam, diverse
    beam, exhaustive search) works unchanged. `Seq2Seq.generate(..., fusion=...)`
    decodes a translator with it.

    Args:
        language_model: a `kerasrnn.models.LanguageModel`, or a pair ``(step,
            initial_states)`` as `LanguageModel.step_fn()` returns it: ``step(tokens
            (rows,), states) -> (logits (rows, V), states)`` and
            ``initial_states(batch_size)``.
        weight: lambda >= 0, the LM's weight (tune it on a validation set; 0.1-0.5 is
            usual).
        start_token: the id the LM reads first, in place of the decoder's start token
            (an LM trained on a stream read `[END]` = 3 before each sentence; one
            trained on sentence batches reads `[START]` = 2, the decoder's own, and
            needs None).

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = lambda p: keras.ops.convert_to_tensor(np.log([p] * 4).astype("float32"))
    >>> tm, lm = table([.1, .5, .3, .1]), table([.1, .1, .7, .1])
    >>> translator = lambda tokens, states: (keras.ops.take(tm, tokens, axis=0), states)
    >>> language = (lambda tokens, states: (keras.ops.take(lm, tokens, axis=0), states),
    ...             lambda batch_size: ())
    >>> fusion = kerasrnn.decoding.ShallowFusion(language, weight=0.5)
    >>> step, states = fusion.fuse(translator, [0], ())
    >>> out = kerasrnn.decoding.greedy_search(step, [0], states, max_length=1)
    >>> int(out.tokens[0, 0, 0])  # .5 * .1^.5 < .3 * .7^.5
    2
    """

    outputs_log_probs = True

    def __init__(self, language_model, weight=0.3, start_token=None):
        step_fn = getattr(language_model, "step_fn", None)
        if callable(step_fn):
            self.lm_step, self.lm_initial_states = step_fn()
        elif (
            isinstance(language_model, (tuple, list))
            and len(language_model) == 2
            and all(callable(f) for f in language_model)
        ):
            self.lm_step, self.lm_initial_states = language_model
        else:
            raise TypeError(
                "`language_model` must be a kerasrnn.models.LanguageModel or a pair "
                f"(step, initial_states) as LanguageModel.step_fn() returns; got "
                f"{type(language_model).__name__}."
            )
        self.language_model = language_model
        self.weight = check_number("weight", weight, "[0, inf)")
        self.start_token = check_int("start_token", start_token, minimum=0, allow_none=True)

    @classmethod
    def of(cls, language_model, translator, weight=0.3):
        """The fusion of a `kerasrnn.models.LanguageModel` into a `kerasrnn.seq2seq.Seq2Seq`,
        both with their preprocessors, checked: the language model must read with the
        translator's target vocabulary (the same tokens at the same ids) and be a
        forward one; it reads the boundary token it was trained on before a sentence
        (its preprocessor's). Raises a one-line ValueError naming the first difference."""
        lm, target = language_model.preprocessor, translator.preprocessor.target.vocabulary
        tokens, wanted = lm.vocabulary.tokens, target.tokens
        if tokens != wanted:
            where = next((i for i, (a, b) in enumerate(zip(tokens, wanted)) if a != b), None)
            detail = (
                f"{len(tokens)} tokens, the translator's target vocabulary {len(wanted)}"
                if where is None
                else f"id {where} is {tokens[where]!r}, the translator's {wanted[where]!r}"
            )
            raise ValueError(
                f"the language model's vocabulary differs from the translator's target "
                f"vocabulary ({detail}): train it with that vocabulary."
            )
        if language_model.backbone.bidirectional:
            raise ValueError("the language model is a biLM: fuse a forward language model.")
        start = None if lm.boundary_id == translator.start_id else lm.boundary_id
        return cls(language_model, weight, start)

    def fuse(self, step_fn, start_tokens, states):
        """``(fused step function, its initial states)`` for a decoder `step_fn` whose
        states before the first step are `states`, starting from `start_tokens`
        `(batch,)`."""
        if not callable(step_fn):
            raise ValueError(f"`step_fn` must be callable, got {step_fn!r}.")
        batch_size = ops.shape(ops.convert_to_tensor(start_tokens))[0]
        lm_states = self.lm_initial_states(batch_size)
        position = ops.zeros((batch_size,), "int32")
        return FusedStep(self, step_fn), (states, lm_states, position)

    def cache_key(self):
        """What a compiled decoder depends on (the LM by identity)."""
        return (type(self), id(self.language_model), self.weight, self.start_token)

    def __repr__(self):
        return (
            f"ShallowFusion({type(self.language_model).__name__}, weight={self.weight!r}, "
            f"start_token={self.start_token!r})"
        )


def _log_probs(step_fn, logits):
    logits = ops.cast(logits, "float32")
    if getattr(step_fn, "outputs_log_probs", False):
        return logits
    return ops.log_softmax(logits, axis=-1)


class FusedStep:
    """The step function `ShallowFusion.fuse` returns: the decoder and the LM stepped
    together, their log-probabilities added with the LM's weight."""

    outputs_log_probs = True

    def __init__(self, fusion, step_fn):
        self.fusion, self.step_fn = fusion, step_fn
        if callable(getattr(step_fn, "take_rows", None)):
            # beam search's drop_finished: the decoder's memory narrowed; the LM keeps
            # everything in its states, which the loop narrows itself
            self.take_rows = lambda rows: FusedStep(fusion, step_fn.take_rows(rows))

    def __call__(self, tokens, states):
        if not isinstance(states, (tuple, list)) or len(states) != 3:
            raise ValueError(
                "A ShallowFusion step takes the states `fuse` returned: (decoder states, "
                "LM states, position)."
            )
        fusion = self.fusion
        decoder_states, lm_states, position = states
        out = self.step_fn(tokens, decoder_states)
        lm_tokens = tokens
        if fusion.start_token is not None:
            lm_tokens = ops.where(ops.equal(position, 0), fusion.start_token, tokens)
        lm_logits, lm_states = fusion.lm_step(ops.cast(lm_tokens, "int32"), lm_states)
        if lm_logits.shape[-1] != out[0].shape[-1]:
            raise ValueError(
                f"ShallowFusion: the language model predicts {lm_logits.shape[-1]} tokens, "
                f"the decoder {out[0].shape[-1]}; train the LM on the decoder's target "
                "vocabulary (recipes: language_model train --vocabulary-file "
                "RUN/target_vocab.txt)."
            )
        log_p = _log_probs(self.step_fn, out[0])
        if fusion.weight:  # lambda = 0 leaves the decoder's scores bit for bit
            log_p = log_p + fusion.weight * _log_probs(fusion.lm_step, lm_logits)
        new_states = (out[1], lm_states, position + 1)
        return (log_p, new_states) + tuple(out[2:])
