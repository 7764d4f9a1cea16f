#!/usr/bin/python3
"""Wire-level test of `runnel server`: TensorFlow's MasterService and
WorkerService, driven from Python over gRPC with nothing but the .proto files.

    /usr/bin/python3 runnel/distributed/wire_test.py [RUNNEL_BINARY [REPO_ROOT]]
        [--skip-known-bugs]

RUNNEL_BINARY defaults to REPO_ROOT/build/tools/runnel; REPO_ROOT defaults to
two directories above this script. Needs Debian's python3-grpcio and
python3-protobuf (hence /usr/bin/python3) and /usr/bin/protoc (3.21, the
version of python3-protobuf).

Python modules are generated from REPO_ROOT/proto/*.proto into a temporary
directory; requests are built as messages and sent with generic unary calls
under TensorFlow's method names ("/tensorflow.MasterService/<Method>",
"/tensorflow.WorkerService/<Method>"), as a TensorFlow client or master would.

Checked against one single-task server (worker=127.0.0.1:0):
  * CreateSession with a Python-built GraphDef (Placeholder x, Const c, Mul,
    Add); RunStep feeding x as tensor_content and as float_val, fetching
    "a:0" and "m"; values, dtypes, shapes and fetch names checked exactly.
  * ExtendSession (a new node, from CreateSession's graph_version), running
    the new node; a stale current_graph_version is refused.
  * ListDevices, with and without a session handle.
  * RunStep errors: unknown fetch -> INVALID_ARGUMENT, bad session handle ->
    ABORTED; with store_errors_in_response_body the RPC is OK and the body
    carries status_code and a message. A repeated request_id is refused.
  * MakeCallable / RunCallable / ReleaseCallable (and RunCallable after
    release fails).
  * CloseSession; RunStep on the closed handle fails; closing twice fails.
  * Unknown methods -> UNIMPLEMENTED; a body that is not a message ->
    INVALID_ARGUMENT.
  * WorkerService directly: GetStatus (name, device_type CPU, incarnation);
    RegisterGraph of a _Recv -> Mul -> _Send graph, RunGraph with a feed in
    `send` and the fetch in `recv_key`, CleanupGraph, DeregisterGraph;
    RecvTensor of what a _Send to another task left (values, shape, is_dead;
    a second RecvTensor waits until CleanupGraph; a repeated request_id is
    refused); a stale incarnation and a malformed key are refused.
Waits that must end (each on a server of its own; --skip-known-bugs skips
them, they found the two server bugs described in their messages):
  * RunStep with RunOptions.timeout_in_ms=1000 of a QueueDequeueV2 on an
    empty queue fails with DEADLINE_EXCEEDED in time; the session closes.
  * CleanupGraph of a step whose RunGraph waits on an unfed _Recv answers
    and ends that RunGraph (with an error), and the worker still works.
  * SIGTERM stops a server while a RecvTensor, or a RunGraph, waits for a
    tensor nobody sends (after its client gave up).
Against a 3-task cluster (ps:1, worker:2, one process each):
  * a VariableV2 on /job:ps/task:0 initialized by Assign from a Const, a Mul
    on /job:worker/task:1, fetched through the master of /job:worker/task:0;
    ListDevices through that master sees every task's CPU.

Every RPC has a deadline; every server process is stopped in a finally
block. Exit status 0 when everything passed.
"""

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import grpc

RPC_TIMEOUT = 30.0
START_TIMEOUT = 60.0

DT_FLOAT = 1
DT_INT32 = 3
DT_STRING = 7
CPU0 = "/job:worker/replica:0/task:0/device:CPU:0"


def die(msg):
    print("wire_test: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------
# Protos


def load_protos(repo_root, tmpdir):
    protos = sorted(
        os.path.join("proto", f)
        for f in os.listdir(os.path.join(repo_root, "proto"))
        if f.endswith(".proto"))
    if not protos:
        die("no .proto files under %s/proto" % repo_root)
    out = os.path.join(tmpdir, "py")
    os.makedirs(out)
    cmd = ["/usr/bin/protoc", "--python_out=" + out, "-I", repo_root] + protos
    r = subprocess.run(cmd, cwd=repo_root, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        die("protoc failed (%s):\n%s" % (" ".join(cmd), r.stderr))
    sys.path.insert(0, out)
    import importlib
    mods = {}
    for name in ("master", "worker", "config", "graph", "node_def",
                 "attr_value", "tensor", "tensor_shape", "named_tensor",
                 "error_codes", "types"):
        mods[name] = importlib.import_module("proto.%s_pb2" % name)
    return mods


class P:
    """The generated modules, filled in by main()."""


def float_tensor(values, shape=None, as_content=True):
    t = P.tensor.TensorProto()
    t.dtype = DT_FLOAT
    if shape is None:
        shape = [len(values)]
    for d in shape:
        t.tensor_shape.dim.add().size = d
    if as_content:
        t.tensor_content = struct.pack("<%df" % len(values), *values)
    else:
        t.float_val.extend(values)
    return t


def decode_float(t):
    """(shape, values) of a DT_FLOAT TensorProto, by TF's decoding rule."""
    if t.dtype != DT_FLOAT:
        raise AssertionError("expected dtype DT_FLOAT (1), got %d" % t.dtype)
    shape = [d.size for d in t.tensor_shape.dim]
    n = 1
    for d in shape:
        n *= d
    if t.tensor_content:
        if len(t.tensor_content) != 4 * n:
            raise AssertionError(
                "tensor_content has %d bytes for shape %s" %
                (len(t.tensor_content), shape))
        vals = list(struct.unpack("<%df" % n, t.tensor_content))
    else:
        vals = list(t.float_val)
        if not vals:
            vals = [0.0] * n
        elif len(vals) < n:
            vals = vals + [vals[-1]] * (n - len(vals))
        vals = vals[:n]
    return shape, vals


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def attr_type(v):
    a = P.attr_value.AttrValue()
    a.type = v
    return a


def attr_tensor(t):
    a = P.attr_value.AttrValue()
    a.tensor.CopyFrom(t)
    return a


def attr_shape(dims):
    a = P.attr_value.AttrValue()
    for d in dims:
        a.shape.dim.add().size = d
    return a


def attr_s(s):
    a = P.attr_value.AttrValue()
    a.s = s.encode()
    return a


def attr_i(i):
    a = P.attr_value.AttrValue()
    a.i = i
    return a


def attr_b(b):
    a = P.attr_value.AttrValue()
    a.b = b
    return a


def node(g, name, op, inputs=(), device="", **attrs):
    n = g.node.add()
    n.name = name
    n.op = op
    n.input.extend(inputs)
    if device:
        n.device = device
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


X_VALS = [1.5, -2.0, 3.25]
C_VALS = [2.0, 0.5, -4.0]


def small_graph():
    """x: Placeholder float [3]; c: Const; m = x * c; a = m + c."""
    g = P.graph.GraphDef()
    g.versions.producer = 27
    node(g, "x", "Placeholder", dtype=attr_type(DT_FLOAT),
         shape=attr_shape([3]))
    node(g, "c", "Const", dtype=attr_type(DT_FLOAT),
         value=attr_tensor(float_tensor(C_VALS)))
    node(g, "m", "Mul", ["x", "c"], T=attr_type(DT_FLOAT))
    node(g, "a", "Add", ["m", "c:0"], T=attr_type(DT_FLOAT))
    return g


def expected_m(x):
    return [f32(f32(a) * f32(b)) for a, b in zip(x, C_VALS)]


def expected_a(x):
    return [f32(m + f32(b)) for m, b in zip(expected_m(x), C_VALS)]


# --------------------------------------------------------------------------
# Servers


def free_ports(n):
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


class Server:
    LINE = re.compile(r"listening on 127\.0\.0\.1:(\d+) \(target grpc://")

    def __init__(self, binary, cluster, job, task, tmpdir):
        self.binary = binary
        self.args = [binary, "server", "--cluster", cluster, "--job", job,
                     "--task", str(task)]
        self.name = "/job:%s/replica:0/task:%d" % (job, task)
        self.log_path = os.path.join(
            tmpdir, "server-%s-%d-%d.log" % (job, task, int(time.time() * 1e6)))
        self.proc = None
        self.port = None
        self.first_line = None
        self.stopped = False

    def start(self):
        deadline = time.time() + START_TIMEOUT
        # The binary may be relinked by someone else right now: wait for it.
        while not os.access(self.binary, os.X_OK):
            if time.time() > deadline:
                raise AssertionError("%s is not an executable" % self.binary)
            time.sleep(1)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                     stderr=self.log, stdin=subprocess.DEVNULL)
        got = {}

        def read():
            got["line"] = self.proc.stdout.readline().decode(errors="replace")
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(max(1.0, deadline - time.time()))
        line = got.get("line")
        if line is None:
            raise AssertionError("%s printed nothing in %.0f s (log %s)" %
                                 (self.name, START_TIMEOUT, self.log_path))
        self.first_line = line.strip()
        m = self.LINE.search(line)
        if not m:
            self.proc.wait(timeout=5) if self.proc.poll() is None else None
            raise AssertionError(
                "%s did not start: stdout %r, exit %s, stderr:\n%s" %
                (self.name, line, self.proc.poll(), self.stderr_text()))
        if self.name not in line:
            raise AssertionError("%s announced %r" % (self.name, line))
        self.port = int(m.group(1))
        # Drain the rest of stdout so the server never blocks on it.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self):
        try:
            if not self.log.closed:
                self.log.flush()
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except (OSError, AttributeError, ValueError):
            return ""

    def stop(self, grace=15.0, quiet=False):
        """SIGTERM, then SIGKILL after `grace` seconds. Returns the exit
        status; self.ignored_sigterm tells whether it had to be killed."""
        self.ignored_sigterm = False
        if self.proc is None:
            return None
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.ignored_sigterm = True
                if not quiet:
                    print("wire_test: %s ignored SIGTERM for %.0f s; killing "
                          "it" % (self.name, grace), file=sys.stderr)
                self.proc.kill()
                self.proc.wait(timeout=15)
        try:
            self.log.close()
        except Exception:
            pass
        return self.proc.returncode


def start_cluster(binary, jobs, tmpdir, attempts=3):
    """jobs: [(job, ntasks)]. One process per task on fresh free ports."""
    last = None
    for _ in range(attempts):
        total = sum(n for _, n in jobs)
        ports = free_ports(total)
        spec, it = [], iter(ports)
        layout = []
        for job, n in jobs:
            addrs = []
            for t in range(n):
                p = next(it)
                addrs.append("127.0.0.1:%d" % p)
                layout.append((job, t, p))
            spec.append("%s=%s" % (job, ",".join(addrs)))
        cluster = ";".join(spec)
        servers = []
        try:
            for job, t, p in layout:
                s = Server(binary, cluster, job, t, tmpdir)
                servers.append(s)
                s.start()
                if s.port != p:
                    raise AssertionError("%s listens on %d, not %d" %
                                         (s.name, s.port, p))
            return servers
        except AssertionError as e:
            last = e
            for s in servers:
                s.stop()
            if "cannot listen" not in str(e) and "in use" not in str(e):
                raise
    raise last


# --------------------------------------------------------------------------
# Calls


class Client:
    def __init__(self, port):
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % port)
        grpc.channel_ready_future(self.channel).result(timeout=RPC_TIMEOUT)

    def call(self, service, method, request, response_cls,
             timeout=RPC_TIMEOUT):
        fn = self.channel.unary_unary(
            "/tensorflow.%s/%s" % (service, method),
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_cls.FromString)
        return fn(request, timeout=timeout)

    def master(self, method, request, timeout=RPC_TIMEOUT):
        cls = getattr(P.master, method + "Response")
        return self.call("MasterService", method, request, cls, timeout)

    def worker(self, method, request, timeout=RPC_TIMEOUT):
        cls = getattr(P.worker, method + "Response")
        return self.call("WorkerService", method, request, cls, timeout)

    def expect_error(self, code, service, method, request, response_cls=None,
                     timeout=RPC_TIMEOUT):
        """The RPC fails with `code` (a grpc.StatusCode, or a set); returns
        the error's details."""
        mod = P.master if service == "MasterService" else P.worker
        cls = response_cls or getattr(mod, method + "Response", None) or \
            P.master.CloseSessionResponse
        try:
            self.call(service, method, request, cls, timeout)
        except grpc.RpcError as e:
            codes = code if isinstance(code, (set, frozenset)) else {code}
            if e.code() not in codes:
                raise AssertionError(
                    "%s: expected %s, got %s: %s" %
                    (method, "/".join(sorted(c.name for c in codes)),
                     e.code().name, e.details()))
            return e.code(), e.details() or ""
        raise AssertionError("%s succeeded; expected %s" %
                             (method, getattr(code, "name", code)))

    def close(self):
        self.channel.close()


def run_step(client, handle, feeds, fetches, targets=(), **kw):
    req = P.master.RunStepRequest(session_handle=handle)
    for name, t in feeds:
        f = req.feed.add()
        f.name = name
        f.tensor.CopyFrom(t)
    req.fetch.extend(fetches)
    req.target.extend(targets)
    for k, v in kw.items():
        setattr(req, k, v)
    return client.master("RunStep", req)


def check_eq(what, got, want):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def check_fetch(resp_tensor, name, shape, values):
    check_eq("fetch name", resp_tensor.name, name)
    s, v = decode_float(resp_tensor.tensor)
    check_eq("shape of %s" % name, s, shape)
    check_eq("values of %s" % name, v, values)


# --------------------------------------------------------------------------
# Checks against one single-task server


class Single:
    def __init__(self, client, server):
        self.c = client
        self.server = server
        self.handle = None
        self.version = None

    def t_create_and_run(self):
        resp = self.c.master("CreateSession",
                             P.master.CreateSessionRequest(
                                 graph_def=small_graph()))
        if not resp.session_handle:
            raise AssertionError("empty session_handle")
        self.handle = resp.session_handle
        self.version = resp.graph_version
        r = run_step(self.c, self.handle, [("x:0", float_tensor(X_VALS))],
                     ["a:0", "m"])
        check_eq("number of fetched tensors", len(r.tensor), 2)
        check_fetch(r.tensor[0], "a:0", [3], expected_a(X_VALS))
        check_fetch(r.tensor[1], "m", [3], expected_m(X_VALS))
        check_eq("status_code of a good step", r.status_code, 0)

    def t_feed_float_val(self):
        x = [0.25, 10.0, -1.0]
        r = run_step(self.c, self.handle,
                     [("x", float_tensor(x, as_content=False))], ["a"])
        check_fetch(r.tensor[0], "a", [3], expected_a(x))
        # A short float_val fills the rest with its last value (TF's rule).
        r = run_step(self.c, self.handle,
                     [("x", float_tensor([7.0], shape=[3], as_content=False))],
                     ["m:0"])
        check_fetch(r.tensor[0], "m:0", [3], expected_m([7.0] * 3))

    def t_fetch_const_without_feed(self):
        r = run_step(self.c, self.handle, [], ["c:0"])
        check_fetch(r.tensor[0], "c:0", [3], C_VALS)

    def t_extend(self):
        g = P.graph.GraphDef()
        node(g, "e", "Mul", ["a", "a"], T=attr_type(DT_FLOAT))
        req = P.master.ExtendSessionRequest(session_handle=self.handle,
                                            graph_def=g,
                                            current_graph_version=self.version)
        resp = self.c.master("ExtendSession", req)
        if resp.new_graph_version <= self.version:
            raise AssertionError("new_graph_version %d is not above %d" %
                                 (resp.new_graph_version, self.version))
        old, self.version = self.version, resp.new_graph_version
        r = run_step(self.c, self.handle, [("x:0", float_tensor(X_VALS))],
                     ["e:0", "a:0"])
        want_a = expected_a(X_VALS)
        check_fetch(r.tensor[0], "e:0", [3], [f32(v * v) for v in want_a])
        check_fetch(r.tensor[1], "a:0", [3], want_a)
        # A stale version is refused (TF: ABORTED, "Current version is ...").
        g2 = P.graph.GraphDef()
        node(g2, "e2", "Add", ["a", "a"], T=attr_type(DT_FLOAT))
        req = P.master.ExtendSessionRequest(session_handle=self.handle,
                                            graph_def=g2,
                                            current_graph_version=old)
        self.c.expect_error({grpc.StatusCode.ABORTED,
                             grpc.StatusCode.FAILED_PRECONDITION},
                            "MasterService", "ExtendSession", req)

    def t_list_devices(self):
        for handle in (self.handle, ""):
            resp = self.c.master("ListDevices",
                                 P.master.ListDevicesRequest(
                                     session_handle=handle))
            names = [d.name for d in resp.local_device]
            if CPU0 not in names:
                raise AssertionError("ListDevices(%r): local_device %s lacks %s"
                                     % (handle, names, CPU0))
            for d in resp.local_device:
                if d.name == CPU0:
                    check_eq("device_type", d.device_type, "CPU")
            check_eq("remote_device of a lone task",
                     [d.name for d in resp.remote_device], [])

    def t_run_errors(self):
        feeds = [("x:0", float_tensor(X_VALS))]
        req = P.master.RunStepRequest(session_handle=self.handle)
        f = req.feed.add()
        f.name = "x:0"
        f.tensor.CopyFrom(float_tensor(X_VALS))
        req.fetch.append("no_such_node:0")
        _, msg = self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT,
                                     "MasterService", "RunStep", req)
        if not msg:
            raise AssertionError("unknown fetch: empty error message")
        bad = P.master.RunStepRequest(session_handle="no-such-session")
        bad.fetch.append("a:0")
        self.c.expect_error(grpc.StatusCode.ABORTED, "MasterService",
                            "RunStep", bad)
        # The same, with the error in the response body.
        req.store_errors_in_response_body = True
        r = self.c.master("RunStep", req)
        check_eq("status_code (unknown fetch, in body)", r.status_code,
                 P.error_codes.INVALID_ARGUMENT)
        if not r.status_error_message:
            raise AssertionError("no status_error_message in the body")
        check_eq("tensors of a failed step", len(r.tensor), 0)
        bad.store_errors_in_response_body = True
        r = self.c.master("RunStep", bad)
        check_eq("status_code (bad handle, in body)", r.status_code,
                 P.error_codes.ABORTED)
        if not r.status_error_message:
            raise AssertionError("no status_error_message in the body")
        # A feed of the wrong dtype.
        wrong = P.tensor.TensorProto(dtype=DT_INT32)
        wrong.tensor_shape.dim.add().size = 3
        wrong.int_val.extend([1, 2, 3])
        req = P.master.RunStepRequest(session_handle=self.handle)
        f = req.feed.add()
        f.name = "x:0"
        f.tensor.CopyFrom(wrong)
        req.fetch.append("a:0")
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "RunStep", req)
        # No fetch and no target.
        req = P.master.RunStepRequest(session_handle=self.handle)
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "RunStep", req)
        # A retried request_id is refused; a new one works.
        rid = 0x5eed0000 + (os.getpid() & 0xffff)
        r = run_step(self.c, self.handle, feeds, ["a:0"], request_id=rid)
        check_fetch(r.tensor[0], "a:0", [3], expected_a(X_VALS))
        req = P.master.RunStepRequest(session_handle=self.handle,
                                      request_id=rid)
        req.feed.add().CopyFrom(r.tensor[0])  # irrelevant: refused first
        req.fetch.append("a:0")
        self.c.expect_error(grpc.StatusCode.ABORTED, "MasterService",
                            "RunStep", req)
        # The session still works after all of that.
        r = run_step(self.c, self.handle, feeds, ["a:0"])
        check_fetch(r.tensor[0], "a:0", [3], expected_a(X_VALS))

    def t_callables(self):
        opts = P.config.CallableOptions()
        opts.feed.append("x:0")
        opts.fetch.extend(["a:0", "m:0"])
        resp = self.c.master("MakeCallable", P.master.MakeCallableRequest(
            session_handle=self.handle, options=opts))
        h = resp.handle
        for x in (X_VALS, [-0.5, 4.0, 100.0]):
            r = self.c.master("RunCallable", P.master.RunCallableRequest(
                session_handle=self.handle, handle=h,
                feed=[float_tensor(x)]))
            check_eq("RunCallable fetch count", len(r.fetch), 2)
            s, v = decode_float(r.fetch[0])
            check_eq("RunCallable a shape", s, [3])
            check_eq("RunCallable a", v, expected_a(x))
            s, v = decode_float(r.fetch[1])
            check_eq("RunCallable m", v, expected_m(x))
        # Wrong number of feeds.
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "RunCallable", P.master.RunCallableRequest(
                                session_handle=self.handle, handle=h))
        self.c.master("ReleaseCallable", P.master.ReleaseCallableRequest(
            session_handle=self.handle, handle=h))
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "RunCallable", P.master.RunCallableRequest(
                                session_handle=self.handle, handle=h,
                                feed=[float_tensor(X_VALS)]))
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "ReleaseCallable", P.master.ReleaseCallableRequest(
                                session_handle=self.handle, handle=h))
        # A callable with neither fetch nor target is refused.
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "MakeCallable", P.master.MakeCallableRequest(
                                session_handle=self.handle,
                                options=P.config.CallableOptions()))

    def t_partial_run(self):
        # PartialRunSetup, then RunSteps with its handle: m is fetched
        # before a, within one step, and the handle ends with the step.
        resp = self.c.master("PartialRunSetup",
                             P.master.PartialRunSetupRequest(
                                 session_handle=self.handle, feed=["x:0"],
                                 fetch=["m:0", "a:0"]))
        h = resp.partial_run_handle
        if not h:
            raise AssertionError("empty partial_run_handle")
        r = run_step(self.c, self.handle, [("x:0", float_tensor(X_VALS))],
                     ["m:0"], partial_run_handle=h)
        check_fetch(r.tensor[0], "m:0", [3], expected_m(X_VALS))
        r = run_step(self.c, self.handle, [], ["a:0"], partial_run_handle=h)
        check_fetch(r.tensor[0], "a:0", [3], expected_a(X_VALS))
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MasterService",
                            "RunStep", P.master.RunStepRequest(
                                session_handle=self.handle, fetch=["a:0"],
                                partial_run_handle=h))

    def t_close(self):
        self.c.master("CloseSession", P.master.CloseSessionRequest(
            session_handle=self.handle))
        req = P.master.RunStepRequest(session_handle=self.handle)
        req.feed.add(name="x:0").tensor.CopyFrom(float_tensor(X_VALS))
        req.fetch.append("a:0")
        self.c.expect_error({grpc.StatusCode.ABORTED,
                             grpc.StatusCode.CANCELLED,
                             grpc.StatusCode.NOT_FOUND,
                             grpc.StatusCode.FAILED_PRECONDITION},
                            "MasterService", "RunStep", req)
        self.c.expect_error({grpc.StatusCode.ABORTED,
                             grpc.StatusCode.NOT_FOUND},
                            "MasterService", "CloseSession",
                            P.master.CloseSessionRequest(
                                session_handle=self.handle))

    def t_bad_create(self):
        # An op that does not exist, and an input that does not exist.
        g = P.graph.GraphDef()
        node(g, "z", "NoSuchOpAnywhere")
        self.c.expect_error({grpc.StatusCode.INVALID_ARGUMENT,
                             grpc.StatusCode.NOT_FOUND}, "MasterService",
                            "CreateSession",
                            P.master.CreateSessionRequest(graph_def=g))
        g = P.graph.GraphDef()
        node(g, "z", "Neg", ["missing"], T=attr_type(DT_FLOAT))
        self.c.expect_error({grpc.StatusCode.INVALID_ARGUMENT,
                             grpc.StatusCode.NOT_FOUND}, "MasterService",
                            "CreateSession",
                            P.master.CreateSessionRequest(graph_def=g))

    def t_unknown_methods(self):
        for path in ("/tensorflow.MasterService/Nope",
                     "/tensorflow.WorkerService/Nope",
                     "/tensorflow.NoService/RunStep",
                     "/runnel.MasterService/RunStep"):
            fn = self.c.channel.unary_unary(path)
            try:
                fn(b"", timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                    raise AssertionError("%s: expected UNIMPLEMENTED, got %s"
                                         % (path, e.code().name))
                continue
            raise AssertionError("%s succeeded" % path)

    def t_garbage_body(self):
        # 0xff... is not a valid protobuf (field 0 / bad varint).
        fn = self.c.channel.unary_unary("/tensorflow.MasterService/RunStep")
        for body in (b"\xff\xff\xff", b"\x0a\x10short"):
            try:
                fn(body, timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
                    raise AssertionError("garbage body %r: got %s" %
                                         (body, e.code().name))
                continue
            raise AssertionError("garbage body %r accepted" % body)

    def t_worker_get_status(self):
        resp = self.c.worker("GetStatus", P.worker.GetStatusRequest())
        names = [d.name for d in resp.device_attributes]
        if CPU0 not in names:
            raise AssertionError("GetStatus devices %s lack %s" % (names, CPU0))
        for d in resp.device_attributes:
            if d.name == CPU0:
                check_eq("device_type", d.device_type, "CPU")
                if d.incarnation == 0:
                    raise AssertionError("incarnation is 0")
                self.incarnation = d.incarnation
        # Stable across calls.
        resp2 = self.c.worker("GetStatus", P.worker.GetStatusRequest())
        check_eq("incarnation on a second GetStatus",
                 [d.incarnation for d in resp2.device_attributes
                  if d.name == CPU0], [self.incarnation])

    def t_worker_register_run(self):
        inc = self.incarnation
        key_in = "%s;%016x;%s;feed/x:0;0:0" % (CPU0, inc, CPU0)
        key_out = "%s;%016x;%s;fetch/y:0;0:0" % (CPU0, inc, CPU0)
        g = P.graph.GraphDef()
        common = dict(send_device=attr_s(CPU0),
                      send_device_incarnation=attr_i(inc - (1 << 64)
                                                     if inc >= 1 << 63
                                                     else inc),
                      recv_device=attr_s(CPU0), client_terminated=attr_b(True))
        node(g, "x", "_Recv", device=CPU0, tensor_type=attr_type(DT_FLOAT),
             tensor_name=attr_s("feed/x:0"), **common)
        node(g, "c", "Const", device=CPU0, dtype=attr_type(DT_FLOAT),
             value=attr_tensor(float_tensor(C_VALS)))
        node(g, "y", "Mul", ["x", "c"], device=CPU0, T=attr_type(DT_FLOAT))
        node(g, "y_send", "_Send", ["y"], device=CPU0, T=attr_type(DT_FLOAT),
             tensor_name=attr_s("fetch/y:0"), **common)
        gh = self.c.worker("RegisterGraph", P.worker.RegisterGraphRequest(
            graph_def=g)).graph_handle
        if not gh:
            raise AssertionError("empty graph_handle")
        for step_id, x in ((0x1234567, X_VALS), (0x7654321, [3.0, 3.0, -1.0])):
            req = P.worker.RunGraphRequest(graph_handle=gh, step_id=step_id)
            req.send.add(name=key_in).tensor.CopyFrom(float_tensor(x))
            req.recv_key.append(key_out)
            r = self.c.worker("RunGraph", req)
            check_eq("RunGraph recv count", len(r.recv), 1)
            check_fetch(r.recv[0], key_out, [3], expected_m(x))
            self.c.worker("CleanupGraph",
                          P.worker.CleanupGraphRequest(step_id=step_id))
        # A feed of another dtype than the _Recv takes: the caller's error,
        # named (it used to reach the kernel and come back INTERNAL).
        req = P.worker.RunGraphRequest(graph_handle=gh, step_id=0x1357)
        wrong = P.tensor.TensorProto(dtype=DT_INT32)
        wrong.tensor_shape.dim.add().size = 3
        wrong.int_val.extend([1, 2, 3])
        req.send.add(name=key_in).tensor.CopyFrom(wrong)
        req.recv_key.append(key_out)
        _, msg = self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT,
                                     "WorkerService", "RunGraph", req)
        if "int32" not in msg or "feed/x:0" not in msg:
            raise AssertionError("wrong-dtype feed error %r names neither "
                                 "the dtype nor the feed" % msg)
        self.c.worker("CleanupGraph",
                      P.worker.CleanupGraphRequest(step_id=0x1357))
        # An unknown graph handle.
        self.c.expect_error(grpc.StatusCode.NOT_FOUND, "WorkerService",
                            "RunGraph", P.worker.RunGraphRequest(
                                graph_handle="nope", step_id=5))
        # A malformed recv key.
        self.c.expect_error(grpc.StatusCode.INVALID_ARGUMENT, "WorkerService",
                            "RecvTensor", P.worker.RecvTensorRequest(
                                step_id=1, rendezvous_key="not;a;key"))
        # A key with a stale incarnation.
        stale = "%s;%016x;%s;edge;0:0" % (CPU0, (inc ^ 1), CPU0)
        self.c.expect_error(grpc.StatusCode.ABORTED, "WorkerService",
                            "RecvTensor", P.worker.RecvTensorRequest(
                                step_id=1, rendezvous_key=stale))
        self.c.worker("DeregisterGraph", P.worker.DeregisterGraphRequest(
            graph_handle=gh))
        self.c.expect_error(grpc.StatusCode.NOT_FOUND, "WorkerService",
                            "DeregisterGraph", P.worker.DeregisterGraphRequest(
                                graph_handle=gh))

    def t_worker_recv_tensor(self):
        # A _Send whose receiver is on another task leaves its tensor in the
        # step's rendezvous; RecvTensor (what that task would call) takes it.
        inc = self.incarnation
        other = "/job:worker/replica:0/task:1/device:CPU:0"
        vals = [0.5, -1.25, 1e30, -0.0, 7.0, 3.5]
        g = P.graph.GraphDef()
        node(g, "k", "Const", device=CPU0, dtype=attr_type(DT_FLOAT),
             value=attr_tensor(float_tensor(vals, shape=[2, 3])))
        node(g, "k_send", "_Send", ["k"], device=CPU0, T=attr_type(DT_FLOAT),
             tensor_name=attr_s("edge_1_k"), send_device=attr_s(CPU0),
             send_device_incarnation=attr_i(inc - (1 << 64)
                                            if inc >= 1 << 63 else inc),
             recv_device=attr_s(other), client_terminated=attr_b(False))
        gh = self.c.worker("RegisterGraph", P.worker.RegisterGraphRequest(
            graph_def=g)).graph_handle
        key = "%s;%016x;%s;edge_1_k;0:0" % (CPU0, inc, other)
        for step_id in (0x5151, 0x5152):
            self.c.worker("RunGraph", P.worker.RunGraphRequest(
                graph_handle=gh, step_id=step_id))
            r = self.c.worker("RecvTensor", P.worker.RecvTensorRequest(
                step_id=step_id, rendezvous_key=key,
                request_id=step_id * 3 + (os.getpid() << 20)))
            check_eq("RecvTensor is_dead", r.is_dead, False)
            s_, v = decode_float(r.tensor)
            check_eq("RecvTensor shape", s_, [2, 3])
            check_eq("RecvTensor values", v, [f32(x) for x in vals])
            # Taken: a second RecvTensor of that key waits; the step's
            # cleanup ends it.
            fut = future_call(self.c, "RecvTensor", P.worker.RecvTensorRequest(
                step_id=step_id, rendezvous_key=key), timeout=RPC_TIMEOUT)
            time.sleep(0.2)
            if fut.done():
                raise AssertionError("a second RecvTensor of a taken tensor "
                                     "returned: %r" % (fut.exception(),))
            self.c.worker("CleanupGraph",
                          P.worker.CleanupGraphRequest(step_id=step_id))
            try:
                fut.result(timeout=RPC_TIMEOUT)
                raise AssertionError("a second RecvTensor of a taken tensor "
                                     "succeeded")
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise AssertionError("CleanupGraph did not end it")
        # A retried request_id is refused.
        self.c.expect_error(grpc.StatusCode.ABORTED, "WorkerService",
                            "RecvTensor", P.worker.RecvTensorRequest(
                                step_id=0x5152, rendezvous_key=key,
                                request_id=0x5152 * 3 + (os.getpid() << 20)))

    def t_worker_recv_waits_then_cleanup(self):
        # A RecvTensor for a tensor nobody sends waits; CleanupGraph of its
        # step ends the wait with an error (not a hang, not a crash).
        inc = self.incarnation
        key = "%s;%016x;%s;never_sent;0:0" % (CPU0, inc, CPU0)
        fn = self.c.channel.unary_unary(
            "/tensorflow.WorkerService/RecvTensor",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=P.worker.RecvTensorResponse.FromString)
        fut = fn.future(P.worker.RecvTensorRequest(step_id=424242,
                                                   rendezvous_key=key),
                        timeout=RPC_TIMEOUT)
        time.sleep(0.5)
        if fut.done():
            raise AssertionError("RecvTensor of an unsent tensor returned "
                                 "at once: %r" % (fut.exception(),))
        self.c.worker("CleanupGraph",
                      P.worker.CleanupGraphRequest(step_id=424242))
        try:
            fut.result(timeout=RPC_TIMEOUT)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise AssertionError("CleanupGraph did not end the RecvTensor")
            return
        raise AssertionError("RecvTensor of an unsent tensor succeeded")

    def t_worker_sessions(self):
        h = "wire-test-session-%d" % os.getpid()
        self.c.worker("CreateWorkerSession",
                      P.worker.CreateWorkerSessionRequest(session_handle=h))
        self.c.expect_error(grpc.StatusCode.ALREADY_EXISTS, "WorkerService",
                            "CreateWorkerSession",
                            P.worker.CreateWorkerSessionRequest(
                                session_handle=h))
        self.c.expect_error(grpc.StatusCode.NOT_FOUND, "WorkerService",
                            "RegisterGraph", P.worker.RegisterGraphRequest(
                                session_handle=h + "-other",
                                create_worker_session_called=True,
                                graph_def=P.graph.GraphDef()))
        self.c.worker("DeleteWorkerSession",
                      P.worker.DeleteWorkerSessionRequest(session_handle=h))
        self.c.expect_error(grpc.StatusCode.NOT_FOUND, "WorkerService",
                            "DeleteWorkerSession",
                            P.worker.DeleteWorkerSessionRequest(
                                session_handle=h))

    def tests(self):
        return [
            ("CreateSession+RunStep (tensor_content feed)",
             self.t_create_and_run),
            ("RunStep with float_val feeds", self.t_feed_float_val),
            ("RunStep fetching a Const, no feed",
             self.t_fetch_const_without_feed),
            ("ExtendSession + run the new node", self.t_extend),
            ("ListDevices", self.t_list_devices),
            ("RunStep errors (status and in body)", self.t_run_errors),
            ("MakeCallable/RunCallable/ReleaseCallable", self.t_callables),
            ("PartialRunSetup and partial RunSteps", self.t_partial_run),
            ("CloseSession, then RunStep fails", self.t_close),
            ("CreateSession with a bad graph fails", self.t_bad_create),
            ("unknown methods -> UNIMPLEMENTED", self.t_unknown_methods),
            ("undecodable body -> INVALID_ARGUMENT", self.t_garbage_body),
            ("WorkerService.GetStatus", self.t_worker_get_status),
            ("WorkerService RegisterGraph/RunGraph/RecvTensor errors",
             self.t_worker_register_run),
            ("WorkerService RunGraph _Send -> RecvTensor value",
             self.t_worker_recv_tensor),
            ("WorkerService RecvTensor waits, CleanupGraph ends it",
             self.t_worker_recv_waits_then_cleanup),
            ("WorkerService Create/DeleteWorkerSession",
             self.t_worker_sessions),
        ]


# --------------------------------------------------------------------------
# Waits that a step's cleanup or a shutdown must end (each on its own server,
# which a failure may leave wedged)


def waiting_recv_graph(inc):
    """One _Recv of a client feed that nobody sends."""
    g = P.graph.GraphDef()
    node(g, "x", "_Recv", device=CPU0, tensor_type=attr_type(DT_FLOAT),
         tensor_name=attr_s("feed/x:0"), send_device=attr_s(CPU0),
         send_device_incarnation=attr_i(inc - (1 << 64) if inc >= 1 << 63
                                        else inc),
         recv_device=attr_s(CPU0), client_terminated=attr_b(True))
    return g


def cpu0_incarnation(client):
    resp = client.worker("GetStatus", P.worker.GetStatusRequest())
    return [d.incarnation for d in resp.device_attributes if d.name == CPU0][0]


def future_call(client, method, req, timeout):
    fn = client.channel.unary_unary(
        "/tensorflow.WorkerService/" + method,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=getattr(P.worker,
                                      method + "Response").FromString)
    return fn.future(req, timeout=timeout)


def t_cleanup_ends_waiting_rungraph(binary, tmpdir, servers):
    """RunGraph of a graph whose _Recv is never fed waits; CleanupGraph of
    its step must answer and end it (the master does this when a step
    fails on another task)."""
    srv = Server(binary, "worker=127.0.0.1:0", "worker", 0, tmpdir)
    servers.append(srv)
    srv.start()
    c = Client(srv.port)
    try:
        gh = c.worker("RegisterGraph", P.worker.RegisterGraphRequest(
            graph_def=waiting_recv_graph(cpu0_incarnation(c)))).graph_handle
        fut = future_call(c, "RunGraph", P.worker.RunGraphRequest(
            graph_handle=gh, step_id=0x77), timeout=20)
        time.sleep(0.5)
        if fut.done():
            raise AssertionError("RunGraph of an unfed _Recv returned at once: "
                                 "%r" % (fut.exception(),))
        try:
            c.worker("CleanupGraph", P.worker.CleanupGraphRequest(step_id=0x77),
                     timeout=5)
        except grpc.RpcError as e:
            raise AssertionError(
                "CleanupGraph(step_id=0x77) while RunGraph(step_id=0x77) waits "
                "on an unfed _Recv: %s (%s) -- the worker deadlocks; later "
                "CleanupGraphs hang too and SIGTERM no longer stops the "
                "server" % (e.code().name, e.details()))
        try:
            fut.result(timeout=10)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise AssertionError("CleanupGraph did not end the RunGraph")
        else:
            raise AssertionError("the cleaned-up RunGraph succeeded")
        c.worker("CleanupGraph", P.worker.CleanupGraphRequest(step_id=0x78),
                 timeout=5)
    finally:
        c.close()
        rc = srv.stop(grace=10, quiet=True)
    if srv.ignored_sigterm:
        raise AssertionError("the server ignored SIGTERM for 10 s afterwards")
    if rc != 0:
        raise AssertionError("the server exited with status %s" % rc)


def t_sigterm_with_pending(method):
    def check(binary, tmpdir, servers):
        """A RecvTensor or RunGraph still waits on the server (its client
        gave up); SIGTERM must still stop the server."""
        srv = Server(binary, "worker=127.0.0.1:0", "worker", 0, tmpdir)
        servers.append(srv)
        srv.start()
        c = Client(srv.port)
        try:
            inc = cpu0_incarnation(c)
            if method == "RecvTensor":
                req = P.worker.RecvTensorRequest(
                    step_id=0x99, rendezvous_key="%s;%016x;%s;never_sent;0:0"
                    % (CPU0, inc, CPU0))
            else:
                gh = c.worker("RegisterGraph", P.worker.RegisterGraphRequest(
                    graph_def=waiting_recv_graph(inc))).graph_handle
                req = P.worker.RunGraphRequest(graph_handle=gh, step_id=0x99)
            fut = future_call(c, method, req, timeout=1)
            try:
                fut.result(timeout=10)
                raise AssertionError("%s of an unsent tensor succeeded" %
                                     method)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise AssertionError("%s of an unsent tensor: %s" %
                                         (method, e.code().name))
        finally:
            c.close()
        t0 = time.time()
        rc = srv.stop(grace=10, quiet=True)
        if srv.ignored_sigterm:
            raise AssertionError(
                "the server was still running 10 s after SIGTERM, with a %s "
                "waiting for a tensor nobody sends (grpc::Server::Shutdown "
                "waits for a handler that never calls done)" % method)
        if rc != 0:
            raise AssertionError("the server exited with status %s after "
                                 "%.1f s" % (rc, time.time() - t0))
    return check


def t_step_timeout_on_blocked_dequeue(binary, tmpdir, servers):
    """The client's own API: RunStep with RunOptions.timeout_in_ms=1000 of a
    QueueDequeueV2 on an empty queue must fail with DEADLINE_EXCEEDED after
    about a second, and the session must still close."""
    srv = Server(binary, "worker=127.0.0.1:0", "worker", 0, tmpdir)
    servers.append(srv)
    srv.start()
    c = Client(srv.port)
    try:
        g = P.graph.GraphDef()
        q = node(g, "q", "FIFOQueueV2", capacity=attr_i(10))
        q.attr["component_types"].list.type.append(DT_FLOAT)
        d = node(g, "d", "QueueDequeueV2", ["q"])
        d.attr["component_types"].list.type.append(DT_FLOAT)
        h = c.master("CreateSession", P.master.CreateSessionRequest(
            graph_def=g)).session_handle
        req = P.master.RunStepRequest(session_handle=h, fetch=["d:0"])
        req.options.timeout_in_ms = 1000
        t0 = time.time()
        try:
            c.master("RunStep", req, timeout=15)
            raise AssertionError("a dequeue from an empty queue succeeded")
        except grpc.RpcError as e:
            took = time.time() - t0
            if took > 10:
                raise AssertionError(
                    "RunStep(timeout_in_ms=1000) of a blocked QueueDequeueV2 "
                    "had not answered after %.0f s (%s): the master's step "
                    "timeout calls CleanupGraph, which deadlocks the worker "
                    "(Worker::CleanupGraphAsync cancels under Worker::mu_; "
                    "the cancelled RunGraph's done callback locks mu_ again)"
                    % (took, e.code().name))
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise AssertionError("RunStep past its timeout_in_ms: %s: %s"
                                     % (e.code().name, e.details()))
        c.master("CloseSession", P.master.CloseSessionRequest(
            session_handle=h), timeout=10)
        c.worker("CleanupGraph", P.worker.CleanupGraphRequest(step_id=0x79),
                 timeout=5)
    finally:
        c.close()
        srv.stop(grace=10, quiet=True)
    if srv.ignored_sigterm:
        raise AssertionError("the server ignored SIGTERM for 10 s afterwards")


KNOWN_BUG_CHECKS = [
    ("RunStep timeout_in_ms ends a blocked QueueDequeueV2",
     t_step_timeout_on_blocked_dequeue),
    ("CleanupGraph ends a RunGraph waiting on an unfed _Recv",
     t_cleanup_ends_waiting_rungraph),
    ("SIGTERM stops a server with a RecvTensor pending",
     t_sigterm_with_pending("RecvTensor")),
    ("SIGTERM stops a server with a RunGraph pending",
     t_sigterm_with_pending("RunGraph")),
]


# --------------------------------------------------------------------------
# The 3-task cluster


PS0 = "/job:ps/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"


def cluster_run(client):
    v_init = [1.5, -3.0, 0.25, 8.0]
    k = [2.0, 4.0, -1.0, 0.5]
    g = P.graph.GraphDef()
    node(g, "v", "VariableV2", device=PS0, dtype=attr_type(DT_FLOAT),
         shape=attr_shape([4]), container=attr_s(""),
         shared_name=attr_s("wire_test_v_%d" % os.getpid()))
    node(g, "init_value", "Const", device=PS0, dtype=attr_type(DT_FLOAT),
         value=attr_tensor(float_tensor(v_init)))
    node(g, "init", "Assign", ["v", "init_value"], device=PS0,
         T=attr_type(DT_FLOAT), validate_shape=attr_b(True),
         use_locking=attr_b(True))
    node(g, "k", "Const", device=W1, dtype=attr_type(DT_FLOAT),
         value=attr_tensor(float_tensor(k)))
    node(g, "y", "Mul", ["v", "k"], device=W1, T=attr_type(DT_FLOAT))
    resp = client.master("CreateSession",
                         P.master.CreateSessionRequest(graph_def=g))
    h = resp.session_handle
    try:
        run_step(client, h, [], [], targets=["init"])
        want = [f32(a * b) for a, b in zip(v_init, k)]
        for _ in range(2):
            r = run_step(client, h, [], ["y:0"])
            check_fetch(r.tensor[0], "y:0", [4], want)
        # The placement really spans the tasks: the partition graphs (RunOptions
        # output_partition_graphs) put y on worker 1 and v on the ps.
        req = P.master.RunStepRequest(session_handle=h)
        req.fetch.append("y:0")
        req.options.output_partition_graphs = True
        r = client.master("RunStep", req)
        check_fetch(r.tensor[0], "y:0", [4], want)
        where = {}
        for pg in r.metadata.partition_graphs:
            for n in pg.node:
                where.setdefault(n.name, set()).add(n.device)
        if not r.metadata.partition_graphs:
            raise AssertionError("no partition_graphs in RunMetadata")
        check_eq("device of y in the partition graphs", where.get("y"), {W1})
        check_eq("device of v in the partition graphs", where.get("v"), {PS0})
        # The variable's value through the master, too.
        r = run_step(client, h, [], ["v:0"])
        check_fetch(r.tensor[0], "v:0", [4], v_init)
        lst = client.master("ListDevices",
                            P.master.ListDevicesRequest(session_handle=h))
        local = [d.name for d in lst.local_device]
        remote = sorted(d.name for d in lst.remote_device)
        if CPU0 not in local:
            raise AssertionError("cluster ListDevices local %s lacks %s" %
                                 (local, CPU0))
        for d in (PS0, W1):
            if d not in remote:
                raise AssertionError("cluster ListDevices remote %s lacks %s"
                                     % (remote, d))
    finally:
        client.master("CloseSession",
                      P.master.CloseSessionRequest(session_handle=h))


# --------------------------------------------------------------------------


def main():
    sys.stdout.reconfigure(line_buffering=True)
    here = os.path.dirname(os.path.abspath(__file__))
    flags = [a for a in sys.argv[1:] if a.startswith("-")]
    argv = [a for a in sys.argv[1:] if not a.startswith("-")]
    if len(argv) > 2 or any(f not in ("--skip-known-bugs",) for f in flags):
        print(__doc__)
        return 2
    skip_waits = "--skip-known-bugs" in flags
    repo_root = os.path.abspath(argv[1]) if len(argv) > 1 else \
        os.path.dirname(os.path.dirname(here))
    binary = os.path.abspath(argv[0]) if argv else \
        os.path.join(repo_root, "build", "tools", "runnel")
    t0 = time.time()
    results = []  # (name, error or None)
    servers = []
    with tempfile.TemporaryDirectory(prefix="runnel_wire_test_") as tmpdir:
        mods = load_protos(repo_root, tmpdir)
        for k, v in mods.items():
            setattr(P, k, v)

        def run(name, fn, server_list):
            try:
                fn()
                results.append((name, None))
                print("  ok    %s" % name)
            except Exception as e:  # noqa: BLE001 - report and go on
                detail = "%s: %s" % (type(e).__name__, e)
                if isinstance(e, grpc.RpcError):
                    detail = "RPC failed: %s: %s" % (e.code().name,
                                                     e.details())
                elif not isinstance(e, AssertionError):
                    detail += "\n" + traceback.format_exc()
                for s in server_list:
                    if not s.alive() and not s.stopped:
                        detail += ("\n  server %s DIED (exit %s); stderr:\n%s"
                                   % (s.name, s.proc.returncode,
                                      s.stderr_text()))
                results.append((name, detail))
                print("  FAIL  %s: %s" % (name, detail))

        try:
            print("wire_test: single task")
            single = Server(binary, "worker=127.0.0.1:0", "worker", 0, tmpdir)
            servers.append(single)
            single.start()
            client = Client(single.port)
            s = Single(client, single)
            for name, fn in s.tests():
                run(name, fn, [single])
            client.close()
            rc = single.stop()
            if rc not in (0, -signal.SIGTERM):
                results.append(("single server exits cleanly on SIGTERM",
                                "exit status %s; stderr:\n%s" %
                                (rc, single.stderr_text())))
                print("  FAIL  single server exit status %s" % rc)
            else:
                results.append(("single server exits cleanly on SIGTERM",
                                None))
                print("  ok    single server exits cleanly on SIGTERM "
                      "(status %s)" % rc)

            if skip_waits:
                print("wire_test: waits that cleanup/shutdown must end: "
                      "SKIPPED (--skip-known-bugs)")
            else:
                print("wire_test: waits that cleanup/shutdown must end")
                for name, fn in KNOWN_BUG_CHECKS:
                    own = []
                    run(name, lambda: fn(binary, tmpdir, own), own)
                    servers.extend(own)

            print("wire_test: cluster ps:1 worker:2")
            cl = []
            try:
                cl = start_cluster(binary, [("ps", 1), ("worker", 2)], tmpdir)
                servers.extend(cl)
                w0 = [s for s in cl if s.name == "/job:worker/replica:0/task:0"]
                cclient = Client(w0[0].port)
                run("VariableV2 on ps, Mul on worker 1, via worker 0's master",
                    lambda: cluster_run(cclient), cl)
                cclient.close()
            except Exception as e:  # noqa: BLE001
                results.append(("start the cluster", str(e)))
                print("  FAIL  start the cluster: %s" % e)
        except Exception as e:  # noqa: BLE001
            results.append(("setup", "%s\n%s" % (e, traceback.format_exc())))
            print("  FAIL  setup: %s" % e)
        finally:
            for s in servers:
                try:
                    s.stop()
                except Exception as e:  # noqa: BLE001
                    print("wire_test: stopping %s: %s" % (s.name, e),
                          file=sys.stderr)
    failed = [(n, e) for n, e in results if e is not None]
    summary = "wire_test: %s: %d checks, %d passed, %d failed, %.1f s" % (
        "FAIL" if failed else "PASS", len(results),
        len(results) - len(failed), len(failed), time.time() - t0)
    if failed:
        print(summary + " (failed: " + "; ".join(n for n, _ in failed) + ")")
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
