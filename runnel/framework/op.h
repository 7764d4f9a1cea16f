// The op registry: one record per op, registered at static-initialisation
// time with a fluent builder in TensorFlow's spelling:
//
//   REGISTER_OP("MatMul")
//       .Input("a: T").Input("b: T").Output("product: T")
//       .Attr("transpose_a: bool = false")
//       .Attr("T: {float, double}")
//       .SetShapeFn(MatMulShape)
//       .Doc("Multiplies matrix a by matrix b.");
//
// Arg specs: "x: T" (type attr), "x: float" (fixed), "xs: N * T" (number
// attr), "xs: Tlist" (list(type) attr), "x: Ref(T)" (reference input).
// Attr specs: "name: int", "name: list(int) = [1, 1]", "T: {float, int32}",
// "T: numbertype", "padding: {'SAME', 'VALID'}", "N: int >= 1",
// "dtype: type = DT_FLOAT", "shape: shape = { unknown_rank: true }".
// An identifier used in an arg spec but never declared becomes a "type" attr.
//
// Thread safety: registration happens before main; lookups are read-only and
// may happen from any thread.
#ifndef RUNNEL_FRAMEWORK_OP_H_
#define RUNNEL_FRAMEWORK_OP_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/op_def.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {

struct OpRegistrationData {
  OpDef op_def;
  ShapeFn shape_fn;
  // The op's kernel reaches outside the process's memory: it opens, writes,
  // lists or deletes files (savers, readers, ReadFile/WriteFile, ...). Kept
  // here, not in OpDef, so OpDef stays TensorFlow's wire format. Sessions in
  // untrusted mode refuse such nodes (SessionOptions::untrusted).
  bool does_io = false;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string op_name);

  OpDefBuilder& Input(std::string spec);
  OpDefBuilder& Output(std::string spec);
  OpDefBuilder& Attr(std::string spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetIsCommutative();
  OpDefBuilder& SetIsAggregate();
  OpDefBuilder& SetAllowsUninitializedInput();
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  // Marks the op as touching the filesystem or the process (see
  // OpRegistrationData::does_io). Every such op must say so: untrusted mode
  // relies on it, and ops_registry_test checks the known ones.
  OpDefBuilder& SetDoesIO();
  // First line is the summary, the rest the description.
  OpDefBuilder& Doc(std::string text);

  Status Finalize(OpRegistrationData* data) const;

 private:
  OpDef op_def_;
  std::vector<std::string> inputs_, outputs_, attrs_;
  std::string doc_;
  ShapeFn shape_fn_;
  bool does_io_ = false;
};

class OpRegistry {
 public:
  static OpRegistry* Global();

  // AlreadyExists if the name is taken.
  Status Register(std::unique_ptr<OpRegistrationData> data);
  // nullptr if unknown.
  const OpRegistrationData* LookUp(absl::string_view op) const;
  // NotFound with a helpful message if unknown.
  Status LookUpOpDef(absl::string_view op, const OpDef** op_def) const;
  std::vector<std::string> ListOps() const;
  // True if `op` is registered with SetDoesIO(). An unknown op is reported as
  // doing I/O (false would let an unregistered name slip through a check).
  bool DoesIO(absl::string_view op) const;

 private:
  std::map<std::string, std::unique_ptr<OpRegistrationData>, std::less<>> ops_;
};

namespace register_op {
struct OpDefBuilderReceiver {
  // CHECK-fails on an invalid spec: that is a bug in the op's registration.
  OpDefBuilderReceiver(const OpDefBuilder& builder);  // NOLINT
};
}  // namespace register_op

#define REGISTER_OP(name) REGISTER_OP_UNIQ_HELPER(__COUNTER__, name)
#define REGISTER_OP_UNIQ_HELPER(ctr, name) REGISTER_OP_UNIQ(ctr, name)
#define REGISTER_OP_UNIQ(ctr, name)                                   \
  static ::runnel::register_op::OpDefBuilderReceiver register_op##ctr \
      [[maybe_unused]] = ::runnel::OpDefBuilder(name)

// ---------------------------------------------------------------------------
// Node-level helpers over an OpDef and a node's attrs.

// Fills in defaults for attrs the node does not set.
void AddDefaultsToAttrs(const OpDef& op_def, AttrMap* attrs);
// Checks that every attr the op declares is present with the right kind,
// allowed value and minimum, and that no unknown attr is set (names starting
// with '_' are allowed). Errors say which attr.
Status ValidateAttrs(const OpDef& op_def, const AttrMap& attrs);
// Expands arg lists (N * T, type lists) into per-slot dtypes. Ref args get
// _REF types.
Status InOutTypesForNode(const OpDef& op_def, const AttrMap& attrs,
                         DataTypeVector* inputs, DataTypeVector* outputs);
// [start, end) slot ranges for each named input and output arg.
Status NameRangesForNode(const OpDef& op_def, const AttrMap& attrs,
                         std::map<std::string, std::pair<int, int>>* inputs,
                         std::map<std::string, std::pair<int, int>>* outputs);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OP_H_
