"""Pictures of what a decoder did: attention heatmaps from a `DecodeResult`.

matplotlib is imported when a plot is drawn, never on `import kerasrnn`.
"""

import os

import numpy as np


def _numpy(x):
    from keras import ops

    return np.asarray(ops.convert_to_numpy(x))


def plot_alignments(
    result,
    source_tokens=None,
    output_tokens=None,
    example=0,
    hypothesis=0,
    ax=None,
    cmap="Greys",
    title=None,
    path=None,
    dpi=100,
):
    """Draws one hypothesis' attention as a source x output heatmap.

    Row t is the attention distribution a_t over the source that produced output
    token t; column i is source position i. The weights are those the decoder returned
    while decoding (for beam search: the history of the returned hypothesis,
    re-ordered with the beams), not a teacher-forced rerun.

    Args:
        result: a `kerasrnn.decoding.DecodeResult` with alignments.
        source_tokens: the source words of this example (a list of str); they label
            the columns and their number trims the source padding. None: every
            position, labelled by index.
        output_tokens: the words of this hypothesis' output (a list of str, as many as
            its length or more); None: the output ids.
        example: b, the example in the batch.
        hypothesis: n, the hypothesis (0 = best).
        ax: a matplotlib Axes to draw into; None creates a figure.
        cmap: the colour map (weights 0..1).
        title: the Axes title; None shows the hypothesis' score.
        path: if given, the figure is written there (e.g. a ``.png``); a figure made
            here for it is drawn without pyplot (no display needed, none to close).
        dpi: the resolution of the written figure.

    Returns:
        The matplotlib Axes.

    Example:

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.visualize import plot_alignments
    >>> result = kerasrnn.decoding.DecodeResult(
    ...     tokens=np.array([[[7, 3]]]), lengths=np.array([[2]]),
    ...     scores=np.array([[-.5]]), log_probs=np.array([[-.5]]),
    ...     alignments=np.array([[[[.9, .1], [.2, .8]]]]))
    >>> ax = plot_alignments(result, ["Haus", "[END]"], ["house", "[END]"])
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['Haus', '[END]']
    """
    if result.alignments is None:
        raise ValueError(
            "plot_alignments needs `result.alignments`: the step function must return "
            "(logits, states, alignments)."
        )
    alignments = _numpy(result.alignments)
    if alignments.ndim != 4:
        raise ValueError(
            "`result.alignments` must have shape (batch, n_best, max_length, "
            f"source_length); got {alignments.shape}."
        )
    if not 0 <= example < alignments.shape[0] or not 0 <= hypothesis < alignments.shape[1]:
        raise ValueError(
            f"`example`={example} and `hypothesis`={hypothesis} must index the result's "
            f"{alignments.shape[0]} examples and {alignments.shape[1]} hypotheses."
        )
    length = int(_numpy(result.lengths)[example, hypothesis])
    source_length = alignments.shape[-1] if source_tokens is None else len(source_tokens)
    weights = alignments[example, hypothesis, :length, :source_length]
    if output_tokens is None:
        output_tokens = [str(t) for t in _numpy(result.tokens)[example, hypothesis, :length]]
    output_tokens = [str(t) for t in list(output_tokens)[:length]]
    if source_tokens is None:
        source_tokens = [str(i) for i in range(source_length)]

    own_figure = ax is None
    if own_figure:
        size = (1.5 + 0.35 * max(source_length, 1), 1.0 + 0.3 * max(length, 1))
        if path is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=size)
        else:  # a figure pyplot does not track: nothing to show, nothing to close
            from matplotlib.figure import Figure

            ax = Figure(figsize=size).subplots()
    image = ax.imshow(
        weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    ax.set_xticks(range(source_length))
    ax.set_xticklabels([str(t) for t in source_tokens], rotation=60, ha="right")
    ax.set_yticks(range(len(output_tokens)))
    ax.set_yticklabels(output_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if title is None:
        score = float(_numpy(result.scores)[example, hypothesis])
        title = f"hypothesis {hypothesis}, score {score:.3f}"
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.05)
    if own_figure:  # room for the token labels
        ax.figure.tight_layout()
    if path is not None:
        folder = os.path.dirname(os.fspath(path))
        if folder:
            os.makedirs(folder, exist_ok=True)
        ax.figure.savefig(path, dpi=dpi)
    return ax
