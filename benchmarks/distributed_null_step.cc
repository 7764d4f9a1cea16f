// distributed_null_step (OSDI §6.2, "null" training steps): each of W
// workers, in its own client session through its own task's master, reads
// a scalar variable from each of P PS tasks, adds them on the worker, and
// sends an update back to every PS (AssignAdd), per step. Every task is a
// separate `runnel server` process on loopback, so each step is a RunStep,
// a RunGraph per task, and 2P RecvTensor calls. Reports the median step
// time over all workers' steps.
//
//   distributed_null_step [--workers W] [--ps P] [--steps N] [--curve]
//
// --curve runs W in {1, 2, 4, 8} x P in {1, 4, 16}. Figure lines:
//   distributed_null_step runnel workers=W ps=P step_time=X ms
#include <thread>

#include "absl/strings/numbers.h"
#include "benchmarks/distributed_util.h"

namespace runnel::bench {
namespace {

std::string NullStepGraph(int worker, int ps) {
  const std::string w = Dev("worker", worker);
  std::string g;
  std::vector<std::string> reads, updates;
  for (int p = 0; p < ps; ++p) {
    const std::string d = Dev("ps", p);
    const std::string v = absl::StrCat("v", p);
    g +=
        NodeText(v, "VariableV2", {}, d,
                 "attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
                 "\"shape\" value { shape {} } }");
    g += ScalarConst(absl::StrCat("zero", p), 0, d);
    g += NodeText(absl::StrCat("init", p), "Assign",
                  {v, absl::StrCat("zero", p)}, d, kTFloat);
    g += NodeText(absl::StrCat("read", p), "Identity", {v}, d, kTFloat);
    reads.push_back(absl::StrCat("read", p));
  }
  g += NodeText(
      "sum", "AddN", reads, w,
      absl::StrCat(kTFloat, " attr { key: \"N\" value { i: ", ps, " } }"));
  g += ScalarConst("tiny", 1e-9f, w);
  g += NodeText("delta", "Mul", {"sum", "tiny"}, w, kTFloat);
  std::vector<std::string> deps;
  for (int p = 0; p < ps; ++p) {
    const std::string u = absl::StrCat("update", p);
    g += NodeText(u, "AssignAdd", {absl::StrCat("v", p), "delta"}, Dev("ps", p),
                  kTFloat);
    deps.push_back(absl::StrCat("^", u));
  }
  g += NodeText("train", "NoOp", deps, w);
  return g;
}

// The median step time, or the first error (e.g. a task that could not be
// reached on an overloaded machine).
StatusOr<double> RunOne(const std::string& binary, int workers, int ps,
                        int steps) {
  auto cluster =
      LocalClusterProcesses::Create(binary, {{"ps", ps}, {"worker", workers}});
  Check(cluster.status(), "start cluster");
  std::vector<std::unique_ptr<Session>> sessions;
  for (int w = 0; w < workers; ++w) {
    sessions.push_back(
        RemoteSession((*cluster)->target("worker", w), NullStepGraph(w, ps)));
  }
  std::vector<std::string> inits;
  for (int p = 0; p < ps; ++p) inits.push_back(absl::StrCat("init", p));
  Check(sessions[0]->Run({}, {}, inits, nullptr), "init");
  std::vector<std::vector<double>> times(workers);
  std::vector<Status> errors(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::vector<Tensor> out;
      for (int i = 0; i < steps + 10; ++i) {
        const double t0 = NowSeconds();
        errors[w] = sessions[w]->Run({}, {"sum"}, {"train"}, &out);
        if (!errors[w].ok()) return;
        if (i >= 10) times[w].push_back((NowSeconds() - t0) * 1e3);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& e : errors) RETURN_IF_ERROR(e);
  std::vector<double> all;
  for (auto& v : times) all.insert(all.end(), v.begin(), v.end());
  for (auto& s : sessions) (void)s->Close();
  return Median(all);
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) {
  using namespace runnel::bench;
  int workers = 1, ps = 16, steps = 200;
  bool curve = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](int* out) {
      if (i + 1 >= argc || !absl::SimpleAtoi(argv[++i], out) || *out < 1) {
        std::fprintf(stderr, "%s wants a positive number\n", a.c_str());
        std::exit(2);
      }
    };
    if (a == "--workers")
      next(&workers);
    else if (a == "--ps")
      next(&ps);
    else if (a == "--steps")
      next(&steps);
    else if (a == "--curve")
      curve = true;
    else {
      std::fprintf(stderr,
                   "usage: distributed_null_step [--workers W] [--ps P] "
                   "[--steps N] [--curve]\n");
      return 2;
    }
  }
  const std::string binary = RunnelBinary(argv[0]);
  std::vector<std::pair<int, int>> runs;
  if (curve) {
    for (int p : {1, 4, 16}) {
      for (int w : {1, 2, 4, 8}) runs.emplace_back(w, p);
    }
  } else {
    runs.emplace_back(workers, ps);
  }
  for (auto [w, p] : runs) {
    runnel::StatusOr<double> ms = RunOne(binary, w, p, steps);
    if (ms.ok()) {
      std::printf(
          "distributed_null_step runnel workers=%d ps=%d step_time=%.3f ms\n",
          w, p, *ms);
    } else {
      std::printf("distributed_null_step runnel workers=%d ps=%d failed: %s\n",
                  w, p, std::string(ms.status().message()).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
