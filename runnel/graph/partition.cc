#include "runnel/graph/partition.h"

#include <algorithm>
#include <deque>
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

// ---------------------------------------------------------------------------
// The partitioning pass (Note [Partitioning]).

class Partitioner {
 public:
  Partitioner(const PartitionOptions& opts, const Graph& g,
              const std::vector<std::string>& loc,
              const absl::flat_hash_map<std::string, uint64_t>& incarnations,
              const Frames* frames,
              const std::map<std::pair<int, std::string>, const Node*>* loops,
              std::map<std::string, GraphDef>* out)
      : opts_(opts),
        g_(g),
        loc_(loc),
        incarnations_(incarnations),
        frames_(frames),
        loops_(loops),
        out_(out) {}

  Status Run() {
    for (const Node* n : g_.nodes()) RETURN_IF_ERROR(AddNode(n));
    VersionDef versions = g_.versions();
    if (versions.producer() == 0)
      versions.set_producer(kDefaultGraphDefProducer);
    for (auto& [name, gdef] : *out_) *gdef.mutable_versions() = versions;
    return absl::OkStatus();
  }

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

  // A fresh node name "<base>/_N".
  std::string NewName(absl::string_view base) {
    while (true) {
      std::string name = absl::StrCat(base, "/_", counter_++);
      if (g_.FindNode(name) == nullptr && used_.insert(name).second) {
        return name;
      }
    }
  }

  // The name of the _Recv (in dst's partition) that delivers what `e`
  // carries, adding it and its _Send if this is the first such edge.
  StatusOr<std::string> RecvFor(const Edge* e) {
    const Node* src = e->src();
    const Node* dst = e->dst();
    const bool control = e->IsControlEdge();
    if (!control && IsRefType(dst->input_type(e->dst_input()))) {
      return errors::InvalidArgument(
          "node ", NodeOp(dst), " on ", dst->assigned_device_name(),
          " takes a reference as input ", e->dst_input(), " from node ",
          NodeOp(src), " on ", src->assigned_device_name(),
          ": references cannot cross devices; place them together");
    }
    const bool recv_on_host = !control && opts_.input_in_host_memory &&
                              opts_.input_in_host_memory(dst, e->dst_input());
    RecvKey key{src->id(), e->src_output(), loc_[dst->id()], recv_on_host};
    if (auto it = recvs_.find(key); it != recvs_.end()) return it->second;

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
    recvs_[key] = recv->name();
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
    const int frame = frames_->out_frame[e->src()->id()];
    const std::string& dst_loc = loc_[e->dst()->id()];
    if (loops_ != nullptr) {
      auto it = loops_->find({frame, dst_loc});
      if (it != loops_->end()) return it->second->name();
    }
    return errors::Unimplemented("edge ", e->DebugString(), " crosses from ",
                                 e->src()->assigned_device_name(), " to ",
                                 e->dst()->assigned_device_name(),
                                 " inside while-loop frame '",
                                 frames_->frames[frame].name,
                                 "'; cross-device loops are not supported yet");
  }

  const PartitionOptions& opts_;
  const Graph& g_;
  const std::vector<std::string>& loc_;
  const absl::flat_hash_map<std::string, uint64_t>& incarnations_;
  const Frames* frames_;
  const std::map<std::pair<int, std::string>, const Node*>* loops_;
  std::map<std::string, GraphDef>* out_;
  std::map<RecvKey, std::string> recvs_;
  absl::flat_hash_set<std::string> used_;
  int64_t counter_ = 0;
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
  if (HasEnter(g)) {
    frames = std::make_unique<Frames>();
    RETURN_IF_ERROR(BuildFrames(g, frames.get()));
  }
  Status s = Partitioner(opts, g, loc, incarnations, frames.get(),
                         /*loops=*/nullptr, partitions)
                 .Run();
  if (!s.ok()) partitions->clear();
  return s;
}

}  // namespace runnel
