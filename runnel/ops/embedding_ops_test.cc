// Kernel tests of the embedding ops (embedding_ops.cc) through the op
// harness: closed-form values from TF's documentation and by hand, every
// registered dtype, empty and scalar corners, and bad inputs. The ref
// forms of the scatter ops need the executor and are tested in
// embedding_ops_session_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runnel/framework/resource_var.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

template <typename T>
Tensor Make(std::initializer_list<int64_t> shape, std::vector<T> values) {
  return Tensor::FromVector<T>(values, TensorShape(shape));
}
template <typename T>
Tensor Vec(std::vector<T> values) {
  return Tensor::FromVector<T>(values);
}
// Values of type T from doubles.
template <typename T>
Tensor Of(std::initializer_list<int64_t> shape, std::vector<double> values) {
  std::vector<T> v;
  for (double x : values) v.push_back(static_cast<T>(x));
  return Make<T>(shape, v);
}

void ExpectInvalid(const Status& s, const std::string& text) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(text));
}

// ---------------------------------------------------------------------------
// DynamicPartition

template <typename T>
void CheckPartitionVector() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  OpTestCase t("DynamicPartition");
  t.Attr("num_partitions", int64_t{2}).Attr("T", DataTypeToEnum<T>::value);
  t.Input(Of<T>({5}, {10, 20, 30, 40, 50}))
      .Input(Vec<int32_t>({0, 0, 1, 1, 0}));
  ASSERT_OK(t.Run());
  ASSERT_EQ(t.num_outputs(), 2);
  ExpectTensorEqual<T>(t.output(0), Of<T>({3}, {10, 20, 50}));
  ExpectTensorEqual<T>(t.output(1), Of<T>({2}, {30, 40}));
}

TEST(DynamicPartitionTest, TfDocVectorEveryDtype) {
  CheckPartitionVector<float>();
  CheckPartitionVector<double>();
  CheckPartitionVector<int32_t>();
  CheckPartitionVector<int64_t>();
  CheckPartitionVector<int8_t>();
  CheckPartitionVector<uint16_t>();
}

TEST(DynamicPartitionTest, MatrixPartitionsKeepRowMajorOrder) {
  // Row-major order of the partition tuples; partition 2 stays empty.
  OpTestCase t("DynamicPartition");
  t.Attr("num_partitions", int64_t{4}).Attr("T", DT_FLOAT);
  t.Input(Make<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .Input(Make<int32_t>({2, 2}, {1, 0, 1, 3}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), Make<float>({1, 2}, {3, 4}));
  ExpectTensorEqual<float>(t.output(1), Make<float>({2, 2}, {1, 2, 5, 6}));
  ExpectTensorEqual<float>(t.output(2), Make<float>({0, 2}, {}));
  ExpectTensorEqual<float>(t.output(3), Make<float>({1, 2}, {7, 8}));
}

TEST(DynamicPartitionTest, StringsBoolsScalarsAndEmpty) {
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_STRING);
    t.Input(Vec<tstring>({"a", "bb", "ccc"})).Input(Vec<int32_t>({1, 0, 1}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<tstring>(t.output(0), Vec<tstring>({"bb"}));
    ExpectTensorEqual<tstring>(t.output(1), Vec<tstring>({"a", "ccc"}));
  }
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_BOOL);
    t.Input(Vec<bool>({true, false})).Input(Vec<int32_t>({1, 1}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<bool>(t.output(0), Make<bool>({0}, {}));
    ExpectTensorEqual<bool>(t.output(1), Vec<bool>({true, false}));
  }
  {
    // A scalar partition index moves the whole of data.
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{3}).Attr("T", DT_INT64);
    t.Input(Vec<int64_t>({7, 8})).Input(Make<int32_t>({}, {2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Make<int64_t>({0, 2}, {}));
    ExpectTensorEqual<int64_t>(t.output(2), Make<int64_t>({1, 2}, {7, 8}));
  }
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_FLOAT);
    t.Input(Make<float>({0, 3}, {})).Input(Make<int32_t>({0}, {}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Make<float>({0, 3}, {}));
    ExpectTensorEqual<float>(t.output(1), Make<float>({0, 3}, {}));
  }
}

TEST(DynamicPartitionTest, ShapeFunctionUsesKnownPartitions) {
  OpTestCase t("DynamicPartition");
  t.Attr("num_partitions", int64_t{2}).Attr("T", DT_FLOAT);
  t.Input(Make<float>({3, 2}, {1, 2, 3, 4, 5, 6}))
      .Input(Vec<int32_t>({1, 1, 0}));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({1, 2}));
  EXPECT_EQ(t.inferred_shapes()[1], PartialTensorShape({2, 2}));
  AttrMap attrs = {{"num_partitions", MakeAttrValue(int64_t{2})},
                   {"T", MakeAttrValue(DT_FLOAT)}};
  auto shapes = InferShapes(
      "DynamicPartition", attrs,
      {PartialTensorShape({-1, 4, 5}), PartialTensorShape({3, -1})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({-1, 5}));
  auto bad = InferShapes("DynamicPartition", attrs,
                         {PartialTensorShape({3, 4}), PartialTensorShape({4})});
  ExpectInvalid(bad.status(), "does not start with partitions.shape");
}

TEST(DynamicPartitionTest, BadInputs) {
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_FLOAT);
    t.Input(Vec<float>({1, 2, 3})).Input(Vec<int32_t>({0, 2, 1}));
    ExpectInvalid(t.Run(), "partitions[1] = 2 is not in [0, 2)");
  }
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_FLOAT);
    t.Input(Vec<float>({1, 2, 3})).Input(Vec<int32_t>({0, -1, 1}));
    ExpectInvalid(t.Run(), "partitions[1] = -1 is not in [0, 2)");
  }
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{2}).Attr("T", DT_FLOAT);
    t.Input(Vec<float>({1, 2, 3})).Input(Vec<int32_t>({0, 1}));
    ExpectInvalid(t.RunKernelOnly(),
                  "data.shape must start with partitions.shape, got "
                  "data.shape = [3], partitions.shape = [2]");
  }
  {
    OpTestCase t("DynamicPartition");
    t.Attr("num_partitions", int64_t{0}).Attr("T", DT_FLOAT);
    t.Input(Vec<float>({1})).Input(Vec<int32_t>({0}));
    EXPECT_FALSE(t.Run().ok());
  }
}

// ---------------------------------------------------------------------------
// ParallelDynamicStitch

template <typename T>
void CheckStitchDoc() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  OpTestCase t("ParallelDynamicStitch");
  t.Attr("N", int64_t{3}).Attr("T", DataTypeToEnum<T>::value);
  t.Input(Make<int32_t>({}, {6}))
      .Input(Vec<int32_t>({4, 1}))
      .Input(Make<int32_t>({2, 2}, {5, 2, 0, 3}))
      .Input(Of<T>({2}, {61, 62}))
      .Input(Of<T>({2, 2}, {41, 42, 11, 12}))
      .Input(Of<T>({2, 2, 2}, {51, 52, 21, 22, 1, 2, 31, 32}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<T>(t.output(0), Of<T>({7, 2}, {1, 2, 11, 12, 21, 22, 31, 32,
                                                   41, 42, 51, 52, 61, 62}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({7, 2}));
}

TEST(ParallelDynamicStitchTest, TfDocExampleEveryDtype) {
  CheckStitchDoc<float>();
  CheckStitchDoc<double>();
  CheckStitchDoc<int32_t>();
  CheckStitchDoc<int64_t>();
}

TEST(ParallelDynamicStitchTest, GapsAreZeroDuplicatesTakeTheLastAndStrings) {
  OpTestCase t("ParallelDynamicStitch");
  t.Attr("N", int64_t{2}).Attr("T", DT_STRING);
  t.Input(Vec<int32_t>({0, 3})).Input(Vec<int32_t>({3}));
  t.Input(Vec<tstring>({"a", "b"})).Input(Vec<tstring>({"c"}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<tstring>(t.output(0), Vec<tstring>({"a", "", "", "c"}));

  // Few indices for many rows (the kernel zeroes, then copies in order).
  OpTestCase s("ParallelDynamicStitch");
  s.Attr("N", int64_t{2}).Attr("T", DT_STRING);
  s.Input(Vec<int32_t>({0, 40})).Input(Vec<int32_t>({40}));
  s.Input(Vec<tstring>({"a", "b"})).Input(Vec<tstring>({"c"}));
  ASSERT_OK(s.Run());
  std::vector<tstring> expected(41);
  expected[0] = "a";
  expected[40] = "c";
  ExpectTensorEqual<tstring>(s.output(0), Vec<tstring>(expected));

  OpTestCase e("ParallelDynamicStitch");
  e.Attr("N", int64_t{1}).Attr("T", DT_FLOAT);
  e.Input(Make<int32_t>({0}, {})).Input(Make<float>({0, 3}, {}));
  ASSERT_OK(e.Run());
  ExpectTensorEqual<float>(e.output(0), Make<float>({0, 3}, {}));
}

TEST(ParallelDynamicStitchTest, BadInputs) {
  {
    OpTestCase t("ParallelDynamicStitch");
    t.Attr("N", int64_t{1}).Attr("T", DT_FLOAT);
    t.Input(Vec<int32_t>({0, -2})).Input(Vec<float>({1, 2}));
    ExpectInvalid(t.Run(), "indices[0][1] = -2 is negative");
  }
  {
    OpTestCase t("ParallelDynamicStitch");
    t.Attr("N", int64_t{2}).Attr("T", DT_FLOAT);
    t.Input(Vec<int32_t>({0})).Input(Vec<int32_t>({1}));
    t.Input(Make<float>({1, 2}, {1, 2})).Input(Make<float>({1, 3}, {1, 2, 3}));
    ExpectInvalid(t.RunKernelOnly(), "data[1].shape = [1,3] must be");
  }
  {
    OpTestCase t("ParallelDynamicStitch");
    t.Attr("N", int64_t{1}).Attr("T", DT_FLOAT);
    t.Input(Vec<int32_t>({0, 1})).Input(Vec<float>({1}));
    ExpectInvalid(t.RunKernelOnly(), "does not start with indices[0].shape");
  }
}

// ---------------------------------------------------------------------------
// Resource scatters

// A fresh resource variable holding `value`, made directly in the harness
// device's ResourceMgr (this binary links only the embedding ops, not
// VarHandleOp). Names are unique per test: the ResourceMgr is shared by the
// whole binary.
ResourceHandle MakeHandle(const std::string& name) {
  return MakeResourceHandle<Var>(
      TestCpuDevice()->resource_manager()->default_container(), name,
      TestCpuDevice()->name());
}
Tensor HandleTensor(const std::string& name) {
  Tensor h(DT_RESOURCE, TensorShape({}));
  h.scalar<ResourceHandle>() = MakeHandle(name);
  return h;
}
Tensor NewVar(const std::string& name, const Tensor& value) {
  ResourceMgr* rm = TestCpuDevice()->resource_manager();
  Var* var = new Var(value.dtype());
  *var->tensor() = value.DeepCopy();
  var->is_initialized = true;
  Status s = rm->Create<Var>(rm->default_container(), name, var);
  EXPECT_TRUE(s.ok()) << s;
  return HandleTensor(name);
}
// The variable's current tensor (shared, as ReadVariableOp returns it).
Tensor ReadVar(const Tensor& handle, DataType dtype) {
  ResourceMgr* rm = TestCpuDevice()->resource_manager();
  Var* var = nullptr;
  Status s = rm->Lookup<Var>(rm->default_container(),
                             handle.scalar<ResourceHandle>().name(), &var);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return Tensor();
  ScopedUnref unref(var);
  absl::ReaderMutexLock l(var->mu());
  EXPECT_EQ(var->tensor()->dtype(), dtype);
  return *var->tensor();
}

Status ResourceScatter(const std::string& op, const Tensor& handle,
                       const Tensor& indices, const Tensor& updates) {
  OpTestCase t(op);
  t.Attr("dtype", updates.dtype()).Attr("Tindices", indices.dtype());
  t.Input(handle).Input(indices).Input(updates);
  return t.Run();
}

int var_counter = 0;

// var [4, 2] = {1..8}; indices {2, 0, 2}; updates {10, 20, 30, 40, 50, 60}.
template <typename T>
void CheckResourceScatter(const std::string& op,
                          const std::vector<double>& expected,
                          const std::vector<double>& expected_scalar) {
  SCOPED_TRACE(op + " " + DataTypeString(DataTypeToEnum<T>::value));
  const DataType dt = DataTypeToEnum<T>::value;
  const Tensor init = Of<T>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    Tensor h = NewVar("scatter_" + std::to_string(var_counter++), init);
    const Tensor idx = index_type == DT_INT32 ? Vec<int32_t>({2, 0, 2})
                                              : Tensor(Vec<int64_t>({2, 0, 2}));
    ASSERT_OK(
        ResourceScatter(op, h, idx, Of<T>({3, 2}, {10, 20, 30, 40, 50, 60})));
    ExpectTensorNear<T>(ReadVar(h, dt), Of<T>({4, 2}, expected), 1e-6);
  }
  // A scalar update applies to every element of every indexed row.
  Tensor h = NewVar("scatter_" + std::to_string(var_counter++), init);
  ASSERT_OK(ResourceScatter(op, h, Vec<int32_t>({3, 1, 3}),
                            Make<T>({}, {static_cast<T>(2)})));
  ExpectTensorNear<T>(ReadVar(h, dt), Of<T>({4, 2}, expected_scalar), 1e-6);
}

template <typename T>
void CheckAllResourceScatters() {
  CheckResourceScatter<T>("ResourceScatterAdd", {31, 42, 3, 4, 65, 86, 7, 8},
                          {1, 2, 5, 6, 5, 6, 11, 12});
  CheckResourceScatter<T>("ResourceScatterSub",
                          {-29, -38, 3, 4, -55, -74, 7, 8},
                          {1, 2, 1, 2, 5, 6, 3, 4});
  CheckResourceScatter<T>("ResourceScatterMul",
                          {30, 80, 3, 4, 2500, 7200, 7, 8},
                          {1, 2, 6, 8, 5, 6, 28, 32});
  CheckResourceScatter<T>("ResourceScatterMin", {1, 2, 3, 4, 5, 6, 7, 8},
                          {1, 2, 2, 2, 5, 6, 2, 2});
  CheckResourceScatter<T>("ResourceScatterMax", {30, 40, 3, 4, 50, 60, 7, 8},
                          {1, 2, 3, 4, 5, 6, 7, 8});
  CheckResourceScatter<T>("ResourceScatterUpdate", {30, 40, 3, 4, 50, 60, 7, 8},
                          {1, 2, 2, 2, 5, 6, 2, 2});
}

TEST(ResourceScatterTest, ClosedFormsEveryDtypeAndIndexType) {
  CheckAllResourceScatters<float>();
  CheckAllResourceScatters<double>();
  CheckAllResourceScatters<int32_t>();
  CheckAllResourceScatters<int64_t>();
}

TEST(ResourceScatterTest, Div) {
  Tensor h = NewVar("scatter_div_f", Of<double>({3}, {8, 9, 10}));
  ASSERT_OK(ResourceScatter("ResourceScatterDiv", h, Vec<int32_t>({0, 2, 0}),
                            Of<double>({3}, {2, 4, 8})));
  ExpectTensorNear<double>(ReadVar(h, DT_DOUBLE),
                           Of<double>({3}, {0.5, 9, 2.5}), 1e-12);
  // Integer division truncates; lowest / -1 wraps instead of trapping.
  const int32_t lo = std::numeric_limits<int32_t>::lowest();
  Tensor hi = NewVar("scatter_div_i", Vec<int32_t>({7, -7, lo}));
  ASSERT_OK(ResourceScatter("ResourceScatterDiv", hi, Vec<int32_t>({0, 1, 2}),
                            Vec<int32_t>({2, 2, -1})));
  ExpectTensorEqual<int32_t>(ReadVar(hi, DT_INT32), Vec<int32_t>({3, -3, lo}));
  Status s = ResourceScatter("ResourceScatterDiv", hi, Vec<int32_t>({0, 1}),
                             Vec<int32_t>({1, 0}));
  ExpectInvalid(s, "Integer division by zero: updates[1] = 0");
  // Nothing changed.
  ExpectTensorEqual<int32_t>(ReadVar(hi, DT_INT32), Vec<int32_t>({3, -3, lo}));
}

TEST(ResourceScatterTest, UpdateStringsAndEmptyIndices) {
  Tensor h = NewVar("scatter_str", Vec<tstring>({"a", "b", "c"}));
  ASSERT_OK(ResourceScatter("ResourceScatterUpdate", h, Vec<int64_t>({2, 0}),
                            Vec<tstring>({"z", "y"})));
  ExpectTensorEqual<tstring>(ReadVar(h, DT_STRING),
                             Vec<tstring>({"y", "b", "z"}));
  Tensor f = NewVar("scatter_empty", Of<float>({2, 2}, {1, 2, 3, 4}));
  ASSERT_OK(ResourceScatter("ResourceScatterAdd", f, Make<int32_t>({0}, {}),
                            Make<float>({0, 2}, {})));
  ExpectTensorEqual<float>(ReadVar(f, DT_FLOAT),
                           Of<float>({2, 2}, {1, 2, 3, 4}));
}

TEST(ResourceScatterTest, ReadersKeepTheirValue) {
  Tensor h = NewVar("scatter_cow", Of<float>({2}, {1, 2}));
  Tensor before = ReadVar(h, DT_FLOAT);
  ASSERT_OK(ResourceScatter("ResourceScatterAdd", h, Vec<int32_t>({1}),
                            Vec<float>({5})));
  ExpectTensorEqual<float>(before, Vec<float>({1, 2}));
  ExpectTensorEqual<float>(ReadVar(h, DT_FLOAT), Vec<float>({1, 7}));
}

TEST(ResourceScatterTest, BadInputs) {
  Tensor h = NewVar("scatter_bad", Of<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  ExpectInvalid(ResourceScatter("ResourceScatterAdd", h, Vec<int32_t>({0, 3}),
                                Of<float>({2, 2}, {1, 1, 1, 1})),
                "indices[1] = 3 is not in [0, 3)");
  ExpectInvalid(ResourceScatter("ResourceScatterSub", h, Vec<int64_t>({-1}),
                                Of<float>({1, 2}, {1, 1})),
                "indices[0] = -1 is not in [0, 3)");
  ExpectInvalid(ResourceScatter("ResourceScatterUpdate", h, Vec<int32_t>({0}),
                                Of<float>({1, 3}, {1, 1, 1})),
                "Must have updates.shape = indices.shape + params.shape[1:] "
                "or updates.shape = [], got updates.shape [1,3], "
                "indices.shape [1], params.shape [3,2]");
  // Nothing changed.
  ExpectTensorEqual<float>(ReadVar(h, DT_FLOAT),
                           Of<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  // A scalar variable has no rows.
  Tensor sc = NewVar("scatter_scalar", Make<float>({}, {1}));
  ExpectInvalid(ResourceScatter("ResourceScatterAdd", sc, Vec<int32_t>({0}),
                                Vec<float>({1})),
                "params must be at least 1-D");
  // Wrong dtype for the variable.
  Status s = ResourceScatter("ResourceScatterAdd", h, Vec<int32_t>({0}),
                             Of<double>({1, 2}, {1, 1}));
  EXPECT_FALSE(s.ok());
  // An uninitialised variable, and one that does not exist.
  ResourceMgr* rm = TestCpuDevice()->resource_manager();
  ASSERT_OK(rm->Create<Var>(rm->default_container(), "scatter_uninit",
                            new Var(DT_FLOAT)));
  s = ResourceScatter("ResourceScatterAdd", HandleTensor("scatter_uninit"),
                      Vec<int32_t>({0}), Vec<float>({1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  s = ResourceScatter("ResourceScatterAdd", HandleTensor("scatter_missing"),
                      Vec<int32_t>({0}), Vec<float>({1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// ---------------------------------------------------------------------------
// UnsortedSegmentMax / Min / Prod

// Segment 2 of the data below is empty: it gets `empty`.
template <typename T>
void CheckUnsortedSegment(const std::string& op,
                          const std::vector<double>& expected, T empty) {
  SCOPED_TRACE(op + " " + DataTypeString(DataTypeToEnum<T>::value));
  Tensor want = Of<T>({3, 2}, expected);
  want.flat<T>()[4] = want.flat<T>()[5] = empty;
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    OpTestCase t(op);
    t.Attr("T", DataTypeToEnum<T>::value);
    // Rows 0 and 3 -> segment 1, row 1 dropped (-1), row 2 -> segment 0.
    t.Input(Of<T>({4, 2}, {1, -5, 4, 9, 3, 2, -2, 6}));
    t.Attr("Tindices", index_type).Attr("Tnumsegments", DT_INT64);
    if (index_type == DT_INT32) {
      t.Input(Vec<int32_t>({1, -1, 0, 1}));
    } else {
      t.Input(Vec<int64_t>({1, -1, 0, 1}));
    }
    t.Input(Make<int64_t>({}, {3}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<T>(t.output(0), want);
    EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({3, 2}));
  }
}

template <typename T>
void CheckAllUnsortedSegments() {
  CheckUnsortedSegment<T>("UnsortedSegmentMax", {3, 2, 1, 6, 0, 0},
                          std::numeric_limits<T>::lowest());
  CheckUnsortedSegment<T>("UnsortedSegmentMin", {3, 2, -2, -5, 0, 0},
                          std::numeric_limits<T>::max());
  CheckUnsortedSegment<T>("UnsortedSegmentProd", {3, 2, -2, -30, 0, 0}, T(1));
}

TEST(UnsortedSegmentTest, MaxMinProdEveryDtype) {
  CheckAllUnsortedSegments<float>();
  CheckAllUnsortedSegments<double>();
  CheckAllUnsortedSegments<int32_t>();
  CheckAllUnsortedSegments<int64_t>();
}

TEST(UnsortedSegmentTest, MatrixIdsScalarsAndEmpty) {
  {
    OpTestCase t("UnsortedSegmentMax");
    t.Attr("T", DT_FLOAT);
    t.Attr("Tindices", DT_INT32);
    t.Input(Make<float>({2, 2}, {1, 7, 3, 4}))
        .Input(Make<int32_t>({2, 2}, {0, 1, 1, 0}))
        .Input(Make<int32_t>({}, {2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Vec<float>({4, 7}));
  }
  {
    OpTestCase t("UnsortedSegmentProd");
    t.Attr("T", DT_DOUBLE);
    t.Attr("Tindices", DT_INT32);
    t.Input(Make<double>({}, {5}))
        .Input(Make<int32_t>({}, {1}))
        .Input(Make<int32_t>({}, {2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<double>(t.output(0), Vec<double>({1, 5}));
  }
  {
    OpTestCase t("UnsortedSegmentMin");
    t.Attr("T", DT_INT32);
    t.Attr("Tindices", DT_INT32);
    t.Input(Make<int32_t>({0, 3}, {}))
        .Input(Make<int32_t>({0}, {}))
        .Input(Make<int32_t>({}, {0}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int32_t>(t.output(0), Make<int32_t>({0, 3}, {}));
  }
}

TEST(UnsortedSegmentTest, BadInputs) {
  {
    OpTestCase t("UnsortedSegmentMax");
    t.Attr("T", DT_FLOAT);
    t.Attr("Tindices", DT_INT32);
    t.Input(Vec<float>({1, 2})).Input(Vec<int32_t>({0, 2}));
    t.Input(Make<int32_t>({}, {2}));
    ExpectInvalid(t.Run(), "segment_ids[1] = 2 is out of range [0, 2)");
  }
  {
    OpTestCase t("UnsortedSegmentMin");
    t.Attr("T", DT_FLOAT);
    t.Attr("Tindices", DT_INT32);
    t.Input(Vec<float>({1, 2})).Input(Vec<int32_t>({0, 1, 1}));
    t.Input(Make<int32_t>({}, {2}));
    ExpectInvalid(t.RunKernelOnly(),
                  "data.shape = [2] does not start with segment_ids.shape = "
                  "[3]");
  }
  {
    OpTestCase t("UnsortedSegmentProd");
    t.Attr("T", DT_FLOAT);
    t.Attr("Tindices", DT_INT32);
    t.Input(Vec<float>({1})).Input(Vec<int32_t>({0}));
    t.Input(Make<int32_t>({}, {-1}));
    ExpectInvalid(t.Run(), "num_segments must be non-negative, got -1");
  }
  {
    OpTestCase t("UnsortedSegmentProd");
    t.Attr("T", DT_FLOAT);
    t.Attr("Tindices", DT_INT32);
    t.Input(Vec<float>({1})).Input(Vec<int32_t>({0}));
    t.Input(Vec<int32_t>({1}));
    ExpectInvalid(t.RunKernelOnly(),
                  "num_segments should be a scalar, got shape [1]");
    ExpectInvalid(t.Run(), "input 2 must have rank 0 but has shape [1]");
  }
}

// ---------------------------------------------------------------------------
// SparseSegmentSum / Mean / SqrtN

// TF's documentation: c = [[1,2,3,4], [-1,-2,-3,-4], [5,6,7,8]].
template <typename T>
Tensor C() {
  return Of<T>({3, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 5, 6, 7, 8});
}

template <typename T>
Tensor RunSparseSegment(const std::string& op, const Tensor& data,
                        const Tensor& indices, const Tensor& ids,
                        const Tensor* num_segments = nullptr) {
  OpTestCase t(op);
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("Tidx", indices.dtype())
      .Attr("Tsegmentids", ids.dtype());
  t.Input(data).Input(indices).Input(ids);
  if (num_segments != nullptr) {
    t.Attr("Tnumsegments", num_segments->dtype()).Input(*num_segments);
  }
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? t.output(0) : Tensor();
}

template <typename T>
void CheckSparseSegmentSum() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSum", C<T>(), Vec<int32_t>({0, 1}),
                          Vec<int32_t>({0, 0})),
      Of<T>({1, 4}, {0, 0, 0, 0}));
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSum", C<T>(), Vec<int64_t>({0, 1}),
                          Vec<int32_t>({0, 1})),
      Of<T>({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4}));
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSum", C<T>(), Vec<int32_t>({0, 1, 2}),
                          Vec<int64_t>({0, 0, 1})),
      Of<T>({2, 4}, {0, 0, 0, 0, 5, 6, 7, 8}));
  // Repeated indices, a skipped segment.
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSum", C<T>(), Vec<int64_t>({2, 2, 0}),
                          Vec<int64_t>({0, 0, 2})),
      Of<T>({3, 4}, {10, 12, 14, 16, 0, 0, 0, 0, 1, 2, 3, 4}));
  const Tensor three = Make<int32_t>({}, {3});
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSumWithNumSegments", C<T>(),
                          Vec<int32_t>({0, 1}), Vec<int32_t>({0, 0}), &three),
      Of<T>({3, 4}, std::vector<double>(12, 0)));
  const Tensor four = Make<int64_t>({}, {4});
  ExpectTensorEqual<T>(
      RunSparseSegment<T>("SparseSegmentSumWithNumSegments", C<T>(),
                          Vec<int32_t>({0, 1}), Vec<int32_t>({0, 2}), &four),
      Of<T>({4, 4}, {1, 2, 3, 4, 0, 0, 0, 0, -1, -2, -3, -4, 0, 0, 0, 0}));
}

TEST(SparseSegmentTest, SumTfDocEveryDtype) {
  CheckSparseSegmentSum<float>();
  CheckSparseSegmentSum<double>();
  CheckSparseSegmentSum<int32_t>();
  CheckSparseSegmentSum<int64_t>();
}

template <typename T>
void CheckSparseSegmentMeanSqrtN() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  const Tensor idx = Vec<int32_t>({0, 2, 1, 2});
  const Tensor ids = Vec<int32_t>({0, 0, 0, 2});
  // Segment 0 = rows 0, 2, 1: sum [5, 6, 7, 8] over 3 rows; segment 2 =
  // row 2 alone; segment 1 is empty (zeros).
  ExpectTensorNear<T>(
      RunSparseSegment<T>("SparseSegmentMean", C<T>(), idx, ids),
      Of<T>({3, 4}, {5.0 / 3, 2, 7.0 / 3, 8.0 / 3, 0, 0, 0, 0, 5, 6, 7, 8}),
      1e-6);
  const double r3 = std::sqrt(3.0);
  ExpectTensorNear<T>(
      RunSparseSegment<T>("SparseSegmentSqrtN", C<T>(), idx, ids),
      Of<T>({3, 4}, {5 / r3, 6 / r3, 7 / r3, 8 / r3, 0, 0, 0, 0, 5, 6, 7, 8}),
      1e-6);
  const Tensor four = Make<int32_t>({}, {4});
  ExpectTensorNear<T>(
      RunSparseSegment<T>("SparseSegmentMeanWithNumSegments", C<T>(),
                          Vec<int64_t>({0, 1}), Vec<int64_t>({1, 1}), &four),
      Of<T>({4, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), 1e-6);
  ExpectTensorNear<T>(
      RunSparseSegment<T>("SparseSegmentSqrtNWithNumSegments", C<T>(),
                          Vec<int64_t>({0, 2}), Vec<int64_t>({1, 1}), &four),
      Of<T>({4, 4},
            {0, 0, 0, 0, 6 / std::sqrt(2.0), 8 / std::sqrt(2.0),
             10 / std::sqrt(2.0), 12 / std::sqrt(2.0), 0, 0, 0, 0, 0, 0, 0, 0}),
      1e-6);
}

TEST(SparseSegmentTest, MeanAndSqrtNEveryDtype) {
  CheckSparseSegmentMeanSqrtN<float>();
  CheckSparseSegmentMeanSqrtN<double>();
}

TEST(SparseSegmentTest, EmptyAndHigherRankData) {
  ExpectTensorEqual<float>(
      RunSparseSegment<float>("SparseSegmentMean", C<float>(),
                              Make<int32_t>({0}, {}), Make<int32_t>({0}, {})),
      Make<float>({0, 4}, {}));
  ExpectTensorEqual<double>(
      RunSparseSegment<double>(
          "SparseSegmentSum", Make<double>({2, 1, 2}, {1, 2, 3, 4}),
          Vec<int32_t>({1, 0, 1}), Vec<int32_t>({0, 1, 1})),
      Make<double>({2, 1, 2}, {3, 4, 4, 6}));
  // One-dimensional data: rows are scalars.
  ExpectTensorEqual<int32_t>(
      RunSparseSegment<int32_t>("SparseSegmentSum", Vec<int32_t>({5, 6, 7}),
                                Vec<int32_t>({2, 2}), Vec<int32_t>({1, 1})),
      Vec<int32_t>({0, 14}));
}

Status RunSparseSegmentStatus(const std::string& op, const Tensor& data,
                              const Tensor& indices, const Tensor& ids,
                              const Tensor* extra = nullptr) {
  OpTestCase t(op);
  t.Attr("T", data.dtype())
      .Attr("Tidx", indices.dtype())
      .Attr("Tsegmentids", ids.dtype());
  t.Input(data).Input(indices).Input(ids);
  if (extra != nullptr) {
    if (op.find("Grad") == std::string::npos) {
      t.Attr("Tnumsegments", extra->dtype());
    }
    t.Input(*extra);
  }
  return t.RunKernelOnly();
}

TEST(SparseSegmentTest, BadInputs) {
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentSum", C<float>(),
                             Vec<int32_t>({0, 3}), Vec<int32_t>({0, 0})),
      "indices[1] = 3 is not in [0, 3)");
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentMean", C<float>(),
                             Vec<int32_t>({0, 1, 2}), Vec<int32_t>({0, 2, 1})),
      "segment ids are not increasing: segment_ids[1] = 2 > "
      "segment_ids[2] = 1");
  ExpectInvalid(RunSparseSegmentStatus("SparseSegmentSqrtN", C<float>(),
                                       Vec<int32_t>({0}), Vec<int32_t>({-1})),
                "segment_ids[0] = -1 is negative");
  // The largest int64 id has no row count (kernel fuzzer: id + 1 overflowed).
  ExpectInvalid(
      RunSparseSegmentStatus(
          "SparseSegmentSqrtN", C<double>(), Vec<int32_t>({0, 1}),
          Vec<int64_t>({0, std::numeric_limits<int64_t>::max()})),
      "segment_ids[1] = 9223372036854775807 is too large for a row count");
  ExpectInvalid(RunSparseSegmentStatus("SparseSegmentSum", C<float>(),
                                       Vec<int32_t>({0, 1}), Vec<int32_t>({0})),
                "segment_ids and indices should have the same size");
  ExpectInvalid(RunSparseSegmentStatus("SparseSegmentSum", C<float>(),
                                       Make<int32_t>({1, 1}, {0}),
                                       Make<int32_t>({1, 1}, {0})),
                "indices should be a vector, got shape [1,1]");
  ExpectInvalid(RunSparseSegmentStatus("SparseSegmentSum", Make<float>({}, {1}),
                                       Vec<int32_t>({0}), Vec<int32_t>({0})),
                "data must be at least 1-D");
  const Tensor two = Make<int32_t>({}, {2});
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentSumWithNumSegments", C<float>(),
                             Vec<int32_t>({0, 1}), Vec<int32_t>({0, 2}), &two),
      "segment_ids[1] = 2 is out of range [0, 2)");
  // The shape function rejects what it can see.
  OpTestCase t("SparseSegmentSum");
  t.Attr("T", DT_FLOAT).Input(C<float>());
  t.Input(Vec<int32_t>({0, 1})).Input(Vec<int32_t>({0, 1, 2}));
  EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// SparseSegment{Sum,Mean,SqrtN}Grad

template <typename T>
void CheckSparseSegmentGrads() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  // Forward: indices {0, 2, 2, 1}, ids {0, 0, 1, 1}: segment 0 = rows 0, 2
  // and segment 1 = rows 2, 1 of a [4, 2] data.
  const Tensor grad = Of<T>({2, 2}, {1, 2, 10, 20});
  const Tensor idx = Vec<int64_t>({0, 2, 2, 1});
  const Tensor ids = Vec<int32_t>({0, 0, 1, 1});
  const Tensor dim0 = Make<int32_t>({}, {4});
  auto run = [&](const std::string& op) {
    OpTestCase t(op);
    t.Attr("T", DataTypeToEnum<T>::value).Attr("Tidx", DT_INT64);
    t.Input(grad).Input(idx).Input(ids).Input(dim0);
    Status s = t.Run();
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({4, 2}));
    return s.ok() ? t.output(0) : Tensor();
  };
  ExpectTensorNear<T>(run("SparseSegmentSumGrad"),
                      Of<T>({4, 2}, {1, 2, 10, 20, 11, 22, 0, 0}), 1e-6);
  ExpectTensorNear<T>(run("SparseSegmentMeanGrad"),
                      Of<T>({4, 2}, {0.5, 1, 5, 10, 5.5, 11, 0, 0}), 1e-6);
  const double r = 1 / std::sqrt(2.0);
  ExpectTensorNear<T>(
      run("SparseSegmentSqrtNGrad"),
      Of<T>({4, 2}, {r, 2 * r, 10 * r, 20 * r, 11 * r, 22 * r, 0, 0}), 1e-6);
}

TEST(SparseSegmentGradTest, ClosedFormsEveryDtype) {
  CheckSparseSegmentGrads<float>();
  CheckSparseSegmentGrads<double>();
}

TEST(SparseSegmentGradTest, BadInputs) {
  const Tensor grad = Of<float>({2, 2}, {1, 2, 3, 4});
  const Tensor four = Make<int32_t>({}, {4});
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentMeanGrad", grad,
                             Vec<int32_t>({0, 4}), Vec<int32_t>({0, 1}), &four),
      "indices[1] = 4 is not in [0, output_dim0 = 4)");
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentSqrtNGrad", grad,
                             Vec<int32_t>({0, 1}), Vec<int32_t>({0, 2}), &four),
      "segment_ids[1] = 2 is not in [0, 2) (grad.shape[0])");
  const Tensor neg = Make<int32_t>({}, {-1});
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentSumGrad", grad, Vec<int32_t>({0}),
                             Vec<int32_t>({0}), &neg),
      "output_dim0 must be non-negative, got -1");
  const Tensor vec = Vec<int32_t>({4});
  ExpectInvalid(
      RunSparseSegmentStatus("SparseSegmentSumGrad", grad, Vec<int32_t>({0}),
                             Vec<int32_t>({0}), &vec),
      "output_dim0 should be a scalar, got shape [1]");
}

}  // namespace
}  // namespace runnel
