// GraphDef bytes -> Session::Create -> one Run: Placeholders fed zeros of
// their declared shape, output 0 of the first few nodes fetched, every
// other node run as a target, under a 200 ms step timeout.
//
// Input: byte 0 = mode (bit 0: text format), then the GraphDef. Graphs over
// kMaxGraphBytes, with more than 256 nodes, or with I/O ops are skipped so
// that each input stays fast and the filesystem is never touched.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "proto/graph.pb.h"
#include "runnel/graph/graph_def.h"

namespace runnel::fuzz {
namespace {

constexpr size_t kMaxGraphBytes = 64 << 10;

void FuzzSession(FuzzInput& in) {
  const uint8_t mode = in.Byte();
  if (in.remaining() > kMaxGraphBytes) return;
  const std::string bytes = in.Rest();
  GraphDef gdef;
  Status parsed = (mode & 1) ? ParseGraphDefText(bytes, &gdef)
                             : ParseGraphDef(bytes, &gdef);
  if (!parsed.ok()) return;
  RunGraphOptions options;
  options.timeout_ms = 200;
  // Variables first: a step of their initialisers (Assign*) gets the main
  // step past "uninitialized value".
  std::vector<std::string> inits;
  for (const NodeDef& n : gdef.node()) {
    if (n.op().rfind("Assign", 0) == 0 && inits.size() < 64) {
      inits.push_back(n.name());
    }
  }
  if (!inits.empty()) options.init_runs.push_back(inits);
  RunGraphOnce(gdef, options).IgnoreError();
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzSession(in);
  return 0;
}
