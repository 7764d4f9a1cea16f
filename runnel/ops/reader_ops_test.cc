// Reader ops against TensorFlow's semantics, pulling file names from small
// in-test queues (the real queues are tested in reader_ops_session_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runnel/base/env.h"
#include "runnel/framework/queue_interface.h"
#include "runnel/framework/resource_handle.h"
#include "runnel/io/record_writer.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

const std::string kImagenet =
    std::string(RUNNEL_TESTDATA_DIR) + "/tf/records/imagenet_examples.tfrecord";

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/reader_ops_test_" +
         std::to_string(::getpid()) + "_" + name;
}

std::string WriteTemp(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  EXPECT_OK(WriteStringToFile(path, contents));
  return path;
}

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

// A queue of file names. With `deferred`, a dequeue on an empty open queue
// waits (holding no thread) until Push or Close.
class TestQueue : public QueueInterface {
 public:
  TestQueue(std::vector<std::string> names, bool closed, bool deferred = false)
      : closed_(closed), deferred_(deferred) {
    for (auto& n : names) names_.push_back(std::move(n));
  }

  Status ValidateTuple(const Tuple&) override { return absl::OkStatus(); }
  Status ValidateManyTuple(const Tuple&) override { return absl::OkStatus(); }
  void TryEnqueue(const Tuple&, OpKernelContext* ctx,
                  DoneCallback callback) override {
    ctx->SetStatus(errors::Unimplemented("TestQueue"));
    callback();
  }
  void TryEnqueueMany(const Tuple&, OpKernelContext* ctx,
                      DoneCallback callback) override {
    ctx->SetStatus(errors::Unimplemented("TestQueue"));
    callback();
  }
  void TryDequeue(OpKernelContext* ctx, CallbackWithTuple callback) override {
    std::optional<std::string> name;
    {
      absl::MutexLock l(&mu_);
      ++dequeues_;
      if (names_.empty()) {
        if (deferred_ && !closed_) {
          waiting_.push_back({ctx, std::move(callback)});
          return;
        }
      } else {
        name = std::move(names_.front());
        names_.pop_front();
      }
    }
    Deliver(ctx, callback, name);
  }
  void TryDequeueMany(int, OpKernelContext* ctx, bool,
                      CallbackWithTuple callback) override {
    ctx->SetStatus(errors::Unimplemented("TestQueue"));
    callback({});
  }
  void Close(OpKernelContext*, bool, DoneCallback callback) override {
    CloseNow();
    callback();
  }
  bool is_closed() const override {
    absl::MutexLock l(&mu_);
    return closed_;
  }
  int32_t size() const override {
    absl::MutexLock l(&mu_);
    return static_cast<int32_t>(names_.size());
  }
  const std::vector<DataType>& component_dtypes() const override {
    return dtypes_;
  }
  std::string DebugString() const override { return "TestQueue"; }

  // Gives `name` to the oldest waiting dequeue, or stores it.
  void Push(const std::string& name) {
    Waiting w;
    {
      absl::MutexLock l(&mu_);
      if (waiting_.empty()) {
        names_.push_back(name);
        return;
      }
      w = std::move(waiting_.front());
      waiting_.pop_front();
    }
    Deliver(w.ctx, w.callback, name);
  }
  void CloseNow() {
    std::deque<Waiting> waiting;
    {
      absl::MutexLock l(&mu_);
      closed_ = true;
      waiting.swap(waiting_);
    }
    for (auto& w : waiting) Deliver(w.ctx, w.callback, std::nullopt);
  }
  int num_waiting() const {
    absl::MutexLock l(&mu_);
    return static_cast<int>(waiting_.size());
  }
  int dequeues() const {
    absl::MutexLock l(&mu_);
    return dequeues_;
  }

 protected:
  // Calls back with `name`, or fails as a closed, empty queue.
  virtual void Deliver(OpKernelContext* ctx, const CallbackWithTuple& callback,
                       const std::optional<std::string>& name) {
    if (!name.has_value()) {
      ctx->SetStatus(errors::OutOfRange(
          "TestQueue is closed and has insufficient elements (requested 1, "
          "current size 0)"));
      callback({});
      return;
    }
    callback({Tensor::Scalar<tstring>(*name)});
  }

 private:
  struct Waiting {
    OpKernelContext* ctx = nullptr;
    CallbackWithTuple callback;
  };
  mutable absl::Mutex mu_;
  std::deque<std::string> names_;
  std::deque<Waiting> waiting_;
  bool closed_;
  const bool deferred_;
  int dequeues_ = 0;
  std::vector<DataType> dtypes_ = {DT_STRING};
};

// A queue whose elements are int32 (not file names).
class IntQueue : public TestQueue {
 public:
  IntQueue() : TestQueue({"x"}, true) {}

 protected:
  void Deliver(OpKernelContext*, const CallbackWithTuple& callback,
               const std::optional<std::string>&) override {
    callback({Tensor::Scalar<int32_t>(7)});
  }
};

int unique_id = 0;

// Registers `q` in the test device's resources; returns its handle.
template <typename Q>
Tensor AddQueue(Q* q) {
  const std::string name = "test_queue_" + std::to_string(++unique_id);
  ResourceMgr* rm = TestCpuDevice()->resource_manager();
  EXPECT_OK(rm->Create<QueueInterface>(rm->default_container(), name,
                                       static_cast<QueueInterface*>(q)));
  return Tensor::Scalar<ResourceHandle>(MakeResourceHandle<QueueInterface>(
      rm->default_container(), name, TestCpuDevice()->name()));
}

Tensor Queue(std::vector<std::string> names) {
  return AddQueue(new TestQueue(std::move(names), /*closed=*/true));
}

// Runs a reader-creating op as a fresh node; returns the handle.
StatusOr<Tensor> MakeReader(const std::string& op, AttrMap attrs = {}) {
  OpTestCase t(op, "reader_" + std::to_string(++unique_id));
  for (auto& [k, v] : attrs) t.Attr(k, v);
  RETURN_IF_ERROR(t.Run());
  EXPECT_EQ(t.output(0).dtype(), DT_RESOURCE);
  EXPECT_EQ(t.output(0).shape(), TensorShape({}));
  return t.output(0);
}

struct Record {
  std::string key, value;
};

StatusOr<Record> Read(const Tensor& reader, const Tensor& queue) {
  OpTestCase t("ReaderReadV2");
  t.Input(reader).Input(queue);
  RETURN_IF_ERROR(t.Run());
  return Record{t.output(0).scalar<tstring>(), t.output(1).scalar<tstring>()};
}

StatusOr<std::vector<Record>> ReadUpTo(const Tensor& reader,
                                       const Tensor& queue, int64_t n) {
  OpTestCase t("ReaderReadUpToV2");
  t.Input(reader).Input(queue).Input(Tensor::Scalar<int64_t>(n));
  RETURN_IF_ERROR(t.Run());
  std::vector<Record> out;
  EXPECT_EQ(t.output(0).shape(), t.output(1).shape());
  for (int64_t i = 0; i < t.output(0).NumElements(); ++i) {
    out.push_back(
        {t.output(0).flat<tstring>()[i], t.output(1).flat<tstring>()[i]});
  }
  return out;
}

// Reads until OutOfRange; other errors fail the test.
std::vector<Record> ReadAll(const Tensor& reader, const Tensor& queue) {
  std::vector<Record> out;
  while (true) {
    auto r = Read(reader, queue);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();
      EXPECT_NE(r.status().message().find("closed"), std::string::npos);
      return out;
    }
    out.push_back(*r);
  }
}

int64_t Count(const std::string& op, const Tensor& reader) {
  OpTestCase t(op);
  t.Input(reader);
  EXPECT_OK(t.Run());
  return t.num_outputs() == 1 ? t.output(0).scalar<int64_t>() : -1;
}

Status Reset(const Tensor& reader) {
  OpTestCase t("ReaderResetV2");
  t.Input(reader);
  return t.Run();
}

std::string WriteRecords(const std::string& name,
                         const std::vector<std::string>& records,
                         RecordCompression c = RecordCompression::kNone) {
  const std::string path = TempPath(name);
  auto w = RecordWriter::Create(path, c);
  EXPECT_OK(w.status());
  for (const auto& r : records) EXPECT_OK((*w)->WriteRecord(r));
  EXPECT_OK((*w)->Close());
  return path;
}

// ---------------------------------------------------------------------------
// TFRecordReader

TEST(TFRecordReaderTest, ReadsTensorFlowFileTwice) {
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({kImagenet, kImagenet});
  std::vector<Record> recs = ReadAll(*reader, queue);
  ASSERT_EQ(recs.size(), 6u);
  const char* offsets[] = {"0", "111007", "259620"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(recs[i].key, kImagenet + ":" + offsets[i % 3]);
  }
  EXPECT_EQ(recs[0].value.size(), 110991u);
  EXPECT_EQ(recs[3].value, recs[0].value);
  EXPECT_EQ(Count("ReaderNumRecordsProducedV2", *reader), 6);
  EXPECT_EQ(Count("ReaderNumWorkUnitsCompletedV2", *reader), 2);
}

TEST(TFRecordReaderTest, CompressedFilesAndEmptyFiles) {
  const std::string gz =
      WriteRecords("gz", {"a", "bb", ""}, RecordCompression::kGzip);
  const std::string empty = WriteTemp("empty.tfrecord", "");
  const std::string plain = WriteRecords("plain", {"p"});
  auto reader = MakeReader("TFRecordReaderV2",
                           {{"compression_type", MakeAttrValue("GZIP")}});
  ASSERT_OK(reader.status());
  std::vector<Record> recs = ReadAll(*reader, Queue({gz}));
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].value, "a");
  EXPECT_EQ(recs[1].key, gz + ":17");  // Offsets in the uncompressed stream.
  EXPECT_EQ(recs[1].value, "bb");
  EXPECT_EQ(recs[2].value, "");
  // An empty file has no records: the reader moves on to the next.
  auto plain_reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(plain_reader.status());
  recs = ReadAll(*plain_reader, Queue({empty, plain, empty}));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].key, plain + ":0");
  EXPECT_EQ(Count("ReaderNumWorkUnitsCompletedV2", *plain_reader), 3);
}

TEST(TFRecordReaderTest, CorruptFileIsDataLossThenNextFile) {
  std::string bytes;
  ASSERT_OK(ReadFileToString(kImagenet, &bytes));
  bytes[200000] ^= 1;  // Inside record 1.
  const std::string bad = WriteTemp("corrupt.tfrecord", bytes);
  const std::string good = WriteRecords("after_corrupt", {"ok"});
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({bad, good});
  auto r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->key, bad + ":0");
  r = Read(*reader, queue);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("corrupted record at offset 111007"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find(bad), std::string::npos);
  // The damaged file is abandoned; reading goes on with the next one.
  r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->value, "ok");
}

TEST(TFRecordReaderTest, BadAttrsAndFiles) {
  ExpectInvalid(MakeReader("TFRecordReaderV2",
                           {{"compression_type", MakeAttrValue("LZMA")}})
                    .status(),
                "LZMA");
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  auto r = Read(*reader, Queue({"/nonexistent/file.tfrecord"}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  ExpectInvalid(Read(*reader, Queue({""})).status(), "empty file name");
}

// ---------------------------------------------------------------------------
// ReaderReadUpTo

TEST(ReaderReadUpToTest, StopsAtFileEndsOnceItHasRecords) {
  const std::string a = WriteRecords("upto_a", {"a0", "a1", "a2", "a3", "a4"});
  const std::string b = WriteRecords("upto_b", {"b0", "b1", "b2"});
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({a, b});
  auto values = [](const std::vector<Record>& rs) {
    std::string s;
    for (const auto& r : rs) s += r.value + ",";
    return s;
  };
  auto r = ReadUpTo(*reader, queue, 4);
  ASSERT_OK(r.status());
  EXPECT_EQ(values(*r), "a0,a1,a2,a3,");
  EXPECT_EQ((*r)[1].key, a + ":18");
  r = ReadUpTo(*reader, queue, 4);
  ASSERT_OK(r.status());
  EXPECT_EQ(values(*r), "a4,");
  r = ReadUpTo(*reader, queue, 100);
  ASSERT_OK(r.status());
  EXPECT_EQ(values(*r), "b0,b1,b2,");
  r = ReadUpTo(*reader, queue, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Count("ReaderNumRecordsProducedV2", *reader), 8);
  // Bad counts.
  ExpectInvalid(ReadUpTo(*reader, queue, 0).status(), "must be positive");
  ExpectInvalid(ReadUpTo(*reader, queue, -3).status(), "must be positive");
}

// ---------------------------------------------------------------------------
// FixedLengthRecordReader

AttrMap FixedAttrs(int64_t header, int64_t record, int64_t footer, int64_t hop,
                   const char* encoding = "") {
  return {{"header_bytes", MakeAttrValue(header)},
          {"record_bytes", MakeAttrValue(record)},
          {"footer_bytes", MakeAttrValue(footer)},
          {"hop_bytes", MakeAttrValue(hop)},
          {"encoding", MakeAttrValue(encoding)}};
}

std::string Values(const std::vector<Record>& rs) {
  std::string s;
  for (const auto& r : rs) s += r.value + "|";
  return s;
}

TEST(FixedLengthRecordReaderTest, HeaderRecordsFooter) {
  const std::string f1 = WriteTemp("fixed1", "HHaaaabbbbccccF");
  // A partial record before the footer is ignored.
  const std::string f2 = WriteTemp("fixed2", "HHddddeeF");
  // Shorter than the header.
  const std::string f3 = WriteTemp("fixed3", "H");
  auto reader = MakeReader("FixedLengthRecordReaderV2", FixedAttrs(2, 4, 1, 0));
  ASSERT_OK(reader.status());
  std::vector<Record> recs = ReadAll(*reader, Queue({f1, f2, f3}));
  EXPECT_EQ(Values(recs), "aaaa|bbbb|cccc|dddd|");
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[2].key, f1 + ":2");
  EXPECT_EQ(recs[3].key, f2 + ":0");
}

TEST(FixedLengthRecordReaderTest, HopBytes) {
  const std::string f = WriteTemp("hop", "abcdefgh");
  auto reader = MakeReader("FixedLengthRecordReaderV2", FixedAttrs(0, 4, 0, 2));
  ASSERT_OK(reader.status());
  EXPECT_EQ(Values(ReadAll(*reader, Queue({f}))), "abcd|cdef|efgh|");
  // Hops longer than a record skip bytes.
  reader = MakeReader("FixedLengthRecordReaderV2", FixedAttrs(1, 2, 0, 3));
  ASSERT_OK(reader.status());
  EXPECT_EQ(Values(ReadAll(*reader, Queue({f}))), "bc|ef|");
}

TEST(FixedLengthRecordReaderTest, ZlibEncodingAndLargeFiles) {
  // 100000 records of 7 bytes: larger than one read chunk.
  std::string raw = "header";
  for (int i = 0; i < 100000; ++i) {
    char rec[8];
    std::snprintf(rec, sizeof(rec), "%07d", i);
    raw.append(rec, 7);
  }
  raw += "ft";
  uLongf size = compressBound(raw.size());
  std::string z(size, '\0');
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &size,
                     reinterpret_cast<const Bytef*>(raw.data()), raw.size()),
            Z_OK);
  z.resize(size);
  const std::string fz = WriteTemp("fixed.z", z);
  const std::string fr = WriteTemp("fixed.raw", raw);
  for (const auto& [path, enc] :
       {std::pair<std::string, const char*>{fz, "ZLIB"}, {fr, ""}}) {
    auto reader =
        MakeReader("FixedLengthRecordReaderV2", FixedAttrs(6, 7, 2, 0, enc));
    ASSERT_OK(reader.status());
    auto r = ReadUpTo(*reader, Queue({path}), 1000000);
    ASSERT_OK(r.status());
    ASSERT_EQ(r->size(), 100000u);
    EXPECT_EQ((*r)[0].value, "0000000");
    EXPECT_EQ((*r)[99999].value, "0099999");
    EXPECT_EQ((*r)[99999].key, path + ":99999");
  }
}

TEST(FixedLengthRecordReaderTest, BadAttrs) {
  ExpectInvalid(
      MakeReader("FixedLengthRecordReaderV2", FixedAttrs(0, 0, 0, 0)).status(),
      "record_bytes > 0");
  ExpectInvalid(
      MakeReader("FixedLengthRecordReaderV2", FixedAttrs(-1, 4, 0, 0)).status(),
      "header_bytes >= 0");
  ExpectInvalid(
      MakeReader("FixedLengthRecordReaderV2", FixedAttrs(0, 4, 0, 0, "SNAPPY"))
          .status(),
      "SNAPPY");
}

// ---------------------------------------------------------------------------
// TextLineReader, WholeFileReader, IdentityReader

TEST(TextLineReaderTest, LinesKeysAndHeaders) {
  const std::string f1 = WriteTemp("lines1", "header\nline1\r\n\nlast");
  const std::string f2 = WriteTemp("lines2", "h\nx\n");
  const std::string f3 = WriteTemp("lines3", "");
  const std::string long_line(600000, 'L');
  const std::string f4 = WriteTemp("lines4", "h\n" + long_line + "\nend\n");
  auto reader = MakeReader("TextLineReaderV2",
                           {{"skip_header_lines", MakeAttrValue(int64_t{1})}});
  ASSERT_OK(reader.status());
  std::vector<Record> recs = ReadAll(*reader, Queue({f1, f2, f3, f4}));
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_EQ(recs[0].value, "line1");
  EXPECT_EQ(recs[0].key, f1 + ":2");
  EXPECT_EQ(recs[1].value, "");
  EXPECT_EQ(recs[2].value, "last");
  EXPECT_EQ(recs[2].key, f1 + ":4");
  EXPECT_EQ(recs[3].value, "x");
  EXPECT_EQ(recs[3].key, f2 + ":2");
  EXPECT_EQ(recs[4].value, long_line);
  EXPECT_EQ(recs[5].value, "end");
  EXPECT_EQ(recs[5].key, f4 + ":3");
  // No header skipping: the first line is line 1.
  reader = MakeReader("TextLineReaderV2");
  ASSERT_OK(reader.status());
  recs = ReadAll(*reader, Queue({f2}));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].key, f2 + ":1");
  EXPECT_EQ(recs[0].value, "h");
  ExpectInvalid(MakeReader("TextLineReaderV2",
                           {{"skip_header_lines", MakeAttrValue(int64_t{-1})}})
                    .status(),
                "skip_header_lines");
}

TEST(WholeFileReaderTest, OneRecordPerFile) {
  const std::string f1 = WriteTemp("whole1", std::string("abc\0def", 7));
  const std::string f2 = WriteTemp("whole2", "");
  auto reader = MakeReader("WholeFileReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({f1, f2, "/nonexistent/whole"});
  auto r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->key, f1);
  EXPECT_EQ(r->value, std::string("abc\0def", 7));
  r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->key, f2);
  EXPECT_EQ(r->value, "");
  EXPECT_EQ(Read(*reader, queue).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Read(*reader, queue).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Count("ReaderNumWorkUnitsCompletedV2", *reader), 2);
}

TEST(IdentityReaderTest, WorkIsKeyAndValue) {
  auto reader = MakeReader("IdentityReaderV2");
  ASSERT_OK(reader.status());
  std::vector<Record> recs = ReadAll(*reader, Queue({"w1", "w2"}));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].key, "w2");
  EXPECT_EQ(recs[1].value, "w2");
}

// ---------------------------------------------------------------------------
// Reset, sharing, bad handles

TEST(ReaderTest, ResetDropsTheCurrentFile) {
  const std::string a = WriteRecords("reset_a", {"a0", "a1", "a2"});
  const std::string b = WriteRecords("reset_b", {"b0"});
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({a, b});
  auto r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->value, "a0");
  EXPECT_EQ(Count("ReaderNumRecordsProducedV2", *reader), 1);
  ASSERT_OK(Reset(*reader));
  EXPECT_EQ(Count("ReaderNumRecordsProducedV2", *reader), 0);
  EXPECT_EQ(Count("ReaderNumWorkUnitsCompletedV2", *reader), 0);
  r = Read(*reader, queue);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->value, "b0");
}

TEST(ReaderTest, SharedReadersMustMatch) {
  AttrMap shared = {{"shared_name", MakeAttrValue("shared_reader_1")}};
  auto r1 = MakeReader("TFRecordReaderV2", shared);
  ASSERT_OK(r1.status());
  auto r2 = MakeReader("TFRecordReaderV2", shared);
  ASSERT_OK(r2.status());
  EXPECT_TRUE(r1->scalar<ResourceHandle>() == r2->scalar<ResourceHandle>());
  // Both nodes read from one reader.
  const std::string f = WriteRecords("shared", {"s0", "s1"});
  const Tensor queue = Queue({f});
  auto a = Read(*r1, queue);
  auto b = Read(*r2, queue);
  ASSERT_OK(a.status());
  ASSERT_OK(b.status());
  EXPECT_EQ(a->value + b->value, "s0s1");
  // Another kind under the same name.
  ExpectInvalid(MakeReader("TextLineReaderV2", shared).status(),
                "is a TFRecordReader");
  AttrMap gzip = shared;
  gzip["compression_type"] = MakeAttrValue("GZIP");
  ExpectInvalid(MakeReader("TFRecordReaderV2", gzip).status(), "GZIP");
}

TEST(ReaderTest, BadHandlesAndQueues) {
  auto reader = MakeReader("WholeFileReaderV2");
  ASSERT_OK(reader.status());
  const Tensor queue = Queue({kImagenet});
  // Swapped handles: wrong resource types.
  ExpectInvalid(Read(queue, *reader).status(), "wrong type");
  // Not a handle / not one element.
  {
    OpTestCase t("ReaderReadV2");
    t.Input(
         Tensor::FromVector<ResourceHandle>({reader->scalar<ResourceHandle>(),
                                             reader->scalar<ResourceHandle>()}))
        .Input(queue);
    ExpectInvalid(t.RunKernelOnly(), "resource handle of one element");
    ExpectInvalid(t.Run(), "rank");
  }
  // A handle to a reader that does not exist.
  ResourceHandle missing = reader->scalar<ResourceHandle>();
  missing.set_name("no_such_reader");
  EXPECT_EQ(
      Read(Tensor::Scalar<ResourceHandle>(missing), queue).status().code(),
      absl::StatusCode::kNotFound);
  OpTestCase count("ReaderNumRecordsProducedV2");
  count.Input(Tensor::Scalar<ResourceHandle>(missing));
  EXPECT_EQ(count.Run().code(), absl::StatusCode::kNotFound);
  // A queue of numbers.
  ExpectInvalid(Read(*reader, AddQueue(new IntQueue())).status(),
                "Expected queue with single string component");
}

// ---------------------------------------------------------------------------
// Waiting for file names (Note [Readers never block a thread]).

TEST(ReaderTest, ReadWaitsForTheQueueAndReadsAreSerialized) {
  const std::string f = WriteRecords("wait", {"w0", "w1", "w2"});
  auto reader = MakeReader("TFRecordReaderV2");
  ASSERT_OK(reader.status());
  auto* q = new TestQueue({}, /*closed=*/false, /*deferred=*/true);
  q->Ref();  // Keep a reference for the test.
  ScopedUnref unref(q);
  const Tensor queue = AddQueue(q);
  std::atomic<int> done{0};
  StatusOr<Record> r1 = errors::Unknown("unset"), r2 = r1;
  std::thread t1([&] {
    r1 = Read(*reader, queue);
    ++done;
  });
  // Wait until the first read is parked on the queue.
  while (q->num_waiting() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::thread t2([&] {
    r2 = Read(*reader, queue);
    ++done;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The second read waits for the reader, not the queue.
  EXPECT_EQ(done.load(), 0);
  EXPECT_EQ(q->num_waiting(), 1);
  EXPECT_EQ(q->dequeues(), 1);
  q->Push(f);
  t1.join();
  t2.join();
  ASSERT_OK(r1.status());
  ASSERT_OK(r2.status());
  EXPECT_EQ(r1->value + r2->value, "w0w1");
  EXPECT_EQ(q->dequeues(), 1);  // One file name served both reads.
  // A read waiting on a queue that gets closed ends with OutOfRange.
  auto r3 = Read(*reader, queue);
  ASSERT_OK(r3.status());
  EXPECT_EQ(r3->value, "w2");
  std::thread t3([&] { r1 = Read(*reader, queue); });
  while (q->num_waiting() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  q->CloseNow();
  t3.join();
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(ReaderTest, ShapeFunctions) {
  auto s = InferShapes(
      "ReaderReadUpToV2", {},
      {PartialTensorShape({}), PartialTensorShape(), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1}));
  EXPECT_EQ((*s)[1], PartialTensorShape({-1}));
  s = InferShapes("ReaderReadV2", {},
                  {PartialTensorShape({}), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({}));
  EXPECT_FALSE(InferShapes("ReaderReadV2", {},
                           {PartialTensorShape({2}), PartialTensorShape({})})
                   .ok());
}

}  // namespace
}  // namespace runnel
