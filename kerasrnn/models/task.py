"""`Task`: what the functional library tasks share (a `keras.Model` built as a graph in
`__init__`, keras-hub style, whose `get_config` holds its constructor's arguments)."""

import keras


class Task(keras.Model):
    """The base of `TextClassifier`, `PairClassifier` and `SequenceTagger`: a functional
    `keras.Model` whose `compile` fills in the task's defaults and whose saved
    compilation is restored on loading (Keras skips that for an overridden `compile`)."""

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    @classmethod
    def from_config(cls, config):
        return cls(**config)
