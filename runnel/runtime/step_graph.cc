#include "runnel/runtime/step_graph.h"

#include "runnel/framework/attr_value.h"

namespace runnel {

std::vector<PartialTensorShape> DeclaredFeedShapes(const Graph& full,
                                                   const PruneInfo& info) {
  std::vector<PartialTensorShape> shapes;
  for (const TensorId& id : info.feeds) {
    PartialTensorShape shape;
    const Node* producer = full.FindNode(id.node);
    const std::string& op = producer->type_string();
    // Note [Feed shape checks]: TensorFlow's runtime never checks feeds
    // against a placeholder's shape, and real TF graphs declare scalar shapes
    // for placeholders fed with vectors (graphs/tf_addition: shape [] fed
    // [1]). We check declared shapes of rank >= 1 only, which catches the
    // common mistake (a wrong batch layout) without rejecting such graphs.
    if ((op == "Placeholder" || op == "PlaceholderV2" ||
         op == "PlaceholderWithDefault") &&
        GetAttr(producer->attrs(), "shape", &shape).ok() && shape.dims() >= 1) {
      shapes.push_back(shape);
    } else {
      shapes.push_back(PartialTensorShape());
    }
  }
  return shapes;
}

Status CheckFeedValues(
    const PruneInfo& info, const std::vector<PartialTensorShape>& feed_shapes,
    const std::vector<std::pair<std::string, Tensor>>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].second;
    const DataType want = info.feed_types[i];
    if (t.dtype() != want) {
      return errors::InvalidArgument(
          "feed '", inputs[i].first, "' has dtype ", DataTypeString(t.dtype()),
          " but the graph expects ", DataTypeString(want));
    }
    if (!t.IsInitialized()) {
      return errors::InvalidArgument("feed '", inputs[i].first,
                                     "' is an uninitialized tensor");
    }
    if (!feed_shapes[i].IsCompatibleWith(t.shape())) {
      return errors::InvalidArgument(
          "feed '", inputs[i].first, "' has shape ", t.shape().DebugString(),
          " but the placeholder's shape is ", feed_shapes[i].DebugString());
    }
  }
  return absl::OkStatus();
}

void PlaceFeedsAndFetches(const std::string& default_device, Graph* g) {
  for (Node* n : g->nodes()) {
    if (!n->assigned_device_name().empty()) continue;
    std::string device = default_device;
    if (n->IsRetval()) {
      for (const Edge* e : n->in_edges()) {
        if (!e->IsControlEdge()) device = e->src()->assigned_device_name();
      }
    } else {
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && !e->dst()->assigned_device_name().empty()) {
          device = e->dst()->assigned_device_name();
          break;
        }
      }
    }
    if (device.empty()) device = default_device;
    n->set_assigned_device_name(device);
  }
}

}  // namespace runnel
