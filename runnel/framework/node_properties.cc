#include "runnel/framework/node_properties.h"

namespace runnel {

StatusOr<std::shared_ptr<const NodeProperties>> NodeProperties::Create(
    std::string name, std::string op, std::string requested_device,
    AttrMap attrs) {
  auto p = std::make_shared<NodeProperties>();
  p->op_reg = OpRegistry::Global()->LookUp(op);
  if (p->op_reg == nullptr) {
    return errors::NotFound("node '", name, "': op type not registered: '", op,
                            "'");
  }
  auto where = [&](const Status& s) {
    return errors::Prefix(s, absl::StrCat("node '", name, "' (", op, "): "));
  };
  AddDefaultsToAttrs(p->op_reg->op_def, &attrs);
  if (Status s = ValidateAttrs(p->op_reg->op_def, attrs); !s.ok())
    return where(s);
  if (Status s = InOutTypesForNode(p->op_reg->op_def, attrs, &p->input_types,
                                   &p->output_types);
      !s.ok()) {
    return where(s);
  }
  p->name = std::move(name);
  p->op = std::move(op);
  p->requested_device = std::move(requested_device);
  p->attrs = std::move(attrs);
  return std::shared_ptr<const NodeProperties>(std::move(p));
}

}  // namespace runnel
