#include "runnel/runtime/placement_cost_model.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runnel/framework/attr_value.h"
#include "runnel/framework/types.h"
#include "runnel/graph/algorithm.h"
#include "runnel/graph/shape_refiner.h"

namespace runnel {
namespace {

double Elements(const PartialTensorShape& s, int64_t unknown) {
  if (s.unknown_rank()) return 1.0;
  double n = 1.0;
  for (int i = 0; i < s.dims(); ++i) {
    const int64_t d = s.dim_size(i);
    n *= static_cast<double>(d < 0 ? unknown : d);
  }
  return n;
}

// Dimension `i` of `s` (negative: from the end); `unknown` where not known.
double Dim(const PartialTensorShape& s, int i, int64_t unknown) {
  if (s.unknown_rank()) return static_cast<double>(unknown);
  if (i < 0) i += s.dims();
  if (i < 0 || i >= s.dims() || s.dim_size(i) < 0) {
    return static_cast<double>(unknown);
  }
  return static_cast<double>(s.dim_size(i));
}

bool BoolAttr(const Node& n, const char* name) {
  bool v = false;
  return GetAttr(n.attrs(), name, &v).ok() && v;
}

// Immutable once built; shared by the two cost functions.
struct CostTable {
  std::vector<double> compute;                    // By node id.
  std::vector<std::vector<double>> output_bytes;  // By node id, output.
  ShapeCostModelOptions options;
};

}  // namespace

double EstimatedFlops(const Node& n,
                      const std::vector<PartialTensorShape>& inputs,
                      const std::vector<PartialTensorShape>& outputs,
                      int64_t unknown_dimension) {
  const int64_t u = unknown_dimension;
  auto in = [&](int i) {
    return i < static_cast<int>(inputs.size()) ? inputs[i]
                                               : PartialTensorShape();
  };
  const double out0 = outputs.empty() ? 1.0 : Elements(outputs[0], u);
  const std::string& op = n.type_string();
  if (op == "MatMul") {
    const double k = Dim(in(0), BoolAttr(n, "transpose_a") ? 0 : 1, u);
    return 2.0 * out0 * k;
  }
  if (op == "BatchMatMul" || op == "BatchMatMulV2") {
    const double k = Dim(in(0), BoolAttr(n, "adj_x") ? -2 : -1, u);
    return 2.0 * out0 * k;
  }
  // NHWC data, HWIO filters.
  if (op == "Conv2D") {
    const PartialTensorShape f = in(1);
    return 2.0 * out0 * Dim(f, 0, u) * Dim(f, 1, u) * Dim(f, 2, u);
  }
  if (op == "Conv2DBackpropInput") {
    const PartialTensorShape f = in(1);
    return 2.0 * out0 * Dim(f, 0, u) * Dim(f, 1, u) * Dim(f, 3, u);
  }
  if (op == "Conv2DBackpropFilter") {
    const PartialTensorShape dy = in(2);
    return 2.0 * out0 * Dim(dy, 0, u) * Dim(dy, 1, u) * Dim(dy, 2, u);
  }
  double elements = 0.0;
  for (const PartialTensorShape& s : inputs) elements += Elements(s, u);
  for (const PartialTensorShape& s : outputs) elements += Elements(s, u);
  return elements;
}

PlacementCostModel ShapeCostModel(const Graph& graph,
                                  const ShapeCostModelOptions& options) {
  auto table = std::make_shared<CostTable>();
  table->options = options;
  table->compute.assign(graph.num_node_ids(), options.node_overhead_seconds);
  table->output_bytes.resize(graph.num_node_ids());

  std::vector<Node*> order;
  if (!TopologicalSort(graph, &order).ok()) order = graph.nodes();
  ShapeRefiner refiner;
  const int64_t u = options.unknown_dimension;
  for (const Node* n : order) {
    // A failed shape function leaves the outputs unknown: still estimable.
    (void)refiner.AddNode(n);
    std::vector<PartialTensorShape> inputs(n->num_inputs());
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() || e->dst_input() >= n->num_inputs()) continue;
      inputs[e->dst_input()] = refiner.OutputShape(e->src(), e->src_output());
    }
    std::vector<PartialTensorShape> outputs(n->num_outputs());
    std::vector<double>& bytes = table->output_bytes[n->id()];
    bytes.resize(n->num_outputs());
    for (int i = 0; i < n->num_outputs(); ++i) {
      outputs[i] = refiner.OutputShape(n, i);
      const int size = DataTypeSize(BaseType(n->output_type(i)));
      bytes[i] = Elements(outputs[i], u) * (size > 0 ? size : 8);
    }
    table->compute[n->id()] =
        options.node_overhead_seconds +
        EstimatedFlops(*n, inputs, outputs, u) / options.flops_per_second;
  }

  PlacementCostModel model;
  model.compute_cost = [table](const Node& n, const Device&) {
    return n.id() < static_cast<int>(table->compute.size())
               ? table->compute[n.id()]
               : table->options.node_overhead_seconds;
  };
  model.transfer_cost = [table](const Edge& e, const Device& src,
                                const Device& dst) {
    const ShapeCostModelOptions& o = table->options;
    double bytes = 0.0;
    const int id = e.src()->id();
    if (!e.IsControlEdge() &&
        id < static_cast<int>(table->output_bytes.size()) &&
        e.src_output() < static_cast<int>(table->output_bytes[id].size())) {
      bytes = table->output_bytes[id][e.src_output()];
    }
    const DeviceName& a = src.parsed_name();
    const DeviceName& b = dst.parsed_name();
    const bool same_task =
        a.job == b.job && a.replica == b.replica && a.task == b.task;
    return same_task
               ? o.local_latency_seconds + bytes / o.local_bytes_per_second
               : o.remote_latency_seconds + bytes / o.remote_bytes_per_second;
  };
  return model;
}

}  // namespace runnel
