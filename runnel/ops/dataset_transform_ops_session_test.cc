// tf.data's transformations (dataset_transform_ops.cc) and file datasets
// (reader_dataset_ops.cc) through a Session: map/filter/flat_map over
// functions built with DefineFunction, shuffle seeds and epochs, prefetch,
// zip, concatenate, cache, parallel map, TFRecord/text/fixed-length files
// (TensorFlow's own TFRecord file, compressed and corrupt ones), and the
// errors that name the element a function failed on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "absl/time/clock.h"
#include "runnel/base/env.h"
#include "runnel/framework/dataset.h"
#include "runnel/graph/define_function.h"
#include "runnel/io/record_writer.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Outputs = std::vector<Output>;

StatusOr<std::unique_ptr<Session>> SessionFor(const Scope& root) {
  GraphDef gdef;
  RETURN_IF_ERROR(root.ToGraphDef(&gdef));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession());
  RETURN_IF_ERROR(session->Create(gdef));
  return session;
}

const std::vector<DataType> kInt64 = {DT_INT64};
const std::vector<DataType> kString = {DT_STRING};
const std::vector<PartialTensorShape> kScalar = {PartialTensorShape({})};

Output Int(const Scope& s, int64_t v) { return ops::Const(s, v); }

Tensor Strings(const std::vector<std::string>& v) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.flat<tstring>()[i] = v[i];
  return t;
}

Output Range(const Scope& s, int64_t start, int64_t stop) {
  return ops::RangeDataset(s, Int(s, start), Int(s, stop), Int(s, 1), kInt64,
                           kScalar);
}

// An initializable iterator with init op "init" and next element "next".
void AddIterator(const Scope& root, Output dataset,
                 const std::vector<DataType>& types = kInt64,
                 const std::vector<PartialTensorShape>& shapes = kScalar) {
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", types, shapes);
  ops::MakeIterator(root.WithOpName("init"), dataset, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, types, shapes);
}

// Runs "next" until the end of sequence; the first error ends it too (in
// *error, else a test failure).
std::vector<std::vector<Tensor>> DrainAll(Session* s, int components,
                                          Status* error = nullptr) {
  std::vector<std::vector<Tensor>> got;
  std::vector<std::string> fetches;
  for (int i = 0; i < components; ++i)
    fetches.push_back(absl::StrCat("next:", i));
  std::vector<Tensor> out;
  for (int i = 0; i < 10000; ++i) {
    Status st = s->Run({}, fetches, {}, &out);
    if (absl::IsOutOfRange(st)) return got;
    if (!st.ok()) {
      if (error != nullptr) {
        *error = st;
      } else {
        ADD_FAILURE() << st;
      }
      return got;
    }
    got.push_back(out);
  }
  ADD_FAILURE() << "no end of sequence";
  return got;
}

std::vector<int64_t> Drain(Session* s, Status* error = nullptr) {
  std::vector<int64_t> v;
  for (const auto& e : DrainAll(s, 1, error))
    v.push_back(e[0].scalar<int64_t>());
  return v;
}

std::vector<std::string> DrainStrings(Session* s, Status* error = nullptr) {
  std::vector<std::string> v;
  for (const auto& e : DrainAll(s, 1, error)) {
    v.push_back(std::string(e[0].scalar<tstring>()));
  }
  return v;
}

// Builds, initialises and drains the iterator over `dataset`.
std::vector<int64_t> Values(const Scope& root, Output dataset,
                            Status* error = nullptr) {
  AddIterator(root, dataset);
  EXPECT_OK(root.status());
  auto s = SessionFor(root);
  EXPECT_OK(s.status());
  if (!s.ok()) return {};
  std::vector<Tensor> out;
  EXPECT_OK((*s)->Run({}, {}, {"init"}, &out));
  return Drain(s->get(), error);
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

// x % 3 == 0
NameAttrList MultipleOf3(const Scope& root) {
  return Fn(root, "MultipleOf3", {{"x", DT_INT64}},
            [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
              return Outputs{
                  ops::Equal(s, ops::FloorMod(s, a[0], Int(s, 3)), Int(s, 0))};
            });
}

// [10, 20, 30][x]: fails on x >= 3.
NameAttrList Lookup(const Scope& root) {
  return Fn(root, "Lookup", {{"x", DT_INT64}},
            [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
              auto table = ops::Const(s, {int64_t{10}, 20, 30});
              return Outputs{ops::GatherV2(s, table, a[0], Int(s, 0))};
            });
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

bool IsPermutationOfIota(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == Iota(n);
}

// ---------------------------------------------------------------------------
// map, filter, flat_map

TEST(DatasetTransformOpsTest, RangeMapFilterGivesTensorFlowsValues) {
  Scope root = Scope::NewRootScope();
  auto mapped = ops::MapDataset(root, Range(root, 0, 10), {}, Double(root),
                                kInt64, kScalar);
  auto filtered =
      ops::FilterDataset(root, mapped, {}, MultipleOf3(root), kInt64, kScalar);
  // tf.data.Dataset.range(10).map(lambda x: x * 2).filter(
  //     lambda x: x % 3 == 0)
  EXPECT_THAT(Values(root, filtered), ElementsAre(0, 6, 12, 18));
}

TEST(DatasetTransformOpsTest, MapPassesCapturedTensorsAfterTheElement) {
  Scope root = Scope::NewRootScope();
  auto plus = Fn(root, "Plus", {{"x", DT_INT64}, {"c", DT_INT64}},
                 [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                   return Outputs{ops::AddV2(s, a[0], a[1])};
                 });
  auto mapped = ops::MapDataset(root, Range(root, 0, 4), {Int(root, 100)}, plus,
                                kInt64, kScalar);
  EXPECT_THAT(Values(root, mapped), ElementsAre(100, 101, 102, 103));
}

TEST(DatasetTransformOpsTest, MapErrorNamesTheDatasetFunctionAndElement) {
  Scope root = Scope::NewRootScope();
  auto mapped = ops::MapDataset(root.WithOpName("map"), Range(root, 0, 6), {},
                                Lookup(root), kInt64, kScalar);
  Status error;
  EXPECT_THAT(Values(root, mapped, &error), ElementsAre(10, 20, 30));
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
  EXPECT_THAT(std::string(error.message()),
              HasSubstr("MapDataset 'map': function 'Lookup' failed on "
                        "element 3"));
}

TEST(DatasetTransformOpsTest, MapResultsAreCheckedAgainstOutputTypes) {
  Scope root = Scope::NewRootScope();
  // Declared int64 but the function returns float.
  auto to_float = Fn(root, "ToFloat", {{"x", DT_INT64}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Cast(s, a[0], DT_FLOAT)};
                     });
  auto mapped = ops::MapDataset(root.WithOpName("map"), Range(root, 0, 3), {},
                                to_float, kInt64, kScalar);
  Status error;
  EXPECT_TRUE(Values(root, mapped, &error).empty());
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
  EXPECT_THAT(std::string(error.message()), HasSubstr("element 0"));
}

TEST(DatasetTransformOpsTest, FilterPredicateMustReturnAScalarBool) {
  Scope root = Scope::NewRootScope();
  auto filtered =
      ops::FilterDataset(root.WithOpName("filter"), Range(root, 0, 3), {},
                         Double(root), kInt64, kScalar);
  Status error;
  EXPECT_TRUE(Values(root, filtered, &error).empty());
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
  EXPECT_THAT(std::string(error.message()), HasSubstr("scalar bool"));
}

TEST(DatasetTransformOpsTest, FlatMapFlattensTheDatasetsItsFunctionReturns) {
  Scope root = Scope::NewRootScope();
  auto upto = Fn(root, "UpTo", {{"x", DT_INT64}},
                 [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                   return Outputs{ops::RangeDataset(
                       s, Int(s, 0), a[0], Int(s, 1), kInt64, kScalar)};
                 });
  auto flat =
      ops::FlatMapDataset(root, Range(root, 1, 4), {}, upto, kInt64, kScalar);
  EXPECT_THAT(Values(root, flat), ElementsAre(0, 0, 1, 0, 1, 2));
}

TEST(DatasetTransformOpsTest, ParallelMapGivesMapsElementsInOrder) {
  for (const char* deterministic : {"default", "true", "false"}) {
    for (int64_t calls : {1, 3, 4, -1}) {
      Scope root = Scope::NewRootScope();
      auto mapped = ops::ParallelMapDatasetV2(
          root, Range(root, 0, 25), {}, Int(root, calls), Double(root), kInt64,
          kScalar, ops::ParallelMapDatasetV2::Deterministic(deterministic));
      std::vector<int64_t> want;
      for (int64_t i = 0; i < 25; ++i) want.push_back(2 * i);
      EXPECT_EQ(Values(root, mapped), want) << deterministic << " " << calls;
    }
  }
}

TEST(DatasetTransformOpsTest, ParallelMapErrorsComeInOrder) {
  Scope root = Scope::NewRootScope();
  auto mapped =
      ops::ParallelMapDatasetV2(root.WithOpName("pmap"), Range(root, 0, 8), {},
                                Int(root, 4), Lookup(root), kInt64, kScalar);
  Status error;
  EXPECT_THAT(Values(root, mapped, &error), ElementsAre(10, 20, 30));
  EXPECT_THAT(std::string(error.message()),
              HasSubstr("ParallelMapDatasetV2 'pmap': function 'Lookup' "
                        "failed on element 3"));
}

TEST(DatasetTransformOpsTest, ParallelMapRejectsZeroCalls) {
  Scope root = Scope::NewRootScope();
  auto mapped = ops::ParallelMapDatasetV2(
      root, Range(root, 0, 3), {}, Int(root, 0), Double(root), kInt64, kScalar);
  AddIterator(root, mapped);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  Status st = s->Run({}, {}, {"init"}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

// ---------------------------------------------------------------------------
// shuffle

std::vector<int64_t> ShuffledOnce(int64_t seed, int64_t seed2) {
  Scope root = Scope::NewRootScope();
  auto shuffled =
      ops::ShuffleDataset(root, Range(root, 0, 20), Int(root, 20),
                          Int(root, seed), Int(root, seed2), kInt64, kScalar);
  return Values(root, shuffled);
}

TEST(DatasetTransformOpsTest, ShuffleWithSeedsIsADeterministicPermutation) {
  std::vector<int64_t> a = ShuffledOnce(42, 7);
  EXPECT_TRUE(IsPermutationOfIota(a, 20));
  EXPECT_NE(a, Iota(20));
  EXPECT_EQ(ShuffledOnce(42, 7), a);  // Another session, the same order.
  EXPECT_NE(ShuffledOnce(43, 7), a);
}

// Two epochs through Repeat: halves [0, n) and [n, 2n).
std::pair<std::vector<int64_t>, std::vector<int64_t>> TwoEpochs(
    const Scope& root, Output dataset, int64_t n) {
  auto repeated =
      ops::RepeatDataset(root, dataset, Int(root, 2), kInt64, kScalar);
  std::vector<int64_t> v = Values(root, repeated);
  EXPECT_EQ(v.size(), 2 * n);
  if (static_cast<int64_t>(v.size()) != 2 * n) return {};
  return {std::vector<int64_t>(v.begin(), v.begin() + n),
          std::vector<int64_t>(v.begin() + n, v.end())};
}

TEST(DatasetTransformOpsTest, ShuffleReshufflesEachEpochUnlessTold) {
  for (bool reshuffle : {true, false}) {
    Scope root = Scope::NewRootScope();
    auto shuffled = ops::ShuffleDataset(
        root, Range(root, 0, 20), Int(root, 5), Int(root, 1), Int(root, 2),
        kInt64, kScalar,
        ops::ShuffleDataset::ReshuffleEachIteration(reshuffle));
    auto [first, second] = TwoEpochs(root, shuffled, 20);
    EXPECT_TRUE(IsPermutationOfIota(first, 20));
    EXPECT_TRUE(IsPermutationOfIota(second, 20));
    if (reshuffle) {
      EXPECT_NE(first, second);
    } else {
      EXPECT_EQ(first, second);
    }
  }
}

TEST(DatasetTransformOpsTest, ShuffleWithoutSeedsReshufflesAtEveryInit) {
  Scope root = Scope::NewRootScope();
  auto shuffled = ops::ShuffleDatasetV3(
      root, Range(root, 0, 20), Int(root, 20), Int(root, 0), Int(root, 0),
      ops::VarHandleOp(root, DT_INT64, PartialTensorShape({})), kInt64,
      kScalar);
  AddIterator(root, shuffled);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  std::vector<int64_t> a = Drain(s.get());
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  std::vector<int64_t> b = Drain(s.get());
  EXPECT_TRUE(IsPermutationOfIota(a, 20));
  EXPECT_TRUE(IsPermutationOfIota(b, 20));
  EXPECT_NE(a, b);
}

TEST(DatasetTransformOpsTest, ShuffleRejectsAZeroBuffer) {
  Scope root = Scope::NewRootScope();
  auto shuffled =
      ops::ShuffleDataset(root, Range(root, 0, 3), Int(root, 0), Int(root, 1),
                          Int(root, 2), kInt64, kScalar);
  AddIterator(root, shuffled);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  EXPECT_EQ(s->Run({}, {}, {"init"}, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// prefetch, zip, concatenate, cache

TEST(DatasetTransformOpsTest, PrefetchPreservesOrderAndEnds) {
  for (int64_t buffer : {0, 1, 3, -1}) {
    Scope root = Scope::NewRootScope();
    auto mapped = ops::MapDataset(root, Range(root, 0, 50), {}, Double(root),
                                  kInt64, kScalar);
    auto prefetched =
        ops::PrefetchDataset(root, mapped, Int(root, buffer), kInt64, kScalar);
    std::vector<int64_t> want;
    for (int64_t i = 0; i < 50; ++i) want.push_back(2 * i);
    EXPECT_EQ(Values(root, prefetched), want) << buffer;
  }
}

TEST(DatasetTransformOpsTest, PrefetchDeliversErrorsInOrder) {
  Scope root = Scope::NewRootScope();
  auto mapped = ops::MapDataset(root.WithOpName("map"), Range(root, 0, 6), {},
                                Lookup(root), kInt64, kScalar);
  auto prefetched =
      ops::PrefetchDataset(root, mapped, Int(root, 4), kInt64, kScalar);
  AddIterator(root, prefetched);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  Status error;
  EXPECT_THAT(Drain(s.get(), &error), ElementsAre(10, 20, 30));
  EXPECT_THAT(std::string(error.message()), HasSubstr("element 3"));
  // The iterator goes on after the error: elements 4 and 5 fail too.
  error = Status();
  EXPECT_TRUE(Drain(s.get(), &error).empty());
  EXPECT_THAT(std::string(error.message()), HasSubstr("element 4"));
  // A new iterator replaces the old one (whose thread is joined).
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 10);
}

// The prefetch thread works between steps (Note [Iterators borrow their
// context]): after one element is taken, the map function runs on the next
// `buffer` elements while no step runs, and no further.
TEST(DatasetTransformOpsTest, PrefetchWorksAheadBetweenStepsUpToItsBuffer) {
  Scope root = Scope::NewRootScope();
  auto count =
      ops::VarHandleOp(root.WithOpName("count"), DT_INT64, TensorShape({}));
  ops::AssignVariableOp(root.WithOpName("zero"), count, Int(root, 0));
  ops::ReadVariableOp(root.WithOpName("read"), count, DT_INT64);
  auto counted =
      Fn(root, "Counted", {{"x", DT_INT64}, {"count", DT_RESOURCE}},
         [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
           auto add = ops::AssignAddVariableOp(s, a[1], Int(s, 1));
           return Outputs{ops::Identity(s.WithControlDependencies(add), a[0])};
         });
  auto mapped = ops::MapDataset(root, Range(root, 0, 40), {Input(count)},
                                counted, kInt64, kScalar);
  constexpr int64_t kBuffer = 4;
  AddIterator(root, ops::PrefetchDataset(root, mapped, Int(root, kBuffer),
                                         kInt64, kScalar));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"zero", "init"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 0);
  auto calls = [&] {
    std::vector<Tensor> v;
    EXPECT_OK(s->Run({}, {"read"}, {}, &v));
    return v.empty() ? int64_t{-1} : v[0].scalar<int64_t>();
  };
  // 1 taken + kBuffer ahead, reached without any GetNext (bounded wait).
  for (int i = 0; i < 2000 && calls() < 1 + kBuffer; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(calls(), 1 + kBuffer);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(calls(), 1 + kBuffer) << "worked ahead past the buffer";
  std::vector<int64_t> rest = Drain(s.get());
  EXPECT_EQ(rest.size(), 39u);
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], i + 1);
  EXPECT_EQ(calls(), 40);
}

// A step that times out while it waits for the prefetch buffer fails, but
// the element in flight is not lost: it is kept for the next step. The
// session then ends with the thread blocked in a call, which the
// iterator's cancellation ends.
TEST(DatasetTransformOpsTest, PrefetchKeepsTheElementAStepGaveUpOn) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root.WithOpName("q"), {DT_INT64});
  auto v = ops::Placeholder(root.WithOpName("v"), DT_INT64);
  ops::QueueEnqueueV2(root.WithOpName("put"), q, {Input(v)});
  // Each element waits for a value in the queue and adds it.
  auto add = Fn(root, "AddDequeued", {{"x", DT_INT64}, {"q", DT_RESOURCE}},
                [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                  auto deq = ops::QueueDequeueV2(s, a[1], {DT_INT64});
                  return Outputs{ops::AddV2(s, a[0], deq[0])};
                });
  auto mapped = ops::MapDataset(root, Range(root, 0, 10), {Input(q)}, add,
                                kInt64, kScalar);
  AddIterator(
      root, ops::PrefetchDataset(root, mapped, Int(root, 2), kInt64, kScalar));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  RunOptions options;
  options.set_timeout_in_ms(200);
  RunMetadata metadata;
  Status st = s->Run(options, {}, {"next:0"}, {}, &out, &metadata);
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  ASSERT_OK(s->Run({{"v", Tensor::Scalar<int64_t>(100)}}, {}, {"put"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 100);
  ASSERT_OK(s->Run({{"v", Tensor::Scalar<int64_t>(200)}}, {}, {"put"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 201);
}

TEST(DatasetTransformOpsTest, ZipEndsWithTheShortestInput) {
  Scope root = Scope::NewRootScope();
  const std::vector<DataType> two = {DT_INT64, DT_INT64};
  const std::vector<PartialTensorShape> two_scalars = {PartialTensorShape({}),
                                                       PartialTensorShape({})};
  auto zipped = ops::ZipDataset(root, {Range(root, 0, 3), Range(root, 10, 15)},
                                two, two_scalars);
  ops::DatasetCardinality(root.WithOpName("card"), zipped);
  AddIterator(root, zipped, two, two_scalars);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  auto elements = DrainAll(s.get(), 2);
  ASSERT_EQ(elements.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(elements[i][0].scalar<int64_t>(), i);
    EXPECT_EQ(elements[i][1].scalar<int64_t>(), 10 + i);
  }
  ASSERT_OK(s->Run({}, {"card:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 3);
}

TEST(DatasetTransformOpsTest, ConcatenateFollowsOneInputWithTheOther) {
  Scope root = Scope::NewRootScope();
  auto both = ops::ConcatenateDataset(root, Range(root, 0, 3),
                                      Range(root, 10, 12), kInt64, kScalar);
  ops::DatasetCardinality(root.WithOpName("card"), both);
  AddIterator(root, both);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(Drain(s.get()), ElementsAre(0, 1, 2, 10, 11));
  ASSERT_OK(s->Run({}, {"card:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 5);
}

TEST(DatasetTransformOpsTest, ConcatenateRejectsDifferentDtypes) {
  Scope root = Scope::NewRootScope();
  auto strings = ops::TensorSliceDataset(
      root, {ops::Const(root, Strings({"a"}))}, kScalar);
  auto both = ops::ConcatenateDataset(root, Range(root, 0, 3), strings, kInt64,
                                      kScalar);
  AddIterator(root, both);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  EXPECT_EQ(s->Run({}, {}, {"init"}, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DatasetTransformOpsTest, CacheReplaysTheFirstEpoch) {
  Scope root = Scope::NewRootScope();
  // Unseeded reshuffling: without the cache the epochs would differ.
  auto shuffled =
      ops::ShuffleDataset(root, Range(root, 0, 20), Int(root, 20), Int(root, 0),
                          Int(root, 0), kInt64, kScalar);
  auto cached =
      ops::CacheDataset(root, shuffled, ops::Const(root, ""), kInt64, kScalar);
  auto [first, second] = TwoEpochs(root, cached, 20);
  EXPECT_TRUE(IsPermutationOfIota(first, 20));
  EXPECT_EQ(first, second);
}

// Note [File caches]: the first epoch is written to a tensor bundle and the
// second, and another graph's iterators over a different input, read it.
TEST(DatasetTransformOpsTest, CacheToAFileIsWrittenOnceThenRead) {
  const std::string file = MakeTempDir() + "/cache";
  std::vector<int64_t> first;
  {
    Scope root = Scope::NewRootScope();
    auto shuffled =
        ops::ShuffleDataset(root, Range(root, 0, 20), Int(root, 20),
                            Int(root, 0), Int(root, 0), kInt64, kScalar);
    auto cached = ops::CacheDataset(root, shuffled, ops::Const(root, file),
                                    kInt64, kScalar);
    auto [a, b] = TwoEpochs(root, cached, 20);
    EXPECT_TRUE(IsPermutationOfIota(a, 20));
    EXPECT_EQ(a, b);
    first = a;
  }
  EXPECT_TRUE(FileExists(file + ".index"));
  EXPECT_FALSE(FileExists(file + ".lockfile"));
  // Another graph with another input: the file answers.
  Scope root = Scope::NewRootScope();
  auto cached = ops::CacheDataset(root, Range(root, 100, 103),
                                  ops::Const(root, file), kInt64, kScalar);
  EXPECT_EQ(Values(root, cached), first);
  // A dataset of another dtype over the same file is an error naming it.
  Scope strings = Scope::NewRootScope();
  auto names = ops::TensorSliceDataset(
      strings, {Input(ops::Const(strings, Strings({"a"})))}, kScalar);
  auto wrong = ops::CacheDataset(strings, names, ops::Const(strings, file),
                                 {DT_STRING}, kScalar);
  AddIterator(strings, wrong, {DT_STRING});
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(strings));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  Status st = s->Run({}, {"next:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(file));
}

TEST(DatasetTransformOpsTest, UnfinishedFileCachesLeaveNothingAndLockWriters) {
  const std::string file = MakeTempDir() + "/partial";
  Scope root = Scope::NewRootScope();
  auto cached = ops::CacheDataset(root, Range(root, 0, 20),
                                  ops::Const(root, file), kInt64, kScalar);
  AddIterator(root, cached);
  // A second iterator over the same cache while the first writes.
  auto it2 =
      ops::IteratorV2(root.WithOpName("it2"), "it2", "", kInt64, kScalar);
  ops::MakeIterator(root.WithOpName("init2"), cached, it2);
  ASSERT_OK(root.status());
  {
    ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
    std::vector<Tensor> out;
    ASSERT_OK(s->Run({}, {}, {"init"}, &out));
    for (int i = 0; i < 3; ++i) ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
    EXPECT_TRUE(FileExists(file + ".lockfile"));
    Status st = s->Run({}, {}, {"init2"}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists) << st;
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("lockfile"));
  }
  // The session, and the writer with it, is gone after 3 of 20 elements.
  EXPECT_FALSE(FileExists(file + ".index"));
  EXPECT_FALSE(FileExists(file + ".lockfile"));
  // So the next one writes it, whole.
  Scope again = Scope::NewRootScope();
  auto whole = ops::CacheDataset(again, Range(again, 0, 20),
                                 ops::Const(again, file), kInt64, kScalar);
  EXPECT_EQ(Values(again, whole).size(), 20u);
  EXPECT_TRUE(FileExists(file + ".index"));
  EXPECT_FALSE(FileExists(file + ".lockfile"));
}

// ---------------------------------------------------------------------------
// File datasets

std::string TestData(const std::string& rel) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/" + rel;
}

// Session over TFRecordDataset(files, compression).
std::vector<std::string> ReadTFRecords(const std::vector<std::string>& files,
                                       const std::string& compression,
                                       Status* error = nullptr) {
  Scope root = Scope::NewRootScope();
  auto ds =
      ops::TFRecordDataset(root, ops::Const(root, Strings(files)),
                           ops::Const(root, compression), Int(root, 256 << 10));
  AddIterator(root, ds, kString, kScalar);
  EXPECT_OK(root.status());
  auto s = SessionFor(root);
  EXPECT_OK(s.status());
  if (!s.ok()) return {};
  std::vector<Tensor> out;
  EXPECT_OK((*s)->Run({}, {}, {"init"}, &out));
  return DrainStrings(s->get(), error);
}

TEST(ReaderDatasetOpsTest, TFRecordDatasetReadsTensorFlowsFile) {
  const std::string path = TestData("tf/records/imagenet_examples.tfrecord");
  std::vector<std::string> records = ReadTFRecords({path}, "");
  ASSERT_EQ(records.size(), 3u);
  // The first tf.Example's image/class/synset.
  EXPECT_THAT(records[0], HasSubstr("n02125311"));
  // Twice in a row: the files follow one another.
  EXPECT_EQ(ReadTFRecords({path, path}, "").size(), 6u);
}

void WriteRecords(const std::string& path, RecordCompression c,
                  const std::vector<std::string>& records) {
  auto w = RecordWriter::Create(path, c);
  ASSERT_OK(w.status());
  for (const auto& r : records) ASSERT_OK((*w)->WriteRecord(r));
  ASSERT_OK((*w)->Close());
}

TEST(ReaderDatasetOpsTest, TFRecordDatasetReadsCompressedFiles) {
  const std::string dir = MakeTempDir();
  const std::vector<std::string> want = {"alpha", "", "gamma"};
  WriteRecords(dir + "/z", RecordCompression::kZlib, want);
  WriteRecords(dir + "/g", RecordCompression::kGzip, want);
  EXPECT_EQ(ReadTFRecords({dir + "/z"}, "ZLIB"), want);
  EXPECT_EQ(ReadTFRecords({dir + "/g"}, "GZIP"), want);
  Status error;
  ReadTFRecords({dir + "/g"}, "", &error);
  EXPECT_FALSE(error.ok());
}

TEST(ReaderDatasetOpsTest, CorruptRecordIsDataLossNamingFileAndOffset) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/corrupt.tfrecord";
  WriteRecords(path, RecordCompression::kNone, {"first", "second", "third"});
  // Flip a data byte of the second record (offset 12 + 5 + 4 = 21; its data
  // starts 12 bytes later).
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(21 + 12 + 1);
    f.put('X');
  }
  Status error;
  std::vector<std::string> got = ReadTFRecords({path}, "", &error);
  EXPECT_THAT(got, ElementsAre("first"));
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
  EXPECT_THAT(std::string(error.message()), HasSubstr(path));
  EXPECT_THAT(std::string(error.message()), HasSubstr("21"));
}

TEST(ReaderDatasetOpsTest, TFRecordDatasetV2StartsAtByteOffsets) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/r";
  WriteRecords(path, RecordCompression::kNone, {"first", "second", "third"});
  Scope root = Scope::NewRootScope();
  // "first" takes 12 + 5 + 4 = 21 bytes.
  auto ds = ops::TFRecordDatasetV2(root, ops::Const(root, Strings({path})),
                                   ops::Const(root, ""), Int(root, 0),
                                   ops::Const(root, {int64_t{21}}));
  AddIterator(root, ds, kString, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(DrainStrings(s.get()), ElementsAre("second", "third"));
}

TEST(ReaderDatasetOpsTest, MissingFileIsNotFound) {
  Status error;
  ReadTFRecords({"/nonexistent/dir/file.tfrecord"}, "", &error);
  EXPECT_EQ(error.code(), absl::StatusCode::kNotFound) << error;
}

TEST(ReaderDatasetOpsTest, TextLineDatasetReadsLinesOfEveryFile) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream(dir + "/a.txt") << "one\ntwo\r\n\nlast";
    std::ofstream(dir + "/b.txt") << "b1\n";
  }
  Scope root = Scope::NewRootScope();
  auto ds = ops::TextLineDataset(
      root, ops::Const(root, Strings({dir + "/a.txt", dir + "/b.txt"})),
      ops::Const(root, ""), Int(root, 0));
  AddIterator(root, ds, kString, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(DrainStrings(s.get()),
              ElementsAre("one", "two", "", "last", "b1"));
}

TEST(ReaderDatasetOpsTest, FixedLengthRecordDatasetSplitsTheBody) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream(dir + "/good") << "HHabcdefF";  // 2 + 3 * 2 + 1
    std::ofstream(dir + "/bad") << "HHabcdeF";    // body of 5 bytes
  }
  for (const char* file : {"good", "bad"}) {
    Scope root = Scope::NewRootScope();
    auto ds = ops::FixedLengthRecordDatasetV2(
        root, ops::Const(root, dir + "/" + file), Int(root, 2), Int(root, 2),
        Int(root, 1), Int(root, 0), ops::Const(root, ""));
    AddIterator(root, ds, kString, kScalar);
    ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
    std::vector<Tensor> out;
    ASSERT_OK(s->Run({}, {}, {"init"}, &out));
    Status error;
    std::vector<std::string> got = DrainStrings(s.get(), &error);
    if (std::string(file) == "good") {
      EXPECT_OK(error);
      EXPECT_THAT(got, ElementsAre("ab", "cd", "ef"));
    } else {
      EXPECT_THAT(got, ElementsAre("ab", "cd"));
      EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
      EXPECT_THAT(std::string(error.message()), HasSubstr("body length 5"));
    }
  }
}

TEST(ReaderDatasetOpsTest, FileDatasetsAreMarkedDoesIOAndStateful) {
  for (const char* op :
       {"TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset",
        "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2"}) {
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_TRUE(d->does_io) << op;
    EXPECT_TRUE(d->op_def.is_stateful()) << op;
  }
  EXPECT_FALSE(OpRegistry::Global()->DoesIO("MapDataset"));
}

}  // namespace
}  // namespace runnel
