#include "runnel/runtime/untrusted_paths.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "runnel/graph/function.h"

namespace runnel {
namespace {

// Node visits one question about one value may cost, and all the questions
// the fixpoint over function arguments may ask together: past these, the
// answer is "not derived".
constexpr int64_t kQueryBudget = 4096;
constexpr int64_t kFixpointBudget = 1 << 20;

bool IsCallOp(const std::string& op) {
  return op == kPartitionedCallOp || op == kStatefulPartitionedCallOp;
}

std::vector<std::string> DataInputs(const NodeDef& n) {
  std::vector<std::string> in;
  for (const std::string& s : n.input()) {
    if (s.empty() || s[0] != '^') in.push_back(s);
  }
  return in;
}

// Text that may follow a derived path without leaving its directory: no
// "..", no NUL, and no leading "." component (which a path ending in "/."
// would turn into "..").
bool IsSafeSuffixText(const std::string& s) {
  if (s.find("..") != std::string::npos) return false;
  if (s.find('\0') != std::string::npos) return false;
  const std::string first = s.substr(0, s.find('/'));
  return first != ".";
}

}  // namespace

std::vector<int> CheckpointPathInputs(const std::string& op) {
  if (op == "SaveV2" || op == "RestoreV2") return {0};
  if (op == "MergeV2Checkpoints") return {0, 1};
  return {};
}

DerivedPaths::DerivedPaths(const GraphDef& graph,
                           const std::vector<std::string>& roots)
    : roots_(roots.begin(), roots.end()) {
  for (const NodeDef& n : graph.node()) graph_nodes_.emplace(n.name(), &n);
  for (const FunctionDef& f : graph.library().function()) {
    const std::string& name = f.signature().name();
    if (!functions_.emplace(name, &f).second) continue;
    auto& nodes = function_nodes_[name];
    for (const NodeDef& n : f.node_def()) nodes.emplace(n.name(), &n);
    derived_args_[name].assign(f.signature().input_arg_size(), false);
  }
  if (roots_.empty() || functions_.empty()) return;

  // Where each function is called, and which are referenced otherwise.
  std::map<std::string, std::vector<CallSite>> sites;
  std::set<std::string> escaped;
  auto scan = [&](const Context& c, const NodeDef& n) {
    if (functions_.count(n.op()) > 0) sites[n.op()].push_back({c, &n});
    for (const auto& [key, value] : n.attr()) {
      if (value.has_func()) {
        if (IsCallOp(n.op()) && key == "f") {
          sites[value.func().name()].push_back({c, &n});
        } else {
          escaped.insert(value.func().name());
        }
      }
      for (const NameAttrList& f : value.list().func())
        escaped.insert(f.name());
    }
  };
  for (const NodeDef& n : graph.node()) scan(ContextOf(nullptr), n);
  for (const auto& [name, f] : functions_) {
    for (const NodeDef& n : f->node_def()) scan(ContextOf(f), n);
  }

  // Least fixpoint: an argument becomes derived once every call passes a
  // derived value; each round settles at least one more level of calls.
  int64_t budget = kFixpointBudget;
  for (int round = 0; round < kMaxPathDepth; ++round) {
    bool changed = false;
    for (auto& [name, derived] : derived_args_) {
      auto s = sites.find(name);
      if (s == sites.end() || escaped.count(name) > 0) continue;
      for (size_t k = 0; k < derived.size(); ++k) {
        if (derived[k]) continue;
        bool all = true;
        for (const CallSite& site : s->second) {
          const std::vector<std::string> in = DataInputs(*site.node);
          int64_t query = std::min(budget, kQueryBudget);
          const int64_t before = query;
          all = k < in.size() && IsDerived(site.context, in[k], 0, &query);
          budget -= before - query;
          if (!all) break;
        }
        if (all) {
          derived[k] = true;
          changed = true;
        }
        if (budget <= 0) return;
      }
    }
    if (!changed) break;
  }
}

DerivedPaths::Context DerivedPaths::ContextOf(
    const FunctionDef* function) const {
  if (function == nullptr) return {nullptr, &graph_nodes_};
  auto it = function_nodes_.find(function->signature().name());
  return {function, it == function_nodes_.end() ? nullptr : &it->second};
}

const NodeDef* DerivedPaths::Resolve(const Context& c, const std::string& input,
                                     int* output, int* arg) const {
  *output = 0;
  *arg = -1;
  if (input.empty() || input[0] == '^' || c.nodes == nullptr) return nullptr;
  const std::vector<std::string> parts = absl::StrSplit(input, ':');
  if (c.function != nullptr && parts.size() == 1) {
    const auto& args = c.function->signature().input_arg();
    for (int i = 0; i < args.size(); ++i) {
      if (args[i].name() == input) *arg = i;
    }
    return nullptr;
  }
  // "node", "node:k" (graphs) or "node:output_arg:k" (function bodies).
  if (parts.size() > 3) return nullptr;
  if (parts.size() > 1 && !absl::SimpleAtoi(parts.back(), output)) {
    return nullptr;
  }
  auto it = c.nodes->find(parts[0]);
  return it == c.nodes->end() ? nullptr : it->second;
}

bool DerivedPaths::InputIsDerived(const FunctionDef* function,
                                  const NodeDef& node, int input) const {
  const std::vector<std::string> in = DataInputs(node);
  if (input < 0 || input >= static_cast<int>(in.size())) return false;
  int64_t budget = kQueryBudget;
  return IsDerived(ContextOf(function), in[input], 0, &budget);
}

bool DerivedPaths::IsDerived(const Context& c, const std::string& input,
                             int depth, int64_t* budget) const {
  if (depth > kMaxPathDepth || --*budget < 0) return false;
  int output = 0, arg = -1;
  const NodeDef* n = Resolve(c, input, &output, &arg);
  if (n == nullptr) {
    if (arg < 0 || c.function == nullptr) return false;
    auto it = derived_args_.find(c.function->signature().name());
    return it != derived_args_.end() &&
           arg < static_cast<int>(it->second.size()) && it->second[arg];
  }
  if (output != 0) return false;
  const std::string& op = n->op();
  const std::vector<std::string> in = DataInputs(*n);
  if (c.function == nullptr && roots_.count(n->name()) > 0) {
    return op == "Const" || op == "Placeholder";
  }
  if (op == "Identity" || op == "Snapshot" || op == "ShardedFilename") {
    return !in.empty() && IsDerived(c, in[0], depth + 1, budget);
  }
  if (op == "StringJoin") {
    auto sep = n->attr().find("separator");
    if (sep != n->attr().end() && !IsSafeSuffixText(sep->second.s())) {
      return false;
    }
    if (in.empty() || !IsDerived(c, in[0], depth + 1, budget)) return false;
    for (size_t i = 1; i < in.size(); ++i) {
      if (!IsSafeSuffix(c, in[i], depth + 1, budget)) return false;
    }
    return true;
  }
  if (op == "Pack") {
    for (const std::string& s : in) {
      if (!IsDerived(c, s, depth + 1, budget)) return false;
    }
    return !in.empty();
  }
  return false;
}

bool DerivedPaths::IsSafeSuffix(const Context& c, const std::string& input,
                                int depth, int64_t* budget) const {
  if (depth > kMaxPathDepth || --*budget < 0) return false;
  int output = 0, arg = -1;
  const NodeDef* n = Resolve(c, input, &output, &arg);
  if (n == nullptr || output != 0) return false;
  const std::string& op = n->op();
  const std::vector<std::string> in = DataInputs(*n);
  if (op == "Const") {
    auto v = n->attr().find("value");
    if (v == n->attr().end() || !v->second.has_tensor()) return false;
    const TensorProto& t = v->second.tensor();
    return t.dtype() == DT_STRING && t.string_val_size() == 1 &&
           t.tensor_content().empty() && IsSafeSuffixText(t.string_val(0));
  }
  if (op == "Identity") {
    return !in.empty() && IsSafeSuffix(c, in[0], depth + 1, budget);
  }
  if (op == "Select" || op == "SelectV2") {
    return in.size() == 3 && IsSafeSuffix(c, in[1], depth + 1, budget) &&
           IsSafeSuffix(c, in[2], depth + 1, budget);
  }
  return false;
}

}  // namespace runnel
