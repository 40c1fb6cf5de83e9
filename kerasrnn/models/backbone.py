"""`Backbone`: the base of every task's network (keras-hub's backbone shape): a
`keras.Model` whose config holds its constructor's arguments, nested Keras objects
serialized, so that `from_config` rebuilds it as it was built."""

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
    an initializer) deserialized first.

    A mixin rather than a `keras.Model` subclass: Keras turns the base of the first
    functional model built into a `Functional`, which would break the subclassed
    backbones sharing that base.
    """

    name: str
    trainable: bool

    def get_config(self):
        # Not Keras' own: a functional model's is its graph, which no backbone's
        # constructor takes.
        return {"name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**{key: deserialize(value) for key, value in config.items()})
