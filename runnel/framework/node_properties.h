// What a kernel (or shape inference) needs to know about a node: its name,
// op, requested device, attrs (defaults filled in) and slot dtypes. Shared,
// immutable once built.
#ifndef RUNNEL_FRAMEWORK_NODE_PROPERTIES_H_
#define RUNNEL_FRAMEWORK_NODE_PROPERTIES_H_

#include <memory>
#include <string>

#include "runnel/framework/attr_value.h"
#include "runnel/framework/op.h"

namespace runnel {

// Internal attrs ('_'-prefixed, allowed on any node) that graph passes set
// for kernels to read.
//
// kBf16ComputeAttr (bool): compute the node's products in bfloat16 with fp32
// accumulation where the CPU can (runnel/graph/mixed_precision.h sets it on
// float MatMul and Conv2D nodes, their fused forms and conv gradients).
inline constexpr char kBf16ComputeAttr[] = "_runnel_bf16";

struct NodeProperties {
  std::string name;
  std::string op;
  std::string requested_device;
  AttrMap attrs;
  const OpRegistrationData* op_reg = nullptr;  // Never null once created.
  DataTypeVector input_types;
  DataTypeVector output_types;

  const OpDef& op_def() const { return op_reg->op_def; }

  // Looks up `op`, fills attr defaults, validates attrs and computes slot
  // types. Errors name the node: "node 'x' (MatMul): missing attr 'T'".
  static StatusOr<std::shared_ptr<const NodeProperties>> Create(
      std::string name, std::string op, std::string requested_device,
      AttrMap attrs);
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_NODE_PROPERTIES_H_
