#include "runnel/training/timeline.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "runnel/runnel.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

// The trace parsed back by an independent JSON parser (protobuf's).
Struct ParseTrace(const std::string& json) {
  Struct doc;
  auto s = google::protobuf::util::JsonStringToMessage(json, &doc);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << json.substr(0, 2000);
  return doc;
}

std::string Str(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}
double Num(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? -1 : it->second.number_value();
}

TEST(TimelineTest, ParsesTensorFlowLabels) {
  TimelineLabel l = ParseTimelineLabel("dense/MatMul = MatMul(x, w:1, ^init)");
  EXPECT_EQ(l.node, "dense/MatMul");
  EXPECT_EQ(l.op, "MatMul");
  EXPECT_EQ(l.inputs, (std::vector<std::string>{"x", "w:1", "^init"}));
  l = ParseTimelineLabel("c = Const()");
  EXPECT_EQ(l.op, "Const");
  EXPECT_TRUE(l.inputs.empty());
  l = ParseTimelineLabel("s = _Send(edge_3_x @/device:CPU:1)");
  EXPECT_EQ(l.inputs, (std::vector<std::string>{"edge_3_x @/device:CPU:1"}));
  for (const char* bad : {"", "no label", "a = b(", "= ()", "x = (y)"}) {
    l = ParseTimelineLabel(bad);
    EXPECT_EQ(l.op, "unknown") << bad;
  }
}

// A real traced step over two devices: one process per device, an event
// per node, and an arrow from each _Send to its _Recv.
TEST(TimelineTest, TracedTwoDeviceStepBecomesAChromeTrace) {
  Scope root = Scope::NewRootScope();
  // A placeholder, so that constant folding leaves the graph as it is.
  auto x = ops::Placeholder(root.WithDevice(kCpu0).WithOpName("x"), DT_FLOAT);
  auto y = ops::Square(root.WithDevice(kCpu1).WithOpName("y"), x);
  auto z = ops::Add(root.WithDevice(kCpu0).WithOpName("z"), y, x);
  SessionOptions options;
  (*options.config.mutable_device_count())["CPU"] = 2;
  ClientSession session(root, options);
  RunOptions run_options;
  run_options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_OK(
      session.Run(run_options, {{x, {1.f, 2.f}}}, {z}, {}, &out, &metadata));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({2, 6}));

  const StepStats& stats = metadata.step_stats();
  Struct doc = ParseTrace(ChromeTraceJson(stats));
  ASSERT_TRUE(doc.fields().count("traceEvents"));
  std::map<int, std::string> processes;
  std::map<std::string, int> op_pid;  // Node name -> pid.
  std::map<int, std::pair<std::string, int>> flow_start, flow_end;
  int complete = 0;
  for (const Value& v : doc.fields().at("traceEvents").list_value().values()) {
    const Struct& e = v.struct_value();
    const std::string ph = Str(e, "ph");
    const int pid = static_cast<int>(Num(e, "pid"));
    if (ph == "M" && Str(e, "name") == "process_name") {
      processes[pid] = Str(e.fields().at("args").struct_value(), "name");
    } else if (ph == "X") {
      ++complete;
      EXPECT_GE(Num(e, "ts"), 0);
      EXPECT_GE(Num(e, "dur"), 0);
      const Struct& args = e.fields().at("args").struct_value();
      EXPECT_EQ(Str(args, "op"), Str(e, "name"));
      op_pid[Str(args, "name")] = pid;
    } else if (ph == "s") {
      flow_start[static_cast<int>(Num(e, "id"))] = {Str(e, "name"), pid};
    } else if (ph == "f") {
      flow_end[static_cast<int>(Num(e, "id"))] = {Str(e, "name"), pid};
    }
  }
  int nodes = 0;
  for (const DeviceStepStats& d : stats.dev_stats())
    nodes += d.node_stats_size();
  EXPECT_EQ(complete, nodes);
  ASSERT_EQ(processes.size(), 2u);
  std::set<std::string> names;
  for (const auto& [pid, name] : processes) names.insert(name);
  EXPECT_TRUE(names.count(absl::StrCat(kCpu0, " Compute")));
  EXPECT_TRUE(names.count(absl::StrCat(kCpu1, " Compute")));
  ASSERT_TRUE(op_pid.count("y") && op_pid.count("z"));
  EXPECT_NE(op_pid["y"], op_pid["z"]);
  // y comes back to CPU:0: a Send -> Recv arrow at least, leaving one
  // device and arriving on the other.
  int cross = 0;
  EXPECT_EQ(flow_start.size(), flow_end.size());
  for (const auto& [id, start] : flow_start) {
    ASSERT_TRUE(flow_end.count(id));
    EXPECT_EQ(flow_end[id].first, start.first);
    if (flow_end[id].second != start.second) ++cross;
  }
  EXPECT_GE(cross, 1);

  // The aggregates count each node once.
  int64_t counted = 0;
  for (const OpStats& r : AggregateOpStats(stats)) counted += r.count;
  EXPECT_EQ(counted, nodes);
}

NodeExecStats Node(const std::string& label, int64_t start_ns, int64_t dur_ns,
                   int64_t bytes, uint32_t thread) {
  NodeExecStats n;
  n.set_node_name(label.substr(0, label.find(' ')));
  n.set_timeline_label(label);
  n.set_all_start_nanos(start_ns);
  n.set_op_start_rel_nanos(dur_ns / 4);
  n.set_op_end_rel_nanos(dur_ns / 2);
  n.set_all_end_rel_nanos(dur_ns);
  n.set_thread_id(thread);
  if (bytes > 0) {
    auto* d = n.add_output()->mutable_tensor_description();
    d->set_dtype(DT_FLOAT);
    d->mutable_allocation_description()->set_requested_bytes(bytes);
  }
  return n;
}

TEST(TimelineTest, AggregatesPerOpType) {
  StepStats stats;
  auto* d = stats.add_dev_stats();
  d->set_device(kCpu0);
  *d->add_node_stats() = Node("a = MatMul(x, w)", 1000, 3000, 400, 0);
  *d->add_node_stats() = Node("b = MatMul(a, w)", 5000, 5000, 400, 1);
  *d->add_node_stats() = Node("c = Relu(b)", 11000, 1000, 400, 0);
  (*d->mutable_thread_names())[1] = "worker";
  std::vector<OpStats> rows = AggregateOpStats(stats);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, "MatMul");
  EXPECT_EQ(rows[0].count, 2);
  EXPECT_EQ(rows[0].total_nanos, 8000);
  EXPECT_EQ(rows[0].op_nanos, 750 + 1250);
  EXPECT_EQ(rows[0].output_bytes, 800);
  EXPECT_EQ(rows[1].op, "Relu");
  EXPECT_EQ(rows[1].total_nanos, 1000);
  const std::string table = FormatOpStats(rows, 1);
  EXPECT_TRUE(absl::StrContains(table, "MatMul")) << table;
  EXPECT_FALSE(absl::StrContains(table, "Relu")) << table;
  EXPECT_TRUE(absl::StrContains(table, "(1 more op types)")) << table;
  EXPECT_TRUE(absl::StrContains(table, "88.9%")) << table;  // 8000 / 9000.

  // Times count from the first start; the thread name is used.
  Struct doc = ParseTrace(ChromeTraceJson(stats));
  bool named = false;
  for (const Value& v : doc.fields().at("traceEvents").list_value().values()) {
    const Struct& e = v.struct_value();
    if (Str(e, "ph") == "X" &&
        Str(e.fields().at("args").struct_value(), "name") == "c") {
      EXPECT_DOUBLE_EQ(Num(e, "ts"), 10.0);
      EXPECT_DOUBLE_EQ(Num(e, "dur"), 1.0);
    }
    if (Str(e, "ph") == "M" && Str(e, "name") == "thread_name" &&
        Num(e, "tid") == 1) {
      named = Str(e.fields().at("args").struct_value(), "name") == "worker";
    }
  }
  EXPECT_TRUE(named);
  // Thread 1 ran b, which reads a from thread 0: one dataflow arrow (c on
  // thread 0 reads b from thread 1: another); none without show_dataflow.
  EXPECT_EQ(absl::StrContains(ChromeTraceJson(stats), "\"ph\": \"s\""), true);
  TimelineOptions no_flow;
  no_flow.show_dataflow = false;
  EXPECT_FALSE(
      absl::StrContains(ChromeTraceJson(stats, no_flow), "\"ph\": \"s\""));
}

// Whatever a RunMetadata file holds, the trace is valid JSON.
TEST(TimelineTest, HostileStatsStillGiveValidJson) {
  StepStats stats;
  auto* d = stats.add_dev_stats();
  d->set_device("</script>\"\\\n\x01\xff");
  *d->add_node_stats() = Node("\"q\" = \x02Op\xfe(\"in\\, , ^)", -5, -7, -1, 7);
  *d->add_node_stats() = Node("s = _Send( @)", 0, 0, 0, 4294967295u);
  *d->add_node_stats() = Node("r = _Recv( @)", 0, 0, 0, 0);
  NodeExecStats empty;
  *d->add_node_stats() = empty;
  stats.add_dev_stats();  // No device name, no nodes.
  ParseTrace(ChromeTraceJson(stats));
  ParseTrace(ChromeTraceJson(StepStats()));
  EXPECT_FALSE(FormatOpStats(AggregateOpStats(stats), 0).empty());
}

// Times at the ends of int64 (a fuzzer found `start - base` overflowing):
// the arithmetic saturates, and the trace is still valid JSON.
TEST(TimelineTest, ExtremeTimesSaturateInsteadOfOverflowing) {
  StepStats stats;
  auto* d = stats.add_dev_stats();
  d->set_device("/cpu:0");
  NodeExecStats late, early;
  late.set_node_name("late");
  late.set_all_start_micros(1796229170307691415);
  late.set_all_end_rel_micros(std::numeric_limits<int64_t>::max());
  late.set_op_start_rel_micros(std::numeric_limits<int64_t>::min());
  late.set_op_end_rel_micros(std::numeric_limits<int64_t>::max());
  early.set_node_name("early");
  early.set_all_start_nanos(-7715373242698749809);
  early.set_all_end_rel_nanos(std::numeric_limits<int64_t>::max());
  *d->add_node_stats() = late;
  *d->add_node_stats() = early;
  *d->add_node_stats() = late;
  const std::string json = ChromeTraceJson(stats);
  ParseTrace(json);
  EXPECT_TRUE(absl::StrContains(json, "late"));
  EXPECT_FALSE(FormatOpStats(AggregateOpStats(stats), 0).empty());
}

}  // namespace
}  // namespace runnel::training
