#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "runnel/cpu/philox.h"
#include "runnel/framework/node_properties.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using random::Philox4x32;

// ---------------------------------------------------------------------------
// The generator itself.

// Random123's published known-answer vectors for Philox4x32-10.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(
      Philox4x32::Compute({0, 0, 0, 0}, {0, 0}),
      (Philox4x32::Result{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      Philox4x32::Compute({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
      (Philox4x32::Result{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(
      Philox4x32::Compute({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
      (Philox4x32::Result{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, SeedLayoutAndSkip) {
  Philox4x32 g(0x1111111122222222ull, 0x3333333344444444ull);
  EXPECT_EQ(g.key(), (Philox4x32::Key{0x22222222, 0x11111111}));
  EXPECT_EQ(g.counter(), (Philox4x32::Counter{0, 0, 0x44444444, 0x33333333}));
  // Each call consumes one counter value.
  const auto first = g();
  EXPECT_EQ(first,
            Philox4x32::Compute({0, 0, 0x44444444, 0x33333333}, g.key()));
  EXPECT_EQ(g.counter()[0], 1u);
  // Skip carries through all four words.
  Philox4x32 c({0xffffffff, 0xffffffff, 0xffffffff, 0}, {1, 2});
  c.Skip(1);
  EXPECT_EQ(c.counter(), (Philox4x32::Counter{0, 0, 0, 1}));
  Philox4x32 d({0xfffffff0, 0, 0, 0}, {1, 2});
  d.Skip(0x100000020ull);
  EXPECT_EQ(d.counter(), (Philox4x32::Counter{0x10, 2, 0, 0}));
  // Skip(n) lands where n calls would.
  Philox4x32 a(5, 6), b(5, 6);
  for (int i = 0; i < 7; ++i) a();
  b.Skip(7);
  EXPECT_EQ(a(), b());
}

TEST(PhiloxTest, UniformTransforms) {
  EXPECT_EQ(random::Uint32ToFloat(0), 0.0f);
  EXPECT_EQ(random::Uint32ToFloat(0xffffffff), 1.0f - std::ldexp(1.0f, -23));
  EXPECT_EQ(random::Uint32ToFloat(0x400000), 0.5f);
  EXPECT_EQ(random::Uint64ToDouble(0, 0), 0.0);
  EXPECT_EQ(random::Uint64ToDouble(0xffffffff, 0xffffffff),
            1.0 - std::ldexp(1.0, -52));
  EXPECT_EQ(random::Uint64ToDouble(0x80000, 0), 0.5);
  float f0, f1;
  // u1 = 0.5, angle 0: z0 = 0, z1 = sqrt(-2 ln 0.5).
  random::BoxMullerFloat(0x400000, 0, &f0, &f1);
  EXPECT_FLOAT_EQ(f0, 0.0f);
  EXPECT_FLOAT_EQ(f1, std::sqrt(-2.0f * std::log(0.5f)));
  // u1 = 0 is clamped to 1e-7, so the result stays finite.
  random::BoxMullerFloat(0, 0, &f0, &f1);
  EXPECT_TRUE(std::isfinite(f1));
  EXPECT_NEAR(f1, std::sqrt(-2.0 * std::log(1e-7)), 1e-4);
}

// ---------------------------------------------------------------------------
// A kernel kept across calls (OpTestCase builds a new one per Run).

class StatefulKernel {
 public:
  StatefulKernel(const std::string& op, const AttrMap& attrs) {
    auto props = NodeProperties::Create("rng", op, "", attrs);
    status_ = props.status();
    if (status_.ok()) {
      status_ = CreateOpKernel("CPU", TestCpuDevice(), *props, &kernel_);
    }
  }
  const Status& status() const { return status_; }

  StatusOr<Tensor> Run(std::vector<Tensor> inputs) {
    RETURN_IF_ERROR(status_);
    std::vector<TensorValue> values;
    for (Tensor& t : inputs) values.push_back({&t, nullptr});
    OpKernelContext::Params params;
    params.op_kernel = kernel_.get();
    params.device = TestCpuDevice();
    params.inputs = values;
    OpKernelContext ctx(&params);
    kernel_->Compute(&ctx);
    RETURN_IF_ERROR(ctx.status());
    return ctx.mutable_output_slot(0)->value;
  }

 private:
  Status status_;
  std::unique_ptr<OpKernel> kernel_;
};

AttrMap RandomAttrs(DataType dtype, int64_t seed, int64_t seed2,
                    DataType index_type = DT_INT32) {
  AttrMap a;
  a["dtype"] = MakeAttrValue(dtype);
  a["T"] = MakeAttrValue(index_type);
  a["seed"] = MakeAttrValue(seed);
  a["seed2"] = MakeAttrValue(seed2);
  return a;
}

Tensor ShapeVec(std::vector<int32_t> dims) {
  return Tensor::FromVector<int32_t>(dims);
}

// Runs `op` once with a fresh kernel.
template <typename T>
std::vector<T> Draw(const std::string& op, int64_t seed, int64_t seed2,
                    std::vector<int32_t> shape) {
  OpTestCase t(op);
  t.Attr("dtype", DataTypeToEnum<T>::value)
      .Attr("T", DT_INT32)
      .Attr("seed", seed)
      .Attr("seed2", seed2)
      .Input(ShapeVec(shape));
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  auto f = t.output(0).flat<T>();
  return std::vector<T>(f.begin(), f.end());
}

const char* const kFloatOps[] = {"RandomUniform", "RandomStandardNormal",
                                 "TruncatedNormal"};

// ---------------------------------------------------------------------------
// Reproducibility and streams.

TEST(RandomOpsTest, SameSeedsSameValues) {
  for (const char* op : kFloatOps) {
    SCOPED_TRACE(op);
    auto a = Draw<float>(op, 7, 11, {3, 5});
    auto b = Draw<float>(op, 7, 11, {3, 5});
    ASSERT_EQ(a.size(), 15u);
    EXPECT_EQ(a, b);
    auto c = Draw<float>(op, 7, 12, {3, 5});
    EXPECT_NE(a, c);
    auto d = Draw<float>(op, 8, 11, {3, 5});
    EXPECT_NE(a, d);
    auto e = Draw<double>(op, 7, 11, {3, 5});
    auto e2 = Draw<double>(op, 7, 11, {3, 5});
    EXPECT_EQ(e, e2);
  }
}

TEST(RandomOpsTest, FirstValuesFollowThePhiloxStream) {
  // seed is the key, seed2 the high half of the counter; the first call
  // starts at counter 0 and group g of 4 floats reads block g.
  const uint64_t seed = 0x123456789ull, seed2 = 0xabcdef01ull;
  auto u = Draw<float>("RandomUniform", seed, seed2, {10});
  ASSERT_EQ(u.size(), 10u);
  Philox4x32 g(seed, seed2);
  for (int block = 0; block < 3; ++block) {
    const auto w = g();
    for (int i = 0; i < 4 && block * 4 + i < 10; ++i) {
      EXPECT_EQ(u[block * 4 + i], random::Uint32ToFloat(w[i]))
          << block << " " << i;
    }
  }
  auto d = Draw<double>("RandomUniform", seed, seed2, {4});
  Philox4x32 h(seed, seed2);
  const auto w0 = h(), w1 = h();
  EXPECT_EQ(d[0], random::Uint64ToDouble(w0[0], w0[1]));
  EXPECT_EQ(d[1], random::Uint64ToDouble(w0[2], w0[3]));
  EXPECT_EQ(d[2], random::Uint64ToDouble(w1[0], w1[1]));
  auto n = Draw<float>("RandomStandardNormal", seed, seed2, {2});
  Philox4x32 k(seed, seed2);
  const auto wn = k();
  float z0, z1;
  random::BoxMullerFloat(wn[0], wn[1], &z0, &z1);
  EXPECT_EQ(n[0], z0);
  EXPECT_EQ(n[1], z1);
}

TEST(RandomOpsTest, SuccessiveCallsDiffer) {
  for (const char* op : kFloatOps) {
    SCOPED_TRACE(op);
    StatefulKernel k(op, RandomAttrs(DT_FLOAT, 3, 4));
    ASSERT_OK(k.status());
    auto a = k.Run({ShapeVec({100})});
    auto b = k.Run({ShapeVec({100})});
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    auto fa = a->flat<float>(), fb = b->flat<float>();
    int same = 0;
    for (int i = 0; i < 100; ++i) same += fa[i] == fb[i];
    EXPECT_LT(same, 3);
    // A second kernel with the same seeds repeats the same sequence of calls.
    StatefulKernel k2(op, RandomAttrs(DT_FLOAT, 3, 4));
    auto a2 = k2.Run({ShapeVec({100})});
    auto b2 = k2.Run({ShapeVec({100})});
    ExpectTensorEqual<float>(*a2, *a);
    ExpectTensorEqual<float>(*b2, *b);
  }
}

TEST(RandomOpsTest, ZeroSeedsAreNondeterministic) {
  auto a = Draw<float>("RandomUniform", 0, 0, {64});
  auto b = Draw<float>("RandomUniform", 0, 0, {64});
  EXPECT_NE(a, b);
}

TEST(RandomOpsTest, ValuesDoNotDependOnTheParallelSplit) {
  // A large output is filled in parallel shards; its prefix must equal a
  // small output drawn inline with the same seeds.
  for (const char* op : kFloatOps) {
    SCOPED_TRACE(op);
    auto big = Draw<float>(op, 21, 22, {1 << 20});
    auto small = Draw<float>(op, 21, 22, {37});
    ASSERT_EQ(big.size(), size_t{1} << 20);
    for (size_t i = 0; i < small.size(); ++i) ASSERT_EQ(big[i], small[i]) << i;
    auto bigd = Draw<double>(op, 21, 22, {1 << 18});
    auto smalld = Draw<double>(op, 21, 22, {9});
    for (size_t i = 0; i < smalld.size(); ++i)
      ASSERT_EQ(bigd[i], smalld[i]) << i;
  }
}

TEST(RandomOpsTest, ConcurrentCallsGetDisjointStreams) {
  // Two threads calling one kernel get the two blocks a sequential pair of
  // calls would get, in some order.
  StatefulKernel seq("RandomUniform", RandomAttrs(DT_FLOAT, 5, 9));
  auto s1 = seq.Run({ShapeVec({1000})});
  auto s2 = seq.Run({ShapeVec({1000})});
  ASSERT_OK(s1.status());
  ASSERT_OK(s2.status());
  StatefulKernel par("RandomUniform", RandomAttrs(DT_FLOAT, 5, 9));
  StatusOr<Tensor> p1, p2;
  std::thread t1([&] { p1 = par.Run({ShapeVec({1000})}); });
  std::thread t2([&] { p2 = par.Run({ShapeVec({1000})}); });
  t1.join();
  t2.join();
  ASSERT_OK(p1.status());
  ASSERT_OK(p2.status());
  auto key = [](const Tensor& t) {
    auto f = t.flat<float>();
    return std::vector<float>(f.begin(), f.end());
  };
  std::set<std::vector<float>> want = {key(*s1), key(*s2)};
  std::set<std::vector<float>> got = {key(*p1), key(*p2)};
  EXPECT_EQ(want, got);
}

// ---------------------------------------------------------------------------
// Statistics (100k samples; tolerances are > 10 standard errors).

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};
template <typename T>
Moments ComputeMoments(const std::vector<T>& v) {
  Moments m;
  double sum = 0, sq = 0;
  m.min = m.max = static_cast<double>(v[0]);
  for (T x : v) {
    const double d = static_cast<double>(x);
    sum += d;
    sq += d * d;
    m.min = std::min(m.min, d);
    m.max = std::max(m.max, d);
  }
  m.mean = sum / v.size();
  m.stddev = std::sqrt(sq / v.size() - m.mean * m.mean);
  return m;
}

TEST(RandomOpsTest, UniformStatistics) {
  auto f = Draw<float>("RandomUniform", 1, 2, {100000});
  Moments m = ComputeMoments(f);
  EXPECT_NEAR(m.mean, 0.5, 0.01);
  EXPECT_NEAR(m.stddev, std::sqrt(1.0 / 12), 0.01);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  // Each decile holds about a tenth of the samples.
  std::vector<int> bins(10);
  for (float x : f) ++bins[static_cast<int>(x * 10)];
  for (int b : bins) EXPECT_NEAR(b, 10000, 600);

  auto d = Draw<double>("RandomUniform", 1, 2, {100000});
  Moments md = ComputeMoments(d);
  EXPECT_NEAR(md.mean, 0.5, 0.01);
  EXPECT_GE(md.min, 0.0);
  EXPECT_LT(md.max, 1.0);
}

TEST(RandomOpsTest, HalfAndBfloat16Uniform) {
  OpTestCase h("RandomUniform");
  h.Attr("dtype", DT_HALF)
      .Attr("T", DT_INT32)
      .Attr("seed", 4)
      .Input(ShapeVec({20000}));
  ASSERT_OK(h.Run());
  double sum = 0;
  for (half x : h.output(0).flat<half>()) {
    const float v = HalfToFloat(x);
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    // Multiples of 2^-10.
    ASSERT_EQ(v * 1024.0f, std::floor(v * 1024.0f));
    sum += v;
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.02);

  OpTestCase b("RandomUniform");
  b.Attr("dtype", DT_BFLOAT16)
      .Attr("T", DT_INT32)
      .Attr("seed", 4)
      .Input(ShapeVec({20000}));
  ASSERT_OK(b.Run());
  sum = 0;
  for (bfloat16 x : b.output(0).flat<bfloat16>()) {
    const float v = BFloat16ToFloat(x);
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.02);

  OpTestCase n("TruncatedNormal");
  n.Attr("dtype", DT_HALF)
      .Attr("T", DT_INT32)
      .Attr("seed", 4)
      .Input(ShapeVec({5000}));
  ASSERT_OK(n.Run());
  for (half x : n.output(0).flat<half>())
    ASSERT_LE(std::abs(HalfToFloat(x)), 2.0f);

  OpTestCase s("RandomStandardNormal");
  s.Attr("dtype", DT_BFLOAT16)
      .Attr("T", DT_INT32)
      .Attr("seed", 4)
      .Input(ShapeVec({20000}));
  ASSERT_OK(s.Run());
  std::vector<float> v;
  for (bfloat16 x : s.output(0).flat<bfloat16>())
    v.push_back(BFloat16ToFloat(x));
  Moments m = ComputeMoments(v);
  EXPECT_NEAR(m.mean, 0.0, 0.05);
  EXPECT_NEAR(m.stddev, 1.0, 0.05);
}

TEST(RandomOpsTest, NormalStatistics) {
  auto f = Draw<float>("RandomStandardNormal", 3, 5, {100000});
  Moments m = ComputeMoments(f);
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  EXPECT_NEAR(m.stddev, 1.0, 0.02);
  // About 68.3% within one standard deviation.
  int64_t within = std::count_if(f.begin(), f.end(),
                                 [](float x) { return std::abs(x) < 1; });
  EXPECT_NEAR(within / 100000.0, 0.6827, 0.01);

  auto d = Draw<double>("RandomStandardNormal", 3, 5, {100000});
  Moments md = ComputeMoments(d);
  EXPECT_NEAR(md.mean, 0.0, 0.02);
  EXPECT_NEAR(md.stddev, 1.0, 0.02);
}

TEST(RandomOpsTest, TruncatedNormalStatistics) {
  // The standard normal truncated to (-2, 2) has stddev 0.8796.
  auto f = Draw<float>("TruncatedNormal", 8, 9, {100000});
  Moments m = ComputeMoments(f);
  EXPECT_GT(m.min, -2.0);
  EXPECT_LT(m.max, 2.0);
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  EXPECT_NEAR(m.stddev, 0.8796, 0.02);
  // Values near the cut-off still occur.
  EXPECT_GT(m.max, 1.9);
  EXPECT_LT(m.min, -1.9);

  auto d = Draw<double>("TruncatedNormal", 8, 9, {100000});
  Moments md = ComputeMoments(d);
  EXPECT_GT(md.min, -2.0);
  EXPECT_LT(md.max, 2.0);
  EXPECT_NEAR(md.stddev, 0.8796, 0.02);
}

// ---------------------------------------------------------------------------
// RandomUniformInt

template <typename T>
OpTestCase UniformInt(std::vector<int32_t> shape, T lo, T hi,
                      int64_t seed = 17) {
  OpTestCase t("RandomUniformInt");
  t.Attr("Tout", DataTypeToEnum<T>::value)
      .Attr("T", DT_INT32)
      .Attr("seed", seed)
      .Attr("seed2", int64_t{1})
      .Input(ShapeVec(shape))
      .Input(Tensor::Scalar<T>(lo))
      .Input(Tensor::Scalar<T>(hi));
  return t;
}

TEST(RandomUniformIntTest, Int32RangeAndCoverage) {
  OpTestCase t = UniformInt<int32_t>({20, 50}, -3, 4);
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).shape(), TensorShape({20, 50}));
  std::vector<int> counts(7);
  for (int32_t v : t.output(0).flat<int32_t>()) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++counts[v + 3];
  }
  for (int c : counts) EXPECT_GT(c, 1000 / 7 / 2);
  // Same seeds, same values.
  OpTestCase again = UniformInt<int32_t>({20, 50}, -3, 4);
  ASSERT_OK(again.Run());
  ExpectTensorEqual<int32_t>(again.output(0), t.output(0));
}

TEST(RandomUniformIntTest, Int64FullRangeDoesNotOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  OpTestCase t = UniformInt<int64_t>({1000}, kMin, kMax);
  ASSERT_OK(t.Run());
  int negative = 0;
  for (int64_t v : t.output(0).flat<int64_t>()) {
    ASSERT_LT(v, kMax);
    negative += v < 0;
  }
  EXPECT_NEAR(negative, 500, 100);

  OpTestCase small = UniformInt<int64_t>({1000}, 10, 12);
  ASSERT_OK(small.Run());
  std::set<int64_t> seen;
  for (int64_t v : small.output(0).flat<int64_t>()) seen.insert(v);
  EXPECT_EQ(seen, (std::set<int64_t>{10, 11}));

  OpTestCase i32 =
      UniformInt<int32_t>({1000}, std::numeric_limits<int32_t>::min(),
                          std::numeric_limits<int32_t>::max());
  ASSERT_OK(i32.Run());
}

TEST(RandomUniformIntTest, BadRange) {
  for (auto [lo, hi] : {std::pair{5, 5}, std::pair{6, 2}}) {
    OpTestCase t = UniformInt<int32_t>({4}, lo, hi);
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("Need minval < maxval"), std::string::npos) << s;
  }
  // An empty output needs no valid range.
  OpTestCase empty = UniformInt<int32_t>({0, 3}, 5, 5);
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({0, 3}));

  OpTestCase vec("RandomUniformInt");
  vec.Attr("Tout", DT_INT32)
      .Attr("T", DT_INT32)
      .Input(ShapeVec({3}))
      .Input(Tensor::FromVector<int32_t>({0, 1}))
      .Input(Tensor::Scalar<int32_t>(5));
  Status s = vec.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("minval must be 0-D"), std::string::npos) << s;
  // The shape function also rejects it.
  EXPECT_EQ(vec.Run().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Shapes.

TEST(RandomOpsTest, ShapeHandling) {
  // int64 shape input.
  OpTestCase t("RandomUniform");
  t.Attr("dtype", DT_DOUBLE)
      .Attr("T", DT_INT64)
      .Input(Tensor::FromVector<int64_t>({2, 0, 3}));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).shape(), TensorShape({2, 0, 3}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({2, 0, 3}));

  // An empty shape vector gives a scalar.
  OpTestCase s("RandomStandardNormal");
  s.Attr("dtype", DT_FLOAT).Attr("T", DT_INT32).Input(ShapeVec({}));
  ASSERT_OK(s.Run());
  EXPECT_EQ(s.output(0).shape(), TensorShape({}));

  // Without the value, the shape function knows the rank.
  AttrMap attrs = RandomAttrs(DT_FLOAT, 0, 0);
  auto shapes =
      InferShapes("TruncatedNormal", attrs, {PartialTensorShape({4})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape::UnknownDims(4));
  shapes = InferShapes("RandomUniform", attrs, {PartialTensorShape()});
  ASSERT_OK(shapes.status());
  EXPECT_TRUE((*shapes)[0].unknown_rank());
  EXPECT_EQ(InferShapes("RandomUniform", attrs, {PartialTensorShape({2, 2})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RandomOpsTest, BadShapes) {
  for (const char* op : kFloatOps) {
    SCOPED_TRACE(op);
    OpTestCase t(op);
    t.Attr("dtype", DT_FLOAT).Attr("T", DT_INT32).Input(ShapeVec({3, -2}));
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("-2"), std::string::npos) << s;

    OpTestCase u(op);
    u.Attr("dtype", DT_FLOAT).Attr("T", DT_INT32).Input(ShapeVec({3, -1}));
    s = u.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("negative"), std::string::npos) << s;

    OpTestCase m(op);
    m.Attr("dtype", DT_FLOAT)
        .Attr("T", DT_INT32)
        .Input(Tensor::FromVector<int32_t>({2, 2}, TensorShape({1, 2})));
    s = m.RunKernelOnly();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("shape must be a vector"), std::string::npos)
        << s;
    // A scalar is not a shape either, for the kernel and the shape function.
    OpTestCase sc(op);
    sc.Attr("dtype", DT_FLOAT)
        .Attr("T", DT_INT32)
        .Input(Tensor::Scalar<int32_t>(3));
    s = sc.RunKernelOnly();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_EQ(sc.Run().code(), absl::StatusCode::kInvalidArgument);
  }
  OpTestCase r = UniformInt<int32_t>({-4}, 0, 3);
  EXPECT_EQ(r.Run().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
