// recv_scheduling (whitepaper §5.2): the peak memory and step time of a
// model-parallel step with and without GraphOptions.enable_recv_scheduling
// (Note [Recv scheduling] in runnel/graph/partition.h).
//
// CPU:0 makes kTensors tensors of 4 MiB at once (t_i = Fill(x + i)). CPU:1
// runs a long chain over a small state h (256x256): per stage, kDepth
// MatMul+Tanh steps, then it folds in t_i widened to double:
//   h <- h + 1e-3 * mean(double(t_i) * mean(h)).
// A local Recv hands over the sent buffer, so the 4 MiB tensors are held
// (by the rendezvous or by CPU:1) until used either way; what scheduling
// changes is double(t_i) (8 MiB each): without it every Recv runs at the
// start of the step and CPU:1 widens all tensors at once, keeping them until
// the chain reaches them; with it each Recv waits for the node before its
// stage, so about one widened copy is alive at a time.
//
// Figures: the step's peak of cpu_allocator() bytes above what was in use
// before it (MiB, the maximum over the timed steps) and the median step
// time (ms) over 30 steps after 5 warm-up, for both settings, their steps
// alternating.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/bench_util.h"
#include "runnel/framework/allocator.h"
#include "runnel/runnel.h"

namespace runnel::bench {
namespace {

constexpr int kTensors = 8;
constexpr int kSide = 1024;  // t_i is kSide x kSide floats: 4 MiB.
constexpr int kState = 256;  // h is kState x kState floats.
constexpr int kDepth = 4;    // MatMul+Tanh steps per stage.
constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

struct Model {
  GraphDef graph;
  std::string fetch;
};

Model Build() {
  Scope root = Scope::NewRootScope();
  const Scope cpu0 = root.WithDevice(kCpu0);
  const Scope cpu1 = root.WithDevice(kCpu1);
  auto x = ops::Placeholder(cpu0.WithOpName("x"), DT_FLOAT);
  auto h0 = ops::Placeholder(cpu1.WithOpName("h"), DT_FLOAT);
  Tensor w_value(DT_FLOAT, TensorShape({kState, kState}));
  for (int64_t i = 0; i < w_value.NumElements(); ++i) {
    w_value.flat<float>()[i] = 1.f / kState;
  }
  Output w = ops::Const(cpu1, w_value);
  Output all = ops::Const(cpu1, {0, 1});
  Output h = h0;
  for (int i = 0; i < kTensors; ++i) {
    Output t = ops::Fill(cpu0.WithOpName(absl::StrCat("t", i)),
                         ops::Const(cpu0, {kSide, kSide}),
                         ops::Add(cpu0, x, static_cast<float>(i)));
    for (int k = 0; k < kDepth; ++k)
      h = ops::Tanh(cpu1, ops::MatMul(cpu1, h, w));
    Output g = ops::Cast(cpu1, ops::Mean(cpu1, h, all), DT_DOUBLE);
    Output wide =
        ops::Cast(cpu1.WithOpName(absl::StrCat("wide", i)), t, DT_DOUBLE);
    Output r = ops::Cast(cpu1, ops::Mean(cpu1, ops::Mul(cpu1, wide, g), all),
                         DT_FLOAT);
    h = ops::Add(cpu1, h, ops::Mul(cpu1, r, 1e-3f));
  }
  Model m;
  Check(root.ToGraphDef(&m.graph), "build graph");
  m.fetch = absl::StrCat(h.node()->name(), ":", h.index());
  return m;
}

// One session, with or without Recv scheduling, and its figures.
struct Setting {
  std::unique_ptr<Session> session;
  std::vector<double> times;
  double peak_mib = 0;
  float result = 0;
  int scheduled_recvs = 0;
};

Setting MakeSetting(const Model& m, bool scheduling) {
  SessionOptions o;
  (*o.config.mutable_device_count())["CPU"] = 2;
  o.config.mutable_graph_options()->set_enable_recv_scheduling(scheduling);
  auto s = NewSession(o);
  Check(s.status(), "new session");
  Check((*s)->Create(m.graph), "create");
  Setting setting;
  setting.session = std::move(*s);
  return setting;
}

// One step of `s`; its time and peak count when `timed`.
void Step(const Model& m,
          const std::vector<std::pair<std::string, Tensor>>& feeds, bool timed,
          Setting* s) {
  Allocator* a = cpu_allocator();
  RunOptions ro;
  ro.set_output_partition_graphs(!timed);
  RunMetadata md;
  std::vector<Tensor> out;
  a->ClearStats();
  const int64_t before = a->GetStats().bytes_in_use;
  const double t0 = NowSeconds();
  Check(s->session->Run(ro, feeds, {m.fetch}, {}, &out, &md), "run");
  const double dt = NowSeconds() - t0;
  const int64_t peak = a->GetStats().peak_bytes_in_use - before;
  s->result = out[0].flat<float>()[0];
  if (!timed) {
    s->scheduled_recvs = 0;
    for (const GraphDef& p : md.partition_graphs()) {
      for (const NodeDef& n : p.node()) {
        s->scheduled_recvs += n.op() == "_Recv" && n.input_size() > 0;
      }
    }
    return;
  }
  s->times.push_back(dt * 1e3);
  s->peak_mib = std::max(s->peak_mib, peak / 1048576.0);
}

}  // namespace
}  // namespace runnel::bench

int main() {
  using namespace runnel;
  using namespace runnel::bench;
  const Model m = Build();
  Tensor h(DT_FLOAT, TensorShape({kState, kState}));
  for (int64_t i = 0; i < h.NumElements(); ++i) {
    h.flat<float>()[i] = 0.01f * static_cast<float>(i % 97);
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::Scalar<float>(0.5f)}, {"h", h}};
  Setting plain = MakeSetting(m, false);
  Setting sched = MakeSetting(m, true);
  // Alternating steps, so both settings see the same machine state.
  for (int step = 0; step < 35; ++step) {
    Step(m, feeds, step >= 5, &plain);
    Step(m, feeds, step >= 5, &sched);
  }
  if (plain.result != sched.result) {
    std::fprintf(stderr, "results differ: %g vs %g\n", plain.result,
                 sched.result);
    return 1;
  }
  std::fprintf(stderr, "recv_scheduling: %d Recvs scheduled; h[0] = %g\n",
               sched.scheduled_recvs, sched.result);
  Report("recv_scheduling", "peak_unscheduled", plain.peak_mib, "MiB");
  Report("recv_scheduling", "peak_scheduled", sched.peak_mib, "MiB");
  Report("recv_scheduling", "step_unscheduled", Median(plain.times), "ms");
  Report("recv_scheduling", "step_scheduled", Median(sched.times), "ms");
  return 0;
}
