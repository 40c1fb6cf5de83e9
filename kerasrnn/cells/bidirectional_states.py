"""`merge_bidirectional_states`: a bidirectional encoder's final states as the initial
states of one decoder.

`keras.layers.Bidirectional(..., return_state=True)` returns the forward states, then
the backward ones; a decoder with twice the encoder's units starts from their pairwise
concatenation. The joining itself is `kerasrnn.layers.join_directions`, which every
bridge applies; this is its form for a flat list of both directions' states.
"""

from kerasrnn.cells import bridge as bridges


def merge_bidirectional_states(states):
    """[h_fw, c_fw, ..., h_bw, c_bw, ...] -> [[h_fw; h_bw], [c_fw; c_bw], ...].

    `keras.layers.Bidirectional(..., return_state=True)` returns the forward states, then
    the backward ones; a decoder with twice the encoder's units starts from their
    concatenation (`kerasrnn.layers.join_directions`, which every bridge applies).

    Args:
        states: the forward states, then the backward states (an even count).

    Returns:
        One state per forward/backward pair, `[batch, d_fw + d_bw]`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> h_fw, h_bw = np.ones((2, 3), "float32"), np.zeros((2, 4), "float32")
    >>> [tuple(s.shape) for s in kerasrnn.merge_bidirectional_states([h_fw, h_bw])]
    [(2, 7)]
    """
    states = list(states)
    if len(states) % 2:
        raise ValueError(
            "`states` must hold the forward states then the backward states (an even "
            f"count); got {len(states)}."
        )
    return bridges.join_directions(states, len(states) // 2)
