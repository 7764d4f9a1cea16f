// Partitioned embeddings: shard sizes, lookups under both partition
// strategies against the table they stand for, and sparse training end to
// end (one optimizer step changes only the looked-up rows of each shard,
// bit for bit, and matches the closed form).
#include "runnel/training/embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runnel/runnel.h"
#include "runnel/training/optimizer.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

using ::testing::HasSubstr;

constexpr PartitionStrategy kMod = PartitionStrategy::kMod;
constexpr PartitionStrategy kDiv = PartitionStrategy::kDiv;

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DT_FLOAT) {
    for (float f : t.flat<float>()) v.push_back(f);
  } else {
    for (double d : t.flat<double>()) v.push_back(d);
  }
  return v;
}

Tensor FetchTensor(const ClientSession& session, const Output& o) {
  std::vector<Tensor> out;
  Status s = session.Run({o}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? out[0] : Tensor();
}

Status RunOps(const ClientSession& session, const std::vector<Operation>& ops) {
  std::vector<Tensor> unused;
  return session.Run({}, {}, ops, &unused);
}

std::vector<std::string> OpTypes(const Scope& root) {
  GraphDef gdef;
  EXPECT_TRUE(root.ToGraphDef(&gdef).ok());
  std::vector<std::string> types;
  for (int i = 0; i < gdef.node_size(); ++i) types.push_back(gdef.node(i).op());
  return types;
}
bool HasOp(const std::vector<std::string>& types, const std::string& op) {
  return std::find(types.begin(), types.end(), op) != types.end();
}

// The shard and shard-local row of `id` (embedding.h's formulas, by hand).
std::pair<int, int64_t> Place(int64_t id, int64_t rows, int n,
                              PartitionStrategy strategy) {
  if (strategy == kMod) return {static_cast<int>(id % n), id / n};
  const std::vector<int64_t> sizes = ShardRows(rows, n);
  int64_t start = 0;
  for (int k = 0; k < n; ++k) {
    if (id < start + sizes[k]) return {k, id - start};
    start += sizes[k];
  }
  return {-1, -1};
}

// Table row `id` of a [rows, 3] table: [id, 10 id + 1, -id / 4].
std::vector<double> Row(int64_t id) {
  return {static_cast<double>(id), 10.0 * id + 1, -id / 4.0};
}

// Assigns the table rows to the shards of `emb` under `strategy`.
std::vector<Operation> AssignTable(const Scope& root,
                                   const PartitionedVariable& emb,
                                   PartitionStrategy strategy) {
  const int n = emb.num_shards();
  const int64_t rows = emb.shape().dim_size(0);
  std::vector<std::vector<double>> shard_values(n);
  std::vector<int64_t> sizes = ShardRows(rows, n);
  for (int k = 0; k < n; ++k) shard_values[k].resize(sizes[k] * 3);
  for (int64_t id = 0; id < rows; ++id) {
    auto [k, r] = Place(id, rows, n, strategy);
    for (int c = 0; c < 3; ++c) shard_values[k][r * 3 + c] = Row(id)[c];
  }
  std::vector<Operation> assigns;
  for (int k = 0; k < n; ++k) {
    Tensor t =
        Tensor::FromVector<double>(shard_values[k], TensorShape({sizes[k], 3}));
    assigns.push_back(
        ops::AssignVariableOp(root, emb.shards()[k].handle(),
                              ops::Cast(root, ops::Const(root, t), emb.dtype()))
            .operation);
  }
  return assigns;
}

TEST(EmbeddingTest, ShardRowsAndStrategies) {
  EXPECT_EQ(ShardRows(10, 3), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(ShardRows(9, 3), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(ShardRows(5, 4), (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(*ParsePartitionStrategy("mod"), kMod);
  EXPECT_EQ(*ParsePartitionStrategy("div"), kDiv);
  auto bad = ParsePartitionStrategy("modulo");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("\"modulo\""));
}

TEST(EmbeddingTest, PartitionedVariableMakesShards) {
  Scope root = Scope::NewRootScope();
  PartitionedVariable emb(root, "emb", TensorShape({10, 3}), 3,
                          Initializer::Zeros());
  ASSERT_OK(root.status());
  ASSERT_TRUE(emb.ok());
  EXPECT_EQ(emb.name(), "emb");
  ASSERT_EQ(emb.num_shards(), 3);
  EXPECT_EQ(emb.shards()[0].name(), "emb/part_0");
  EXPECT_EQ(emb.shards()[2].name(), "emb/part_2");
  EXPECT_EQ(emb.shards()[0].shape(), TensorShape({4, 3}));
  EXPECT_EQ(emb.shards()[1].shape(), TensorShape({3, 3}));
  EXPECT_EQ(TrainableVariables(root).size(), 3u);

  Scope bad = Scope::NewRootScope();
  PartitionedVariable tiny(bad, "tiny", TensorShape({2, 3}), 3,
                           Initializer::Zeros());
  EXPECT_FALSE(tiny.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("cannot split shape [2,3] into 3 shards"));
}

// Looks up ids [[7, 0], [3, 9], [3, 3]] in a [10, 3] table of `n` shards.
void CheckLookup(int n, PartitionStrategy strategy, DataType id_type,
                 bool variables, DataType dtype) {
  SCOPED_TRACE(::testing::Message()
               << n << " shards, " << (strategy == kMod ? "mod" : "div")
               << ", ids " << DataTypeString(id_type)
               << (variables ? ", variables" : ", tensors") << ", "
               << DataTypeString(dtype));
  Scope root = Scope::NewRootScope();
  PartitionedVariable emb(root, "emb", TensorShape({10, 3}), n,
                          Initializer::Zeros(), dtype);
  const std::vector<int64_t> id_values = {7, 0, 3, 9, 3, 3};
  Output ids;
  if (id_type == DT_INT32) {
    ids = ops::Const(root, Tensor::FromVector<int32_t>({7, 0, 3, 9, 3, 3},
                                                       TensorShape({3, 2})));
  } else {
    ids = ops::Const(
        root, Tensor::FromVector<int64_t>(id_values, TensorShape({3, 2})));
  }
  Output rows;
  if (variables) {
    rows = EmbeddingLookup(root, emb, ids, strategy);
  } else {
    std::vector<Output> values;
    for (const Variable& v : emb.shards()) values.push_back(v.value());
    rows = EmbeddingLookup(root, values, ids, strategy);
  }
  EXPECT_EQ(root.GetShape(rows), PartialTensorShape({3, 2, 3}));
  Output table = emb.AsTensor(root, strategy);
  auto assigns = AssignTable(root, emb, strategy);
  ASSERT_OK(root.status());
  ClientSession session(root);
  ASSERT_OK(RunOps(session, assigns));
  Tensor got = FetchTensor(session, rows);
  ASSERT_EQ(got.shape(), TensorShape({3, 2, 3}));
  std::vector<double> want;
  for (int64_t id : id_values) {
    for (double v : Row(id)) want.push_back(v);
  }
  EXPECT_EQ(Doubles(got), want);
  std::vector<double> all;
  for (int64_t id = 0; id < 10; ++id) {
    for (double v : Row(id)) all.push_back(v);
  }
  Tensor full = FetchTensor(session, table);
  EXPECT_EQ(full.shape(), TensorShape({10, 3}));
  EXPECT_EQ(Doubles(full), all);
}

TEST(EmbeddingTest, LookupMatchesTheTable) {
  for (int n : {1, 3, 4}) {
    for (PartitionStrategy strategy : {kMod, kDiv}) {
      for (DataType id_type : {DT_INT32, DT_INT64}) {
        for (bool variables : {true, false}) {
          CheckLookup(n, strategy, id_type, variables, DT_FLOAT);
        }
      }
    }
  }
  CheckLookup(3, kDiv, DT_INT64, true, DT_DOUBLE);
}

TEST(EmbeddingTest, LookupOfScalarIdsAndEmptyIds) {
  Scope root = Scope::NewRootScope();
  PartitionedVariable emb(root, "emb", TensorShape({5, 3}), 2,
                          Initializer::Zeros(), DT_DOUBLE);
  Output one = EmbeddingLookup(root, emb, ops::Const(root, int64_t{4}), kDiv);
  Output none = EmbeddingLookup(
      root, emb, ops::Const(root, Tensor(DT_INT32, TensorShape({0, 2}))));
  auto assigns = AssignTable(root, emb, kDiv);
  ASSERT_OK(root.status());
  ClientSession session(root);
  ASSERT_OK(RunOps(session, assigns));
  Tensor got = FetchTensor(session, one);
  EXPECT_EQ(got.shape(), TensorShape({3}));
  EXPECT_EQ(Doubles(got), Row(4));
  got = FetchTensor(session, none);
  EXPECT_EQ(got.shape(), TensorShape({0, 2, 3}));
}

TEST(EmbeddingTest, Errors) {
  {
    Scope root = Scope::NewRootScope();
    PartitionedVariable emb(root, "emb", TensorShape({5, 3}), 2,
                            Initializer::Zeros());
    EmbeddingLookup(root, emb, ops::Const(root, {1.f, 2.f}));
    EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(root.status().message()),
                HasSubstr("ids must be int32 or int64, not float"));
  }
  {
    Scope root = Scope::NewRootScope();
    Variable a(root, "a", TensorShape({3, 2}), Initializer::Zeros());
    Variable b(root, "b", TensorShape({3, 4}), Initializer::Zeros());
    EmbeddingLookup(root, std::vector<Variable>{a, b}, ops::Const(root, {1}));
    EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(root.status().message()),
                HasSubstr("params[1] has shape [3,4], whose rows differ"));
  }
  {
    Scope root = Scope::NewRootScope();
    EmbeddingLookup(root, std::vector<Variable>{}, ops::Const(root, {1}));
    EXPECT_THAT(std::string(root.status().message()), HasSubstr("no params"));
  }
  {
    // An id past the table fails when run, naming the shard-local index.
    Scope root = Scope::NewRootScope();
    PartitionedVariable emb(root, "emb", TensorShape({4, 1}), 2,
                            Initializer::Zeros());
    Output rows = EmbeddingLookup(root, emb, ops::Const(root, {1, 9}), kMod);
    auto init = GlobalVariablesInitializer(root);
    ASSERT_OK(root.status());
    ClientSession session(root);
    ASSERT_OK(RunOps(session, {init}));
    std::vector<Tensor> out;
    Status s = session.Run({rows}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("= 4 is not in [0, 2)"));
  }
}

// ---------------------------------------------------------------------------
// Sparse training end to end

// emb [12, 2] in 3 shards (seeded uniform values), looked up at `ids` with
// duplicates; loss = sum(rows * w) with w[i] = [i + 1, -(i + 1) / 2], so
// d loss / d table row r is the sum of w[i] over the i with ids[i] == r.
struct SparseModel {
  SparseModel(PartitionStrategy strategy, DataType dtype = DT_FLOAT)
      : strategy(strategy) {
    emb = PartitionedVariable(root, "emb", TensorShape({12, 2}), 3,
                              Initializer::RandomUniform(-1, 1, /*seed=*/3),
                              dtype);
    auto id_t = ops::Const(root, Tensor::FromVector<int64_t>(ids));
    Output rows = EmbeddingLookup(root, emb, id_t, strategy);
    std::vector<double> w;
    for (size_t i = 0; i < ids.size(); ++i) {
      w.push_back(i + 1.0);
      w.push_back(-(i + 1.0) / 2);
    }
    auto wt = ops::Cast(
        root,
        ops::Const(root,
                   Tensor::FromVector<double>(
                       w, TensorShape({static_cast<int64_t>(ids.size()), 2}))),
        dtype);
    loss = ops::Sum(root, ops::Mul(root, rows, wt), {0, 1});
  }
  // The gradient of table row `id`.
  std::vector<double> Grad(int64_t id) const {
    std::vector<double> g = {0, 0};
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] != id) continue;
      g[0] += i + 1.0;
      g[1] += -(i + 1.0) / 2;
    }
    return g;
  }

  PartitionStrategy strategy;
  const std::vector<int64_t> ids = {5, 0, 11, 5, 7, 5};
  Scope root = Scope::NewRootScope();
  PartitionedVariable emb;
  Output loss;
};

// The values of every shard of `emb`.
std::vector<std::vector<double>> ShardValues(const ClientSession& session,
                                             const PartitionedVariable& emb) {
  std::vector<std::vector<double>> out;
  for (const Variable& v : emb.shards()) {
    out.push_back(Doubles(FetchTensor(session, v.value())));
  }
  return out;
}

// Trains one step with `opt`; checks that exactly the looked-up rows
// changed (others bit-identical) and that each changed row satisfies
// `expect(old_row, grad_row, new_row)`.
void TrainOneStepAndCheck(
    SparseModel& m, Optimizer& opt, const std::string& sparse_op,
    const std::string& dense_op,
    const std::function<void(const std::vector<double>&,
                             const std::vector<double>&,
                             const std::vector<double>&)>& expect,
    const std::string& slot = "", double untouched_slot = 0) {
  Operation train;
  ASSERT_OK(opt.Minimize(m.root, m.loss, {}, nullptr, &train));
  const auto types = OpTypes(m.root);
  EXPECT_TRUE(HasOp(types, sparse_op));
  EXPECT_FALSE(HasOp(types, dense_op));
  auto init = GlobalVariablesInitializer(m.root);
  ASSERT_OK(m.root.status());
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {init}));
  const auto before = ShardValues(session, m.emb);
  ASSERT_OK(RunOps(session, {train}));
  const auto after = ShardValues(session, m.emb);
  const std::set<int64_t> touched(m.ids.begin(), m.ids.end());
  for (int64_t id = 0; id < 12; ++id) {
    SCOPED_TRACE(::testing::Message() << "row " << id);
    auto [k, r] = Place(id, 12, 3, m.strategy);
    const std::vector<double> old_row = {before[k][r * 2],
                                         before[k][r * 2 + 1]};
    const std::vector<double> new_row = {after[k][r * 2], after[k][r * 2 + 1]};
    if (touched.count(id)) {
      EXPECT_NE(old_row, new_row);
      expect(old_row, m.Grad(id), new_row);
    } else {
      EXPECT_EQ(old_row, new_row);  // Bit-identical.
    }
    if (!slot.empty()) {
      const Variable s = opt.GetSlot(m.emb.shards()[k], slot);
      ASSERT_TRUE(s.ok());
      const std::vector<double> sv = Doubles(FetchTensor(session, s.value()));
      if (!touched.count(id)) {
        EXPECT_EQ(sv[r * 2], untouched_slot);  // Double models.
        EXPECT_EQ(sv[r * 2 + 1], untouched_slot);
      }
    }
  }
}

TEST(EmbeddingTrainingTest, GradientDescentUpdatesOnlyLookedUpRows) {
  for (PartitionStrategy strategy : {kMod, kDiv}) {
    SCOPED_TRACE(strategy == kMod ? "mod" : "div");
    SparseModel m(strategy);
    GradientDescentOptimizer opt(0.1);
    TrainOneStepAndCheck(
        m, opt, "ResourceScatterSub", "ResourceApplyGradientDescent",
        [](const std::vector<double>& old_row, const std::vector<double>& g,
           const std::vector<double>& new_row) {
          for (int c = 0; c < 2; ++c) {
            EXPECT_NEAR(new_row[c], old_row[c] - 0.1 * g[c], 1e-5);
          }
        });
  }
}

TEST(EmbeddingTrainingTest, AdagradUpdatesOnlyLookedUpRows) {
  for (PartitionStrategy strategy : {kMod, kDiv}) {
    SCOPED_TRACE(strategy == kMod ? "mod" : "div");
    SparseModel m(strategy, DT_DOUBLE);
    AdagradOptimizer opt(0.5);
    TrainOneStepAndCheck(
        m, opt, "ResourceSparseApplyAdagrad", "ResourceApplyAdagrad",
        [](const std::vector<double>& old_row, const std::vector<double>& g,
           const std::vector<double>& new_row) {
          for (int c = 0; c < 2; ++c) {
            const double accum = 0.1 + g[c] * g[c];
            EXPECT_NEAR(new_row[c], old_row[c] - 0.5 * g[c] / std::sqrt(accum),
                        1e-12);
          }
        },
        "accumulator", 0.1);
  }
}

TEST(EmbeddingTrainingTest, MomentumUpdatesOnlyLookedUpRows) {
  SparseModel m(kMod, DT_DOUBLE);
  MomentumOptimizer opt(0.2, 0.9);
  TrainOneStepAndCheck(
      m, opt, "ResourceSparseApplyMomentum", "ResourceApplyMomentum",
      [](const std::vector<double>& old_row, const std::vector<double>& g,
         const std::vector<double>& new_row) {
        for (int c = 0; c < 2; ++c) {
          EXPECT_NEAR(new_row[c], old_row[c] - 0.2 * g[c], 1e-12);
        }
      },
      "momentum", 0);
}

TEST(EmbeddingTrainingTest, RMSPropUpdatesOnlyLookedUpRows) {
  SparseModel m(kDiv, DT_DOUBLE);
  RMSPropOptimizer opt(0.01, /*decay=*/0.9, /*momentum=*/0.5, 1e-10);
  TrainOneStepAndCheck(
      m, opt, "ResourceScatterUpdate", "ResourceApplyRMSProp",
      [](const std::vector<double>& old_row, const std::vector<double>& g,
         const std::vector<double>& new_row) {
        for (int c = 0; c < 2; ++c) {
          const double ms = 0.9 + 0.1 * g[c] * g[c];
          const double mom = 0.01 * g[c] / std::sqrt(ms + 1e-10);
          EXPECT_NEAR(new_row[c], old_row[c] - mom, 1e-12);
        }
      },
      "rms", 1);
}

TEST(EmbeddingTrainingTest, AdadeltaUpdatesOnlyLookedUpRows) {
  SparseModel m(kMod, DT_DOUBLE);
  AdadeltaOptimizer opt(1.0, /*rho=*/0.95, /*epsilon=*/1e-6);
  TrainOneStepAndCheck(
      m, opt, "ResourceScatterUpdate", "ResourceApplyAdadelta",
      [](const std::vector<double>& old_row, const std::vector<double>& g,
         const std::vector<double>& new_row) {
        for (int c = 0; c < 2; ++c) {
          const double accum = 0.05 * g[c] * g[c];
          const double u = std::sqrt(1e-6) / std::sqrt(accum + 1e-6) * g[c];
          EXPECT_NEAR(new_row[c], old_row[c] - u, 1e-12);
        }
      },
      "accum", 0);
}

TEST(EmbeddingTrainingTest, SparseEqualsDenseOverSteps) {
  // The same model trained with the lookup's gradient forced dense (an
  // Identity drops the sparse record) ends at the same values.
  SparseModel s(kDiv, DT_DOUBLE), d(kDiv, DT_DOUBLE);
  GradientDescentOptimizer so(0.05), dopt(0.05);
  Operation strain, dtrain;
  ASSERT_OK(so.Minimize(s.root, s.loss, {}, nullptr, &strain));
  std::vector<GradAndVar> gv;
  ASSERT_OK(dopt.ComputeGradients(d.root, d.loss, {}, &gv));
  for (auto& [g, v] : gv) g = ops::Identity(d.root, g);
  ASSERT_OK(dopt.ApplyGradients(d.root, gv, nullptr, &dtrain));
  EXPECT_TRUE(HasOp(OpTypes(d.root), "ResourceApplyGradientDescent"));
  auto sinit = GlobalVariablesInitializer(s.root);
  auto dinit = GlobalVariablesInitializer(d.root);
  ClientSession ss(s.root), ds(d.root);
  ASSERT_OK(RunOps(ss, {sinit}));
  ASSERT_OK(RunOps(ds, {dinit}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(RunOps(ss, {strain}));
    ASSERT_OK(RunOps(ds, {dtrain}));
  }
  const auto sv = ShardValues(ss, s.emb), dv = ShardValues(ds, d.emb);
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(sv[k].size(), dv[k].size());
    for (size_t j = 0; j < sv[k].size(); ++j) {
      EXPECT_NEAR(sv[k][j], dv[k][j], 1e-12) << "shard " << k << " at " << j;
    }
  }
}

TEST(EmbeddingTrainingTest, EmbeddingBagThroughValueIsSparse) {
  // A SparseSegmentMean over value() (not the handle): ComputeGradients
  // still gets the sparse record and Adagrad touches only rows 1 and 4.
  Scope root = Scope::NewRootScope();
  Variable emb(root, "bag", TensorShape({6, 2}),
               Initializer::RandomUniform(-1, 1, /*seed=*/5), DT_DOUBLE);
  auto bag = ops::SparseSegmentMean(root, emb, ops::Const(root, {4, 1, 4}),
                                    ops::Const(root, {0, 0, 1}));
  auto loss = ops::Sum(root, ops::Mul(root, bag, bag), {0, 1});
  AdagradOptimizer opt(0.1);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  EXPECT_TRUE(HasOp(OpTypes(root), "ResourceSparseApplyAdagrad"));
  auto init = GlobalVariablesInitializer(root);
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {init}));
  const auto before = Doubles(FetchTensor(session, emb.value()));
  ASSERT_OK(RunOps(session, {train}));
  const auto after = Doubles(FetchTensor(session, emb.value()));
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 2; ++c) {
      if (r == 1 || r == 4) {
        EXPECT_NE(before[r * 2 + c], after[r * 2 + c]) << r;
      } else {
        EXPECT_EQ(before[r * 2 + c], after[r * 2 + c]) << r;
      }
    }
  }
  // Closed form: bag0 = (e4 + e1) / 2, bag1 = e4; d loss / d e1 = bag0,
  // d loss / d e4 = bag0 + 2 bag1.
  for (int c = 0; c < 2; ++c) {
    const double e1 = before[2 + c], e4 = before[8 + c];
    const double bag0 = (e4 + e1) / 2;
    const double g1 = bag0, g4 = bag0 + 2 * e4;
    EXPECT_NEAR(after[2 + c], e1 - 0.1 * g1 / std::sqrt(0.1 + g1 * g1), 1e-12);
    EXPECT_NEAR(after[8 + c], e4 - 0.1 * g4 / std::sqrt(0.1 + g4 * g4), 1e-12);
  }
}

// ---------------------------------------------------------------------------
// EmbeddingLookupSparse (embedding bags)

TEST(EmbeddingSparseTest, BagsCombineRowsAndTrainSparsely) {
  // Bags: row 0 = {3, 8, 3}, row 1 empty, row 2 = {5}, row 3 empty (only
  // with num_segments = 4).
  for (Combiner combiner :
       {Combiner::kSum, Combiner::kMean, Combiner::kSqrtN}) {
    for (bool with_num : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << static_cast<int>(combiner) << " " << with_num);
      Scope root = Scope::NewRootScope();
      PartitionedVariable emb(root, "emb", TensorShape({10, 3}), 3,
                              Initializer::Zeros(), DT_DOUBLE);
      auto ids = ops::Const(root, Tensor::FromVector<int64_t>({3, 8, 3, 5}));
      auto seg = ops::Const(root, {0, 0, 0, 2});
      Output bags = EmbeddingLookupSparse(
          root, emb, ids, seg, combiner, kDiv,
          with_num ? Output(ops::Const(root, 4)) : Output());
      auto assigns = AssignTable(root, emb, kDiv);
      ASSERT_OK(root.status());
      ClientSession session(root);
      ASSERT_OK(RunOps(session, assigns));
      Tensor got = FetchTensor(session, bags);
      ASSERT_EQ(got.shape(), TensorShape({with_num ? 4 : 3, 3}));
      const double w0 = combiner == Combiner::kSum    ? 1
                        : combiner == Combiner::kMean ? 1 / 3.0
                                                      : 1 / std::sqrt(3.0);
      std::vector<double> want;
      for (int c = 0; c < 3; ++c) {
        want.push_back(w0 * (2 * Row(3)[c] + Row(8)[c]));
      }
      for (int c = 0; c < 3; ++c) want.push_back(0);
      for (int c = 0; c < 3; ++c) want.push_back(Row(5)[c]);
      if (with_num) {
        for (int c = 0; c < 3; ++c) want.push_back(0);
      }
      const std::vector<double> have = Doubles(got);
      ASSERT_EQ(have.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(have[i], want[i], 1e-12) << i;
      }
    }
  }
  // One SGD step moves only rows 3, 5 and 8: by lr * w0 * (count) * dy.
  Scope root = Scope::NewRootScope();
  PartitionedVariable emb(root, "emb", TensorShape({10, 3}), 3,
                          Initializer::RandomUniform(-1, 1, /*seed=*/9),
                          DT_DOUBLE);
  auto ids = ops::Const(root, Tensor::FromVector<int64_t>({3, 8, 3, 5}));
  auto seg = ops::Const(root, {0, 0, 0, 2});
  Output bags = EmbeddingLookupSparse(root, emb, ids, seg, Combiner::kMean);
  Output loss = ops::Sum(root, bags, {0, 1});
  GradientDescentOptimizer opt(0.3);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  EXPECT_TRUE(HasOp(OpTypes(root), "ResourceScatterSub"));
  EXPECT_FALSE(HasOp(OpTypes(root), "ResourceApplyGradientDescent"));
  auto init = GlobalVariablesInitializer(root);
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {init}));
  const auto before = ShardValues(session, emb);
  ASSERT_OK(RunOps(session, {train}));
  const auto after = ShardValues(session, emb);
  const std::map<int64_t, double> grad = {{3, 2 / 3.0}, {8, 1 / 3.0}, {5, 1}};
  for (int64_t id = 0; id < 10; ++id) {
    auto [k, r] = Place(id, 10, 3, kMod);
    for (int c = 0; c < 3; ++c) {
      const double b = before[k][r * 3 + c], a = after[k][r * 3 + c];
      auto it = grad.find(id);
      if (it == grad.end()) {
        EXPECT_EQ(a, b) << "row " << id;
      } else {
        EXPECT_NEAR(a, b - 0.3 * it->second, 1e-12) << "row " << id;
      }
    }
  }
}

}  // namespace
}  // namespace runnel::training
