// The partitioner (whitepaper §3.2.2, TensorFlow's graph_partition.cc):
// splits a placed Graph into one GraphDef per partition (per device, by
// default), replacing every edge that crosses partitions with a
// _Send/_Recv pair that meets in the step's rendezvous.
//
//   PartitionOptions opts;
//   opts.get_incarnation = [&](const std::string& d) { ... };
//   std::map<std::string, GraphDef> parts;
//   RETURN_IF_ERROR(Partition(opts, graph, &parts));
//   // parts["/job:localhost/replica:0/task:0/device:CPU:1"] is that
//   // device's graph; import it with ImportGraphDefOptions
//   // {.allow_internal_ops = true}.
//
// Note [Partitioning]. Every node goes to the partition node_to_loc names,
// with its attrs unchanged and NodeDef.device set to its assigned device.
// For a data edge src:k -> dst whose ends are in different partitions, the
// src partition gets `_Send(src:k)` and the dst partition `_Recv`, which
// feeds dst; there is one Send/Recv pair per (src, k, dst partition, recv
// memory type), shared by all the consumers of src:k there. Both ends carry
//   T / tensor_type          the edge's value type (a ref output is sent by
//                            value; a ref *input* cannot be fed across
//                            partitions: InvalidArgument),
//   tensor_name              "edge_<edge id>_<src name>" (edge ids are
//                            unique in the graph, so names are unique per
//                            step),
//   send_device, recv_device the assigned devices of src and dst,
//   send_device_incarnation  get_incarnation(send_device), bit-cast to int64,
//   client_terminated        false,
// plus "_src"/"_dst" attrs naming the original nodes (for debugging). A ref
// output is read when its _Send runs, which may be earlier than dst would
// have read it: order reads of variables across devices through data.
// A control edge src -> dst across partitions becomes, on src's side, a
// float Const of shape [0] named "<src>/ctrl/_N" with a control input from
// src, sent to a _Recv on dst's side that dst has a control input from; one
// such pair per (src, dst partition). New nodes are named "<src>/_N" (N
// counts up per Partition call, skipping names already in the graph).
// Control inputs of every node are written after its data inputs, sorted and
// without duplicates, as ToGraphDef does; a graph with no cross-partition
// edge therefore comes out as ToGraphDef(g, {.use_assigned_device = true}).
//
// Note [Cross-device loops]. Inside a while-loop frame a _Recv must run once
// per iteration, tagged with the frame and iteration, and every partition
// holding nodes of the frame must run as many iterations as the partition
// holding the frame's LoopCond. As in TensorFlow (AddControlFlow), each such
// partition L gets a control loop for frame F, made of float dummies:
//   Const(root) or merge of F's parent loop in L
//     -> Enter(frame_name=F) -> Merge(Enter, NextIteration)
//     -> Switch(Merge, pred = F's LoopCond, received from its partition)
//     -> NextIteration(Switch:1) -> Merge
// named "_cloop/<LoopCond name>/{enter,merge,switch,next}/_N" (and
// ".../const/_N"); every _Recv of an edge inside F in L has a control input
// from that Merge, which fires once per iteration, so the Recv runs in each
// iteration. Nested loops stack: the inner control loop's Enter reads the
// outer one's Merge. A control loop is built in partition L for frame F
// when L receives an edge inside F, or when F spans several partitions and
// L holds nodes of F but not its LoopCond; its parent frames get one in L
// too. Before that, an Enter or NextIteration with consumers in other
// partitions is moved to them (if it has none in its own and is not a Ref
// op) or else copied into each (a Ref op's copy is the value op): an Enter's
// output exists in iteration 0 only (a constant Enter's, only in the
// iterations its partition runs) and a NextIteration's in the next
// iteration, so a Recv of it run once per iteration would wait forever.
// Edges into a loop (into an Enter) and out of it (from an Exit) are
// edges of the parent frame and need nothing more. A cross-partition loop
// without a LoopCond is InvalidArgument. Not handled (as in TensorFlow): an
// edge inside a frame from a node that runs only in iteration 0 (one that
// reads a non-constant Enter other than through a Merge).
//
// Note [Recv scheduling] (whitepaper §5.2; TensorFlow's
// PartitionOptions.scheduling_for_recvs). A _Recv with no inputs runs as
// soon as its step starts, so whatever its consumers do with the tensor can
// run early and hold memory long before the critical path needs it. With
// `scheduling_for_recvs`, each _Recv of a data edge in the root frame gets
// a control input from one node P of its own partition, so it starts as
// late as its consumers allow:
//   * Times. ASAP and ALAP start times over the graph being partitioned
//     (after the loop rewrite), unit cost per node and zero per transfer.
//     Each top-level while loop (its Enters, Exits and nested frames
//     included) is contracted to one node costing its node count, so the
//     graph is a DAG; if the contracted graph is not (no valid graph has
//     that), nothing is scheduled.
//   * Choice. Let S be the earliest ALAP start of the Recv's consumers.
//     P is, among the partition's nodes with ALAP end (start + cost) <= S,
//     the one with the latest ASAP end: the node expected to finish just
//     before the consumers need the tensor. No edge is added if P's ASAP
//     end is not after the sender's, i.e. if P would not hold the Recv back.
//     There is no prefetch margin: a local Recv of a sent tensor is a
//     lookup.
//   * Safety. P is a node of the root frame outside any loop, is not a
//     control-flow node, Send or Recv, and is not downstream of a
//     root-frame Switch (a dead P would make the Recv dead). Every edge of
//     the partitioned graphs (transfers included) goes from a smaller to a
//     larger contracted ALAP time, the Recv sitting just before S, and every
//     added edge does too (ALAP start of P < S): the partitions joined by
//     their Send/Recv pairs stay acyclic, so no added edge can deadlock a
//     step, even through several devices. Recvs inside loop frames and
//     Recvs of control edges (tiny) are left alone.
// On CPU devices a received tensor shares the sent buffer (the rendezvous
// holds it until the Recv runs), so what a later Recv saves is the memory
// of what the receiver would compute from the tensor early and keep until
// the critical path reaches it (benchmarks/recv_scheduling.cc measures it:
// 72 -> 40 MiB). That work then runs just in time rather than ahead, which
// can lengthen a step where the cores were otherwise idle.
//
// Memory types: `output_in_host_memory(src, k)` chooses _HostSend and
// `input_in_host_memory(dst, i)` _HostRecv; both default to false (every
// device is a CPU today). Same-partition edges between memory types are not
// cut (TensorFlow's same-device Send/Recv is not needed on CPUs).
//
// Thread safety: Partition only reads `g` (it works on a private copy when
// loops need rewriting) and may run concurrently with other readers.
#ifndef RUNNEL_GRAPH_PARTITION_H_
#define RUNNEL_GRAPH_PARTITION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "proto/graph.pb.h"
#include "runnel/base/status.h"
#include "runnel/graph/graph.h"

namespace runnel {

// What get_incarnation returns for a device it does not know.
inline constexpr uint64_t kIllegalIncarnation = 0;

struct PartitionOptions {
  // The partition a node belongs to (the key of the result). Default: the
  // node's assigned device. Must not be empty.
  std::function<std::string(const Node*)> node_to_loc;
  // Required: the incarnation of a device given its full name, or
  // kIllegalIncarnation if there is no such device. Called once per
  // distinct assigned device.
  std::function<uint64_t(const std::string& device_name)> get_incarnation;
  // Optional (default false): whether output `k` of `n` / input `i` of `n`
  // lives in host memory; see Note [Partitioning].
  std::function<bool(const Node* n, int k)> output_in_host_memory;
  std::function<bool(const Node* n, int i)> input_in_host_memory;
  // Gives root-frame _Recvs a control input so they start as late as
  // their consumers allow (Note [Recv scheduling]). Default false.
  bool scheduling_for_recvs = false;
};

// Fills `partitions` (cleared first) with one GraphDef per partition that
// holds at least one node, each with `g`'s versions (producer defaulted as
// in ToGraphDef). `g` is not changed.
//
// Errors:
//   InvalidArgument a node with no assigned device, a device that is not a
//                   full device name or that get_incarnation does not know,
//                   an empty node_to_loc, an unconnected input, a ref input
//                   fed from another partition, a cross-partition loop
//                   without a LoopCond, or frames that do not nest (as the
//                   executor reports them); each names the node(s).
//   InvalidArgument get_incarnation not set.
Status Partition(const PartitionOptions& opts, const Graph& g,
                 std::map<std::string, GraphDef>* partitions);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_PARTITION_H_
