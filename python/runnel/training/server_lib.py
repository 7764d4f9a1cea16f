"""tf.train.ClusterSpec, tf.train.Server and tf.train.replica_device_setter
(TF 1.x), over Runnel's distributed runtime (runnel/distributed: a gRPC
server with TensorFlow's MasterService and WorkerService).

    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"],
                                    "worker": ["localhost:2223"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        ...  # variables on /job:ps, the rest on /job:worker
    with tf.Session(server.target) as sess: ...

Servers listen on 127.0.0.1 (TensorFlow listens on every interface; Runnel
does only when asked: `bind_address`).
"""


from runnel import _runnel
from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import ops
from runnel.proto import cluster_pb2
from runnel.proto import config_pb2
from runnel.proto import tensorflow_server_pb2


class ClusterSpec:
    """The jobs of a cluster and each job's task addresses: from a dict
    {job: [address, ...] or {task index: address}}, a ClusterDef, or
    another ClusterSpec."""

    def __init__(self, cluster):
        if isinstance(cluster, dict):
            self._cluster_spec = {}
            for job, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    self._cluster_spec[job] = dict(enumerate(tasks))
                elif isinstance(tasks, dict):
                    self._cluster_spec[job] = {int(i): a for i, a in tasks.items()}
                else:
                    raise TypeError("The tasks for job %r must be a list or a dictionary "
                                    "from integers to strings." % job)
        elif isinstance(cluster, cluster_pb2.ClusterDef):
            self._cluster_spec = {}
            for job in cluster.job:
                self._cluster_spec[job.name] = dict(job.tasks.items())
        elif isinstance(cluster, ClusterSpec):
            self._cluster_spec = {j: dict(t) for j, t in cluster._cluster_spec.items()}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job "
                            "names to lists of network addresses, or a `ClusterDef` "
                            "protocol buffer")
        for job, tasks in self._cluster_spec.items():
            for i, address in tasks.items():
                if not isinstance(address, str):
                    raise TypeError("Task address %r for job %r task %d must be a "
                                    "string" % (address, job, i))

    def __bool__(self):
        return bool(self._cluster_spec)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and \
            self._cluster_spec == other._cluster_spec

    def __ne__(self, other):
        return not self == other

    def __repr__(self):
        return "ClusterSpec(%r)" % self.as_dict()

    @property
    def jobs(self):
        return list(self._cluster_spec)

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise ValueError("No task with index %r in job %r" % (task_index, job_name))
        return tasks[task_index]

    def job_tasks(self, job_name):
        """The addresses of the job's tasks, indexed by task (None for gaps)."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        out = [None] * (max(tasks) + 1)
        for i, a in tasks.items():
            out[i] = a
        return out

    def as_dict(self):
        out = {}
        for job, tasks in self._cluster_spec.items():
            if sorted(tasks) == list(range(len(tasks))):
                out[job] = [tasks[i] for i in range(len(tasks))]
            else:
                out[job] = dict(tasks)
        return out

    def as_cluster_def(self):
        d = cluster_pb2.ClusterDef()
        for job in sorted(self._cluster_spec):
            j = d.job.add()
            j.name = job
            for i, a in sorted(self._cluster_spec[job].items()):
                j.tasks[i] = a
        return d

    def _job(self, job_name):
        if job_name not in self._cluster_spec:
            raise ValueError("No such job in cluster: %r" % job_name)
        return self._cluster_spec[job_name]


def _server_def(server_or_cluster_def, job_name, task_index, protocol, config):
    if isinstance(server_or_cluster_def, tensorflow_server_pb2.ServerDef):
        d = tensorflow_server_pb2.ServerDef()
        d.CopyFrom(server_or_cluster_def)
        if job_name is not None:
            d.job_name = job_name
        if task_index is not None:
            d.task_index = task_index
        if protocol is not None:
            d.protocol = protocol
        if config is not None:
            d.default_session_config.CopyFrom(config)
        return d
    cluster = ClusterSpec(server_or_cluster_def)
    if not cluster:
        raise ValueError("The cluster must have at least one job")
    if job_name is None:
        if len(cluster.jobs) == 1:
            job_name = cluster.jobs[0]
        else:
            raise ValueError("Must specify an explicit `job_name`.")
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) == 1:
            task_index = indices[0]
        else:
            raise ValueError("Must specify an explicit `task_index`.")
    cluster.task_address(job_name, task_index)  # ValueError if absent
    d = tensorflow_server_pb2.ServerDef(
        cluster=cluster.as_cluster_def(), job_name=job_name, task_index=task_index,
        protocol=protocol or "grpc")
    if config is not None:
        if not isinstance(config, config_pb2.ConfigProto):
            raise TypeError("config must be a tf.ConfigProto, but got %s" % type(config))
        d.default_session_config.CopyFrom(config)
    return d


class Server:
    """An in-process server: one task of a cluster (tf.train.Server).
    `target` is what tf.Session takes to run graphs on the cluster."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None,
                 protocol=None, config=None, start=True, bind_address="127.0.0.1"):
        if not getattr(_runnel, "has_server", False):
            raise MissingFeatureError("tf.train.Server: this build of Runnel has no "
                                      "distributed runtime (RUNNEL_WITH_GRPC=OFF)")
        if protocol not in (None, "grpc"):
            raise ValueError("Runnel's servers speak protocol 'grpc' only, not %r"
                             % protocol)
        d = _server_def(server_or_cluster_def, job_name, task_index, protocol, config)
        self._server = _runnel.Server(d.SerializeToString(), bind_address)
        self._started = False
        if start:
            self.start()

    def start(self):
        """Starts serving (a task address with port 0 gets a free port)."""
        if not self._started:
            self._server.start()
            self._started = True

    def join(self):
        """Blocks until the server stops."""
        self._server.join()

    def stop(self):
        self._server.stop()

    @property
    def server_def(self):
        d = tensorflow_server_pb2.ServerDef()
        d.ParseFromString(self._server.server_def())
        return d

    @property
    def target(self):
        """The session target, e.g. b"grpc://127.0.0.1:2222" (bytes, as TF)."""
        return self._server.target().encode()

    @staticmethod
    def create_local_server(config=None, start=True):
        """A one-task server on a free port of this machine."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config,
                      start=start)


_DEFAULT_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp")


class _RoundRobinStrategy:
    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def _parse(device):
    return ops._parse_device(device) if device else {}


def _with_task(device, task):
    d = _parse(device)
    d["task"] = str(task)
    return _format(d)


def _format(d):
    parts = []
    for k in ("job", "replica", "task"):
        if k in d:
            parts.append("/%s:%s" % (k, d[k]))
    if "device_type" in d:
        parts.append("/device:%s:%s" % (d["device_type"], d.get("device_index", "*")))
    return "".join(parts)


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for tf.device: variables (the ops in `ps_ops`) on
    the ps tasks, round-robin unless `ps_strategy` chooses, everything
    else on `worker_device`; a device an op already has wins field by
    field (TF's merge). None when there are no ps tasks."""
    if cluster is not None:
        if isinstance(cluster, ClusterSpec):
            cluster_spec = cluster.as_dict()
        else:
            cluster_spec = ClusterSpec(cluster).as_dict()
        ps_job = _parse(ps_device).get("job", "ps")
        ps_tasks = len(cluster_spec.get(ps_job, []))
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(_DEFAULT_PS_OPS)
    if not merge_devices:
        raise ValueError("DEPRECATION: merge_devices=False is not supported.")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")

    def device_function(op):
        current = op.device or ""
        if ps_device and op.type in ps_ops:
            cur, ps = _parse(current), _parse(ps_device)
            spec = ps_device
            if ps.get("job") and (not cur.get("job") or cur.get("job") == ps.get("job")):
                spec = _with_task(ps_device, ps_strategy(op))
            return ops.merge_device(spec, current)
        return ops.merge_device(worker_device or "", current)

    return device_function


def train_exports():
    return {"ClusterSpec": ClusterSpec, "Server": Server,
            "replica_device_setter": replica_device_setter}


__tf_train_exports__ = train_exports()
