// The generic op-test harness: declare an op, its attrs and inputs, run the
// CPU kernel, compare outputs. It also runs the op's shape function (with
// input values known, and again with them unknown) and fails if the kernel's
// output shape disagrees with what the shape function inferred.
//
//   OpTestCase t("Add");
//   t.Attr("T", DT_FLOAT)
//    .Input<float>({2}, {1, 2})
//    .Input<float>({}, {10});
//   ASSERT_OK(t.Run());
//   ExpectTensorEqual<float>(t.output(0), Tensor::FromVector<float>({11, 12}));
#ifndef RUNNEL_TESTING_OP_TEST_UTIL_H_
#define RUNNEL_TESTING_OP_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runnel/devices/cpu_device.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/tensor.h"

namespace runnel {

class OpTestCase {
 public:
  explicit OpTestCase(std::string op, std::string node_name = "test_node");

  OpTestCase& Attr(const std::string& name, AttrValue v) {
    attrs_[name] = std::move(v);
    return *this;
  }
  template <typename T>
  OpTestCase& Attr(const std::string& name, T v) {
    return Attr(name, MakeAttrValue(v));
  }
  OpTestCase& Attr(const std::string& name, std::initializer_list<int64_t> v) {
    return Attr(name, MakeAttrValue(v));
  }
  OpTestCase& Input(Tensor t) {
    inputs_.push_back(std::move(t));
    return *this;
  }
  template <typename T>
  OpTestCase& Input(std::initializer_list<int64_t> shape,
                    std::vector<T> values) {
    return Input(Tensor::FromVector<T>(values, TensorShape(shape)));
  }

  // Builds the node, runs the shape function and the kernel. Returns the
  // first error (attr validation, shape function, kernel lookup, kernel
  // compute) with its message, or Internal if the kernel output shape
  // contradicts the shape function.
  Status Run();
  // Like Run() but skips the shape-function cross check (for ops whose
  // shape function rejects what the kernel would also reject).
  Status RunKernelOnly();

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const Tensor& output(int i) const { return outputs_[i]; }
  // Shapes the shape function inferred with input values known.
  const std::vector<PartialTensorShape>& inferred_shapes() const {
    return inferred_;
  }

 private:
  Status RunImpl(bool check_shapes);

  std::string op_;
  std::string node_name_;
  AttrMap attrs_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<PartialTensorShape> inferred_;
};

// Runs the shape function alone on the given input shapes (values unknown).
StatusOr<std::vector<PartialTensorShape>> InferShapes(
    const std::string& op, const AttrMap& attrs,
    const std::vector<PartialTensorShape>& input_shapes);

// A CPU device shared by tests.
CpuDevice* TestCpuDevice();

// Tensor comparisons with readable failures.
template <typename T>
void ExpectTensorEqual(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape())
      << actual.shape().DebugString() << " vs "
      << expected.shape().DebugString();
  auto a = actual.flat<T>();
  auto e = expected.flat<T>();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], e[i]) << "at flat index " << i << ": "
                          << actual.DebugString() << " vs "
                          << expected.DebugString();
  }
}

template <typename T>
void ExpectTensorNear(const Tensor& actual, const Tensor& expected,
                      double tol) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape())
      << actual.shape().DebugString() << " vs "
      << expected.shape().DebugString();
  auto a = actual.flat<T>();
  auto e = expected.flat<T>();
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(e[i]);
    if (std::isnan(y)) {
      ASSERT_TRUE(std::isnan(x)) << "at " << i;
      continue;
    }
    ASSERT_NEAR(x, y, tol * std::max(1.0, std::abs(y)))
        << "at flat index " << i << ": " << actual.DebugString(20) << " vs "
        << expected.DebugString(20);
  }
}

}  // namespace runnel

#define ASSERT_OK(expr)           \
  do {                            \
    ::absl::Status _st = (expr);  \
    ASSERT_TRUE(_st.ok()) << _st; \
  } while (0)
#define EXPECT_OK(expr)           \
  do {                            \
    ::absl::Status _st = (expr);  \
    EXPECT_TRUE(_st.ok()) << _st; \
  } while (0)

// ASSERT_OK_AND_ASSIGN(auto x, Foo()): asserts a StatusOr is ok and moves
// its value into `lhs` (in a function returning void, as ASSERT_* need).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  RUNNEL_ASSERT_OK_AND_ASSIGN_IMPL(     \
      RUNNEL_STATUS_CONCAT(runnel_assert_or_, __LINE__), lhs, expr)
#define RUNNEL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // RUNNEL_TESTING_OP_TEST_UTIL_H_
