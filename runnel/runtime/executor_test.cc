// Executor and session behaviour with small test ops defined here; the real
// ops come from runnel_ops.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>
#include <thread>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// An async kernel that adds 1 on another thread.
REGISTER_OP("RuntimeTestAsyncAddOne")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Test op: y = x + 1, completed asynchronously.");

class AsyncAddOneKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::thread([ctx, done] {
      Tensor* y;
      OP_REQUIRES_OK_ASYNC(
          ctx, ctx->allocate_output(0, ctx->input(0).shape(), &y), done);
      auto in = ctx->input(0).flat<float>();
      for (size_t i = 0; i < in.size(); ++i) y->flat<float>()[i] = in[i] + 1;
      done();
    }).detach();
  }
};
REGISTER_KERNEL_BUILDER(Name("RuntimeTestAsyncAddOne").Device(kDeviceCpu),
                        AsyncAddOneKernel);

// Blocks until the step is cancelled (to test timeouts and Close).
REGISTER_OP("RuntimeTestBlock")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Test op: never completes unless the step is cancelled.");

class BlockKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CancellationManager* cm = ctx->cancellation_manager();
    auto token = cm->NewToken();
    auto fire = [ctx, done] {
      ctx->SetStatus(errors::Cancelled("blocked op cancelled"));
      done();
    };
    if (!cm->RegisterCallback(token, fire)) fire();
  }
};
REGISTER_KERNEL_BUILDER(Name("RuntimeTestBlock").Device(kDeviceCpu),
                        BlockKernel);

// Throws from ComputeAsync before calling done (a dependency's bad_alloc).
REGISTER_OP("RuntimeTestAsyncThrow")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Test op: ComputeAsync throws std::bad_alloc.");
class AsyncThrowKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext*, DoneCallback) override {
    throw std::bad_alloc();
  }
};
REGISTER_KERNEL_BUILDER(Name("RuntimeTestAsyncThrow").Device(kDeviceCpu),
                        AsyncThrowKernel);

// One shard of a ParallelFor on the intra-op pool throws.
REGISTER_OP("RuntimeTestParallelThrow")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Test op: a ParallelFor shard throws std::length_error.");
class ParallelThrowKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::atomic<int64_t> ran{0};
    // 1e6 units of 1 µs: many shards, on the pool's threads too.
    ctx->intra_op_threadpool()->ParallelFor(
        1000000, 1000, [&](int64_t begin, int64_t end) {
          ran += end - begin;
          if (begin > 0) throw std::length_error("shard failed");
        });
  }
};
REGISTER_KERNEL_BUILDER(Name("RuntimeTestParallelThrow").Device(kDeviceCpu),
                        ParallelThrowKernel);

// Records the order in which nodes run.
std::mutex order_mu;
std::vector<std::string> order;
REGISTER_OP("RuntimeTestRecord")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("Test op: appends its name to a global list.");
class RecordKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {
    std::lock_guard<std::mutex> l(order_mu);
    order.push_back(name());
  }
};
REGISTER_KERNEL_BUILDER(Name("RuntimeTestRecord").Device(kDeviceCpu),
                        RecordKernel);

GraphDef ParseText(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

std::unique_ptr<Session> MakeSession(const std::string& text) {
  auto s = NewSession();
  EXPECT_TRUE(s.ok());
  Status c = (*s)->Create(ParseText(text));
  EXPECT_TRUE(c.ok()) << c;
  return std::move(*s);
}

constexpr char kChain[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node { name: "a" op: "RuntimeTestAsyncAddOne" input: "x" }
  node { name: "b" op: "RuntimeTestAsyncAddOne" input: "a" }
  node {
    name: "c"
    op: "AddV2"
    input: "b"
    input: "a"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(ExecutorTest, AsyncKernelsInAChain) {
  auto session = MakeSession(kChain);
  std::vector<Tensor> out;
  ASSERT_OK(
      session->Run({{"x", Tensor::Scalar<float>(1)}}, {"c:0", "a"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 5.0f);  // (1+1+1) + (1+1)
  EXPECT_EQ(out[1].scalar<float>(), 2.0f);
}

TEST(ExecutorTest, ControlDependenciesOrderNodes) {
  auto session = MakeSession(R"pb(
    node { name: "first" op: "RuntimeTestRecord" }
    node { name: "second" op: "RuntimeTestRecord" input: "^first" }
    node { name: "third" op: "RuntimeTestRecord" input: "^second" }
    node { name: "unrelated" op: "RuntimeTestRecord" }
  )pb");
  order.clear();
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"third"}, &out));
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "third"}));
}

TEST(ExecutorTest, ErrorAbortsStepAndNamesNode) {
  auto session = MakeSession(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "y"
      op: "Identity"
      input: "x"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  std::vector<Tensor> out;
  Status s = session->Run({}, {"y"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Placeholder 'x'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("must feed a value"), std::string::npos) << s;
}

// Exceptions never escape into std::terminate: from an async kernel, or
// from a ParallelFor shard on another thread, they become the node's error.
TEST(ExecutorTest, ExceptionsFromAsyncKernelsAndShardsAreErrors) {
  auto session = MakeSession(R"pb(
    node { name: "a" op: "RuntimeTestAsyncThrow" }
    node { name: "p" op: "RuntimeTestParallelThrow" }
  )pb");
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) {
    Status s = session->Run({}, {}, {"a"}, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_NE(s.message().find("'a'"), std::string::npos) << s;
    s = session->Run({}, {}, {"p"}, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_NE(s.message().find("shard failed"), std::string::npos) << s;
    EXPECT_NE(s.message().find("'p'"), std::string::npos) << s;
  }
}

TEST(ExecutorTest, TimeoutGivesDeadlineExceeded) {
  auto session =
      MakeSession(R"pb(node { name: "b" op: "RuntimeTestBlock" })pb");
  RunOptions opts;
  opts.set_timeout_in_ms(50);
  std::vector<Tensor> out;
  Status s = session->Run(opts, {}, {"b"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(ExecutorTest, CloseCancelsBlockedStep) {
  auto session =
      MakeSession(R"pb(node { name: "b" op: "RuntimeTestBlock" })pb");
  Status s;
  std::thread t([&] {
    std::vector<Tensor> out;
    s = session->Run({}, {"b"}, {}, &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_OK(session->Close());
  t.join();
  EXPECT_FALSE(s.ok());
  std::vector<Tensor> out;
  EXPECT_EQ(session->Run({}, {"b"}, {}, &out).code(),
            absl::StatusCode::kCancelled);
}

TEST(ExecutorTest, TracingFillsStepStats) {
  auto session = MakeSession(kChain);
  RunOptions opts;
  opts.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata md;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(opts, {{"x", Tensor::Scalar<float>(1)}}, {"c"}, {},
                         &out, &md));
  ASSERT_EQ(md.step_stats().dev_stats_size(), 1);
  const auto& dev = md.step_stats().dev_stats(0);
  EXPECT_EQ(dev.device(), "/job:localhost/replica:0/task:0/device:CPU:0");
  bool saw_c = false;
  for (const auto& ns : dev.node_stats()) {
    EXPECT_GT(ns.all_start_micros(), 0);
    EXPECT_GE(ns.all_end_rel_nanos(), ns.op_end_rel_nanos());
    if (ns.node_name() == "c") {
      saw_c = true;
      ASSERT_EQ(ns.output_size(), 1);
      EXPECT_EQ(ns.output(0).tensor_description().dtype(), DT_FLOAT);
      EXPECT_EQ(ns.output(0)
                    .tensor_description()
                    .allocation_description()
                    .requested_bytes(),
                4);
    }
  }
  EXPECT_TRUE(saw_c);
}

}  // namespace
}  // namespace runnel
