// Session: the client's handle on a graph and the runtime that executes it
// (whitepaper §2, §4.2).
//
//   auto session = NewSession();
//   RETURN_IF_ERROR((*session)->Create(graph_def));
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR((*session)->Run({{"x:0", x}}, {"z:0"}, {}, &out));
//
// Run executes the subgraph the fetches and targets need (partial
// execution): fed tensors replace their producers, and nodes that no fetch
// or target depends on do not run. The pruned, placed, compiled subgraph is
// cached per (feeds, fetches, targets) signature, so repeated Runs do no
// graph work.
//
// Thread safety: Run may be called concurrently from many threads. Create,
// Extend and Close are serialised against each other and against the start
// of Run.
#ifndef RUNNEL_RUNTIME_SESSION_H_
#define RUNNEL_RUNTIME_SESSION_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proto/config.pb.h"
#include "proto/graph.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"

namespace runnel {

struct SessionOptions {
  ConfigProto config;

  // Where the session runs: "" (or "local") in this process; a registered
  // scheme otherwise, e.g. "grpc://host:port" for a cluster's master
  // (runnel/distributed, which registers "grpc").
  std::string target;

  // Untrusted mode, for graphs from someone who should not reach this
  // process's files (a GraphDef downloaded, uploaded, fuzzed). Create and
  // Extend refuse, before adding anything, every node whose op is marked
  // SetDoesIO() (savers, restores, checkpoint merges, file readers: ops that
  // open, write, rename or delete files) unless its op is in
  // `allowed_io_ops` or its name is in `allowed_io_nodes`; the error is
  // PermissionDenied and names the first such node and its op. Nodes in
  // GraphDef.library functions are checked the same way (only
  // `allowed_io_ops` applies to them). Nodes of unregistered ops are left to
  // the import, which rejects them (NotFound).
  //
  // Untrusted mode does not bound time: a graph may loop forever. Set
  // RunOptions.timeout_in_ms or config.operation_timeout_in_ms as well (the
  // CLI defaults to 60 s). See SECURITY.md for what is and is not promised.
  bool untrusted = false;
  // Op types, e.g. "RestoreV2", and node names, e.g. "save/RestoreV2".
  std::vector<std::string> allowed_io_ops;
  std::vector<std::string> allowed_io_nodes;
  // Const or Placeholder nodes whose output 0 is a path the caller chose
  // (LoadSavedModel's saver filename): a checkpoint op (SaveV2, RestoreV2,
  // MergeV2Checkpoints), in the graph or in a library function, whose path
  // inputs are all derived from them is allowed (Note [Paths derived from
  // trusted roots] in runtime/untrusted_paths.h). A Placeholder root is
  // only as safe as what the caller feeds it.
  std::vector<std::string> io_path_roots;
};

// The check untrusted mode runs in Create and Extend, for callers that vet a
// graph without making a session (it runs whatever `options.untrusted`
// says): OK if `graph` holds no refused node, PermissionDenied naming the
// first one otherwise.
Status CheckUntrustedGraph(const GraphDef& graph,
                           const SessionOptions& options);

// The per-step memory limit `config` asks for, in bytes
// (ConfigProto.runnel_step_memory_limit_bytes: > 0 as given, 0 half of
// physical memory), or 0 for none (a negative field).
int64_t StepMemoryLimitBytes(const ConfigProto& config);

class Session {
 public:
  virtual ~Session() = default;

  // Loads the graph. AlreadyExists if the session has one (use Extend).
  virtual Status Create(const GraphDef& graph) = 0;
  // Adds nodes (which may refer to existing nodes by name).
  virtual Status Extend(const GraphDef& graph) = 0;

  // `inputs` are (tensor name "node:k", value) pairs; `output_tensor_names`
  // (`outputs` may be null when there are no fetches)
  // are the tensors to fetch ("node" means "node:0"); `target_node_names`
  // are nodes to run without fetching. `outputs` gets one tensor per fetch,
  // in order. `run_metadata` (may be null) receives step stats when
  // options.trace_level != NO_TRACE. Errors: InvalidArgument for bad names
  // or feeds (naming them), the failing node's error, DeadlineExceeded when
  // options.timeout_in_ms (or the config's operation_timeout_in_ms) passes,
  // Cancelled after Close.
  virtual Status Run(const RunOptions& options,
                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                     const std::vector<std::string>& output_tensor_names,
                     const std::vector<std::string>& target_node_names,
                     std::vector<Tensor>* outputs,
                     RunMetadata* run_metadata) = 0;

  Status Run(const std::vector<std::pair<std::string, Tensor>>& inputs,
             const std::vector<std::string>& output_tensor_names,
             const std::vector<std::string>& target_node_names,
             std::vector<Tensor>* outputs) {
    return Run(RunOptions(), inputs, output_tensor_names, target_node_names,
               outputs, nullptr);
  }

  // Partial runs (TF's Session::PRunSetup / PRun): one step whose feeds are
  // given, and whose fetches are taken, over several calls, so a client
  // can feed a value that depends on an earlier fetch of the same step.
  // PRunSetup names every feed, fetch and target of the step and starts it
  // (the step's nodes run as soon as what they need has been fed); each
  // PRun feeds some of the feeds and waits for some of the fetches. Each
  // feed is fed once and each fetch fetched once; the step ends, and its
  // handle is released, when every feed has been fed and every fetch
  // fetched (or at the first error, which every later PRun returns).
  // Errors: InvalidArgument for a name the setup did not list, one fed or
  // fetched twice, a value of the wrong dtype or shape, an unknown handle;
  // the failing node's error; DeadlineExceeded when a PRun waits longer
  // than the config's operation_timeout_in_ms; Cancelled after Close.
  // Sessions that cannot run partial steps return Unimplemented.
  virtual Status PRunSetup(const std::vector<std::string>& input_names,
                           const std::vector<std::string>& output_names,
                           const std::vector<std::string>& target_nodes,
                           std::string* handle);
  virtual Status PRun(const std::string& handle,
                      const std::vector<std::pair<std::string, Tensor>>& inputs,
                      const std::vector<std::string>& output_names,
                      std::vector<Tensor>* outputs);

  // Cancels running steps and releases resources; later calls fail.
  virtual Status Close() = 0;

  // Full names of the session's devices.
  virtual std::vector<std::string> ListDevices() const = 0;
};

// A session running in this process on the local devices, or, when
// options.target names a scheme ("grpc://..."), one made by the factory
// registered for it. InvalidArgument for a target no factory serves.
StatusOr<std::unique_ptr<Session>> NewSession(
    const SessionOptions& options = {});

// Makes sessions for targets "<scheme>://..."; registered once per scheme
// (later registrations replace earlier ones).
using SessionFactory = std::function<StatusOr<std::unique_ptr<Session>>(
    const SessionOptions& options)>;
void RegisterSessionFactory(const std::string& scheme, SessionFactory factory);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_SESSION_H_
