#include "runnel/api/client_session.h"

#include <string>
#include <utility>

#include "runnel/graph/graph_def.h"

namespace runnel {

ClientSession::ClientSession(const Scope& scope, const SessionOptions& options)
    : scope_(scope) {
  StatusOr<std::unique_ptr<Session>> session = NewSession(options);
  if (session.ok()) {
    session_ = *std::move(session);
  } else {
    init_status_ = session.status();
  }
}

ClientSession::~ClientSession() {
  if (session_) session_->Close().IgnoreError();
}

Status ClientSession::ExtendSession() const {
  absl::MutexLock lock(&mu_);
  const Graph& graph = *scope_.graph();
  if (created_ && graph.num_node_ids() == next_node_id_)
    return absl::OkStatus();
  // ToGraphDef writes nodes in id order: drop the ones already sent.
  GraphDef gdef;
  ToGraphDef(graph, &gdef);
  int sent = 0;
  for (const Node* n : graph.nodes()) sent += n->id() < next_node_id_ ? 1 : 0;
  gdef.mutable_node()->DeleteSubrange(0, sent);
  RETURN_IF_ERROR(created_ ? session_->Extend(gdef) : session_->Create(gdef));
  created_ = true;
  next_node_id_ = graph.num_node_ids();
  return absl::OkStatus();
}

Status ClientSession::Run(const std::vector<Output>& fetch_outputs,
                          std::vector<Tensor>* outputs) const {
  return Run(FeedType{}, fetch_outputs, {}, outputs);
}

Status ClientSession::Run(const FeedType& inputs,
                          const std::vector<Output>& fetch_outputs,
                          std::vector<Tensor>* outputs) const {
  return Run(inputs, fetch_outputs, {}, outputs);
}

Status ClientSession::Run(const FeedType& inputs,
                          const std::vector<Output>& fetch_outputs,
                          const std::vector<Operation>& run_outputs,
                          std::vector<Tensor>* outputs) const {
  return Run(RunOptions(), inputs, fetch_outputs, run_outputs, outputs,
             nullptr);
}

Status ClientSession::Run(const RunOptions& run_options, const FeedType& inputs,
                          const std::vector<Output>& fetch_outputs,
                          const std::vector<Operation>& run_outputs,
                          std::vector<Tensor>* outputs,
                          RunMetadata* run_metadata) const {
  RETURN_IF_ERROR(init_status_);
  RETURN_IF_ERROR(scope_.status());
  RETURN_IF_ERROR(ExtendSession());
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [output, value] : inputs) {
    if (output.node() == nullptr)
      return errors::InvalidArgument("a feed key is a null Output");
    StatusOr<Tensor> tensor = value.AsType(BaseType(output.type()));
    if (!tensor.ok()) {
      return errors::Prefix(tensor.status(),
                            absl::StrCat("feed '", output.name(), "': "));
    }
    feeds.emplace_back(output.name(), *std::move(tensor));
  }
  std::vector<std::string> fetches;
  for (const Output& output : fetch_outputs) {
    if (output.node() == nullptr) {
      return errors::InvalidArgument("fetch ", fetches.size(),
                                     " is a null Output");
    }
    fetches.push_back(output.name());
  }
  std::vector<std::string> targets;
  for (const Operation& op : run_outputs) {
    if (op.node() == nullptr) {
      return errors::InvalidArgument("target ", targets.size(),
                                     " is a null Operation");
    }
    targets.push_back(op.name());
  }
  return session_->Run(run_options, feeds, fetches, targets, outputs,
                       run_metadata);
}

}  // namespace runnel
