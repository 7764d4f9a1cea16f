"""tf.cond and tf.while_loop: values, side effects, nesting, gradients
(closed forms and finite differences) and TF's build-time errors."""

import collections

import numpy as np
import pytest

import runnel.compat.v1 as tf


def run(fetches, feed_dict=None, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


# ---------------------------------------------------------------- tf.cond

def test_cond_picks_the_branch_of_a_fed_predicate():
    x = tf.placeholder(tf.float32, [], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    assert y.dtype == tf.float32 and y.op.type == "Merge"
    assert y.name == "cond/Merge:0"
    with tf.Session() as sess:
        assert sess.run(y, {p: True, x: 3.0}) == 6.0
        assert sess.run(y, {p: False, x: 3.0}) == 2.0


def test_cond_builds_tensorflows_node_pattern():
    p = tf.placeholder(tf.bool, [])
    tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(2), name="choose")
    g = tf.get_default_graph()
    assert g.get_operation_by_name("choose/Switch").type == "Switch"
    assert g.get_operation_by_name("choose/switch_t").type == "Identity"
    assert g.get_operation_by_name("choose/switch_f").type == "Identity"
    assert g.get_operation_by_name("choose/pred_id").type == "Identity"
    # Input-less ops of a branch hang on its pivot.
    c = g.get_operation_by_name("choose/Const")
    assert [op.name for op in c.control_inputs] == ["choose/switch_t"]


def test_cond_side_effects_run_only_on_the_taken_branch():
    v = tf.Variable(0, name="v")
    w = tf.Variable(0, name="w")
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.assign_add(v, 1), lambda: tf.assign_add(w, 10))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {p: True}) == 1
        assert sess.run(y, {p: True}) == 2
        assert sess.run(y, {p: False}) == 10
        assert sess.run([v, w]) == [2, 10]


def test_cond_branch_returning_an_operation():
    v = tf.Variable(5.0)
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: tf.assign(v, 1.0).op, lambda: tf.no_op())
    assert isinstance(out, tf.Tensor)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out, {p: False})
        assert sess.run(v) == 5.0
        sess.run(out, {p: True})
        assert sess.run(v) == 1.0


def test_cond_with_captured_outside_tensors_and_structures():
    a = tf.placeholder(tf.float32, [3], name="a")
    b = tf.constant([10.0, 20.0, 30.0])
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p,
                  lambda: {"sum": a + b, "pair": (a * b, tf.reduce_sum(a))},
                  lambda: {"sum": a - b, "pair": (b, 0.0)})
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    av = np.array([1.0, 2.0, 3.0], np.float32)
    bv = np.array([10.0, 20.0, 30.0], np.float32)
    got = run(out, {p: True, a: av})
    np.testing.assert_allclose(got["sum"], av + bv)
    np.testing.assert_allclose(got["pair"][0], av * bv)
    assert got["pair"][1] == 6.0
    got = run(out, {p: False, a: av})
    np.testing.assert_allclose(got["sum"], av - bv)
    np.testing.assert_allclose(got["pair"][0], bv)
    assert got["pair"][1] == 0.0


def test_cond_singletons_are_unpacked_unless_strict():
    p = tf.placeholder(tf.bool, [])
    loose = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)])
    strict = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
    assert isinstance(loose, tf.Tensor)
    assert isinstance(strict, list) and len(strict) == 1
    assert run([loose, strict], {p: False}) == [2, [2]]


def test_nested_cond():
    x = tf.placeholder(tf.int32, [])

    def sign():
        return tf.cond(x > 0, lambda: tf.constant(1),
                       lambda: tf.cond(x < 0, lambda: tf.constant(-1),
                                       lambda: tf.constant(0)))
    s = sign()
    with tf.Session() as sess:
        assert [sess.run(s, {x: v}) for v in (5, -3, 0)] == [1, -1, 0]


def test_cond_inside_control_dependencies_waits_for_them():
    v = tf.Variable(1.0)
    p = tf.placeholder(tf.bool, [])
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        y = tf.cond(p, lambda: v.read_value() * 10.0, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {p: True}) == 20.0
        assert sess.run(y, {p: False}) == 0.0
        assert sess.run(v) == 3.0


def test_cond_errors():
    x = tf.constant(1.0)
    with pytest.raises(TypeError):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError):
        tf.cond(x, lambda: x, lambda: x)            # float pred
    with pytest.raises(ValueError):
        tf.cond(tf.constant([True, False]), lambda: x, lambda: x)
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(ValueError, match="same type"):
        tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(1.0))
    with pytest.raises(ValueError, match="Incompatible return values"):
        tf.cond(p, lambda: (x, x), lambda: (x, x, x))
    with pytest.raises(TypeError, match="Incompatible return types"):
        tf.cond(p, lambda: [x, x], lambda: (x, x))
    with pytest.raises(ValueError, match="must have a return value"):
        tf.cond(p, lambda: None, lambda: x)
    with pytest.raises(TypeError):
        tf.cond(p, x, lambda: x)
    # A branch raising: the exception itself comes out, the graph stays usable.
    with pytest.raises(ZeroDivisionError):
        tf.cond(p, lambda: x, lambda: 1 / 0)
    y = tf.cond(p, lambda: x + 1.0, lambda: x)
    assert run(y, {p: True}) == 2.0


# ---------------------------------------------------------------- tf.while_loop

def test_while_loop_sum_with_fed_bound():
    n = tf.placeholder(tf.int32, [], name="n")
    i, s = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), [0, 0])
    assert i.name == "while/Exit:0" and s.name == "while/Exit_1:0"
    with tf.Session() as sess:
        for nv in (0, 1, 5, 100):
            assert sess.run([i, s], {n: nv}) == [nv, nv * (nv - 1) // 2]


def test_while_loop_builds_tensorflows_node_pattern():
    n = tf.placeholder(tf.int32, [])
    tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    g = tf.get_default_graph()
    types = {op.name: op.type for op in g.get_operations()}
    for name, op_type in [("while/Enter", "Enter"), ("while/Merge", "Merge"),
                          ("while/Less", "Less"), ("while/LoopCond", "LoopCond"),
                          ("while/Switch", "Switch"), ("while/Identity", "Identity"),
                          ("while/add", "Add"), ("while/NextIteration", "NextIteration"),
                          ("while/Exit", "Exit")]:
        assert types[name] == op_type
    enter = g.get_operation_by_name("while/Enter")
    assert enter.get_attr("frame_name") == b"while/while_context"
    assert enter.get_attr("is_constant") is False
    # n enters once, as a loop invariant.
    invariants = [op for op in g.get_operations()
                  if op.type == "Enter" and op.get_attr("is_constant")]
    assert [op.inputs[0].name for op in invariants] == [n.name]


def test_while_loop_factorial_and_fibonacci():
    n = tf.placeholder(tf.int32, [])
    _, fact = tf.while_loop(lambda i, f: i <= n, lambda i, f: (i + 1, f * tf.cast(i, tf.int64)),
                            (tf.constant(1), tf.constant(1, tf.int64)))
    _, fib, _ = tf.while_loop(lambda k, a, b: k < n, lambda k, a, b: (k + 1, b, a + b),
                              [0, tf.constant(0, tf.int64), tf.constant(1, tf.int64)])
    fibs = [0, 1]
    while len(fibs) < 40:
        fibs.append(fibs[-1] + fibs[-2])
    with tf.Session() as sess:
        for nv in (0, 1, 5, 20):
            f, b = sess.run([fact, fib], {n: nv})
            assert f == int(np.prod(np.arange(1, nv + 1, dtype=np.int64)))
            assert b == fibs[nv]


def test_while_loop_over_changing_tensors():
    # x <- A x + b, five times, on a fed vector; A and b are captured.
    a = np.array([[0.5, 0.1, 0.0], [0.0, 0.9, 0.2], [0.3, 0.0, 0.4]], np.float32)
    b = np.array([1.0, -1.0, 0.5], np.float32)
    x0 = tf.placeholder(tf.float32, [3])
    am, bv = tf.constant(a), tf.constant(b)
    _, x = tf.while_loop(
        lambda i, x: i < 5,
        lambda i, x: (i + 1, tf.reshape(tf.matmul(am, tf.reshape(x, [3, 1])), [3]) + bv),
        [0, x0])
    assert x.shape.as_list() == [3]
    start = np.array([1.0, 2.0, 3.0], np.float32)
    want = start
    for _ in range(5):
        want = a @ want + b
    np.testing.assert_allclose(run(x, {x0: start}), want, rtol=1e-5)


def test_while_loop_single_variable_and_structures():
    x = tf.constant(1.0)
    # A one-element list comes back as a tensor, unless return_same_structure.
    y = tf.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, [x])
    assert isinstance(y, tf.Tensor)
    z = tf.while_loop(lambda v: v < 100.0, lambda v: [v * 3.0], [x],
                      return_same_structure=True)
    assert isinstance(z, list) and len(z) == 1
    # A bare tensor as loop_vars.
    w = tf.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, x)
    Pair = collections.namedtuple("Pair", ["count", "value"])
    pr = tf.while_loop(lambda count, value: count < 4,
                       lambda count, value: Pair(count + 1, value * 2.0),
                       Pair(tf.constant(0), tf.constant(1.5)))
    assert isinstance(pr, Pair)
    nested = tf.while_loop(lambda a, bc: a < 3,
                           lambda a, bc: (a + 1, {"b": bc["b"] + 2, "c": bc["c"] * 2}),
                           (0, {"b": 0, "c": 1}))
    got = run([y, z, w, pr, nested])
    assert got[0] == 243.0 and got[1] == [243.0] and got[2] == 243.0
    assert tuple(got[3]) == (4, 24.0)
    assert got[4][0] == 3 and got[4][1] == {"b": 6, "c": 8}


def test_while_loop_maximum_iterations():
    n = tf.placeholder(tf.int32, [])
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [0], maximum_iterations=7)
    j, k = tf.while_loop(lambda j, k: True, lambda j, k: (j + 2, k - 1), (0, 0),
                         maximum_iterations=tf.constant(4))
    with tf.Session() as sess:
        assert sess.run(i, {n: 3}) == 3
        assert sess.run(i, {n: 50}) == 7
        assert sess.run([j, k]) == [8, -4]
    with pytest.raises(ValueError, match="scalar"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=[1, 2])


def test_while_loop_stateful_body():
    v = tf.Variable(0)
    n = tf.placeholder(tf.int32, [])

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, i)]):
            return i + 1
    out = tf.while_loop(lambda i: i < n, body, [0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, {n: 5}) == 5
        assert sess.run(v) == 0 + 1 + 2 + 3 + 4


def test_nested_while_loops():
    # sum over i < n, j < i of (i * j), with the inner bound from the outer loop.
    n = tf.placeholder(tf.int32, [])
    offset = tf.constant(100)

    def outer_body(i, total):
        _, inner = tf.while_loop(lambda j, acc: j < i,
                                 lambda j, acc: (j + 1, acc + i * j + offset - offset),
                                 [0, 0])
        return i + 1, total + inner
    _, total = tf.while_loop(lambda i, t: i < n, outer_body, [0, 0])
    with tf.Session() as sess:
        for nv in (0, 3, 6):
            want = sum(i * j for i in range(nv) for j in range(i))
            assert sess.run(total, {n: nv}) == want


def test_cond_inside_a_loop_and_loop_inside_a_cond():
    # Collatz steps: the body branches on parity.
    n = tf.placeholder(tf.int32, [])
    steps, _ = tf.while_loop(
        lambda s, x: x > 1,
        lambda s, x: (s + 1, tf.cond(tf.equal(x % 2, 0), lambda: x // 2, lambda: 3 * x + 1)),
        [0, n])
    p = tf.placeholder(tf.bool, [])
    m = tf.cond(p, lambda: tf.while_loop(lambda k: k < 10, lambda k: k + 3, [n]),
                lambda: n * 2)

    def collatz(v):
        s = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s
    with tf.Session() as sess:
        for nv in (1, 6, 27):
            assert sess.run(steps, {n: nv}) == collatz(nv)
        assert sess.run(m, {n: 1, p: True}) == 10
        assert sess.run(m, {n: 4, p: False}) == 8


def test_while_loop_shape_invariants():
    x = tf.constant([1.0])
    # The body grows x: an error without an invariant, as in TF ...
    with pytest.raises(ValueError, match="shape_invariants"):
        tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)), [0, x])
    # ... fine with one.
    _, y = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x * 2.0], 0)),
                         [0, x], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    assert y.shape.as_list() == [None]
    want = np.array([1.0], np.float32)
    for _ in range(3):
        want = np.concatenate([want, want * 2])
    np.testing.assert_allclose(run(y), want)
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda x: True, lambda x: x, [x], shape_invariants=[tf.TensorShape([2])])


def test_while_loop_errors():
    i = tf.constant(0)
    with pytest.raises(ValueError, match="must match|same nested structure"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: i + 1, [i, i])
    with pytest.raises(ValueError):
        tf.while_loop(lambda i: i < 3, lambda i: (i + 1, i), [i])
    with pytest.raises(ValueError, match="body returns float32"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [i])
    with pytest.raises(TypeError):
        tf.while_loop(lambda i: i + 1, lambda i: i + 1, [i])   # int condition
    with pytest.raises(ValueError):
        tf.while_loop(lambda i: tf.stack([i < 3, i < 4]), lambda i: i + 1, [i])
    with pytest.raises(TypeError):
        tf.while_loop(lambda i: i < 3, "not callable", [i])
    with pytest.raises(ValueError, match="No loop variables"):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="parallel_iterations"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i], parallel_iterations=0)
    with pytest.raises(KeyError):
        tf.while_loop(lambda i: i < 3, lambda i: {}["missing"], [i])
    # The graph is still usable after all of that.
    out = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i])
    assert run(out) == 3


# ---------------------------------------------------------------- gradients

def test_gradient_through_cond_on_both_sides():
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0.0, lambda: x * x, lambda: -x)
    (dx,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert sess.run(dx, {x: 3.0}) == pytest.approx(6.0)
        assert sess.run(dx, {x: -2.0}) == pytest.approx(-1.0)
        eps = 1e-2
        for xv in (1.5, -0.7):
            num = (sess.run(y, {x: xv + eps}) - sess.run(y, {x: xv - eps})) / (2 * eps)
            assert sess.run(dx, {x: xv}) == pytest.approx(num, rel=1e-3)


def test_gradient_through_cond_of_captured_variable():
    w = tf.Variable(2.0)
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: w * w * 3.0, lambda: tf.constant(1.0))
    (dw,) = tf.gradients(y, [w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(dw, {p: True}) == pytest.approx(12.0)
        assert sess.run(dw, {p: False}) == pytest.approx(0.0)


def test_gradient_of_repeated_squaring_loop():
    # y = x^(2^n) by squaring n times: dy/dx = 2^n x^(2^n - 1).
    x = tf.placeholder(tf.float64, [])
    n = tf.placeholder(tf.int32, [])
    _, y = tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * v), [0, x])
    (dx,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        for xv, nv in [(1.1, 0), (1.1, 1), (0.9, 3), (1.05, 4)]:
            k = 2 ** nv
            yv, dv = sess.run([y, dx], {x: xv, n: nv})
            assert yv == pytest.approx(xv ** k, rel=1e-12)
            assert dv == pytest.approx(k * xv ** (k - 1), rel=1e-10)
            eps = 1e-6
            num = (sess.run(y, {x: xv + eps, n: nv}) -
                   sess.run(y, {x: xv - eps, n: nv})) / (2 * eps)
            assert dv == pytest.approx(num, rel=1e-6)


def test_gradient_through_loop_with_captured_tensor():
    # v <- v * a + 1 three times: d/da and d/dv0 against finite differences.
    a = tf.placeholder(tf.float64, [])
    v0 = tf.placeholder(tf.float64, [])
    _, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * a + 1.0), [0, v0])
    da, dv0 = tf.gradients(v, [a, v0])

    def f(av, vv):
        for _ in range(3):
            vv = vv * av + 1.0
        return vv
    with tf.Session() as sess:
        got_a, got_v = sess.run([da, dv0], {a: 1.3, v0: 0.5})
    eps = 1e-6
    assert got_a == pytest.approx((f(1.3 + eps, 0.5) - f(1.3 - eps, 0.5)) / (2 * eps), rel=1e-6)
    assert got_v == pytest.approx(1.3 ** 3, rel=1e-10)


def test_no_gradient_through_loop_without_back_prop():
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [x], back_prop=False)
    assert tf.gradients(y, [x]) == [None]
    assert run(y, {x: 3.0}) == 12.0


def test_gradient_of_nested_loops():
    # Two outer iterations of two inner squarings: y = x^16.
    x = tf.placeholder(tf.float64, [])

    def outer_body(i, v):
        _, w = tf.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, w * w), [0, v])
        return i + 1, w
    _, y = tf.while_loop(lambda i, v: i < 2, outer_body, [0, x])
    (dx,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        yv, dv = sess.run([y, dx], {x: 1.1})
    assert yv == pytest.approx(1.1 ** 16, rel=1e-12)
    assert dv == pytest.approx(16 * 1.1 ** 15, rel=1e-10)


def test_gradient_of_a_cond_inside_a_loop():
    # v <- v > 0 ? v^2 : -v, three times.
    x = tf.placeholder(tf.float32, [])
    _, y = tf.while_loop(
        lambda i, v: i < 3,
        lambda i, v: (i + 1, tf.cond(v > 0.0, lambda: v * v, lambda: -v)), [0, x])
    (dx,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        # The same branch every iteration: y = x^8.
        assert sess.run(dx, {x: 1.5}) == pytest.approx(8 * 1.5 ** 7, rel=1e-5)
        # Forward values saved inside a branch that some iteration skips are
        # not supported by the C++ core (Note [Loop gradients]): the run
        # fails with an error, never a wrong value.
        assert sess.run(y, {x: -1.5}) == pytest.approx(1.5 ** 4, rel=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError, match="dead"):
            sess.run(dx, {x: -1.5})


def test_finalized_graph_refuses_control_flow():
    p = tf.placeholder(tf.bool, [])
    tf.get_default_graph().finalize()
    with pytest.raises(RuntimeError, match="finalized"):
        tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(2))
    with pytest.raises(RuntimeError, match="finalized"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [p])


# ---------------------------------------------------------------- tf.case

def _case_graph(exclusive=False, with_default=True):
    x = tf.placeholder(tf.int32, [], name="x")
    pairs = [(tf.less(x, 0), lambda: tf.constant(-1)),
             (tf.less(x, 10), lambda: tf.constant(1)),
             (tf.less(x, 100), lambda: tf.constant(2))]
    default = (lambda: tf.constant(3)) if with_default else None
    return x, tf.case(pairs, default=default, exclusive=exclusive)


def test_case_takes_the_first_predicate_that_holds():
    x, y = _case_graph()
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (-5, 5, 50, 500)] == [-1, 1, 2, 3]


def test_case_without_default_uses_the_last_pair_and_asserts_one_holds():
    x, y = _case_graph(with_default=False)
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="None of conditions evaluated as True"):
            sess.run(y, {x: 500})


def test_case_exclusive_checks_that_at_most_one_predicate_holds():
    x, y = _case_graph(exclusive=True)
    with tf.Session() as sess:
        assert sess.run(y, {x: 500}) == 3
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Input error: exclusive=True"):
            sess.run(y, {x: 5})  # x < 10 and x < 100 both hold


def test_case_runs_only_the_taken_branch_side_effects():
    v = tf.Variable(0, name="v")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.case([(p, lambda: tf.assign_add(v, 1))], default=lambda: tf.assign_add(v, 10))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {p: True})
        sess.run(y, {p: False})
        assert sess.run(v) == 11


def test_case_bad_arguments_are_type_errors():
    x = tf.placeholder(tf.int32, [])
    with pytest.raises(TypeError, match="must be a list, tuple, or dict"):
        tf.case(lambda: x)
    with pytest.raises(TypeError, match="type bool"):
        tf.case([(x, lambda: x)])
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(tf.less(x, 1), x)])
    with pytest.raises(TypeError, match="2-tuple"):
        tf.case([(tf.less(x, 1),)])
