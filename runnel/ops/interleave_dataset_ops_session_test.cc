// InterleaveDataset and ParallelInterleaveDatasetV2/V3/V4
// (interleave_dataset_ops.cc) through a Session: TensorFlow's element order
// for several cycle and block lengths (computed by hand, and against a
// reference of TF's interleave_test.py algorithm), inner datasets of unequal
// lengths and empty ones, the parallel ops giving the same order, attr and
// input errors naming the node, function errors naming the element, and
// cancellation of a step that would loop forever.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "runnel/framework/dataset.h"
#include "runnel/graph/define_function.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

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
const std::vector<PartialTensorShape> kScalar = {PartialTensorShape({})};

Output Int(const Scope& s, int64_t v) { return ops::Const(s, v); }

Output Range(const Scope& s, Input start, Input stop) {
  return ops::RangeDataset(s, start, stop, Int(s, 1), kInt64, kScalar);
}

void AddIterator(const Scope& root, Output dataset) {
  auto it = ops::IteratorV2(root.WithOpName("it"), "it", "", kInt64, kScalar);
  ops::MakeIterator(root.WithOpName("init"), dataset, it);
  ops::IteratorGetNext(root.WithOpName("next"), it, kInt64, kScalar);
}

// Builds, initialises and drains the iterator over `dataset`; the first
// error (of init or next) ends it, in *error (else a test failure).
std::vector<int64_t> Values(const Scope& root, Output dataset,
                            Status* error = nullptr) {
  AddIterator(root, dataset);
  EXPECT_OK(root.status());
  auto s = SessionFor(root);
  EXPECT_OK(s.status());
  if (!s.ok()) return {};
  std::vector<int64_t> got;
  std::vector<Tensor> out;
  Status st = (*s)->Run({}, {}, {"init"}, &out);
  for (int i = 0; st.ok() && i < 10000; ++i) {
    st = (*s)->Run({}, {"next:0"}, {}, &out);
    if (absl::IsOutOfRange(st)) return got;
    if (st.ok()) got.push_back(out[0].scalar<int64_t>());
  }
  if (error != nullptr) {
    *error = st;
  } else {
    ADD_FAILURE() << (st.ok() ? Status(errors::Internal("no end")) : st);
  }
  return got;
}

NameAttrList Fn(const Scope& root, const std::string& name,
                const std::vector<FunctionArg>& args,
                const FunctionBuilder& build) {
  auto f = DefineFunction(root, name, args, build);
  EXPECT_OK(f.status());
  return f.ok() ? *f : NameAttrList();
}

// x -> range(10x, 10x + {3, 1, 0, 2, 4}[x]): inner datasets of unequal
// lengths, one empty. Fails (GatherV2) on x >= 5.
NameAttrList Unequal(const Scope& root) {
  return Fn(root, "Unequal", {{"x", DT_INT64}},
            [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
              auto lengths = ops::Const(s, {int64_t{3}, 1, 0, 2, 4});
              auto n = ops::GatherV2(s, lengths, a[0], Int(s, 0));
              auto start = ops::Mul(s, a[0], Int(s, 10));
              return Outputs{Range(s, start, ops::Add(s, start, n))};
            });
}
const std::vector<std::vector<int64_t>> kUnequal = {
    {0, 1, 2}, {10}, {}, {30, 31}, {40, 41, 42, 43}};

// TF's interleave_test.py reference (`_interleave`), restated.
std::vector<int64_t> Reference(const std::vector<std::vector<int64_t>>& lists,
                               int cycle, int block) {
  std::vector<int64_t> out;
  std::vector<int> slot(cycle, -1);  // list index or -1
  std::vector<size_t> pos(lists.size(), 0);
  size_t next = 0;
  int open = 0;
  for (int i = 0; i < cycle && next < lists.size(); ++i, ++open) {
    slot[i] = static_cast<int>(next++);
  }
  while (open > 0 || next < lists.size()) {
    for (int i = 0; i < cycle; ++i) {
      if (slot[i] < 0) {
        if (next == lists.size()) continue;
        slot[i] = static_cast<int>(next++);
        ++open;
      }
      for (int b = 0; b < block; ++b) {
        const auto& l = lists[slot[i]];
        if (pos[slot[i]] == l.size()) {
          slot[i] = -1;
          --open;
          break;
        }
        out.push_back(l[pos[slot[i]]++]);
      }
    }
  }
  return out;
}

enum class Variant { kInterleave, kV2, kV3, kV4 };

Output Interleave(const Scope& root, Variant v, Output input, NameAttrList f,
                  int64_t cycle, int64_t block, int64_t calls = 2,
                  int64_t buffer = -1, const char* deterministic = "default") {
  const Scope s = root.WithOpName("il");
  switch (v) {
    case Variant::kInterleave:
      return ops::InterleaveDataset(s, input, {}, Int(root, cycle),
                                    Int(root, block), f, kInt64, kScalar);
    case Variant::kV2:
      return ops::ParallelInterleaveDatasetV2(
          s, input, {}, Int(root, cycle), Int(root, block), Int(root, calls), f,
          kInt64, kScalar);
    case Variant::kV3:
      return ops::ParallelInterleaveDatasetV3(
          s, input, {}, Int(root, cycle), Int(root, block), Int(root, calls), f,
          kInt64, kScalar,
          ops::ParallelInterleaveDatasetV3::Deterministic(deterministic));
    case Variant::kV4:
      return ops::ParallelInterleaveDatasetV4(
          s, input, {}, Int(root, cycle), Int(root, block), Int(root, buffer),
          Int(root, -1), Int(root, calls), f, kInt64, kScalar,
          ops::ParallelInterleaveDatasetV4::Deterministic(deterministic));
  }
  return Output();
}

TEST(InterleaveDatasetTest, TensorFlowsDocstringExample) {
  // Dataset.range(1, 6).interleave(
  //     lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
  //     block_length=4)
  for (Variant v : {Variant::kInterleave, Variant::kV4}) {
    Scope root = Scope::NewRootScope();
    auto f = Fn(root, "Six", {{"x", DT_INT64}},
                [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                  auto one = ops::TensorDataset(s, {a[0]}, kScalar);
                  return Outputs{
                      ops::RepeatDataset(s, one, Int(s, 6), kInt64, kScalar)};
                });
    EXPECT_THAT(Values(root, Interleave(root, v,
                                        Range(root, Int(root, 1), Int(root, 6)),
                                        f, 2, 4)),
                ElementsAre(1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4,
                            4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5));
  }
}

std::vector<int64_t> UnequalValues(Variant v, int64_t cycle, int64_t block,
                                   int64_t calls = 2, int64_t buffer = -1,
                                   const char* deterministic = "default") {
  Scope root = Scope::NewRootScope();
  auto in = Range(root, Int(root, 0), Int(root, 5));
  return Values(root, Interleave(root, v, in, Unequal(root), cycle, block,
                                 calls, buffer, deterministic));
}

TEST(InterleaveDatasetTest, UnequalAndEmptyInnerDatasetsByHand) {
  // Inner datasets [0 1 2] [10] [] [30 31] [40 41 42 43].
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 1, 1),
              ElementsAre(0, 1, 2, 10, 30, 31, 40, 41, 42, 43));
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 1, 3),
              ElementsAre(0, 1, 2, 10, 30, 31, 40, 41, 42, 43));
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 2, 1),
              ElementsAre(0, 10, 1, 2, 30, 40, 31, 41, 42, 43));
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 3, 2),
              ElementsAre(0, 1, 10, 2, 30, 31, 40, 41, 42, 43));
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 5, 1),
              ElementsAre(0, 10, 30, 40, 1, 31, 41, 2, 42, 43));
  EXPECT_THAT(UnequalValues(Variant::kInterleave, 8, 1),
              ElementsAre(0, 10, 30, 40, 1, 31, 41, 2, 42, 43));
}

TEST(InterleaveDatasetTest, EveryVariantMatchesTheReference) {
  for (int cycle : {1, 2, 3, 4, 7}) {
    for (int block : {1, 2, 3, 5}) {
      const auto want = Reference(kUnequal, cycle, block);
      EXPECT_EQ(UnequalValues(Variant::kInterleave, cycle, block), want)
          << cycle << " " << block;
      for (int64_t calls : {int64_t{1}, int64_t{cycle}, int64_t{-1}}) {
        EXPECT_EQ(UnequalValues(Variant::kV2, cycle, block, calls), want)
            << "V2 " << cycle << " " << block << " " << calls;
        EXPECT_EQ(UnequalValues(Variant::kV3, cycle, block, calls, -1, "false"),
                  want)
            << "V3 " << cycle << " " << block << " " << calls;
        for (int64_t buffer : {1, 2, 10, -1}) {
          EXPECT_EQ(
              UnequalValues(Variant::kV4, cycle, block, calls, buffer, "true"),
              want)
              << "V4 " << cycle << " " << block << " " << calls << " "
              << buffer;
        }
      }
    }
  }
}

TEST(InterleaveDatasetTest, AutotuneCycleLengthGivesEveryElement) {
  for (Variant v : {Variant::kInterleave, Variant::kV4}) {
    std::vector<int64_t> got = UnequalValues(v, -1, 1, -1);
    std::sort(got.begin(), got.end());
    EXPECT_THAT(got, ElementsAre(0, 1, 2, 10, 30, 31, 40, 41, 42, 43));
  }
}

Status InitError(Variant v, int64_t cycle, int64_t block, int64_t calls = 1,
                 int64_t buffer = -1) {
  Scope root = Scope::NewRootScope();
  auto in = Range(root, Int(root, 0), Int(root, 5));
  Status error;
  std::vector<int64_t> got = Values(
      root, Interleave(root, v, in, Unequal(root), cycle, block, calls, buffer),
      &error);
  EXPECT_TRUE(got.empty());
  return error;
}

TEST(InterleaveDatasetTest, BadLengthsAreInvalidArgumentsNamingTheNode) {
  for (Variant v :
       {Variant::kInterleave, Variant::kV2, Variant::kV3, Variant::kV4}) {
    for (auto [cycle, block] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 1}, {-2, 1}, {2, 0}, {2, -1}}) {
      Status st = InitError(v, cycle, block);
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
      EXPECT_THAT(std::string(st.message()), HasSubstr("'il'")) << st;
      EXPECT_THAT(std::string(st.message()),
                  HasSubstr(block > 0 ? "cycle_length" : "block_length"));
    }
  }
  Status st = InitError(Variant::kV4, 2, 1, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(
      std::string(st.message()),
      HasSubstr("ParallelInterleaveDatasetV4 'il': num_parallel_calls"));
  st = InitError(Variant::kV4, 2, 1, 3);  // more calls than cycle_length
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = InitError(Variant::kV4, 2, 1, 1, 0);
  EXPECT_THAT(std::string(st.message()), HasSubstr("buffer_output_elements"));
}

TEST(InterleaveDatasetTest, FunctionErrorsNameTheElement) {
  // Unequal fails on input element 5 (x = 5), after the others are done
  // with cycle 1; with cycle 2 the error comes when slot 1 is refilled.
  for (Variant v : {Variant::kInterleave, Variant::kV2, Variant::kV4}) {
    for (int64_t cycle : {1, 2}) {
      Scope root = Scope::NewRootScope();
      auto in = Range(root, Int(root, 0), Int(root, 7));
      Status error;
      std::vector<int64_t> got = Values(
          root, Interleave(root, v, in, Unequal(root), cycle, 1, 1), &error);
      EXPECT_THAT(std::string(error.message()),
                  HasSubstr("'il': function 'Unequal' failed on element 5"))
          << error;
      if (cycle == 1) {
        EXPECT_THAT(got, ElementsAre(0, 1, 2, 10, 30, 31, 40, 41, 42, 43));
      } else {
        // Slot 1 is refilled with element 5 after 42.
        EXPECT_THAT(got, ElementsAre(0, 10, 1, 2, 30, 40, 31, 41, 42));
      }
    }
  }
}

TEST(InterleaveDatasetTest, InnerErrorsComeInOrderFromTheParallelOps) {
  // x -> map(range(x, x + 2), [10, 20, 30][.]): inner element 3 fails.
  for (Variant v : {Variant::kInterleave, Variant::kV4}) {
    Scope root = Scope::NewRootScope();
    auto lookup = Fn(root, "Lookup", {{"x", DT_INT64}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       auto table = ops::Const(s, {int64_t{10}, 20, 30});
                       return Outputs{ops::GatherV2(s, table, a[0], Int(s, 0))};
                     });
    auto f =
        Fn(root, "Pairs", {{"x", DT_INT64}},
           [&](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
             auto r = Range(s, a[0], ops::Add(s, a[0], Int(s, 2)));
             return Outputs{ops::MapDataset(s, r, {}, lookup, kInt64, kScalar)};
           });
    Status error;
    std::vector<int64_t> got =
        Values(root,
               Interleave(root, v, Range(root, Int(root, 0), Int(root, 3)), f,
                          3, 1, 3, 4),
               &error);
    EXPECT_THAT(got, ElementsAre(10, 20, 30, 20, 30));
    EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
    EXPECT_THAT(std::string(error.message()), HasSubstr("Lookup")) << error;
  }
}

TEST(InterleaveDatasetTest, FunctionNotReturningADatasetIsAnError) {
  Scope root = Scope::NewRootScope();
  auto f = Fn(root, "NotADataset", {{"x", DT_INT64}},
              [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                return Outputs{ops::Identity(s, a[0])};
              });
  Status error;
  Values(root,
         Interleave(root, Variant::kInterleave,
                    Range(root, Int(root, 0), Int(root, 3)), f, 2, 1),
         &error);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
  EXPECT_THAT(std::string(error.message()),
              HasSubstr("'il': function 'NotADataset' on element 0"));
}

// An endless input whose datasets are all empty: GetNext never finds an
// element, so only cancellation ends the step.
std::unique_ptr<Session> EndlessEmptySession(Variant v) {
  Scope root = Scope::NewRootScope();
  auto f = Fn(root, "Empty", {{"x", DT_INT64}},
              [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                return Outputs{Range(s, a[0], a[0])};
              });
  auto endless = Range(root, Int(root, 0), Int(root, int64_t{1} << 62));
  AddIterator(root, Interleave(root, v, endless, f, 2, 1, 2));
  EXPECT_OK(root.status());
  auto s = SessionFor(root);
  EXPECT_OK(s.status());
  if (!s.ok()) return nullptr;
  std::vector<Tensor> out;
  EXPECT_OK((*s)->Run({}, {}, {"init"}, &out));
  return std::move(*s);
}

TEST(InterleaveDatasetTest, TimeoutEndsAStepThatFindsNoElement) {
  for (Variant v : {Variant::kInterleave, Variant::kV4}) {
    std::unique_ptr<Session> s = EndlessEmptySession(v);
    ASSERT_NE(s, nullptr);
    RunOptions o;
    o.set_timeout_in_ms(200);
    std::vector<Tensor> out;
    Status st = s->Run(o, {}, {"next:0"}, {}, &out, nullptr);
    EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  }
}

TEST(InterleaveDatasetTest, CloseMidIterationDoesNotHang) {
  for (Variant v : {Variant::kInterleave, Variant::kV4}) {
    std::unique_ptr<Session> s = EndlessEmptySession(v);
    ASSERT_NE(s, nullptr);
    std::atomic<bool> done{false};
    Status st;
    std::thread consumer([&] {
      std::vector<Tensor> out;
      st = s->Run({}, {"next:0"}, {}, &out);
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(done);
    ASSERT_OK(s->Close());
    consumer.join();
    EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  }
}

TEST(InterleaveDatasetTest, ParallelReadsOfTheSameIteratorAcrossSteps) {
  // Many GetNext calls, each reading ahead on the pool: the order holds and
  // the iterator (and its threads) go away with the session.
  Scope root = Scope::NewRootScope();
  auto f = Fn(root, "Tens", {{"x", DT_INT64}},
              [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                auto start = ops::Mul(s, a[0], Int(s, 100));
                return Outputs{Range(s, start, ops::Add(s, start, a[0]))};
              });
  auto ds = Interleave(root, Variant::kV4,
                       Range(root, Int(root, 0), Int(root, 30)), f, 4, 3, 4, 5);
  std::vector<std::vector<int64_t>> lists;
  for (int64_t x = 0; x < 30; ++x) {
    lists.emplace_back();
    for (int64_t i = 0; i < x; ++i) lists.back().push_back(100 * x + i);
  }
  EXPECT_EQ(Values(root, ds), Reference(lists, 4, 3));
}

}  // namespace
}  // namespace runnel
