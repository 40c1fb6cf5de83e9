"""`Backbone`: the base of every task's network (keras-hub's backbone shape): a
`keras.Model` whose config holds its constructor's arguments, nested Keras objects
serialized, so that `from_config` rebuilds it as it was built."""

from kerasrnn._private import keras_nested_layers
from kerasrnn.serialization import deserialize


class Backbone:
    """The network of a task without its head, mixed into `keras.Model`:
    `kerasrnn.models.SentenceEncoder`, `SequenceTaggerBackbone`, `LanguageModelBackbone`
    and `kerasrnn.seq2seq.Seq2SeqBackbone` are ``(Backbone, keras.Model)`` classes. A
    task (`kerasrnn.models.Task`) holds one as its ``backbone``.

    A subclass builds its layers in ``__init__`` (as a functional model, or as a
    subclassed one with its own `call`) and returns its constructor's arguments from
    `get_config`, starting from this class's (its name and whether it is trainable);
    `from_config` then passes them back, each nested Keras object (a cell, an encoder,
    an initializer) deserialized first. The config also lists the backbone's frozen
    layers (``frozen_layers``: those with ``trainable=False``, such as a word embedding
    fixed to pretrained vectors after it was built, by their positions in Keras' walk
    of the backbone's layers, as cells' generated names change between builds), and
    `from_config` freezes exactly those, so a backbone loaded from a preset trains what
    the saved one trained.

    A mixin rather than a `keras.Model` subclass: Keras turns the base of the first
    functional model built into a `Functional`, which would break the subclassed
    backbones sharing that base.
    """

    name: str
    trainable: bool

    def get_config(self):
        # Not Keras' own: a functional model's is its graph, which no backbone's
        # constructor takes.
        layers = keras_nested_layers(self)
        frozen = [index for index, layer in enumerate(layers) if not layer.trainable]
        return {"name": self.name, "trainable": self.trainable, "frozen_layers": frozen}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        frozen = config.pop("frozen_layers", None)
        backbone = cls(**{key: deserialize(value) for key, value in config.items()})
        if frozen is not None:
            # Outer layers come before their own layers in this walk, and setting a
            # layer's `trainable` sets its sublayers': each layer ends as it was saved.
            for index, layer in enumerate(keras_nested_layers(backbone)):
                layer.trainable = index not in frozen
        return backbone
