// GraphDef (TensorFlow's wire format for graphs) <-> Graph.
//
// Reading: ParseGraphDef (binary bytes), ParseGraphDefText (text format) and
// ReadGraphDefFile (either, chosen by file extension). Importing:
// ImportGraphDef validates every node and edge before it changes the graph,
// so a failed import leaves the graph as it was. Exporting: ToGraphDef.
//
// Thread safety: all functions are reentrant; ImportGraphDef mutates `g`
// and needs the caller to hold off other users of `g`.
#ifndef RUNNEL_GRAPH_GRAPH_DEF_H_
#define RUNNEL_GRAPH_GRAPH_DEF_H_

#include <string>

#include "absl/strings/string_view.h"
#include "proto/graph.pb.h"
#include "runnel/base/status.h"
#include "runnel/graph/algorithm.h"  // TopologicalSort and friends.
#include "runnel/graph/graph.h"
#include "runnel/graph/tensor_id.h"

namespace runnel {

// The producer version ToGraphDef writes when the graph has none (TF 1.x's
// GraphDef version at the time of the frozen graphs we load).
inline constexpr int kDefaultGraphDefProducer = 27;

// Parses a binary-encoded GraphDef. InvalidArgument if `bytes` is not one
// (truncated, garbage, invalid UTF-8 in a string field).
Status ParseGraphDef(absl::string_view bytes, GraphDef* out);
// Parses a text-format GraphDef ("node { name: ... }"; `#` comments are
// allowed). Fields this build's protos lack (NodeDef.experimental_type,
// GraphDef.debug_info) are skipped. InvalidArgument with "line:col: ..." of
// the first syntax error otherwise.
Status ParseGraphDefText(absl::string_view text, GraphDef* out);
// Loads a GraphDef file: ".pb" is tried as binary first, ".pbtxt", ".pbtext"
// and ".txt" as text first; either falls back to the other encoding, and any
// other extension is tried as text, then binary. Errors name the file:
// NotFound if it cannot be read, DataLoss if neither encoding parses (with
// both parsers' complaints).
Status ReadGraphDefFile(const std::string& path, GraphDef* out);

// True if `name` is a legal node name, as in TF: [A-Za-z0-9.][A-Za-z0-9_.\-/]*
// pieces joined by '>' (each piece after a '>' starts with [A-Za-z0-9.]).
// With `allow_internal` the first character may also be '_' (internal nodes
// such as "_arg_x_0_0").
bool IsValidNodeName(absl::string_view name, bool allow_internal);

struct ImportGraphDefOptions {
  // Accept node names starting with '_' (graphs the runtime itself wrote,
  // such as partitions with _Arg/_Retval/_Send nodes).
  bool allow_internal_ops = false;
};

// Adds the nodes of `gdef` to `g`, which may already hold nodes (for
// Session::Extend): inputs may name nodes of `gdef` (in any order, so loop
// back edges can point forward) or nodes already in `g`. On success every
// node has NodeProperties with attr defaults filled in (attrs named "_..."
// are kept as given) and one edge per input; `gdef.versions` replaces the
// graph's versions if set (the deprecated `version` field is ignored, as in
// TF). `gdef.library` is validated and merged into g->library() (a
// function defined again must be identical); a node whose op is a library
// function's name becomes a call node (runnel/graph/function.h).
//
// Errors (nothing is added to `g` on error), each naming the node:
//   NotFound        "node 'x': op type not registered: 'Foo'"
//   InvalidArgument bad or missing attrs ("node 'x' (Op): ..."), empty or
//                   invalid node names, a name defined twice or already in
//                   `g`, malformed input strings, an input naming an
//                   unknown node ("node 'b' input 0 refers to unknown node
//                   'a'"), an output index out of range, a dtype mismatch, a
//                   wrong number of data inputs, a data input listed after
//                   a control input, and a cycle that is not a while loop
//                   (see Note [Loop back edges] in algorithm.h).
Status ImportGraphDef(const GraphDef& gdef, Graph* g,
                      const ImportGraphDefOptions& options = {});

struct ToGraphDefOptions {
  // Write each node's assigned device where it has one (the form sent to a
  // worker for a placed partition), else its requested device.
  bool use_assigned_device = false;
};

// Exports `g`: nodes in id order with name, op, requested device and all
// attrs (defaults included); inputs in slot order ("src" for output 0,
// "src:k" otherwise), then control inputs "^src" sorted by name. An input
// slot with no edge (only possible in a graph under construction) is
// written as "" and will not re-import. Versions are copied, with the
// producer set to kDefaultGraphDefProducer if the graph's is 0, and the
// graph's function library, if any, as `library`. The result
// re-imports into an identical graph.
void ToGraphDef(const Graph& g, GraphDef* out,
                const ToGraphDefOptions& options = {});

}  // namespace runnel

#endif  // RUNNEL_GRAPH_GRAPH_DEF_H_
