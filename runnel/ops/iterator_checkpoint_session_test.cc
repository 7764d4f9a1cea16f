// tf.data iterator checkpoints through a Session: SerializeIterator /
// DeserializeIterator (iterator_ops.cc) over the datasets of
// dataset_ops.cc, dataset_transform_ops.cc and reader_dataset_ops.cc, and
// the byte encoding of the state (EncodeIteratorState / DecodeIteratorState,
// IteratorState::Encode / Decode in framework/dataset.h).
//
// Each resume test pulls k elements, saves the state (as bytes), pulls the
// rest (the reference), then builds the same graph in a new Session (a
// restarted job: new kernels, new epoch counters), restores the state and
// pulls the rest again: the two must be the same sequence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>

#include "runnel/framework/dataset.h"
#include "runnel/graph/define_function.h"
#include "runnel/io/record_writer.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using Outputs = std::vector<Output>;
using Element = std::vector<std::string>;  // Each component as text.

const std::vector<DataType> kInt64 = {DT_INT64};
const std::vector<PartialTensorShape> kScalar = {PartialTensorShape({})};

Output Int(const Scope& s, int64_t v) { return ops::Const(s, v); }

Output Range(const Scope& s, int64_t start, int64_t stop) {
  return ops::RangeDataset(s, Int(s, start), Int(s, stop), Int(s, 1), kInt64,
                           kScalar);
}

Tensor Strings(const std::vector<std::string>& v) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.flat<tstring>()[i] = v[i];
  return t;
}

NameAttrList Fn(const Scope& root, const std::string& name,
                const std::vector<FunctionArg>& args,
                const FunctionBuilder& build) {
  auto f = DefineFunction(root, name, args, build);
  EXPECT_OK(f.status());
  return f.ok() ? *f : NameAttrList();
}

NameAttrList Double(const Scope& root) {
  return Fn(root, "Double", {{"x", DT_INT64}},
            [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
              return Outputs{ops::Mul(s, a[0], Int(s, 2))};
            });
}

NameAttrList MultipleOf3(const Scope& root) {
  return Fn(root, "MultipleOf3", {{"x", DT_INT64}},
            [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
              return Outputs{
                  ops::Equal(s, ops::FloorMod(s, a[0], Int(s, 3)), Int(s, 0))};
            });
}

// A pipeline: its dataset and element structure.
struct Pipeline {
  std::function<Output(const Scope&)> dataset;
  std::vector<DataType> types = kInt64;
  std::vector<PartialTensorShape> shapes = kScalar;
};

// The graph: iterator "it" over the pipeline ("init", "next"), its state
// as a variant ("save") and as bytes ("encode"), and "restore" from bytes
// fed to "state".
StatusOr<std::unique_ptr<Session>> MakeSession(const Pipeline& p) {
  Scope root = Scope::NewRootScope();
  Output ds = p.dataset(root);
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", p.types, p.shapes);
  ops::MakeIterator(root.WithOpName("init"), ds, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, p.types, p.shapes);
  auto save = ops::SerializeIterator(root.WithOpName("save"), it);
  ops::EncodeIteratorState(root.WithOpName("encode"), save);
  auto state = ops::Placeholder(root.WithOpName("state"), DT_STRING);
  auto decoded = ops::DecodeIteratorState(root.WithOpName("decode"), state);
  ops::DeserializeIterator(root.WithOpName("restore"), it, decoded);
  auto variant = ops::Placeholder(root.WithOpName("variant"), DT_VARIANT);
  ops::DeserializeIterator(root.WithOpName("restore_variant"), it, variant);
  // A dataset where a state belongs: InvalidArgument naming the node.
  ops::DeserializeIterator(root.WithOpName("restore_dataset"), it, ds);
  RETURN_IF_ERROR(root.status());
  GraphDef gdef;
  RETURN_IF_ERROR(root.ToGraphDef(&gdef));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession());
  RETURN_IF_ERROR(session->Create(gdef));
  return session;
}

Status Init(Session* s) {
  std::vector<Tensor> out;
  return s->Run({}, {}, {"init"}, &out);
}

// One element, or *end at the end of the sequence.
Status Next(Session* s, size_t components, Element* e, bool* end) {
  std::vector<std::string> fetches;
  for (size_t i = 0; i < components; ++i) {
    fetches.push_back(absl::StrCat("next:", i));
  }
  std::vector<Tensor> out;
  Status st = s->Run({}, fetches, {}, &out);
  *end = absl::IsOutOfRange(st);
  if (*end) return absl::OkStatus();
  RETURN_IF_ERROR(st);
  e->clear();
  for (const Tensor& t : out) {
    e->push_back(absl::StrCat(DataTypeString(t.dtype()),
                              t.shape().DebugString(),
                              t.SummarizeValue(1 << 20)));
  }
  return absl::OkStatus();
}

std::vector<Element> Pull(Session* s, size_t components, int64_t n) {
  std::vector<Element> got;
  for (int64_t i = 0; i < n; ++i) {
    Element e;
    bool end = false;
    Status st = Next(s, components, &e, &end);
    EXPECT_OK(st);
    if (!st.ok() || end) break;
    got.push_back(std::move(e));
  }
  return got;
}

std::vector<Element> Drain(Session* s, size_t components) {
  return Pull(s, components, 100000);
}

StatusOr<std::string> SaveBytes(Session* s) {
  std::vector<Tensor> out;
  RETURN_IF_ERROR(s->Run({}, {"encode:0"}, {}, &out));
  return std::string(out[0].scalar<tstring>());
}

Status RestoreBytes(Session* s, const std::string& bytes) {
  std::vector<Tensor> out;
  return s->Run({{"state:0", Tensor::Scalar<tstring>(bytes)}}, {}, {"restore"},
                &out);
}

// Pulls k elements, saves, pulls the rest; then resumes in a new session
// and in the same one (after it ran to the end), and expects the rest
// again. `total` is the length of the whole sequence.
void ExpectResumes(const Pipeline& p, int64_t k, int64_t total) {
  const size_t n = p.types.size();
  auto first = MakeSession(p);
  ASSERT_OK(first.status());
  Session* s = first->get();
  ASSERT_OK(Init(s));
  const std::vector<Element> head = Pull(s, n, k);
  ASSERT_EQ(static_cast<int64_t>(head.size()), k);
  auto bytes = SaveBytes(s);
  ASSERT_OK(bytes.status());
  const std::vector<Element> reference = Drain(s, n);
  EXPECT_EQ(static_cast<int64_t>(head.size() + reference.size()), total);

  auto second = MakeSession(p);
  ASSERT_OK(second.status());
  ASSERT_OK(Init(second->get()));
  ASSERT_OK(RestoreBytes(second->get(), *bytes));
  EXPECT_EQ(Drain(second->get(), n), reference);

  // The exhausted iterator of the first session, restored.
  ASSERT_OK(RestoreBytes(s, *bytes));
  EXPECT_EQ(Drain(s, n), reference);
}

TEST(IteratorCheckpointTest, Range) {
  ExpectResumes({[](const Scope& s) { return Range(s, 0, 10); }}, 3, 10);
  ExpectResumes({[](const Scope& s) { return Range(s, 0, 10); }}, 0, 10);
  ExpectResumes({[](const Scope& s) { return Range(s, 0, 10); }}, 10, 10);
}

TEST(IteratorCheckpointTest, TensorSliceAndTensor) {
  Pipeline slices{[](const Scope& s) {
                    Tensor m(DT_FLOAT, TensorShape({5, 2}));
                    for (int i = 0; i < 10; ++i) m.flat<float>()[i] = i * 0.5f;
                    return ops::TensorSliceDataset(s, {ops::Const(s, m)},
                                                   {PartialTensorShape({2})});
                  },
                  {DT_FLOAT},
                  {PartialTensorShape({2})}};
  ExpectResumes(slices, 2, 5);
  // TensorDataset repeated: one element per epoch.
  Pipeline tensor{[](const Scope& s) {
    auto t = ops::TensorDataset(s, {Int(s, 42)}, kScalar);
    return ops::RepeatDataset(s, t, Int(s, 3), kInt64, kScalar);
  }};
  ExpectResumes(tensor, 1, 3);
}

TEST(IteratorCheckpointTest, RepeatAcrossEpochs) {
  Pipeline p{[](const Scope& s) {
    return ops::RepeatDataset(s, Range(s, 0, 7), Int(s, 3), kInt64, kScalar);
  }};
  ExpectResumes(p, 10, 21);
  ExpectResumes(p, 7, 21);  // At an epoch boundary.
}

TEST(IteratorCheckpointTest, SkipAndTake) {
  Pipeline p{[](const Scope& s) {
    auto skip =
        ops::SkipDataset(s, Range(s, 0, 20), Int(s, 3), kInt64, kScalar);
    return ops::TakeDataset(s, skip, Int(s, 10), kInt64, kScalar);
  }};
  ExpectResumes(p, 4, 10);
}

TEST(IteratorCheckpointTest, MapAndFilter) {
  Pipeline p{[](const Scope& s) {
    auto mapped =
        ops::MapDataset(s, Range(s, 0, 30), {}, Double(s), kInt64, kScalar);
    return ops::FilterDataset(s, mapped, {}, MultipleOf3(s), kInt64, kScalar);
  }};
  ExpectResumes(p, 3, 10);
}

TEST(IteratorCheckpointTest, ParallelMapKeepsItsBufferedResults) {
  Pipeline p{[](const Scope& s) {
    return ops::ParallelMapDatasetV2(s, Range(s, 0, 23), {}, Int(s, 4),
                                     Double(s), kInt64, kScalar);
  }};
  ExpectResumes(p, 5, 23);  // 3 results of the second batch are buffered.
}

TEST(IteratorCheckpointTest, BatchWithAPartialLastBatch) {
  Pipeline p{[](const Scope& s) {
               return ops::BatchDatasetV2(s, Range(s, 0, 10), Int(s, 4),
                                          ops::Const(s, false), kInt64,
                                          {PartialTensorShape({-1})});
             },
             kInt64,
             {PartialTensorShape({-1})}};
  ExpectResumes(p, 1, 3);
  ExpectResumes(p, 2, 3);
}

Tensor PaddedShape() {
  Tensor t(DT_INT64, TensorShape({1}));
  t.flat<int64_t>()[0] = 4;
  return t;
}

TEST(IteratorCheckpointTest, PaddedBatch) {
  Pipeline p{[](const Scope& s) {
               Tensor m(DT_INT64, TensorShape({5, 2}));
               for (int i = 0; i < 10; ++i) m.flat<int64_t>()[i] = i;
               auto slices = ops::TensorSliceDataset(s, {ops::Const(s, m)},
                                                     {PartialTensorShape({2})});
               return ops::PaddedBatchDatasetV2(
                   s, slices, Int(s, 2), {ops::Const(s, PaddedShape())},
                   {Int(s, -1)}, ops::Const(s, false),
                   {PartialTensorShape({-1, 4})});
             },
             kInt64,
             {PartialTensorShape({-1, 4})}};
  ExpectResumes(p, 1, 3);
}

Pipeline ShuffleRepeat(bool reshuffle) {
  return {[reshuffle](const Scope& s) {
    auto shuffled = ops::ShuffleDataset(
        s, Range(s, 0, 12), Int(s, 5), Int(s, 7), Int(s, 11), kInt64, kScalar,
        ops::ShuffleDataset::ReshuffleEachIteration(reshuffle));
    return ops::RepeatDataset(s, shuffled, Int(s, 3), kInt64, kScalar);
  }};
}

TEST(IteratorCheckpointTest, ShuffleContinuesTheSameOrder) {
  for (bool reshuffle : {true, false}) {
    SCOPED_TRACE(reshuffle);
    ExpectResumes(ShuffleRepeat(reshuffle), 3, 36);
    ExpectResumes(ShuffleRepeat(reshuffle), 15, 36);  // In epoch 2.
  }
}

TEST(IteratorCheckpointTest, ShuffleOrdersDifferPerEpochWhenReshuffled) {
  // Not a checkpoint property, but what makes the test above meaningful.
  auto s = MakeSession(ShuffleRepeat(true));
  ASSERT_OK(s.status());
  ASSERT_OK(Init(s->get()));
  const std::vector<Element> all = Drain(s->get(), 1);
  ASSERT_EQ(all.size(), 36u);
  EXPECT_NE(std::vector<Element>(all.begin(), all.begin() + 12),
            std::vector<Element>(all.begin() + 12, all.begin() + 24));
}

TEST(IteratorCheckpointTest, ZipAndConcatenate) {
  Pipeline zip{[](const Scope& s) {
                 return ops::ZipDataset(
                     s, {Range(s, 0, 10), Range(s, 100, 105)},
                     {DT_INT64, DT_INT64}, {kScalar[0], kScalar[0]});
               },
               {DT_INT64, DT_INT64},
               {kScalar[0], kScalar[0]}};
  ExpectResumes(zip, 2, 5);
  Pipeline concat{[](const Scope& s) {
    return ops::ConcatenateDataset(s, Range(s, 0, 3), Range(s, 10, 14), kInt64,
                                   kScalar);
  }};
  ExpectResumes(concat, 2, 7);
  ExpectResumes(concat, 3, 7);
  ExpectResumes(concat, 5, 7);
  ExpectResumes(concat, 7, 7);
}

TEST(IteratorCheckpointTest, PrefetchLosesNoBufferedElement) {
  for (int64_t buffer : {1, 4}) {
    Pipeline p{[buffer](const Scope& s) {
      auto mapped =
          ops::MapDataset(s, Range(s, 0, 50), {}, Double(s), kInt64, kScalar);
      return ops::PrefetchDataset(s, mapped, Int(s, buffer), kInt64, kScalar);
    }};
    ExpectResumes(p, 7, 50);
  }
}

TEST(IteratorCheckpointTest, MemoryCacheWhileWritingAndReading) {
  Pipeline p{[](const Scope& s) {
    auto cached = ops::CacheDataset(s, Range(s, 0, 5), ops::Const(s, ""),
                                    kInt64, kScalar);
    return ops::RepeatDataset(s, cached, Int(s, 3), kInt64, kScalar);
  }};
  ExpectResumes(p, 3, 15);  // First epoch: writing the cache.
  ExpectResumes(p, 7, 15);  // Second: reading it.
  ExpectResumes(p, 5, 15);  // At the boundary.
}

void WriteRecords(const std::string& path, int first, int n) {
  auto w = RecordWriter::Create(path, RecordCompression::kNone);
  ASSERT_OK(w.status());
  for (int i = first; i < first + n; ++i) {
    ASSERT_OK((*w)->WriteRecord(absl::StrCat("record-", i)));
  }
  ASSERT_OK((*w)->Close());
}

TEST(IteratorCheckpointTest, TFRecordFilesReadHalfWay) {
  const std::string dir = MakeTempDir();
  WriteRecords(dir + "/a.tfrecord", 0, 8);
  WriteRecords(dir + "/b.tfrecord", 100, 6);
  Pipeline p{
      [dir](const Scope& s) {
        return ops::TFRecordDataset(
            s,
            ops::Const(s, Strings({dir + "/a.tfrecord", dir + "/b.tfrecord"})),
            ops::Const(s, ""), Int(s, 0));
      },
      {DT_STRING},
      kScalar};
  ExpectResumes(p, 4, 14);   // Half-way through the first file.
  ExpectResumes(p, 8, 14);   // At its end.
  ExpectResumes(p, 11, 14);  // In the second.
}

TEST(IteratorCheckpointTest, TextLineAndFixedLengthFiles) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream f(dir + "/lines.txt");
    f << "alpha\nbeta\r\ngamma\n\ndelta";
    std::ofstream g(dir + "/fixed.bin", std::ios::binary);
    g << "HDR"
      << "aaaabbbbccccddddeeee"
      << "FT";
  }
  Pipeline lines{[dir](const Scope& s) {
                   return ops::TextLineDataset(
                       s, ops::Const(s, Strings({dir + "/lines.txt"})),
                       ops::Const(s, ""), Int(s, 0));
                 },
                 {DT_STRING},
                 kScalar};
  ExpectResumes(lines, 2, 5);
  Pipeline fixed{[dir](const Scope& s) {
                   return ops::FixedLengthRecordDataset(
                       s, ops::Const(s, Strings({dir + "/fixed.bin"})),
                       Int(s, 3), Int(s, 4), Int(s, 2), Int(s, 0));
                 },
                 {DT_STRING},
                 kScalar};
  ExpectResumes(fixed, 0, 5);
  ExpectResumes(fixed, 2, 5);
}

TEST(IteratorCheckpointTest, ARestoredFileThatShrankIsACleanError) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/a.tfrecord";
  WriteRecords(path, 0, 8);
  Pipeline p{[path](const Scope& s) {
               return ops::TFRecordDataset(s, ops::Const(s, Strings({path})),
                                           ops::Const(s, ""), Int(s, 0));
             },
             {DT_STRING},
             kScalar};
  auto s = MakeSession(p);
  ASSERT_OK(s.status());
  ASSERT_OK(Init(s->get()));
  ASSERT_EQ(Pull(s->get(), 1, 6).size(), 6u);
  auto bytes = SaveBytes(s->get());
  ASSERT_OK(bytes.status());
  WriteRecords(path, 0, 2);
  Status st = RestoreBytes(s->get(), *bytes);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("TFRecordDataset"));
}

TEST(IteratorCheckpointTest, VariantStateRoundTripsInOneSession) {
  auto s = MakeSession({[](const Scope& s) { return Range(s, 0, 6); }});
  ASSERT_OK(s.status());
  ASSERT_OK(Init(s->get()));
  ASSERT_EQ(Pull(s->get(), 1, 2).size(), 2u);
  std::vector<Tensor> out;
  ASSERT_OK((*s)->Run({}, {"save:0"}, {}, &out));
  ASSERT_EQ(out[0].dtype(), DT_VARIANT);
  const Tensor state = out[0];
  const std::vector<Element> reference = Drain(s->get(), 1);
  ASSERT_EQ(reference.size(), 4u);
  ASSERT_OK((*s)->Run({{"variant:0", state}}, {}, {"restore_variant"}, &out));
  EXPECT_EQ(Drain(s->get(), 1), reference);
}

NameAttrList UpTo(const Scope& s) {
  return Fn(s, "UpTo", {{"x", DT_INT64}},
            [](const Scope& f, const Outputs& a) -> StatusOr<Outputs> {
              return Outputs{ops::RangeDataset(f, Int(f, 0), a[0], Int(f, 1),
                                               kInt64, kScalar)};
            });
}

TEST(IteratorCheckpointTest, FlatMapRerunsItsFunctionOnTheCurrentElement) {
  // 0 | 0 1 | 0 1 2 | 0 1 2 3 | 0 1 2 3 4
  Pipeline p{[](const Scope& s) {
    return ops::FlatMapDataset(s, Range(s, 1, 6), {}, UpTo(s), kInt64, kScalar);
  }};
  ExpectResumes(p, 0, 15);
  ExpectResumes(p, 4, 15);  // Inside f(2).
  ExpectResumes(p, 6, 15);  // At the end of f(3)'s dataset.
}

// A dataset whose iterator keeps IteratorBase's Save and Restore.
class NoCheckpointDataset : public DatasetBase {
 public:
  std::string DebugString() const override { return "NoCheckpointDataset"; }
  const DataTypeVector& output_dtypes() const override { return dtypes_; }
  const std::vector<PartialTensorShape>& output_shapes() const override {
    return kScalar;
  }

 protected:
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(std::make_unique<Iterator>());
  }

 private:
  class Iterator : public IteratorBase {
   public:
    Status GetNext(IteratorContext*, std::vector<Tensor>* out,
                   bool* end) override {
      out->clear();
      *end = true;
      return absl::OkStatus();
    }
  };
  const DataTypeVector dtypes_ = {DT_INT64};
};

TEST(IteratorCheckpointTest, UnsupportedDatasetIsUnimplementedNamingIt) {
  NoCheckpointDataset ds;
  auto it = ds.MakeIterator();
  ASSERT_OK(it.status());
  IteratorState state;
  Status st = SaveIterator(&state, "input", it->get());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("NoCheckpointDataset does not support checkpointing"));
  st = (*it)->Restore(nullptr, &state);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("NoCheckpointDataset"));
}

TEST(IteratorCheckpointTest, SerializingAnUninitializedIteratorFails) {
  auto s = MakeSession({[](const Scope& s) { return Range(s, 0, 6); }});
  ASSERT_OK(s.status());
  Status st = SaveBytes(s->get()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("SerializeIterator 'save'"));
}

TEST(IteratorCheckpointTest, RestoringIntoAnotherDatasetFailsCleanly) {
  auto a = MakeSession({[](const Scope& s) { return Range(s, 0, 10); }});
  ASSERT_OK(a.status());
  ASSERT_OK(Init(a->get()));
  Pull(a->get(), 1, 3);
  auto bytes = SaveBytes(a->get());
  ASSERT_OK(bytes.status());
  // Another range, and another kind of pipeline.
  for (auto build : std::vector<std::function<Output(const Scope&)>>{
           [](const Scope& s) { return Range(s, 0, 20); },
           [](const Scope& s) {
             return ops::TakeDataset(s, Range(s, 0, 10), Int(s, 4), kInt64,
                                     kScalar);
           }}) {
    auto b = MakeSession({build});
    ASSERT_OK(b.status());
    ASSERT_OK(Init(b->get()));
    Pull(b->get(), 1, 1);
    Status st = RestoreBytes(b->get(), *bytes);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr("was saved from"));
    EXPECT_THAT(std::string(st.message()), HasSubstr("DeserializeIterator"));
    // The iterator was left as it was: its second element comes next.
    Element e;
    bool end = false;
    ASSERT_OK(Next(b->get(), 1, &e, &end));
    ASSERT_FALSE(end);
    EXPECT_THAT(e[0], HasSubstr("1"));
  }
}

TEST(IteratorCheckpointTest, ADatasetVariantIsNotAState) {
  auto s = MakeSession({[](const Scope& s) { return Range(s, 0, 6); }});
  ASSERT_OK(s.status());
  ASSERT_OK(Init(s->get()));
  std::vector<Tensor> out;
  Status st = (*s)->Run({}, {}, {"restore_dataset"}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("DeserializeIterator 'restore_dataset'"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("not an iterator state"));
  // A non-scalar string to decode.
  st = (*s)->Run({{"state:0", Strings({"a", "b"})}}, {}, {"restore"}, &out);
  EXPECT_FALSE(st.ok());
}

// ---------------------------------------------------------------------------
// The byte encoding

StatusOr<std::string> ShuffleStateBytes() {
  auto s = MakeSession(ShuffleRepeat(true));
  RETURN_IF_ERROR(s.status());
  RETURN_IF_ERROR(Init(s->get()));
  Pull(s->get(), 1, 5);
  return SaveBytes(s->get());
}

TEST(IteratorStateEncodingTest, RoundTrips) {
  IteratorState state;
  ASSERT_OK(state.WriteScalar("a/int", -7));
  ASSERT_OK(state.WriteScalar("a/str", std::string("x\0y", 3)));
  Tensor t(DT_FLOAT, TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) t.flat<float>()[i] = i + 0.25f;
  ASSERT_OK(state.WriteTensor("b", t));
  ASSERT_OK(state.WriteTensor("s", Strings({"p", "", "q"})));
  auto back = IteratorState::Decode(state.Encode());
  ASSERT_OK(back.status());
  EXPECT_EQ((*back)->size(), 4u);
  int64_t i = 0;
  std::string str;
  Tensor u;
  ASSERT_OK((*back)->ReadScalar("a/int", &i));
  EXPECT_EQ(i, -7);
  ASSERT_OK((*back)->ReadScalar("a/str", &str));
  EXPECT_EQ(str, std::string("x\0y", 3));
  ASSERT_OK((*back)->ReadTensor("b", &u));
  EXPECT_EQ(u.DebugString(100), t.DebugString(100));
  ASSERT_OK((*back)->ReadTensor("s", &u));
  EXPECT_EQ(u.DebugString(100), Strings({"p", "", "q"}).DebugString(100));
  EXPECT_EQ((*back)->Encode(), state.Encode());
  // Errors name the key.
  Status st = (*back)->ReadScalar("nope", &i);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(st.message()), HasSubstr("\"nope\""));
  st = (*back)->ReadScalar("b", &i);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("\"b\""));
  EXPECT_EQ(state.WriteScalar("a/int", 1).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor v(DT_VARIANT, TensorShape({}));
  EXPECT_EQ(state.WriteTensor("v", v).code(), absl::StatusCode::kUnimplemented);
}

TEST(IteratorStateEncodingTest, TruncatedOrCorruptBytesAreDataLoss) {
  auto bytes = ShuffleStateBytes();
  ASSERT_OK(bytes.status());
  ASSERT_OK(IteratorState::Decode(*bytes).status());
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto d = IteratorState::Decode(bytes->substr(0, n));
    ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << n;
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string b = *bytes;
    b[rng() % b.size()] ^= static_cast<char>(1 + rng() % 255);
    EXPECT_EQ(IteratorState::Decode(b).status().code(),
              absl::StatusCode::kDataLoss);
  }
  EXPECT_FALSE(IteratorState::Decode("").ok());
  EXPECT_FALSE(IteratorState::Decode(std::string(1000, '\xff')).ok());
  // Through the ops: a corrupt state is a clean error naming the node.
  auto s = MakeSession(ShuffleRepeat(true));
  ASSERT_OK(s.status());
  ASSERT_OK(Init(s->get()));
  Status st = RestoreBytes(s->get(), bytes->substr(0, bytes->size() / 2));
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("DecodeIteratorState"));
}

// Mutations with a valid checksum reach the parser: they must not crash,
// and what decodes must not crash a restore either.
// `bytes` were saved from pipeline `p`.
void ExpectMutationsNeverCrash(const Pipeline& p, const std::string& bytes) {
  auto s = MakeSession(p);
  ASSERT_OK(s.status());
  std::mt19937 rng(11);
  int decoded = 0;
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes.substr(0, bytes.size() - 8);
    const int edits = 1 + rng() % 3;
    for (int e = 0; e < edits; ++e) {
      const size_t at = 8 + rng() % (b.size() - 8);
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<char>(rng());
          break;
        case 1:
          b.erase(at, 1 + rng() % 16);
          break;
        default:
          b.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng())));
      }
    }
    IteratorState::AppendChecksum(&b);
    auto d = IteratorState::Decode(b);
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
      continue;
    }
    ++decoded;
    ASSERT_OK(Init(s->get()));
    (void)RestoreBytes(s->get(), b);  // Any status; no crash.
  }
  SUCCEED() << decoded << " mutations decoded";
}

TEST(IteratorStateEncodingTest, MutatedBytesWithAValidChecksumNeverCrash) {
  auto bytes = ShuffleStateBytes();
  ASSERT_OK(bytes.status());
  ExpectMutationsNeverCrash(ShuffleRepeat(true), *bytes);
}

// ---------------------------------------------------------------------------
// Interleave (Note [Interleave checkpoints], interleave_dataset_ops.cc)

enum class Il { kInterleave, kV2, kV4 };

// f interleaved over `input` as node "il"; the parallel ones read with
// cycle_length threads, V4 up to `buffer` elements ahead.
Output Interleave(const Scope& s, Il v, Output input, NameAttrList f,
                  int64_t cycle, int64_t block, int64_t buffer = 1,
                  const std::vector<DataType>& types = kInt64) {
  const Scope n = s.WithOpName("il");
  switch (v) {
    case Il::kInterleave:
      return ops::InterleaveDataset(n, input, {}, Int(s, cycle), Int(s, block),
                                    f, types, kScalar);
    case Il::kV2:
      return ops::ParallelInterleaveDatasetV2(n, input, {}, Int(s, cycle),
                                              Int(s, block), Int(s, cycle), f,
                                              types, kScalar);
    case Il::kV4:
      return ops::ParallelInterleaveDatasetV4(
          n, input, {}, Int(s, cycle), Int(s, block), Int(s, buffer),
          Int(s, -1), Int(s, cycle), f, types, kScalar,
          ops::ParallelInterleaveDatasetV4::Deterministic("false"));
  }
  return Output();
}

// range(1, 6) interleaved through f(x) = range(0, x): 15 elements, with
// datasets of different lengths ending mid-block.
Pipeline InterleaveUpTo(Il v, int64_t cycle, int64_t block,
                        int64_t buffer = 1) {
  return {[=](const Scope& s) {
    return Interleave(s, v, Range(s, 1, 6), UpTo(s), cycle, block, buffer);
  }};
}

void ExpectInterleaveResumes(Il v, int64_t buffer) {
  for (int64_t cycle = 1; cycle <= 3; ++cycle) {
    for (int64_t block = 1; block <= 2; ++block) {
      for (int64_t k : {0, 1, 2, 3, 5, 7, 10, 13, 14, 15}) {
        SCOPED_TRACE(absl::StrCat("cycle ", cycle, " block ", block, " buffer ",
                                  buffer, " k ", k));
        ExpectResumes(InterleaveUpTo(v, cycle, block, buffer), k, 15);
      }
    }
  }
}

TEST(IteratorCheckpointTest, InterleaveResumesAtEveryCyclePosition) {
  ExpectInterleaveResumes(Il::kInterleave, 1);
}

TEST(IteratorCheckpointTest, ParallelInterleaveV4KeepsItsReadAheadResults) {
  ExpectInterleaveResumes(Il::kV4, 1);
  ExpectInterleaveResumes(Il::kV4, 3);
}

TEST(IteratorCheckpointTest, ParallelInterleaveV2) {
  ExpectInterleaveResumes(Il::kV2, 1);
}

// Interleave (`v`) over TFRecordDatasets of `files`, cycle and block 2,
// V4's buffer_output_elements `buffer`.
Pipeline InterleaveRecords(Il v, const std::vector<std::string>& files,
                           int buffer) {
  return Pipeline{
      [files, v, buffer](const Scope& s) {
        NameAttrList records =
            Fn(s, "Records", {{"path", DT_STRING}},
               [](const Scope& f, const Outputs& a) -> StatusOr<Outputs> {
                 return Outputs{ops::TFRecordDataset(f, a[0], ops::Const(f, ""),
                                                     Int(f, 0))};
               });
        auto names = ops::TensorSliceDataset(s, {ops::Const(s, Strings(files))},
                                             kScalar);
        return Interleave(s, v, names, records, 2, 2, buffer, {DT_STRING});
      },
      {DT_STRING},
      kScalar};
}

TEST(IteratorCheckpointTest, InterleaveOfTFRecordFiles) {
  const std::string dir = MakeTempDir();
  const std::vector<std::string> files = {
      dir + "/a.tfrecord", dir + "/b.tfrecord", dir + "/c.tfrecord"};
  WriteRecords(files[0], 0, 5);
  WriteRecords(files[1], 100, 3);
  WriteRecords(files[2], 200, 4);
  for (Il v : {Il::kInterleave, Il::kV4}) {
    const Pipeline p = InterleaveRecords(v, files, 3);
    for (int64_t k : {0, 3, 6, 9, 12}) {
      SCOPED_TRACE(absl::StrCat("k ", k));
      ExpectResumes(p, k, 12);
    }
  }
}

// Up to n results of "next": each element, or the error.
std::vector<std::string> Trace(Session* s, int n) {
  std::vector<std::string> got;
  for (int i = 0; i < n; ++i) {
    Element e;
    bool end = false;
    Status st = Next(s, 1, &e, &end);
    if (end) break;
    got.push_back(st.ok() ? e[0] : st.ToString());
  }
  return got;
}

TEST(IteratorCheckpointTest, InterleaveKeepsAReadAheadError) {
  // b.tfrecord ends in a truncated record: its reader fails there. V4
  // reads the error ahead with b's three records (buffer 4).
  const std::string dir = MakeTempDir();
  const std::vector<std::string> files = {dir + "/a.tfrecord",
                                          dir + "/b.tfrecord"};
  WriteRecords(files[0], 0, 5);
  WriteRecords(files[1], 100, 3);
  {
    std::ofstream f(files[1], std::ios::binary | std::ios::app);
    f << "trunc";
  }
  for (Il v : {Il::kInterleave, Il::kV4}) {
    const Pipeline p = InterleaveRecords(v, files, 4);
    for (int k : {0, 2, 4, 6, 7, 8, 9}) {
      SCOPED_TRACE(absl::StrCat("k ", k));
      auto first = MakeSession(p);
      ASSERT_OK(first.status());
      ASSERT_OK(Init(first->get()));
      ASSERT_EQ(Trace(first->get(), k).size(), static_cast<size_t>(k));
      auto bytes = SaveBytes(first->get());
      ASSERT_OK(bytes.status());
      // a0 a1 b0 b1 a2 a3 b2 <error> a4 (b's reader ends after its error).
      const std::vector<std::string> reference = Trace(first->get(), 20);
      ASSERT_EQ(reference.size(), static_cast<size_t>(9 - k))
          << testing::PrintToString(reference);
      if (k <= 7) {
        EXPECT_THAT(reference[7 - k], HasSubstr("truncated record"));
      }
      auto second = MakeSession(p);
      ASSERT_OK(second.status());
      ASSERT_OK(Init(second->get()));
      ASSERT_OK(RestoreBytes(second->get(), *bytes));
      EXPECT_EQ(Trace(second->get(), 20), reference);
    }
  }
}

// `bytes` (Note [Iterator state encoding]) with the int64 under the key
// ending in `suffix` set to `value`, and the checksum redone.
std::string WithInt(std::string b, const std::string& suffix, int64_t value) {
  b.resize(b.size() - 8);
  const size_t at = b.find(suffix + std::string(1, '\x01'));
  EXPECT_NE(at, std::string::npos) << suffix;
  if (at == std::string::npos) return b;
  for (int k = 0; k < 8; ++k) {
    b[at + suffix.size() + 1 + k] = static_cast<char>(value >> (8 * k));
  }
  IteratorState::AppendChecksum(&b);
  return b;
}

TEST(IteratorCheckpointTest, ACorruptInterleaveStateIsInvalidArgument) {
  for (Il v : {Il::kInterleave, Il::kV4}) {
    const Pipeline p = InterleaveUpTo(v, 2, 2, 2);
    auto s = MakeSession(p);
    ASSERT_OK(s.status());
    ASSERT_OK(Init(s->get()));
    ASSERT_EQ(Pull(s->get(), 1, 4).size(), 4u);
    auto bytes = SaveBytes(s->get());
    ASSERT_OK(bytes.status());
    const std::vector<std::pair<std::string, int64_t>> edits = {
        {"/open/0/slot", 2},   {"/open/0/slot", -1}, {"/open/1/slot", 0},
        {"/cycle_index", 2},   {"/block_index", 2},  {"/num_open", 3},
        {"/open/0/index", 99}, {"/next_index", -4},
    };
    for (const auto& [key, value] : edits) {
      SCOPED_TRACE(absl::StrCat(key, " = ", value));
      ASSERT_OK(Init(s->get()));
      Status st = RestoreBytes(s->get(), WithInt(*bytes, key, value));
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
      EXPECT_THAT(std::string(st.message()),
                  HasSubstr(" 'il': cannot restore the iterator"));
    }
    if (v == Il::kV4) {
      for (const auto& [key, value] :
           std::vector<std::pair<std::string, int64_t>>{
               {"/open/0/buffer_size", 3}, {"/open/0/ended", 2}}) {
        SCOPED_TRACE(key);
        ASSERT_OK(Init(s->get()));
        Status st = RestoreBytes(s->get(), WithInt(*bytes, key, value));
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
      }
    }
    // The intact state still restores.
    ASSERT_OK(Init(s->get()));
    ASSERT_OK(RestoreBytes(s->get(), *bytes));
    EXPECT_EQ(Drain(s->get(), 1).size(), 11u);
    ExpectMutationsNeverCrash(p, *bytes);
  }
}

}  // namespace
}  // namespace runnel
