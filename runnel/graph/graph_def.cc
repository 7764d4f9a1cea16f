#include "runnel/graph/graph_def.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"
#include "runnel/graph/function.h"

namespace runnel {
namespace {

// Collects text-format parse errors as "line:col: message" (1-based).
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!errors_.empty()) errors_ += "; ";
    absl::StrAppend(&errors_, line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}
  const std::string& errors() const { return errors_; }

 private:
  std::string errors_;
};

Status ParseText(absl::string_view text, bool allow_unknown_fields,
                 GraphDef* out) {
  google::protobuf::TextFormat::Parser parser;
  TextErrorCollector collector;
  parser.RecordErrorsTo(&collector);
  parser.AllowUnknownField(allow_unknown_fields);
  if (text.size() > INT_MAX)
    return errors::InvalidArgument("text GraphDef too large");
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  out->Clear();
  if (!parser.Parse(&input, out)) {
    out->Clear();
    return errors::InvalidArgument(
        "not a text-format GraphDef: ",
        collector.errors().empty() ? "parse failed" : collector.errors());
  }
  return absl::OkStatus();
}

enum class Encoding { kBinary, kText };

Status ParseAs(Encoding e, absl::string_view bytes, GraphDef* out) {
  return e == Encoding::kBinary ? ParseGraphDef(bytes, out)
                                : ParseGraphDefText(bytes, out);
}

bool IsLeadChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.';
}
bool IsBodyChar(char c) {
  return IsLeadChar(c) || c == '_' || c == '-' || c == '/';
}

// A node of the GraphDef being imported, validated but not yet in the graph.
struct PendingNode {
  const NodeDef* def = nullptr;
  std::shared_ptr<const NodeProperties> props;
  // Each input resolved to either a pending node (index into the pending
  // array) or a node already in the graph.
  struct Input {
    TensorId id;
    int pending_src = -1;
    Node* existing_src = nullptr;
  };
  std::vector<Input> data_inputs;
  std::vector<Input> control_inputs;
};

class Importer {
 public:
  Importer(const GraphDef& gdef, Graph* g, const ImportGraphDefOptions& options)
      : gdef_(gdef), g_(g), options_(options) {}

  Status Run() {
    RETURN_IF_ERROR(CheckNames());
    RETURN_IF_ERROR(MergeLibrary());
    RETURN_IF_ERROR(MakeProperties());
    for (int i = 0; i < static_cast<int>(pending_.size()); ++i) {
      RETURN_IF_ERROR(ResolveInputs(i));
    }
    RETURN_IF_ERROR(CheckCycles());
    return Commit();
  }

 private:
  Status CheckNames() {
    pending_.resize(gdef_.node_size());
    for (int i = 0; i < gdef_.node_size(); ++i) {
      const NodeDef& def = gdef_.node(i);
      pending_[i].def = &def;
      if (def.name().empty()) {
        return errors::InvalidArgument("node #", i, " of the GraphDef (op '",
                                       def.op(), "') has an empty name");
      }
      if (!IsValidNodeName(def.name(), options_.allow_internal_ops)) {
        return errors::InvalidArgument(
            "node '", def.name(), "' has an invalid name (node names match ",
            options_.allow_internal_ops ? "[A-Za-z0-9._]" : "[A-Za-z0-9.]",
            "[A-Za-z0-9_.\\-/]*, with optional '>'-separated pieces)");
      }
      auto [it, inserted] = index_.emplace(def.name(), i);
      if (!inserted) {
        return errors::InvalidArgument(
            "node '", def.name(), "' is defined twice in the GraphDef (nodes #",
            it->second, " and #", i, ")");
      }
      if (g_->FindNode(def.name()) != nullptr) {
        return errors::InvalidArgument("node '", def.name(),
                                       "' already exists in the graph");
      }
    }
    return absl::OkStatus();
  }

  // The graph's library plus gdef.library (validated; nothing changes in
  // the graph until Commit).
  Status MergeLibrary() {
    library_ = g_->library();
    const FunctionDefLibrary& lib = gdef_.library();
    if (lib.function_size() == 0 && lib.gradient_size() == 0) {
      return absl::OkStatus();
    }
    auto merged = library_ != nullptr
                      ? std::make_shared<FunctionLibraryDefinition>(*library_)
                      : std::make_shared<FunctionLibraryDefinition>();
    RETURN_IF_ERROR(merged->AddLibrary(lib));
    library_ = std::move(merged);
    return absl::OkStatus();
  }

  Status MakeProperties() {
    for (PendingNode& p : pending_) {
      if (library_ != nullptr && !p.def->op().empty() &&
          OpRegistry::Global()->LookUp(p.def->op()) == nullptr &&
          library_->Find(p.def->op()) != nullptr) {
        // Note [Calls by function name] in function.cc.
        ASSIGN_OR_RETURN(NodeDef call, CallNodeForFunction(*library_, *p.def));
        rewritten_.push_back(std::move(call));
        p.def = &rewritten_.back();
      }
      const NodeDef& def = *p.def;
      if (def.op().empty()) {
        return errors::InvalidArgument("node '", def.name(), "' has no op");
      }
      AttrMap attrs(def.attr().begin(), def.attr().end());
      ASSIGN_OR_RETURN(
          p.props, NodeProperties::Create(def.name(), def.op(), def.device(),
                                          std::move(attrs)));
    }
    return absl::OkStatus();
  }

  // Output types and op of an input's source node.
  const DataTypeVector& SrcOutputTypes(const PendingNode::Input& in) const {
    return in.existing_src != nullptr
               ? in.existing_src->props().output_types
               : pending_[in.pending_src].props->output_types;
  }
  const std::string& SrcOp(const PendingNode::Input& in) const {
    return in.existing_src != nullptr ? in.existing_src->type_string()
                                      : pending_[in.pending_src].props->op;
  }

  Status ResolveInputs(int i) {
    PendingNode& p = pending_[i];
    const NodeDef& def = *p.def;
    const NodeProperties& props = *p.props;
    for (int j = 0; j < def.input_size(); ++j) {
      const std::string& s = def.input(j);
      auto parsed = ParseTensorName(s);
      if (!parsed.ok()) {
        return errors::InvalidArgument("node '", def.name(), "' input ", j,
                                       ": ", parsed.status().message());
      }
      PendingNode::Input in{*std::move(parsed)};
      if (!in.id.IsControl() && !p.control_inputs.empty()) {
        return errors::InvalidArgument(
            "node '", def.name(), "' input ", j, " ('", s,
            "') is a data input after control input '^",
            p.control_inputs.front().id.node,
            "'; control inputs must come after all data inputs");
      }
      if (auto it = index_.find(in.id.node); it != index_.end()) {
        in.pending_src = it->second;
      } else if (Node* n = g_->FindNode(in.id.node); n != nullptr) {
        in.existing_src = n;
      } else {
        return errors::InvalidArgument("node '", def.name(), "' input ", j,
                                       " refers to unknown node '", in.id.node,
                                       "'");
      }
      if (in.id.IsControl()) {
        p.control_inputs.push_back(std::move(in));
        continue;
      }
      const int slot = static_cast<int>(p.data_inputs.size());
      const DataTypeVector& src_types = SrcOutputTypes(in);
      if (in.id.index >= static_cast<int>(src_types.size())) {
        return errors::InvalidArgument(
            "node '", def.name(), "' input ", j, " ('", s,
            "') refers to output ", in.id.index, " of node '", in.id.node,
            "' (", SrcOp(in), "), which has ", src_types.size(), " outputs");
      }
      if (slot < static_cast<int>(props.input_types.size()) &&
          !TypesCompatible(src_types[in.id.index], props.input_types[slot])) {
        return errors::InvalidArgument(
            "node '", def.name(), "' (", def.op(), ") input ", slot,
            " expects ", DataTypeString(props.input_types[slot]), " but '",
            in.id.ToString(), "' is ", DataTypeString(src_types[in.id.index]));
      }
      p.data_inputs.push_back(std::move(in));
    }
    if (p.data_inputs.size() != props.input_types.size()) {
      return errors::InvalidArgument(
          "node '", def.name(), "' (", def.op(), ") has ", p.data_inputs.size(),
          " data inputs but the op expects ", props.input_types.size());
    }
    return absl::OkStatus();
  }

  // Cycles can only run through new nodes: nodes already in the graph
  // cannot have edges into new ones.
  Status CheckCycles() {
    std::vector<std::vector<int>> preds(pending_.size());
    for (int i = 0; i < static_cast<int>(pending_.size()); ++i) {
      const bool is_merge = IsMergeOp(pending_[i].props->op);
      for (const auto* list :
           {&pending_[i].data_inputs, &pending_[i].control_inputs}) {
        for (const PendingNode::Input& in : *list) {
          if (in.pending_src < 0) continue;
          if (is_merge && IsNextIterationOp(pending_[in.pending_src].props->op))
            continue;
          preds[i].push_back(in.pending_src);
        }
      }
    }
    std::vector<int> order, cycle;
    if (internal::SortOrFindCycle(preds, &order, &cycle))
      return absl::OkStatus();
    std::vector<std::string> names;
    for (int i : cycle) names.push_back(pending_[i].props->name);
    return internal::CycleError(names);
  }

  Status Commit() {
    std::vector<Node*> added;
    Status s = CommitImpl(&added);
    if (!s.ok()) {
      // Validation above should make this unreachable; keep `g` unchanged
      // anyway.
      for (Node* n : added) g_->RemoveNode(n);
      return s;
    }
    if (gdef_.has_versions()) g_->set_versions(gdef_.versions());
    g_->set_library(library_);
    return absl::OkStatus();
  }

  Status CommitImpl(std::vector<Node*>* added) {
    added->reserve(pending_.size());
    for (PendingNode& p : pending_) {
      ASSIGN_OR_RETURN(Node * n, g_->AddNode(p.props));
      added->push_back(n);
    }
    auto src_node = [&](const PendingNode::Input& in) {
      return in.existing_src != nullptr ? in.existing_src
                                        : (*added)[in.pending_src];
    };
    for (int i = 0; i < static_cast<int>(pending_.size()); ++i) {
      Node* dst = (*added)[i];
      const PendingNode& p = pending_[i];
      for (int slot = 0; slot < static_cast<int>(p.data_inputs.size());
           ++slot) {
        const PendingNode::Input& in = p.data_inputs[slot];
        RETURN_IF_ERROR(
            g_->AddEdge(src_node(in), in.id.index, dst, slot).status());
      }
      for (const PendingNode::Input& in : p.control_inputs) {
        g_->AddControlEdge(src_node(in), dst);
      }
    }
    return absl::OkStatus();
  }

  const GraphDef& gdef_;
  Graph* g_;
  const ImportGraphDefOptions& options_;
  std::vector<PendingNode> pending_;
  absl::flat_hash_map<absl::string_view, int> index_;
  std::shared_ptr<const FunctionLibraryDefinition> library_;
  std::deque<NodeDef> rewritten_;  // Calls by function name, rewritten.
};

}  // namespace

Status ParseGraphDef(absl::string_view bytes, GraphDef* out) {
  if (bytes.size() > INT_MAX) {
    return errors::InvalidArgument("binary GraphDef of ", bytes.size(),
                                   " bytes exceeds protobuf's 2 GiB limit");
  }
  if (!out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    out->Clear();
    return errors::InvalidArgument(
        "not a binary GraphDef (", bytes.size(),
        " bytes; truncated, corrupt, or another message)");
  }
  return absl::OkStatus();
}

Status ParseGraphDefText(absl::string_view text, GraphDef* out) {
  Status strict = ParseText(text, /*allow_unknown_fields=*/false, out);
  if (strict.ok()) return strict;
  // Fields newer TF writes that our protos do not model: skip them, but
  // keep the parser strict about everything else (typos, wrong kinds).
  for (const char* field : {"\"experimental_type\"", "\"debug_info\""}) {
    if (absl::StrContains(strict.message(), field)) {
      return ParseText(text, /*allow_unknown_fields=*/true, out);
    }
  }
  return strict;
}

Status ReadGraphDefFile(const std::string& path, GraphDef* out) {
  std::string contents;
  if (Status s = ReadFileToString(path, &contents); !s.ok()) {
    return errors::Prefix(s,
                          absl::StrCat("reading GraphDef file '", path, "': "));
  }
  Encoding first = Encoding::kText;
  if (absl::EndsWith(path, ".pb")) first = Encoding::kBinary;
  const Encoding second =
      first == Encoding::kText ? Encoding::kBinary : Encoding::kText;
  Status s1 = ParseAs(first, contents, out);
  if (s1.ok()) return s1;
  Status s2 = ParseAs(second, contents, out);
  if (s2.ok()) return s2;
  out->Clear();
  const Status& binary = first == Encoding::kBinary ? s1 : s2;
  const Status& text = first == Encoding::kText ? s1 : s2;
  return errors::DataLoss("GraphDef file '", path, "' (", contents.size(),
                          " bytes) does not parse: as binary: ",
                          binary.message(), "; as text: ", text.message());
}

bool IsValidNodeName(absl::string_view name, bool allow_internal) {
  if (name.empty()) return false;
  bool piece_start = true;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (piece_start) {
      if (!(IsLeadChar(c) || (i == 0 && allow_internal && c == '_')))
        return false;
      piece_start = false;
    } else if (c == '>') {
      piece_start = true;
    } else if (!IsBodyChar(c)) {
      return false;
    }
  }
  return !piece_start;
}

Status ImportGraphDef(const GraphDef& gdef, Graph* g,
                      const ImportGraphDefOptions& options) {
  return Importer(gdef, g, options).Run();
}

void ToGraphDef(const Graph& g, GraphDef* out,
                const ToGraphDefOptions& options) {
  out->Clear();
  for (const Node* n : g.nodes()) {
    NodeDef* def = out->add_node();
    def->set_name(n->name());
    def->set_op(n->type_string());
    def->set_device(options.use_assigned_device &&
                            !n->assigned_device_name().empty()
                        ? n->assigned_device_name()
                        : n->requested_device());
    for (const auto& [key, value] : n->attrs())
      (*def->mutable_attr())[key] = value;
    for (const Edge* e : n->input_edges_in_order()) {
      if (e == nullptr) {
        def->add_input("");
      } else if (e->src_output() == 0) {
        def->add_input(e->src()->name());
      } else {
        def->add_input(absl::StrCat(e->src()->name(), ":", e->src_output()));
      }
    }
    std::vector<std::string> controls;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge())
        controls.push_back(absl::StrCat("^", e->src()->name()));
    }
    std::sort(controls.begin(), controls.end());
    controls.erase(std::unique(controls.begin(), controls.end()),
                   controls.end());
    for (std::string& c : controls) def->add_input(std::move(c));
  }
  if (g.library() != nullptr && !g.library()->empty()) {
    *out->mutable_library() = g.library()->ToProto();
  }
  *out->mutable_versions() = g.versions();
  if (out->versions().producer() == 0) {
    out->mutable_versions()->set_producer(kDefaultGraphDefProducer);
  }
}

}  // namespace runnel
