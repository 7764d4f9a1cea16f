#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) {
  return Tensor::FromVector<float>(v, shape);
}
template <typename I = int32_t>
Tensor Ints(std::vector<I> v, TensorShape shape) {
  return Tensor::FromVector<I>(v, shape);
}

void ExpectError(const Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "message '" << s.message() << "' lacks '" << fragment << "'";
}

OpTestCase PadCase(const std::string& op, const Tensor& x, const Tensor& p) {
  OpTestCase t(op, "pad");
  t.Attr("T", x.dtype()).Attr("Tpaddings", p.dtype()).Input(x).Input(p);
  return t;
}

const Tensor& X23() {
  static const Tensor* x = new Tensor(Floats({1, 2, 3, 4, 5, 6}, {2, 3}));
  return *x;
}

TEST(PadTest, ZerosAndConstant) {
  {
    OpTestCase t = PadCase("Pad", X23(), Ints({1, 0, 0, 2}, {2, 2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(
        t.output(0),
        Floats({0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0}, {3, 5}));
  }
  {
    OpTestCase t = PadCase("PadV2", X23(), Ints<int64_t>({0, 0, 1, 1}, {2, 2}));
    t.Input(Tensor::Scalar<float>(9));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0),
                             Floats({9, 1, 2, 3, 9, 9, 4, 5, 6, 9}, {2, 5}));
  }
}

TEST(PadTest, BadPaddingsAreInvalidArgument) {
  Status s = PadCase("Pad", X23(), Ints({0, -1, 0, 0}, {2, 2})).Run();
  ExpectError(s, "Paddings must be non-negative: 0 -1");
  ExpectError(s, "'pad'");
  ExpectError(PadCase("Pad", X23(), Ints({0, 0}, {1, 2})).Run(),
              "The first dimension of paddings must be the rank of inputs");
  ExpectError(PadCase("Pad", X23(), Ints({0, 0, 0}, {1, 3})).Run(),
              "2 columns");
}

TEST(MirrorPadTest, ReflectAndSymmetric) {
  const Tensor x = Floats({1, 2, 3}, {3});
  {
    OpTestCase t = PadCase("MirrorPad", x, Ints({2, 1}, {1, 2}));
    t.Attr("mode", std::string("REFLECT"));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Floats({3, 2, 1, 2, 3, 2}, {6}));
  }
  {
    OpTestCase t = PadCase("MirrorPad", x, Ints({3, 1}, {1, 2}));
    t.Attr("mode", std::string("SYMMETRIC"));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Floats({3, 2, 1, 1, 2, 3, 3}, {7}));
  }
  {  // 2-D, both dims.
    OpTestCase t = PadCase("MirrorPad", X23(), Ints({1, 0, 1, 1}, {2, 2}));
    t.Attr("mode", std::string("REFLECT"));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(
        t.output(0),
        Floats({5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5}, {3, 5}));
  }
}

TEST(MirrorPadTest, TooLargePaddingsAreInvalidArgument) {
  const Tensor x = Floats({1, 2, 3}, {3});
  OpTestCase t = PadCase("MirrorPad", x, Ints({3, 0}, {1, 2}));
  t.Attr("mode", std::string("REFLECT"));
  ExpectError(t.Run(), "paddings must be less than the dimension size");
  OpTestCase u = PadCase("MirrorPad", x, Ints({0, 4}, {1, 2}));
  u.Attr("mode", std::string("SYMMETRIC"));
  ExpectError(u.Run(), "no greater than the dimension size");
}

TEST(MirrorPadGradTest, FoldsMarginsBack) {
  // REFLECT [1,2,3] by (2,1) -> [3,2,1,2,3,2]; dy = 1..6 folds to
  // dx[0] = 3, dx[1] = 2 + 4 + 6, dx[2] = 1 + 5.
  OpTestCase t = PadCase("MirrorPadGrad", Floats({1, 2, 3, 4, 5, 6}, {6}),
                         Ints({2, 1}, {1, 2}));
  t.Attr("mode", std::string("REFLECT"));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), Floats({3, 12, 6}, {3}));
}

TEST(ReverseV2Test, Axes) {
  auto run = [](std::vector<int32_t> axes) {
    OpTestCase t("ReverseV2", "rev");
    t.Attr("T", DT_FLOAT)
        .Attr("Tidx", DT_INT32)
        .Input(X23())
        .Input(Ints(axes, {static_cast<int64_t>(axes.size())}));
    return t;
  };
  OpTestCase a = run({1});
  ASSERT_OK(a.Run());
  ExpectTensorEqual<float>(a.output(0), Floats({3, 2, 1, 6, 5, 4}, {2, 3}));
  OpTestCase b = run({0, -1});
  ASSERT_OK(b.Run());
  ExpectTensorEqual<float>(b.output(0), Floats({6, 5, 4, 3, 2, 1}, {2, 3}));
  OpTestCase c = run({});
  ASSERT_OK(c.Run());
  ExpectTensorEqual<float>(c.output(0), X23());
  Status s = run({2}).Run();
  ExpectError(s, "'axis'[0] = 2 is out of valid range");
  ExpectError(s, "'rev'");
  ExpectError(run({1, -1}).Run(), "specified more than once");
}

TEST(ReverseSequenceTest, BatchAndSeqDims) {
  // x[b, s]: batch 0 reverses 3 steps, batch 1 reverses 1 (a copy).
  OpTestCase t("ReverseSequence", "rs");
  t.Attr("T", DT_FLOAT)
      .Attr("Tlen", DT_INT64)
      .Attr("seq_dim", int64_t{1})
      .Attr("batch_dim", int64_t{0})
      .Input(Floats({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}))
      .Input(Ints<int64_t>({3, 1}, {2}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0),
                           Floats({3, 2, 1, 4, 5, 6, 7, 8}, {2, 4}));
  // Time-major [s, b, 2]: seq_dim 0, batch_dim 1.
  OpTestCase u("ReverseSequence");
  u.Attr("T", DT_FLOAT)
      .Attr("Tlen", DT_INT32)
      .Attr("seq_dim", int64_t{0})
      .Attr("batch_dim", int64_t{1})
      .Input(Floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 2, 2}))
      .Input(Ints({2, 3}, {2}));
  ASSERT_OK(u.Run());
  ExpectTensorEqual<float>(
      u.output(0), Floats({5, 6, 11, 12, 1, 2, 7, 8, 9, 10, 3, 4}, {3, 2, 2}));
}

TEST(ReverseSequenceTest, BadLengthsAreInvalidArgument) {
  OpTestCase t("ReverseSequence", "rs");
  t.Attr("T", DT_FLOAT)
      .Attr("Tlen", DT_INT64)
      .Attr("seq_dim", int64_t{1})
      .Input(X23())
      .Input(Ints<int64_t>({4, 1}, {2}));
  Status s = t.Run();
  ExpectError(s, "seq_lengths[0] = 4 is not in [0, 3]");
  ExpectError(s, "'rs'");
}

TEST(BroadcastToTest, Shapes) {
  OpTestCase t("BroadcastTo", "b");
  t.Attr("T", DT_FLOAT)
      .Attr("Tidx", DT_INT32)
      .Input(Floats({1, 2}, {2, 1}))
      .Input(Ints({2, 2, 3}, {3}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(
      t.output(0), Floats({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, {2, 2, 3}));
  OpTestCase u("BroadcastTo", "b");
  u.Attr("T", DT_FLOAT)
      .Attr("Tidx", DT_INT64)
      .Input(Floats({1, 2, 3}, {3}))
      .Input(Ints<int64_t>({2, 3}, {2}));
  ASSERT_OK(u.Run());
  ExpectTensorEqual<float>(u.output(0), Floats({1, 2, 3, 1, 2, 3}, {2, 3}));
  OpTestCase bad("BroadcastTo", "b");
  bad.Attr("T", DT_FLOAT)
      .Attr("Tidx", DT_INT32)
      .Input(Floats({1, 2, 3}, {3}))
      .Input(Ints({2, 2}, {2}));
  ExpectError(bad.RunKernelOnly(), "Incompatible shapes");
  // An empty output with a huge dimension is empty at once (it sized a
  // 2^40-entry index map first: found by the kernel fuzzer).
  OpTestCase empty("BroadcastTo", "b");
  empty.Attr("T", DT_FLOAT)
      .Attr("Tidx", DT_INT64)
      .Input(Floats({1}, {1, 1}))
      .Input(Ints<int64_t>({int64_t{1} << 40, 0}, {2}));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({int64_t{1} << 40, 0}));
}

}  // namespace
}  // namespace runnel
