// TensorArray ops through the op-test harness: each OpTestCase runs one
// kernel, and the harness's per-step resource manager outlives it, so the
// handle from a TensorArrayV3 case can be fed to the next cases (a session
// runs them in one step). Semantics follow TensorFlow (Note [TensorArray
// semantics] in tensor_array_ops.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runnel/framework/allocator.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_handle.h"
#include "runnel/graph/gradients.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

Tensor Flow() { return Tensor::Scalar<float>(0); }

struct TaOptions {
  PartialTensorShape element_shape;
  bool dynamic_size = false;
  bool clear_after_read = true;
  bool identical_element_shapes = false;
  std::string name;
};

// A new TensorArray's handle.
Tensor NewTA(DataType dtype, int32_t size, const TaOptions& o = {}) {
  OpTestCase t("TensorArrayV3");
  t.Attr("dtype", dtype)
      .Attr("element_shape", o.element_shape)
      .Attr("dynamic_size", o.dynamic_size)
      .Attr("clear_after_read", o.clear_after_read)
      .Attr("identical_element_shapes", o.identical_element_shapes)
      .Attr("tensor_array_name", o.name)
      .Input<int32_t>({}, {size});
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return Tensor();
  EXPECT_EQ(t.output(0).dtype(), DT_RESOURCE);
  ExpectTensorEqual<float>(t.output(1), Flow());
  return t.output(0);
}

Status Write(const Tensor& h, int32_t index, const Tensor& value) {
  OpTestCase t("TensorArrayWriteV3");
  t.Attr("T", value.dtype())
      .Input(h)
      .Input<int32_t>({}, {index})
      .Input(value)
      .Input(Flow());
  RETURN_IF_ERROR(t.Run());
  EXPECT_EQ(t.output(0).shape(), TensorShape({}));
  return absl::OkStatus();
}

StatusOr<Tensor> Read(const Tensor& h, int32_t index, DataType dtype) {
  OpTestCase t("TensorArrayReadV3");
  t.Attr("dtype", dtype).Input(h).Input<int32_t>({}, {index}).Input(Flow());
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

StatusOr<Tensor> Gather(const Tensor& h, std::vector<int32_t> indices,
                        DataType dtype, PartialTensorShape element_shape = {}) {
  OpTestCase t("TensorArrayGatherV3");
  const int64_t n = static_cast<int64_t>(indices.size());
  t.Attr("dtype", dtype)
      .Attr("element_shape", element_shape)
      .Input(h)
      .Input(Tensor::FromVector<int32_t>(indices, TensorShape({n})))
      .Input(Flow());
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

// kernel_only skips the shape function (whose errors come first).
Status Scatter(const Tensor& h, std::vector<int32_t> indices,
               const Tensor& value, bool kernel_only = false) {
  OpTestCase t("TensorArrayScatterV3");
  const int64_t n = static_cast<int64_t>(indices.size());
  t.Attr("T", value.dtype())
      .Input(h)
      .Input(Tensor::FromVector<int32_t>(indices, TensorShape({n})))
      .Input(value)
      .Input(Flow());
  return kernel_only ? t.RunKernelOnly() : t.Run();
}

StatusOr<std::pair<Tensor, Tensor>> Concat(const Tensor& h, DataType dtype,
                                           PartialTensorShape except0 = {}) {
  OpTestCase t("TensorArrayConcatV3");
  t.Attr("dtype", dtype)
      .Attr("element_shape_except0", except0)
      .Input(h)
      .Input(Flow());
  RETURN_IF_ERROR(t.Run());
  return std::make_pair(t.output(0), t.output(1));
}

Status Split(const Tensor& h, const Tensor& value, std::vector<int64_t> lengths,
             bool kernel_only = false) {
  OpTestCase t("TensorArraySplitV3");
  t.Attr("T", value.dtype())
      .Input(h)
      .Input(value)
      .Input(Tensor::FromVector<int64_t>(lengths))
      .Input(Flow());
  return kernel_only ? t.RunKernelOnly() : t.Run();
}

StatusOr<int32_t> Size(const Tensor& h) {
  OpTestCase t("TensorArraySizeV3");
  t.Input(h).Input(Flow());
  RETURN_IF_ERROR(t.Run());
  return t.output(0).scalar<int32_t>();
}

Status Close(const Tensor& h) {
  OpTestCase t("TensorArrayCloseV3");
  t.Input(h);
  return t.Run();
}

StatusOr<Tensor> Grad(const Tensor& h, const std::string& source) {
  OpTestCase t("TensorArrayGradV3");
  t.Attr("source", source).Input(h).Input(Flow());
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

const std::string& HandleName(const Tensor& h) {
  return h.scalar<ResourceHandle>().name();
}

void ExpectInvalid(const Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(what));
}

Tensor Floats(std::vector<float> v, TensorShape shape) {
  return Tensor::FromVector<float>(v, shape);
}

// ---------------------------------------------------------------------------
// Create, write, read, size

TEST(TensorArrayTest, CreateGivesAScalarHandleAndSize) {
  Tensor h = NewTA(DT_FLOAT, 3, {.name = "my_ta"});
  EXPECT_EQ(h.shape(), TensorShape({}));
  EXPECT_THAT(HandleName(h), HasSubstr("my_ta_"));
  auto size = Size(h);
  ASSERT_OK(size.status());
  EXPECT_EQ(*size, 3);
  // Every run makes a new array.
  EXPECT_NE(HandleName(h), HandleName(NewTA(DT_FLOAT, 3, {.name = "my_ta"})));
}

TEST(TensorArrayTest, WriteThenReadEveryDtype) {
  {
    Tensor h = NewTA(DT_FLOAT, 2);
    ASSERT_OK(Write(h, 1, Floats({1, 2, 3}, {3})));
    ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(-4)));
    auto v1 = Read(h, 1, DT_FLOAT);
    ASSERT_OK(v1.status());
    ExpectTensorEqual<float>(*v1, Floats({1, 2, 3}, {3}));
    auto v0 = Read(h, 0, DT_FLOAT);
    ASSERT_OK(v0.status());
    ExpectTensorEqual<float>(*v0, Tensor::Scalar<float>(-4));
  }
  {
    Tensor h = NewTA(DT_DOUBLE, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<double>({0.25, 1e300})));
    auto v = Read(h, 0, DT_DOUBLE);
    ASSERT_OK(v.status());
    ExpectTensorEqual<double>(*v, Tensor::FromVector<double>({0.25, 1e300}));
  }
  {
    Tensor h = NewTA(DT_INT32, 1);
    Tensor x = Tensor::FromVector<int32_t>({1, -2, 3, -4}, TensorShape({2, 2}));
    ASSERT_OK(Write(h, 0, x));
    auto v = Read(h, 0, DT_INT32);
    ASSERT_OK(v.status());
    ExpectTensorEqual<int32_t>(*v, x);
  }
  {
    Tensor h = NewTA(DT_INT64, 1);
    ASSERT_OK(Write(h, 0, Tensor::Scalar<int64_t>(int64_t{1} << 50)));
    auto v = Read(h, 0, DT_INT64);
    ASSERT_OK(v.status());
    ExpectTensorEqual<int64_t>(*v, Tensor::Scalar<int64_t>(int64_t{1} << 50));
  }
  {
    Tensor h = NewTA(DT_BOOL, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<bool>({true, false})));
    auto v = Read(h, 0, DT_BOOL);
    ASSERT_OK(v.status());
    ExpectTensorEqual<bool>(*v, Tensor::FromVector<bool>({true, false}));
  }
  {
    Tensor h = NewTA(DT_STRING, 2);
    ASSERT_OK(Scatter(h, {1, 0}, Tensor::FromVector<tstring>({"b", "a"})));
    auto v = Gather(h, {0, 1}, DT_STRING);
    ASSERT_OK(v.status());
    ExpectTensorEqual<tstring>(*v, Tensor::FromVector<tstring>({"a", "b"}));
  }
}

TEST(TensorArrayTest, WriteOutputsFlowAndIsChecked) {
  Tensor h = NewTA(DT_FLOAT, 2, {.name = "checked"});
  // Out of range, negative.
  Status s = Write(h, 2, Tensor::Scalar<float>(1));
  ExpectInvalid(s, "Tried to write to index 2 but array is not resizeable");
  EXPECT_THAT(std::string(s.message()), HasSubstr("checked"));
  ExpectInvalid(Write(h, -1, Tensor::Scalar<float>(1)),
                "Tried to write to index -1");
  // Wrong dtype.
  ExpectInvalid(Write(h, 0, Tensor::Scalar<double>(1)),
                "value dtype is double but TensorArray dtype is float");
  // Double write.
  ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(1)));
  ExpectInvalid(Write(h, 0, Tensor::Scalar<float>(2)),
                "because it has already been written to");
  // The first value stays.
  auto v = Read(h, 0, DT_FLOAT);
  ASSERT_OK(v.status());
  ExpectTensorEqual<float>(*v, Tensor::Scalar<float>(1));
  // A write after a read.
  ExpectInvalid(Write(h, 0, Tensor::Scalar<float>(3)),
                "because it has already been read");
}

TEST(TensorArrayTest, WriteOfMismatchedElementShape) {
  Tensor h = NewTA(DT_FLOAT, 2, {.element_shape = PartialTensorShape({-1, 2})});
  ASSERT_OK(Write(h, 0, Floats({1, 2, 3, 4, 5, 6}, {3, 2})));
  ExpectInvalid(Write(h, 1, Floats({1, 2, 3}, {3})),
                "value shape is [3] which is incompatible with the "
                "TensorArray's inferred element shape: [?,2]");
}

TEST(TensorArrayTest, IdenticalElementShapesFixesTheFirstWrittenShape) {
  Tensor h = NewTA(DT_FLOAT, 3, {.identical_element_shapes = true});
  ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
  ExpectInvalid(Write(h, 1, Floats({1, 2, 3}, {3})), "incompatible");
  // The element shape is now known, so an unwritten index reads zeros.
  auto v = Read(h, 2, DT_FLOAT);
  ASSERT_OK(v.status());
  ExpectTensorEqual<float>(*v, Floats({0, 0}, {2}));
}

TEST(TensorArrayTest, ReadOfUnwrittenIndex) {
  // Unknown element shape: an error (TensorFlow's behaviour).
  Tensor h = NewTA(DT_FLOAT, 3, {.name = "sparse"});
  Status s = Read(h, 1, DT_FLOAT).status();
  ExpectInvalid(s, "Could not read from TensorArray index 1");
  EXPECT_THAT(std::string(s.message()), HasSubstr("not yet been written"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("sparse"));
  // Fully defined element shape: zeros.
  Tensor h2 = NewTA(DT_INT32, 3, {.element_shape = PartialTensorShape({2})});
  auto v = Read(h2, 1, DT_INT32);
  ASSERT_OK(v.status());
  ExpectTensorEqual<int32_t>(*v, Tensor::FromVector<int32_t>({0, 0}));
  // Partially known: still an error.
  Tensor h3 = NewTA(DT_FLOAT, 3, {.element_shape = PartialTensorShape({-1})});
  ExpectInvalid(Read(h3, 0, DT_FLOAT).status(), "[?]");
  // An element count that overflows int64 (an untrusted attr): an error,
  // not zeros of a wrapped-around size.
  const int64_t big = int64_t{1} << 40;
  Tensor h4 = NewTA(DT_FLOAT, 3,
                    {.element_shape = PartialTensorShape({big, big, big})});
  ExpectInvalid(Read(h4, 0, DT_FLOAT).status(), "too many elements");
}

TEST(TensorArrayTest, ReadOutOfRangeAndWrongDtype) {
  Tensor h = NewTA(DT_FLOAT, 2);
  ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(1)));
  ExpectInvalid(Read(h, 2, DT_FLOAT).status(),
                "Tried to read from index 2 but array size is: 2");
  ExpectInvalid(Read(h, -3, DT_FLOAT).status(), "Tried to read from index -3");
  ExpectInvalid(Read(h, 0, DT_INT32).status(),
                "has dtype float but the op uses dtype int32");
}

TEST(TensorArrayTest, ClearAfterRead) {
  Tensor h = NewTA(DT_FLOAT, 1);
  ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(5)));
  ASSERT_OK(Read(h, 0, DT_FLOAT).status());
  ExpectInvalid(Read(h, 0, DT_FLOAT).status(),
                "Could not read index 0 twice because it was cleared");

  Tensor keep = NewTA(DT_FLOAT, 1, {.clear_after_read = false});
  ASSERT_OK(Write(keep, 0, Tensor::Scalar<float>(5)));
  for (int i = 0; i < 3; ++i) {
    auto v = Read(keep, 0, DT_FLOAT);
    ASSERT_OK(v.status());
    ExpectTensorEqual<float>(*v, Tensor::Scalar<float>(5));
  }
}

TEST(TensorArrayTest, DynamicSizeGrowsOnWrite) {
  Tensor h = NewTA(DT_FLOAT, 0, {.dynamic_size = true});
  EXPECT_EQ(*Size(h), 0);
  ASSERT_OK(Write(h, 4, Tensor::Scalar<float>(4)));
  EXPECT_EQ(*Size(h), 5);
  ASSERT_OK(Write(h, 1, Tensor::Scalar<float>(1)));
  EXPECT_EQ(*Size(h), 5);
  ASSERT_OK(Scatter(h, {7, 5}, Floats({7, 5}, {2})));
  EXPECT_EQ(*Size(h), 8);
  auto v = Gather(h, {1, 4, 5, 7}, DT_FLOAT);
  ASSERT_OK(v.status());
  ExpectTensorEqual<float>(*v, Floats({1, 4, 5, 7}, {4}));
  ExpectInvalid(Write(h, -1, Tensor::Scalar<float>(1)), "index -1");
  // Indices past the supported maximum fail instead of exhausting memory.
  ExpectInvalid(Write(h, 2000000000, Tensor::Scalar<float>(1)),
                "beyond the maximum size");
}

TEST(TensorArrayTest, BadSizes) {
  {
    OpTestCase t("TensorArrayV3");
    t.Attr("dtype", DT_FLOAT).Input<int32_t>({}, {-1});
    ExpectInvalid(t.Run(), "Size should be >= 0");
  }
  {
    OpTestCase t("TensorArrayV3");
    t.Attr("dtype", DT_FLOAT).Input<int32_t>({1}, {3});
    ExpectInvalid(t.RunKernelOnly(), "TensorArray size must be a scalar");
  }
  {
    OpTestCase t("TensorArrayV3");
    t.Attr("dtype", DT_FLOAT).Input<int32_t>({}, {2000000000});
    ExpectInvalid(t.Run(), "beyond the maximum");
  }
  {
    // Within the maximum but over the memory budget: the slots' bookkeeping
    // counts against the CPU allocator's limit.
    const int64_t old = CpuAllocatorLimit();
    SetCpuAllocatorLimit(cpu_allocator()->GetStats().bytes_in_use + (1 << 20));
    OpTestCase t("TensorArrayV3");
    t.Attr("dtype", DT_FLOAT).Input<int32_t>({}, {1 << 22});
    Status s = t.Run();
    SetCpuAllocatorLimit(old);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("bookkeeping"));
  }
}

TEST(TensorArrayTest, ScalarIndexAndFlowRequired) {
  Tensor h = NewTA(DT_FLOAT, 2);
  OpTestCase t("TensorArrayWriteV3");
  t.Attr("T", DT_FLOAT)
      .Input(h)
      .Input<int32_t>({1}, {0})
      .Input(Tensor::Scalar<float>(1))
      .Input(Flow());
  ExpectInvalid(t.RunKernelOnly(), "TensorArray index must be a scalar");
  OpTestCase r("TensorArrayReadV3");
  r.Attr("dtype", DT_FLOAT)
      .Input(h)
      .Input<int32_t>({}, {0})
      .Input(Floats({0, 0}, {2}));
  ExpectInvalid(r.RunKernelOnly(), "flow_in must be a scalar");
}

// ---------------------------------------------------------------------------
// Gather, scatter

TEST(TensorArrayTest, ScatterThenGather) {
  Tensor h = NewTA(DT_FLOAT, 3);
  // Rows 0, 1, 2 of value go to indices 2, 0, 1.
  ASSERT_OK(Scatter(h, {2, 0, 1}, Floats({1, 2, 3, 4, 5, 6}, {3, 2})));
  auto v = Gather(h, {0, 1, 2}, DT_FLOAT, PartialTensorShape({2}));
  ASSERT_OK(v.status());
  ExpectTensorEqual<float>(*v, Floats({3, 4, 5, 6, 1, 2}, {3, 2}));
}

TEST(TensorArrayTest, GatherRepeatsAndSubsetsWithoutClear) {
  Tensor h = NewTA(DT_DOUBLE, 3, {.clear_after_read = false});
  ASSERT_OK(Scatter(h, {0, 1, 2},
                    Tensor::FromVector<double>({1, 2, 3}, TensorShape({3}))));
  auto v = Gather(h, {2, 2, 0}, DT_DOUBLE);
  ASSERT_OK(v.status());
  ExpectTensorEqual<double>(*v, Tensor::FromVector<double>({3, 3, 1}));
}

TEST(TensorArrayTest, GatherErrors) {
  Tensor h = NewTA(DT_FLOAT, 3, {.clear_after_read = false});
  ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
  ASSERT_OK(Write(h, 1, Floats({1, 2, 3}, {3})));
  ExpectInvalid(Gather(h, {0, 1}, DT_FLOAT).status(),
                "TensorArray has inconsistent shapes.  Index 0 has shape: [2] "
                "but index 1 has shape: [3]");
  ExpectInvalid(Gather(h, {2}, DT_FLOAT).status(), "not yet been written");
  // Gathering narrows the element shape (as in TensorFlow, even when the
  // gather then fails); [5] contradicts element 1.
  ExpectInvalid(Gather(h, {1}, DT_FLOAT, PartialTensorShape({5})).status(),
                "which does not match the Tensor at index 1");
  ExpectInvalid(Gather(h, {0}, DT_FLOAT, PartialTensorShape({7})).status(),
                "is incompatible with the array's element shape [5]");
  // Now that the element shape is fully known, index 2 reads as zeros.
  auto zeros = Gather(h, {2}, DT_FLOAT);
  ASSERT_OK(zeros.status());
  ExpectTensorEqual<float>(*zeros, Floats({0, 0, 0, 0, 0}, {1, 5}));
  ExpectInvalid(Gather(h, {3}, DT_FLOAT).status(),
                "Tried to read from index 3");
  ExpectInvalid(Gather(h, {0}, DT_INT32).status(), "has dtype float");
}

TEST(TensorArrayTest, GatherOfNoIndices) {
  Tensor h = NewTA(DT_FLOAT, 2);
  auto unknown = Gather(h, {}, DT_FLOAT);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented);
  auto v = Gather(h, {}, DT_FLOAT, PartialTensorShape({2, 3}));
  ASSERT_OK(v.status());
  EXPECT_EQ(v->shape(), TensorShape({0, 2, 3}));
}

TEST(TensorArrayTest, ScatterErrors) {
  Tensor h = NewTA(DT_FLOAT, 2, {.name = "sc"});
  ExpectInvalid(Scatter(h, {0, 1, 1}, Floats({1, 2}, {2})),
                "shapes [3] and [2] are incompatible");
  ExpectInvalid(Scatter(h, {0, 1, 1}, Floats({1, 2}, {2}), true),
                "Expected len(indices) == values.shape[0], but saw: 3 vs. 2");
  ExpectInvalid(Scatter(h, {0, 2}, Floats({1, 2}, {2})),
                "Max scatter index must be < array size (2 vs. 2)");
  ExpectInvalid(Scatter(h, {0}, Tensor::Scalar<float>(1)),
                "input 2 must have rank at least 1");
  ExpectInvalid(Scatter(h, {0}, Tensor::Scalar<float>(1), true),
                "must be at least a vector");
  ExpectInvalid(Scatter(h, {-1}, Floats({1}, {1})), "index -1");
  ExpectInvalid(Scatter(h, {0}, Tensor::FromVector<int32_t>({1})),
                "Op is trying to write dtype int32");
  // Duplicate indices: the second is a double write.
  ExpectInvalid(Scatter(h, {1, 1}, Floats({1, 2}, {2})),
                "already been written");
}

TEST(TensorArrayTest, ScatterOfEmptyRows) {
  Tensor h = NewTA(DT_FLOAT, 2);
  ASSERT_OK(Scatter(h, {0, 1}, Tensor(DT_FLOAT, TensorShape({2, 0}))));
  auto v = Gather(h, {1, 0}, DT_FLOAT);
  ASSERT_OK(v.status());
  EXPECT_EQ(v->shape(), TensorShape({2, 0}));
  // No rows at all.
  Tensor h2 = NewTA(DT_FLOAT, 2);
  ASSERT_OK(Scatter(h2, {}, Tensor(DT_FLOAT, TensorShape({0, 3}))));
}

TEST(TensorArrayTest, LargeGatherIsParallelAndExact) {
  const int n = 64, d = 5000;
  std::vector<float> values(n * d);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  Tensor h = NewTA(DT_FLOAT, n);
  std::vector<int32_t> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = n - 1 - i;
  ASSERT_OK(Scatter(h, idx, Floats(values, {n, d})));
  std::vector<int32_t> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  auto v = Gather(h, all, DT_FLOAT);
  ASSERT_OK(v.status());
  ASSERT_EQ(v->shape(), TensorShape({n, d}));
  for (int i = 0; i < n; ++i) {
    // Row i of the gather is row n-1-i of the scattered value.
    ASSERT_EQ(v->flat<float>()[i * d], static_cast<float>((n - 1 - i) * d));
    ASSERT_EQ(v->flat<float>()[i * d + d - 1],
              static_cast<float>((n - 1 - i) * d + d - 1));
  }
}

// ---------------------------------------------------------------------------
// Concat, split

TEST(TensorArrayTest, SplitThenConcat) {
  Tensor h = NewTA(DT_FLOAT, 3);
  // Rows [1,2] | [] | [3,4],[5,6] of a [3, 2] value.
  ASSERT_OK(Split(h, Floats({1, 2, 3, 4, 5, 6}, {3, 2}), {1, 0, 2}));
  auto e2 = Read(h, 2, DT_FLOAT);
  ASSERT_OK(e2.status());
  ExpectTensorEqual<float>(*e2, Floats({3, 4, 5, 6}, {2, 2}));

  Tensor h2 = NewTA(DT_FLOAT, 3);
  ASSERT_OK(Split(h2, Floats({1, 2, 3, 4, 5, 6}, {3, 2}), {1, 0, 2}));
  auto c = Concat(h2, DT_FLOAT, PartialTensorShape({2}));
  ASSERT_OK(c.status());
  ExpectTensorEqual<float>(c->first, Floats({1, 2, 3, 4, 5, 6}, {3, 2}));
  ExpectTensorEqual<int64_t>(c->second, Tensor::FromVector<int64_t>({1, 0, 2}));
}

TEST(TensorArrayTest, ConcatOfWrittenElements) {
  Tensor h = NewTA(DT_INT64, 2);
  ASSERT_OK(Write(h, 0, Tensor::FromVector<int64_t>({1, 2, 3})));
  ASSERT_OK(Write(h, 1, Tensor::FromVector<int64_t>({4})));
  auto c = Concat(h, DT_INT64);
  ASSERT_OK(c.status());
  ExpectTensorEqual<int64_t>(c->first,
                             Tensor::FromVector<int64_t>({1, 2, 3, 4}));
  ExpectTensorEqual<int64_t>(c->second, Tensor::FromVector<int64_t>({3, 1}));
}

TEST(TensorArrayTest, ConcatErrors) {
  {
    Tensor h = NewTA(DT_FLOAT, 2);
    ASSERT_OK(Write(h, 0, Floats({1, 2}, {1, 2})));
    ASSERT_OK(Write(h, 1, Floats({1, 2, 3}, {1, 3})));
    ExpectInvalid(Concat(h, DT_FLOAT).status(),
                  "(excepting dimension 0) shape: [2] but index 1 has "
                  "(excepting dimension 0) shape: [3]");
  }
  {
    Tensor h = NewTA(DT_FLOAT, 1);
    ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(1)));
    ExpectInvalid(Concat(h, DT_FLOAT).status(),
                  "Concat saw a scalar shape at index 0");
  }
  {
    Tensor h = NewTA(DT_FLOAT, 1);
    ASSERT_OK(Write(h, 0, Floats({1, 2}, {1, 2})));
    ExpectInvalid(Concat(h, DT_FLOAT, PartialTensorShape({3})).status(),
                  "element_shape_except0 [3]");
  }
  {
    Tensor h = NewTA(DT_FLOAT, 2);
    ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
    ExpectInvalid(Concat(h, DT_FLOAT).status(), "not yet been written");
  }
}

TEST(TensorArrayTest, ConcatOfEmptyArray) {
  Tensor h = NewTA(DT_FLOAT, 0);
  EXPECT_EQ(Concat(h, DT_FLOAT).status().code(),
            absl::StatusCode::kUnimplemented);
  auto c = Concat(h, DT_FLOAT, PartialTensorShape({4}));
  ASSERT_OK(c.status());
  EXPECT_EQ(c->first.shape(), TensorShape({0, 4}));
  EXPECT_EQ(c->second.shape(), TensorShape({0}));
}

TEST(TensorArrayTest, SplitErrors) {
  Tensor h = NewTA(DT_FLOAT, 2);
  ExpectInvalid(Split(h, Floats({1, 2, 3}, {3}), {1, 1}),
                "Expected sum of lengths to be equal to values.shape[0], but "
                "sum of lengths is 2");
  ExpectInvalid(Split(h, Floats({1, 2, 3}, {3}), {4, -1}), "non-negative");
  ExpectInvalid(Split(h, Floats({1, 2, 3}, {3}), {1, 1, 1}),
                "TensorArray's size is not equal to the size of lengths (2 vs. "
                "3)");
  ExpectInvalid(Split(h, Tensor::Scalar<float>(1), {1, 1}),
                "input 1 must have rank at least 1");
  ExpectInvalid(Split(h, Tensor::Scalar<float>(1), {1, 1}, true),
                "at least a vector");
  ExpectInvalid(Split(h, Tensor::FromVector<double>({1, 2}), {1, 1}),
                "trying to write dtype double");
}

TEST(TensorArrayTest, SplitGrowsDynamicArray) {
  Tensor h = NewTA(DT_FLOAT, 1, {.dynamic_size = true});
  ASSERT_OK(Split(h, Floats({1, 2, 3}, {3}), {1, 1, 1}));
  EXPECT_EQ(*Size(h), 3);
  auto v = Read(h, 2, DT_FLOAT);
  ASSERT_OK(v.status());
  ExpectTensorEqual<float>(*v, Floats({3}, {1}));
}

// ---------------------------------------------------------------------------
// Close, handles

TEST(TensorArrayTest, ClosedArrayFailsEveryOp) {
  Tensor h = NewTA(DT_FLOAT, 2, {.name = "closing"});
  ASSERT_OK(Write(h, 0, Tensor::Scalar<float>(1)));
  ASSERT_OK(Close(h));
  const std::string closed = "has already been closed";
  ExpectInvalid(Read(h, 0, DT_FLOAT).status(), closed);
  ExpectInvalid(Write(h, 1, Tensor::Scalar<float>(1)), closed);
  ExpectInvalid(Size(h).status(), closed);
  ExpectInvalid(Gather(h, {0}, DT_FLOAT).status(), closed);
  ExpectInvalid(Scatter(h, {1}, Floats({1}, {1})), closed);
  ExpectInvalid(Concat(h, DT_FLOAT).status(), closed);
  ExpectInvalid(Split(h, Floats({1, 2}, {2}), {1, 1}), closed);
  ExpectInvalid(Grad(h, "gradients").status(), closed);
}

TEST(TensorArrayTest, BadHandles) {
  Tensor empty_handle(DT_RESOURCE, TensorShape({}));
  ExpectInvalid(Read(empty_handle, 0, DT_FLOAT).status(), "wrong type");
  ExpectInvalid(Size(Tensor(DT_RESOURCE, TensorShape({2}))).status(),
                "resource handle of one element");
  Tensor h = NewTA(DT_FLOAT, 1);
  Tensor forged(DT_RESOURCE, TensorShape({}));
  ResourceHandle rh = h.scalar<ResourceHandle>();
  rh.set_name("no_such_array");
  forged.scalar<ResourceHandle>() = rh;
  Status s = Read(forged, 0, DT_FLOAT).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no_such_array"));
}

// ---------------------------------------------------------------------------
// Gradient arrays

TEST(TensorArrayTest, GradArrayIsKeyedBySource) {
  Tensor h = NewTA(DT_FLOAT, 2, {.dynamic_size = true});
  ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
  ASSERT_OK(Write(h, 1, Floats({3}, {1})));
  auto g1 = Grad(h, "gradients");
  auto g2 = Grad(h, "gradients");
  auto g3 = Grad(h, "gradients_1");
  ASSERT_OK(g1.status());
  ASSERT_OK(g2.status());
  ASSERT_OK(g3.status());
  EXPECT_EQ(HandleName(*g1), HandleName(*g2));
  EXPECT_NE(HandleName(*g1), HandleName(*g3));
  EXPECT_EQ(HandleName(*g1), HandleName(h) + "@gradients");
  EXPECT_EQ(*Size(*g1), 2);
  // The forward array no longer grows.
  ExpectInvalid(Write(h, 2, Tensor::Scalar<float>(1)), "not resizeable");
}

TEST(TensorArrayTest, GradArrayWritesAddAndUnwrittenReadsAreZeros) {
  Tensor h = NewTA(DT_FLOAT, 3);
  ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
  ASSERT_OK(Write(h, 1, Floats({3, 4, 5}, {3})));
  auto g = Grad(h, "gradients");
  ASSERT_OK(g.status());
  ASSERT_OK(Write(*g, 0, Floats({1, 1}, {2})));
  ASSERT_OK(Write(*g, 0, Floats({10, 20}, {2})));
  ASSERT_OK(Write(*g, 0, Floats({100, 200}, {2})));
  auto v0 = Read(*g, 0, DT_FLOAT);
  ASSERT_OK(v0.status());
  ExpectTensorEqual<float>(*v0, Floats({111, 221}, {2}));
  // Index 1 got no gradient: zeros of the forward element's shape.
  auto v1 = Read(*g, 1, DT_FLOAT);
  ASSERT_OK(v1.status());
  ExpectTensorEqual<float>(*v1, Floats({0, 0, 0}, {3}));
  // Index 2 was never written in the forward array, and the element shape
  // is unknown.
  ExpectInvalid(Read(*g, 2, DT_FLOAT).status(), "not yet been written");
  // Aggregation needs matching shapes.
  auto g2 = Grad(h, "other");
  ASSERT_OK(g2.status());
  ASSERT_OK(Write(*g2, 1, Floats({1, 1, 1}, {3})));
  ExpectInvalid(Write(*g2, 1, Floats({1, 1}, {2})),
                "Could not aggregate to TensorArray index 1 because the "
                "existing shape is [3] but the new input shape is [2]");
}

TEST(TensorArrayTest, GradArrayAggregatesEveryNumericDtype) {
  {
    Tensor h = NewTA(DT_DOUBLE, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<double>({0, 0})));
    auto g = Grad(h, "gradients");
    ASSERT_OK(g.status());
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<double>({0.5, 1})));
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<double>({0.25, 2})));
    auto v = Read(*g, 0, DT_DOUBLE);
    ASSERT_OK(v.status());
    ExpectTensorEqual<double>(*v, Tensor::FromVector<double>({0.75, 3}));
  }
  {
    Tensor h = NewTA(DT_INT32, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<int32_t>({0})));
    auto g = Grad(h, "gradients");
    ASSERT_OK(g.status());
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<int32_t>({3})));
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<int32_t>({-5})));
    auto v = Read(*g, 0, DT_INT32);
    ASSERT_OK(v.status());
    ExpectTensorEqual<int32_t>(*v, Tensor::FromVector<int32_t>({-2}));
  }
  {
    Tensor h = NewTA(DT_INT64, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<int64_t>({0})));
    auto g = Grad(h, "gradients");
    ASSERT_OK(g.status());
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<int64_t>({int64_t{1} << 40})));
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<int64_t>({1})));
    auto v = Read(*g, 0, DT_INT64);
    ASSERT_OK(v.status());
    ExpectTensorEqual<int64_t>(
        *v, Tensor::FromVector<int64_t>({(int64_t{1} << 40) + 1}));
  }
  {
    Tensor h = NewTA(DT_STRING, 1);
    ASSERT_OK(Write(h, 0, Tensor::FromVector<tstring>({"a"})));
    auto g = Grad(h, "gradients");
    ASSERT_OK(g.status());
    ASSERT_OK(Write(*g, 0, Tensor::FromVector<tstring>({"x"})));
    ExpectInvalid(Write(*g, 0, Tensor::FromVector<tstring>({"y"})),
                  "cannot add elements of dtype string");
  }
}

TEST(TensorArrayTest, GradOfGradArrayIsRefusedAfterAggregation) {
  Tensor h = NewTA(DT_FLOAT, 1);
  ASSERT_OK(Write(h, 0, Floats({1}, {1})));
  auto g = Grad(h, "gradients");
  ASSERT_OK(g.status());
  ASSERT_OK(Write(*g, 0, Floats({1}, {1})));
  ASSERT_OK(Write(*g, 0, Floats({1}, {1})));
  ExpectInvalid(Grad(*g, "gradients").status(),
                "Unable to create a gradients TensorArray");
}

TEST(TensorArrayTest, GradArrayGathersAndConcatsItsMarkedSize) {
  Tensor h = NewTA(DT_FLOAT, 2);
  ASSERT_OK(Split(h, Floats({1, 2, 3}, {3}), {2, 1}));
  auto g = Grad(h, "gradients");
  ASSERT_OK(g.status());
  ASSERT_OK(Write(*g, 1, Floats({7}, {1})));
  // Index 0 reads zeros of its forward shape [2].
  auto c = Concat(*g, DT_FLOAT);
  ASSERT_OK(c.status());
  ExpectTensorEqual<float>(c->first, Floats({0, 0, 7}, {3}));
}

TEST(TensorArrayTest, GradWithShapePrepends) {
  Tensor h = NewTA(DT_FLOAT, 2, {.element_shape = PartialTensorShape({2})});
  ASSERT_OK(Write(h, 0, Floats({1, 2}, {2})));
  OpTestCase t("TensorArrayGradWithShape");
  t.Attr("source", "gradients")
      .Input(h)
      .Input(Flow())
      .Input(Tensor::FromVector<int32_t>({3}));
  ASSERT_OK(t.Run());
  Tensor g = t.output(0);
  auto v0 = Read(g, 0, DT_FLOAT);
  ASSERT_OK(v0.status());
  EXPECT_EQ(v0->shape(), TensorShape({3, 2}));
  // The element shape got the prefix too.
  auto v1 = Read(g, 1, DT_FLOAT);
  ASSERT_OK(v1.status());
  EXPECT_EQ(v1->shape(), TensorShape({3, 2}));
  ExpectInvalid(Write(g, 1, Floats({1, 2}, {2})), "incompatible");

  OpTestCase bad("TensorArrayGradWithShape");
  bad.Attr("source", "x")
      .Input(h)
      .Input(Flow())
      .Input(Tensor::FromVector<int32_t>({-2}));
  ExpectInvalid(bad.Run(), "negative dimension");
  // A prefix whose shapes would overflow.
  OpTestCase huge("TensorArrayGradWithShape");
  huge.Attr("source", "huge")
      .Input(h)
      .Input(Flow())
      .Input(Tensor::FromVector<int32_t>({2000000000, 2000000000, 2000000000}));
  ExpectInvalid(huge.Run(), "too many elements");
}

TEST(TensorArrayTest, UnsupportedDtype) {
  OpTestCase t("TensorArrayV3");
  t.Attr("dtype", DT_VARIANT).Input<int32_t>({}, {1});
  ExpectInvalid(t.Run(), "cannot hold elements of dtype variant");
}

// ---------------------------------------------------------------------------
// Shape functions and registrations

TEST(TensorArrayTest, ShapeFunctions) {
  AttrMap g;
  g["dtype"] = MakeAttrValue(DT_FLOAT);
  g["element_shape"] = MakeAttrValue(PartialTensorShape({-1, 3}));
  auto gather = InferShapes("TensorArrayGatherV3", g,
                            {PartialTensorShape({}), PartialTensorShape({5}),
                             PartialTensorShape({})});
  ASSERT_OK(gather.status());
  EXPECT_EQ((*gather)[0], PartialTensorShape({5, -1, 3}));

  AttrMap c;
  c["dtype"] = MakeAttrValue(DT_FLOAT);
  c["element_shape_except0"] = MakeAttrValue(PartialTensorShape({4}));
  auto concat = InferShapes("TensorArrayConcatV3", c,
                            {PartialTensorShape({}), PartialTensorShape({})});
  ASSERT_OK(concat.status());
  EXPECT_EQ((*concat)[0], PartialTensorShape({-1, 4}));
  EXPECT_EQ((*concat)[1], PartialTensorShape({-1}));

  AttrMap s;
  s["T"] = MakeAttrValue(DT_FLOAT);
  auto scatter =
      InferShapes("TensorArrayScatterV3", s,
                  {PartialTensorShape({}), PartialTensorShape({3}),
                   PartialTensorShape({4, 2}), PartialTensorShape({})});
  EXPECT_EQ(scatter.status().code(), absl::StatusCode::kInvalidArgument);
  auto write = InferShapes("TensorArrayWriteV3", s,
                           {PartialTensorShape({}), PartialTensorShape({2}),
                            PartialTensorShape(), PartialTensorShape({})});
  EXPECT_EQ(write.status().code(), absl::StatusCode::kInvalidArgument);
  // Unknown shapes everywhere are fine.
  AttrMap r;
  r["dtype"] = MakeAttrValue(DT_FLOAT);
  auto read = InferShapes(
      "TensorArrayReadV3", r,
      {PartialTensorShape(), PartialTensorShape(), PartialTensorShape()});
  ASSERT_OK(read.status());
  EXPECT_TRUE((*read)[0].unknown_rank());
}

TEST(TensorArrayTest, GradientRegistrations) {
  for (const char* op :
       {"TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
        "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3"}) {
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_TRUE(e->fn != nullptr) << op;
  }
  for (const char* op :
       {"TensorArrayV3", "TensorArrayGradV3", "TensorArrayGradWithShape",
        "TensorArraySizeV3", "TensorArrayCloseV3"}) {
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_TRUE(e->fn == nullptr) << op;
  }
}

}  // namespace
}  // namespace runnel
