#!/usr/bin/env python3
"""python_run_latency: tf.Session.run(z, {x: 2, y: 40}) on the one-Add graph
from Python (runnel.compat.v1), µs per run: median of 20 batches of 1000
runs after 5 warm-up batches. Goal (issue 12): <= 10 µs.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python_run_latency.py
"""

import statistics
import time

import runnel.compat.v1 as tf


def main():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    z = tf.add(x, y, name="z")
    times = []
    with tf.Session() as sess:
        for batch in range(25):
            t0 = time.perf_counter()
            for _ in range(1000):
                r = sess.run(z, {x: 2, y: 40})
            dt = time.perf_counter() - t0
            if r != 42.0:
                raise SystemExit("wrong answer %r" % r)
            if batch >= 5:
                times.append(dt / 1000 * 1e6)
    print("python_run_latency runnel latency=%.4g us" % statistics.median(times))


if __name__ == "__main__":
    main()
