#include "runnel/framework/op.h"

#include <gtest/gtest.h>

#include "runnel/framework/node_properties.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

REGISTER_OP("TestOpConcat")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: {float, int32}")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("padding: {'SAME', 'VALID'} = 'SAME'")
    .Attr("strides: list(int) = [1, 1]")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("A test op.\nLonger description.");

TEST(OpRegistryTest, ParsesSpecs) {
  const OpDef* def;
  ASSERT_TRUE(OpRegistry::Global()->LookUpOpDef("TestOpConcat", &def).ok());
  EXPECT_EQ(def->input_arg(0).number_attr(), "N");
  EXPECT_EQ(def->input_arg(0).type_attr(), "T");
  EXPECT_EQ(def->summary(), "A test op.");
  ASSERT_EQ(def->attr_size(), 5);
  EXPECT_EQ(def->attr(0).minimum(), 2);
  EXPECT_EQ(def->attr(2).default_value().type(), DT_INT32);
  EXPECT_EQ(def->attr(3).allowed_values().list().s_size(), 2);
  EXPECT_EQ(def->attr(4).default_value().list().i_size(), 2);
}

TEST(OpRegistryTest, NodePropertiesValidate) {
  AttrMap attrs;
  attrs["N"] = MakeAttrValue(3);
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto p = NodeProperties::Create("c", "TestOpConcat", "", attrs);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->input_types.size(), 4u);
  EXPECT_EQ((*p)->input_types[3], DT_INT32);
  EXPECT_EQ((*p)->attrs.at("padding").s(), "SAME");

  attrs["T"] = MakeAttrValue(DT_DOUBLE);
  auto bad = NodeProperties::Create("c", "TestOpConcat", "", attrs);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'c'"), std::string::npos)
      << bad.status();

  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["N"] = MakeAttrValue(1);
  EXPECT_FALSE(NodeProperties::Create("c", "TestOpConcat", "", attrs).ok());

  // A list length no real graph has is refused (a 30-byte graph asking
  // for a million outputs, found by the kernel fuzzer).
  attrs["N"] = MakeAttrValue(int64_t{1} << 20);
  auto huge = NodeProperties::Create("c", "TestOpConcat", "", attrs);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("attr 'N' is 1048576"),
            std::string::npos)
      << huge.status();
  attrs["N"] = MakeAttrValue(int64_t{1} << 16);
  EXPECT_TRUE(NodeProperties::Create("c", "TestOpConcat", "", attrs).ok());

  attrs.erase("N");
  auto missing = NodeProperties::Create("c", "TestOpConcat", "", attrs);
  EXPECT_NE(missing.status().message().find("missing attr 'N'"),
            std::string::npos);

  EXPECT_EQ(NodeProperties::Create("x", "NoSuchOp", "", {}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(KernelRegistryTest, FailedLookupListsKernels) {
  AttrMap attrs;
  attrs["N"] = MakeAttrValue(2);
  attrs["T"] = MakeAttrValue(DT_INT32);
  auto p = NodeProperties::Create("c", "TestOpConcat", "", attrs);
  ASSERT_TRUE(p.ok());
  const KernelDef* def;
  const KernelFactory* f;
  Status s = KernelRegistry::Global()->FindKernel("CPU", **p, &def, &f);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no kernels at all"), std::string::npos) << s;
}

}  // namespace
}  // namespace runnel
