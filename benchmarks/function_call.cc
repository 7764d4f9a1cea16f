// function_call: what calling a library function costs. Session::Run of
// y = x + 1 three ways, µs per Run (median of 20 batches of 1000 Runs after
// warm-up):
//   plain     the Add in the graph itself;
//   inlined   a PartitionedCall of AddOne(x) = x + 1, which the session
//             inlines (the default);
//   call      the same call with `_noinline`: the call kernel runs AddOne's
//             own executor through the function library runtime.
// and the overheads over `plain` (issue goal: call ≤ 2 µs).
#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"
#include "runnel/graph/define_function.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::bench {
namespace {

enum class Mode { kPlain, kInlined, kCall };

std::unique_ptr<Session> MakeSession(Mode mode) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  if (mode == Mode::kPlain) {
    ops::AddV2(root.WithOpName("y"), x, ops::Const(root, 1.0f));
  } else {
    auto f = DefineFunction(
        root, "AddOne", {{"x", DT_FLOAT}},
        [](const Scope& s,
           const std::vector<Output>& a) -> StatusOr<std::vector<Output>> {
          return std::vector<Output>{ops::AddV2(s, a[0], ops::Const(s, 1.0f))};
        });
    Check(f.status(), "define");
    NodeBuilder b(root.WithOpName("y"), "PartitionedCall");
    b.Input(InputList({x})).Attr("Tout", std::vector<DataType>{DT_FLOAT});
    b.Attr("f", *f);
    if (mode == Mode::kCall) b.Attr("_noinline", true);
    Operation op;
    Check(b.Finalize(&op), "build");
  }
  GraphDef gdef;
  Check(root.ToGraphDef(&gdef), "export");
  auto session = NewSession();
  Check(session.status(), "session");
  Check((*session)->Create(gdef), "create");
  return std::move(*session);
}

void BM_FunctionCall(benchmark::State& state) {
  auto session = MakeSession(static_cast<Mode>(state.range(0)));
  Tensor x = Tensor::Scalar<float>(1);
  std::vector<Tensor> out;
  for (auto _ : state) Check(session->Run({{"x", x}}, {"y"}, {}, &out), "run");
}
BENCHMARK(BM_FunctionCall)->Arg(0)->Arg(1)->Arg(2);

double MicrosPerRun(Mode mode) {
  auto session = MakeSession(mode);
  Tensor x = Tensor::Scalar<float>(41);
  std::vector<Tensor> out;
  std::vector<double> t;
  for (int rep = 0; rep < 25; ++rep) {
    const double t0 = NowSeconds();
    for (int i = 0; i < 1000; ++i)
      Check(session->Run({{"x", x}}, {"y"}, {}, &out), "run");
    const double dt = NowSeconds() - t0;
    if (out[0].scalar<float>() != 42.0f) std::exit(1);
    if (rep >= 5) t.push_back(dt / 1000 * 1e6);
  }
  return Median(t);
}

void ReportPeersFormat() {
  const double plain = MicrosPerRun(Mode::kPlain);
  const double inlined = MicrosPerRun(Mode::kInlined);
  const double call = MicrosPerRun(Mode::kCall);
  Report("function_call", "plain_run", plain, "us");
  Report("function_call", "inlined_run", inlined, "us");
  Report("function_call", "call_run", call, "us");
  Report("function_call", "inlined_overhead", inlined - plain, "us");
  Report("function_call", "call_overhead", call - plain, "us");
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) {
  runnel::bench::ReportPeersFormat();
  benchmark::Initialize(&argc, argv);
  if (argc > 1 || std::getenv("RUNNEL_GBENCH"))
    benchmark::RunSpecifiedBenchmarks();
  return 0;
}
