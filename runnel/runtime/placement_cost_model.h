// Estimates for the greedy cost-model placer (runtime/placer.h, Note
// [Placement rules] 6), from the graph's shape functions, as the whitepaper's
// §3.2.1 describes them: "estimates of the sizes (in bytes) of the input and
// output tensors for each graph node, along with estimates of the
// computation time required for each node when presented with its input
// tensors".
//
//   PlacerOptions options;
//   options.strategy = PlacementStrategy::kGreedyCostModel;
//   options.cost_model = ShapeCostModel(*graph);
//   RETURN_IF_ERROR(PlaceGraph(options, devices, graph));
//
// Note [Shape cost model]
//  * Shapes. A ShapeRefiner runs every node's shape function once, in
//    topological order (a node whose shape function fails, or that sits in a
//    loop behind a back edge, has unknown output shapes). An unknown
//    dimension counts as `unknown_dimension` (a typical batch), an unknown
//    rank as a scalar.
//  * Compute. A node costs node_overhead_seconds + flops / flops_per_second,
//    where flops is
//      MatMul, BatchMatMul(V2):  2 * |output| * k (the contracted size);
//      Conv2D:                   2 * |output| * fh * fw * in_channels;
//      Conv2DBackpropInput:      2 * |output| * fh * fw * out_channels;
//      Conv2DBackpropFilter:     2 * |output| * out_h * out_w * batch;
//      any other op:             |outputs| + |inputs| (one pass over its
//                                data: most other kernels are memory-bound);
//    |x| being a tensor's element count. The rate is the same on every
//    device (all devices are CPUs today; a GPU factory would scale it).
//  * Transfers. A data edge between two devices costs latency +
//    bytes / bandwidth, bytes = |tensor| * its dtype's size (8 for types
//    without a fixed size). Devices of one task (same job, replica and
//    task) share memory: a hand-off through the local rendezvous. Devices of
//    different tasks cross the network: the remote latency and bandwidth.
//    Control edges and same-device edges are free (the placer never asks).
// The defaults are orders of magnitude of a 2-core AVX-512 machine (tens of
// GFLOP/s per core on small GEMMs; ≈1 µs per local Send/Recv pair,
// benchmarks/sendrecv; hundreds of µs per RPC and about 1 GB/s over
// loopback gRPC, benchmarks/distributed_transfer); only their ratios matter
// to the placer.
//
// Thread safety: the returned functions share an immutable table and may be
// called from any thread; they answer for `graph` as it was when
// ShapeCostModel ran (nodes are looked up by id; a node added later costs
// node_overhead_seconds).
#ifndef RUNNEL_RUNTIME_PLACEMENT_COST_MODEL_H_
#define RUNNEL_RUNTIME_PLACEMENT_COST_MODEL_H_

#include <cstdint>

#include "runnel/graph/graph.h"
#include "runnel/runtime/placer.h"

namespace runnel {

struct ShapeCostModelOptions {
  double flops_per_second = 5e10;
  double node_overhead_seconds = 1e-6;
  double local_latency_seconds = 1e-6;
  double local_bytes_per_second = 1e10;
  double remote_latency_seconds = 1e-4;
  double remote_bytes_per_second = 1e9;
  int64_t unknown_dimension = 32;
};

// Node and edge estimates for PlacerOptions.cost_model (Note [Shape cost
// model]). Never fails: what cannot be inferred is estimated as documented.
PlacementCostModel ShapeCostModel(const Graph& graph,
                                  const ShapeCostModelOptions& options = {});

// The estimated flops of `n` given its input and output shapes (Note [Shape
// cost model], Compute); exposed for tests.
double EstimatedFlops(const Node& n,
                      const std::vector<PartialTensorShape>& inputs,
                      const std::vector<PartialTensorShape>& outputs,
                      int64_t unknown_dimension);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_PLACEMENT_COST_MODEL_H_
