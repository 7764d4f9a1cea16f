// The placer (whitepaper §3.2.1, step 3b of DESIGN.md): assigns every node of
// a pruned graph to one device, as TensorFlow's placer does.
//
//   PlacerOptions options;
//   options.allow_soft_placement = config.allow_soft_placement();
//   std::vector<std::string> log;
//   RETURN_IF_ERROR(PlaceGraph(options, device_mgr->devices(), &graph, &log));
//   // Every node's assigned_device_name() is now a full device name.
//
// Note [Placement rules]
//  1. Constraints. A node's requested device is a full or partial spec
//     ("/job:localhost/replica:0/task:0/device:CPU:1", "/device:CPU:1",
//     "/cpu:1", "/job:localhost/task:0", "" for none); the node may only go
//     to a device whose parsed name Matches it. A node that already has an
//     assigned device (e.g. copied from an earlier placement) is pinned to
//     exactly that device; soft placement never moves it.
//  2. Kernels. A node may only go to a device whose type has a kernel for it
//     (KernelRegistry::HasKernel).
//  3. Colocation groups (union-find), each placed on one device:
//       - the `_class` attr, a list of "loc:@<node name>" strings (entries
//         naming nodes not in the graph, e.g. pruned ones, are ignored);
//       - reference edges (the destination input is a ref type: Assign goes
//         with its Variable) and resource edges (either end is DT_RESOURCE:
//         every op using a resource handle goes where the resource lives).
//     A group's spec merges its members' specs field by field (job, replica,
//     task, type, id). Its candidates are the devices matching the merged
//     spec whose type has kernels for every member, in preference order:
//     device types by DeviceFactory::DevicePriority (highest first; types no
//     factory registered come last), then the order of `devices`.
//  4. Soft placement (allow_soft_placement): fields on which two members
//     disagree are dropped from the group's spec (a type conflict drops the
//     id too) instead of failing; and a group whose spec leaves no candidate
//     relaxes it step by step — without the id, then without type and id,
//     then with no spec at all — so "/device:GPU:0" lands on a CPU when the
//     process has no GPU. Kernel availability and pins are never relaxed.
//  5. Choosing among candidates, in topological order (inputs first):
//       - a "generator" (no inputs, one non-reference output: Const, _Arg,
//         VarHandleOp) whose group is still open and has more than one
//         candidate is decided after every other node: it joins its
//         consumers' device when all of them are on one device that is one
//         of its candidates;
//       - otherwise (kColocateWithInputs) the group takes the device of the
//         first data input whose producer is already placed, if that device
//         is a candidate of the group's most preferred device type (so on
//         several CPUs a chain stays with its input, while on a process with
//         a GPU an unconstrained op still prefers the GPU, as in TF);
//       - otherwise the first candidate (device 0 of the preferred type).
//     _Arg and _Retval (feeds and fetches, runnel/graph/prune.h) have no
//     requested device: _Retval follows its producer and _Arg its consumer
//     when their kernels allow, else a device with their kernel (CPU).
//  6. kGreedyCostModel replaces the rules of 5 by the whitepaper's greedy
//     heuristic: a simulated execution in topological order (generators
//     included, in their turn: their output sizes matter to it) places each
//     undecided group on the candidate where its first visited node would
//     finish soonest, counting the device's queue, the node's cost on that
//     device and the transfers its inputs would need. Sessions select it
//     with GraphOptions.runnel_placement_strategy = "greedy_cost_model" and
//     estimate costs from the shape functions (placement_cost_model.h).
//
// Errors (all InvalidArgument, naming the node, its requested device and the
// reason), with the graph left exactly as it was (no assignment changes):
//   - a malformed device spec: "node 'x' (MatMul) has a malformed device
//     specification '/gpu:x': ...";
//   - no kernel for the op on any device type of this process;
//   - two members of a group asking for incompatible devices (without soft
//     placement): "Cannot colocate nodes 'a' and 'b': Cannot merge devices
//     with incompatible ids: '/device:CPU:0' (requested by 'a') and
//     '/device:CPU:1' (requested by 'b'); ...", and, with or without soft
//     placement, two groups with no device type having kernels for both, or
//     two members pinned to different devices;
//   - no candidate (without soft placement): "Cannot assign a device for
//     operation 'x': Could not satisfy explicit device specification
//     '/device:GPU:0' because no devices matching that specification are
//     registered in this process; available devices: ..." or "... because no
//     supported kernel for GPU devices is available: no kernel for op 'Foo'
//     (node 'x') on device type GPU; it has kernels for: CPU";
//   - a pinned node whose device is not in `devices`; an empty `devices`;
//     a graph with a cycle that is not a while loop.
//
// Thread safety: PlaceGraph mutates `graph` (assigned device names only) and
// must not run concurrently with other users of it. The devices are only
// read (name, type, parsed name). The cost model's functions are called on
// the calling thread.
#ifndef RUNNEL_RUNTIME_PLACER_H_
#define RUNNEL_RUNTIME_PLACER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/device.h"
#include "runnel/graph/graph.h"

namespace runnel {

// How groups with a choice of candidates are placed (Note [Placement rules],
// 5 and 6).
enum class PlacementStrategy {
  kColocateWithInputs,  // TF's heuristics; the default.
  kGreedyCostModel,     // The whitepaper's simulated greedy placement.
};

// Estimates for kGreedyCostModel, in any consistent unit (e.g. seconds).
// Unset functions mean 1 per node and 1 per cross-device data edge.
struct PlacementCostModel {
  // The time `node` runs on `device`.
  std::function<double(const Node& node, const Device& device)> compute_cost;
  // The time moving the tensor on data edge `edge` from `src` to `dst`
  // takes (only asked for src != dst).
  std::function<double(const Edge& edge, const Device& src, const Device& dst)>
      transfer_cost;
};

struct PlacerOptions {
  // ConfigProto.allow_soft_placement: relax unsatisfiable device specs
  // instead of failing (Note [Placement rules], 4).
  bool allow_soft_placement = false;
  // ConfigProto.log_device_placement: fill PlaceGraph's `log`.
  bool log_device_placement = false;
  PlacementStrategy strategy = PlacementStrategy::kColocateWithInputs;
  PlacementCostModel cost_model;  // Only read by kGreedyCostModel.
};

// Assigns every node of `graph` to one of `devices` (set_assigned_device_name
// with the device's full name), following Note [Placement rules]. `devices`
// is the process's device list (DeviceMgr::devices(): CPU:0 first); it must
// not be empty and its names must be distinct. Deterministic: a function of
// the graph (node ids, edge order), the devices and the options.
//
// If options.log_device_placement and `log` is non-null, appends one line
// per node, in node-id order, in TensorFlow's format:
//   "<node name>: (<op>): <assigned device full name>"
// (the caller decides where to print them).
//
// On error (see the header comment) no node's assignment is changed and
// nothing is appended to `log`.
Status PlaceGraph(const PlacerOptions& options,
                  const std::vector<Device*>& devices, Graph* graph,
                  std::vector<std::string>* log = nullptr);

// The placer options a session's ConfigProto asks for: allow_soft_placement,
// log_device_placement and graph_options.runnel_placement_strategy ("" or
// "colocate_with_inputs", "greedy_cost_model"). InvalidArgument naming the
// value for any other strategy.
StatusOr<PlacerOptions> PlacerOptionsFromConfig(const ConfigProto& config);

// PlaceGraph for a session's graph, whose stateful nodes (variables,
// queues) must stay on the device their state lives on: a node named in
// `*stateful` keeps that device, every other node is placed afresh, and
// every stateful node's device is recorded in `*stateful` afterwards. The
// log lines (log_device_placement) go to stderr. With kGreedyCostModel and
// no cost functions set, the costs are ShapeCostModel(*graph)'s
// (runtime/placement_cost_model.h). Used by DirectSession and the
// distributed master alike.
Status PlaceSessionGraph(
    const PlacerOptions& options, const std::vector<Device*>& devices,
    Graph* graph, absl::flat_hash_map<std::string, std::string>* stateful);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_PLACER_H_
