// TensorFlow's remapper (grappler's "remapping" pass) for CPU contractions:
// a contraction followed by its bias (or inference batch norm) and an
// activation becomes one node, so a step runs one kernel and one pass over
// the product instead of three (runnel/ops/fusion_attrs.h has the
// kernels' side):
//
//   MatMul -> BiasAdd [-> A]                     => _FusedMatMul
//   Conv2D -> BiasAdd [-> A]                     => _FusedConv2D
//   Conv2D -> FusedBatchNorm{,V2,V3}(is_training=false) [-> A]
//                                                => _FusedConv2D
//
// where A is Relu, Relu6, Elu, LeakyRelu, Tanh or Sigmoid. The fused node
// takes the name, devices and consumers of the last node of its pattern, so
// fetches and consumers need no rewiring; it has the contraction's data
// inputs, then the bias (or scale, offset, mean, variance), and every
// control input of the nodes it replaces.
//
// A pattern is fused only when it is safe to: float or double, every node
// on the same assigned device, a kernel for the fused op on that device,
// the inner nodes' outputs consumed by the next node of the pattern only
// (not fetched, no control edges out), no node of it named in `keep`, and,
// for batch norm, only its first output used. In training graphs the gradients
// read the contraction's inputs, the bias-add's incoming gradient and the
// activation's output, never the inner products, so the forward layers
// fuse there too. Results equal the unfused graph's up to float rounding
// (batch norm folds into a per-channel scale and shift).
//
// Runs in the step compiler after CSE and constant folding
// (runnel/graph/optimizer.h, GraphOptimizerOptions::remapping): on by
// default as in TensorFlow; GraphOptions.rewrite_options.remapping = OFF or
// RUNNEL_REMAPPING=0 in the environment turns it off.
//
// Thread safety: mutates `g`, which must not be shared while it runs.
#ifndef RUNNEL_GRAPH_REMAPPER_H_
#define RUNNEL_GRAPH_REMAPPER_H_

#include <string>

#include "absl/container/flat_hash_set.h"
#include "runnel/base/status.h"
#include "runnel/graph/graph.h"

namespace runnel {

// Fuses every pattern above in `g`; returns how many fused nodes it made.
// Errors: a graph that cannot be sorted topologically, or an internal
// failure to edit `g`.
StatusOr<int> FuseContractions(Graph* g,
                               const absl::flat_hash_set<std::string>& keep);

// False when RUNNEL_REMAPPING is set to 0 (for runs that compare fused and
// unfused graphs); true otherwise.
bool RemappingEnabledByEnvironment();

}  // namespace runnel

#endif  // RUNNEL_GRAPH_REMAPPER_H_
