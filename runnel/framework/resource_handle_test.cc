#include "runnel/framework/resource_handle.h"

#include <gtest/gtest.h>

#include "runnel/framework/tensor.h"

namespace runnel {
namespace {

struct FakeResource {};

ResourceHandle SampleHandle() {
  ResourceHandle h = MakeResourceHandle<FakeResource>(
      "localhost", "v", "/job:localhost/replica:0/task:0/device:CPU:0");
  h.set_dtypes_and_shapes({{DT_FLOAT, PartialTensorShape({2, -1})}});
  return h;
}

TEST(ResourceHandleTest, ProtoRoundTrip) {
  ResourceHandle h = SampleHandle();
  EXPECT_EQ(h.hash_code(), ResourceTypeHash<FakeResource>());
  ResourceHandleProto p;
  h.AsProto(&p);
  EXPECT_EQ(p.container(), "localhost");
  EXPECT_EQ(p.name(), "v");
  EXPECT_EQ(p.dtypes_and_shapes_size(), 1);
  auto back = ResourceHandle::FromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, h);
  ASSERT_EQ(back->dtypes_and_shapes().size(), 1u);
  EXPECT_EQ(back->dtypes_and_shapes()[0].dtype, DT_FLOAT);
  EXPECT_EQ(back->dtypes_and_shapes()[0].shape, PartialTensorShape({2, -1}));
  EXPECT_NE(h.DebugString().find("name=\"v\""), std::string::npos)
      << h.DebugString();

  p.mutable_dtypes_and_shapes(0)->mutable_shape()->add_dim()->set_size(-5);
  EXPECT_EQ(ResourceHandle::FromProto(p).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ResourceHandleTest, ResourceTensorsHoldHandles) {
  Tensor t(DT_RESOURCE, TensorShape({3}));
  EXPECT_EQ(t.TotalBytes(), 3 * sizeof(ResourceHandle));
  for (const ResourceHandle& h : t.flat<ResourceHandle>())
    EXPECT_TRUE(h.name().empty());
  t.flat<ResourceHandle>()[1] = SampleHandle();
  t.flat<ResourceHandle>()[2].set_name(
      std::string(1000, 'x'));  // Heap-allocated name.

  Tensor copy = t.DeepCopy();
  EXPECT_FALSE(copy.SharesBufferWith(t));
  EXPECT_EQ(copy.flat<ResourceHandle>()[1], SampleHandle());
  t.flat<ResourceHandle>()[1].set_name("changed");
  EXPECT_EQ(copy.flat<ResourceHandle>()[1].name(), "v");

  Tensor row = copy.Slice(1, 3);
  EXPECT_EQ(row.flat<ResourceHandle>()[0].name(), "v");
  EXPECT_EQ(row.flat<ResourceHandle>()[1].name().size(), 1000u);
  EXPECT_NE(copy.DebugString().find("ResourceHandle"), std::string::npos);

  auto alloc =
      Tensor::Allocate(cpu_allocator(), DT_RESOURCE, TensorShape({2, 2}));
  ASSERT_TRUE(alloc.ok());
  EXPECT_EQ(alloc->NumElements(), 4);
}

TEST(ResourceHandleTest, TensorProtoRoundTrip) {
  Tensor t(DT_RESOURCE, TensorShape({2}));
  t.flat<ResourceHandle>()[0] = SampleHandle();
  t.flat<ResourceHandle>()[1].set_name("w");
  TensorProto p;
  t.AsProtoField(&p);
  EXPECT_EQ(p.dtype(), DT_RESOURCE);
  ASSERT_EQ(p.resource_handle_val_size(), 2);
  EXPECT_EQ(p.resource_handle_val(1).name(), "w");
  TensorProto content;
  t.AsProtoTensorContent(&content);  // Handles always go to the typed field.
  EXPECT_EQ(content.resource_handle_val_size(), 2);
  EXPECT_TRUE(content.tensor_content().empty());

  auto back = Tensor::FromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), TensorShape({2}));
  EXPECT_EQ(back->flat<ResourceHandle>()[0], SampleHandle());
  EXPECT_EQ(back->flat<ResourceHandle>()[1].name(), "w");

  // A short list pads with its last value; an empty one gives empty handles.
  p.mutable_tensor_shape()->mutable_dim(0)->set_size(4);
  back = Tensor::FromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->flat<ResourceHandle>()[3].name(), "w");
  p.clear_resource_handle_val();
  back = Tensor::FromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->flat<ResourceHandle>()[0].name().empty());
}

}  // namespace
}  // namespace runnel
