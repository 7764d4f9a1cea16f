"""tf.cond and tf.while_loop (not built yet: they raise NotImplementedError)."""


def cond(pred, true_fn, false_fn, strict=False, name=None):
    raise NotImplementedError("tf.cond is not in Runnel's Python API yet")


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    raise NotImplementedError("tf.while_loop is not in Runnel's Python API yet")
