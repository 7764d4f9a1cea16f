#include "runnel/graph/partition.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runnel/framework/device_name.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/graph_def.h"

namespace runnel {
namespace {

bool IsOneOf(const Node* n, std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (n->type_string() == op) return true;
  }
  return false;
}
bool IsEnter(const Node* n) { return IsOneOf(n, {"Enter", "RefEnter"}); }
bool IsExit(const Node* n) { return IsOneOf(n, {"Exit", "RefExit"}); }
bool IsLoopCond(const Node* n) { return n->type_string() == "LoopCond"; }

std::string NodeOp(const Node* n) {
  return absl::StrCat("'", n->name(), "' (", n->type_string(), ")");
}

// ---------------------------------------------------------------------------
// Frames: which while-loop frame each node's inputs and outputs live in,
// assigned as the executor does (an Enter's outputs are in the frame it
// names, an Exit's in its frame's parent, everything else's in its inputs'
// frame).

struct FrameInfo {
  std::string name;  // Empty for the root.
  int parent = -1;
  const Node* loop_cond = nullptr;
  int64_t parallel_iterations = 10;
};

struct Frames {
  std::vector<FrameInfo> frames;  // frames[0] is the root.
  std::vector<int> in_frame;      // By node id: the frame of its inputs.
  std::vector<int> out_frame;     // By node id: the frame of its outputs.
};

Status AssignOutFrame(const Node* n, int f, Frames* fr,
                      absl::flat_hash_map<std::string, int>* index) {
  int out = f;
  if (IsExit(n)) {
    if (f == 0) {
      return errors::InvalidArgument("node ", NodeOp(n),
                                     " is not inside a while loop: it has no "
                                     "frame to exit");
    }
    out = fr->frames[f].parent;
  } else if (IsEnter(n)) {
    std::string name;
    RETURN_IF_ERROR(GetAttr(n->attrs(), "frame_name", &name));
    auto [it, inserted] =
        index->emplace(name, static_cast<int>(fr->frames.size()));
    if (inserted) {
      FrameInfo info;
      info.name = name;
      info.parent = f;
      RETURN_IF_ERROR(GetAttr(n->attrs(), "parallel_iterations",
                              &info.parallel_iterations));
      fr->frames.push_back(std::move(info));
    } else if (fr->frames[it->second].parent != f) {
      return errors::InvalidArgument(
          "frame '", name, "' is entered from two different frames ('",
          fr->frames[fr->frames[it->second].parent].name, "' and '",
          fr->frames[f].name, "'), at node ", NodeOp(n));
    }
    out = it->second;
  }
  fr->out_frame[n->id()] = out;
  return absl::OkStatus();
}

Status BuildFrames(const Graph& g, Frames* fr) {
  fr->frames.assign(1, FrameInfo{});
  fr->in_frame.assign(g.num_node_ids(), -1);
  fr->out_frame.assign(g.num_node_ids(), -1);
  absl::flat_hash_map<std::string, int> index;
  std::deque<const Node*> queue;
  for (const Node* n : g.nodes()) {
    if (n->in_edges().empty()) {
      fr->in_frame[n->id()] = 0;
      queue.push_back(n);
    }
  }
  while (!queue.empty()) {
    const Node* n = queue.front();
    queue.pop_front();
    const int f = fr->in_frame[n->id()];
    RETURN_IF_ERROR(AssignOutFrame(n, f, fr, &index));
    const int out = fr->out_frame[n->id()];
    if (IsLoopCond(n) && fr->frames[f].loop_cond == nullptr) {
      fr->frames[f].loop_cond = n;
    }
    for (const Edge* e : n->out_edges()) {
      int& dst_frame = fr->in_frame[e->dst()->id()];
      if (dst_frame < 0) {
        dst_frame = out;
        queue.push_back(e->dst());
      } else if (dst_frame != out) {
        return errors::InvalidArgument(
            "node ", NodeOp(e->dst()),
            " has inputs from different frames: ", NodeOp(n),
            " gives it a value in frame '", fr->frames[out].name,
            "' but it is already in frame '", fr->frames[dst_frame].name, "'");
      }
    }
  }
  for (const Node* n : g.nodes()) {
    if (fr->in_frame[n->id()] < 0) {
      return errors::InvalidArgument(
          "node ", NodeOp(n),
          " can never run: it is on a cycle not entered through a Merge");
    }
  }
  return absl::OkStatus();
}

bool HasEnter(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (IsEnter(n)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Checking the placement.

// Fills `loc` (by node id) and `incarnations` (by device), checking every
// node's device.
Status CheckPlacement(const PartitionOptions& opts, const Graph& g,
                      std::vector<std::string>* loc,
                      absl::flat_hash_map<std::string, uint64_t>* inc) {
  loc->assign(g.num_node_ids(), "");
  for (const Node* n : g.nodes()) {
    const std::string& device = n->assigned_device_name();
    if (device.empty()) {
      return errors::InvalidArgument("node ", NodeOp(n),
                                     " has no assigned device; place the "
                                     "graph before partitioning it");
    }
    if (!inc->contains(device)) {
      auto parsed = DeviceName::Parse(device);
      if (!parsed.ok() || parsed->job.empty() || parsed->replica < 0 ||
          parsed->task < 0 || parsed->type.empty() || parsed->id < 0) {
        return errors::InvalidArgument(
            "node ", NodeOp(n), " is assigned to '", device,
            "', which is not a full device name "
            "(/job:<job>/replica:<r>/task:<t>/device:<type>:<id>)");
      }
      const uint64_t incarnation = opts.get_incarnation(device);
      if (incarnation == kIllegalIncarnation) {
        return errors::InvalidArgument("node ", NodeOp(n),
                                       " is assigned to unknown device '",
                                       device, "'");
      }
      (*inc)[device] = incarnation;
    }
    (*loc)[n->id()] = opts.node_to_loc ? opts.node_to_loc(n) : device;
    if ((*loc)[n->id()].empty()) {
      return errors::InvalidArgument("node ", NodeOp(n),
                                     " has an empty partition name "
                                     "(node_to_loc)");
    }
  }
  return absl::OkStatus();
}

// An input string of a NodeDef: "src", "src:k" or "^src".
std::string InputString(absl::string_view node, int slot) {
  if (slot == kControlSlot) return absl::StrCat("^", node);
  if (slot == 0) return std::string(node);
  return absl::StrCat(node, ":", slot);
}

// Fresh node names "<base>/_N": not in the graph, not handed out before.
class NameGen {
 public:
  explicit NameGen(const Graph* g) : g_(g) {}
  std::string New(absl::string_view base) {
    while (true) {
      std::string name = absl::StrCat(base, "/_", counter_++);
      if (g_->FindNode(name) == nullptr && used_.insert(name).second) {
        return name;
      }
    }
  }

 private:
  const Graph* g_;
  absl::flat_hash_set<std::string> used_;
  int64_t counter_ = 0;
};

// The control loop's Merge per (frame name, partition).
using ControlLoops = std::map<std::pair<std::string, std::string>, const Node*>;

Status RefAcrossPartitionsError(const Node* src, const Node* dst, int input) {
  return errors::InvalidArgument(
      "node ", NodeOp(dst), " on ", dst->assigned_device_name(),
      " takes a reference as input ", input, " from node ", NodeOp(src), " on ",
      src->assigned_device_name(),
      ": references cannot cross devices; place them together");
}

// ---------------------------------------------------------------------------
// The partitioning pass (Note [Partitioning]).

class Partitioner {
 public:
  Partitioner(const PartitionOptions& opts, const Graph& g,
              const std::vector<std::string>& loc,
              const absl::flat_hash_map<std::string, uint64_t>& incarnations,
              const Frames* frames, const ControlLoops* loops, NameGen* names,
              std::map<std::string, GraphDef>* out)
      : opts_(opts),
        g_(g),
        loc_(loc),
        incarnations_(incarnations),
        frames_(frames),
        loops_(loops),
        names_(names),
        out_(out) {}

  // A _Recv of a data edge in the root frame, for Note [Recv scheduling]:
  // where it is and the original nodes it connects.
  struct RootRecv {
    std::string loc;             // Its partition.
    int index = 0;               // Its index in that partition's GraphDef.
    int src = 0;                 // The sending node's id.
    std::vector<int> consumers;  // Ids of the nodes it feeds.
  };

  Status Run() {
    for (const Node* n : g_.nodes()) RETURN_IF_ERROR(AddNode(n));
    VersionDef versions = g_.versions();
    if (versions.producer() == 0)
      versions.set_producer(kDefaultGraphDefProducer);
    for (auto& [name, gdef] : *out_) *gdef.mutable_versions() = versions;
    return absl::OkStatus();
  }

  const std::vector<RootRecv>& root_recvs() const { return root_recvs_; }

 private:
  // A transfer already made: (src id, src slot or kControlSlot, dst
  // partition, recv in host memory).
  using RecvKey = std::tuple<int, int, std::string, bool>;

  Status AddNode(const Node* n) {
    GraphDef* gdef = &(*out_)[loc_[n->id()]];
    NodeDef* def = gdef->add_node();
    def->set_name(n->name());
    def->set_op(n->type_string());
    def->set_device(n->assigned_device_name());
    for (const auto& [key, value] : n->attrs())
      (*def->mutable_attr())[key] = value;
    for (const Edge* e : n->input_edges_in_order()) {
      if (e == nullptr) {
        return errors::InvalidArgument("node ", NodeOp(n),
                                       " has an unconnected input; every input "
                                       "must have an edge before partitioning");
      }
      if (SameLoc(e)) {
        def->add_input(InputString(e->src()->name(), e->src_output()));
      } else {
        ASSIGN_OR_RETURN(std::string recv, RecvFor(e));
        def->add_input(std::move(recv));
      }
    }
    std::vector<std::string> controls;
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControlEdge()) continue;
      if (SameLoc(e)) {
        controls.push_back(InputString(e->src()->name(), kControlSlot));
      } else {
        ASSIGN_OR_RETURN(std::string recv, RecvFor(e));
        controls.push_back(InputString(recv, kControlSlot));
      }
    }
    std::sort(controls.begin(), controls.end());
    controls.erase(std::unique(controls.begin(), controls.end()),
                   controls.end());
    for (std::string& c : controls) def->add_input(std::move(c));
    return absl::OkStatus();
  }

  bool SameLoc(const Edge* e) const {
    return loc_[e->src()->id()] == loc_[e->dst()->id()];
  }

  std::string NewName(absl::string_view base) { return names_->New(base); }

  // The name of the _Recv (in dst's partition) that delivers what `e`
  // carries, adding it and its _Send if this is the first such edge.
  StatusOr<std::string> RecvFor(const Edge* e) {
    const Node* src = e->src();
    const Node* dst = e->dst();
    const bool control = e->IsControlEdge();
    if (!control && IsRefType(dst->input_type(e->dst_input()))) {
      return RefAcrossPartitionsError(src, dst, e->dst_input());
    }
    const bool recv_on_host = !control && opts_.input_in_host_memory &&
                              opts_.input_in_host_memory(dst, e->dst_input());
    RecvKey key{src->id(), e->src_output(), loc_[dst->id()], recv_on_host};
    const bool in_root =
        !control && (frames_ == nullptr || frames_->out_frame[src->id()] == 0);
    if (auto it = recvs_.find(key); it != recvs_.end()) {
      if (in_root) root_recvs_[it->second.root].consumers.push_back(dst->id());
      return it->second.name;
    }

    std::string frame_control;
    if (frames_ != nullptr && frames_->out_frame[src->id()] != 0) {
      ASSIGN_OR_RETURN(frame_control, LoopControlFor(e));
    }
    GraphDef* src_gdef = &(*out_)[loc_[src->id()]];
    GraphDef* dst_gdef = &(*out_)[loc_[dst->id()]];
    std::string send_input;
    DataType dtype = DT_FLOAT;
    if (control) {
      NodeDef* dummy = src_gdef->add_node();
      dummy->set_name(NewName(absl::StrCat(src->name(), "/ctrl")));
      dummy->set_op("Const");
      dummy->set_device(src->assigned_device_name());
      (*dummy->mutable_attr())["dtype"] = MakeAttrValue(DT_FLOAT);
      (*dummy->mutable_attr())["value"] =
          MakeAttrValue(Tensor(DT_FLOAT, TensorShape({0})));
      dummy->add_input(InputString(src->name(), kControlSlot));
      send_input = dummy->name();
    } else {
      dtype = BaseType(src->output_type(e->src_output()));
      send_input = InputString(src->name(), e->src_output());
    }
    const std::string tensor_name =
        absl::StrCat("edge_", e->id(), "_", src->name());
    const bool send_on_host = !control && opts_.output_in_host_memory &&
                              opts_.output_in_host_memory(src, e->src_output());

    NodeDef* send = src_gdef->add_node();
    send->set_name(NewName(src->name()));
    send->set_op(send_on_host ? "_HostSend" : "_Send");
    send->set_device(src->assigned_device_name());
    SetTransferAttrs(e, tensor_name, send);
    (*send->mutable_attr())["T"] = MakeAttrValue(dtype);
    send->add_input(send_input);

    NodeDef* recv = dst_gdef->add_node();
    recv->set_name(NewName(src->name()));
    recv->set_op(recv_on_host ? "_HostRecv" : "_Recv");
    recv->set_device(dst->assigned_device_name());
    SetTransferAttrs(e, tensor_name, recv);
    (*recv->mutable_attr())["tensor_type"] = MakeAttrValue(dtype);
    if (!frame_control.empty()) {
      recv->add_input(InputString(frame_control, kControlSlot));
    }
    RecvInfo info{recv->name(), -1};
    if (in_root) {
      info.root = static_cast<int>(root_recvs_.size());
      root_recvs_.push_back(RootRecv{
          loc_[dst->id()], dst_gdef->node_size() - 1, src->id(), {dst->id()}});
    }
    recvs_[key] = info;
    return recv->name();
  }

  void SetTransferAttrs(const Edge* e, const std::string& tensor_name,
                        NodeDef* def) const {
    const std::string& send_device = e->src()->assigned_device_name();
    auto& attrs = *def->mutable_attr();
    attrs["tensor_name"] = MakeAttrValue(tensor_name);
    attrs["send_device"] = MakeAttrValue(send_device);
    attrs["send_device_incarnation"] =
        MakeAttrValue(static_cast<int64_t>(incarnations_.at(send_device)));
    attrs["recv_device"] = MakeAttrValue(e->dst()->assigned_device_name());
    attrs["client_terminated"] = MakeAttrValue(false);
    attrs["_src"] = MakeAttrValue(e->src()->name());
    attrs["_dst"] = MakeAttrValue(e->dst()->name());
  }

  // The control-loop Merge a Recv for `e` (an edge inside a loop frame)
  // must wait for (Note [Cross-device loops]).
  StatusOr<std::string> LoopControlFor(const Edge* e) const {
    const std::string& frame =
        frames_->frames[frames_->out_frame[e->src()->id()]].name;
    if (loops_ != nullptr) {
      auto it = loops_->find({frame, loc_[e->dst()->id()]});
      if (it != loops_->end()) return it->second->name();
    }
    return errors::Internal("edge ", e->DebugString(), " crosses from ",
                            e->src()->assigned_device_name(), " to ",
                            e->dst()->assigned_device_name(),
                            " inside while-loop frame '", frame,
                            "' but that partition has no control loop");
  }

  const PartitionOptions& opts_;
  const Graph& g_;
  const std::vector<std::string>& loc_;
  const absl::flat_hash_map<std::string, uint64_t>& incarnations_;
  const Frames* frames_;
  const ControlLoops* loops_;
  NameGen* names_;
  std::map<std::string, GraphDef>* out_;
  struct RecvInfo {
    std::string name;
    int root = -1;  // Index into root_recvs_, or -1.
  };
  std::map<RecvKey, RecvInfo> recvs_;
  std::vector<RootRecv> root_recvs_;
};

// ---------------------------------------------------------------------------
// Cross-device loops (Note [Cross-device loops]), on a private copy of the
// graph.

bool IsNextIteration(const Node* n) {
  return IsOneOf(n, {"NextIteration", "RefNextIteration"});
}

// True if some edge inside a loop frame crosses partitions, or some frame
// has nodes in several partitions.
bool NeedsControlLoops(const Graph& g, const Frames& fr,
                       const std::vector<std::string>& loc) {
  for (const Edge* e : g.edges()) {
    if (fr.out_frame[e->src()->id()] != 0 &&
        loc[e->src()->id()] != loc[e->dst()->id()]) {
      return true;
    }
  }
  absl::flat_hash_map<int, const std::string*> first_loc;
  for (const Node* n : g.nodes()) {
    const int f = fr.in_frame[n->id()];
    if (f == 0) continue;
    auto [it, inserted] = first_loc.emplace(f, &loc[n->id()]);
    if (!inserted && *it->second != loc[n->id()]) return true;
  }
  return false;
}

class LoopRewriter {
 public:
  LoopRewriter(Graph* g, std::vector<std::string>* loc, NameGen* names)
      : g_(g), loc_(loc), names_(names) {}

  // Colocates loop boundaries, then adds the control loops; `frames` is
  // recomputed for the final graph.
  Status Run(Frames* frames, ControlLoops* loops) {
    RETURN_IF_ERROR(ColocateBoundaries());
    RETURN_IF_ERROR(BuildFrames(*g_, frames));
    RETURN_IF_ERROR(AddControlLoops(*frames, loops));
    return BuildFrames(*g_, frames);
  }

 private:
  const std::string& Loc(const Node* n) const { return (*loc_)[n->id()]; }
  void Put(Node* n, const std::string& loc, const std::string& device) {
    if (static_cast<int>(loc_->size()) < g_->num_node_ids()) {
      loc_->resize(g_->num_node_ids());
    }
    (*loc_)[n->id()] = loc;
    n->set_assigned_device_name(device);
  }

  // An Enter's output exists only in iteration 0 (or, for a constant one,
  // only where the frame has iterations) and a NextIteration's only in the
  // next iteration, so a per-iteration Recv of either would wait forever:
  // each one whose consumers are elsewhere moves to them, or is copied.
  // Moving one may give the node feeding it (an outer Enter) consumers
  // elsewhere, so this repeats until nothing changes.
  Status ColocateBoundaries() {
    for (int round = 0; round <= g_->num_nodes(); ++round) {
      bool changed = false;
      for (Node* n : g_->nodes()) {
        if (!IsEnter(n) && !IsNextIteration(n)) continue;
        ASSIGN_OR_RETURN(bool c, Colocate(n));
        changed |= c;
      }
      if (!changed) return absl::OkStatus();
    }
    return errors::Internal("moving loop boundaries did not settle");
  }

  StatusOr<bool> Colocate(Node* n) {
    std::map<std::string, std::vector<const Edge*>> remote;
    bool has_local = false;
    for (const Edge* e : n->out_edges()) {
      if (Loc(e->dst()) == Loc(n)) {
        has_local = true;
      } else {
        remote[Loc(e->dst())].push_back(e);
      }
    }
    if (remote.empty()) return false;
    auto it = remote.begin();
    if (!has_local && !IsRefType(n->output_type(0))) {
      Put(n, it->first, it->second.front()->dst()->assigned_device_name());
      ++it;
    }
    for (; it != remote.end(); ++it) {
      RETURN_IF_ERROR(CopyInto(n, it->first, it->second));
    }
    return true;
  }

  // Adds a copy of `n` (the value op for a Ref one) in partition `loc`,
  // reading what `n` reads, and moves `edges` (out of `n`) onto it.
  Status CopyInto(Node* n, const std::string& loc,
                  const std::vector<const Edge*>& edges) {
    std::string op = n->type_string();
    if (op.rfind("Ref", 0) == 0) op = op.substr(3);
    ASSIGN_OR_RETURN(auto props,
                     NodeProperties::Create(names_->New(n->name()), op,
                                            n->requested_device(), n->attrs()));
    ASSIGN_OR_RETURN(Node * copy, g_->AddNode(std::move(props)));
    Put(copy, loc, edges.front()->dst()->assigned_device_name());
    for (const Edge* in : n->in_edges()) {
      if (in->IsControlEdge()) {
        g_->AddControlEdge(in->src(), copy);
      } else {
        RETURN_IF_ERROR(
            g_->AddEdge(in->src(), in->src_output(), copy, in->dst_input())
                .status());
      }
    }
    for (const Edge* e : edges) {
      Node* dst = e->dst();
      const int input = e->dst_input();
      if (e->IsControlEdge()) {
        g_->RemoveEdge(e);
        g_->AddControlEdge(copy, dst);
        continue;
      }
      if (IsRefType(dst->input_type(input))) {
        return RefAcrossPartitionsError(n, dst, input);
      }
      const int output = e->src_output();
      g_->RemoveEdge(e);
      RETURN_IF_ERROR(g_->AddEdge(copy, output, dst, input).status());
    }
    return absl::OkStatus();
  }

  // Which (frame, partition) pairs get a control loop, with the device it
  // runs on: every partition receiving an edge inside the frame, and, for a
  // frame spread over partitions, every one holding its nodes but not its
  // LoopCond.
  Status AddControlLoops(const Frames& fr, ControlLoops* loops) {
    std::map<std::pair<int, std::string>, std::string> need;
    for (const Edge* e : g_->edges()) {
      const int f = fr.out_frame[e->src()->id()];
      if (f != 0 && Loc(e->src()) != Loc(e->dst())) {
        need.emplace(std::make_pair(f, Loc(e->dst())),
                     e->dst()->assigned_device_name());
      }
    }
    std::map<int, std::map<std::string, std::string>> holds;
    for (const Node* n : g_->nodes()) {
      const int f = fr.in_frame[n->id()];
      if (f != 0) holds[f].emplace(Loc(n), n->assigned_device_name());
    }
    for (const auto& [f, locs] : holds) {
      if (locs.size() < 2) continue;
      const Node* cond = fr.frames[f].loop_cond;
      for (const auto& [loc, device] : locs) {
        if (cond == nullptr || loc != Loc(cond)) {
          need.emplace(std::make_pair(f, loc), device);
        }
      }
    }
    for (const auto& [key, device] : need) {
      RETURN_IF_ERROR(
          ControlLoop(fr, key.first, key.second, device, loops).status());
    }
    return absl::OkStatus();
  }

  StatusOr<Node*> AddDummy(const std::string& base, const std::string& op,
                           AttrMap attrs, const std::string& loc,
                           const std::string& device) {
    ASSIGN_OR_RETURN(Node * n,
                     g_->AddNode(names_->New(base), op, std::move(attrs)));
    Put(n, loc, device);
    return n;
  }

  // The Merge of frame `f`'s control loop in partition `loc`, built (with
  // those of the enclosing frames) if not there yet.
  StatusOr<Node*> ControlLoop(const Frames& fr, int f, const std::string& loc,
                              const std::string& device, ControlLoops* loops) {
    const FrameInfo& frame = fr.frames[f];
    if (auto it = loops->find({frame.name, loc}); it != loops->end()) {
      return g_->FindNodeId(it->second->id());
    }
    if (frame.loop_cond == nullptr) {
      return errors::InvalidArgument(
          "while-loop frame '", frame.name, "' runs on several devices (",
          device, " among them) but has no LoopCond to drive them");
    }
    Node* cond = g_->FindNodeId(frame.loop_cond->id());
    const std::string base = absl::StrCat("_cloop/", cond->name());
    Node* feed = nullptr;
    if (frame.parent == 0) {
      ASSIGN_OR_RETURN(
          feed, AddDummy(base + "/const", "Const",
                         {{"dtype", MakeAttrValue(DT_FLOAT)},
                          {"value",
                           MakeAttrValue(Tensor(DT_FLOAT, TensorShape({0})))}},
                         loc, device));
    } else {
      ASSIGN_OR_RETURN(feed, ControlLoop(fr, frame.parent, loc, device, loops));
    }
    const AttrValue t = MakeAttrValue(DT_FLOAT);
    ASSIGN_OR_RETURN(Node * enter,
                     AddDummy(base + "/enter", "Enter",
                              {{"T", t},
                               {"frame_name", MakeAttrValue(frame.name)},
                               {"is_constant", MakeAttrValue(false)},
                               {"parallel_iterations",
                                MakeAttrValue(frame.parallel_iterations)}},
                              loc, device));
    ASSIGN_OR_RETURN(Node * merge, AddDummy(base + "/merge", "Merge",
                                            {{"T", t}, {"N", MakeAttrValue(2)}},
                                            loc, device));
    ASSIGN_OR_RETURN(Node * sw, AddDummy(base + "/switch", "Switch", {{"T", t}},
                                         loc, device));
    ASSIGN_OR_RETURN(Node * next, AddDummy(base + "/next", "NextIteration",
                                           {{"T", t}}, loc, device));
    for (auto [src, x, dst, y] :
         {std::tuple(feed, 0, enter, 0), std::tuple(enter, 0, merge, 0),
          std::tuple(next, 0, merge, 1), std::tuple(merge, 0, sw, 0),
          std::tuple(cond, 0, sw, 1), std::tuple(sw, 1, next, 0)}) {
      RETURN_IF_ERROR(g_->AddEdge(src, x, dst, y).status());
    }
    (*loops)[{frame.name, loc}] = merge;
    return merge;
  }

  Graph* g_;
  std::vector<std::string>* loc_;
  NameGen* names_;
};

// ---------------------------------------------------------------------------
// Recv scheduling (Note [Recv scheduling]).

class RecvScheduler {
 public:
  RecvScheduler(const Graph& g, const std::vector<std::string>& loc,
                const Frames* frames)
      : g_(g), loc_(loc), frames_(frames) {}

  // Adds to each Recv of `recvs` (in `partitions`) a control input from
  // the node of its partition chosen by the note; adds nothing if the
  // graph's loops do not contract to a DAG. Returns how many it added.
  int Run(const std::vector<Partitioner::RootRecv>& recvs,
          std::map<std::string, GraphDef>* partitions) {
    if (!ComputeTimes()) return 0;
    MarkMaybeDead();
    CollectCandidates();
    int added = 0;
    for (const Partitioner::RootRecv& r : recvs) {
      const Node* p = PredecessorFor(r);
      if (p == nullptr) continue;
      NodeDef* recv = (*partitions)[r.loc].mutable_node(r.index);
      recv->add_input(InputString(p->name(), kControlSlot));
      ++added;
    }
    return added;
  }

 private:
  // The top-level loop frame holding frame `f`'s nodes.
  int TopFrame(int f) const {
    while (frames_->frames[f].parent != 0) f = frames_->frames[f].parent;
    return f;
  }

  // A node's group: itself, or (for a node of a loop, the loop's Enters
  // and Exits included) its top-level loop, numbered after the node ids.
  int GroupOf(const Node* n) const {
    if (frames_ == nullptr) return n->id();
    const int in = frames_->in_frame[n->id()];
    const int out = frames_->out_frame[n->id()];
    if (in == 0 && out == 0) return n->id();
    return g_.num_node_ids() + TopFrame(in != 0 ? in : out);
  }

  // ASAP and ALAP start times of every group under unit node costs (a
  // loop costs its node count), by Kahn's algorithm over the group graph;
  // false if that graph has a cycle.
  bool ComputeTimes() {
    const int num_groups =
        g_.num_node_ids() +
        (frames_ == nullptr ? 0 : static_cast<int>(frames_->frames.size()));
    group_.assign(g_.num_node_ids(), -1);
    cost_.assign(num_groups, 0);
    std::vector<std::vector<int>> succ(num_groups);
    std::vector<int> pending(num_groups, 0);
    for (const Node* n : g_.nodes()) {
      group_[n->id()] = GroupOf(n);
      ++cost_[group_[n->id()]];
    }
    for (const Edge* e : g_.edges()) {
      const int a = group_[e->src()->id()], b = group_[e->dst()->id()];
      if (a == b) continue;
      succ[a].push_back(b);
      ++pending[b];
    }
    std::vector<int> order;
    for (int gr = 0; gr < num_groups; ++gr) {
      if (cost_[gr] > 0 && pending[gr] == 0) order.push_back(gr);
    }
    for (size_t i = 0; i < order.size(); ++i) {
      for (int b : succ[order[i]]) {
        if (--pending[b] == 0) order.push_back(b);
      }
    }
    int used = 0;
    for (int gr = 0; gr < num_groups; ++gr) used += cost_[gr] > 0;
    if (static_cast<int>(order.size()) != used) return false;

    asap_.assign(num_groups, 0);
    int64_t makespan = 0;
    for (int a : order) {
      makespan = std::max(makespan, asap_[a] + cost_[a]);
      for (int b : succ[a]) asap_[b] = std::max(asap_[b], asap_[a] + cost_[a]);
    }
    alap_.assign(num_groups, makespan);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      int64_t latest_end = makespan;
      for (int b : succ[*it]) latest_end = std::min(latest_end, alap_[b]);
      alap_[*it] = latest_end - cost_[*it];
    }
    return true;
  }

  // Nodes that may produce dead outputs: root-frame Switches and
  // everything downstream of them.
  void MarkMaybeDead() {
    maybe_dead_.assign(g_.num_node_ids(), false);
    std::vector<const Node*> stack;
    for (const Node* n : g_.nodes()) {
      if (n->IsSwitch() &&
          (frames_ == nullptr || frames_->in_frame[n->id()] == 0)) {
        maybe_dead_[n->id()] = true;
        stack.push_back(n);
      }
    }
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Edge* e : n->out_edges()) {
        if (!maybe_dead_[e->dst()->id()]) {
          maybe_dead_[e->dst()->id()] = true;
          stack.push_back(e->dst());
        }
      }
    }
  }

  struct Candidate {
    int64_t alap_end = 0;  // Its ALAP start + cost.
    int64_t asap_end = 0;  // Its ASAP start + cost.
    const Node* node = nullptr;
  };

  // The nodes a Recv may wait for, per partition, sorted by ALAP end, and
  // for each prefix of that order the one that ends last as soon as
  // possible (`best_`).
  void CollectCandidates() {
    for (const Node* n : g_.nodes()) {
      const int gr = group_[n->id()];
      if (gr != n->id() || n->IsControlFlow() || n->IsSend() || n->IsRecv() ||
          maybe_dead_[n->id()]) {
        continue;
      }
      candidates_[loc_[n->id()]].push_back(
          Candidate{alap_[gr] + cost_[gr], asap_[gr] + cost_[gr], n});
    }
    for (auto& [loc, list] : candidates_) {
      std::sort(list.begin(), list.end(),
                [](const Candidate& a, const Candidate& b) {
                  return std::tie(a.alap_end, a.asap_end) <
                         std::tie(b.alap_end, b.asap_end);
                });
      std::vector<int>& best = best_[loc];
      best.resize(list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        best[i] = i == 0 || list[i].asap_end >= list[best[i - 1]].asap_end
                      ? static_cast<int>(i)
                      : best[i - 1];
      }
    }
  }

  // The node Recv `r` waits for: among its partition's candidates that end
  // by its consumers' earliest ALAP start, the one that ends last as soon
  // as possible; null if none would hold the Recv past the time its Send
  // can run.
  const Node* PredecessorFor(const Partitioner::RootRecv& r) const {
    auto it = candidates_.find(r.loc);
    if (it == candidates_.end()) return nullptr;
    int64_t start = std::numeric_limits<int64_t>::max();
    for (int d : r.consumers) start = std::min(start, alap_[group_[d]]);
    const std::vector<Candidate>& list = it->second;
    const auto end = std::upper_bound(
        list.begin(), list.end(), start,
        [](int64_t t, const Candidate& c) { return t < c.alap_end; });
    if (end == list.begin()) return nullptr;
    const Candidate& best = list[best_.at(r.loc)[end - list.begin() - 1]];
    const int src = group_[r.src];
    if (best.asap_end <= asap_[src] + cost_[src]) return nullptr;
    return best.node;
  }

  const Graph& g_;
  const std::vector<std::string>& loc_;
  const Frames* frames_;
  std::vector<int> group_;                   // By node id.
  std::vector<int64_t> cost_, asap_, alap_;  // By group.
  std::vector<bool> maybe_dead_;             // By node id.
  std::map<std::string, std::vector<Candidate>> candidates_;
  std::map<std::string, std::vector<int>> best_;
};

}  // namespace

Status Partition(const PartitionOptions& opts, const Graph& g,
                 std::map<std::string, GraphDef>* partitions) {
  partitions->clear();
  if (!opts.get_incarnation) {
    return errors::InvalidArgument(
        "PartitionOptions.get_incarnation must be set");
  }
  std::vector<std::string> loc;
  absl::flat_hash_map<std::string, uint64_t> incarnations;
  RETURN_IF_ERROR(CheckPlacement(opts, g, &loc, &incarnations));

  std::unique_ptr<Frames> frames;
  const Graph* source = &g;
  Graph copy;
  // The copy holds g's names and those `names` made.
  NameGen names(&g);
  ControlLoops loops;
  if (HasEnter(g)) {
    frames = std::make_unique<Frames>();
    RETURN_IF_ERROR(BuildFrames(g, frames.get()));
    if (NeedsControlLoops(g, *frames, loc)) {
      RETURN_IF_ERROR(copy.CopyFrom(g));
      std::vector<std::string> copy_loc(copy.num_node_ids());
      for (const Node* n : g.nodes()) {
        copy_loc[copy.FindNode(n->name())->id()] = std::move(loc[n->id()]);
      }
      loc = std::move(copy_loc);
      RETURN_IF_ERROR(
          LoopRewriter(&copy, &loc, &names).Run(frames.get(), &loops));
      source = &copy;
    }
  }
  Partitioner partitioner(opts, *source, loc, incarnations, frames.get(),
                          &loops, &names, partitions);
  Status s = partitioner.Run();
  if (!s.ok()) {
    partitions->clear();
    return s;
  }
  if (opts.scheduling_for_recvs) {
    RecvScheduler(*source, loc, frames.get())
        .Run(partitioner.root_recvs(), partitions);
  }
  return absl::OkStatus();
}

}  // namespace runnel
