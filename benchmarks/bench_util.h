// Shared helpers for Runnel's benchmark programs: timing, medians, and the
// peers' one-line result format "<workload> runnel <metric>=<value> <unit>"
// (../shared/peers/README.md), so figures compare line by line.
#ifndef RUNNEL_BENCHMARKS_BENCH_UTIL_H_
#define RUNNEL_BENCHMARKS_BENCH_UTIL_H_

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "runnel/training/timeline.h"

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

// Note [Percent of peak]. A workload's achieved GFLOP/s counts the
// multiply-adds of its GEMMs and convolutions only (2 FLOP each): the
// forward pass, the weight gradients, and the input gradients the step
// needs (not the first layer's, which nothing consumes). Element-wise work is
// not counted, so 100% is out of reach by that much. The peak is an FMA loop
// on every core (as ../shared/peers/peak.cpp measures it), in the widest
// vectors the machine has, measured by the same process before and after
// the timed steps; the higher one counts. One measurement is not enough:
// the loop's speed moves with the machine's state (335-500 GFLOP/s within
// an hour on this 2-vCPU machine), and just after the steps OpenMP workers
// may still spin against it (a W4 run once reported 142%). A SAME
// convolution counts every tap of its window, padding included, as the
// peers count it, so a convolution alone can pass 100% (W3's conv2 at
// 14x14 computes ~84% of its nominal taps).

namespace internal {

// 12 independent chains of fused multiply-adds (more than FMA latency times
// pipes). Returns a value that depends on every chain so none is dropped.
__attribute__((target("avx512f"))) inline float FmaLoop512(int64_t iters) {
  constexpr int kChains = 12;
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.001f * k);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  float lanes[16];  // Not _mm512_reduce_add_ps: GCC 12 warns inside it.
  _mm512_storeu_ps(lanes, s);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

__attribute__((target("avx2,fma"))) inline float FmaLoop256(int64_t iters) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(0.001f * k);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  }
  __m256 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_ps(s, acc[k]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace internal

// The fp32 FMA-loop peak of `threads` cores (0: all), in GFLOP/s: the median
// of `reps` runs of `iters` iterations (12 vector FMAs each) per thread.
inline double MeasurePeakGflops(int threads = 0, int reps = 3,
                                int64_t iters = 20'000'000) {
  if (threads <= 0) {
    threads = std::max(1u, std::thread::hardware_concurrency());
  }
  const bool wide = __builtin_cpu_supports("avx512f");
  const double lanes = wide ? 16 : 8;
  std::vector<double> gflops;
  for (int r = 0; r < reps; ++r) {
    std::vector<float> sink(threads);
    const double t0 = NowSeconds();
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) {
      workers.emplace_back([&, i] {
        sink[i] =
            wide ? internal::FmaLoop512(iters) : internal::FmaLoop256(iters);
      });
    }
    for (auto& w : workers) w.join();
    const double dt = NowSeconds() - t0;
    if (sink[0] != sink[0]) std::abort();  // Uses the results.
    gflops.push_back(threads * static_cast<double>(iters) * 12 * lanes * 2 /
                     dt / 1e9);
  }
  return Median(gflops);
}

// The FMA peak measured when made and again by Final(), the higher of the
// two (Note [Percent of peak]): make one before the timed steps.
class PeakMeter {
 public:
  PeakMeter() : before_(MeasurePeakGflops()) {}
  double before() const { return before_; }
  double Final() const { return std::max(before_, MeasurePeakGflops()); }

 private:
  double before_;
};

// Prints "<workload> runnel gflops=... GFLOP/s" and "... pct_of_peak=... %"
// for a step of `flops` FLOP taking `seconds` (Note [Percent of peak]).
inline void ReportPeakShare(const char* workload, double flops, double seconds,
                            double peak_gflops) {
  const double gflops = flops / seconds / 1e9;
  Report(workload, "gflops", gflops, "GFLOP/s");
  Report(workload, "pct_of_peak", 100.0 * gflops / peak_gflops, "%");
  std::fprintf(stderr, "# %s: %.1f MFLOP per step; peak %.1f GFLOP/s\n",
               workload, flops / 1e6, peak_gflops);
}

// 2 * m * n * k: one m x k by k x n product.
inline double GemmFlops(double m, double n, double k) { return 2 * m * n * k; }

// True if `flag` is among the arguments.
inline bool HasFlag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return true;
  }
  return false;
}

// Session options for a benchmark's step: with `bf16`, the products run in
// bfloat16 with fp32 accumulation (rewrite_options
// .auto_mixed_precision_onednn_bfloat16, runnel/graph/mixed_precision.h).
inline SessionOptions StepSessionOptions(bool bf16, int inter_op = 0) {
  SessionOptions options;
  if (inter_op > 0) {
    options.config.set_inter_op_parallelism_threads(inter_op);
  }
  if (bf16) {
    options.config.mutable_graph_options()
        ->mutable_rewrite_options()
        ->set_auto_mixed_precision_onednn_bfloat16(RewriterConfig::ON);
  }
  return options;
}

// The integer after `flag` ("--steps 500"), or `fallback` if absent.
inline int FlagValue(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// Op time per op type over the traced steps in `traces` (each a step's
// RunMetadata), printed to stderr, most time first: where a step goes.
// A product's time includes its wait for the core budget while another
// product holds the cores (runnel/cpu/omp_threads.h), so products that ran
// side by side count that time twice; benchmarks/step_products times each
// product alone.
inline void PrintOpProfile(const char* workload,
                           const std::vector<RunMetadata>& traces) {
  StepStats all;
  for (const RunMetadata& md : traces) {
    for (const auto& dev : md.step_stats().dev_stats()) {
      *all.add_dev_stats() = dev;
    }
  }
  std::fprintf(
      stderr, "# %s: op profile over %zu traced steps\n%s", workload,
      traces.size(),
      training::FormatOpStats(training::AggregateOpStats(all), 25).c_str());
  // The slowest nodes, by mean compute time, with when they start (from the
  // step's first node start) to show which ran side by side.
  std::map<std::string, std::pair<double, double>> by_node;  // time, start
  for (const RunMetadata& md : traces) {
    int64_t first = INT64_MAX;
    for (const auto& dev : md.step_stats().dev_stats()) {
      for (const auto& ns : dev.node_stats()) {
        first = std::min(first, ns.all_start_micros());
      }
    }
    for (const auto& dev : md.step_stats().dev_stats()) {
      for (const auto& ns : dev.node_stats()) {
        auto& [us, start] = by_node[ns.node_name()];
        us += (ns.op_end_rel_nanos() - ns.op_start_rel_nanos()) / 1e3;
        start += ns.all_start_micros() - first + ns.op_start_rel_nanos() / 1e3;
      }
    }
  }
  std::vector<std::pair<double, std::string>> nodes;
  for (const auto& [name, v] : by_node) nodes.push_back({v.first, name});
  std::sort(nodes.rbegin(), nodes.rend());
  std::fprintf(stderr, "# slowest nodes (mean over the steps):\n");
  const double n = traces.empty() ? 1.0 : traces.size();
  for (size_t i = 0; i < nodes.size() && i < 16; ++i) {
    std::fprintf(stderr, "#   %9.1f us  starts at %9.1f us  %s\n",
                 nodes[i].first / n, by_node[nodes[i].second].second / n,
                 nodes[i].second.c_str());
  }
}

}  // namespace runnel::bench

#endif  // RUNNEL_BENCHMARKS_BENCH_UTIL_H_
