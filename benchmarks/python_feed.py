#!/usr/bin/env python3
"""python_feed: the cost of feeding a NumPy array from Python.

sess.run(tf.shape(x), {x: a}) for a float32 array `a` of 4 MiB, µs per
run (median of 15 batches of 50 runs after 3 warm-up batches), twice: `a`
as NumPy allocates it (C-contiguous and aligned: the tensor wraps its
memory, issue 12's zero-copy feed) and `a` as a strided view (it must be
copied). The step itself does almost nothing, so the difference is the
copy.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python_feed.py
"""

import statistics
import time

import numpy as np

import runnel.compat.v1 as tf


def median_us(sess, fetch, x, value):
    times = []
    for batch in range(18):
        t0 = time.perf_counter()
        for _ in range(50):
            r = sess.run(fetch, {x: value})
        if batch >= 3:
            times.append((time.perf_counter() - t0) / 50 * 1e6)
    if list(r) != list(value.shape):
        raise SystemExit("wrong answer %r" % (r,))
    return statistics.median(times)


def main():
    x = tf.placeholder(tf.float32, [1024, 1024], name="x")
    shape = tf.shape(x)
    contiguous = np.ones([1024, 1024], np.float32)
    strided = np.ones([1024, 2048], np.float32)[:, ::2]
    with tf.Session() as sess:
        wrapped = median_us(sess, shape, x, contiguous)
        copied = median_us(sess, shape, x, strided)
    print("python_feed runnel 4MiB contiguous=%.4g us strided_copy=%.4g us"
          % (wrapped, copied))


if __name__ == "__main__":
    main()
