#include "runnel/framework/tensor.h"

#include <gtest/gtest.h>

#include "runnel/framework/allocator.h"

namespace runnel {
namespace {

TEST(TensorShapeTest, Basics) {
  TensorShape s({2, 3, 4});
  EXPECT_EQ(s.dims(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_FALSE(TensorShape::FromDims({2, -1}).ok());
  EXPECT_FALSE(
      TensorShape::FromDims({int64_t{1} << 40, int64_t{1} << 40}).ok());
}

TEST(PartialTensorShapeTest, MergeAndCompat) {
  PartialTensorShape a({-1, 2});
  PartialTensorShape b({3, -1});
  auto m = a.MergeWith(b);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->DebugString(), "[3,2]");
  EXPECT_TRUE(a.IsCompatibleWith(TensorShape({5, 2})));
  EXPECT_FALSE(a.IsCompatibleWith(TensorShape({5, 3})));
  EXPECT_FALSE(
      PartialTensorShape({1, 2}).MergeWith(PartialTensorShape({1})).ok());
  EXPECT_EQ(PartialTensorShape().DebugString(), "<unknown>");
}

TEST(TensorTest, AlignedAndRefCounted) {
  Tensor t(DT_FLOAT, TensorShape({3, 5}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  EXPECT_TRUE(t.RefCountIsOne());
  Tensor u = t;
  EXPECT_FALSE(t.RefCountIsOne());
  EXPECT_TRUE(u.SharesBufferWith(t));
}

TEST(TensorTest, SliceSharesBuffer) {
  Tensor t =
      Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor s = t.Slice(1, 3);
  EXPECT_EQ(s.shape(), TensorShape({2, 2}));
  EXPECT_EQ(s.flat<int32_t>()[0], 3);
  EXPECT_TRUE(s.SharesBufferWith(t));
  s.flat<int32_t>()[0] = 30;
  EXPECT_EQ(t.flat<int32_t>()[2], 30);
}

TEST(TensorTest, ExternalMemoryIsReleasedOnceAndNeverOwned) {
  alignas(16) float data[6] = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    StatusOr<Tensor> t = Tensor::FromExternal(DT_FLOAT, TensorShape({2, 3}),
                                              data, [&] { ++released; });
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->raw_data(), data);
    EXPECT_EQ(t->flat<float>()[4], 5.0f);
    // Not its memory: no kernel may forward or overwrite it.
    EXPECT_FALSE(t->RefCountIsOne());
    Tensor copy = *t;
    Tensor slice = t->Slice(1, 2);
    EXPECT_EQ(slice.flat<float>()[0], 4.0f);
    Tensor deep = t->DeepCopy();
    EXPECT_TRUE(deep.RefCountIsOne());
    EXPECT_NE(deep.raw_data(), data);
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
}

TEST(TensorTest, ExternalMemoryOfTheWrongKindIsRefusedAndReleased) {
  alignas(16) char bytes[32] = {};
  int released = 0;
  StatusOr<Tensor> s = Tensor::FromExternal(DT_STRING, TensorShape({1}), bytes,
                                            [&] { ++released; });
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(released, 1);
  StatusOr<Tensor> m = Tensor::FromExternal(DT_FLOAT, TensorShape({2}),
                                            bytes + 1, [&] { ++released; });
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("aligned"), std::string::npos);
  EXPECT_EQ(released, 2);
}

TEST(TensorTest, StringTensors) {
  Tensor t(DT_STRING, TensorShape({2}));
  t.flat<tstring>()[0] = "hello";
  t.flat<tstring>()[1] = std::string(1000, 'x');
  Tensor c = t.DeepCopy();
  EXPECT_EQ(c.flat<tstring>()[1].size(), 1000u);
  TensorProto p;
  t.AsProtoField(&p);
  auto back = Tensor::FromProto(p);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->flat<tstring>()[0], "hello");
}

TEST(TensorProtoTest, ShortListIsPaddedWithLastValue) {
  // As in TF's while_loop graph: float_val: 1.0 with shape [2,2].
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(2);
  p.mutable_tensor_shape()->add_dim()->set_size(2);
  p.add_float_val(3.0f);
  p.add_float_val(1.0f);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->flat<float>()[0], 3.0f);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(t->flat<float>()[i], 1.0f);
}

TEST(TensorProtoTest, EmptyListIsZeros) {
  TensorProto p;
  p.set_dtype(DT_INT64);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok());
  for (auto v : t->flat<int64_t>()) EXPECT_EQ(v, 0);
}

TEST(TensorProtoTest, ContentRoundTrip) {
  Tensor t = Tensor::FromVector<double>({1.5, -2.25, 3}, TensorShape({3}));
  TensorProto p;
  t.AsProtoTensorContent(&p);
  EXPECT_EQ(p.tensor_content().size(), 24u);
  auto back = Tensor::FromProto(p);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->flat<double>()[1], -2.25);
  p.mutable_tensor_content()->resize(20);  // Truncated content.
  EXPECT_EQ(Tensor::FromProto(p).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorProtoTest, BadProtos) {
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(-3);
  EXPECT_FALSE(Tensor::FromProto(p).ok());
  TensorProto q;
  q.set_dtype(static_cast<DataType>(77));
  EXPECT_FALSE(Tensor::FromProto(q).ok());
}

TEST(TensorTest, SummarizeValue) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape({2, 2}));
  EXPECT_EQ(t.SummarizeValue(), "[[1, 2], [3, 4]]");
  EXPECT_EQ(Tensor::Scalar<float>(0.5f).SummarizeValue(), "0.5");
}

TEST(AllocatorTest, Stats) {
  Allocator* a = cpu_allocator();
  const auto before = a->GetStats();
  {
    Tensor t(a, DT_FLOAT, TensorShape({1000}));
    const auto during = a->GetStats();
    EXPECT_GE(during.bytes_in_use - before.bytes_in_use, 4000);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
  }
  EXPECT_EQ(a->GetStats().bytes_in_use, before.bytes_in_use);
}

TEST(TypesTest, HalfConversions) {
  for (float f :
       {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f) << f;
  }
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.5f)), 1.5f);
  DataType dt;
  ASSERT_TRUE(DataTypeFromString("DT_INT32", &dt));
  EXPECT_EQ(dt, DT_INT32);
  EXPECT_EQ(DataTypeString(DT_FLOAT_REF), "float_ref");
}

}  // namespace
}  // namespace runnel
