// A collective group (runnel/framework/collective.h) whose members are
// processes that all-reduce over TCP with Gloo (Debian's libgloo, the
// library PyTorch's DDP uses on CPUs): each member opens a Gloo TCP device
// on its host, the members meet in a key-value store served by one task's
// Server ("/runnel.StoreService/Set|Get": every server has one; by
// convention the chief's), exchange addresses there and connect a full
// mesh; an all-reduce is Gloo's ring algorithm (reduce-scatter then
// all-gather in 1 MB segments, two in flight), as DDP's is.
//
//   GlooGroupOptions o;
//   o.rank = task_index; o.size = num_workers;
//   o.store_address = "127.0.0.1:2223";   // the chief's server
//   o.prefix = "run-42/group-1";          // unique per job and group
//   ASSIGN_OR_RETURN(auto group, NewGlooGroup(o));
//   RETURN_IF_ERROR(RegisterCollectiveGroup(1, group));
//
// NewGlooGroup waits (at most o.timeout) until every member has joined
// (a member may start before the store's server: it retries). The store
// client and Gloo's transport are plaintext and unauthenticated (SECURITY.md).
// Gloo reports failures by exceptions; they become statuses here
// (DeadlineExceeded for a timeout, Unavailable for a lost peer).
#ifndef RUNNEL_DISTRIBUTED_GLOO_GROUP_H_
#define RUNNEL_DISTRIBUTED_GLOO_GROUP_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "runnel/base/status.h"
#include "runnel/framework/collective.h"

namespace runnel {

struct GlooGroupOptions {
  int rank = 0;
  int size = 1;
  // "host:port" of the server whose store the members meet in.
  std::string store_address;
  // Keys of this group in the store start with it: unique per job and group
  // (a store may outlive a job, or serve several groups).
  std::string prefix;
  // The address peers reach this member at (its TCP device binds there).
  std::string hostname = "127.0.0.1";
  // For meeting, and the default of each all-reduce.
  absl::Duration timeout = absl::Seconds(120);
};

StatusOr<std::shared_ptr<CollectiveGroup>> NewGlooGroup(
    const GlooGroupOptions& options);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GLOO_GROUP_H_
