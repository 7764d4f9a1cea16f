// Shared helpers for Runnel's benchmark programs: timing, medians, and the
// peers' one-line result format "<workload> runnel <metric>=<value> <unit>"
// (../shared/peers/README.md), so figures compare line by line.
#ifndef RUNNEL_BENCHMARKS_BENCH_UTIL_H_
#define RUNNEL_BENCHMARKS_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"

namespace runnel::bench {

inline double NowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline void Report(const char* workload, const std::string& metric,
                   double value, const char* unit) {
  std::printf("%s runnel %s=%.4g %s\n", workload, metric.c_str(), value, unit);
  std::fflush(stdout);
}

// Exits with a message if `s` is not OK (benchmarks have no error path).
inline void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

inline std::unique_ptr<Session> SessionFromText(const std::string& pbtxt) {
  GraphDef g;
  Check(ParseGraphDefText(pbtxt, &g), "parse graph");
  auto s = NewSession();
  Check(s.status(), "new session");
  Check((*s)->Create(g), "create session");
  return std::move(*s);
}

}  // namespace runnel::bench

#endif  // RUNNEL_BENCHMARKS_BENCH_UTIL_H_
