"""Text to ids, tf.data pipelines and corpus loaders (TensorFlow-specific)."""
