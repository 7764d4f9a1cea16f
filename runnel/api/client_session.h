// ClientSession: runs the graph a Scope builds (TensorFlow's
// tensorflow/cc/client/client_session.h).
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root, DT_FLOAT);
//   auto y = ops::Add(root, x, 1);
//   ClientSession session(root);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({{x, {1.f, 2.f}}}, {y}, &out));  // out[0] =
//   [2, 3]
//
// The session's graph follows the scope's: each Run first sends the nodes
// added since the previous Run (by node id) to Session::Extend, so a program
// may keep adding ops between Runs (e.g. build the training ops after
// running the initialisers). Only new nodes are sent: edges later added to
// nodes already sent are not (as in TF; build a node's inputs before Run).
//
// Errors: Run returns the scope's error if building failed (see Note [Status
// accumulation] in runnel/graph/scope.h), InvalidArgument for a feed value
// that does not convert to the fed tensor's dtype, and otherwise whatever
// Session::Run returns (naming the failing node).
//
// Thread safety: Run may be called from several threads at once, provided
// no thread is adding ops to the scope's graph meanwhile.
#ifndef RUNNEL_API_CLIENT_SESSION_H_
#define RUNNEL_API_CLIENT_SESSION_H_

#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/session.h"

namespace runnel {

class ClientSession {
 public:
  // Feeds: a tensor, or a literal converted to the fed tensor's dtype
  // ({{x, 1}} feeds 1.0f to a float placeholder).
  using FeedType = std::unordered_map<Output, Input::Initializer, OutputHash>;

  // Creates a local session for `scope`'s graph (shared, kept alive by the
  // session). If the session cannot be made, every Run returns why.
  explicit ClientSession(const Scope& scope,
                         const SessionOptions& options = {});
  // Closes the session (cancelling steps still running).
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Evaluates `fetch_outputs` into `outputs` (one tensor each, in order).
  Status Run(const std::vector<Output>& fetch_outputs,
             std::vector<Tensor>* outputs) const;
  Status Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
             std::vector<Tensor>* outputs) const;
  // Also runs `run_outputs` (e.g. a training op) without fetching anything.
  Status Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
             const std::vector<Operation>& run_outputs,
             std::vector<Tensor>* outputs) const;
  // With per-step options (timeout, tracing); `run_metadata` may be null.
  Status Run(const RunOptions& run_options, const FeedType& inputs,
             const std::vector<Output>& fetch_outputs,
             const std::vector<Operation>& run_outputs,
             std::vector<Tensor>* outputs, RunMetadata* run_metadata) const;

  // The underlying session (null if it could not be made).
  Session* session() const { return session_.get(); }

 private:
  // Sends the nodes added since the last call to the session.
  Status ExtendSession() const;

  Scope scope_;
  Status init_status_;
  std::unique_ptr<Session> session_;
  mutable absl::Mutex mu_;
  mutable int next_node_id_ ABSL_GUARDED_BY(mu_) = 0;  // First id not yet sent.
  mutable bool created_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace runnel

#endif  // RUNNEL_API_CLIENT_SESSION_H_
