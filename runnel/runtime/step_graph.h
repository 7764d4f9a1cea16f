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
// The same for one feed `name` whose graph dtype is `want`.
Status CheckFeedValue(const std::string& name, const Tensor& t, DataType want,
                      const PartialTensorShape& shape);

// Which feeds and fetches of one partial run (Session::PRunSetup/PRun) have
// been given; each is given once. Not thread-safe: the caller locks.
class PartialRunProgress {
 public:
  PartialRunProgress() = default;
  PartialRunProgress(size_t num_feeds, size_t num_fetches)
      : fed_(num_feeds, false), fetched_(num_fetches, false) {}

  // Marks the feeds and fetches of one PRun (indices into the setup's
  // lists; the names as the caller gave them, for errors). InvalidArgument,
  // marking nothing, when one was given before or twice here.
  Status Mark(const std::vector<int>& feeds,
              const std::vector<std::string>& feed_names,
              const std::vector<int>& fetches,
              const std::vector<std::string>& fetch_names);
  // Every feed fed and every fetch fetched.
  bool complete() const;

 private:
  std::vector<bool> fed_, fetched_;
};

// Assigns each unplaced node of `g` (the _Arg/_Retval nodes pruning added)
// the device of its tensor: a feed its first placed consumer's, a fetch its
// producer's, else `default_device`. So neither copies.
void PlaceFeedsAndFetches(const std::string& default_device, Graph* g);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_STEP_GRAPH_H_
