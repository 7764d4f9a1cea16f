"""tf.app.flags, tf.app.run and tf.test, as TF 1.x programs and test files
use them (absl-py underneath, as in TF 1.x)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runnel.compat.v1 as tf


def _run_program(tmp_path, source, *args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, str(script)] + list(args), env=env,
                          capture_output=True, text=True, timeout=120)


def test_app_run_parses_known_flags_and_passes_the_rest(tmp_path):
    r = _run_program(tmp_path, """
        import runnel.compat.v1 as tf
        flags = tf.app.flags
        flags.DEFINE_float("learning_rate", 0.01, "step size")
        flags.DEFINE_integer("batch_size", 32, "examples per step")
        flags.DEFINE_string("data_dir", "/tmp/data", "where the data is")
        flags.DEFINE_boolean("fake", False, "fake data")
        FLAGS = flags.FLAGS

        def main(argv):
            print(FLAGS.learning_rate, FLAGS.batch_size, FLAGS.data_dir, FLAGS.fake)
            print(argv[1:])
            return 3

        if __name__ == "__main__":
            tf.app.run()
        """, "--learning_rate=0.5", "--fake", "--not_ours=1", "positional")
    assert r.returncode == 3, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "0.5 32 /tmp/data True"
    assert lines[1] == "['--not_ours=1', 'positional']"


def test_flags_read_before_parsing_parse_argv_and_old_keywords_work(tmp_path):
    r = _run_program(tmp_path, """
        import runnel.compat.v1 as tf
        tf.flags.DEFINE_integer(flag_name="steps", default_value=3, docstring="d")
        tf.app.flags.DEFINE_list("layers", ["a"], "layer names")
        print(tf.flags.FLAGS.steps, tf.flags.FLAGS.layers)
        """, "--steps=9", "--layers=x,y")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "9 ['x', 'y']"


def test_app_run_rejects_a_bad_flag_value(tmp_path):
    r = _run_program(tmp_path, """
        import runnel.compat.v1 as tf
        tf.app.flags.DEFINE_integer("steps", 3, "d")
        def main(argv):
            return 0
        tf.app.run(main)
        """, "--steps=many")
    assert r.returncode != 0
    assert "steps" in r.stderr and "many" in r.stderr


_TEST_FILE = """
    import numpy as np
    import runnel.compat.v1 as tf

    class MatMulTest(tf.test.TestCase):

        def test_values(self):
            with self.cached_session() as sess:
                a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
                self.assertAllClose(sess.run(tf.matmul(a, a)), [[7.0, 10.0], [15.0, 22.0]])
                self.assertAllEqual(tf.shape(a), [2, 2])
                self.assertShapeEqual(np.zeros((2, 2)), a)
                self.assertAllInRange(a, 1.0, 4.0)

        def test_fresh_graph_per_test(self):
            self.assertEqual(len(tf.get_default_graph().get_operations()), 0)
            self.assertEqual(self.evaluate(tf.constant(5) * 2), 10)

        def test_op_error(self):
            x = tf.placeholder(tf.float32, [None])
            with self.session() as sess:
                with self.assertRaisesOpError("tensor with 3 values .* has 4"):
                    sess.run(tf.reshape(x, [2, 2]), {x: [1.0, 2.0, 3.0]})

        def test_gradient(self):
            x = tf.placeholder(tf.float64, [3])
            y = tf.tanh(x) * x
            with self.cached_session():
                err = tf.test.compute_gradient_error(x, [3], y, [3], x_init_value=np.array([0.1, -0.5, 1.2]))
            self.assertLess(err, 1e-6)

        def test_failing(self):
            self.assertAllClose([1.0, 2.0], [1.0, 2.5])

    if __name__ == "__main__":
        tf.test.main()
"""


def test_tf_test_main_runs_a_tf1_test_file(tmp_path):
    r = _run_program(tmp_path, _TEST_FILE)
    assert r.returncode == 1, r.stdout + r.stderr  # test_failing fails
    out = r.stdout + r.stderr
    assert "Ran 5 tests" in out
    assert "FAILED (failures=1)" in out
    assert "test_failing" in out and "Mismatched elements: 1 / 2" in out


def test_compute_gradient_matches_the_closed_form():
    x = tf.placeholder(tf.float64, [2, 2])
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float64)
    y = tf.matmul(x, w)
    x0 = np.array([[0.5, -1.0], [2.0, 0.25]])
    with tf.Session().as_default():
        theoretical, numerical = tf.test.compute_gradient(x, [2, 2], y, [2, 2],
                                                          x_init_value=x0)
    # dy[i, j] / dx[i, k] = w[k, j]
    expected = np.zeros((4, 4))
    for i in range(2):
        for k in range(2):
            for j in range(2):
                expected[i * 2 + k, i * 2 + j] = [[1, 2], [3, 4]][k][j]
    np.testing.assert_allclose(theoretical, expected)
    np.testing.assert_allclose(numerical, expected, atol=1e-6)


def test_compute_gradient_needs_a_session_and_real_floats():
    x = tf.placeholder(tf.float64, [2])
    with pytest.raises(ValueError, match="default session"):
        tf.test.compute_gradient(x, [2], x * 2.0, [2])
    i = tf.placeholder(tf.int32, [2])
    with tf.Session().as_default():
        with pytest.raises(TypeError, match="int32"):
            tf.test.compute_gradient(i, [2], i * 2, [2])


def test_tf_test_reports_no_gpu():
    assert tf.test.is_gpu_available() is False
    assert tf.test.gpu_device_name() == ""
    assert not tf.test.is_built_with_cuda()
