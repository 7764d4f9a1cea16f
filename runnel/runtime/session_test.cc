#include "runnel/runtime/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "runnel/graph/graph_def.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

std::string TestData(const std::string& rel) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/" + rel;
}

std::unique_ptr<Session> SessionFor(const GraphDef& g) {
  auto s = NewSession();
  EXPECT_TRUE(s.ok());
  Status c = (*s)->Create(g);
  EXPECT_TRUE(c.ok()) << c;
  return std::move(*s);
}

GraphDef Text(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

// TensorFlow's own file: z = x + y with int32 placeholders.
TEST(SessionTest, TfAdditionModelGives42) {
  GraphDef g;
  ASSERT_OK(ReadGraphDefFile(TestData("graphs/tf_addition/model.pb"), &g));
  auto session = SessionFor(g);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Tensor::FromVector<int32_t>({2})},
                          {"y", Tensor::FromVector<int32_t>({40})}},
                         {"z"}, {}, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DT_INT32);
  EXPECT_EQ(out[0].shape(), TensorShape({1}));
  EXPECT_EQ(out[0].flat<int32_t>()[0], 42);
}

constexpr char kGraph[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { dim { size: -1 } } }
    }
  }
  node {
    name: "two"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {}
          float_val: 2
        }
      }
    }
  }
  node {
    name: "y"
    op: "Mul"
    input: "x"
    input: "two"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "z"
    op: "AddV2"
    input: "y"
    input: "two"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(SessionTest, FeedingAnIntermediateTensorCutsItsProducer) {
  auto session = SessionFor(Text(kGraph));
  std::vector<Tensor> out;
  // x is never fed: if Mul 'y' ran, the Placeholder would fail the step.
  ASSERT_OK(session->Run({{"y", Tensor::FromVector<float>({10, 20})}}, {"z"},
                         {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 12.0f);
  EXPECT_EQ(out[0].flat<float>()[1], 22.0f);
  // Fetching a fed tensor returns the fed value.
  ASSERT_OK(
      session->Run({{"y", Tensor::FromVector<float>({1})}}, {"y"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 1.0f);
}

TEST(SessionTest, RepeatedRunsReuseTheCachedExecutor) {
  auto session = SessionFor(Text(kGraph));
  std::vector<Tensor> out;
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(session->Run({{"x", Tensor::FromVector<float>({float(i)})}},
                           {"z"}, {}, &out));
    EXPECT_EQ(out[0].flat<float>()[0], 2.0f * i + 2.0f);
  }
}

TEST(SessionTest, BadFeedsAndFetchesNameTheProblem) {
  auto session = SessionFor(Text(kGraph));
  std::vector<Tensor> out;
  Status s =
      session->Run({{"x", Tensor::FromVector<int32_t>({1})}}, {"z"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("feed 'x'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;

  s = session->Run({{"x", Tensor(DT_FLOAT, TensorShape({2, 2}))}}, {"z"}, {},
                   &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shape"), std::string::npos) << s;

  s = session->Run({}, {"nope:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s;

  s = session->Run({}, {"z:5"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;

  s = session->Run({}, {}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(SessionTest, ExtendAddsNodes) {
  auto session = SessionFor(Text(kGraph));
  ASSERT_OK(session->Extend(Text(R"pb(
    node {
      name: "w"
      op: "Mul"
      input: "z"
      input: "z"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb")));
  std::vector<Tensor> out;
  ASSERT_OK(
      session->Run({{"x", Tensor::FromVector<float>({1})}}, {"w"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 16.0f);
  EXPECT_EQ(session->Create(Text(kGraph)).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(SessionTest, ManyThreadsRunOneSession) {
  auto session = SessionFor(Text(kGraph));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        std::vector<Tensor> out;
        const float v = static_cast<float>(t * 1000 + i);
        Status s = session->Run({{"x", Tensor::FromVector<float>({v, -v})}},
                                {"z", "y"}, {}, &out);
        if (!s.ok() || out[0].flat<float>()[0] != 2 * v + 2 ||
            out[0].flat<float>()[1] != -2 * v + 2 ||
            out[1].flat<float>()[0] != 2 * v) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ConfigProto.inter_op_parallelism_threads: the session runs its ops on a
// pool of its own of that many threads (1: every expensive op on one
// thread). Concurrent steps and a TF training graph still run right.
TEST(SessionTest, InterOpThreadsOptionGivesTheSessionItsOwnPool) {
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    SessionOptions options;
    options.config.set_inter_op_parallelism_threads(threads);
    auto made = NewSession(options);
    ASSERT_TRUE(made.ok()) << made.status();
    std::unique_ptr<Session> session = std::move(*made);
    ASSERT_OK(session->Create(Text(kGraph)));
    std::atomic<int> failures{0};
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t) {
      clients.emplace_back([&, t] {
        for (int i = 0; i < 100; ++i) {
          std::vector<Tensor> out;
          const float v = static_cast<float>(t * 1000 + i);
          Status s = session->Run({{"x", Tensor::FromVector<float>({v, -v})}},
                                  {"z", "y"}, {}, &out);
          if (!s.ok() || out[0].flat<float>()[0] != 2 * v + 2 ||
              out[1].flat<float>()[0] != 2 * v) {
            failures.fetch_add(1);
          }
        }
      });
    }
    for (auto& c : clients) c.join();
    EXPECT_EQ(failures.load(), 0);

    GraphDef g;
    ASSERT_OK(ReadGraphDefFile(
        TestData("graphs/tf_regression_training/model.pb"), &g));
    auto trainer = NewSession(options);
    ASSERT_TRUE(trainer.ok());
    ASSERT_OK((*trainer)->Create(g));
    std::vector<Tensor> out;
    ASSERT_OK((*trainer)->Run({}, {}, {"init"}, &out));
    std::vector<float> xs(100), ys(100);
    for (int i = 0; i < 100; ++i) {
      xs[i] = static_cast<float>(i) / 50.0f - 1.0f;
      ys[i] = 0.1f * xs[i] + 0.3f;
    }
    for (int step = 0; step < 201; ++step) {
      ASSERT_OK((*trainer)->Run({{"x", Tensor::FromVector<float>(xs)},
                                 {"y", Tensor::FromVector<float>(ys)}},
                                {}, {"train"}, &out));
    }
    ASSERT_OK((*trainer)->Run({}, {"w", "b"}, {}, &out));
    EXPECT_NEAR(out[0].flat<float>()[0], 0.1f, 1e-3f);
    EXPECT_NEAR(out[1].flat<float>()[0], 0.3f, 1e-3f);
  }
}

TEST(SessionTest, SoftPlacementAndBadDevices) {
  GraphDef g = Text(R"pb(
    node {
      name: "c"
      op: "Const"
      device: "/device:GPU:0"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_FLOAT
            tensor_shape {}
            float_val: 1
          }
        }
      }
    }
  )pb");
  auto session = SessionFor(g);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"c"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s;

  SessionOptions soft;
  soft.config.set_allow_soft_placement(true);
  auto s2 = NewSession(soft);
  ASSERT_TRUE(s2.ok());
  ASSERT_OK((*s2)->Create(g));
  ASSERT_OK((*s2)->Run({}, {"c"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 1.0f);
}

}  // namespace
}  // namespace runnel
