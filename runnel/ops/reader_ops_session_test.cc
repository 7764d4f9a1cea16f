// An input pipeline through ClientSession: file names in a FIFOQueueV2,
// a TFRecordReaderV2 reading TensorFlow's own tf.Example records, and the
// parsing ops on what it reads. Reads waiting for file names hold no
// thread: more of them than there are pool threads wait at once, and a
// later step's enqueue completes them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "proto/example.pb.h"
#include "runnel/api/client_session.h"
#include "runnel/base/env.h"
#include "runnel/io/idx.h"
#include "runnel/io/record_writer.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using Tensors = std::vector<Tensor>;

const std::string kImagenet =
    std::string(RUNNEL_TESTDATA_DIR) + "/tf/records/imagenet_examples.tfrecord";

// A string queue of file names with enqueue-many and close.
struct FileQueue {
  explicit FileQueue(const Scope& root) {
    const std::vector<DataType> types = {DT_STRING};
    queue = ops::FIFOQueueV2(
        root.WithOpName("filenames"), types,
        ops::FIFOQueueV2::Shapes(
            std::vector<PartialTensorShape>{PartialTensorShape({})}));
    names = ops::Placeholder(root.WithOpName("names"), DT_STRING);
    enqueue =
        ops::QueueEnqueueManyV2(root.WithOpName("enqueue"), queue, {names})
            .operation;
    close = ops::QueueCloseV2(root.WithOpName("close"), queue).operation;
  }

  Status Enqueue(const ClientSession& s,
                 const std::vector<std::string>& files) const {
    return s.Run({{names, Tensor::FromVector<tstring>(files)}}, {}, {enqueue},
                 nullptr);
  }
  Status Close(const ClientSession& s) const {
    return s.Run({}, {}, {close}, nullptr);
  }

  Output queue, names;
  Operation enqueue, close;
};

TEST(ReaderSessionTest, TFRecordsThroughAQueueUntilOutOfRange) {
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  auto reader = ops::TFRecordReaderV2(root.WithOpName("reader"));
  auto read = ops::ReaderReadV2(root.WithOpName("read"), reader, files.queue);
  // Each record parsed on the spot.
  auto parsed = ops::ParseSingleExample(
      root.WithOpName("parse"), read.value,
      {ops::Const(root, Tensor(DT_INT64, TensorShape({0}))),
       ops::Const(root, Tensor(DT_STRING, TensorShape({0})))},
      /*num_sparse=*/0, {}, {"image/class/label", "image/class/synset"}, {},
      {PartialTensorShape({}), PartialTensorShape({})});
  auto produced = ops::ReaderNumRecordsProducedV2(root, reader);
  auto completed = ops::ReaderNumWorkUnitsCompletedV2(root, reader);
  ClientSession s(root);
  ASSERT_OK(files.Enqueue(s, {kImagenet, kImagenet}));
  ASSERT_OK(files.Close(s));

  const int64_t labels[] = {287, 963, 396};
  const char* synsets[] = {"n02125311", "n07871810", "n02641379"};
  const char* offsets[] = {"0", "111007", "259620"};
  for (int i = 0; i < 6; ++i) {
    Tensors out;
    ASSERT_OK(s.Run({read.key, parsed.dense_values[0], parsed.dense_values[1]},
                    &out));
    EXPECT_EQ(out[0].scalar<tstring>(), kImagenet + ":" + offsets[i % 3]);
    EXPECT_EQ(out[1].scalar<int64_t>(), labels[i % 3]);
    EXPECT_EQ(out[2].scalar<tstring>(), synsets[i % 3]);
  }
  Tensors out;
  Status end = s.Run({read.key}, &out);
  EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange) << end;
  ASSERT_OK(s.Run({produced, completed}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 6);
  EXPECT_EQ(out[1].scalar<int64_t>(), 2);
}

TEST(ReaderSessionTest, ReadUpToThenParseExampleAndDecodeRaw) {
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  auto reader = ops::TFRecordReaderV2(root.WithOpName("reader"));
  auto read = ops::ReaderReadUpToV2(root.WithOpName("read_up_to"), reader,
                                    files.queue, ops::Const(root, int64_t{10}));
  auto parsed = ops::ParseExample(
      root.WithOpName("parse"), read.values,
      ops::Const(root, Tensor(DT_STRING, TensorShape({0}))),
      {ops::Const(root, std::string("image/object/bbox/xmin"))},
      {ops::Const(root, std::string("image/height")),
       ops::Const(root, std::string("image/encoded"))},
      {ops::Const(root, Tensor(DT_INT64, TensorShape({0}))),
       ops::Const(root, Tensor(DT_STRING, TensorShape({0})))},
      {DT_FLOAT}, {PartialTensorShape({}), PartialTensorShape({})});
  // The JPEG bytes as uint8s: all images differ in size, so only the first
  // image's bytes can be decoded in one DecodeRaw; slice it out first.
  auto first_jpeg =
      ops::Slice(root, parsed.dense_values[1], ops::Const(root, {int64_t{0}}),
                 ops::Const(root, {int64_t{1}}));
  auto bytes = ops::DecodeRaw(root.WithOpName("decode"), first_jpeg, DT_UINT8);
  ClientSession s(root);
  ASSERT_OK(files.Enqueue(s, {kImagenet}));
  ASSERT_OK(files.Close(s));
  Tensors out;
  ASSERT_OK(
      s.Run({read.keys, parsed.dense_values[0], parsed.sparse_shapes[0], bytes},
            &out));
  ASSERT_EQ(out[0].NumElements(), 3);
  ExpectTensorEqual<int64_t>(out[1],
                             Tensor::FromVector<int64_t>({356, 375, 375}));
  ExpectTensorEqual<int64_t>(out[2], Tensor::FromVector<int64_t>({3, 2}));
  ASSERT_EQ(out[3].dims(), 2);
  EXPECT_GT(out[3].dim_size(1), 1000);
  EXPECT_EQ(out[3].flat<uint8_t>()[0], 0xff);
  EXPECT_EQ(out[3].flat<uint8_t>()[1], 0xd8);
  Status end = s.Run({read.keys}, &out);
  EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange) << end;
}

TEST(ReaderSessionTest, WaitingReadsHoldNoThreads) {
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  // More readers than the machine has pool threads, each waiting for a file.
  constexpr int kReaders = 12;
  std::vector<Output> keys;
  for (int i = 0; i < kReaders; ++i) {
    auto reader =
        ops::IdentityReaderV2(root.WithOpName("reader" + std::to_string(i)));
    keys.push_back(
        ops::ReaderReadV2(root.WithOpName("read" + std::to_string(i)), reader,
                          files.queue)
            .key);
  }
  ClientSession s(root);
  std::vector<std::thread> threads;
  std::vector<std::string> got(kReaders);
  std::atomic<int> done{0};
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i] {
      Tensors out;
      Status st = s.Run({keys[i]}, &out);
      EXPECT_TRUE(st.ok()) << st;
      if (st.ok()) got[i] = out[0].scalar<tstring>();
      ++done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(done.load(), 0);
  // Another step still runs and feeds every waiting read.
  std::vector<std::string> names;
  for (int i = 0; i < kReaders; ++i) names.push_back("w" + std::to_string(i));
  ASSERT_OK(files.Enqueue(s, names));
  for (auto& t : threads) t.join();
  std::sort(got.begin(), got.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(got, names);
}

TEST(ReaderSessionTest, WaitingReadTimesOut) {
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  auto reader = ops::TFRecordReaderV2(root.WithOpName("reader"));
  auto read = ops::ReaderReadV2(root.WithOpName("read"), reader, files.queue);
  ClientSession s(root);
  RunOptions options;
  options.set_timeout_in_ms(100);
  Tensors out;
  Status st = s.Run(options, {}, {read.key}, {}, &out, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  // The reader is usable afterwards.
  ASSERT_OK(files.Enqueue(s, {kImagenet}));
  ASSERT_OK(s.Run({read.key}, &out));
  EXPECT_EQ(out[0].scalar<tstring>(), kImagenet + ":0");
}

// A NUL byte in a file name would cut the name handed to open() ("x\0y"
// would read "x"). Every reader of files refuses such a name, naming the
// reader, and reads the next (good) name as usual.
TEST(ReaderSessionTest, FileNamesWithANulByteAreRefused) {
  const std::string path = ::testing::TempDir() + "/reader_nul_test.txt";
  ASSERT_OK(WriteStringToFile(path, "line\n"));
  const std::string bad = path + std::string("\0.ignored", 9);
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  std::vector<std::pair<std::string, Output>> readers = {
      {"WholeFileReader", ops::WholeFileReaderV2(root.WithOpName("whole"))},
      {"TextLineReader", ops::TextLineReaderV2(root.WithOpName("lines"))},
      {"TFRecordReader", ops::TFRecordReaderV2(root.WithOpName("records"))},
      {"FixedLengthRecordReader",
       ops::FixedLengthRecordReaderV2(root.WithOpName("fixed"), 1)},
  };
  std::vector<ops::ReaderReadV2> reads;
  for (const auto& [kind, reader] : readers) {
    reads.push_back(ops::ReaderReadV2(root, reader, files.queue));
  }
  ClientSession s(root);
  Tensors out;
  for (size_t i = 0; i < readers.size(); ++i) {
    ASSERT_OK(files.Enqueue(s, {bad}));
    const Status st = s.Run({reads[i].value}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(
        st.message().find("NUL byte at offset " + std::to_string(path.size())),
        std::string::npos)
        << st;
    EXPECT_NE(st.message().find(readers[i].first), std::string::npos) << st;
  }
  // The same name without the NUL reads the file.
  ASSERT_OK(files.Enqueue(s, {path}));
  ASSERT_OK(s.Run({reads[0].value}, &out));
  EXPECT_EQ(out[0].scalar<tstring>(), "line\n");
}

// The Fashion-MNIST pipeline the TFRecord examples use, on records in the
// converter's format (tools/fashion_mnist_to_tfrecord.cc): the decoded
// pixels and labels must equal the IDX data.
TEST(ReaderSessionTest, FashionMnistRecordsDecodeToTheIdxData) {
  const std::string dir = kFashionMnistDir;
  if (!FileExists(dir + "/t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "no Fashion-MNIST in " << dir;
  }
  auto images = ReadIdxFile(dir + "/t10k-images-idx3-ubyte.gz");
  auto labels = ReadIdxFile(dir + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_OK(images.status());
  ASSERT_OK(labels.status());
  constexpr int kN = 100, kPixels = 784;
  const std::string path = ::testing::TempDir() + "/reader_session_fm_" +
                           std::to_string(::getpid()) + ".tfrecord";
  {
    auto w = RecordWriter::Create(path, RecordCompression::kGzip);
    ASSERT_OK(w.status());
    for (int i = 0; i < kN; ++i) {
      Example ex;
      auto& f = *ex.mutable_features()->mutable_feature();
      f["image_raw"].mutable_bytes_list()->add_value(
          reinterpret_cast<const char*>(images->data<uint8_t>()) + i * kPixels,
          kPixels);
      f["label"].mutable_int64_list()->add_value(labels->data<uint8_t>()[i]);
      ASSERT_OK((*w)->WriteRecord(ex.SerializeAsString()));
    }
    ASSERT_OK((*w)->Close());
  }
  Scope root = Scope::NewRootScope();
  FileQueue files(root);
  auto reader = ops::TFRecordReaderV2(
      root, ops::TFRecordReaderV2::CompressionType("GZIP"));
  auto read = ops::ReaderReadUpToV2(root, reader, files.queue,
                                    ops::Const(root, int64_t{kN}));
  auto parsed = ops::ParseExample(
      root, read.values, ops::Const(root, Tensor(DT_STRING, TensorShape({0}))),
      {},
      {ops::Const(root, std::string("image_raw")),
       ops::Const(root, std::string("label"))},
      {ops::Const(root, Tensor(DT_STRING, TensorShape({0}))),
       ops::Const(root, Tensor(DT_INT64, TensorShape({0})))},
      {}, {PartialTensorShape({}), PartialTensorShape({})});
  auto pixels = ops::DecodeRaw(root, parsed.dense_values[0], DT_UINT8);
  ClientSession s(root);
  ASSERT_OK(files.Enqueue(s, {path}));
  Tensors out;
  ASSERT_OK(s.Run({pixels, parsed.dense_values[1]}, &out));
  ASSERT_EQ(out[0].shape(), TensorShape({kN, kPixels}));
  ASSERT_EQ(out[1].shape(), TensorShape({kN}));
  for (int i = 0; i < kN * kPixels; ++i) {
    ASSERT_EQ(out[0].flat<uint8_t>()[i], images->data<uint8_t>()[i]) << i;
  }
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(out[1].flat<int64_t>()[i], labels->data<uint8_t>()[i]);
  }
  unlink(path.c_str());
}

}  // namespace
}  // namespace runnel
