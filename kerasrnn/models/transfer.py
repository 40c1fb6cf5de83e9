"""Transfer from a trained language model to a sentence task (ULMFiT, Howard & Ruder
2018): `copy_language_model` starts a `TextClassifier`'s or `PairClassifier`'s encoder
from a `LanguageModel`'s embedding and forward recurrent layers, and `layer_groups`
gives the groups its fine-tuning treats apart (discriminative rates, gradual
unfreezing: `kerasrnn.callbacks`)."""


def encoder_of(model):
    """The `SentenceEncoder` of a sentence task (its ``backbone``), or `model` itself
    when it is one."""
    return getattr(model, "backbone", model)


def copy_language_model(model, language_model):
    """Copies a language model's embedding and forward recurrent layers (bottom first)
    into the ``embedding`` layer and the ``rnn`` stack of `model`'s encoder.

    Args:
        model: a `TextClassifier`, `PairClassifier` or `SentenceEncoder` whose encoder
            has the language model's vocabulary, embedding width, cell, units and
            number of layers, read in one direction.
        language_model: a `kerasrnn.models.LanguageModel` (or its
            `LanguageModelBackbone`); a biLM gives its forward layers.

    Returns:
        The number of weight arrays copied.

    Raises:
        ValueError: the two differ in their number of recurrent layers or in a weight's
            shape (one line naming the layer).
    """
    encoder = encoder_of(model)
    backbone = getattr(language_model, "backbone", language_model)
    stack = encoder.get_layer("rnn").rnn_layers
    sources = backbone.rnn_layers("forward")
    if len(sources) != len(stack):
        raise ValueError(
            f"the language model has {len(sources)} recurrent layers, the encoder "
            f"{len(stack)}: build it with num_layers={len(sources)}."
        )
    pairs = [(backbone.token_embedding, encoder.get_layer("embedding"))]
    pairs += list(zip(sources, stack))
    copied = 0
    for source, target in pairs:
        weights = source.get_weights()
        if source is backbone.token_embedding:
            weights = weights[:1]  # the embedding matrix (a tied readout adds none)
        have = target.get_weights()
        if [w.shape for w in weights] != [w.shape for w in have]:
            raise ValueError(
                f"the language model's {source.name} weights have shapes "
                f"{[w.shape for w in weights]}, the encoder's {target.name} "
                f"{[w.shape for w in have]}: the vocabulary or the cell differs."
            )
        target.set_weights(weights)
        copied += len(weights)
    return copied


def layer_groups(model):
    """ULMFiT's layer groups of a sentence task, bottom first: the embedding, each layer
    of the encoder's ``rnn`` stack, then every other layer with weights (the head)."""
    encoder = encoder_of(model)
    stack = encoder.get_layer("rnn")
    groups = [[encoder.get_layer("embedding")]] + [[layer] for layer in stack.rnn_layers]
    grouped = {id(layer) for group in groups for layer in group} | {id(stack), id(encoder)}
    head = [layer for layer in model.layers if layer.weights and id(layer) not in grouped]
    return groups + [head]
