#include "runnel/runtime/step_graph.h"

#include <algorithm>

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

Status CheckFeedValue(const std::string& name, const Tensor& t, DataType want,
                      const PartialTensorShape& shape) {
  if (t.dtype() != want) {
    return errors::InvalidArgument(
        "feed '", name, "' has dtype ", DataTypeString(t.dtype()),
        " but the graph expects ", DataTypeString(want));
  }
  if (!t.IsInitialized()) {
    return errors::InvalidArgument("feed '", name,
                                   "' is an uninitialized tensor");
  }
  if (!shape.IsCompatibleWith(t.shape())) {
    return errors::InvalidArgument(
        "feed '", name, "' has shape ", t.shape().DebugString(),
        " but the placeholder's shape is ", shape.DebugString());
  }
  return absl::OkStatus();
}

Status CheckFeedValues(
    const PruneInfo& info, const std::vector<PartialTensorShape>& feed_shapes,
    const std::vector<std::pair<std::string, Tensor>>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(CheckFeedValue(inputs[i].first, inputs[i].second,
                                   info.feed_types[i], feed_shapes[i]));
  }
  return absl::OkStatus();
}

Status PartialRunProgress::Mark(const std::vector<int>& feeds,
                                const std::vector<std::string>& feed_names,
                                const std::vector<int>& fetches,
                                const std::vector<std::string>& fetch_names) {
  for (size_t k = 0; k < feeds.size(); ++k) {
    if (fed_[feeds[k]] ||
        std::count(feeds.begin(), feeds.begin() + k, feeds[k]) > 0) {
      return errors::InvalidArgument("The feed ", feed_names[k],
                                     " has already been fed.");
    }
  }
  for (size_t k = 0; k < fetches.size(); ++k) {
    if (fetched_[fetches[k]] ||
        std::count(fetches.begin(), fetches.begin() + k, fetches[k]) > 0) {
      return errors::InvalidArgument("The fetch ", fetch_names[k],
                                     " has already been fetched.");
    }
  }
  for (int i : feeds) fed_[i] = true;
  for (int i : fetches) fetched_[i] = true;
  return absl::OkStatus();
}

bool PartialRunProgress::complete() const {
  return std::all_of(fed_.begin(), fed_.end(), [](bool b) { return b; }) &&
         std::all_of(fetched_.begin(), fetched_.end(),
                     [](bool b) { return b; });
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
