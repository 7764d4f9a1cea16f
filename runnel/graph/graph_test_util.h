// Test-only helpers for the graph tests: tiny "GraphTest*" ops (registered
// in graph_test_util.cc) and GraphDef builders.
//
// Ops (T defaults to DT_FLOAT unless noted):
//   GraphTestConst   () -> output: dtype          dtype: type = DT_FLOAT
//   GraphTestUnary   (x: T) -> y: T               T: {float, int32}, no default
//   GraphTestBinary  (a: T, b: T) -> c: T
//   GraphTestTwoOut  (x: T) -> (y: T, z: int32)
//   GraphTestSink    (x: T) -> ()                 stateful
//   GraphTestN       (xs: N * T) -> y: T          N: int >= 1
//   GraphTestVar     () -> ref: Ref(dtype)        dtype = DT_FLOAT, stateful
//   GraphTestAssign  (ref: Ref(T), value: T) -> output_ref: Ref(T)
#ifndef RUNNEL_GRAPH_GRAPH_TEST_UTIL_H_
#define RUNNEL_GRAPH_GRAPH_TEST_UTIL_H_

#include <initializer_list>
#include <string>

#include "proto/graph.pb.h"
#include "runnel/graph/graph.h"

namespace runnel::graph_test {

// Registers TF's "Merge" and "NextIteration" op signatures unless the real
// control-flow ops are already linked in (so the loop rule can be tested
// before they exist, without a duplicate registration once they do).
void EnsureLoopOpsRegistered();

// Appends a node to `gdef`: inputs as GraphDef strings, attr T (or dtype for
// GraphTestConst / GraphTestVar) left to defaults unless set afterwards.
NodeDef* AddNodeDef(GraphDef* gdef, const std::string& name,
                    const std::string& op,
                    std::initializer_list<std::string> inputs = {});

// Parses text format, failing the current test on error.
GraphDef TextToGraphDef(const std::string& text);

// A readable one-line-per-node dump: "name=op(in0,in1,^c)".
std::string Summarize(const Graph& g);

}  // namespace runnel::graph_test

#endif  // RUNNEL_GRAPH_GRAPH_TEST_UTIL_H_
