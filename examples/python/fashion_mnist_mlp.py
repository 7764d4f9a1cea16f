"""A TensorFlow 1.x program, unchanged: an MLP on Fashion-MNIST.

Run it on Runnel through the `tensorflow` shim (scripts/demo.sh does):

    PYTHONPATH=build/python/shim:build/python /usr/bin/python3 \\
        examples/python/fashion_mnist_mlp.py [--epochs 2]

Its flags are tf.app.flags, parsed by tf.app.run. It reads Debian's dataset-fashion-mnist, trains 784-256-10 (ReLU, softmax
cross-entropy, Adam) with feed_dict batches, saves a checkpoint, restores
it into a fresh session, and prints the test accuracy.
"""

import gzip
import os
import tempfile

import numpy as np
import tensorflow as tf

DATA = "/usr/share/datasets/fashion-mnist"

flags = tf.app.flags
flags.DEFINE_integer("epochs", 2, "passes over the training set")
flags.DEFINE_integer("batch_size", 100, "examples per step")
FLAGS = flags.FLAGS


def load(split):
    def idx(name):
        with gzip.open(os.path.join(DATA, name), "rb") as f:
            data = f.read()
        ndim = data[3]
        dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
        return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)
    prefix = "train" if split == "train" else "t10k"
    images = idx(prefix + "-images-idx3-ubyte.gz").reshape(-1, 784) / np.float32(255)
    labels = idx(prefix + "-labels-idx1-ubyte.gz").astype(np.int64)
    return images.astype(np.float32), labels


def main(_):
    train_x, train_y = load("train")
    test_x, test_y = load("test")

    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    hidden = tf.layers.dense(x, 256, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 10, name="logits")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)
    correct = tf.equal(tf.argmax(logits, 1), y)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    saver = tf.train.Saver()

    rng = np.random.RandomState(0)
    ckpt_dir = tempfile.mkdtemp(prefix="fashion_mnist_mlp_")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(FLAGS.epochs):
            order = rng.permutation(len(train_y))
            for i in range(0, len(order), FLAGS.batch_size):
                batch = order[i:i + FLAGS.batch_size]
                _, loss_value = sess.run([train_op, loss],
                                         {x: train_x[batch], y: train_y[batch]})
            print("epoch %d: step %d, loss %.3f" % (epoch + 1, sess.run(global_step),
                                                     loss_value))
        path = saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"),
                          global_step=global_step)
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
        print("restored %s" % os.path.basename(path))
        acc = sess.run(accuracy, {x: test_x, y: test_y})
    print("test accuracy: %.2f%%" % (100 * acc))


if __name__ == "__main__":
    tf.app.run()
