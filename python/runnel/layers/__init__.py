"""tf.layers (TF 1.x): see runnel.layers.layers."""
