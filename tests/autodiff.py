"""Gradients with the active backend's own autodiff, for the tests' finite-difference checks."""

import keras
import numpy as np


def gradients(fn, xs):
    """[d fn(xs) / d x for x in xs] as NumPy arrays; `fn` maps a list of tensors to a scalar."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        xs = [tf.Variable(x) for x in xs]
        with tf.GradientTape() as tape:
            y = fn(xs)
        grads = tape.gradient(y, xs)
    elif keras.backend.backend() == "torch":
        import torch

        xs = [torch.tensor(x, requires_grad=True) for x in xs]
        grads = torch.autograd.grad(fn(xs), xs)
    else:
        import jax

        grads = jax.grad(fn)(list(xs))
    return [np.asarray(keras.ops.convert_to_numpy(g)) for g in grads]


def gradient(fn, x):
    """d fn(x) / d x with the active backend's autodiff."""
    return gradients(lambda xs: fn(xs[0]), [x])[0]
