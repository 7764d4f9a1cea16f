// Stack ops through the op-test harness: each OpTestCase runs one kernel,
// and the harness's per-step resource manager outlives it, so a handle from
// one case can be fed to the next (a session would run them in one step).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_handle.h"
#include "runnel/graph/gradients.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

Tensor NewStack(DataType elem_type, int32_t max_size,
                const std::string& name = "") {
  OpTestCase t("StackV2");
  t.Attr("elem_type", elem_type).Input<int32_t>({}, {max_size});
  if (!name.empty()) t.Attr("stack_name", name);
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return Tensor();
  return t.output(0);
}

Status Push(const Tensor& handle, const Tensor& value, Tensor* out = nullptr) {
  OpTestCase t("StackPushV2");
  t.Attr("T", value.dtype()).Input(handle).Input(value);
  RETURN_IF_ERROR(t.Run());
  if (out != nullptr) *out = t.output(0);
  return absl::OkStatus();
}

Status Pop(const Tensor& handle, DataType dtype, Tensor* out) {
  OpTestCase t("StackPopV2");
  t.Attr("elem_type", dtype).Input(handle);
  RETURN_IF_ERROR(t.Run());
  *out = t.output(0);
  return absl::OkStatus();
}

Status Close(const Tensor& handle) {
  OpTestCase t("StackCloseV2");
  t.Input(handle);
  return t.Run();
}

void ExpectInvalid(const Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(what));
}

TEST(StackOpsTest, HandleIsAScalarResource) {
  Tensor h = NewStack(DT_FLOAT, -1);
  ASSERT_EQ(h.dtype(), DT_RESOURCE);
  EXPECT_EQ(h.shape(), TensorShape({}));
  Tensor h2 = NewStack(DT_FLOAT, -1);
  // Every run makes a new stack.
  EXPECT_NE(h.scalar<ResourceHandle>().name(),
            h2.scalar<ResourceHandle>().name());
}

TEST(StackOpsTest, PushOutputsElemAndPopIsLastInFirstOut) {
  Tensor h = NewStack(DT_FLOAT, -1);
  Tensor out;
  ASSERT_OK(Push(h, Tensor::FromVector<float>({1, 2}), &out));
  ExpectTensorEqual<float>(out, Tensor::FromVector<float>({1, 2}));
  ASSERT_OK(Push(h, Tensor::FromVector<float>({3, 4, 5})));
  ASSERT_OK(Push(h, Tensor::Scalar<float>(6)));
  Tensor v;
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ExpectTensorEqual<float>(v, Tensor::Scalar<float>(6));
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ExpectTensorEqual<float>(v, Tensor::FromVector<float>({3, 4, 5}));
  ASSERT_OK(Push(h, Tensor::FromVector<float>({7})));
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ExpectTensorEqual<float>(v, Tensor::FromVector<float>({7}));
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ExpectTensorEqual<float>(v, Tensor::FromVector<float>({1, 2}));
}

TEST(StackOpsTest, EveryDtype) {
  {
    Tensor h = NewStack(DT_DOUBLE, 4);
    Tensor v;
    ASSERT_OK(Push(h, Tensor::FromVector<double>({0.5, -1.5})));
    ASSERT_OK(Pop(h, DT_DOUBLE, &v));
    ExpectTensorEqual<double>(v, Tensor::FromVector<double>({0.5, -1.5}));
  }
  {
    Tensor h = NewStack(DT_INT32, 4);
    Tensor v;
    ASSERT_OK(
        Push(h, Tensor::FromVector<int32_t>({3, -7}, TensorShape({2, 1}))));
    ASSERT_OK(Pop(h, DT_INT32, &v));
    ExpectTensorEqual<int32_t>(
        v, Tensor::FromVector<int32_t>({3, -7}, TensorShape({2, 1})));
  }
  {
    Tensor h = NewStack(DT_INT64, 4);
    Tensor v;
    ASSERT_OK(Push(h, Tensor::Scalar<int64_t>(int64_t{1} << 40)));
    ASSERT_OK(Pop(h, DT_INT64, &v));
    ExpectTensorEqual<int64_t>(v, Tensor::Scalar<int64_t>(int64_t{1} << 40));
  }
  {
    Tensor h = NewStack(DT_BOOL, 4);
    Tensor v;
    ASSERT_OK(Push(h, Tensor::FromVector<bool>({true, false})));
    ASSERT_OK(Pop(h, DT_BOOL, &v));
    ExpectTensorEqual<bool>(v, Tensor::FromVector<bool>({true, false}));
  }
  {
    Tensor h = NewStack(DT_STRING, 4);
    Tensor v;
    ASSERT_OK(Push(h, Tensor::FromVector<tstring>({"a", "bc"})));
    ASSERT_OK(Pop(h, DT_STRING, &v));
    ExpectTensorEqual<tstring>(v, Tensor::FromVector<tstring>({"a", "bc"}));
  }
}

TEST(StackOpsTest, EmptyTensorsAreElements) {
  Tensor h = NewStack(DT_FLOAT, -1);
  ASSERT_OK(Push(h, Tensor(DT_FLOAT, TensorShape({0, 3}))));
  Tensor v;
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  EXPECT_EQ(v.shape(), TensorShape({0, 3}));
}

TEST(StackOpsTest, PopOfEmptyStackNamesTheStack) {
  Tensor h = NewStack(DT_FLOAT, -1, "my_stack");
  Tensor v;
  Status s = Pop(h, DT_FLOAT, &v);
  ExpectInvalid(s, "my_stack");
  EXPECT_THAT(std::string(s.message()), HasSubstr("is empty"));
  ASSERT_OK(Push(h, Tensor::Scalar<float>(1)));
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ExpectInvalid(Pop(h, DT_FLOAT, &v), "is empty");
}

TEST(StackOpsTest, PushBeyondMaxSize) {
  Tensor h = NewStack(DT_FLOAT, 2, "small");
  ASSERT_OK(Push(h, Tensor::Scalar<float>(1)));
  ASSERT_OK(Push(h, Tensor::Scalar<float>(2)));
  Status s = Push(h, Tensor::Scalar<float>(3));
  ExpectInvalid(s, "overflowed its max_size (2)");
  EXPECT_THAT(std::string(s.message()), HasSubstr("small"));
  // Popping makes room again.
  Tensor v;
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
  ASSERT_OK(Push(h, Tensor::Scalar<float>(3)));
}

TEST(StackOpsTest, MaxSizeZeroHoldsNothing) {
  Tensor h = NewStack(DT_FLOAT, 0);
  ExpectInvalid(Push(h, Tensor::Scalar<float>(1)), "max_size (0)");
}

TEST(StackOpsTest, DtypeMismatch) {
  Tensor h = NewStack(DT_FLOAT, -1, "typed");
  Status s = Push(h, Tensor::Scalar<int32_t>(1));
  ExpectInvalid(s, "must have type float but got int32");
  EXPECT_THAT(std::string(s.message()), HasSubstr("typed"));
  ASSERT_OK(Push(h, Tensor::Scalar<float>(1)));
  Tensor v;
  ExpectInvalid(Pop(h, DT_INT32, &v), "pops elem_type int32");
  // The failed pop left the element in place.
  ASSERT_OK(Pop(h, DT_FLOAT, &v));
}

TEST(StackOpsTest, ClosedStack) {
  Tensor h = NewStack(DT_FLOAT, -1, "closing");
  ASSERT_OK(Push(h, Tensor::Scalar<float>(1)));
  ASSERT_OK(Close(h));
  Tensor v;
  ExpectInvalid(Pop(h, DT_FLOAT, &v), "has already been closed");
  ExpectInvalid(Push(h, Tensor::Scalar<float>(1)), "has already been closed");
}

TEST(StackOpsTest, BadHandlesAndSizes) {
  {
    OpTestCase t("StackV2");
    t.Attr("elem_type", DT_FLOAT).Input<int32_t>({2}, {1, 2});
    ExpectInvalid(t.RunKernelOnly(), "Stack size must be a scalar");
    EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument);
  }
  // A handle to another kind of resource, or a default (empty) handle.
  Tensor not_a_stack(DT_RESOURCE, TensorShape({}));
  Tensor v;
  ExpectInvalid(Pop(not_a_stack, DT_FLOAT, &v), "wrong type");
  // A float tensor where the handle goes, and two handles in one tensor.
  ExpectInvalid(Push(Tensor::FromVector<float>({1}), Tensor::Scalar<float>(1)),
                "resource handle of one element");
  Tensor two(DT_RESOURCE, TensorShape({2}));
  ExpectInvalid(Close(two), "resource handle of one element");
}

TEST(StackOpsTest, HandleFromAnotherStepIsNotFound) {
  // A well-formed handle whose stack is not in the step's resources.
  Tensor h = NewStack(DT_FLOAT, -1);
  Tensor forged(DT_RESOURCE, TensorShape({}));
  ResourceHandle rh = h.scalar<ResourceHandle>();
  rh.set_name("no_such_stack");
  forged.scalar<ResourceHandle>() = rh;
  Tensor v;
  Status s = Pop(forged, DT_FLOAT, &v);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no_such_stack"));
}

TEST(StackOpsTest, ShapeFunctions) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto push =
      InferShapes("StackPushV2", attrs,
                  {PartialTensorShape({}), PartialTensorShape({2, -1})});
  ASSERT_OK(push.status());
  EXPECT_EQ((*push)[0], PartialTensorShape({2, -1}));
  AttrMap pop_attrs;
  pop_attrs["elem_type"] = MakeAttrValue(DT_FLOAT);
  auto pop = InferShapes("StackPopV2", pop_attrs, {PartialTensorShape({})});
  ASSERT_OK(pop.status());
  EXPECT_TRUE((*pop)[0].unknown_rank());
  AttrMap stack_attrs;
  stack_attrs["elem_type"] = MakeAttrValue(DT_FLOAT);
  auto stack = InferShapes("StackV2", stack_attrs, {PartialTensorShape({3})});
  EXPECT_EQ(stack.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StackOpsTest, NotDifferentiable) {
  for (const char* op :
       {"StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"}) {
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_TRUE(e->fn == nullptr) << op;
  }
}

}  // namespace
}  // namespace runnel
