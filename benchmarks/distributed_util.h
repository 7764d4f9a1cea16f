// Helpers for the distributed benchmarks: text GraphDef nodes and a
// cluster of `runnel server` processes on loopback.
#ifndef RUNNEL_BENCHMARKS_DISTRIBUTED_UTIL_H_
#define RUNNEL_BENCHMARKS_DISTRIBUTED_UTIL_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/bench_util.h"
#include "runnel/distributed/grpc_session.h"
#include "testing/local_cluster.h"

namespace runnel::bench {

inline std::string Dev(const std::string& job, int task) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task, "/device:CPU:0");
}

inline std::string NodeText(const std::string& name, const std::string& op,
                            const std::vector<std::string>& inputs,
                            const std::string& device,
                            const std::string& attrs = "") {
  std::string s = absl::StrCat("node { name: \"", name, "\" op: \"", op,
                               "\" device: \"", device, "\" ");
  for (const std::string& in : inputs)
    absl::StrAppend(&s, "input: \"", in, "\" ");
  return absl::StrCat(s, attrs, " }\n");
}

inline const char* kTFloat = "attr { key: \"T\" value { type: DT_FLOAT } }";

inline std::string ScalarConst(const std::string& name, float v,
                               const std::string& device) {
  return NodeText(name, "Const", {}, device,
                  absl::StrCat("attr { key: \"dtype\" value { type: DT_FLOAT } "
                               "} attr { key: \"value\" value { tensor { "
                               "dtype: DT_FLOAT tensor_shape {} float_val: ",
                               v, " } } }"));
}

inline std::unique_ptr<Session> RemoteSession(const std::string& target,
                                              const std::string& pbtxt,
                                              const ConfigProto& config = {}) {
  GraphDef g;
  Check(ParseGraphDefText(pbtxt, &g), "parse graph");
  SessionOptions o;
  o.target = target;
  o.config = config;
  auto s = NewGrpcSession(o);
  Check(s.status(), "new session");
  Check((*s)->Create(g), "create session");
  return std::move(*s);
}

// The `runnel` binary next to the benchmarks (build/tools/runnel), or
// $RUNNEL_BINARY.
inline std::string RunnelBinary(const char* argv0) {
  if (const char* b = std::getenv("RUNNEL_BINARY")) return b;
  std::string self = argv0;
  const size_t slash = self.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : self.substr(0, slash);
  return dir + "/../tools/runnel";
}

}  // namespace runnel::bench

#endif  // RUNNEL_BENCHMARKS_DISTRIBUTED_UTIL_H_
