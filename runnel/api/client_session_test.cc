// The client API end to end: graphs built through the generated wrappers and
// run with ClientSession.
#include "runnel/api/client_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "google/protobuf/util/message_differencer.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runnel.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

TEST(ClientSessionTest, AddLiteralToFedPlaceholder) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Add(root, x, 1.0f);
  auto z = ops::Add(root, x, 1);  // An int literal becomes a float Const.
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {{1.f, 2.f}, {3.f, 4.f}}}}, {y, z}, &out));
  ASSERT_EQ(out.size(), 2u);
  ExpectTensorEqual<float>(out[0],
                           Tensor::FromVector<float>({2, 3, 4, 5}, {2, 2}));
  ExpectTensorEqual<float>(out[1], out[0]);
  EXPECT_EQ(y.node()->name(), "Add");
  EXPECT_EQ(z.node()->name(), "Add_1");
  // A literal feed converts to the placeholder's dtype; a Tensor must match.
  ASSERT_OK(session.Run({{x, 41}}, {y}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::Scalar<float>(42));
  Status bad = session.Run({{x, Tensor::Scalar<int32_t>(1)}}, {y}, &out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("feed 'x:0': expected a float tensor"));
  // Not feeding the placeholder is the runtime's error, naming it.
  bad = session.Run({y}, &out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("'x'"));
}

TEST(ClientSessionTest, IntegerOpsAndBadLiteralFeed) {
  Scope root = Scope::NewRootScope();
  auto i = ops::Placeholder(root.WithOpName("i"), DT_INT32);
  auto j = ops::Mul(root, i, {1, 2, 3});
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{i, 4}}, {j}, &out));
  ExpectTensorEqual<int32_t>(out[0], Tensor::FromVector<int32_t>({4, 8, 12}));
  Status bad = session.Run({{i, 1.5}}, {j}, &out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(),
              HasSubstr("feed 'i:0': cannot convert the double literal 1.5"));
}

TEST(ClientSessionTest, MatMulWithTransposeB) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  auto b = ops::Const(root, {{1.f, 0.f, 1.f}, {0.f, 1.f, 0.f}});
  // a [2,3] times b^T [3,2].
  auto m = ops::MatMul(root, a, b, ops::MatMul::TransposeB(true));
  EXPECT_EQ(root.GetShape(m), PartialTensorShape({2, 2}));
  auto n =
      ops::MatMul(root, a, b, ops::MatMul::TransposeA(true));  // [3,2] x [2,3]
  EXPECT_EQ(root.GetShape(n), PartialTensorShape({3, 3}));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({m, n}, &out));
  ExpectTensorEqual<float>(out[0],
                           Tensor::FromVector<float>({4, 2, 10, 5}, {2, 2}));
  ExpectTensorEqual<float>(
      out[1], Tensor::FromVector<float>({1, 4, 1, 2, 5, 2, 3, 6, 3}, {3, 3}));
  bool transpose_b = false;
  ASSERT_OK(GetAttr(m.node()->attrs(), "transpose_b", &transpose_b));
  EXPECT_TRUE(transpose_b);
}

TEST(ClientSessionTest, NameScopesAndUniquifiedNames) {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("dense");
  auto w = ops::Const(layer.WithOpName("w"), {{2.f}});
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({1, 1}));
  auto h1 = ops::MatMul(layer, x, w);
  auto h2 = ops::MatMul(layer, h1, w);
  auto out_layer = root.NewSubScope("dense");
  auto h3 = ops::Relu(out_layer.WithOpName("act"), h2);
  EXPECT_EQ(w.node()->name(), "dense/w");
  EXPECT_EQ(h1.node()->name(), "dense/MatMul");
  EXPECT_EQ(h2.node()->name(), "dense/MatMul_1");
  EXPECT_EQ(h3.node()->name(), "dense_1/act");
  EXPECT_EQ(h3.activations.name(), "dense_1/act:0");
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {{3.f}}}}, {h3}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({12}, {1, 1}));
}

TEST(ClientSessionTest, ControlDependenciesOrderAssignBeforeRead) {
  Scope root = Scope::NewRootScope();
  auto v =
      ops::Variable(root.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT);
  auto assign = ops::Assign(root, v, {5.f, 6.f});
  // Without the control dependency, reading v could run before the Assign
  // (and fail: v is uninitialised).
  auto read = ops::Identity(root.WithControlDependencies(assign.operation), v);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({read}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({5, 6}));
  // Targets run without fetching.
  auto add = ops::AssignAdd(root, v, {1.f, 1.f});
  ASSERT_OK(session.Run({}, {}, {add.operation}, &out));
  EXPECT_TRUE(out.empty());
  auto plain_read = ops::Identity(root, v);
  ASSERT_OK(session.Run({plain_read}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({6, 7}));
  // A NoOp groups updates: running it runs its control inputs.
  auto twice = ops::AssignAdd(root, v, {10.f, 10.f});
  auto thrice = ops::AssignAdd(root.WithControlDependencies(twice.operation), v,
                               {0.5f, 0.5f});
  auto group = ops::NoOp(
      root.WithControlDependencies({twice.operation, thrice.operation}));
  ASSERT_OK(session.Run({}, {}, {group}, &out));
  ASSERT_OK(session.Run({plain_read}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({16.5f, 17.5f}));
}

TEST(ClientSessionTest, ShapeErrorAtConstructionStopsTheScope) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({2, 3}));
  auto b = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({4, 5}));
  auto ok = ops::Neg(root, a);
  auto m = ops::MatMul(root.NewSubScope("dense1"), a, b);
  EXPECT_EQ(m.node(), nullptr);
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("MatMul 'dense1/MatMul'"));
  EXPECT_THAT(root.status().message(), HasSubstr("[2,3]"));
  // Later ops are not added; m's null Output is harmless.
  auto later = ops::Add(root, m, 1.f);
  EXPECT_EQ(later.node(), nullptr);
  EXPECT_EQ(root.graph()->num_nodes(), 3);
  ClientSession session(root);
  std::vector<Tensor> out;
  EXPECT_EQ(session.Run({ok}, &out), root.status());
}

TEST(ClientSessionTest, GraphGrowsBetweenRuns) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root, TensorShape(), DT_FLOAT);
  auto init = ops::Assign(root, v, 3.f);
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto y = ops::Mul(root, x, 2.f);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init.operation}, &out));
  ASSERT_OK(session.Run({{x, 5.f}}, {y}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::Scalar<float>(10));
  // New ops after the first Runs, reading state the session already holds.
  auto z = ops::Add(root, y, v);
  auto w = ops::Sub(root, z, 1.f);
  ASSERT_OK(session.Run({{x, 5.f}}, {z, w}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::Scalar<float>(13));
  ExpectTensorEqual<float>(out[1], Tensor::Scalar<float>(12));
  // And again, with a Run in between that adds nothing.
  ASSERT_OK(session.Run({{x, 1.f}}, {y}, &out));
  auto u = ops::Square(root, w);
  ASSERT_OK(session.Run({{x, 1.f}}, {u, y}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::Scalar<float>(16));
  ExpectTensorEqual<float>(out[1], Tensor::Scalar<float>(2));
}

TEST(ClientSessionTest, MultiOutputOps) {
  Scope root = Scope::NewRootScope();
  auto value = ops::Const(root, {{1, 2, 3, 4}, {5, 6, 7, 8}});
  auto split = ops::Split(root, 1, value, 2);
  ASSERT_EQ(split.output.size(), 2u);
  EXPECT_EQ(root.GetShape(split[1]), PartialTensorShape({2, 2}));
  auto unpack = ops::Unpack(root, value, 2, ops::Unpack::Axis(0));
  ASSERT_EQ(unpack.output.size(), 2u);
  auto args = ops::BroadcastGradientArgs(root, {2, 3}, {1, 3});
  auto sw = ops::Switch(root, value, true);  // Named outputs in OpDef order.
  EXPECT_EQ(sw.output_false.index(), 0);
  EXPECT_EQ(sw.output_true.index(), 1);
  EXPECT_EQ(sw.output_true.node(), sw.node());
  ASSERT_OK(root.status());
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run(
      {split[0], split[1], unpack[0], unpack[1], args.r0, args.r1}, &out));
  ExpectTensorEqual<int32_t>(out[0],
                             Tensor::FromVector<int32_t>({1, 2, 5, 6}, {2, 2}));
  ExpectTensorEqual<int32_t>(out[1],
                             Tensor::FromVector<int32_t>({3, 4, 7, 8}, {2, 2}));
  ExpectTensorEqual<int32_t>(out[2], Tensor::FromVector<int32_t>({1, 2, 3, 4}));
  ExpectTensorEqual<int32_t>(out[3], Tensor::FromVector<int32_t>({5, 6, 7, 8}));
  // Gradient reduction indices for broadcasting [2,3] with [1,3]: none, {0}.
  ExpectTensorEqual<int32_t>(out[4], Tensor::FromVector<int32_t>({}));
  ExpectTensorEqual<int32_t>(out[5], Tensor::FromVector<int32_t>({0}));
}

TEST(ClientSessionTest, ListInputs) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {1.f, 2.f});
  auto b = ops::Const(root, {10.f, 20.f});
  auto sum = ops::AddN(root, {a, b, {100.f, 200.f}});
  OutputList parts = {a, b};
  auto cat = ops::ConcatV2(root, parts, 0);
  auto cat2 =
      ops::ConcatV2(root, {ops::Reshape(root, a, {1, 2}), {{7, 8}}}, -2);
  EXPECT_EQ(root.GetShape(cat), PartialTensorShape({4}));
  EXPECT_EQ(root.GetShape(cat2), PartialTensorShape({2, 2}));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({sum, cat, cat2}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({111, 222}));
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({1, 2, 10, 20}));
  ExpectTensorEqual<float>(out[2],
                           Tensor::FromVector<float>({1, 2, 7, 8}, {2, 2}));
}

TEST(ClientSessionTest, RequiredAndOptionalAttrs) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {1.7f, -2.2f});
  auto c = ops::Cast(root, x, DT_INT32);
  auto s = ops::Sum(root, {{1, 2}, {3, 4}}, 1, ops::Sum::KeepDims(true));
  auto shape = ops::Shape(root, s, ops::Shape::OutType(DT_INT64));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({c, s, shape}, &out));
  ExpectTensorEqual<int32_t>(out[0], Tensor::FromVector<int32_t>({1, -2}));
  ExpectTensorEqual<int32_t>(out[1],
                             Tensor::FromVector<int32_t>({3, 7}, {2, 1}));
  ExpectTensorEqual<int64_t>(out[2], Tensor::FromVector<int64_t>({2, 1}));
}

TEST(ClientSessionTest, ToGraphDefRoundTripsAndRunsInAPlainSession) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Mul(root.NewSubScope("scale"), x, {1.f, 2.f});
  auto z = ops::AddN(root.WithOpName("z"), {y, x});
  GraphDef gdef;
  ASSERT_OK(root.ToGraphDef(&gdef));
  Graph imported;
  ASSERT_OK(ImportGraphDef(gdef, &imported));
  EXPECT_NE(imported.FindNode("scale/Mul/y"), nullptr);
  GraphDef again;
  ToGraphDef(imported, &again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again, gdef));

  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(gdef));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({{"x:0", Tensor::FromVector<float>({3, 4})}},
                            {z.sum.name()}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({6, 12}));
}

TEST(ClientSessionTest, RunOptionsAndMetadata) {
  Scope root = Scope::NewRootScope();
  auto y = ops::Neg(root, {1.f, 2.f});
  ClientSession session(root);
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_OK(session.Run(options, {}, {y}, {}, &out, &metadata));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({-1, -2}));
  EXPECT_GT(metadata.step_stats().dev_stats_size(), 0);
  ASSERT_OK(session.Run(RunOptions(), {}, {y}, {}, &out, nullptr));
}

TEST(ClientSessionTest, NullFetchesAndTargetsAreErrors) {
  Scope root = Scope::NewRootScope();
  ops::Const(root, 1.f);
  ClientSession session(root);
  std::vector<Tensor> out;
  EXPECT_THAT(session.Run({Output()}, &out).message(),
              HasSubstr("fetch 0 is a null Output"));
  EXPECT_THAT(session.Run({}, {}, {Operation()}, &out).message(),
              HasSubstr("target 0 is a null Operation"));
  EXPECT_THAT(session.Run({{Output(), 1.f}}, {}, &out).message(),
              HasSubstr("a feed key is a null Output"));
}

TEST(ClientSessionTest, ConcurrentRuns) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_INT32);
  auto y = ops::Mul(root, x, x);
  ClientSession session(root);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::vector<Tensor> out;
        const int v = t * 100 + i;
        if (!session.Run({{x, v}}, {y}, &out).ok() ||
            out[0].scalar<int32_t>() != v * v) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace runnel
