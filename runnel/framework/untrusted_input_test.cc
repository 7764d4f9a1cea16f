// Regression tests for values that arrive from untrusted bytes (GraphDefs,
// TensorProtos, checkpoints): each once crashed or exhausted the process.
#include <gtest/gtest.h>

#include <climits>

#include "runnel/framework/allocator.h"
#include "runnel/framework/op.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"

namespace runnel {
namespace {

TEST(UntrustedDataTypeTest, OutOfRangeValuesNameThemselvesWithoutRecursing) {
  // DataTypeString once recursed (value - 100 at a time) on these.
  EXPECT_EQ(DataTypeString(static_cast<DataType>(INT_MAX)),
            "unknown dtype 2147483647");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(INT_MIN)),
            "unknown dtype -2147483648");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(150)), "unknown dtype 150");
  EXPECT_EQ(DataTypeString(DT_FLOAT_REF), "float_ref");
  EXPECT_EQ(DataTypeString(DT_INVALID), "invalid");
  EXPECT_FALSE(IsRefType(static_cast<DataType>(INT_MAX)));
}

TEST(UntrustedDataTypeTest, DataTypeIsKnown) {
  EXPECT_TRUE(DataTypeIsKnown(DT_FLOAT));
  EXPECT_TRUE(DataTypeIsKnown(DT_UINT64));
  EXPECT_TRUE(DataTypeIsKnown(DT_INT32_REF));
  EXPECT_FALSE(DataTypeIsKnown(DT_INT32_REF, /*allow_ref=*/false));
  EXPECT_FALSE(DataTypeIsKnown(DT_INVALID));
  EXPECT_TRUE(DataTypeIsKnown(DT_INVALID, true, /*allow_invalid=*/true));
  for (int v : {24, 99, 100, 124, 199, 200, 1000, INT_MAX, -1, INT_MIN}) {
    EXPECT_FALSE(DataTypeIsKnown(static_cast<DataType>(v))) << v;
  }
}

TEST(UntrustedTensorProtoTest, RejectsUnknownDtype) {
  TensorProto p;
  p.set_dtype(static_cast<DataType>(INT_MAX));
  auto t = Tensor::FromProto(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("2147483647"), std::string::npos);
  p.set_dtype(DT_FLOAT_REF);
  EXPECT_FALSE(Tensor::FromProto(p).ok());
}

TEST(UntrustedTensorProtoTest, BoolBytesAreNormalised) {
  TensorProto p;
  p.set_dtype(DT_BOOL);
  p.mutable_tensor_shape()->add_dim()->set_size(4);
  p.set_tensor_content(std::string("\x00\x01\x02\xff", 4));
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  const auto* raw = static_cast<const uint8_t*>(t->raw_data());
  EXPECT_EQ(raw[0], 0);
  EXPECT_EQ(raw[1], 1);
  EXPECT_EQ(raw[2], 1);
  EXPECT_EQ(raw[3], 1);
  // b && !b is false for every element once the bytes are 0/1.
  for (bool b : t->flat<bool>()) EXPECT_FALSE(b && !b);
}

TEST(UntrustedTensorProtoTest, HugeDeclaredShapesAreRefusedForEveryDtype) {
  // A 30-byte proto once allocated gigabytes of std::string objects.
  for (DataType dt : {DT_STRING, DT_FLOAT, DT_BOOL, DT_COMPLEX128}) {
    TensorProto p;
    p.set_dtype(dt);
    p.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
    auto t = Tensor::FromProto(p);
    ASSERT_FALSE(t.ok()) << DataTypeString(dt);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted)
        << t.status();
  }
  // The cap is configurable and covers strings.
  const int64_t old = MaxDecodedTensorBytes();
  SetMaxDecodedTensorBytes(1 << 20);
  TensorProto p;
  p.set_dtype(DT_STRING);
  p.mutable_tensor_shape()->add_dim()->set_size(1 << 20);
  p.add_string_val("x");
  EXPECT_EQ(Tensor::FromProto(p).status().code(),
            absl::StatusCode::kResourceExhausted);
  p.mutable_tensor_shape()->mutable_dim(0)->set_size(1000);
  EXPECT_TRUE(Tensor::FromProto(p).ok());
  SetMaxDecodedTensorBytes(old);
}

TEST(UntrustedTensorProtoTest, EmptyTensorWithHugeDimsPrints) {
  // Zero elements, but the other dims' product overflows int64: printing it
  // (errors, `runnel run`) once hit signed overflow.
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  for (int64_t d :
       {int64_t{110}, int64_t{0}, int64_t{1} << 40, int64_t{1} << 40}) {
    p.mutable_tensor_shape()->add_dim()->set_size(d);
  }
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->SummarizeValue(10), "[[[[]]]]");
}

TEST(UntrustedTensorProtoTest, QuantizedTypesRoundTripThroughIntVal) {
  for (DataType dt : {DT_QINT8, DT_QUINT8, DT_QINT16, DT_QUINT16, DT_QINT32}) {
    TensorProto p;
    p.set_dtype(dt);
    p.mutable_tensor_shape()->add_dim()->set_size(3);
    p.add_int_val(-1);
    p.add_int_val(7);
    auto t = Tensor::FromProto(p);
    ASSERT_TRUE(t.ok()) << DataTypeString(dt) << ": " << t.status();
    TensorProto back;
    t->AsProtoField(&back);
    ASSERT_EQ(back.int_val_size(), 3) << DataTypeString(dt);
    const bool is_unsigned = dt == DT_QUINT8 || dt == DT_QUINT16;
    const int minus_one = dt == DT_QUINT8 ? 255 : dt == DT_QUINT16 ? 65535 : -1;
    EXPECT_EQ(back.int_val(0), is_unsigned ? minus_one : -1);
    EXPECT_EQ(back.int_val(1), 7);
    EXPECT_EQ(back.int_val(2), 7);  // TF's pad-with-last-value rule.
    auto again = Tensor::FromProto(back);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->DebugString(), t->DebugString());
    EXPECT_NE(t->DebugString().find("7"), std::string::npos);
  }
}

TEST(UntrustedShapeTest, AsTensorShapeChecksTheElementCount) {
  // Dims from an attr (a shape-typed attr) whose product overflows int64.
  PartialTensorShape big({int64_t{1} << 40, int64_t{1} << 40});
  auto t = big.AsTensorShape();
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(PartialTensorShape({2, 3}).AsTensorShape().ok());
  EXPECT_EQ(PartialTensorShape({2, 3}).AsTensorShape()->num_elements(), 6);
}

// Kernels build output shapes with AddDim from untrusted sizes; the kernel
// fuzzer found products that overflow int64 (signed overflow is undefined
// behaviour): an empty shape whose nonzero dims overflow before the zero,
// and UnsortedSegmentSum's [INT64_MAX, 2].
TEST(UntrustedShapeTest, NumElementsNeverOverflows) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_EQ(TensorShape({big, big, 0}).num_elements(), 0);
  EXPECT_EQ(TensorShape({0, big, big}).num_elements(), 0);
  EXPECT_EQ(TensorShape({INT64_MAX, 2}).num_elements(), INT64_MAX);
  EXPECT_EQ(TensorShape({big, big}).num_elements(), INT64_MAX);
  EXPECT_EQ(TensorShape({3, 5}).num_elements(), 15);
  // No allocation accepts the saturated count: a named error, not a crash.
  auto t =
      Tensor::Allocate(cpu_allocator(), DT_FLOAT, TensorShape({INT64_MAX, 2}));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("9223372036854775807"), std::string::npos)
      << t.status();
  auto e =
      Tensor::Allocate(cpu_allocator(), DT_STRING, TensorShape({big, big, 0}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->NumElements(), 0);
}

TEST(UntrustedAllocationTest, LimitTurnsIntoResourceExhausted) {
  const int64_t old = CpuAllocatorLimit();
  const int64_t in_use = cpu_allocator()->GetStats().bytes_in_use;
  SetCpuAllocatorLimit(in_use + (64 << 20));
  auto big = Tensor::Allocate(cpu_allocator(), DT_FLOAT,
                              TensorShape({1 << 20, 32}));  // 128 MiB.
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  Tensor small(DT_FLOAT, TensorShape({1 << 20, 8}));  // 32 MiB fits.
  auto copy = small.TryDeepCopy();
  ASSERT_TRUE(copy.ok());
  // A third copy would pass the limit: TryDeepCopy reports it.
  auto third = small.TryDeepCopy();
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  SetCpuAllocatorLimit(old);
  EXPECT_TRUE(small.TryDeepCopy().ok());
  EXPECT_GT(CpuAllocatorLimit(), int64_t{0});
}

TEST(UntrustedAttrTest, ValidateAttrsRejectsUnknownTypes) {
  const OpDef* def = nullptr;
  OpDef local;
  local.set_name("TestTypeAttr");
  auto* a = local.add_attr();
  a->set_name("T");
  a->set_type("type");
  auto* l = local.add_attr();
  l->set_name("Tlist");
  l->set_type("list(type)");
  def = &local;
  AttrMap attrs;
  attrs["T"].set_type(static_cast<DataType>(INT_MAX));
  attrs["Tlist"].mutable_list()->add_type(DT_FLOAT);
  Status s = ValidateAttrs(*def, attrs);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'T'"), std::string::npos) << s;
  attrs["T"].set_type(DT_FLOAT);
  EXPECT_TRUE(ValidateAttrs(*def, attrs).ok());
  attrs["Tlist"].mutable_list()->add_type(static_cast<DataType>(-7));
  EXPECT_FALSE(ValidateAttrs(*def, attrs).ok());
}

}  // namespace
}  // namespace runnel
