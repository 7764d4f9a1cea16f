"""tf.test: TensorFlow 1.x's TestCase, main and gradient checker over
Runnel, for the test files TF 1.x users wrote next to their models.

TestCase gives every test a fresh default graph and seeds NumPy and the
graph (as TF's TensorFlowTestCase does); session()/cached_session() make
sessions over it; the assert* helpers compare NumPy-convertible values,
nested lists, tuples and dicts. compute_gradient compares tf.gradients'
Jacobian with central differences, as TF's gradient_checker does.
"""

import contextlib
import os
import random
import re
import tempfile

import numpy as np
from absl.testing import absltest

from runnel.client import session as _session
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import ops

__all__ = ["TestCase", "main", "get_temp_dir", "is_gpu_available", "gpu_device_name",
           "is_built_with_cuda", "is_built_with_rocm", "is_built_with_gpu_support",
           "compute_gradient", "compute_gradient_error"]



class _TestLoader(absltest.TestLoader):
    """absltest's loader, less TestCase.test_session (a helper whose name
    looks like a test's; TF's loader drops it too)."""

    def getTestCaseNames(self, testCaseClass):  # noqa: N802,N803
        names = super().getTestCaseNames(testCaseClass)
        return [n for n in names if n != "test_session"]


def main(argv=None):
    """Runs the test file's TestCases (absltest.main, as tf.test.main)."""
    kwargs = {"testLoader": _TestLoader()}
    if argv is not None:
        kwargs["argv"] = argv
    absltest.main(**kwargs)

_DEFAULT_SEED = 87654321


def get_temp_dir():
    """A folder for this process's test files (TF: the test's temp dir)."""
    return tempfile.mkdtemp(prefix="runnel_test_")


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """False: Runnel's Python API runs on its CPU devices."""
    return False


def gpu_device_name():
    return ""


def is_built_with_cuda():
    return False


def is_built_with_rocm():
    return False


def is_built_with_gpu_support():
    return False


class TestCase(absltest.TestCase):
    """TF 1.x's tf.test.TestCase."""

    def __init__(self, methodName="runTest"):  # noqa: N803
        super().__init__(methodName)
        self._cached_session = None
        self._temp_dir = None

    def setUp(self):
        super().setUp()
        self._clear_cached_session()
        random.seed(_DEFAULT_SEED)
        np.random.seed(_DEFAULT_SEED)
        ops.reset_default_graph()
        ops.get_default_graph().seed = _DEFAULT_SEED

    def tearDown(self):
        self._clear_cached_session()
        super().tearDown()

    def _clear_cached_session(self):
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self):
        if self._temp_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="%s_" % self.id().rsplit(".", 1)[-1],
                                              dir=os.environ.get("TEST_TMPDIR"))
        return self._temp_dir

    # -- sessions
    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new session over `graph` (default: the default graph), made the
        default session and its graph the default graph while in use."""
        if force_gpu:
            self.skipTest("force_gpu: no GPU devices in Runnel's Python API")
        graph = graph if graph is not None else ops.get_default_graph()
        sess = _session.Session(graph=graph, config=config)
        try:
            with graph.as_default(), sess.as_default():
                yield sess
        finally:
            sess.close()

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The test's one session, made on first use and closed after it."""
        if force_gpu:
            self.skipTest("force_gpu: no GPU devices in Runnel's Python API")
        graph = graph if graph is not None else ops.get_default_graph()
        if self._cached_session is None or self._cached_session.graph is not graph:
            self._clear_cached_session()
            self._cached_session = _session.Session(graph=graph, config=config)
        with graph.as_default(), self._cached_session.as_default():
            yield self._cached_session

    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """Deprecated alias of cached_session (a new session for an explicit
        graph), as in TF 1.x."""
        if graph is None:
            return self.cached_session(None, config, use_gpu, force_gpu)
        return self.session(graph, config, use_gpu, force_gpu)

    def evaluate(self, tensors):
        """The tensors' values, run in the default session (or the cached
        one)."""
        sess = _session.get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as sess:
            return sess.run(tensors)

    # -- comparisons
    def _get_ndarray(self, a):
        if isinstance(a, ops.Tensor):
            a = self.evaluate(a)
        return a if isinstance(a, np.ndarray) else np.array(a)

    def _assert_structure(self, a, b, check, path):
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertIsInstance(a, dict, "%s: %r is not a dict" % (path, a))
            self.assertIsInstance(b, dict, "%s: %r is not a dict" % (path, b))
            self.assertEqual(set(a), set(b), "%s: mismatched keys" % path)
            for k in a:
                self._assert_structure(a[k], b[k], check, "%s[%r]" % (path, k))
            return
        if (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and
                _is_nested(a) + _is_nested(b)):
            self.assertEqual(len(a), len(b), "%s: lengths %d and %d differ"
                             % (path, len(a), len(b)))
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_structure(x, y, check, "%s[%d]" % (path, i))
            return
        check(self._get_ndarray(a), self._get_ndarray(b), path)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        def check(x, y, path):
            self.assertEqual(x.shape, y.shape, "%s: shapes %s and %s differ. %s"
                             % (path, x.shape, y.shape, msg or ""))
            if x.dtype.kind in "OSUb" or y.dtype.kind in "OSUb":
                np.testing.assert_array_equal(x, y, err_msg=msg or path)
            else:
                np.testing.assert_allclose(x, y, rtol=rtol, atol=atol,
                                           err_msg="%s %s" % (path, msg or ""),
                                           equal_nan=True)
        self._assert_structure(a, b, check, "value")

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6,  # noqa: N802
                                      float_rtol=1e-6, float_atol=1e-6,
                                      half_rtol=1e-3, half_atol=1e-3,
                                      bfloat16_rtol=1e-2, bfloat16_atol=1e-2, msg=None):
        a, b = self._get_ndarray(a), self._get_ndarray(b)
        dts = {a.dtype, b.dtype}
        if np.float16 in dts:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        elif np.float32 in dts:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, **kwargs):  # noqa: N802
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        a, b = self._get_ndarray(a), self._get_ndarray(b)
        self.assertEqual(a.shape, b.shape, "shapes %s and %s differ. %s"
                         % (a.shape, b.shape, msg or ""))
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        "%f != %f +/- %f%s" % (f1, f2, err, " (%s)" % msg if msg else ""))

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def _assert_all(self, a, ok, what):
        a = self._get_ndarray(a)
        if not np.all(ok(a)):
            raise AssertionError("not all elements of %s are %s" % (a, what))

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self._assert_all(a, lambda x: x > comparison_target, "> %r" % (comparison_target,))

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self._assert_all(a, lambda x: x < comparison_target, "< %r" % (comparison_target,))

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self._assert_all(a, lambda x: x >= comparison_target, ">= %r" % (comparison_target,))

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self._assert_all(a, lambda x: x <= comparison_target, "<= %r" % (comparison_target,))

    def assertAllInRange(self, target, lower_bound, upper_bound,  # noqa: N802
                         open_lower_bound=False, open_upper_bound=False):
        t = self._get_ndarray(target)
        if np.any(np.isnan(t.astype(np.float64))):
            raise AssertionError("%s contains NaN" % t)
        low = t > lower_bound if open_lower_bound else t >= lower_bound
        high = t < upper_bound if open_upper_bound else t <= upper_bound
        if not np.all(low & high):
            raise AssertionError("%s is not within %s%s, %s%s" % (
                t, "(" if open_lower_bound else "[", lower_bound, upper_bound,
                ")" if open_upper_bound else "]"))

    def assertAllInSet(self, target, expected_set):  # noqa: N802
        t = self._get_ndarray(target)
        missing = set(np.unique(t).tolist()) - set(expected_set)
        if missing:
            raise AssertionError("%s not in %s" % (sorted(missing), expected_set))

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        if not isinstance(np_array, (np.ndarray, np.generic)):
            raise TypeError("np_array must be a Numpy ndarray or Numpy scalar")
        if not isinstance(tf_tensor, ops.Tensor):
            raise TypeError("tf_tensor must be a Tensor")
        self.assertAllEqual(np_array.shape, tf_tensor.get_shape().as_list(), msg=msg)

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        t = self._get_ndarray(target)
        self.assertEqual(t.dtype, np.dtype(dtypes.as_dtype(expected_dtype).as_numpy_dtype))

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802
        if not actual.startswith(expected_start):
            raise AssertionError("%r does not start with %r%s" % (
                actual, expected_start, " : %r" % msg if msg else ""))

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        self.assertEqual(ops._device_string(device1), ops._device_string(device2), msg)

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type,  # noqa: N802
                                       expected_err_re_or_predicate):
        """Raises unless the block raises `exception_type` whose message
        matches the regular expression (or for which the predicate holds)."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                message = e.message if isinstance(e, errors.OpError) else str(e)
                return re.search(expected_err_re_or_predicate, message) is not None
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError("Exception of type %s: %s" % (type(e), e)) from e
        else:
            raise AssertionError(exception_type.__name__ + " not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        return self.assertRaisesWithPredicateMatch(errors.OpError,
                                                   expected_err_re_or_predicate)


def _is_nested(x):
    return any(isinstance(e, (list, tuple, dict, ops.Tensor)) for e in x)


# -- the gradient checker (TF's gradient_checker.compute_gradient[_error])

def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _theoretical_jacobian(sess, x, x_shape, y, y_shape, dy_grad, feed):
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    jacobian = np.zeros((x_size, y_size), dtype=np.float64)
    dy_value = np.zeros(y_shape, dtype=y.dtype.as_numpy_dtype)
    flat_dy = dy_value.reshape(-1)
    for col in range(y_size):
        flat_dy[col] = 1
        run_feed = dict(feed)
        run_feed[dy_grad[1]] = dy_value
        g = sess.run(dy_grad[0], run_feed)
        if g is not None:
            jacobian[:, col] = np.asarray(g, dtype=np.float64).reshape(x_size)
        flat_dy[col] = 0
    return jacobian


def _numerical_jacobian(sess, x, x_value, y, y_shape, delta, feed):
    x_size, y_size = x_value.size, int(np.prod(y_shape))
    jacobian = np.zeros((x_size, y_size), dtype=np.float64)
    x_pos = x_value.copy()
    flat = x_pos.reshape(-1)
    for row in range(x_size):
        orig = flat[row]
        run_feed = dict(feed)
        flat[row] = orig + delta
        run_feed[x] = x_pos
        y_up = np.asarray(sess.run(y, run_feed), dtype=np.float64)
        flat[row] = orig - delta
        run_feed[x] = x_pos
        y_down = np.asarray(sess.run(y, run_feed), dtype=np.float64)
        flat[row] = orig
        jacobian[row, :] = ((y_up - y_down) / (2 * delta)).reshape(y_size)
    return jacobian


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                     init_targets=None, extra_feed_dict=None):
    """(theoretical, numerical) Jacobians of y with respect to x, each of
    shape [x size, y size], in the default session. x may be a list of
    tensors (with a list of shapes): then a list of pairs. x is fed with
    x_init_value (default: uniform random values)."""
    from runnel.ops import gen_ops
    from runnel.ops import gradients_impl
    from runnel.ops import array_ops
    sess = _session.get_default_session()
    if sess is None:
        raise ValueError("tf.test.compute_gradient needs a default session "
                         "(with tf.Session().as_default(): or a TestCase session)")
    xs, shapes = _as_list(x), x_shape if isinstance(x, (list, tuple)) else [x_shape]
    if len(xs) != len(shapes):
        raise ValueError("x and x_shape must have the same length")
    inits = (x_init_value if isinstance(x, (list, tuple)) else [x_init_value]) \
        if x_init_value is not None else [None] * len(xs)
    for t in xs + [y]:
        if t.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64,
                                      dtypes.bfloat16):
            raise TypeError("tf.test.compute_gradient: %s is %s; only real floating "
                            "tensors are supported" % (t.name, t.dtype.name))
    if init_targets is not None:
        sess.run(init_targets)
    dy = array_ops.placeholder(y.dtype, shape=y_shape, name="compute_gradient_dy")
    grads = gradients_impl.gradients(y, xs, grad_ys=dy)
    feed = dict(extra_feed_dict or {})
    values = []
    rng = np.random.RandomState(_DEFAULT_SEED)
    for t, shape, init in zip(xs, shapes, inits):
        v = np.asarray(init if init is not None else rng.random_sample(shape),
                       dtype=t.dtype.as_numpy_dtype).reshape(shape)
        values.append(v)
        feed[t] = v
    results = []
    for i, (t, shape) in enumerate(zip(xs, shapes)):
        g = grads[i]
        if g is None:
            theoretical = np.zeros((int(np.prod(shape)), int(np.prod(y_shape))))
        else:
            if isinstance(g, ops.IndexedSlices):
                g = gen_ops.unsorted_segment_sum(g.values, g.indices,
                                                 array_ops.shape(t)[0])
            theoretical = _theoretical_jacobian(sess, t, shape, y, y_shape, (g, dy), feed)
        numerical = _numerical_jacobian(sess, t, values[i], y, y_shape, delta, feed)
        results.append((theoretical, numerical))
    return results if isinstance(x, (list, tuple)) else results[0]


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           init_targets=None, extra_feed_dict=None):
    """The largest |theoretical - numerical| over compute_gradient's
    Jacobians."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta,
                            init_targets, extra_feed_dict)
    pairs = grad if isinstance(grad, list) else [grad]
    error = 0.0
    for theoretical, numerical in pairs:
        if theoretical.size or numerical.size:
            error = max(error, float(np.fabs(theoretical - numerical).max()))
    return error
