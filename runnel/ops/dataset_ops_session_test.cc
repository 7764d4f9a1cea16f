// tf.data's source and structural datasets and the iterator ops through a
// Session: element values, end of sequence, restarts, cardinalities, one-shot
// and anonymous iterators, and the errors for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runnel/framework/dataset.h"
#include "runnel/graph/define_function.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

StatusOr<std::unique_ptr<Session>> SessionFor(const Scope& root) {
  GraphDef gdef;
  RETURN_IF_ERROR(root.ToGraphDef(&gdef));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession());
  RETURN_IF_ERROR(session->Create(gdef));
  return session;
}

const std::vector<DataType> kInt64 = {DT_INT64};
const std::vector<PartialTensorShape> kScalar = {PartialTensorShape({})};

// An initializable iterator "it" over `dataset` with init op "init" and
// next element "next".
void AddIterator(const Scope& root, Output dataset,
                 const std::vector<DataType>& types,
                 const std::vector<PartialTensorShape>& shapes) {
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", types, shapes);
  ops::MakeIterator(root.WithOpName("init"), dataset, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, types, shapes);
}

// Every element of the iterator's first component, until End of sequence.
std::vector<int64_t> Drain(Session* s, const std::string& fetch = "next:0") {
  std::vector<int64_t> got;
  std::vector<Tensor> out;
  for (int i = 0; i < 1000; ++i) {
    Status st = s->Run({}, {fetch}, {}, &out);
    if (absl::IsOutOfRange(st)) {
      EXPECT_THAT(std::string(st.message()), HasSubstr("End of sequence"));
      return got;
    }
    EXPECT_OK(st);
    if (!st.ok()) return got;
    got.push_back(out[0].scalar<int64_t>());
  }
  ADD_FAILURE() << "no end of sequence";
  return got;
}

TEST(DatasetOpsTest, RangeEndsThenStartsOverAtMakeIterator) {
  Scope root = Scope::NewRootScope();
  auto range = ops::RangeDataset(root, ops::Const(root, int64_t{0}),
                                 ops::Const(root, int64_t{10}),
                                 ops::Const(root, int64_t{3}), kInt64, kScalar);
  AddIterator(root, range, kInt64, kScalar);
  ops::DatasetCardinality(root.WithOpName("card"), range);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  // Before the initializer runs: TF's message.
  Status st = s->Run({}, {"next:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("not been initialized"));
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(0, 3, 6, 9));
  // Still at the end, until the initializer runs again.
  EXPECT_TRUE(absl::IsOutOfRange(s->Run({}, {"next:0"}, {}, &out)));
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(0, 3, 6, 9));
  ASSERT_OK(s->Run({}, {"card:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 4);
}

TEST(DatasetOpsTest, NegativeStepsAndEmptyRanges) {
  for (auto [start, stop, step, want] :
       {std::tuple<int64_t, int64_t, int64_t, std::vector<int64_t>>{
            5, 0, -2, {5, 3, 1}},
        {0, 0, 1, {}},
        {3, 1, 1, {}}}) {
    Scope root = Scope::NewRootScope();
    auto range =
        ops::RangeDataset(root, ops::Const(root, start), ops::Const(root, stop),
                          ops::Const(root, step), kInt64, kScalar);
    AddIterator(root, range, kInt64, kScalar);
    ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
    std::vector<Tensor> out;
    ASSERT_OK(s->Run({}, {}, {"init"}, &out));
    EXPECT_EQ(Drain(s.get()), want) << start << " " << stop << " " << step;
  }
}

TEST(DatasetOpsTest, SlicesBatchesAndTheRemainder) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(
      root, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  auto names = ops::Const(root, Tensor::FromVector<tstring>({"a", "b", "c"}));
  const std::vector<DataType> types = {DT_FLOAT, DT_STRING};
  auto slices = ops::TensorSliceDataset(
      root, {Input(x), Input(names)},
      {PartialTensorShape({2}), PartialTensorShape({})});
  const std::vector<PartialTensorShape> batched = {PartialTensorShape({-1, 2}),
                                                   PartialTensorShape({-1})};
  auto keep = ops::BatchDatasetV2(root, slices, ops::Const(root, int64_t{2}),
                                  ops::Const(root, false), types, batched);
  auto drop = ops::BatchDatasetV2(root, slices, ops::Const(root, int64_t{2}),
                                  ops::Const(root, true), types, batched);
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", types, batched);
  ops::MakeIterator(root.WithOpName("keep"), keep, it);
  ops::MakeIterator(root.WithOpName("drop"), drop, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, types, batched);
  ops::DatasetCardinality(root.WithOpName("card_keep"), keep);
  ops::DatasetCardinality(root.WithOpName("card_drop"), drop);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"keep"}, &out));
  ASSERT_OK(s->Run({}, {"next:0", "next:1"}, {}, &out));
  ExpectTensorEqual<float>(
      out[0], Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  ExpectTensorEqual<tstring>(out[1], Tensor::FromVector<tstring>({"a", "b"}));
  ASSERT_OK(s->Run({}, {"next:0", "next:1"}, {}, &out));
  ExpectTensorEqual<float>(
      out[0], Tensor::FromVector<float>({5, 6}, TensorShape({1, 2})));
  ExpectTensorEqual<tstring>(out[1], Tensor::FromVector<tstring>({"c"}));
  EXPECT_TRUE(absl::IsOutOfRange(s->Run({}, {"next:0"}, {}, &out)));
  // drop_remainder: only the full batch.
  ASSERT_OK(s->Run({}, {}, {"drop"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  EXPECT_EQ(out[0].dim_size(0), 2);
  EXPECT_TRUE(absl::IsOutOfRange(s->Run({}, {"next:0"}, {}, &out)));
  ASSERT_OK(s->Run({}, {"card_keep:0", "card_drop:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 2);
  EXPECT_EQ(out[1].scalar<int64_t>(), 1);
}

TEST(DatasetOpsTest, RepeatSkipTakeAndTheirCardinalities) {
  Scope root = Scope::NewRootScope();
  auto i64 = [&](int64_t v) { return ops::Const(root, v); };
  auto range = ops::RangeDataset(root, i64(0), i64(3), i64(1), kInt64, kScalar);
  auto twice = ops::RepeatDataset(root, range, i64(2), kInt64, kScalar);
  auto skip = ops::SkipDataset(root, twice, i64(1), kInt64, kScalar);
  auto take = ops::TakeDataset(root, skip, i64(3), kInt64, kScalar);
  auto forever = ops::RepeatDataset(root, range, i64(-1), kInt64, kScalar);
  auto first7 = ops::TakeDataset(root, forever, i64(7), kInt64, kScalar);
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", kInt64, kScalar);
  ops::MakeIterator(root.WithOpName("init"), take, it);
  ops::MakeIterator(root.WithOpName("init7"), first7, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, kInt64, kScalar);
  for (auto [name, ds] : {std::pair<const char*, Output>{"c_twice", twice},
                          {"c_skip", skip},
                          {"c_take", take},
                          {"c_forever", forever},
                          {"c_first7", first7}}) {
    ops::DatasetCardinality(root.WithOpName(name), ds);
  }
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(1, 2, 0));
  ASSERT_OK(s->Run({}, {}, {"init7"}, &out));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(0, 1, 2, 0, 1, 2, 0));
  ASSERT_OK(s->Run(
      {}, {"c_twice:0", "c_skip:0", "c_take:0", "c_forever:0", "c_first7:0"},
      {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 6);
  EXPECT_EQ(out[1].scalar<int64_t>(), 5);
  EXPECT_EQ(out[2].scalar<int64_t>(), 3);
  EXPECT_EQ(out[3].scalar<int64_t>(), kInfiniteCardinality);
  EXPECT_EQ(out[4].scalar<int64_t>(), 7);
}

TEST(DatasetOpsTest, TensorDatasetIsOneElement) {
  Scope root = Scope::NewRootScope();
  auto t =
      ops::TensorDataset(root, {Input(ops::Const(root, int64_t{42}))}, kScalar);
  AddIterator(root, t, kInt64, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(42));
}

TEST(DatasetOpsTest, OneShotIteratorMakesItsDatasetOnFirstUse) {
  Scope root = Scope::NewRootScope();
  // TF 1.x's make_one_shot_iterator: the dataset comes from a function.
  ASSERT_OK_AND_ASSIGN(
      NameAttrList factory,
      DefineFunction(
          root, "MakeRange", {},
          [](const Scope& s,
             const std::vector<Output>&) -> StatusOr<std::vector<Output>> {
            auto r = ops::RangeDataset(
                s, ops::Const(s, int64_t{1}), ops::Const(s, int64_t{4}),
                ops::Const(s, int64_t{1}), kInt64, kScalar);
            auto m = ops::ModelDataset(s, r, kInt64, kScalar);
            return std::vector<Output>{m};
          }));
  auto it =
      ops::OneShotIterator(root.WithOpName("it"), factory, kInt64, kScalar);
  ops::IteratorGetNext(root.WithOpName("next"), it, kInt64, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  EXPECT_THAT(Drain(s.get()), ::testing::ElementsAre(1, 2, 3));
}

TEST(DatasetOpsTest, AnonymousIteratorsAreDistinctAndDeletable) {
  Scope root = Scope::NewRootScope();
  auto range = ops::RangeDataset(root, ops::Const(root, int64_t{0}),
                                 ops::Const(root, int64_t{5}),
                                 ops::Const(root, int64_t{1}), kInt64, kScalar);
  ops::AnonymousIteratorV2 anon(root.WithOpName("anon"), kInt64, kScalar);
  auto init = ops::MakeIterator(root.WithOpName("init"), range, anon.handle);
  ops::IteratorGetNext(root.WithOpName("next").WithControlDependencies(init),
                       anon.handle, kInt64, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  // Each run makes a new iterator at the start of the range.
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
    EXPECT_EQ(out[0].scalar<int64_t>(), 0);
  }
  // DeleteIterator on a handle fed back in: later reads fail cleanly.
  ASSERT_OK(s->Run({}, {"anon:0", "anon:1"}, {}, &out));
  Scope del = Scope::NewRootScope();
  auto h = ops::Placeholder(del.WithOpName("h"), DT_RESOURCE);
  auto d = ops::Placeholder(del.WithOpName("d"), DT_VARIANT);
  ops::DeleteIterator(del.WithOpName("delete"), h, d);
  ops::IteratorGetNext(del.WithOpName("read"), h, kInt64, kScalar);
  GraphDef gdef;
  ASSERT_OK(del.ToGraphDef(&gdef));
  ASSERT_OK(s->Extend(gdef));
  std::vector<Tensor> none;
  ASSERT_OK(s->Run({{"h", out[0]}, {"d", out[1]}}, {}, {"delete"}, &none));
  Status st = s->Run({{"h", out[0]}}, {"read:0"}, {}, &none);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
}

TEST(DatasetOpsTest, FeedableIteratorsPickTheIteratorByStringHandle) {
  // TF 1.x's Iterator.from_string_handle: one GetNext, fed the string
  // handle of the training or the validation iterator.
  Scope root = Scope::NewRootScope();
  auto i64 = [&](int64_t v) { return ops::Const(root, v); };
  auto train = ops::RangeDataset(root, i64(0), i64(3), i64(1), kInt64, kScalar);
  auto valid =
      ops::RangeDataset(root, i64(100), i64(102), i64(1), kInt64, kScalar);
  auto it_train =
      ops::IteratorV2(root.WithOpName("it_train"), "t", "", kInt64, kScalar);
  auto it_valid =
      ops::IteratorV2(root.WithOpName("it_valid"), "v", "", kInt64, kScalar);
  ops::MakeIterator(root.WithOpName("init_train"), train, it_train);
  ops::MakeIterator(root.WithOpName("init_valid"), valid, it_valid);
  ops::IteratorToStringHandle(root.WithOpName("h_train"), it_train);
  ops::IteratorToStringHandle(root.WithOpName("h_valid"), it_valid);
  auto handle = ops::Placeholder(root.WithOpName("handle"), DT_STRING);
  auto it = ops::IteratorFromStringHandleV2(
      root.WithOpName("from"), handle,
      ops::IteratorFromStringHandleV2::OutputTypes(kInt64));
  ops::IteratorGetNext(root.WithOpName("next"), it, kInt64, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out, handles;
  ASSERT_OK(s->Run({}, {}, {"init_train", "init_valid"}, &out));
  ASSERT_OK(s->Run({}, {"h_train:0", "h_valid:0"}, {}, &handles));
  auto next = [&](int which) {
    EXPECT_OK(s->Run({{"handle", handles[which]}}, {"next:0"}, {}, &out));
    return out.empty() ? -1 : out[0].scalar<int64_t>();
  };
  EXPECT_EQ(next(0), 0);
  EXPECT_EQ(next(1), 100);
  EXPECT_EQ(next(0), 1);
  EXPECT_EQ(next(1), 101);
  EXPECT_EQ(next(0), 2);
  // A string that is not a handle.
  Status st = s->Run({{"handle", Tensor::Scalar<tstring>("garbage")}},
                     {"next:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'from'"));
}

TEST(DatasetOpsTest, PaddedBatchesPadEachComponentToItsShape) {
  // Range(1, 4) mapped to x -> Fill([x, 2], x): elements of shape [x, 2].
  Scope root = Scope::NewRootScope();
  auto i64 = [&](int64_t v) { return ops::Const(root, v); };
  ASSERT_OK_AND_ASSIGN(
      NameAttrList fill,
      DefineFunction(
          root, "FillRows", {{"x", DT_INT64}},
          [](const Scope& s,
             const std::vector<Output>& a) -> StatusOr<std::vector<Output>> {
            auto dims = ops::Pack(s, {a[0], ops::Const(s, int64_t{2})});
            return std::vector<Output>{ops::Fill(s, dims, a[0])};
          }));
  auto range = ops::RangeDataset(root, i64(1), i64(4), i64(1), kInt64, kScalar);
  auto rows = ops::MapDataset(root, range, std::vector<Input>{}, fill, kInt64,
                              {PartialTensorShape({-1, 2})});
  const std::vector<PartialTensorShape> batched = {
      PartialTensorShape({-1, -1, 3})};
  auto padded = ops::PaddedBatchDatasetV2(
      root, rows, i64(2),
      {Input(ops::Const(root, Tensor::FromVector<int64_t>({-1, 3})))},
      {Input(i64(-1))}, ops::Const(root, false), batched);
  auto too_small = ops::PaddedBatchDatasetV2(
      root.WithOpName("too_small"), rows, i64(2),
      {Input(ops::Const(root, Tensor::FromVector<int64_t>({1, 2})))},
      {Input(i64(0))}, ops::Const(root, false), batched);
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", kInt64, batched);
  ops::MakeIterator(root.WithOpName("init"), padded, it);
  ops::MakeIterator(root.WithOpName("init_small"), too_small, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, kInt64, batched);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  ExpectTensorEqual<int64_t>(
      out[0], Tensor::FromVector<int64_t>({1, 1, -1, -1, -1, -1,  //
                                           2, 2, -1, 2, 2, -1},
                                          TensorShape({2, 2, 3})));
  ASSERT_OK(s->Run({}, {"next:0"}, {}, &out));
  ExpectTensorEqual<int64_t>(
      out[0], Tensor::FromVector<int64_t>({3, 3, -1, 3, 3, -1, 3, 3, -1},
                                          TensorShape({1, 3, 3})));
  EXPECT_TRUE(absl::IsOutOfRange(s->Run({}, {"next:0"}, {}, &out)));
  // Padding to less than an element's size.
  ASSERT_OK(s->Run({}, {}, {"init_small"}, &out));
  Status st = s->Run({}, {"next:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("smaller size"));
}

TEST(DatasetOpsTest, OptionalsEndALoopWithoutOutOfRange) {
  // TF 2's `for x in dataset` in a tf.function: GetNextAsOptional, then
  // HasValue / GetValue.
  Scope root = Scope::NewRootScope();
  auto range = ops::RangeDataset(root, ops::Const(root, int64_t{5}),
                                 ops::Const(root, int64_t{7}),
                                 ops::Const(root, int64_t{1}), kInt64, kScalar);
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", kInt64, kScalar);
  ops::MakeIterator(root.WithOpName("init"), range, it);
  auto opt = ops::IteratorGetNextAsOptional(root.WithOpName("opt"), it, kInt64,
                                            kScalar);
  ops::OptionalHasValue(root.WithOpName("has"), opt);
  ops::OptionalGetValue(root.WithOpName("value"), opt, kInt64, kScalar);
  auto none = ops::OptionalNone(root.WithOpName("none"));
  ops::OptionalGetValue(root.WithOpName("none_value"), none, kInt64, kScalar);
  auto some = ops::OptionalFromValue(root.WithOpName("some"),
                                     {Input(ops::Const(root, int64_t{9}))});
  ops::OptionalGetValue(root.WithOpName("some_value"), some, kInt64, kScalar);
  ASSERT_OK_AND_ASSIGN(auto s, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(s->Run({}, {}, {"init"}, &out));
  ASSERT_OK(s->Run({}, {"has:0", "value:0"}, {}, &out));
  EXPECT_TRUE(out[0].scalar<bool>());
  EXPECT_EQ(out[1].scalar<int64_t>(), 5);
  ASSERT_OK(s->Run({}, {"has:0", "value:0"}, {}, &out));
  EXPECT_EQ(out[1].scalar<int64_t>(), 6);
  ASSERT_OK(s->Run({}, {"has:0"}, {}, &out));
  EXPECT_FALSE(out[0].scalar<bool>());  // The end: no OutOfRange.
  ASSERT_OK(s->Run({}, {"some_value:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 9);
  Status st = s->Run({}, {"none_value:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("does not have a value"));
  st = s->Run({}, {"has:0", "value:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'value'"));
}

TEST(DatasetOpsTest, BadInputsAreErrorsNamingTheNode) {
  auto run = [](const std::function<void(const Scope&)>& build,
                const std::string& target) -> Status {
    Scope root = Scope::NewRootScope();
    build(root);
    ASSIGN_OR_RETURN(auto s, SessionFor(root));
    std::vector<Tensor> out;
    return s->Run({}, {}, {target}, &out);
  };
  // A zero step.
  Status st = run(
      [](const Scope& r) {
        auto range =
            ops::RangeDataset(r.WithOpName("range"), ops::Const(r, int64_t{0}),
                              ops::Const(r, int64_t{3}),
                              ops::Const(r, int64_t{0}), kInt64, kScalar);
        ops::DatasetCardinality(r.WithOpName("c"), range);
      },
      "c");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'range'"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("step must be"));
  // Components of different lengths.
  st = run(
      [](const Scope& r) {
        auto ds = ops::TensorSliceDataset(
            r.WithOpName("slices"),
            {Input(ops::Const(r, Tensor::FromVector<float>({1, 2}))),
             Input(ops::Const(r, Tensor::FromVector<float>({1, 2, 3})))},
            {kScalar[0], kScalar[0]});
        ops::DatasetCardinality(r.WithOpName("c"), ds);
      },
      "c");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'slices'"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("dimension 0"));
  // A zero batch size.
  st = run(
      [](const Scope& r) {
        auto range = ops::RangeDataset(
            r, ops::Const(r, int64_t{0}), ops::Const(r, int64_t{3}),
            ops::Const(r, int64_t{1}), kInt64, kScalar);
        auto b = ops::BatchDatasetV2(
            r.WithOpName("batch"), range, ops::Const(r, int64_t{0}),
            ops::Const(r, false), kInt64, {PartialTensorShape({-1})});
        ops::DatasetCardinality(r.WithOpName("c"), b);
      },
      "c");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'batch'"));
  // A dataset whose types differ from the iterator's.
  st = run(
      [](const Scope& r) {
        auto range = ops::RangeDataset(
            r, ops::Const(r, int64_t{0}), ops::Const(r, int64_t{3}),
            ops::Const(r, int64_t{1}), kInt64, kScalar);
        auto it = ops::IteratorV2(r, "it", "", {DT_FLOAT}, kScalar);
        ops::MakeIterator(r.WithOpName("init"), range, it);
      },
      "init");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("'init'"));
  // Something that is not a dataset where one is needed.
  st = run(
      [](const Scope& r) {
        auto it = ops::IteratorV2(r, "it", "", kInt64, kScalar);
        auto other = ops::AnonymousIteratorV2(r, kInt64, kScalar);
        ops::MakeIterator(r.WithOpName("init"), other.deleter, it);
      },
      "init");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("not a dataset"));
}

TEST(DatasetOpsTest, VariantTensorsAreNotSerialised) {
  Tensor t = DatasetToVariantTensor(nullptr);
  TensorProto proto;
  t.AsProtoTensorContent(&proto);
  EXPECT_TRUE(proto.tensor_content().empty());
  Status s = Tensor::FromProto(proto).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(DatasetFromVariantTensor(t).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DatasetFromVariantTensor(Tensor::Scalar<float>(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
