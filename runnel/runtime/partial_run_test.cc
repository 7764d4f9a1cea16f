// Partial runs (Session::PRunSetup / PRun, Note [Partial runs] in
// direct_session.cc): one step fed and fetched over several calls.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

std::string Placeholder(const std::string& name) {
  return absl::StrCat("node { name: \"", name,
                      "\" op: \"Placeholder\" attr { key: \"dtype\" value { "
                      "type: DT_FLOAT } } attr { key: \"shape\" value { shape "
                      "{} } } }");
}

std::string Binary(const std::string& name, const std::string& op,
                   const std::string& a, const std::string& b) {
  return absl::StrCat("node { name: \"", name, "\" op: \"", op, "\" input: \"",
                      a, "\" input: \"", b,
                      "\" attr { key: \"T\" value { type: DT_FLOAT } } }");
}

// TensorFlow's testPartialRun: r1 = a + b, r2 = r1 * c, where c is fed
// with a value computed from the first fetch.
std::unique_ptr<Session> TfPartialRunGraph(ConfigProto config = {}) {
  GraphDef g;
  EXPECT_OK(ParseGraphDefText(
      absl::StrCat(Placeholder("a"), Placeholder("b"), Placeholder("c"),
                   Binary("r1", "AddV2", "a", "b"),
                   Binary("r2", "Mul", "r1", "c"),
                   R"pb(node {
                          name: "bad"
                          op: "CheckNumerics"
                          input: "r1"
                          attr {
                            key: "T"
                            value { type: DT_FLOAT }
                          }
                          attr {
                            key: "message"
                            value { s: "r1 is not finite" }
                          }
                        })pb"),
      &g));
  SessionOptions options;
  options.config = config;
  auto s = NewSession(options);
  EXPECT_TRUE(s.ok());
  EXPECT_OK((*s)->Create(g));
  return std::move(*s);
}

float Scalar(const Tensor& t) { return t.scalar<float>(); }

TEST(PartialRunTest, FeedsDependOnEarlierFetchesOfTheSameStep) {
  auto session = TfPartialRunGraph();
  std::string h;
  ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"r1", "r2"}, {}, &h));
  std::vector<Tensor> out;
  ASSERT_OK(session->PRun(
      h, {{"a", Tensor::Scalar(1.0f)}, {"b", Tensor::Scalar(2.0f)}}, {"r1"},
      &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Scalar(out[0]), 3.0f);
  ASSERT_OK(session->PRun(h, {{"c:0", Tensor::Scalar(Scalar(out[0]) * 17)}},
                          {"r2:0"}, &out));
  EXPECT_EQ(Scalar(out[0]), 153.0f);
  // The step is over and its handle gone.
  Status s = session->PRun(h, {}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown"), std::string::npos) << s;
}

TEST(PartialRunTest, FetchesMayComeBeforeTheirFeedsArriveInAnotherThread) {
  auto session = TfPartialRunGraph();
  for (int round = 0; round < 20; ++round) {
    std::string h;
    ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"r2"}, {}, &h));
    std::thread feeder([&] {
      std::vector<Tensor> none;
      EXPECT_OK(session->PRun(
          h, {{"a", Tensor::Scalar(2.0f)}, {"b", Tensor::Scalar(3.0f)}}, {},
          &none));
      EXPECT_OK(session->PRun(h, {{"c", Tensor::Scalar(4.0f)}}, {}, &none));
    });
    std::vector<Tensor> out;
    // Blocks until the feeder's values arrive.
    ASSERT_OK(session->PRun(h, {}, {"r2"}, &out));
    feeder.join();
    EXPECT_EQ(Scalar(out[0]), 20.0f);
  }
}

TEST(PartialRunTest, BadNamesAndRepeatsAreRejected) {
  auto session = TfPartialRunGraph();
  std::string h;
  ASSERT_OK(session->PRunSetup({"a", "b"}, {"r1"}, {}, &h));
  std::vector<Tensor> out;
  Status s = session->PRun(h, {{"c", Tensor::Scalar(1.0f)}}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("The feed c was not specified"), std::string::npos)
      << s;
  s = session->PRun(h, {}, {"r2"}, &out);
  EXPECT_NE(s.message().find("The fetch r2 was not specified"),
            std::string::npos)
      << s;
  s = session->PRun(h, {{"a", Tensor::Scalar(int32_t{1})}}, {}, &out);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;
  ASSERT_OK(session->PRun(h, {{"a", Tensor::Scalar(1.0f)}}, {}, &out));
  s = session->PRun(h, {{"a", Tensor::Scalar(1.0f)}}, {}, &out);
  EXPECT_NE(s.message().find("The feed a has already been fed"),
            std::string::npos)
      << s;
  ASSERT_OK(session->PRun(h, {{"b", Tensor::Scalar(1.0f)}}, {"r1"}, &out));
  EXPECT_EQ(Scalar(out[0]), 2.0f);
  // Setup errors.
  std::string h2;
  EXPECT_EQ(session->PRunSetup({"a"}, {}, {}, &h2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->PRunSetup({"nope"}, {"r1"}, {}, &h2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->PRun("no-such-handle", {}, {}, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PartialRunTest, TheStepsErrorNamesTheNodeAndSticks) {
  auto session = TfPartialRunGraph();
  std::string h;
  ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"bad", "r2"}, {}, &h));
  std::vector<Tensor> out;
  ASSERT_OK(session->PRun(
      h,
      {{"a", Tensor::Scalar(std::numeric_limits<float>::infinity())},
       {"b", Tensor::Scalar(1.0f)}},
      {}, &out));
  Status s = session->PRun(h, {}, {"bad"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bad"), std::string::npos) << s;
  EXPECT_NE(s.message().find("r1 is not finite"), std::string::npos) << s;
  s = session->PRun(h, {{"c", Tensor::Scalar(1.0f)}}, {"r2"}, &out);
  EXPECT_FALSE(s.ok());
}

// Feeding and fetching in one PRun: the failing kernel cancels the step,
// which aborts the fetch's Recv before the executor reports its error; the
// PRun must still return that error, not the cancellation (it raced).
TEST(PartialRunTest, AFetchOfAFailingStepGetsItsErrorNotTheCancellation) {
  auto session = TfPartialRunGraph();
  for (int i = 0; i < 200; ++i) {
    std::string h;
    ASSERT_OK(session->PRunSetup({"a", "b"}, {"bad"}, {}, &h));
    std::vector<Tensor> out;
    Status s = session->PRun(
        h,
        {{"a", Tensor::Scalar(std::numeric_limits<float>::infinity())},
         {"b", Tensor::Scalar(1.0f)}},
        {"bad"}, &out);
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument)
        << "run " << i << ": " << s;
    ASSERT_NE(s.message().find("r1 is not finite"), std::string::npos) << s;
  }
}

TEST(PartialRunTest, AWaitingFetchTimesOut) {
  ConfigProto config;
  config.set_operation_timeout_in_ms(200);
  auto session = TfPartialRunGraph(config);
  std::string h;
  ASSERT_OK(session->PRunSetup({"a", "b"}, {"r1"}, {}, &h));
  std::vector<Tensor> out;
  Status s = session->PRun(h, {{"a", Tensor::Scalar(1.0f)}}, {"r1"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(PartialRunTest, CloseEndsAnUnfinishedPartialRun) {
  auto session = TfPartialRunGraph();
  std::string h;
  ASSERT_OK(session->PRunSetup({"a", "b"}, {"r1"}, {}, &h));
  std::vector<Tensor> out;
  ASSERT_OK(session->PRun(h, {{"a", Tensor::Scalar(1.0f)}}, {}, &out));
  // "b" never comes: Close cancels the step instead of waiting for it.
  ASSERT_OK(session->Close());
  EXPECT_FALSE(session->PRun(h, {}, {"r1"}, &out).ok());
}

}  // namespace
}  // namespace runnel
