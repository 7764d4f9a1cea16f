"""Training libraries (tf.train): optimizers, savers, input queues."""
