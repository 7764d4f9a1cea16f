"""An independent reader of the event files training::FileWriter writes.

Nothing here comes from Runnel's C++ or its .proto files: the TFRecord
framing is parsed with struct, both CRCs are checked with Debian's crc32c
module (python3-crc32c), and Event / Summary / HistogramProto / Image /
SessionLog / TaggedRunMetadata are declared here by TensorBoard's field
numbers (../shared/FORMATS.md (b)) and decoded with Debian's protobuf
runtime (python3-protobuf). The same reader first reads TensorFlow's own
event files in testdata, so it is checked against something TF wrote.

The files read are written by the Fashion-MNIST MLP, as a user runs it:
  fashion_mnist_mlp --max_steps 200 --summary_every 50 --trace_step 120
                    --logdir DIR

Usage: /usr/bin/python3 event_file_test.py BUILD_DIR TESTDATA_TF_DIR
"""

import glob
import math
import os
import struct
import subprocess
import sys
import tempfile

import crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

MASK_DELTA = 0xA282EAD8


def masked_crc(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def messages():
    """Event and what it holds, declared by TensorBoard's field numbers."""
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="independent_event.proto",
                                           package="independent",
                                           syntax="proto3")

    def message(name, fields):
        m = f.message_type.add(name=name)
        for field_name, number, kind, type_name, repeated in fields:
            d = m.field.add(name=field_name, number=number, type=kind,
                            label=F.LABEL_REPEATED if repeated
                            else F.LABEL_OPTIONAL)
            if type_name:
                d.type_name = ".independent." + type_name
        return m

    message("HistogramProto", [
        ("min", 1, F.TYPE_DOUBLE, None, False),
        ("max", 2, F.TYPE_DOUBLE, None, False),
        ("num", 3, F.TYPE_DOUBLE, None, False),
        ("sum", 4, F.TYPE_DOUBLE, None, False),
        ("sum_squares", 5, F.TYPE_DOUBLE, None, False),
        ("bucket_limit", 6, F.TYPE_DOUBLE, None, True),
        ("bucket", 7, F.TYPE_DOUBLE, None, True)])
    message("Image", [
        ("height", 1, F.TYPE_INT32, None, False),
        ("width", 2, F.TYPE_INT32, None, False),
        ("colorspace", 3, F.TYPE_INT32, None, False),
        ("encoded_image_string", 4, F.TYPE_BYTES, None, False)])
    message("Value", [
        ("tag", 1, F.TYPE_STRING, None, False),
        ("simple_value", 2, F.TYPE_FLOAT, None, False),
        ("image", 4, F.TYPE_MESSAGE, "Image", False),
        ("histo", 5, F.TYPE_MESSAGE, "HistogramProto", False)])
    message("Summary", [("value", 1, F.TYPE_MESSAGE, "Value", True)])
    message("SessionLog", [
        ("status", 1, F.TYPE_INT32, None, False),
        ("checkpoint_path", 2, F.TYPE_STRING, None, False),
        ("msg", 3, F.TYPE_STRING, None, False)])
    message("TaggedRunMetadata", [
        ("tag", 1, F.TYPE_STRING, None, False),
        ("run_metadata", 2, F.TYPE_BYTES, None, False)])
    message("Event", [
        ("wall_time", 1, F.TYPE_DOUBLE, None, False),
        ("step", 2, F.TYPE_INT64, None, False),
        ("file_version", 3, F.TYPE_STRING, None, False),
        ("graph_def", 4, F.TYPE_BYTES, None, False),
        ("summary", 5, F.TYPE_MESSAGE, "Summary", False),
        ("session_log", 7, F.TYPE_MESSAGE, "SessionLog", False),
        ("tagged_run_metadata", 8, F.TYPE_MESSAGE, "TaggedRunMetadata",
         False),
        ("meta_graph_def", 9, F.TYPE_BYTES, None, False)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    # protobuf 3.21 (Debian 12): MessageFactory.GetPrototype.
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("independent.Event"))


Event = messages()


def read_records(path):
    """The records of a TFRecord file; every CRC must hold."""
    data = open(path, "rb").read()
    records, offset = [], 0
    while offset < len(data):
        assert offset + 12 <= len(data), f"{path}: header cut at {offset}"
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        assert length_crc == masked_crc(header), f"{path}: length CRC at {offset}"
        body = data[offset + 12:offset + 12 + length]
        assert len(body) == length, f"{path}: record cut at {offset}"
        (data_crc,) = struct.unpack(
            "<I", data[offset + 12 + length:offset + 16 + length])
        assert data_crc == masked_crc(body), f"{path}: data CRC at {offset}"
        records.append(body)
        offset += 16 + length
    return records


def read_events(path):
    events = []
    for record in read_records(path):
        e = Event()
        e.ParseFromString(record)
        events.append(e)
    assert events and events[0].file_version == "brain.Event:2", path
    return events


def main(build, testdata):
    # The CRC and mask of FORMATS.md (TensorBoard's test vector).
    assert masked_crc(b"\x1a\x11CRC test, one two") == 0x5794D08A
    # TensorFlow's own files read back (testdata/tf/README.md: the Keras
    # callback's file holds 83 records).
    tf_files = sorted(glob.glob(os.path.join(testdata, "events", "**",
                                             "*tfevents*"), recursive=True))
    assert tf_files, testdata
    counts = {os.path.basename(p): len(read_events(p)) for p in tf_files}
    assert 83 in counts.values(), counts
    print("TensorFlow's event files:", counts)

    with tempfile.TemporaryDirectory() as logdir:
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        subprocess.run(
            [os.path.join(build, "examples", "fashion_mnist_mlp"),
             "--epochs", "1", "--optimizer", "sgd", "--learning_rate", "0.1",
             "--max_steps", "200", "--summary_every", "50",
             "--trace_step", "120", "--logdir", logdir],
            check=True, env=env, stdout=subprocess.DEVNULL, timeout=300)
        files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
        assert len(files) == 1, files
        name = os.path.basename(files[0])
        # events.out.tfevents.<seconds>.<hostname>
        assert name.split(".")[3].isdigit(), name
        events = read_events(files[0])

    graphs = [e for e in events if e.graph_def]
    starts = [e for e in events if e.HasField("session_log")]
    traces = [e for e in events if e.HasField("tagged_run_metadata")]
    assert len(graphs) == 1 and len(graphs[0].graph_def) > 1000
    assert len(starts) == 1 and starts[0].session_log.status == 1  # START
    assert [t.tagged_run_metadata.tag for t in traces] == ["step_120"]
    assert len(traces[0].tagged_run_metadata.run_metadata) > 1000

    values = {}
    for e in events:
        for v in e.summary.value:
            values.setdefault(v.tag, []).append((e.step, v))
    loss = [(step, v.simple_value) for step, v in values["loss"]]
    assert [s for s, _ in loss] == [50, 100, 150, 200], loss
    assert all(math.isfinite(x) for _, x in loss) and loss[-1][1] < loss[0][1]
    accuracy = values["final_test_accuracy"][0][1].simple_value
    assert 0.5 < accuracy <= 1, accuracy

    histograms = [t for t in values if values[t][0][1].HasField("histo")]
    assert "dense/kernel" in histograms and "dense/kernel/gradient" in histograms
    for tag in histograms:
        for step, v in values[tag]:
            h = v.histo
            assert len(h.bucket) == len(h.bucket_limit) > 0, tag
            assert sum(h.bucket) == h.num > 0, tag
            assert list(h.bucket_limit) == sorted(h.bucket_limit), tag
            assert h.min <= h.max and h.sum_squares >= 0, tag
            # The first non-empty bucket holds min, the last max.
            nonempty = [i for i, c in enumerate(h.bucket) if c > 0]
            assert h.bucket_limit[nonempty[0]] > h.min, tag
            assert h.bucket_limit[nonempty[-1]] > h.max or h.max == 1.7976931348623157e308
    images = [t for t in values if values[t][0][1].HasField("image")]
    assert sorted(images) == ["inputs/image/0", "inputs/image/1",
                              "inputs/image/2"], images
    for tag in images:
        im = values[tag][0][1].image
        assert (im.width, im.height, im.colorspace) == (28, 28, 1), im
        assert im.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"ours: {len(events)} events, CRCs good; loss {loss}; "
          f"{len(histograms)} histogram tags, {len(images)} images, "
          f"final test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    print("PASS")
