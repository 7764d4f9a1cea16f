"""tf.Session and tf.InteractiveSession over Runnel's C++ Session.

Session.run takes TF's nested fetch structures (lists, tuples, namedtuples,
dicts, Operations, Tensors, tensor names, Variables) and feeds keyed by
tensors or names, and returns the same structure with NumPy values. A run
signature (fetch structure, feed keys) is resolved once and cached: later
runs with the same signature only convert values and run the step, with
the GIL released.
"""

import collections
import threading
import weakref

import numpy as np

from runnel import _runnel
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import ops
from runnel.proto import config_pb2


# ---------------------------------------------------------------- default sessions

class _DefaultSessionStack(threading.local):
    def __init__(self):
        super().__init__()
        self.stack = []


_default_session_stack = _DefaultSessionStack()


def get_default_session():
    s = _default_session_stack.stack
    return s[-1] if s else None


def _reset_default_session():
    pass


def _eval_using_default_session(tensors, feed_dict, graph, session=None):
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default "
                             "session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to "
                             "`eval(session=sess)`")
        if session.graph is not graph:
            raise ValueError("Cannot use the default session to evaluate tensor: "
                             "the tensor's graph is different from the session's "
                             "graph. Pass an explicit session to "
                             "`eval(session=sess)`.")
    elif session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the "
                         "tensor's graph is different from the session's graph.")
    return session.run(tensors, feed_dict)


def _run_using_default_session(operation, feed_dict, graph, session=None):
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("Cannot execute operation using `run()`: No default "
                             "session is registered. Use `with "
                             "sess.as_default():` or pass an explicit session to "
                             "`run(session=sess)`")
        if session.graph is not graph:
            raise ValueError("Cannot use the default session to execute operation: "
                             "the operation's graph is different from the "
                             "session's graph. Pass an explicit session to "
                             "run(session=sess).")
    elif session.graph is not graph:
        raise ValueError("Cannot use the given session to execute operation: the "
                         "operation's graph is different from the session's graph.")
    session.run(operation, feed_dict)


# ---------------------------------------------------------------- fetch structures

class _Element:
    """A leaf of the fetch structure: a tensor to fetch or an op to run."""
    __slots__ = ("tensor", "op")

    def __init__(self, graph, fetch):
        if fetch is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(fetch, ops.IndexedSlices):
            raise TypeError("Fetching IndexedSlices is not supported; fetch "
                            "tf.convert_to_tensor(slices) instead")
        try:
            el = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError("Fetch argument %r has invalid type %r, must be a string "
                            "or Tensor. (%s)" % (fetch, type(fetch), e)) from None
        except ValueError as e:
            raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)"
                             % (fetch, e)) from None
        except KeyError as e:
            raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)"
                             % (fetch, e.args[0])) from None
        if isinstance(el, ops.Tensor):
            if el.dtype.base_dtype in (dtypes.resource, dtypes.variant):
                raise TypeError("Fetch argument %s is a %s tensor, which cannot be "
                                "returned to Python" % (el.name, el.dtype.base_dtype.name))
            self.tensor, self.op = el, None
        else:
            self.tensor, self.op = None, el


def _build_structure(graph, fetch, leaves):
    """A template of `fetch` whose leaves are indexes into `leaves`."""
    if isinstance(fetch, (list, tuple)) and not isinstance(fetch, ops.Tensor):
        parts = [_build_structure(graph, f, leaves) for f in fetch]
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
            return ("namedtuple", type(fetch), parts)
        return ("tuple" if isinstance(fetch, tuple) else "list", type(fetch), parts)
    if isinstance(fetch, collections.abc.Mapping):
        keys = list(fetch.keys())
        return ("dict", type(fetch), keys,
                [_build_structure(graph, fetch[k], leaves) for k in keys])
    leaves.append(_Element(graph, fetch))
    return ("leaf", len(leaves) - 1)


def _fill(template, values):
    kind = template[0]
    if kind == "leaf":
        return values[template[1]]
    if kind == "list":
        out = [_fill(t, values) for t in template[2]]
        return out if template[1] is list else template[1](out)
    if kind == "tuple":
        out = tuple(_fill(t, values) for t in template[2])
        return out if template[1] is tuple else template[1](out)
    if kind == "namedtuple":
        return template[1](*[_fill(t, values) for t in template[2]])
    cls, keys, parts = template[1], template[2], template[3]
    items = [(k, _fill(t, values)) for k, t in zip(keys, parts)]
    try:
        return cls(items)
    except TypeError:
        d = cls()
        for k, v in items:
            d[k] = v
        return d


def _hashable_key(fetch):
    """A cache key for a fetch structure, or None if it has unhashable parts."""
    if isinstance(fetch, (ops.Tensor, ops.Operation, str)):
        return fetch
    if isinstance(fetch, (list, tuple)):
        parts = tuple(_hashable_key(f) for f in fetch)
        if any(p is None for p in parts):
            return None
        return (type(fetch), parts)
    if isinstance(fetch, dict):
        try:
            items = tuple((k, _hashable_key(v)) for k, v in fetch.items())
            hash(items)
        except TypeError:
            return None
        if any(v is None for _, v in items):
            return None
        return (type(fetch), items)
    if hasattr(fetch, "_as_graph_element"):
        return fetch
    return None


class _RunPlan:
    """A resolved (fetch structure, feed keys) signature."""

    def __init__(self, session, fetches, feed_keys, make_callable=True):
        graph = session.graph
        leaves = []
        self.template = _build_structure(graph, fetches, leaves)
        fetch_names, self.leaf_slot = [], []
        targets = []
        seen = {}
        for leaf in leaves:
            if leaf.tensor is not None:
                name = leaf.tensor.name
                if name not in seen:
                    seen[name] = len(fetch_names)
                    fetch_names.append(name)
                self.leaf_slot.append(seen[name])
            else:
                if leaf.op.name not in targets:
                    targets.append(leaf.op.name)
                self.leaf_slot.append(-1)
        self.feeds = []  # (name, dtype enum, static shape dims or None, tensor)
        for key in feed_keys:
            t = _feed_tensor(graph, key)
            shape = t.shape
            dims = None if shape.ndims is None else [d.value for d in shape.dims]
            self.feeds.append((t.name, t.dtype.base_dtype.as_datatype_enum, dims, t))
        self.single_leaf = self.template[0] == "leaf"
        self.fetch_names = fetch_names
        self.targets = targets
        if make_callable:
            self.callable = _runnel.Callable(session._c, [f[0] for f in self.feeds],
                                             [f[1] for f in self.feeds], fetch_names,
                                             targets)

    def check_feed(self, i, value):
        name, dtype, dims, t = self.feeds[i]
        if dims is None:
            return
        shape = getattr(value, "shape", None)
        if shape is None:
            if isinstance(value, (list, tuple)):
                shape = np.shape(value)
            else:
                shape = ()
        if len(shape) != len(dims) or any(d is not None and d != s
                                          for d, s in zip(dims, shape)):
            raise ValueError("Cannot feed value of shape %r for Tensor %r, which has "
                             "shape %r" % (tuple(shape), name, str(t.shape)))

    def result(self, outputs):
        values = [None if s < 0 else outputs[s] for s in self.leaf_slot]
        if self.single_leaf:
            return values[0]
        return _fill(self.template, values)


def _feed_tensor(graph, key):
    if isinstance(key, str):
        try:
            t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (KeyError, ValueError) as e:
            raise TypeError("Cannot interpret feed_dict key as Tensor: " + str(e)) from None
        return t
    if isinstance(key, ops.Tensor):
        if key.graph is not graph:
            raise ValueError("Tensor %s is not an element of this graph." % key)
        return key
    if hasattr(key, "_as_graph_element"):
        t = key._as_graph_element()
        if isinstance(t, ops.Tensor):
            return t
    raise TypeError("Cannot interpret feed_dict key as Tensor: The name %r is not a "
                    "valid tensor" % (key,))


# ---------------------------------------------------------------- sessions

class _DeviceAttributes:
    def __init__(self, name):
        self.name = name
        parts = name.split("/")
        self.device_type = parts[-1].split(":")[1] if ":" in parts[-1] else ""
        self.memory_limit_bytes = 0
        self.incarnation = 0


class BaseSession:
    """The session every TF 1.x program runs steps through."""

    def __init__(self, target="", graph=None, config=None):
        if graph is None:
            graph = ops.get_default_graph()
        if not isinstance(graph, ops.Graph):
            raise TypeError("graph must be a tf.Graph, but got %s" % type(graph))
        if config is not None and not isinstance(config, config_pb2.ConfigProto):
            raise TypeError("config must be a tf.ConfigProto, but got %s" % type(config))
        if isinstance(target, bytes):
            target = target.decode()
        self._graph = graph
        self._target = target
        self._config = config
        self._closed = False
        self._plans = {}
        self._c = _runnel.Session(target, config.SerializeToString() if config else b"")
        self._default_contexts = []

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self):
        return self._target

    def list_devices(self):
        return [_DeviceAttributes(n) for n in self._c.list_devices()]

    def as_default(self):
        return _SessionContext(self)

    def close(self):
        if not self._closed:
            self._closed = True
            try:
                self._c.close()
            except errors.OpError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _extend(self):
        """Sends the graph's new nodes to the C++ session (which serialises
        concurrent callers without holding the GIL)."""
        self._c.extend(self._graph._c)

    def _plan(self, fetches, feed_dict):
        feed_keys = tuple(feed_dict) if feed_dict else ()
        key = _hashable_key(fetches)
        cache_key = None
        if key is not None:
            try:
                cache_key = (key, feed_keys)
                plan = self._plans.get(cache_key)
            except TypeError:
                cache_key, plan = None, None
            if plan is not None:
                return plan
        plan = _RunPlan(self, fetches, feed_keys)
        if cache_key is not None:
            if len(self._plans) > 1024:
                self._plans.clear()
            self._plans[cache_key] = plan
        return plan

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the step that computes `fetches` (TF's Session.run)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        graph = self._graph
        if graph._c.num_node_ids() == 0 and not feed_dict and fetches in ([], (), {}):
            return fetches
        plan = self._plan(fetches, feed_dict)
        values = []
        if feed_dict:
            for i, v in enumerate(feed_dict.values()):
                if isinstance(v, ops.Tensor):
                    raise TypeError("The value of a feed cannot be a tf.Tensor object. "
                                    "Acceptable feed values include Python scalars, "
                                    "strings, lists, numpy ndarrays, or TensorHandles.")
                plan.check_feed(i, v)
                values.append(v)
        try:
            self._extend()
            if options is None and run_metadata is None:
                outputs = plan.callable(values)
            else:
                feeds = [(f[0], v, f[1]) for f, v in zip(plan.feeds, values)]
                outputs, md = self._c.run(
                    feeds, plan.fetch_names, plan.targets,
                    None if options is None else options.SerializeToString(),
                    run_metadata is not None)
                if run_metadata is not None and md is not None:
                    run_metadata.ParseFromString(md)
        except errors.OpError as e:
            self._name_error_ops(e)
            raise
        return plan.result(outputs)

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function running `fetches` with values for `feed_list` as its
        positional arguments (TF's Session.make_callable)."""
        feed_list = list(feed_list or [])
        plan = _RunPlan(self, fetches, feed_list)

        def call(*args, **kwargs):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(args) != len(feed_list):
                raise TypeError("Expected %d feed values, got %d" % (len(feed_list), len(args)))
            options = kwargs.pop("options", None)
            run_metadata = kwargs.pop("run_metadata", None)
            if kwargs:
                raise TypeError("Unexpected keyword arguments %s" % sorted(kwargs))
            if (options is not None or run_metadata is not None) and not accept_options:
                raise TypeError("options/run_metadata need accept_options=True")
            self._extend()
            if options is None and run_metadata is None:
                return plan.result(plan.callable(list(args)))
            feeds = [(f[0], v, f[1]) for f, v in zip(plan.feeds, args)]
            outputs, md = self._c.run(feeds, plan.fetch_names, plan.targets,
                                      None if options is None else options.SerializeToString(),
                                      run_metadata is not None)
            if run_metadata is not None and md is not None:
                run_metadata.ParseFromString(md)
            return plan.result(outputs)

        return call

    def _name_error_ops(self, e):
        """Points an OpError at the graph's op its message names."""
        for name in errors.names_in_message(e.message):
            if name in self._graph._ops:
                e._op = self._graph._ops[name]
                e._node_def = e._op.node_def
                break

    def partial_run_setup(self, fetches, feeds=None):
        """Starts a step whose feeds are given, and whose fetches are
        taken, over several partial_run calls (TF's
        Session.partial_run_setup). `fetches` is every fetch (and op to
        run) of the step, `feeds` every tensor it will feed; returns the
        step's handle."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        plan = _RunPlan(self, fetches, list(feeds or []), make_callable=False)
        try:
            self._extend()
            return self._c.prun_setup([f[0] for f in plan.feeds], plan.fetch_names,
                                      plan.targets)
        except errors.OpError as e:
            self._name_error_ops(e)
            raise

    def partial_run(self, handle, fetches, feed_dict=None):
        """Feeds `feed_dict` into the partial step `handle` and returns the
        values of `fetches` (in their structure; an op fetches None), as
        TF's Session.partial_run. Each feed and fetch named by
        partial_run_setup is given / taken once; the step ends after the
        last."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if isinstance(handle, bytes):
            handle = handle.decode()
        feed_dict = feed_dict or {}
        plan = _RunPlan(self, fetches, tuple(feed_dict), make_callable=False)
        feeds = []
        for i, (f, v) in enumerate(zip(plan.feeds, feed_dict.values())):
            if isinstance(v, ops.Tensor):
                raise TypeError("The value of a feed cannot be a tf.Tensor object.")
            plan.check_feed(i, v)
            feeds.append((f[0], v, f[1]))
        try:
            outputs = self._c.prun(handle, feeds, plan.fetch_names)
        except errors.OpError as e:
            self._name_error_ops(e)
            raise
        return plan.result(outputs)


class _SessionContext:
    def __init__(self, session):
        self._session = session
        self._graph_ctx = None

    def __enter__(self):
        _default_session_stack.stack.append(self._session)
        self._graph_ctx = self._session.graph.as_default()
        self._graph_ctx.__enter__()
        return self._session

    def __exit__(self, *exc):
        self._graph_ctx.__exit__(*exc)
        stack = _default_session_stack.stack
        if stack and stack[-1] is self._session:
            stack.pop()
        return False


class Session(BaseSession):
    """tf.Session: `with tf.Session() as sess:` makes it the default
    session (and its graph the default graph) and closes it at the end."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._context_stack = []

    def __enter__(self):
        ctx = self.as_default()
        ctx.__enter__()
        self._context_stack.append(ctx)
        return self

    def __exit__(self, exec_type, exec_value, exec_tb):
        ctx = self._context_stack.pop()
        ctx.__exit__(exec_type, exec_value, exec_tb)
        self.close()
        return False

    @staticmethod
    def reset(target, containers=None, config=None):
        raise NotImplementedError("tf.Session.reset: Reset of a remote master is not "
                                  "supported from Python yet")


class InteractiveSession(BaseSession):
    """A session that makes itself the default on construction (for shells)."""

    _active = weakref.WeakSet()

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._ctx = self.as_default()
        self._ctx.__enter__()
        InteractiveSession._active.add(self)

    def close(self):
        super().close()
        ctx, self._ctx = getattr(self, "_ctx", None), None
        if ctx is not None:
            try:
                ctx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass
