// While loops and conditionals as graph (whitepaper §4.4, OSDI §3.4), built
// from TensorFlow's primitives in TensorFlow's node patterns, and their
// gradients.
//
//   // i = 0; while (i < 10) i += 1;
//   std::vector<Output> out;
//   RETURN_IF_ERROR(WhileLoop(
//       scope, {ops::Const(scope, 0)},
//       [](const Scope& s, const std::vector<Output>& v, Output* pred) {
//         *pred = ops::Less(s, v[0], 10);
//         return s.status();
//       },
//       [](const Scope& s, const std::vector<Output>& v,
//          std::vector<Output>* next) {
//         *next = {ops::Add(s, v[0], 1)};
//         return s.status();
//       },
//       &out));
//
// Note [Loop construction]. For each loop variable v: Enter(v) → Merge(Enter,
// NextIteration) → Switch(Merge, LoopCond(cond(merges))); Identity(Switch:1)
// is what the body sees, the body's result goes to NextIteration, and
// Exit(Switch:0) is the loop's output. Tensors from outside that cond or body
// use are captured: each enters the frame once through a loop-invariant
// Enter (is_constant). Nodes the functions make without any input (Consts)
// get a control edge from the frame's pivot so they run once per
// iteration. The frame is named "<scope>/while_context" (unique).
//
// Note [Cond construction]. Cond(pred, true_fn, false_fn) builds
// Switch(pred, pred) with pivots Identity(:1) "switch_t" and Identity(:0)
// "switch_f", pred_id = Identity(pred); each tensor a branch captures enters
// through Switch(x, pred_id) (the taken port); outputs are
// Merge([false_output, true_output]) — TensorFlow's order — so value_index
// is 1 when pred is true.
//
// Note [Loop gradients]. AddSymbolicGradients (gradients.h) treats a loop as
// one node: when the gradients of its Exits are known, BuildWhileLoopGradient
// adds a backward loop that runs as many iterations as the forward one did
// (the forward loop gets an iteration counter), carrying dL/d(loop
// variables) backwards and summing dL/d(captured tensors). Its body is the
// gradient of the forward body (a recursive AddSymbolicGradients, stopped at
// the body inputs). Forward values that gradient needs are saved per
// iteration: the forward loop writes each into a TensorArray at its
// iteration index (the writes chained through a flow loop variable, so the
// array is complete when the loop exits) and the backward loop reads index
// N-1-j in its iteration j. Loop-invariant captures are read directly.
// Nested loops work the same way one level down. Not supported: gradients
// of values computed inside a Cond within a loop body (their saving would
// stall on the untaken branch), and of loops imported from TensorFlow (no
// construction record).
#ifndef RUNNEL_GRAPH_CONTROL_FLOW_H_
#define RUNNEL_GRAPH_CONTROL_FLOW_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"

namespace runnel {

using CondGraphBuilderFn = std::function<Status(
    const Scope&, const std::vector<Output>& loop_vars, Output* pred)>;
using BodyGraphBuilderFn =
    std::function<Status(const Scope&, const std::vector<Output>& loop_vars,
                         std::vector<Output>* next_loop_vars)>;
using BranchGraphBuilderFn =
    std::function<Status(const Scope&, std::vector<Output>* outputs)>;

struct WhileLoopOptions {
  int parallel_iterations = 10;
  std::string name = "while";
};

// Builds a while loop over `loop_vars` (Note [Loop construction]);
// `outputs` gets the loop variables' final values. The body must return as
// many tensors as there are loop variables, of the same dtypes.
Status WhileLoop(const Scope& scope, const std::vector<Output>& loop_vars,
                 const CondGraphBuilderFn& cond, const BodyGraphBuilderFn& body,
                 std::vector<Output>* outputs,
                 const WhileLoopOptions& options = {});

// Builds pred ? true_fn() : false_fn() (Note [Cond construction]). Both
// branches must return the same number of tensors with matching dtypes.
Status Cond(const Scope& scope, const Output& pred,
            const BranchGraphBuilderFn& true_fn,
            const BranchGraphBuilderFn& false_fn, std::vector<Output>* outputs,
            const std::string& name = "cond");

// ---------------------------------------------------------------------------
// What the builders record (for gradients and nested construction).

struct WhileContext {
  std::string frame_name;
  int parallel_iterations = 10;
  WhileContext* parent = nullptr;  // The enclosing loop; null at top level.
  Scope scope;                     // "<scope>/<name>"
  std::vector<Node*> enters, merges, switches, next_iterations, exits;
  std::vector<Output> body_inputs;   // Identity(Switch:1), per variable.
  std::vector<Output> body_outputs;  // What feeds NextIteration.
  Output loop_cond;                  // The LoopCond output.
  // Loop-invariant captures: the tensor asked for and its constant Enter.
  // An enclosing loop may later rewire the Enter's input (to its own
  // capture of the tensor): read the input with EnterInput.
  std::vector<std::pair<Output, Node*>> captures;
  // Built on the first gradient request: the iteration index inside the
  // body and the iteration count after the loop.
  Output counter_in_body, counter_exit;
  // Forward values saved for gradients: forward tensor -> (TensorArray
  // handle, final flow), both in the parent frame.
  absl::flat_hash_map<Output, std::pair<Output, Output>, OutputHash> saved;

  // The graph owns this record, so it holds a non-owning scope (a strong
  // one would make a cycle through Graph::control_flow_info).
  explicit WhileContext(const Scope& s) : scope(s.NonOwningCopy()) {}
  // The node whose output is live exactly in body iterations.
  Node* body_pivot() const { return body_inputs[0].node(); }
};

struct CondContext {
  Output pred_id;  // Identity(pred), what the branch Switches test.
};

// Per graph (Graph::control_flow_info()).
class ControlFlowInfo {
 public:
  static ControlFlowInfo* Get(Graph* g);  // Creates it on first use.

  WhileContext* NewWhile(const Scope& scope);
  CondContext* NewCond();

  // The loop frame node `id` runs in (null: the root frame), if recorded.
  bool HasFrame(int id) const { return frame_of_.contains(id); }
  WhileContext* FrameOf(int id) const {
    auto it = frame_of_.find(id);
    return it == frame_of_.end() ? nullptr : it->second;
  }
  void SetFrame(int id, WhileContext* frame) { frame_of_[id] = frame; }
  // The frame a value lives in: an Enter's output is in the loop it enters,
  // an Exit's in the parent of the loop it leaves.
  WhileContext* ValueFrame(const Output& o) const;

  // The loop whose Enter / Exit node this is, or null.
  WhileContext* LoopOfEnter(int id) const;
  WhileContext* LoopOfExit(int id) const;
  CondContext* CondOfMerge(int id) const;
  void SetLoopOfEnter(int id, WhileContext* l) { loop_of_enter_[id] = l; }
  void SetLoopOfExit(int id, WhileContext* l) { loop_of_exit_[id] = l; }
  void SetCondOfMerge(int id, CondContext* c) { cond_of_merge_[id] = c; }

  // Note [Lifted nodes]. A node made while a branch or loop body function
  // runs that belongs to the root frame instead (TensorFlow's init_scope:
  // a variable, its initial value and its initializer, made by a layer
  // first called inside a loop body). The builders leave lifted nodes out
  // of the branch or loop, and capture their values like any tensor from
  // outside. A lifted node's inputs must come from outside every branch
  // and loop, as TensorFlow requires of what init_scope builds.
  void MarkLifted(int id) {
    lifted_.insert(id);
    frame_of_[id] = nullptr;
  }
  bool IsLifted(int id) const { return lifted_.contains(id); }

  // The loop being built right now (innermost), for nested construction.
  WhileContext* building() const {
    return building_.empty() ? nullptr : building_.back();
  }
  void PushBuilding(WhileContext* c) { building_.push_back(c); }
  void PopBuilding() { building_.pop_back(); }

 private:
  std::vector<std::unique_ptr<WhileContext>> whiles_;
  std::vector<std::unique_ptr<CondContext>> conds_;
  absl::flat_hash_map<int, WhileContext*> frame_of_;
  absl::flat_hash_map<int, WhileContext*> loop_of_enter_;
  absl::flat_hash_map<int, WhileContext*> loop_of_exit_;
  absl::flat_hash_map<int, CondContext*> cond_of_merge_;
  std::vector<WhileContext*> building_;
  absl::flat_hash_set<int> lifted_;
};

// The tensor an Enter node currently reads.
Output EnterInput(const Node* enter);

// Adds to `loop` the backward loop of Note [Loop gradients]. `exit_grads`
// has dL/d(exit i) per loop variable (null where none flowed);
// `enter_grads` gets dL/d(input of enter j) for loop.enters followed by
// loop.captures (null where none).
Status BuildWhileLoopGradient(const Scope& scope, WhileContext* loop,
                              const std::vector<Output>& exit_grads,
                              std::vector<Output>* enter_grads);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_CONTROL_FLOW_H_
