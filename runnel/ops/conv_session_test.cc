// TensorFlow's own frozen Keras layer (testdata/tf/graphs/conv2d_bias_relu
// .pbtxt: Placeholder -> Conv2D SAME -> BiasAdd -> Relu -> Identity) run
// through a Session, against a direct NHWC convolution of the fed input with
// the kernel stored in the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kKernelNode[] = "conv_net_2d/conv_2d_0/w";
constexpr char kBiasNode[] = "conv_net_2d/conv_2d_0/b";

std::string GraphPath() {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/graphs/conv2d_bias_relu.pbtxt";
}

// The value of Const node `name` in `g`.
Tensor ConstValue(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node()) {
    if (n.name() != name) continue;
    auto t = Tensor::FromProto(n.attr().at("value").tensor());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : Tensor();
  }
  ADD_FAILURE() << "no node " << name;
  return Tensor();
}

// relu(conv(x, w) + b) for NHWC x [1, 8, 8, 2], HWIO w [3, 3, 2, 2], SAME,
// stride 1 (one row/column of zero padding on every side).
std::vector<float> Reference(const Tensor& x, const Tensor& w, const Tensor& b,
                             bool relu) {
  const int64_t h = 8, wd = 8, ci = 2, co = 2;
  std::vector<float> out(h * wd * co);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t xx = 0; xx < wd; ++xx)
      for (int64_t o = 0; o < co; ++o) {
        double s = 0;
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            const int64_t iy = y - 1 + ky, ix = xx - 1 + kx;
            if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
            for (int64_t i = 0; i < ci; ++i) {
              s += static_cast<double>(
                       x.flat<float>()[(iy * wd + ix) * ci + i]) *
                   w.flat<float>()[((ky * 3 + kx) * ci + i) * co + o];
            }
          }
        if (relu) {
          s += b.flat<float>()[o];
          s = std::max(s, 0.0);
        }
        out[(y * wd + xx) * co + o] = static_cast<float>(s);
      }
  return out;
}

Tensor Input(int seed) {
  std::vector<float> v(128);
  for (int i = 0; i < 128; ++i) {
    // Mixed signs so that the ReLU cuts some outputs.
    v[i] = static_cast<float>(((i * 37 + seed * 11) % 29) - 14) / 7.0f;
  }
  return Tensor::FromVector<float>(v, TensorShape({1, 8, 8, 2}));
}

TEST(ConvSessionTest, TfConv2dBiasReluGraph) {
  GraphDef g;
  ASSERT_OK(ReadGraphDefFile(GraphPath(), &g));
  const Tensor w = ConstValue(g, kKernelNode);
  const Tensor b = ConstValue(g, kBiasNode);
  ASSERT_EQ(w.shape(), TensorShape({3, 3, 2, 2}));
  ASSERT_EQ(b.shape(), TensorShape({2}));
  EXPECT_FLOAT_EQ(b.flat<float>()[0], 0.1f);
  EXPECT_FLOAT_EQ(b.flat<float>()[1], 0.1f);

  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(g));
  // Several steps: the cached executor and convolution primitive are reused.
  for (int step = 0; step < 3; ++step) {
    const Tensor x = Input(step);
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run(
        {{"input", x}}, {"output_0", "conv_net_2d_1/conv_2d_0/convolution"}, {},
        &out));
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].shape(), TensorShape({1, 8, 8, 2}));
    ExpectTensorNear<float>(
        out[0], Tensor::FromVector<float>(Reference(x, w, b, true), x.shape()),
        1e-5);
    ExpectTensorNear<float>(
        out[1], Tensor::FromVector<float>(Reference(x, w, b, false), x.shape()),
        1e-5);
    int zeros = 0;
    for (float v : out[0].flat<float>()) zeros += v == 0.0f;
    EXPECT_GT(zeros, 0);    // The ReLU did something...
    EXPECT_LT(zeros, 128);  // ...but not everything.
  }
}

TEST(ConvSessionTest, WrongFeedShapeIsAnError) {
  GraphDef g;
  ASSERT_OK(ReadGraphDefFile(GraphPath(), &g));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(g));
  std::vector<Tensor> out;
  Status s =
      (*session)->Run({{"input", Tensor(DT_FLOAT, TensorShape({1, 8, 8, 3}))}},
                      {"output_0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace runnel
