#include "runnel/runtime/placer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "runnel/devices/device_factory.h"
#include "runnel/framework/device_name.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/types.h"
#include "runnel/graph/algorithm.h"
#include "runnel/runtime/placement_cost_model.h"

namespace runnel {
namespace {

// The fields of a DeviceName, merged one by one.
enum Field { kJob, kReplica, kTask, kType, kId, kNumFields };

const char* FieldPlural(int f) {
  static constexpr const char* kNames[kNumFields] = {"jobs", "replicas",
                                                     "tasks", "types", "ids"};
  return kNames[f];
}

// The field as text; empty when unset.
std::string GetField(const DeviceName& d, int f) {
  switch (f) {
    case kJob:
      return d.job;
    case kReplica:
      return d.replica >= 0 ? absl::StrCat(d.replica) : "";
    case kTask:
      return d.task >= 0 ? absl::StrCat(d.task) : "";
    case kType:
      return d.type;
    default:
      return d.id >= 0 ? absl::StrCat(d.id) : "";
  }
}

void CopyField(const DeviceName& from, int f, DeviceName* to) {
  switch (f) {
    case kJob:
      to->job = from.job;
      break;
    case kReplica:
      to->replica = from.replica;
      break;
    case kTask:
      to->task = from.task;
      break;
    case kType:
      to->type = from.type;
      break;
    default:
      to->id = from.id;
  }
}

void ClearField(int f, DeviceName* d) { CopyField(DeviceName(), f, d); }

// TF: a node with no inputs and a single non-reference output, which is
// best placed with its consumers once they are placed.
bool IsGenerator(const Node& n) {
  return n.num_inputs() == 0 && n.num_outputs() == 1 &&
         !IsRefType(n.output_type(0));
}

// A colocation group; the fields are meaningful at the union-find root.
struct Group {
  DeviceName spec;                               // Merged requested devices.
  std::array<const Node*, kNumFields> setter{};  // Who set each field.
  std::array<bool, kNumFields> dropped{};        // Soft placement dropped it.
  uint64_t kernel_types = 0;  // Bit t: types_[t] has kernels.
  int pinned = -1;            // Device index, or -1.
  const Node* pinned_by = nullptr;
  std::vector<const Node*> members;
  std::vector<int> candidates;  // Device indices, in preference order.
  int device = -1;              // The decision, once made.
};

class Placer {
 public:
  Placer(const PlacerOptions& options, const std::vector<Device*>& devices,
         Graph* graph)
      : options_(options), devices_(devices), graph_(graph) {}

  // Fills device_of_ for every node, or fails leaving the graph untouched.
  Status Run();
  int device_of(const Node& n) const { return device_of_[n.id()]; }

 private:
  Status InitDevices();
  Status InitNode(const Node& n);
  Status ColocateNodes();
  Status Union(const Node& a, const Node& b, absl::string_view reason);
  void YieldToProducer(const Node& src, const Node& dst);
  Status MergeSpecs(Group* into, const Group& from, absl::string_view reason);
  Status ComputeCandidates(Group* g);
  std::vector<int> Matching(const DeviceName& spec, uint64_t types) const;
  Status NoCandidateError(const Group& g) const;
  Status PlaceNodes();
  int ChooseByInputs(const Node& n, const Group& g) const;
  int ChooseForGenerator(const Node& n, const Group& g) const;
  int ChooseGreedy(const Node& n, const Group& g) const;
  double FinishTime(const Node& n, int d) const;

  int Find(int id);
  Group& GroupOf(const Node& n) { return groups_[Find(n.id())]; }
  uint64_t TypeBit(int d) const { return uint64_t{1} << type_of_[d]; }
  std::string TypeList(uint64_t types) const;
  std::string DeviceList() const;
  std::string SpecText(const Group& g) const;
  std::string MembersText(const Group& g) const;
  const std::string& NodeSpec(const Node& n) const;
  std::string SpecOf(const Node& n) const;

  const PlacerOptions& options_;
  const std::vector<Device*>& devices_;
  Graph* graph_;

  std::vector<std::string> types_;  // Distinct device types.
  std::vector<int> type_of_;        // Device index -> index in types_.
  std::vector<int> priority_;       // Device index -> its type's priority.

  std::vector<int> parent_;  // Union-find over node ids.
  std::vector<int> rank_;
  std::vector<Group> groups_;  // Indexed by node id; valid at roots.
  std::vector<int> device_of_;

  // kGreedyCostModel's simulated execution.
  std::vector<double> device_free_at_;
  std::vector<double> finish_;
};

int Placer::Find(int id) {
  while (parent_[id] != id) {
    parent_[id] = parent_[parent_[id]];
    id = parent_[id];
  }
  return id;
}

std::string Placer::TypeList(uint64_t types) const {
  std::vector<std::string> names;
  for (size_t t = 0; t < types_.size(); ++t) {
    if (types & (uint64_t{1} << t)) names.push_back(types_[t]);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

std::string Placer::DeviceList() const {
  std::vector<std::string> names;
  for (const Device* d : devices_) names.push_back(d->name());
  return absl::StrJoin(names, ", ");
}

// A pin counts as the node's request: it is the strongest one.
const std::string& Placer::NodeSpec(const Node& n) const {
  return n.assigned_device_name().empty() ? n.requested_device()
                                          : n.assigned_device_name();
}

// "'/device:CPU:1' (requested by 'x')", or the same for a pin.
std::string Placer::SpecOf(const Node& n) const {
  return absl::StrCat(
      "'", NodeSpec(n), "' (",
      n.assigned_device_name().empty() ? "requested by '" : "assigned to '",
      n.name(), "')");
}

Status Placer::InitDevices() {
  if (devices_.empty()) {
    return errors::InvalidArgument("cannot place graph: no devices");
  }
  absl::flat_hash_map<std::string, int> type_index;
  for (const Device* d : devices_) {
    auto [it, added] = type_index.try_emplace(d->device_type(),
                                              static_cast<int>(types_.size()));
    if (added) types_.push_back(d->device_type());
    type_of_.push_back(it->second);
    priority_.push_back(DeviceFactory::DevicePriority(d->device_type()));
  }
  if (types_.size() > 64) {
    return errors::InvalidArgument(
        "cannot place graph: more than 64 device "
        "types");
  }
  return absl::OkStatus();
}

// Parses the node's constraint and finds the device types with its kernel.
Status Placer::InitNode(const Node& n) {
  Group& g = groups_[n.id()];
  g.members.push_back(&n);
  if (!n.assigned_device_name().empty()) {
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d]->name() == n.assigned_device_name()) {
        g.pinned = static_cast<int>(d);
      }
    }
    if (g.pinned < 0) {
      return errors::InvalidArgument(
          "node '", n.name(), "' (", n.type_string(),
          ") is assigned to device '", n.assigned_device_name(),
          "', which is not one of the devices to place on: ", DeviceList());
    }
    g.pinned_by = &n;
    g.spec = devices_[g.pinned]->parsed_name();
  } else {
    StatusOr<DeviceName> spec = DeviceName::Parse(n.requested_device());
    if (!spec.ok()) {
      return errors::InvalidArgument("node '", n.name(), "' (", n.type_string(),
                                     ") has a malformed device specification '",
                                     n.requested_device(),
                                     "': ", spec.status().message());
    }
    g.spec = *std::move(spec);
  }
  for (int f = 0; f < kNumFields; ++f) {
    if (!GetField(g.spec, f).empty()) g.setter[f] = &n;
  }
  for (size_t t = 0; t < types_.size(); ++t) {
    if (KernelRegistry::Global()->HasKernel(types_[t], n.props())) {
      g.kernel_types |= uint64_t{1} << t;
    }
  }
  if (g.kernel_types == 0) {
    const KernelDef* def;
    const KernelFactory* factory;
    Status why = KernelRegistry::Global()->FindKernel(types_[0], n.props(),
                                                      &def, &factory);
    return errors::InvalidArgument(
        "Cannot assign a device for operation '", n.name(),
        "': no kernel for op '", n.type_string(),
        "' on any device type of this process (", absl::StrJoin(types_, ", "),
        "): ", why.message());
  }
  if (g.pinned >= 0 && (g.kernel_types & TypeBit(g.pinned)) == 0) {
    return errors::InvalidArgument(
        "node '", n.name(), "' (", n.type_string(), ") is assigned to device '",
        n.assigned_device_name(), "' but has no kernel for device type ",
        devices_[g.pinned]->device_type());
  }
  return absl::OkStatus();
}

Status Placer::ColocateNodes() {
  for (Node* n : graph_->nodes()) {
    auto it = n->attrs().find("_class");
    if (it == n->attrs().end()) continue;
    std::vector<std::string> entries(it->second.list().s().begin(),
                                     it->second.list().s().end());
    if (it->second.value_case() == AttrValue::kS) {
      entries.push_back(it->second.s());
    }
    for (const std::string& entry : entries) {
      if (!absl::StartsWith(entry, "loc:@")) continue;
      const Node* other = graph_->FindNode(entry.substr(5));
      if (other == nullptr || other == n) continue;
      RETURN_IF_ERROR(
          Union(*n, *other,
                absl::StrCat("'", n->name(), "' has colocation attr _class '",
                             entry, "'")));
    }
  }
  for (const Edge* e : graph_->edges()) {
    if (e->IsControlEdge()) continue;
    const Node& src = *e->src();
    const Node& dst = *e->dst();
    const DataType in = dst.input_type(e->dst_input());
    const bool resource =
        in == DT_RESOURCE || src.output_type(e->src_output()) == DT_RESOURCE;
    if (IsRefType(in) || resource) YieldToProducer(src, dst);
    if (IsRefType(in)) {
      RETURN_IF_ERROR(Union(
          src, dst,
          absl::StrCat("input ", e->dst_input(), " of '", dst.name(),
                       "' is a reference to an output of '", src.name(), "'")));
    } else if (resource) {
      RETURN_IF_ERROR(Union(
          src, dst,
          absl::StrCat("input ", e->dst_input(), " of '", dst.name(),
                       "' is a resource handle made by '", src.name(), "'")));
    }
  }
  return absl::OkStatus();
}

// Note [Reference and resource edges]
// A reference or a resource handle can only be used on the device that
// holds it, so its consumer joins its producer's group. When the two ask
// for incompatible devices (a ReadVariableOp or a gradient's VariableShape
// that a ReplicaDeviceSetter put on the worker, reading a variable on a PS
// task), the consumer's request gives way to the producer's, as in
// TensorFlow's placer ("Ignoring device specification ... because the input
// edge from ... is a reference connection and already has a device field
// set"); compatible requests merge as for any colocation. Devices already
// assigned never give way (Union fails for those).
void Placer::YieldToProducer(const Node& src, const Node& dst) {
  Group& from = groups_[Find(src.id())];
  Group& to = groups_[Find(dst.id())];
  if (&from == &to) return;
  for (int f = 0; f < kNumFields; ++f) {
    if (from.dropped[f] || to.dropped[f]) continue;
    const std::string theirs = GetField(from.spec, f);
    const std::string ours = GetField(to.spec, f);
    if (!theirs.empty() && !ours.empty() && theirs != ours) {
      to.spec = from.spec;
      to.setter = from.setter;
      to.dropped = from.dropped;
      return;
    }
  }
}

Status Placer::Union(const Node& a, const Node& b, absl::string_view reason) {
  int ra = Find(a.id());
  int rb = Find(b.id());
  if (ra == rb) return absl::OkStatus();
  if (rank_[ra] < rank_[rb]) std::swap(ra, rb);
  Group& into = groups_[ra];
  Group& from = groups_[rb];
  const uint64_t types = into.kernel_types & from.kernel_types;
  if (types == 0) {
    return errors::InvalidArgument(
        "Cannot colocate nodes '", a.name(), "' and '", b.name(), "' (", reason,
        "): no device type has kernels for both groups; ", MembersText(into),
        " can run on ", TypeList(into.kernel_types), ", and ",
        MembersText(from), " on ", TypeList(from.kernel_types));
  }
  if (into.pinned >= 0 && from.pinned >= 0 && into.pinned != from.pinned) {
    return errors::InvalidArgument(
        "Cannot colocate nodes '", into.pinned_by->name(), "' and '",
        from.pinned_by->name(), "' (", reason,
        "): they are already assigned to different devices '",
        devices_[into.pinned]->name(), "' and '", devices_[from.pinned]->name(),
        "'");
  }
  RETURN_IF_ERROR(MergeSpecs(&into, from, reason));
  into.kernel_types = types;
  if (into.pinned < 0) {
    into.pinned = from.pinned;
    into.pinned_by = from.pinned_by;
  }
  if (into.pinned >= 0 && (types & TypeBit(into.pinned)) == 0) {
    return errors::InvalidArgument(
        "Cannot colocate nodes '", a.name(), "' and '", b.name(), "' (", reason,
        "): '", into.pinned_by->name(), "' is assigned to device '",
        devices_[into.pinned]->name(), "' but ", MembersText(from), " and ",
        MembersText(into), " together only have kernels for ", TypeList(types));
  }
  into.members.insert(into.members.end(), from.members.begin(),
                      from.members.end());
  from = Group();
  parent_[rb] = ra;
  if (rank_[ra] == rank_[rb]) ++rank_[ra];
  return absl::OkStatus();
}

// Merges `from`'s spec into `into`'s, field by field (TF's MergeDevNames).
Status Placer::MergeSpecs(Group* into, const Group& from,
                          absl::string_view reason) {
  for (int f = 0; f < kNumFields; ++f) {
    if (into->dropped[f] || from.dropped[f]) {
      into->dropped[f] = true;
      continue;
    }
    const std::string theirs = GetField(from.spec, f);
    if (theirs.empty()) continue;
    const std::string ours = GetField(into->spec, f);
    if (ours.empty()) {
      CopyField(from.spec, f, &into->spec);
      into->setter[f] = from.setter[f];
      continue;
    }
    if (ours == theirs) continue;
    if (!options_.allow_soft_placement) {
      const Node& x = *into->setter[f];
      const Node& y = *from.setter[f];
      return errors::InvalidArgument(
          "Cannot colocate nodes '", x.name(), "' and '", y.name(),
          "': Cannot merge devices with incompatible ", FieldPlural(f), ": ",
          SpecOf(x), " and ", SpecOf(y), "; they are colocated because ",
          reason);
    }
    into->dropped[f] = true;
  }
  // An id means nothing without its type.
  if (into->dropped[kType]) into->dropped[kId] = true;
  for (int f = 0; f < kNumFields; ++f) {
    if (into->dropped[f]) {
      ClearField(f, &into->spec);
      into->setter[f] = nullptr;
    }
  }
  return absl::OkStatus();
}

// Devices matching `spec` with a type in `types`, in preference order.
std::vector<int> Placer::Matching(const DeviceName& spec,
                                  uint64_t types) const {
  std::vector<int> out;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if ((types & TypeBit(d)) && devices_[d]->parsed_name().Matches(spec)) {
      out.push_back(static_cast<int>(d));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](int a, int b) { return priority_[a] > priority_[b]; });
  return out;
}

Status Placer::ComputeCandidates(Group* g) {
  if (g->pinned >= 0) {  // Union checked its kernels.
    g->candidates = {g->pinned};
    return absl::OkStatus();
  }
  g->candidates = Matching(g->spec, g->kernel_types);
  if (!g->candidates.empty()) return absl::OkStatus();
  if (!options_.allow_soft_placement) return NoCandidateError(*g);
  DeviceName relaxed = g->spec;
  relaxed.id = -1;
  g->candidates = Matching(relaxed, g->kernel_types);
  if (!g->candidates.empty()) return absl::OkStatus();
  relaxed.type.clear();
  g->candidates = Matching(relaxed, g->kernel_types);
  if (!g->candidates.empty()) return absl::OkStatus();
  // InitNode and Union keep kernel_types nonempty: some device fits.
  g->candidates = Matching(DeviceName(), g->kernel_types);
  return absl::OkStatus();
}

// The group's spec as the user wrote it when one node asked for it all,
// else the merged spec and whose requests it came from.
std::string Placer::SpecText(const Group& g) const {
  const Node* requester = nullptr;
  for (int f = 0; f < kNumFields; ++f) {
    if (g.setter[f] == nullptr) continue;
    if (requester != nullptr && requester != g.setter[f]) {
      return absl::StrCat("'", g.spec.ToString(),
                          "' (merged from the requests of ", MembersText(g),
                          ")");
    }
    requester = g.setter[f];
  }
  return absl::StrCat("'", requester == nullptr ? "" : NodeSpec(*requester),
                      "'");
}

std::string Placer::MembersText(const Group& g) const {
  constexpr size_t kMax = 8;
  std::vector<std::string> names;
  for (size_t i = 0; i < g.members.size() && i < kMax; ++i) {
    names.push_back(absl::StrCat("'", g.members[i]->name(), "'"));
  }
  if (g.members.size() > kMax) {
    names.push_back(absl::StrCat("and ", g.members.size() - kMax, " more"));
  }
  return g.members.size() == 1 ? names[0]
                               : absl::StrCat("the colocation group [",
                                              absl::StrJoin(names, ", "), "]");
}

// Says why no device matches the group's spec and has its kernels.
Status Placer::NoCandidateError(const Group& g) const {
  const Node* who = g.members[0];
  for (int f = 0; f < kNumFields; ++f) {
    if (g.setter[f] != nullptr) {
      who = g.setter[f];
      break;
    }
  }
  std::string msg =
      absl::StrCat("Cannot assign a device for operation '", who->name(),
                   "': Could not satisfy explicit device "
                   "specification ",
                   SpecText(g), " because ");
  uint64_t matching_types = 0;
  for (int d : Matching(g.spec, ~uint64_t{0})) matching_types |= TypeBit(d);
  if (matching_types == 0) {
    absl::StrAppend(&msg,
                    "no devices matching that specification are registered "
                    "in this process; available devices: ",
                    DeviceList());
  } else {
    absl::StrAppend(&msg, "no supported kernel for ", TypeList(matching_types),
                    " devices is available: ");
    std::vector<std::string> reasons;
    std::vector<std::string> all;
    for (const Node* m : g.members) {
      uint64_t has = 0;
      for (size_t t = 0; t < types_.size(); ++t) {
        if (KernelRegistry::Global()->HasKernel(types_[t], m->props())) {
          has |= uint64_t{1} << t;
        }
      }
      all.push_back(absl::StrCat("'", m->name(), "' (", m->type_string(),
                                 ") has kernels for ", TypeList(has)));
      if (has & matching_types) continue;
      reasons.push_back(absl::StrCat(
          "no kernel for op '", m->type_string(), "' (node '", m->name(),
          "') on device type ", TypeList(matching_types),
          "; it has kernels for: ", TypeList(has)));
    }
    // Each member may have a kernel for some matching type, but no one
    // type for all of them.
    absl::StrAppend(&msg, absl::StrJoin(reasons.empty() ? all : reasons, "; "));
  }
  if (g.members.size() > 1) {
    absl::StrAppend(&msg, "; '", who->name(), "' is in ", MembersText(g));
  }
  return errors::InvalidArgument(msg);
}

// Rule 5's input heuristic: the first placed data input's device, when it is
// a candidate of the group's preferred type.
int Placer::ChooseByInputs(const Node& n, const Group& g) const {
  const int preferred = type_of_[g.candidates[0]];
  for (const Edge* e : n.input_edges_in_order()) {
    if (e == nullptr) continue;
    const int d = device_of_[e->src()->id()];
    if (d < 0 || type_of_[d] != preferred) continue;
    if (std::find(g.candidates.begin(), g.candidates.end(), d) !=
        g.candidates.end()) {
      return d;
    }
  }
  return g.candidates[0];
}

int Placer::ChooseForGenerator(const Node& n, const Group& g) const {
  int d = -1;
  for (const Edge* e : n.out_edges()) {
    const int c = device_of_[e->dst()->id()];
    if (c < 0 || (d >= 0 && c != d)) return g.candidates[0];
    d = c;
  }
  if (d >= 0 && std::find(g.candidates.begin(), g.candidates.end(), d) !=
                    g.candidates.end()) {
    return d;
  }
  return g.candidates[0];
}

// When `n` would finish on device `d` in the simulated execution. Inputs not
// placed yet (deferred generators, loop back edges) cost nothing.
double Placer::FinishTime(const Node& n, int d) const {
  const PlacementCostModel& cost = options_.cost_model;
  double start = device_free_at_[d];
  for (const Edge* e : n.in_edges()) {
    const int s = device_of_[e->src()->id()];
    if (s < 0) continue;
    double ready = finish_[e->src()->id()];
    if (!e->IsControlEdge() && s != d) {
      ready += cost.transfer_cost
                   ? cost.transfer_cost(*e, *devices_[s], *devices_[d])
                   : 1.0;
    }
    start = std::max(start, ready);
  }
  return start + (cost.compute_cost ? cost.compute_cost(n, *devices_[d]) : 1.0);
}

int Placer::ChooseGreedy(const Node& n, const Group& g) const {
  int best = g.candidates[0];
  double best_time = std::numeric_limits<double>::infinity();
  for (int d : g.candidates) {
    const double t = FinishTime(n, d);
    if (t < best_time) {
      best = d;
      best_time = t;
    }
  }
  return best;
}

Status Placer::PlaceNodes() {
  std::vector<Node*> order;
  RETURN_IF_ERROR(TopologicalSort(*graph_, &order));
  const bool greedy = options_.strategy == PlacementStrategy::kGreedyCostModel;
  std::vector<Node*> deferred;
  for (Node* n : order) {
    Group& g = GroupOf(*n);
    if (g.device < 0) {
      if (!greedy && IsGenerator(*n) && g.candidates.size() > 1) {
        deferred.push_back(n);
        continue;
      }
      g.device = greedy ? ChooseGreedy(*n, g) : ChooseByInputs(*n, g);
    }
    if (greedy) {
      finish_[n->id()] = FinishTime(*n, g.device);
      device_free_at_[g.device] = finish_[n->id()];
    }
    device_of_[n->id()] = g.device;
  }
  for (Node* n : deferred) {
    Group& g = GroupOf(*n);
    if (g.device < 0) g.device = ChooseForGenerator(*n, g);
    device_of_[n->id()] = g.device;
  }
  return absl::OkStatus();
}

Status Placer::Run() {
  RETURN_IF_ERROR(InitDevices());
  const int n = graph_->num_node_ids();
  parent_.resize(n);
  rank_.assign(n, 0);
  groups_.resize(n);
  device_of_.assign(n, -1);
  finish_.assign(n, 0.0);
  device_free_at_.assign(devices_.size(), 0.0);
  for (int i = 0; i < n; ++i) parent_[i] = i;
  const std::vector<Node*> nodes = graph_->nodes();
  for (const Node* node : nodes) RETURN_IF_ERROR(InitNode(*node));
  RETURN_IF_ERROR(ColocateNodes());
  // Node-id order, so the error reported first does not depend on the
  // order of unions.
  for (const Node* node : nodes) {
    if (Find(node->id()) == node->id()) {
      RETURN_IF_ERROR(ComputeCandidates(&groups_[node->id()]));
    }
  }
  return PlaceNodes();
}

}  // namespace

Status PlaceGraph(const PlacerOptions& options,
                  const std::vector<Device*>& devices, Graph* graph,
                  std::vector<std::string>* log) {
  Placer placer(options, devices, graph);
  RETURN_IF_ERROR(placer.Run());
  for (Node* n : graph->nodes()) {
    const Device& d = *devices[placer.device_of(*n)];
    n->set_assigned_device_name(d.name());
    if (options.log_device_placement && log != nullptr) {
      log->push_back(
          absl::StrCat(n->name(), ": (", n->type_string(), "): ", d.name()));
    }
  }
  return absl::OkStatus();
}

StatusOr<PlacerOptions> PlacerOptionsFromConfig(const ConfigProto& config) {
  PlacerOptions opts;
  opts.allow_soft_placement = config.allow_soft_placement();
  opts.log_device_placement = config.log_device_placement();
  const std::string& strategy =
      config.graph_options().runnel_placement_strategy();
  if (strategy == "greedy_cost_model") {
    opts.strategy = PlacementStrategy::kGreedyCostModel;
  } else if (!strategy.empty() && strategy != "colocate_with_inputs") {
    return errors::InvalidArgument(
        "unknown graph_options.runnel_placement_strategy '", strategy,
        "' (expected \"colocate_with_inputs\" or \"greedy_cost_model\")");
  }
  return opts;
}

Status PlaceSessionGraph(
    const PlacerOptions& options, const std::vector<Device*>& devices,
    Graph* graph, absl::flat_hash_map<std::string, std::string>* stateful) {
  for (Node* n : graph->nodes()) {
    auto it = stateful->find(n->name());
    n->set_assigned_device_name(it != stateful->end() ? it->second : "");
  }
  PlacerOptions opts = options;
  if (opts.strategy == PlacementStrategy::kGreedyCostModel &&
      !opts.cost_model.compute_cost && !opts.cost_model.transfer_cost) {
    opts.cost_model = ShapeCostModel(*graph);
  }
  std::vector<std::string> log;
  RETURN_IF_ERROR(PlaceGraph(opts, devices, graph,
                             opts.log_device_placement ? &log : nullptr));
  for (const std::string& line : log) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  for (Node* n : graph->nodes()) {
    if (n->IsStateful() && !n->IsArg() && !n->IsRetval()) {
      (*stateful)[n->name()] = n->assigned_device_name();
    }
  }
  return absl::OkStatus();
}

}  // namespace runnel
