"""`deserialize`: a nested Keras object back from the config a `from_config` receives,
the one place the package's layers, backbones and tasks rebuild what they hold."""

import keras


def deserialize(obj):
    """The Keras object of a serialized config (a dict with a ``class_name``, as
    `keras.saving.serialize_keras_object` writes it), or `obj` unchanged (an object, a
    plain option dict, a number, None).

    >>> import kerasrnn
    >>> cell = deserialize(keras.saving.serialize_keras_object(kerasrnn.GRUCell(3)))
    >>> type(cell).__name__, cell.units, deserialize({"stateful": True})
    ('GRUCell', 3, {'stateful': True})
    """
    if isinstance(obj, dict) and "class_name" in obj:
        return keras.saving.deserialize_keras_object(obj)
    return obj
