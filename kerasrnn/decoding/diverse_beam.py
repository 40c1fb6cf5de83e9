"""Diverse beam search (Vijayakumar et al. 2018): beam search over groups that are
penalised for picking what earlier groups picked."""

import keras
from keras import ops

from kerasrnn.decoding.beam_search import BeamSearch
from kerasrnn.validation import check_number


@keras.saving.register_keras_serializable(package="kerasrnn")
class DiverseBeamSearch(BeamSearch):
    """Diverse beam search: the beam of k hypotheses in G groups of k / G, searched in
    turn at every step (`BeamSearch` with `groups`); group g ranks its extensions by

        log p(y_<=t | x) - lambda * sum_{h < g} count_h(y_t)

    where count_h(y) is how many of group h's k / G best extensions at this step (its
    beam, those that end included) end in token y (Vijayakumar et al. 2018's Hamming
    diversity, with strength lambda = `diversity`): its `group_penalty`. The kept
    log-probabilities and the scores are the model's, without the penalty. Each group is
    `BeamSearch`'s set-aside search of k / G hypotheses: it sets its complete hypotheses
    aside (min(n_best, k / G) of them) and stops when it has them; the result is the
    `n_best` best of all groups, by the scorer. With `diversity=0` it is G independent
    beam searches of k / G (one group: `BeamSearch`).

    The step function is called on `batch * beam_size` rows, as `BeamSearch`'s.

    Args:
        beam_size: k, a multiple of `groups`.
        groups: G.
        diversity: lambda >= 0, the penalty per earlier hypothesis with the same token.
        n_best, scorer, constraints, drop_finished: as `BeamSearch`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> out = kerasrnn.decoding.DiverseBeamSearch(2, groups=2, diversity=2.0)(
    ...     step, [0], (), 4, end_token=0)
    >>> keras.ops.convert_to_numpy(out.tokens[0, :, :2]).tolist()  # 2 then 1: penalised
    [[2, 0], [1, 0]]
    """

    def __init__(self, beam_size=4, groups=2, diversity=0.5, **options):
        super().__init__(beam_size, groups=groups, **options)
        self.diversity = check_number("diversity", diversity)

    def group_penalty(self, group, log_p, earlier_tokens):
        """lambda * count(y): the number of the earlier groups' beams' tokens equal to
        y at this step, times `diversity` (None for the first group, or lambda = 0)."""
        if group == 0 or not self.diversity:
            return None
        counts = ops.sum(ops.one_hot(earlier_tokens, log_p.shape[-1]), axis=1)
        return self.diversity * counts[:, None, :]

    def get_config(self):
        return {**super().get_config(), "diversity": self.diversity}
