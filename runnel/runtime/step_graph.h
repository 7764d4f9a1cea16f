// Helpers for the graph of one step signature (feeds, fetches, targets),
// shared by the in-process session and the distributed master: what the
// feeds must look like, and where the _Arg/_Retval nodes that pruning adds
// (runnel/graph/prune.h) go.
#ifndef RUNNEL_RUNTIME_STEP_GRAPH_H_
#define RUNNEL_RUNTIME_STEP_GRAPH_H_

#include <string>
#include <utility>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/prune.h"

namespace runnel {

// The shape each feed must have: a placeholder's declared shape when it has
// rank >= 1, unknown otherwise (Note [Feed shape checks] in the .cc).
// `full` is the graph `info` was pruned from.
std::vector<PartialTensorShape> DeclaredFeedShapes(const Graph& full,
                                                   const PruneInfo& info);

// InvalidArgument naming the feed when inputs[i] has the wrong dtype, is
// uninitialized, or does not fit feed_shapes[i].
Status CheckFeedValues(
    const PruneInfo& info, const std::vector<PartialTensorShape>& feed_shapes,
    const std::vector<std::pair<std::string, Tensor>>& inputs);

// Assigns each unplaced node of `g` (the _Arg/_Retval nodes pruning added)
// the device of its tensor: a feed its first placed consumer's, a fetch its
// producer's, else `default_device`. So neither copies.
void PlaceFeedsAndFetches(const std::string& default_device, Graph* g);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_STEP_GRAPH_H_
