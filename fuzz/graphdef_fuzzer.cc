// GraphDef bytes -> parse (binary, or text when the first byte's bit 0 is
// set) -> ImportGraphDef with validation -> export and re-import (must
// succeed: ToGraphDef's output re-imports) -> PruneForFetches.
//
// Input: byte 0 = mode (bit 0: text format; bit 1: allow internal ops),
// then the GraphDef.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "proto/graph.pb.h"
#include "runnel/base/logging.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"

namespace runnel::fuzz {
namespace {

void PruneSome(const Graph& g) {
  // Fetch output 0 of the last node with outputs, feed the first
  // Placeholder, run the first node with no outputs as a target.
  std::vector<std::string> feeds, fetches, targets;
  for (const Node* n : g.nodes()) {
    if (n->num_outputs() > 0 && n->type_string() != "Placeholder" &&
        !n->name().empty() && n->name()[0] != '_') {
      fetches.assign(1, n->name() + ":0");
    } else if (n->num_outputs() == 0 && targets.empty()) {
      targets.push_back(n->name());
    }
    if (n->type_string() == "Placeholder" && feeds.empty()) {
      feeds.push_back(n->name());
    }
  }
  Graph pruned;
  PruneInfo info;
  PruneForFetches(g, feeds, fetches, targets, &pruned, &info).IgnoreError();
}

void FuzzGraphDef(FuzzInput& in) {
  const uint8_t mode = in.Byte();
  const std::string bytes = in.Rest();
  GraphDef gdef;
  Status parsed = (mode & 1) ? ParseGraphDefText(bytes, &gdef)
                             : ParseGraphDef(bytes, &gdef);
  if (!parsed.ok()) return;

  ImportGraphDefOptions options;
  options.allow_internal_ops = (mode & 2) != 0;
  Graph g;
  if (!ImportGraphDef(gdef, &g, options).ok()) return;

  // What ToGraphDef writes re-imports (graph_def.h): a failure here is a bug.
  GraphDef exported;
  ToGraphDef(g, &exported);
  Graph again;
  ImportGraphDefOptions reimport;
  reimport.allow_internal_ops = true;
  Status s = ImportGraphDef(exported, &again, reimport);
  if (!s.ok()) {
    std::fprintf(stderr, "re-import of an exported graph failed: %s\n",
                 s.ToString().c_str());
    RUNNEL_CHECK(s.ok());
  }
  PruneSome(g);
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzGraphDef(in);
  return 0;
}
