#include "runnel/graph/prune.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "runnel/graph/algorithm.h"

namespace runnel {
namespace {

// Parses a feed or fetch and checks it names an existing output.
Status ResolveTensor(const Graph& g, absl::string_view what,
                     const std::string& name, TensorId* id, Node** node) {
  auto parsed = ParseTensorName(name);
  if (!parsed.ok())
    return errors::InvalidArgument(what, " '", name,
                                   "': ", parsed.status().message());
  *id = *std::move(parsed);
  if (id->IsControl()) {
    return errors::InvalidArgument(
        what, " '", name,
        "' must name a tensor (\"node:k\"), not a control input");
  }
  *node = g.FindNode(id->node);
  if (*node == nullptr) {
    return errors::InvalidArgument(what, " '", name,
                                   "' refers to unknown node '", id->node, "'");
  }
  if (id->index >= (*node)->num_outputs()) {
    return errors::InvalidArgument(what, " '", name, "': output index ",
                                   id->index, " out of range for node '",
                                   id->node, "' with ", (*node)->num_outputs(),
                                   " outputs");
  }
  return absl::OkStatus();
}

Status PruneImpl(const Graph& full, const std::vector<std::string>& feeds,
                 const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets, Graph* out,
                 PruneInfo& result) {
  // (producer id, output) -> feed position.
  absl::flat_hash_map<std::pair<int, int>, int> fed;
  for (int i = 0; i < static_cast<int>(feeds.size()); ++i) {
    TensorId id;
    Node* n;
    RETURN_IF_ERROR(ResolveTensor(full, "feed", feeds[i], &id, &n));
    auto [it, inserted] = fed.emplace(std::make_pair(n->id(), id.index), i);
    if (!inserted) {
      return errors::InvalidArgument("tensor '", id.ToString(),
                                     "' is fed more than once (feeds ",
                                     it->second, " and ", i, ")");
    }
    result.feed_types.push_back(BaseType(n->output_type(id.index)));
    result.feeds.push_back(std::move(id));
  }

  std::vector<Node*> roots;
  std::vector<Node*> fetch_nodes;
  for (const std::string& name : fetches) {
    TensorId id;
    Node* n;
    RETURN_IF_ERROR(ResolveTensor(full, "fetch", name, &id, &n));
    if (!fed.contains(std::make_pair(n->id(), id.index))) roots.push_back(n);
    result.fetch_types.push_back(BaseType(n->output_type(id.index)));
    result.fetches.push_back(std::move(id));
    fetch_nodes.push_back(n);
  }
  for (const std::string& name : targets) {
    absl::string_view node_name = name;
    absl::ConsumePrefix(&node_name, "^");
    Node* n = full.FindNode(node_name);
    if (n == nullptr) {
      if (absl::StrContains(node_name, ':')) {
        return errors::InvalidArgument(
            "target '", name, "' must be a node name, not a tensor name");
      }
      return errors::InvalidArgument(
          "target '", name, "' refers to unknown node '", node_name, "'");
    }
    roots.push_back(n);
  }

  // Walk back from the roots, not through fed tensors.
  auto follow = [&fed](const Edge& e) {
    return e.IsControlEdge() ||
           !fed.contains(std::make_pair(e.src()->id(), e.src_output()));
  };
  const std::vector<Node*> needed = ReverseReachable(full, roots, follow);

  // A fed value is never a reference, so it cannot replace a tensor that a
  // kept node mutates in place.
  for (Node* n : needed) {
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() || !IsRefType(n->input_type(e->dst_input())))
        continue;
      auto it = fed.find(std::make_pair(e->src()->id(), e->src_output()));
      if (it == fed.end()) continue;
      return errors::InvalidArgument(
          "cannot feed '", feeds[it->second], "': node '", n->name(), "' (",
          n->type_string(), ") input ", e->dst_input(), " needs a reference (",
          DataTypeString(n->input_type(e->dst_input())),
          ") and a fed value is not one");
    }
  }

  std::vector<Node*> copy(full.num_node_ids(), nullptr);
  // Calls that were not inlined run their functions from the library.
  out->set_library(full.library());
  for (Node* n : needed) {
    ASSIGN_OR_RETURN(Node * c, out->AddNode(n->props_shared()));
    c->set_assigned_device_name(n->assigned_device_name());
    copy[n->id()] = c;
  }
  std::vector<Node*> args;
  for (int i = 0; i < static_cast<int>(result.feeds.size()); ++i) {
    const TensorId& id = result.feeds[i];
    AttrMap attrs = {{"T", MakeAttrValue(result.feed_types[i])},
                     {"index", MakeAttrValue(i)}};
    ASSIGN_OR_RETURN(Node * arg,
                     out->AddNode(out->NewName(absl::StrCat(
                                      "_arg_", id.node, "_", id.index, "_", i)),
                                  "_Arg", std::move(attrs)));
    args.push_back(arg);
    result.arg_nodes.push_back(arg->name());
  }

  for (Node* n : needed) {
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) {
        out->AddControlEdge(copy[e->src()->id()], copy[n->id()]);
        continue;
      }
      auto it = fed.find(std::make_pair(e->src()->id(), e->src_output()));
      if (it == fed.end()) {
        RETURN_IF_ERROR(out->AddEdge(copy[e->src()->id()], e->src_output(),
                                     copy[n->id()], e->dst_input())
                            .status());
        continue;
      }
      RETURN_IF_ERROR(
          out->AddEdge(args[it->second], 0, copy[n->id()], e->dst_input())
              .status());
    }
  }

  for (int i = 0; i < static_cast<int>(result.fetches.size()); ++i) {
    const TensorId& id = result.fetches[i];
    AttrMap attrs = {{"T", MakeAttrValue(result.fetch_types[i])},
                     {"index", MakeAttrValue(i)}};
    ASSIGN_OR_RETURN(
        Node * ret,
        out->AddNode(out->NewName(absl::StrCat("_retval_", id.node, "_",
                                               id.index, "_", i)),
                     "_Retval", std::move(attrs)));
    result.retval_nodes.push_back(ret->name());
    auto it = fed.find(std::make_pair(fetch_nodes[i]->id(), id.index));
    Node* src = it != fed.end() ? args[it->second] : copy[fetch_nodes[i]->id()];
    const int src_output = it != fed.end() ? 0 : id.index;
    RETURN_IF_ERROR(out->AddEdge(src, src_output, ret, 0).status());
  }
  out->set_versions(full.versions());
  return absl::OkStatus();
}

}  // namespace

Status PruneForFetches(const Graph& full, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets, Graph* out,
                       PruneInfo* info) {
  if (out->num_nodes() != 0) {
    return errors::FailedPrecondition(
        "PruneForFetches needs an empty output graph; it has ",
        out->num_nodes(), " nodes");
  }
  PruneInfo local;
  PruneInfo& result = info != nullptr ? *info : local;
  result = PruneInfo();
  Status s = PruneImpl(full, feeds, fetches, targets, out, result);
  if (!s.ok()) {
    for (Node* n : out->nodes()) out->RemoveNode(n);
    result = PruneInfo();
  }
  return s;
}

}  // namespace runnel
