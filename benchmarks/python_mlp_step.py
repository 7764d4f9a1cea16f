#!/usr/bin/env python3
"""python_mlp_step: the W2 training step of benchmarks/mlp_step.cc (MLP
784-512-512-10, ReLU, mean sparse softmax cross-entropy, SGD lr 0.1, batch
128, Fashion-MNIST batches in dataset order, pixels / 255, PyTorch's default
init U(+-1/sqrt(fan_in))), written as a TF 1.x Python program and driven
from Python with feed_dict of NumPy batches. Median step time over 200 steps
after 20 warm-up steps. Goal (issue 12): within 5% of the C++ mlp_step.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python_mlp_step.py
"""

import gzip
import os
import statistics
import sys
import time

import numpy as np

import runnel.compat.v1 as tf

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def linear(x, fan_in, units, name, relu):
    bound = 1.0 / np.sqrt(fan_in)
    with tf.variable_scope(name) if hasattr(tf, "variable_scope") else tf.name_scope(name):
        w = tf.Variable(tf.random_uniform([fan_in, units], -bound, bound), name="kernel")
        b = tf.Variable(tf.random_uniform([units], -bound, bound), name="bias")
        y = tf.nn.bias_add(tf.matmul(x, w), b)  # as tf.layers.dense and the C++ Dense
        return tf.nn.relu(y) if relu else y


def main():
    images = load_idx(os.path.join(DATA, "train-images-idx3-ubyte.gz"))
    labels = load_idx(os.path.join(DATA, "train-labels-idx1-ubyte.gz"))
    images = images.reshape(-1, 784).astype(np.float32) / 255.0
    labels = labels.astype(np.int32)

    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    h1 = linear(x, 784, 512, "fc1", True)
    h2 = linear(h1, 512, 512, "fc2", True)
    logits = linear(h2, 512, 10, "fc3", False)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    batch, warmup, steps = 128, 20, 200
    batches = len(labels) // batch
    times = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for s in range(warmup + steps):
            begin = (s % batches) * batch
            feed = {x: images[begin:begin + batch], y: labels[begin:begin + batch]}
            t0 = time.perf_counter()
            loss_value, _ = sess.run([loss, train], feed)
            dt = time.perf_counter() - t0
            if s >= warmup:
                times.append(dt)
    times.sort()
    print("# python_mlp_step: final loss %.3f" % loss_value, file=sys.stderr)
    print("# python_mlp_step: n=%d min=%.3fms median=%.3fms p90=%.3fms max=%.3fms" % (
        len(times), times[0] * 1e3, statistics.median(times) * 1e3,
        times[len(times) * 9 // 10] * 1e3, times[-1] * 1e3), file=sys.stderr)
    print("python_mlp_step runnel step_time=%.4g ms" % (statistics.median(times) * 1e3))


if __name__ == "__main__":
    main()
