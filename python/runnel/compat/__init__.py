"""Compatibility APIs: runnel.compat.v1 is TensorFlow 1.x's."""
