"""tf.DType, tf.TensorShape, and values crossing between NumPy and tensors."""

import numpy as np
import pytest

import runnel.compat.v1 as tf


@pytest.mark.parametrize("dtype,np_dtype", [
    (tf.float32, np.float32), (tf.float64, np.float64), (tf.float16, np.float16),
    (tf.int8, np.int8), (tf.int16, np.int16), (tf.int32, np.int32),
    (tf.int64, np.int64), (tf.uint8, np.uint8), (tf.uint16, np.uint16),
    (tf.bool, np.bool_),
])
def test_feed_and_fetch_round_trip(dtype, np_dtype):
    value = (np.arange(12) % 5).astype(np_dtype).reshape(3, 4)
    p = tf.placeholder(dtype, [3, 4])
    out = tf.identity(p)
    with tf.Session() as sess:
        got = sess.run(out, {p: value})
    assert got.dtype == np_dtype and got.shape == (3, 4)
    np.testing.assert_array_equal(got, value)


def test_bfloat16_crosses_as_its_uint16_bits():
    bits = np.array([0x3F80, 0x4000, 0xBF80], np.uint16)  # 1, 2, -1
    p = tf.placeholder(tf.bfloat16, [3])
    as_float = tf.cast(p, tf.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(as_float, {p: bits}), [1, 2, -1])
        np.testing.assert_array_equal(sess.run(tf.cast(as_float, tf.bfloat16),
                                               {p: bits}), bits)
        c = tf.constant([1.0, 2.0, -1.0], dtype=tf.bfloat16)
        np.testing.assert_array_equal(sess.run(c), bits)


def test_strings_are_bytes_both_ways():
    p = tf.placeholder(tf.string, [None])
    with tf.Session() as sess:
        got = sess.run(p, {p: ["a", b"\x00b", "ü"]})
    assert got.dtype == object
    assert list(got) == [b"a", b"\x00b", "ü".encode()]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="bytes or str"):
            sess.run(p, {p: np.array([1, 2], dtype=object)})


def test_non_contiguous_and_empty_arrays():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2]
    p = tf.placeholder(tf.float32, [4, 3])
    e = tf.placeholder(tf.float32, [0, 3])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(p, {p: a}), a)
        assert sess.run(e, {e: np.zeros([0, 3], np.float32)}).shape == (0, 3)


def test_contiguous_feeds_are_wrapped_and_their_references_released():
    """A C-contiguous aligned feed is wrapped (the tensor holds a reference
    to the array while anything keeps it) and released after; nothing a
    kernel does writes into it; fetching the fed value returns a copy."""
    import sys
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert a.ctypes.data % 16 == 0
    p = tf.placeholder(tf.float32, [3, 4])
    doubled = tf.nn.relu(p) * 2.0  # Relu may forward its input: not this one
    q = tf.FIFOQueue(2, tf.float32, shapes=[[3, 4]])
    enqueue = q.enqueue(p)
    dequeued = q.dequeue()
    base = sys.getrefcount(a)
    with tf.Session() as sess:
        for _ in range(100):
            got, echo = sess.run([doubled, p], {p: a})
        assert sys.getrefcount(a) == base  # nothing leaked
        np.testing.assert_array_equal(got, 2 * np.arange(12).reshape(3, 4))
        np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
        echo[0, 0] = 99.0
        assert a[0, 0] == 0.0  # the fetch is a copy
        sess.run(enqueue, {p: a})
        assert sys.getrefcount(a) == base + 1  # the queued tensor holds it
        np.testing.assert_array_equal(sess.run(dequeued), a)
        assert sys.getrefcount(a) == base


def test_large_fetch_is_owned_by_the_array():
    t = tf.random_uniform([1000, 1000], seed=1)
    with tf.Session() as sess:
        a = sess.run(t)
        b = sess.run(t)
    del sess
    assert a.shape == (1000, 1000) and (a != b).any()
    assert 0.45 < float(a.mean()) < 0.55
    a[0, 0] = 7.0  # the array's memory is its own to write
    assert a[0, 0] == 7.0


def test_dtype_api():
    assert tf.as_dtype("float32") is not None and tf.as_dtype(np.int64) == tf.int64
    assert tf.float32.is_floating and not tf.int32.is_floating
    assert tf.int32.is_integer and tf.uint8.is_unsigned
    assert tf.float32.as_numpy_dtype == np.float32
    assert tf.float32.as_datatype_enum == 1
    assert tf.float32._as_ref.base_dtype == tf.float32
    assert tf.int8.min == -128 and tf.uint16.max == 65535
    assert tf.as_dtype(tf.float32) == "float32"
    with pytest.raises(TypeError):
        tf.as_dtype("float33")


def test_tensor_shape_api():
    s = tf.TensorShape([None, 3])
    assert s.ndims == 2 and s.as_list() == [None, 3]
    assert not s.is_fully_defined()
    assert s.merge_with([2, None]).as_list() == [2, 3]
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert tf.TensorShape(None).ndims is None
    assert s[1].value == 3 and s[0].value is None
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert s.concatenate([7]).as_list() == [None, 3, 7]
    with pytest.raises(ValueError):
        s.merge_with([1, 2, 3])


def test_make_tensor_proto_and_ndarray():
    p = tf.make_tensor_proto(np.array([[1, 2], [3, 4]], np.int32))
    assert p.dtype == tf.int32.as_datatype_enum
    np.testing.assert_array_equal(tf.make_ndarray(p), [[1, 2], [3, 4]])


def test_empty_list_constants_of_every_dtype():
    """NumPy calls [] float64; TF makes an empty tensor of the asked dtype."""
    for dtype in (tf.int32, tf.int64, tf.bool, tf.string, tf.float32):
        c = tf.constant([], dtype=dtype)
        assert c.dtype == dtype and c.shape.as_list() == [0]
        with tf.Session() as sess:
            assert sess.run(c).shape == (0,)
    with pytest.raises(TypeError):
        tf.constant([1.5], dtype=tf.string)
