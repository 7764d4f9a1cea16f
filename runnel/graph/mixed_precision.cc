#include "runnel/graph/mixed_precision.h"

#include "runnel/framework/device_name.h"
#include "runnel/framework/node_properties.h"

namespace runnel {

int MarkBf16Compute(Graph* g) {
  int marked = 0;
  for (Node* n : g->nodes()) {
    const std::string& op = n->type_string();
    if (op != "MatMul" && op != "_FusedMatMul" && op != "Conv2D" &&
        op != "_FusedConv2D" && op != "Conv2DBackpropInput" &&
        op != "Conv2DBackpropFilter") {
      continue;
    }
    DataType t;
    if (!GetAttr(n->attrs(), "T", &t).ok() || t != DT_FLOAT) continue;
    if (!n->assigned_device_name().empty()) {
      auto device = DeviceName::Parse(n->assigned_device_name());
      if (!device.ok() || device->type != kDeviceCpu) continue;
    }
    if (n->SetAttr(kBf16ComputeAttr, MakeAttrValue(true)).ok()) ++marked;
  }
  return marked;
}

}  // namespace runnel
