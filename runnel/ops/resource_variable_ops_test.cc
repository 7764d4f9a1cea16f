#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>

#include "runnel/framework/resource_var.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// Every test uses its own variable names: the harness device's ResourceMgr
// is shared by the whole binary.

Tensor Handle(const std::string& name, DataType dtype = DT_FLOAT,
              PartialTensorShape shape = PartialTensorShape()) {
  OpTestCase t("VarHandleOp", name + "_handle");
  t.Attr("shared_name", name).Attr("dtype", dtype).Attr("shape", shape);
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? t.output(0) : Tensor();
}

Status Assign(const Tensor& handle, const Tensor& value,
              bool validate_shape = false) {
  OpTestCase t("AssignVariableOp");
  t.Attr("dtype", value.dtype()).Attr("validate_shape", validate_shape);
  t.Input(handle).Input(value);
  return t.Run();
}

StatusOr<Tensor> Read(const Tensor& handle, DataType dtype = DT_FLOAT) {
  OpTestCase t("ReadVariableOp");
  t.Attr("dtype", dtype).Input(handle);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

Status Update(const char* op, const Tensor& handle, const Tensor& value) {
  OpTestCase t(op);
  t.Attr("dtype", value.dtype()).Input(handle).Input(value);
  return t.Run();
}

StatusOr<bool> IsInitialized(const Tensor& handle) {
  OpTestCase t("VarIsInitializedOp");
  t.Input(handle);
  RETURN_IF_ERROR(t.Run());
  return t.output(0).scalar<bool>();
}

Status Destroy(const Tensor& handle, bool ignore_lookup_error = true) {
  OpTestCase t("DestroyResourceOp");
  t.Attr("ignore_lookup_error", ignore_lookup_error).Input(handle);
  return t.Run();
}

void ExpectError(const Status& s, absl::StatusCode code,
                 const std::string& text) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(text), std::string::npos) << s;
}

TEST(VarHandleOpTest, HandleNamesTheVariable) {
  Tensor h = Handle("rv_handle", DT_DOUBLE, PartialTensorShape({2, -1}));
  ASSERT_EQ(h.dtype(), DT_RESOURCE);
  ASSERT_EQ(h.shape(), TensorShape({}));
  const ResourceHandle& r = h.scalar<ResourceHandle>();
  EXPECT_EQ(r.container(), "localhost");
  EXPECT_EQ(r.name(), "rv_handle");
  EXPECT_EQ(r.device(), TestCpuDevice()->name());
  EXPECT_EQ(r.hash_code(), ResourceTypeHash<Var>());
  ASSERT_EQ(r.dtypes_and_shapes().size(), 1u);
  EXPECT_EQ(r.dtypes_and_shapes()[0].dtype, DT_DOUBLE);
  EXPECT_EQ(r.dtypes_and_shapes()[0].shape, PartialTensorShape({2, -1}));

  OpTestCase t("VarHandleOp", "node_named");
  t.Attr("container", "mine")
      .Attr("dtype", DT_INT32)
      .Attr("shape", PartialTensorShape({}));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).scalar<ResourceHandle>().container(), "mine");
  EXPECT_EQ(t.output(0).scalar<ResourceHandle>().name(),
            "node_named");  // No shared_name.
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({}));
}

TEST(ResourceVariableTest, AssignThenRead) {
  Tensor h = Handle("rv_assign_read");
  EXPECT_EQ(*IsInitialized(h), false);
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({1, 2, 3})));
  EXPECT_EQ(*IsInitialized(h), true);
  auto v = Read(h);
  ASSERT_TRUE(v.ok()) << v.status();
  ExpectTensorEqual<float>(*v, Tensor::FromVector<float>({1, 2, 3}));
  // A second handle op with the same shared_name sees the same variable.
  auto again = Read(Handle("rv_assign_read"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->SharesBufferWith(*v));
}

TEST(ResourceVariableTest, EveryDtypeStoresAndReads) {
  ASSERT_OK(
      Assign(Handle("rv_i32", DT_INT32), Tensor::FromVector<int32_t>({-7})));
  ExpectTensorEqual<int32_t>(*Read(Handle("rv_i32", DT_INT32), DT_INT32),
                             Tensor::FromVector<int32_t>({-7}));
  ASSERT_OK(Assign(Handle("rv_i64", DT_INT64),
                   Tensor::Scalar<int64_t>(int64_t{1} << 40)));
  ExpectTensorEqual<int64_t>(*Read(Handle("rv_i64", DT_INT64), DT_INT64),
                             Tensor::Scalar<int64_t>(int64_t{1} << 40));
  ASSERT_OK(Assign(Handle("rv_f64", DT_DOUBLE),
                   Tensor::FromVector<double>({0.5, 1e300})));
  ExpectTensorEqual<double>(*Read(Handle("rv_f64", DT_DOUBLE), DT_DOUBLE),
                            Tensor::FromVector<double>({0.5, 1e300}));
  ASSERT_OK(Assign(Handle("rv_bool", DT_BOOL),
                   Tensor::FromVector<bool>({true, false})));
  ExpectTensorEqual<bool>(*Read(Handle("rv_bool", DT_BOOL), DT_BOOL),
                          Tensor::FromVector<bool>({true, false}));
  ASSERT_OK(Assign(Handle("rv_str", DT_STRING),
                   Tensor::FromVector<tstring>({"a", "bc"})));
  ExpectTensorEqual<tstring>(*Read(Handle("rv_str", DT_STRING), DT_STRING),
                             Tensor::FromVector<tstring>({"a", "bc"}));
  // Empty tensors are initialised values too.
  ASSERT_OK(Assign(Handle("rv_empty"), Tensor(DT_FLOAT, TensorShape({0, 3}))));
  auto e = Read(Handle("rv_empty"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->shape(), TensorShape({0, 3}));
}

TEST(ResourceVariableTest, ReadingAnUninitializedVariableFails) {
  Tensor h = Handle("rv_never_assigned");
  ExpectError(Read(h).status(), absl::StatusCode::kFailedPrecondition,
              "rv_never_assigned");
  ExpectError(Read(h).status(), absl::StatusCode::kFailedPrecondition,
              "uninitialized");
  ExpectError(Update("AssignAddVariableOp", h, Tensor::FromVector<float>({1})),
              absl::StatusCode::kFailedPrecondition, "rv_never_assigned");
  OpTestCase shape("VariableShape");
  shape.Input(h);
  ExpectError(shape.Run(), absl::StatusCode::kFailedPrecondition,
              "rv_never_assigned");
}

TEST(ResourceVariableTest, AssignChecksDtypeAndShape) {
  Tensor h = Handle("rv_checks");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({1, 2})));
  // The variable keeps its dtype.
  ExpectError(Assign(h, Tensor::FromVector<int32_t>({1, 2})),
              absl::StatusCode::kInvalidArgument, "wrong dtype");
  ExpectError(Read(h, DT_DOUBLE).status(), absl::StatusCode::kInvalidArgument,
              "double");
  // validate_shape keeps the shape; without it the shape may change.
  ExpectError(
      Assign(h, Tensor::FromVector<float>({1, 2, 3}), /*validate_shape=*/true),
      absl::StatusCode::kInvalidArgument, "[2]");
  ASSERT_OK(
      Assign(h, Tensor::FromVector<float>({4, 5}), /*validate_shape=*/true));
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({7, 8, 9})));
  ExpectTensorEqual<float>(*Read(h), Tensor::FromVector<float>({7, 8, 9}));
}

TEST(ResourceVariableTest, AssignAddAndSubForEveryDtype) {
  {
    Tensor h = Handle("rv_add_f", DT_FLOAT);
    ASSERT_OK(Assign(h, Tensor::FromVector<float>({1.5f, -2})));
    ASSERT_OK(
        Update("AssignAddVariableOp", h, Tensor::FromVector<float>({1, 1})));
    ASSERT_OK(Update("AssignSubVariableOp", h,
                     Tensor::FromVector<float>({0.25f, 4})));
    ExpectTensorEqual<float>(*Read(h), Tensor::FromVector<float>({2.25f, -5}));
  }
  {
    Tensor h = Handle("rv_add_d", DT_DOUBLE);
    ASSERT_OK(Assign(h, Tensor::Scalar<double>(0.1)));
    ASSERT_OK(Update("AssignAddVariableOp", h, Tensor::Scalar<double>(0.2)));
    ExpectTensorNear<double>(*Read(h, DT_DOUBLE), Tensor::Scalar<double>(0.3),
                             1e-15);
  }
  {
    Tensor h = Handle("rv_add_i32", DT_INT32);
    ASSERT_OK(Assign(h, Tensor::FromVector<int32_t>({10, 20, 30})));
    ASSERT_OK(Update("AssignSubVariableOp", h,
                     Tensor::FromVector<int32_t>({1, 2, 3})));
    ExpectTensorEqual<int32_t>(*Read(h, DT_INT32),
                               Tensor::FromVector<int32_t>({9, 18, 27}));
  }
  {
    Tensor h = Handle("rv_add_i64", DT_INT64);  // A global step counter.
    ASSERT_OK(Assign(h, Tensor::Scalar<int64_t>(0)));
    for (int i = 0; i < 5; ++i) {
      ASSERT_OK(Update("AssignAddVariableOp", h, Tensor::Scalar<int64_t>(1)));
    }
    ExpectTensorEqual<int64_t>(*Read(h, DT_INT64), Tensor::Scalar<int64_t>(5));
  }
}

// Integers wrap (two's complement) as in TensorFlow instead of overflowing.
TEST(ResourceVariableTest, AssignAddAndSubWrapIntegers) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  Tensor h = Handle("rv_wrap_i32", DT_INT32);
  ASSERT_OK(Assign(h, Tensor::FromVector<int32_t>({kMax, kMin})));
  ASSERT_OK(
      Update("AssignAddVariableOp", h, Tensor::FromVector<int32_t>({1, 0})));
  ExpectTensorEqual<int32_t>(*Read(h, DT_INT32),
                             Tensor::FromVector<int32_t>({kMin, kMin}));
  ASSERT_OK(
      Update("AssignSubVariableOp", h, Tensor::FromVector<int32_t>({1, 1})));
  ExpectTensorEqual<int32_t>(*Read(h, DT_INT32),
                             Tensor::FromVector<int32_t>({kMax, kMax}));

  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  Tensor h64 = Handle("rv_wrap_i64", DT_INT64);
  ASSERT_OK(Assign(h64, Tensor::Scalar<int64_t>(kMax64)));
  ASSERT_OK(Update("AssignAddVariableOp", h64, Tensor::Scalar<int64_t>(1)));
  ExpectTensorEqual<int64_t>(
      *Read(h64, DT_INT64),
      Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::min()));
  ASSERT_OK(Update("AssignSubVariableOp", h64, Tensor::Scalar<int64_t>(1)));
  ExpectTensorEqual<int64_t>(*Read(h64, DT_INT64),
                             Tensor::Scalar<int64_t>(kMax64));
}

TEST(ResourceVariableTest, AssignAddChecksShapeAndDtype) {
  Tensor h = Handle("rv_add_checks");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({1, 2})));
  ExpectError(
      Update("AssignAddVariableOp", h, Tensor::FromVector<float>({1, 2, 3})),
      absl::StatusCode::kInvalidArgument, "shapes must be equal");
  ExpectError(
      Update("AssignSubVariableOp", h, Tensor::FromVector<double>({1, 2})),
      absl::StatusCode::kInvalidArgument, "dtype");
  ExpectTensorEqual<float>(*Read(h), Tensor::FromVector<float>({1, 2}));
}

// Note [Resource variable copy-on-write]: a value already read never changes.
TEST(ResourceVariableTest, UpdatesNeverChangeAValueAlreadyRead) {
  Tensor h = Handle("rv_cow");
  Tensor init = Tensor::FromVector<float>({1, 2});
  ASSERT_OK(Assign(h, init));
  Tensor before = *Read(h);
  ASSERT_OK(
      Update("AssignAddVariableOp", h, Tensor::FromVector<float>({10, 10})));
  ExpectTensorEqual<float>(before, Tensor::FromVector<float>({1, 2}));
  ExpectTensorEqual<float>(
      init, Tensor::FromVector<float>({1, 2}));  // The assigned value.
  Tensor after = *Read(h);
  ExpectTensorEqual<float>(after, Tensor::FromVector<float>({11, 12}));
  EXPECT_FALSE(after.SharesBufferWith(before));
}

TEST(ResourceVariableTest, LargeUpdatesAreExactAndConcurrentOnesSerialise) {
  const int64_t n = 1 << 20;
  Tensor h = Handle("rv_large");
  ASSERT_OK(Assign(h, Tensor(DT_FLOAT, TensorShape({n}))));
  {
    Tensor zeros(DT_FLOAT, TensorShape({n}));
    for (float& v : zeros.flat<float>()) v = 0;
    ASSERT_OK(Assign(h, zeros));
  }
  Tensor ones(DT_FLOAT, TensorShape({n}));
  for (float& v : ones.flat<float>()) v = 1;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        if (!Update("AssignAddVariableOp", h, ones).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  Tensor v = *Read(h);
  for (int64_t i = 0; i < n; i += 4099)
    ASSERT_EQ(v.flat<float>()[i], 20.0f) << i;
  EXPECT_EQ(v.flat<float>()[n - 1], 20.0f);
}

TEST(VariableShapeTest, Int32AndInt64) {
  Tensor h = Handle("rv_shape");
  ASSERT_OK(Assign(h, Tensor(DT_FLOAT, TensorShape({2, 0, 5}))));
  OpTestCase t32("VariableShape");
  t32.Input(h);
  ASSERT_OK(t32.Run());
  ExpectTensorEqual<int32_t>(t32.output(0),
                             Tensor::FromVector<int32_t>({2, 0, 5}));
  OpTestCase t64("VariableShape");
  t64.Attr("out_type", DT_INT64).Input(h);
  ASSERT_OK(t64.Run());
  ExpectTensorEqual<int64_t>(t64.output(0),
                             Tensor::FromVector<int64_t>({2, 0, 5}));
}

TEST(DestroyResourceOpTest, DeletesTheVariable) {
  Tensor h = Handle("rv_destroy");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({1})));
  ASSERT_OK(Destroy(h));
  EXPECT_EQ(*IsInitialized(h), false);
  ExpectError(Read(h).status(), absl::StatusCode::kFailedPrecondition,
              "rv_destroy");
  ASSERT_OK(Destroy(h));  // ignore_lookup_error defaults to true.
  EXPECT_EQ(Destroy(h, /*ignore_lookup_error=*/false).code(),
            absl::StatusCode::kNotFound);
  // It can be created again.
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({2})));
  ExpectTensorEqual<float>(*Read(h), Tensor::FromVector<float>({2}));
}

// ---------------------------------------------------------------------------
// DisableCopyOnRead

Status DisableCopyOnRead(const Tensor& handle) {
  OpTestCase t("DisableCopyOnRead");
  t.Input(handle);
  return t.Run();
}

TEST(DisableCopyOnReadTest, ChecksTheVariableAndChangesNothing) {
  const OpRegistrationData* d =
      OpRegistry::Global()->LookUp("DisableCopyOnRead");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->op_def.is_stateful());
  EXPECT_EQ(d->op_def.output_arg_size(), 0);

  Tensor h = Handle("rv_disable_copy_on_read");
  // No variable yet: NotFound, as TensorFlow's lookup.
  ExpectError(DisableCopyOnRead(h), absl::StatusCode::kNotFound,
              "rv_disable_copy_on_read");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({1, 2, 3})));
  auto before = Read(h);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_OK(DisableCopyOnRead(h));
  ASSERT_OK(DisableCopyOnRead(h));  // Twice is fine.
  // Same value, same buffer: nothing was copied or changed.
  auto after = Read(h);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectTensorEqual<float>(*after, Tensor::FromVector<float>({1, 2, 3}));
  EXPECT_TRUE(after->SharesBufferWith(*before));
  EXPECT_EQ(*IsInitialized(h), true);
  // Updates still copy before writing a value a reader holds.
  ASSERT_OK(
      Update("AssignAddVariableOp", h, Tensor::FromVector<float>({1, 1, 1})));
  ExpectTensorEqual<float>(*before, Tensor::FromVector<float>({1, 2, 3}));
  ExpectTensorEqual<float>(*Read(h), Tensor::FromVector<float>({2, 3, 4}));
  // Any dtype.
  Tensor s = Handle("rv_disable_copy_on_read_str", DT_STRING);
  ASSERT_OK(Assign(s, Tensor::Scalar<tstring>("x")));
  ASSERT_OK(DisableCopyOnRead(s));
  ExpectTensorEqual<tstring>(*Read(s, DT_STRING), Tensor::Scalar<tstring>("x"));
  // Destroyed: NotFound again.
  ASSERT_OK(Destroy(h));
  ExpectError(DisableCopyOnRead(h), absl::StatusCode::kNotFound,
              "rv_disable_copy_on_read");
}

TEST(DisableCopyOnReadTest, BadHandlesAreRejected) {
  ExpectError(DisableCopyOnRead(Tensor(DT_RESOURCE, TensorShape({2}))),
              absl::StatusCode::kInvalidArgument, "resource handle");
  struct NotAVariable {};
  Tensor other(DT_RESOURCE, TensorShape({}));
  other.scalar<ResourceHandle>() =
      MakeResourceHandle<NotAVariable>("localhost", "rv_dcor_other", "");
  ExpectError(DisableCopyOnRead(other), absl::StatusCode::kInvalidArgument,
              "wrong type");
  Tensor remote = Handle("rv_dcor_remote").DeepCopy();
  remote.scalar<ResourceHandle>().set_device(
      "/job:ps/replica:0/task:0/device:CPU:0");
  ExpectError(DisableCopyOnRead(remote), absl::StatusCode::kInvalidArgument,
              "/job:ps");
}

TEST(ResourceVariableTest, BadHandlesAreRejected) {
  // Not one element.
  ExpectError(Read(Tensor(DT_RESOURCE, TensorShape({2}))).status(),
              absl::StatusCode::kInvalidArgument, "resource handle");
  ExpectError(Read(Tensor(DT_RESOURCE, TensorShape({0}))).status(),
              absl::StatusCode::kInvalidArgument, "resource handle");
  // A handle to a different kind of resource.
  struct NotAVariable {};
  Tensor other(DT_RESOURCE, TensorShape({}));
  other.scalar<ResourceHandle>() =
      MakeResourceHandle<NotAVariable>("localhost", "rv_x", "");
  ExpectError(Assign(other, Tensor::FromVector<float>({1})),
              absl::StatusCode::kInvalidArgument, "wrong type");
  EXPECT_EQ(*IsInitialized(other), false);
  // A handle on another device.
  Tensor remote = Handle("rv_remote");
  remote = remote.DeepCopy();
  remote.scalar<ResourceHandle>().set_device(
      "/job:ps/replica:0/task:0/device:CPU:0");
  ExpectError(Assign(remote, Tensor::FromVector<float>({1})),
              absl::StatusCode::kInvalidArgument, "/job:ps");
}

// ---------------------------------------------------------------------------
// ResourceGather

StatusOr<Tensor> Gather(const Tensor& handle, const Tensor& indices,
                        DataType dtype = DT_FLOAT, int64_t batch_dims = 0) {
  OpTestCase t("ResourceGather");
  t.Attr("dtype", dtype)
      .Attr("Tindices", indices.dtype())
      .Attr("batch_dims", batch_dims);
  t.Input(handle).Input(indices);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

TEST(ResourceGatherTest, GathersRows) {
  Tensor h = Handle("rv_gather");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({0, 1, 10, 11, 20, 21},
                                                TensorShape({3, 2}))));
  // Vector indices (int32 and int64), with a repeat.
  auto g = Gather(h, Tensor::FromVector<int32_t>({2, 0, 2}));
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<float>(*g, Tensor::FromVector<float>({20, 21, 0, 1, 20, 21},
                                                         TensorShape({3, 2})));
  g = Gather(h, Tensor::FromVector<int64_t>({1}));
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<float>(
      *g, Tensor::FromVector<float>({10, 11}, TensorShape({1, 2})));
  // Scalar index: drops the row dimension.
  g = Gather(h, Tensor::Scalar<int32_t>(1));
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<float>(*g, Tensor::FromVector<float>({10, 11}));
  // Matrix of indices.
  g = Gather(h, Tensor::FromVector<int64_t>({0, 1, 1, 2}, TensorShape({2, 2})));
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<float>(
      *g, Tensor::FromVector<float>({0, 1, 10, 11, 10, 11, 20, 21},
                                    TensorShape({2, 2, 2})));
  // No indices.
  g = Gather(h, Tensor(DT_INT32, TensorShape({0})));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->shape(), TensorShape({0, 2}));
}

TEST(ResourceGatherTest, OtherDtypesAndBatchDims) {
  Tensor s = Handle("rv_gather_str", DT_STRING);
  ASSERT_OK(Assign(s, Tensor::FromVector<tstring>({"zero", "one", "two"})));
  auto g = Gather(s, Tensor::FromVector<int32_t>({2, 1}), DT_STRING);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<tstring>(*g, Tensor::FromVector<tstring>({"two", "one"}));

  Tensor i = Handle("rv_gather_i64", DT_INT64);
  ASSERT_OK(Assign(i, Tensor::FromVector<int64_t>({5, 6, 7})));
  g = Gather(i, Tensor::FromVector<int64_t>({0, 0}), DT_INT64);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<int64_t>(*g, Tensor::FromVector<int64_t>({5, 5}));

  // batch_dims = 1: params [2, 3], indices [2, 2] -> out[b, j] = params[b,
  // idx[b, j]].
  Tensor b = Handle("rv_gather_batch", DT_DOUBLE);
  ASSERT_OK(Assign(b, Tensor::FromVector<double>({0, 1, 2, 10, 11, 12},
                                                 TensorShape({2, 3}))));
  g = Gather(b, Tensor::FromVector<int32_t>({2, 0, 1, 1}, TensorShape({2, 2})),
             DT_DOUBLE, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensorEqual<double>(
      *g, Tensor::FromVector<double>({2, 0, 11, 11}, TensorShape({2, 2})));
  ExpectError(
      Gather(b, Tensor::FromVector<int32_t>({0, 0, 0}), DT_DOUBLE, 1).status(),
      absl::StatusCode::kInvalidArgument, "should be equal");
  ExpectError(
      Gather(b, Tensor::FromVector<int32_t>({0, 1}), DT_DOUBLE, 2).status(),
      absl::StatusCode::kInvalidArgument, "rank at least 2");
}

TEST(ResourceGatherTest, BadIndicesAndVariables) {
  Tensor h = Handle("rv_gather_bad");
  ASSERT_OK(Assign(h, Tensor::FromVector<float>({0, 1, 10, 11, 20, 21},
                                                TensorShape({3, 2}))));
  ExpectError(Gather(h, Tensor::FromVector<int32_t>({0, 3})).status(),
              absl::StatusCode::kInvalidArgument,
              "indices[1] = 3 is not in [0, 3)");
  ExpectError(
      Gather(h, Tensor::FromVector<int64_t>({0, -1}, TensorShape({1, 2})))
          .status(),
      absl::StatusCode::kInvalidArgument, "indices[0,1] = -1 is not in [0, 3)");
  ExpectError(Gather(h, Tensor::FromVector<int32_t>({0}), DT_DOUBLE).status(),
              absl::StatusCode::kInvalidArgument, "dtype");
  Tensor scalar = Handle("rv_gather_scalar");
  ASSERT_OK(Assign(scalar, Tensor::Scalar<float>(1)));
  ExpectError(Gather(scalar, Tensor::FromVector<int32_t>({0})).status(),
              absl::StatusCode::kInvalidArgument, "at least 1 dimensional");
  ExpectError(
      Gather(Handle("rv_gather_uninit"), Tensor::FromVector<int32_t>({0}))
          .status(),
      absl::StatusCode::kFailedPrecondition, "rv_gather_uninit");
  auto shape = InferShapes("ResourceGather",
                           {{"dtype", MakeAttrValue(DT_FLOAT)},
                            {"Tindices", MakeAttrValue(DT_INT32)},
                            {"batch_dims", MakeAttrValue(int64_t{-1})}},
                           {PartialTensorShape({}), PartialTensorShape({2})});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
