"""Process-level helpers of TF 1.x's API: tf.app.flags, tf.app.run and
tf.test."""
