#include "runnel/framework/memory_types.h"

#include <gtest/gtest.h>

#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

REGISTER_OP("MemTypesTestOp")
    .Input("values: N * T")
    .Input("shape: int64")
    .Input("scale: float")
    .Output("output: T")
    .Output("count: int32")
    .Attr("N: int >= 1")
    .Attr("T: {float, int32}")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("A test op.");

class NothingKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};
REGISTER_KERNEL_BUILDER(Name("MemTypesTestOp").Device(kDeviceCpu),
                        NothingKernel);
// A pretend accelerator whose kernel keeps the shape (and its list of
// values) in host memory.
REGISTER_KERNEL_BUILDER(Name("MemTypesTestOp")
                            .Device("MEMTYPESDEV")
                            .HostMemory("values")
                            .HostMemory("shape"),
                        NothingKernel);

std::shared_ptr<const NodeProperties> Node(DataType t, int n) {
  AttrMap attrs;
  attrs["T"].set_type(t);
  attrs["N"].set_i(n);
  auto p = NodeProperties::Create("x", "MemTypesTestOp", "", attrs);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(MemoryTypesTest, CpuHasOnlyDeviceMemory) {
  std::vector<MemoryType> in, out;
  ASSERT_TRUE(
      MemoryTypesForNode(kDeviceCpu, *Node(DT_FLOAT, 2), &in, &out).ok());
  ASSERT_EQ(in.size(), 4u);
  ASSERT_EQ(out.size(), 2u);
  for (MemoryType m : in) EXPECT_EQ(m, MemoryType::kDeviceMemory);
  for (MemoryType m : out) EXPECT_EQ(m, MemoryType::kDeviceMemory);
}

TEST(MemoryTypesTest, HostMemoryArgsAndInt32OnOtherDevices) {
  std::vector<MemoryType> in, out;
  ASSERT_TRUE(
      MemoryTypesForNode("MEMTYPESDEV", *Node(DT_FLOAT, 2), &in, &out).ok());
  // values (2 of them) and shape are HostMemory args; scale is not.
  EXPECT_EQ(in, (std::vector<MemoryType>{
                    MemoryType::kHostMemory, MemoryType::kHostMemory,
                    MemoryType::kHostMemory, MemoryType::kDeviceMemory}));
  // count is int32, which stays on the host off the CPU.
  EXPECT_EQ(out, (std::vector<MemoryType>{MemoryType::kDeviceMemory,
                                          MemoryType::kHostMemory}));
}

TEST(MemoryTypesTest, NoKernelIsNotFound) {
  std::vector<MemoryType> in, out;
  Status s = MemoryTypesForNode("NODEVICE", *Node(DT_FLOAT, 1), &in, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
}

}  // namespace
}  // namespace runnel
