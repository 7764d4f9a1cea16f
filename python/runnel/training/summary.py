"""tf.summary (TF 1.x): summary ops in the graph and the FileWriter that
writes their output to TensorBoard event files.

The ops are the C++ ones (ScalarSummary, HistogramSummary with TF's
buckets, ImageSummary with PNG, AudioSummaryV2 with WAV, TensorSummaryV2,
MergeSummary); each outputs a serialized Summary. Their tags and node names
follow TF's summary_scope: tf.summary.scalar("loss", x) inside name scope
"train" is the node "train/loss" with tag "train/loss"; a second "loss"
gets "train/loss_1"; `family` prefixes both.

FileWriter writes `<logdir>/events.out.tfevents.<%010d seconds>.<host>
<suffix>` in TFRecord framing (FORMATS.md (b)), the same files as the C++
training::FileWriter (runnel/training/summary_writer.h) and TensorBoard
read: first Event{wall_time, file_version "brain.Event:2"}, then one Event
per add_* call, written by a background thread from a queue of at most
`max_queue` events and flushed every `flush_secs`, on flush() and close().
Two writers starting in the same second get distinct files (".1", ".2"
before the suffix), so no writer truncates another's (TF's would). As in TF,
using a closed FileWriter warns and drops the event until reopen().
"""

import os
import queue
import re
import socket
import threading
import time
import warnings

from google.protobuf import json_format

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import ops
from runnel.ops import gen_ops
from runnel.proto import event_pb2
from runnel.proto import graph_pb2
from runnel.proto import meta_graph_pb2
from runnel.proto import summary_pb2
from runnel.training import io_ops

Summary = summary_pb2.Summary
SummaryDescription = summary_pb2.SummaryDescription
Event = event_pb2.Event
SessionLog = event_pb2.SessionLog
TaggedRunMetadata = event_pb2.TaggedRunMetadata

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


# ---------------------------------------------------------------- summary ops

def _clean_tag(name):
    """TF's clean_tag: characters TensorBoard does not allow become '_',
    and a leading '/' goes."""
    if name is None:
        return None
    new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if new_name != name:
        import logging
        logging.getLogger("tensorflow").info(
            "Summary name %s is illegal; using %s instead.", name, new_name)
    return new_name


class _SummaryScope:
    """TF's summary_op_util.summary_scope: (tag, scope) for a summary op."""

    def __init__(self, name, family=None, default_name=None, values=None):
        self._name = _clean_tag(name)
        self._family = _clean_tag(family)
        self._default_name = default_name
        self._values = values
        self._cm = None

    def __enter__(self):
        base = self._name if self._family is None else "%s/%s" % (self._family,
                                                                   self._name)
        self._cm = ops.name_scope(base, self._default_name, self._values)
        scope = self._cm.__enter__()
        tag = scope.rstrip("/")
        if self._family is not None:
            tag = "%s/%s" % (self._family, tag)
        return tag, scope

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def _collect(val, collections, default_collections):
    for key in (default_collections if collections is None else collections):
        ops.add_to_collection(key, val)


def scalar(name, tensor, collections=None, family=None):
    """A Summary with one simple_value: `tensor` must be a real scalar."""
    with _SummaryScope(name, family, values=[tensor]) as (tag, scope):
        val = gen_ops.scalar_summary(tags=tag, values=tensor, name=scope)
        _collect(val, collections, [ops.GraphKeys.SUMMARIES])
    return val


def histogram(name, values, collections=None, family=None):
    """A Summary with the histogram of `values` (TF's exponential buckets);
    a non-finite value fails the step."""
    with _SummaryScope(name, family, values=[values], default_name="HistogramSummary") \
            as (tag, scope):
        val = gen_ops.histogram_summary(tag=tag, values=values, name=scope)
        _collect(val, collections, [ops.GraphKeys.SUMMARIES])
    return val


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """PNG images of the first `max_outputs` of [batch, height, width,
    channels] (1, 3 or 4 channels; floats scaled as TF scales them)."""
    with _SummaryScope(name, family, values=[tensor]) as (tag, scope):
        val = gen_ops.image_summary(tag=tag, tensor=tensor, max_images=max_outputs,
                                    name=scope)
        _collect(val, collections, [ops.GraphKeys.SUMMARIES])
    return val


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """WAV clips of the first `max_outputs` of [batch, frames(, channels)]
    floats in [-1, 1] at `sample_rate` Hz."""
    with _SummaryScope(name, family, values=[tensor]) as (tag, scope):
        sample_rate = ops.convert_to_tensor(sample_rate, dtype=dtypes.float32,
                                            name="sample_rate")
        val = gen_ops.audio_summary_v2(tag=tag, tensor=tensor, sample_rate=sample_rate,
                                       max_outputs=max_outputs, name=scope)
        _collect(val, collections, [ops.GraphKeys.SUMMARIES])
    return val


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A Summary holding `tensor` itself, with `summary_metadata`."""
    if summary_metadata is None:
        summary_metadata = summary_pb2.SummaryMetadata()
    if summary_description is not None:
        summary_metadata.summary_description = summary_description
    if display_name is not None:
        summary_metadata.display_name = display_name
    with _SummaryScope(name, family, values=[tensor]) as (tag, scope):
        val = gen_ops.tensor_summary_v2(
            tag=tag, tensor=tensor,
            serialized_summary_metadata=summary_metadata.SerializeToString(), name=scope)
        _collect(val, collections, [ops.GraphKeys.SUMMARIES])
    return val


def text(name, tensor, collections=None):
    """A string tensor for TensorBoard's text plugin."""
    tensor = ops.convert_to_tensor(tensor)
    if tensor.dtype.base_dtype != dtypes.string:
        raise ValueError("Expected tensor %s to have dtype string, got %s"
                         % (tensor.name, tensor.dtype))
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "text"
    return tensor_summary(name=name, tensor=tensor, summary_metadata=metadata,
                          collections=collections)


def merge(inputs, collections=None, name=None):
    """One Summary with the values of every serialized Summary in `inputs`
    (a duplicate tag fails the step, as TF)."""
    with ops.name_scope(name, "Merge", inputs):
        val = gen_ops.merge_summary(inputs=list(inputs), name=name)
        _collect(val, collections, [])
    return val


def merge_all(key=ops.GraphKeys.SUMMARIES, scope=None, name=None):
    """merge() of the collection `key` (summaries whose names match `scope`),
    or None when it is empty."""
    summary_ops = ops.get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)


def get_summary_description(node_def):
    """The SummaryDescription of a TensorSummary node (its `description`
    attr is JSON, as in TF)."""
    if node_def.op != "TensorSummary":
        raise ValueError("Can't get_summary_description on %s" % node_def.op)
    description = SummaryDescription()
    json_format.Parse(node_def.attr["description"].s.decode("utf-8"), description)
    return description


def all_v2_summary_ops():
    """The TF 2 summary ops of the graph: always [] in Runnel, which has
    no tf.contrib.summary / tf.summary v2 ops."""
    return ops.get_collection("_SUMMARY_V2")


# ---------------------------------------------------------------- writing

class _EventFileWriter:
    """The file and the background thread behind a FileWriter."""

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=None):
        self._logdir = str(logdir)
        if os.path.exists(self._logdir) and not os.path.isdir(self._logdir):
            raise errors.FailedPreconditionError(
                None, None, "%s exists and is not a directory" % self._logdir)
        try:
            os.makedirs(self._logdir, exist_ok=True)
        except OSError as e:
            raise errors.PermissionDeniedError(
                None, None, "cannot create log directory %s: %s"
                % (self._logdir, e.strerror)) from None
        if filename_suffix and "/" in filename_suffix:
            raise errors.InvalidArgumentError(
                None, None, "filename_suffix %r must not contain '/'" % filename_suffix)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._closed = True
        self._error = None
        self._open()

    def _open(self):
        now = time.time()
        base = os.path.join(self._logdir, "events.out.tfevents.%010d.%s"
                            % (int(now), socket.gethostname()))
        path, n = base + self._suffix, 0
        while os.path.exists(path):
            n += 1
            path = "%s.%d%s" % (base, n, self._suffix)
        self._path = path
        self._writer = io_ops.TFRecordWriter(path)
        first = Event(wall_time=now, file_version="brain.Event:2")
        self._writer.write(first.SerializeToString())
        self._writer.flush()
        self._queue = queue.Queue(self._max_queue)
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="EventLoggerThread",
                                        daemon=True)
        self._thread.start()

    def _loop(self):
        next_flush = time.time() + self._flush_secs
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_flush - time.time()))
            except queue.Empty:
                item = None
            try:
                if item is _STOP:
                    return
                if item is not None and self._error is None:
                    try:
                        self._writer.write(item)
                    except OSError as e:
                        self._error = e
                if time.time() >= next_flush:
                    self._flush_file()
                    next_flush = time.time() + self._flush_secs
            finally:
                if item is not None:
                    self._queue.task_done()

    def _flush_file(self):
        if self._error is None:
            try:
                self._writer.flush()
            except OSError as e:
                self._error = e

    def _check(self):
        if self._error is not None:
            raise errors.UnavailableError(None, None, "writing %s failed: %s"
                                          % (self._path, self._error))

    @property
    def path(self):
        return self._path

    def get_logdir(self):
        return self._logdir

    @property
    def closed(self):
        return self._closed

    def add_event(self, event):
        if self._closed:
            return
        self._check()
        self._queue.put(event.SerializeToString())

    def flush(self):
        if self._closed:
            return
        self._queue.join()
        self._flush_file()
        self._check()

    def close(self):
        if self._closed:
            return
        self._queue.join()
        self._queue.put(_STOP)
        self._thread.join()
        self._closed = True
        self._flush_file()
        self._writer.close()
        self._check()

    def reopen(self):
        if self._closed:
            self._open()


_STOP = object()


class FileWriter:
    """Writes Summary protos and graphs to an event file in `logdir`
    (tf.summary.FileWriter). With `graph`, the graph and its meta graph are
    the first events after the file version."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120,
                 graph_def=None, filename_suffix=None, session=None):
        if session is not None:
            raise MissingFeatureError("tf.summary.FileWriter(session=...): the "
                                      "summary-op writer is not in Runnel's Python API")
        self.event_writer = _EventFileWriter(logdir, max_queue, flush_secs,
                                             filename_suffix)
        self._seen_summary_tags = set()
        self._session_run_tags = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            # As TF: the meta graph of this graph_def, with the default graph's
            # collections and the stripped op list.
            from runnel.training import saver
            gd = graph_def if graph_def is not None else (
                graph.as_graph_def(add_shapes=True) if isinstance(graph, ops.Graph)
                else graph)
            if isinstance(gd, ops.Graph):
                gd = gd.as_graph_def(add_shapes=True)
            self.add_meta_graph(saver.export_meta_graph(graph_def=gd))

    def _warn_if_closed(self):
        if self.event_writer.closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will "
                          "be a noop unless the FileWriter is explicitly reopened.")

    def _add_event(self, event, step):
        self._warn_if_closed()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None):
        """`summary`: a Summary or its serialization (what a summary op
        returns). Plugin metadata is written with a tag's first value only,
        as TF does."""
        if isinstance(summary, (bytes, bytearray)):
            parsed = Summary()
            try:
                parsed.ParseFromString(bytes(summary))
            except Exception:  # noqa: BLE001 (protobuf's DecodeError)
                raise errors.InvalidArgumentError(
                    None, None, "add_summary: the bytes are not a serialized "
                                "Summary") from None
            summary = parsed
        elif not isinstance(summary, Summary):
            raise TypeError("add_summary takes a Summary or its serialized bytes, "
                            "not %s" % type(summary).__name__)
        else:
            copy = Summary()
            copy.CopyFrom(summary)
            summary = copy
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
                continue
            self._seen_summary_tags.add(value.tag)
        self._add_event(Event(summary=summary), global_step)

    def add_session_log(self, session_log, global_step=None):
        self._add_event(Event(session_log=session_log), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """The graph (a tf.Graph, or a GraphDef) as a graph_def event."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but "
                             "not both.")
        if isinstance(graph_def, ops.Graph):
            graph, graph_def = graph_def, None
        if isinstance(graph, ops.Graph):
            gd = graph.as_graph_def(add_shapes=True)
        elif isinstance(graph, graph_pb2.GraphDef):
            gd = graph
        elif isinstance(graph_def, graph_pb2.GraphDef):
            gd = graph_def
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the "
                            "deprecated `GraphDef`")
        self._add_event(Event(graph_def=gd.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None):
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError("meta_graph_def must be type MetaGraphDef, saw type: %s"
                            % type(meta_graph_def))
        self._add_event(Event(meta_graph_def=meta_graph_def.SerializeToString()),
                        global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """A step's RunMetadata under `tag` (each tag once, as TF)."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        tagged = TaggedRunMetadata(tag=tag,
                                   run_metadata=run_metadata.SerializeToString())
        self._add_event(Event(tagged_run_metadata=tagged), global_step)

    def add_event(self, event):
        self._warn_if_closed()
        self.event_writer.add_event(event)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def flush(self):
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class FileWriterCache:
    """One FileWriter per log directory (tf.summary.FileWriterCache)."""

    _cache = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir,
                                                            graph=ops.get_default_graph())
            return FileWriterCache._cache[logdir]

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache = {}


def summary_iterator(path):
    """Yields the Events of an event file (tf.train.summary_iterator);
    a damaged record raises tf.errors.DataLossError."""
    for record in io_ops.tf_record_iterator(path):
        yield Event.FromString(record)


def module_exports():
    """The names of tf.summary."""
    return {
        "scalar": scalar, "histogram": histogram, "image": image, "audio": audio,
        "text": text, "tensor_summary": tensor_summary, "merge": merge,
        "merge_all": merge_all, "get_summary_description": get_summary_description,
        "all_v2_summary_ops": all_v2_summary_ops,
        "FileWriter": FileWriter, "FileWriterCache": FileWriterCache,
        "Summary": Summary, "SummaryDescription": SummaryDescription, "Event": Event,
        "SessionLog": SessionLog, "TaggedRunMetadata": TaggedRunMetadata,
    }


__tf_train_exports__ = {"summary_iterator": summary_iterator}
