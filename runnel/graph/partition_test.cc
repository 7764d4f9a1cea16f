// The partitioner over the real op registry: Send/Recv insertion, one Recv
// per (tensor, device), control edges, refs, memory types, names, errors,
// and (Note [Cross-device loops]) the control loops of frames split across
// devices. Running the partitions is the session's test.
#include "runnel/graph/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/graph/control_flow.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/scope.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

#define ASSERT_OK(expr) ASSERT_TRUE((expr).ok()) << (expr)
#define EXPECT_OK(expr) EXPECT_TRUE((expr).ok()) << (expr)

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";

// Builds `op` with `inputs` (one per input arg) and returns output 0.
Output Build(const Scope& s, const std::string& op, std::vector<Input> inputs,
             AttrMap attrs = {}) {
  NodeBuilder b(s, op);
  for (const Input& in : inputs) b.Input(in);
  b.Attrs(attrs);
  Operation result;
  s.UpdateStatus(b.Finalize(&result));
  return s.ok() && result.num_outputs() > 0 ? result.output(0) : Output();
}
Operation BuildOp(const Scope& s, const std::string& op,
                  std::vector<Input> inputs, AttrMap attrs = {}) {
  NodeBuilder b(s, op);
  for (const Input& in : inputs) b.Input(in);
  b.Attrs(attrs);
  Operation result;
  s.UpdateStatus(b.Finalize(&result));
  return result;
}
Output Placeholder(const Scope& s, DataType dtype = DT_FLOAT) {
  return Build(s, "Placeholder", {}, {{"dtype", MakeAttrValue(dtype)}});
}

// Assigns every node its requested device, or CPU:0 if it has none.
void Place(Graph* g) {
  for (Node* n : g->nodes()) {
    n->set_assigned_device_name(
        n->requested_device().empty() ? kCpu0 : n->requested_device());
  }
}

uint64_t Incarnation(const std::string& device) {
  if (device == kCpu0) return 100;
  if (device == kCpu1) return 101;
  if (device == kCpu2) return 0xFFFFFFFFFFFFFFFFull;  // Bit-casts to -1.
  return kIllegalIncarnation;
}

PartitionOptions Options() {
  PartitionOptions opts;
  opts.get_incarnation = Incarnation;
  return opts;
}

using Partitions = std::map<std::string, GraphDef>;

const NodeDef* Find(const GraphDef& gdef, const std::string& name) {
  for (const NodeDef& n : gdef.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}
std::vector<const NodeDef*> OfOp(const GraphDef& gdef, const std::string& op) {
  std::vector<const NodeDef*> v;
  for (const NodeDef& n : gdef.node()) {
    if (n.op() == op) v.push_back(&n);
  }
  return v;
}
std::string StrAttr(const NodeDef& n, const std::string& name) {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? "<missing>" : it->second.s();
}
int64_t IntAttr(const NodeDef& n, const std::string& name) {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? -999 : it->second.i();
}
DataType TypeAttr(const NodeDef& n, const std::string& name) {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? DT_INVALID : it->second.type();
}
std::vector<std::string> Inputs(const NodeDef& n) {
  return {n.input().begin(), n.input().end()};
}

// Every partition re-imports, and every node of `g` is in exactly one.
void ExpectImportable(const Graph& g, const Partitions& parts) {
  int total = 0;
  for (const auto& [device, gdef] : parts) {
    Graph back;
    Status s = ImportGraphDef(gdef, &back, {.allow_internal_ops = true});
    EXPECT_TRUE(s.ok()) << device << ": " << s;
    for (const NodeDef& n : gdef.node()) {
      EXPECT_EQ(n.device(), device) << n.name();
      if (g.FindNode(n.name()) != nullptr) ++total;
    }
  }
  EXPECT_EQ(total, g.num_nodes());
}

// The _Send in `from` and the _Recv in `to` with tensor_name `name`.
void ExpectPair(const Partitions& parts, const std::string& from,
                const std::string& to, const NodeDef& send, const NodeDef& recv,
                DataType dtype) {
  EXPECT_EQ(StrAttr(send, "tensor_name"), StrAttr(recv, "tensor_name"));
  for (const NodeDef* n : {&send, &recv}) {
    EXPECT_EQ(StrAttr(*n, "send_device"), from);
    EXPECT_EQ(StrAttr(*n, "recv_device"), to);
    EXPECT_EQ(IntAttr(*n, "send_device_incarnation"),
              static_cast<int64_t>(Incarnation(from)));
    EXPECT_FALSE(n->attr().at("client_terminated").b());
  }
  EXPECT_EQ(TypeAttr(send, "T"), dtype);
  EXPECT_EQ(TypeAttr(recv, "tensor_type"), dtype);
  EXPECT_EQ(send.device(), from);
  EXPECT_EQ(recv.device(), to);
  (void)parts;
}

// The Send in `from` whose tensor_name matches `recv`'s.
const NodeDef* SendFor(const GraphDef& from, const NodeDef& recv) {
  for (const NodeDef& n : from.node()) {
    if ((n.op() == "_Send" || n.op() == "_HostSend") &&
        StrAttr(n, "tensor_name") == StrAttr(recv, "tensor_name")) {
      return &n;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Data and control edges

TEST(PartitionTest, OneDeviceIsTheGraphItself) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Output b = Build(root.WithOpName("b"), "Identity", {a});
  Operation noop = BuildOp(root.WithOpName("n"), "NoOp", {});
  Build(root.WithOpName("c").WithControlDependencies(noop), "Add", {a, b});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 1u);
  GraphDef expected;
  ToGraphDef(g, &expected, {.use_assigned_device = true});
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      parts.at(kCpu0), expected))
      << parts.at(kCpu0).DebugString();
  ExpectImportable(g, parts);
}

TEST(PartitionTest, CrossDeviceEdgeBecomesSendAndRecv) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Build(root.WithOpName("b").WithDevice(kCpu1), "Identity", {a});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 2u);
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  ASSERT_EQ(p0.node_size(), 2);  // a, _Send
  ASSERT_EQ(p1.node_size(), 2);  // _Recv, b
  ASSERT_EQ(OfOp(p0, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(p1, "_Recv").size(), 1u);
  const NodeDef& send = *OfOp(p0, "_Send")[0];
  const NodeDef& recv = *OfOp(p1, "_Recv")[0];
  EXPECT_THAT(Inputs(send), UnorderedElementsAre("a"));
  EXPECT_TRUE(recv.input().empty());
  EXPECT_THAT(Inputs(*Find(p1, "b")), UnorderedElementsAre(recv.name()));
  ExpectPair(parts, kCpu0, kCpu1, send, recv, DT_FLOAT);
  EXPECT_EQ(StrAttr(send, "tensor_name").rfind("edge_", 0), 0u);
  EXPECT_THAT(StrAttr(send, "tensor_name"), HasSubstr("_a"));
  EXPECT_EQ(StrAttr(recv, "_src"), "a");
  EXPECT_EQ(StrAttr(recv, "_dst"), "b");
  EXPECT_EQ(Find(p1, "b")->device(), kCpu1);
  ExpectImportable(g, parts);
}

TEST(PartitionTest, OneRecvPerTensorAndDevice) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Output a2 = Placeholder(root.WithOpName("a2"));
  // b and c on CPU:1 read a twice between them; d on CPU:2 reads it too;
  // c also reads a2 (a second tensor, a second pair).
  Build(root.WithOpName("b").WithDevice(kCpu1), "Identity", {a});
  Build(root.WithOpName("c").WithDevice(kCpu1), "Add", {a, a2});
  Build(root.WithOpName("c2").WithDevice(kCpu1), "Add", {a, a});
  Build(root.WithOpName("d").WithDevice(kCpu2), "Identity", {a});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 3u);
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  const GraphDef& p2 = parts.at(kCpu2);
  EXPECT_EQ(p0.node_size(), 2 + 3);  // a, a2, Sends: a->1, a2->1, a->2
  EXPECT_EQ(p1.node_size(), 3 + 2);  // b, c, c2, Recvs of a and a2
  EXPECT_EQ(p2.node_size(), 1 + 1);  // d, Recv of a
  ASSERT_EQ(OfOp(p1, "_Recv").size(), 2u);
  const std::string ra = Find(p1, "b")->input(0);
  EXPECT_EQ(Find(p1, "c")->input(0), ra);
  EXPECT_EQ(Find(p1, "c2")->input(0), ra);
  EXPECT_EQ(Find(p1, "c2")->input(1), ra);
  const std::string ra2 = Find(p1, "c")->input(1);
  EXPECT_NE(ra, ra2);
  const NodeDef* recv_a = Find(p1, ra);
  const NodeDef* recv_a2 = Find(p1, ra2);
  ASSERT_NE(recv_a, nullptr);
  ASSERT_NE(recv_a2, nullptr);
  const NodeDef* send_a = SendFor(p0, *recv_a);
  const NodeDef* send_a2 = SendFor(p0, *recv_a2);
  ASSERT_NE(send_a, nullptr);
  ASSERT_NE(send_a2, nullptr);
  EXPECT_EQ(send_a->input(0), "a");
  EXPECT_EQ(send_a2->input(0), "a2");
  ExpectPair(parts, kCpu0, kCpu1, *send_a, *recv_a, DT_FLOAT);

  ASSERT_EQ(OfOp(p2, "_Recv").size(), 1u);
  const NodeDef& recv_d = *OfOp(p2, "_Recv")[0];
  EXPECT_EQ(Find(p2, "d")->input(0), recv_d.name());
  const NodeDef* send_d = SendFor(p0, recv_d);
  ASSERT_NE(send_d, nullptr);
  EXPECT_NE(send_d->name(), send_a->name());
  ExpectPair(parts, kCpu0, kCpu2, *send_d, recv_d, DT_FLOAT);
  EXPECT_EQ(IntAttr(recv_d, "send_device_incarnation"), 100);
  ExpectImportable(g, parts);
}

TEST(PartitionTest, EachOutputSlotHasItsOwnPair) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"));
  Output p = Placeholder(root.WithOpName("p"), DT_BOOL);
  Operation sw = BuildOp(root.WithOpName("sw"), "Switch", {x, p});
  Build(root.WithOpName("f").WithDevice(kCpu1), "Identity", {sw.output(0)});
  Build(root.WithOpName("t").WithDevice(kCpu1), "Identity", {sw.output(1)});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  ASSERT_EQ(OfOp(p0, "_Send").size(), 2u);
  ASSERT_EQ(OfOp(p1, "_Recv").size(), 2u);
  const NodeDef* rf = Find(p1, Find(p1, "f")->input(0));
  const NodeDef* rt = Find(p1, Find(p1, "t")->input(0));
  ASSERT_NE(rf, nullptr);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(SendFor(p0, *rf)->input(0), "sw");
  EXPECT_EQ(SendFor(p0, *rt)->input(0), "sw:1");
  ExpectImportable(g, parts);
}

TEST(PartitionTest, ControlEdgeSendsATinyConstant) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Operation src = BuildOp(root.WithOpName("src"), "NoOp", {});
  // Two control consumers of src on CPU:1 share one pair; one on CPU:2 gets
  // its own.
  Build(root.WithOpName("b").WithDevice(kCpu1).WithControlDependencies(src),
        "Identity", {a});
  BuildOp(root.WithOpName("c").WithDevice(kCpu1).WithControlDependencies(src),
          "NoOp", {});
  BuildOp(root.WithOpName("d").WithDevice(kCpu2).WithControlDependencies(src),
          "NoOp", {});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  const GraphDef& p2 = parts.at(kCpu2);
  // CPU:0: a, src, a->1 data Send, 2 x (Const + Send) for the controls.
  EXPECT_EQ(p0.node_size(), 2 + 1 + 4);
  EXPECT_EQ(OfOp(p0, "Const").size(), 2u);
  for (const NodeDef* c : OfOp(p0, "Const")) {
    EXPECT_THAT(Inputs(*c), UnorderedElementsAre("^src"));
    EXPECT_THAT(c->name(), HasSubstr("src/ctrl"));
    EXPECT_EQ(TypeAttr(*c, "dtype"), DT_FLOAT);
    EXPECT_EQ(c->device(), kCpu0);
  }
  // CPU:1: b, c, the Recv of a and one control Recv.
  EXPECT_EQ(p1.node_size(), 4);
  const NodeDef& b = *Find(p1, "b");
  const NodeDef& c = *Find(p1, "c");
  ASSERT_EQ(b.input_size(), 2);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(b.input(1), c.input(0));
  ASSERT_EQ(c.input(0)[0], '^');
  const NodeDef* ctrl_recv = Find(p1, c.input(0).substr(1));
  ASSERT_NE(ctrl_recv, nullptr);
  EXPECT_EQ(ctrl_recv->op(), "_Recv");
  const NodeDef* ctrl_send = SendFor(p0, *ctrl_recv);
  ASSERT_NE(ctrl_send, nullptr);
  EXPECT_EQ(Find(p0, ctrl_send->input(0))->op(), "Const");
  ExpectPair(parts, kCpu0, kCpu1, *ctrl_send, *ctrl_recv, DT_FLOAT);

  EXPECT_EQ(p2.node_size(), 2);
  const NodeDef& d = *Find(p2, "d");
  ASSERT_EQ(d.input_size(), 1);
  EXPECT_EQ(Find(p2, d.input(0).substr(1))->op(), "_Recv");
  ExpectImportable(g, parts);
}

TEST(PartitionTest, RefOutputIsSentByValue) {
  Scope root = Scope::NewRootScope();
  Output v = Build(root.WithOpName("v"), "VariableV2", {},
                   {{"dtype", MakeAttrValue(DT_FLOAT)},
                    {"shape", MakeAttrValue(TensorShape({2}))}});
  Build(root.WithOpName("r").WithDevice(kCpu1), "Identity", {v});
  Build(root.WithOpName("r2").WithDevice(kCpu1), "Identity", {v});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);
  ASSERT_TRUE(IsRefType(g.FindNode("v")->output_type(0)));

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  ASSERT_EQ(OfOp(p0, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(p1, "_Recv").size(), 1u);
  ExpectPair(parts, kCpu0, kCpu1, *OfOp(p0, "_Send")[0], *OfOp(p1, "_Recv")[0],
             DT_FLOAT);
  EXPECT_EQ(Find(p1, "r2")->input(0), Find(p1, "r")->input(0));
  ExpectImportable(g, parts);
}

TEST(PartitionTest, RefInputFromAnotherDeviceIsAnError) {
  Scope root = Scope::NewRootScope();
  Output v = Build(root.WithOpName("v"), "VariableV2", {},
                   {{"dtype", MakeAttrValue(DT_FLOAT)},
                    {"shape", MakeAttrValue(TensorShape({}))}});
  Output one = ops::Const(root.WithOpName("one").WithDevice(kCpu1), 1.f);
  Build(root.WithOpName("assign").WithDevice(kCpu1), "Assign", {v, one});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  Status s = Partition(Options(), g, &parts);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'assign'"));
  EXPECT_THAT(s.message(), HasSubstr("'v'"));
  EXPECT_THAT(s.message(), HasSubstr(kCpu0));
  EXPECT_THAT(s.message(), HasSubstr(kCpu1));
  EXPECT_TRUE(parts.empty());
}

TEST(PartitionTest, HostMemoryChoosesHostSendAndHostRecv) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Build(root.WithOpName("b").WithDevice(kCpu1), "Identity", {a});
  Build(root.WithOpName("h").WithDevice(kCpu1), "Identity", {a});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  PartitionOptions opts = Options();
  opts.output_in_host_memory = [](const Node* n, int k) {
    return n->name() == "a" && k == 0;
  };
  opts.input_in_host_memory = [](const Node* n, int) {
    return n->name() == "h";
  };
  Partitions parts;
  ASSERT_OK(Partition(opts, g, &parts));
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  // b and h want the tensor in different memory: two pairs.
  EXPECT_EQ(OfOp(p0, "_HostSend").size(), 2u);
  EXPECT_EQ(OfOp(p0, "_Send").size(), 0u);
  EXPECT_EQ(Find(p1, Find(p1, "b")->input(0))->op(), "_Recv");
  EXPECT_EQ(Find(p1, Find(p1, "h")->input(0))->op(), "_HostRecv");
  ExpectImportable(g, parts);
}

TEST(PartitionTest, NewNamesAvoidExistingNodes) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Build(root.WithOpName("a/_0"), "Identity", {a});
  Build(root.WithOpName("a/_1"), "Identity", {a});
  Build(root.WithOpName("b").WithDevice(kCpu1), "Identity", {a});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  std::set<std::string> names;
  for (const auto& [device, gdef] : parts) {
    for (const NodeDef& n : gdef.node()) {
      EXPECT_TRUE(names.insert(n.name()).second) << n.name();
    }
  }
  EXPECT_EQ(names.size(), 4u + 2u);
  ExpectImportable(g, parts);
}

TEST(PartitionTest, NodeToLocGroupsDevices) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"));
  Build(root.WithOpName("b").WithDevice(kCpu1), "Identity", {a});
  Build(root.WithOpName("c").WithDevice(kCpu2), "Identity", {a});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  // CPU:0 and CPU:1 form one partition "x"; CPU:2 is "y".
  PartitionOptions opts = Options();
  opts.node_to_loc = [](const Node* n) -> std::string {
    return n->assigned_device_name() == kCpu2 ? "y" : "x";
  };
  Partitions parts;
  ASSERT_OK(Partition(opts, g, &parts));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts.at("x").node_size(), 3);  // a, b, Send
  EXPECT_EQ(parts.at("y").node_size(), 2);  // Recv, c
  EXPECT_EQ(Find(parts.at("x"), "b")->input(0), "a");
  EXPECT_EQ(Find(parts.at("x"), "b")->device(), kCpu1);
  const NodeDef& recv = *OfOp(parts.at("y"), "_Recv")[0];
  EXPECT_EQ(StrAttr(recv, "send_device"), kCpu0);
  EXPECT_EQ(StrAttr(recv, "recv_device"), kCpu2);
}

// ---------------------------------------------------------------------------
// Bad input

TEST(PartitionTest, PlacementErrorsNameTheNode) {
  auto partition = [](const std::string& device_of_b,
                      const PartitionOptions& opts) {
    Scope root = Scope::NewRootScope();
    Output a = Placeholder(root.WithOpName("a"));
    Build(root.WithOpName("b"), "Identity", {a});
    Graph& g = *root.graph();
    Place(&g);
    g.FindNode("b")->set_assigned_device_name(device_of_b);
    Partitions parts;
    return Partition(opts, g, &parts);
  };
  Status s = partition("", Options());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'b'"));
  EXPECT_THAT(s.message(), HasSubstr("no assigned device"));

  s = partition("/device:CPU:1", Options());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'b'"));
  EXPECT_THAT(s.message(), HasSubstr("not a full device name"));

  s = partition("/job:localhost/replica:0/task:0/device:CPU:7", Options());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'b'"));
  EXPECT_THAT(s.message(), HasSubstr("unknown device"));

  PartitionOptions no_incarnation;
  s = partition(kCpu1, no_incarnation);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("get_incarnation"));

  PartitionOptions empty_loc = Options();
  empty_loc.node_to_loc = [](const Node*) { return std::string(); };
  s = partition(kCpu1, empty_loc);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'a'"));
}

// ---------------------------------------------------------------------------
// While loops

// i = 0; while (i < n) i += step, with `step` made by `make_step` (given
// the scope of the body).
Status BuildCounterLoop(const Scope& root, const Output& n,
                        const std::function<Output(const Scope&)>& make_step,
                        std::vector<Output>* out,
                        const std::string& name = "while") {
  WhileLoopOptions wopts;
  wopts.name = name;
  return WhileLoop(
      root, {ops::Const(root, 0.f)},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = Build(s, "Less", {v[0], n});
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        *next = {Build(s, "Add", {v[0], make_step(s)})};
        return s.status();
      },
      out, wopts);
}

TEST(PartitionTest, EdgesIntoAndOutOfALoopAreOrdinary) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n").WithDevice(kCpu1));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n, [](const Scope& s) { return ops::Const(s, 1.f); }, &out));
  Build(root.WithOpName("result").WithDevice(kCpu2), "Identity", {out[0]});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);
  // n (CPU:1) enters the loop through a loop-invariant Enter on CPU:0; the
  // Exit on CPU:0 feeds CPU:2.
  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(OfOp(parts.at(kCpu0), "_Recv").size(), 1u);
  EXPECT_EQ(OfOp(parts.at(kCpu0), "_Send").size(), 1u);
  for (const NodeDef* r : OfOp(parts.at(kCpu0), "_Recv")) {
    EXPECT_TRUE(r->input().empty());  // Root frame: no loop control.
  }
  ExpectImportable(g, parts);
}

// The frame (by name, "" for the root) each node of a partition runs in,
// assigned as the executor does; fails the test where frames conflict.
std::map<std::string, std::string> FramesOf(const GraphDef& gdef) {
  Graph g;
  Status s = ImportGraphDef(gdef, &g, {.allow_internal_ops = true});
  EXPECT_TRUE(s.ok()) << s;
  std::map<std::string, std::string> frame, parent;
  std::deque<const Node*> queue;
  for (const Node* n : g.nodes()) {
    if (n->in_edges().empty()) {
      frame[n->name()] = "";
      queue.push_back(n);
    }
  }
  while (!queue.empty()) {
    const Node* n = queue.front();
    queue.pop_front();
    std::string out = frame[n->name()];
    if (n->type_string() == "Enter" || n->type_string() == "RefEnter") {
      std::string name = n->attrs().at("frame_name").s();
      auto [it, inserted] = parent.emplace(name, out);
      EXPECT_EQ(it->second, out) << "frame " << name << " at " << n->name();
      out = name;
    } else if (n->type_string() == "Exit") {
      out = parent[out];
    }
    for (const Edge* e : n->out_edges()) {
      auto [it, inserted] = frame.emplace(e->dst()->name(), out);
      if (inserted) {
        queue.push_back(e->dst());
      } else {
        EXPECT_EQ(it->second, out) << e->DebugString();
      }
    }
  }
  EXPECT_EQ(frame.size(), static_cast<size_t>(g.num_nodes()));
  return frame;
}

// The frame's control loop in `p`: its Enter (reading `feed`), Merge,
// Switch (whose predicate is a Recv of `cond`, sent from `cond_part`) and
// NextIteration. Returns the Merge's name.
std::string ExpectControlLoop(const GraphDef& p, const GraphDef& cond_part,
                              const std::string& frame,
                              const std::string& cond) {
  const NodeDef* enter = nullptr;
  for (const NodeDef* n : OfOp(p, "Enter")) {
    if (n->name().rfind("_cloop/", 0) == 0 &&
        StrAttr(*n, "frame_name") == frame)
      enter = n;
  }
  if (enter == nullptr) {
    ADD_FAILURE() << "no control loop for " << frame;
    return "";
  }
  EXPECT_FALSE(enter->attr().at("is_constant").b());
  const NodeDef* merge = nullptr;
  for (const NodeDef* n : OfOp(p, "Merge")) {
    if (n->input_size() == 2 && n->input(0) == enter->name()) merge = n;
  }
  if (merge == nullptr) {
    ADD_FAILURE() << "no control Merge for " << frame;
    return "";
  }
  const NodeDef* next = Find(p, merge->input(1));
  EXPECT_EQ(next->op(), "NextIteration");
  const std::string sw_out = next->input(0);
  const NodeDef* sw = Find(p, sw_out.substr(0, sw_out.size() - 2));
  EXPECT_EQ(sw_out.substr(sw_out.size() - 2), ":1");
  EXPECT_EQ(sw->op(), "Switch");
  EXPECT_EQ(sw->input(0), merge->name());
  const NodeDef* pred = Find(p, sw->input(1));
  if (&p == &cond_part) {
    EXPECT_EQ(sw->input(1), cond);
  } else {
    EXPECT_EQ(pred->op(), "_Recv");
    EXPECT_THAT(Inputs(*pred), UnorderedElementsAre("^" + merge->name()));
    const NodeDef* send = SendFor(cond_part, *pred);
    EXPECT_NE(send, nullptr);
    if (send != nullptr) {
      EXPECT_EQ(send->input(0), cond);
    }
  }
  return merge->name();
}

// Every _Recv of `p` in a loop frame waits for that frame's control loop.
void ExpectRecvsInFramesAreControlled(const GraphDef& p) {
  std::map<std::string, std::string> frames = FramesOf(p);
  for (const NodeDef* r : OfOp(p, "_Recv")) {
    if (frames[r->name()].empty()) {
      EXPECT_TRUE(r->input().empty()) << r->name();
      continue;
    }
    ASSERT_EQ(r->input_size(), 1) << r->name();
    const NodeDef* merge = Find(p, r->input(0).substr(1));
    ASSERT_NE(merge, nullptr);
    EXPECT_EQ(merge->op(), "Merge");
    EXPECT_EQ(merge->name().rfind("_cloop/", 0), 0u) << merge->name();
  }
}

TEST(PartitionTest, LoopOverTwoDevicesGetsAControlLoop) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n,
      [](const Scope& s) {
        return ops::Const(s.WithOpName("step").WithDevice(kCpu1), 1.f);
      },
      &out));
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);
  const std::string frame = "while/while_context";
  const Node* cond = g.FindNode("while/LoopCond");
  ASSERT_NE(cond, nullptr);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 2u);
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  ExpectImportable(g, parts);

  // CPU:1 runs the loop's iterations through its control loop, driven by
  // the LoopCond on CPU:0; CPU:0, which receives `step` inside the frame,
  // gets one too (as in TensorFlow).
  ExpectControlLoop(p1, p0, frame, cond->name());
  ExpectControlLoop(p0, p0, frame, cond->name());
  ExpectRecvsInFramesAreControlled(p0);
  ExpectRecvsInFramesAreControlled(p1);
  std::map<std::string, std::string> f1 = FramesOf(p1);
  EXPECT_EQ(f1["while/step"], frame);
  // step's pivot control edge and its value cross inside the frame.
  const NodeDef* step = Find(p1, "while/step");
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->input_size(), 1);
  EXPECT_EQ(Find(p1, step->input(0).substr(1))->op(), "_Recv");
  ASSERT_EQ(OfOp(p1, "_Send").size(), 1u);
  EXPECT_EQ(f1[OfOp(p1, "_Send")[0]->name()], frame);
  // Every Enter in either partition names a known frame.
  for (const GraphDef* p : {&p0, &p1}) {
    for (const NodeDef* e : OfOp(*p, "Enter")) {
      EXPECT_EQ(StrAttr(*e, "frame_name"), frame);
    }
  }
}

TEST(PartitionTest, LoopCondIsSentToEveryOtherPartitionOfTheFrame) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n,
      [](const Scope& s) {
        Output a = ops::Const(s.WithOpName("a").WithDevice(kCpu1), 1.f);
        return Build(s.WithOpName("b").WithDevice(kCpu2), "Identity", {a});
      },
      &out));
  Build(root.WithOpName("result").WithDevice(kCpu2), "Identity", {out[0]});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 3u);
  ExpectImportable(g, parts);
  const GraphDef& p0 = parts.at(kCpu0);
  for (const char* d : {kCpu1, kCpu2}) {
    SCOPED_TRACE(d);
    ExpectControlLoop(parts.at(d), p0, "while/while_context", "while/LoopCond");
    ExpectRecvsInFramesAreControlled(parts.at(d));
  }
  ExpectRecvsInFramesAreControlled(p0);
  int cond_sends = 0;
  for (const NodeDef* s : OfOp(p0, "_Send")) {
    if (s->input(0) == "while/LoopCond") ++cond_sends;
  }
  EXPECT_EQ(cond_sends, 2);
  // result reads the Exit (root frame) with a plain Recv.
  const NodeDef* r =
      Find(parts.at(kCpu2), Find(parts.at(kCpu2), "result")->input(0));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op(), "_Recv");
  EXPECT_TRUE(r->input().empty());
}

TEST(PartitionTest, NestedLoopsStackTheirControlLoops) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n,
      [&](const Scope& s) {
        std::vector<Output> inner;
        Status st = BuildCounterLoop(
            s, ops::Const(s, 3.f),
            [](const Scope& t) {
              return ops::Const(t.WithOpName("step").WithDevice(kCpu1), 1.f);
            },
            &inner, "inner");
        s.UpdateStatus(st);
        return st.ok() ? inner[0] : Output();
      },
      &out, "outer"));
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);
  std::set<std::string> frame_names;
  for (const Node* e : g.nodes()) {
    if (e->type_string() == "Enter") {
      frame_names.insert(e->attrs().at("frame_name").s());
    }
  }
  ASSERT_EQ(frame_names.size(), 2u);
  const std::string outer = "outer/while_context";
  const std::string inner =
      *std::find_if(frame_names.begin(), frame_names.end(),
                    [&](const std::string& f) { return f != outer; });
  const Node* outer_cond = g.FindNode("outer/LoopCond");
  ASSERT_NE(outer_cond, nullptr);
  const Node* inner_cond = nullptr;
  for (const Node* c : g.nodes()) {
    if (c->type_string() == "LoopCond" && c != outer_cond) inner_cond = c;
  }
  ASSERT_NE(inner_cond, nullptr);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 2u);
  ExpectImportable(g, parts);
  const GraphDef& p0 = parts.at(kCpu0);
  const GraphDef& p1 = parts.at(kCpu1);
  const std::string outer_merge =
      ExpectControlLoop(p1, p0, outer, outer_cond->name());
  ExpectControlLoop(p1, p0, inner, inner_cond->name());
  // The inner control loop enters from the outer one; the outer one from a
  // Const in the root frame.
  for (const NodeDef* e : OfOp(p1, "Enter")) {
    if (StrAttr(*e, "frame_name") == inner) {
      EXPECT_EQ(e->input(0), outer_merge);
    } else {
      EXPECT_EQ(StrAttr(*e, "frame_name"), outer);
      EXPECT_EQ(Find(p1, e->input(0))->op(), "Const");
    }
  }
  EXPECT_EQ(OfOp(p1, "Enter").size(), 2u);
  std::map<std::string, std::string> f1 = FramesOf(p1);
  int steps = 0;
  for (const auto& [name, f] : f1) {
    if (name.size() > 5 && name.substr(name.size() - 5) == "/step") {
      EXPECT_EQ(f, inner) << name;
      ++steps;
    }
  }
  EXPECT_EQ(steps, 1);
  ExpectRecvsInFramesAreControlled(p0);
  ExpectRecvsInFramesAreControlled(p1);
}

TEST(PartitionTest, NextIterationMovesToItsMerge) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n, [](const Scope& s) { return ops::Const(s, 1.f); }, &out));
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);
  Node* next = g.FindNode("while/NextIteration");
  ASSERT_NE(next, nullptr);
  next->set_assigned_device_name(kCpu1);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  // Its only consumer is the Merge on CPU:0: no transfer is needed at all.
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(Find(parts.at(kCpu0), "while/NextIteration")->device(), kCpu0);
  EXPECT_TRUE(OfOp(parts.at(kCpu0), "_Recv").empty());
  ExpectImportable(g, parts);
  EXPECT_EQ(next->assigned_device_name(), kCpu1);  // g is unchanged.
}

TEST(PartitionTest, EnterWithConsumersOnTwoDevicesIsCopied) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  Output x = Placeholder(root.WithOpName("x"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n,
      [&](const Scope& s) {
        // x enters once (a constant Enter on CPU:0) and is read on both
        // devices.
        Output a = Build(s.WithOpName("a").WithDevice(kCpu1), "Identity", {x});
        return Build(s.WithOpName("b"), "Add", {a, x});
      },
      &out));
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(Options(), g, &parts));
  ASSERT_EQ(parts.size(), 2u);
  ExpectImportable(g, parts);
  const GraphDef& p1 = parts.at(kCpu1);
  // a reads a copy of x's Enter on CPU:1, which reads x through a plain
  // (root-frame) Recv.
  const NodeDef* a = Find(p1, "while/a");
  ASSERT_NE(a, nullptr);
  const NodeDef* enter = Find(p1, a->input(0));
  ASSERT_NE(enter, nullptr);
  EXPECT_EQ(enter->op(), "Enter");
  EXPECT_TRUE(enter->attr().at("is_constant").b());
  EXPECT_EQ(StrAttr(*enter, "frame_name"), "while/while_context");
  const NodeDef* recv = Find(p1, enter->input(0));
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_TRUE(recv->input().empty());
  EXPECT_EQ(StrAttr(*recv, "_src"), "x");
  ExpectRecvsInFramesAreControlled(parts.at(kCpu0));
  ExpectRecvsInFramesAreControlled(p1);
  ExpectControlLoop(p1, parts.at(kCpu0), "while/while_context",
                    "while/LoopCond");
}

TEST(PartitionTest, LoopWithoutLoopCondCannotSpanDevices) {
  Graph g;
  auto add = [&](const std::string& name, const std::string& op, AttrMap attrs,
                 std::vector<Node*> inputs, const std::string& device) {
    auto n = g.AddNode(name, op, std::move(attrs));
    EXPECT_TRUE(n.ok()) << n.status();
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_OK(g.AddEdge(inputs[i], 0, *n, static_cast<int>(i)).status());
    }
    (*n)->set_assigned_device_name(device);
    return *n;
  };
  const AttrValue t = MakeAttrValue(DT_FLOAT);
  Node* x = add("x", "Placeholder", {{"dtype", t}}, {}, kCpu0);
  Node* e = add("e", "Enter", {{"T", t}, {"frame_name", MakeAttrValue("f")}},
                {x}, kCpu0);
  Node* id = add("id", "Identity", {{"T", t}}, {e}, kCpu1);
  add("exit", "Exit", {{"T", t}}, {id}, kCpu0);

  Partitions parts;
  Status s = Partition(Options(), g, &parts);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'f'"));
  EXPECT_THAT(s.message(), HasSubstr("LoopCond"));
}

// ---------------------------------------------------------------------------
// Recv scheduling (Note [Recv scheduling])

PartitionOptions SchedulingOptions() {
  PartitionOptions opts = Options();
  opts.scheduling_for_recvs = true;
  return opts;
}

// The control inputs of `n` ("^x" -> "x").
std::vector<std::string> ControlInputs(const NodeDef& n) {
  std::vector<std::string> v;
  for (const std::string& in : n.input()) {
    if (!in.empty() && in[0] == '^') v.push_back(in.substr(1));
  }
  return v;
}

// The _Recv in `gdef` that feeds `consumer`'s data input `i`.
const NodeDef* RecvFeeding(const GraphDef& gdef, const std::string& consumer,
                           int i) {
  const NodeDef* c = Find(gdef, consumer);
  if (c == nullptr || c->input_size() <= i) return nullptr;
  const NodeDef* r = Find(gdef, c->input(i));
  return r != nullptr && r->op() == "_Recv" ? r : nullptr;
}

// The partitions joined by their Send -> Recv pairs have no cycle other
// than through a NextIteration (a loop's back edge).
void ExpectAcyclicWhenJoined(const Partitions& parts) {
  std::map<std::string, std::vector<std::string>> succ;
  std::map<std::string, int> pending;
  std::map<std::string, std::string> send_of;  // tensor_name -> Send key
  auto key = [](const std::string& p, const std::string& n) {
    return absl::StrCat(p, "|", n);
  };
  for (const auto& [p, gdef] : parts) {
    for (const NodeDef& n : gdef.node()) {
      pending.emplace(key(p, n.name()), 0);
      if (n.op() == "_Send")
        send_of[StrAttr(n, "tensor_name")] = key(p, n.name());
    }
  }
  auto add_edge = [&](const std::string& a, const std::string& b) {
    succ[a].push_back(b);
    ++pending[b];
  };
  for (const auto& [p, gdef] : parts) {
    for (const NodeDef& n : gdef.node()) {
      for (std::string in : n.input()) {
        if (!in.empty() && in[0] == '^') in = in.substr(1);
        in = in.substr(0, in.find(':'));
        const NodeDef* src = Find(gdef, in);
        ASSERT_NE(src, nullptr) << in;
        if (src->op() == "NextIteration") continue;
        add_edge(key(p, in), key(p, n.name()));
      }
      if (n.op() == "_Recv") {
        auto it = send_of.find(StrAttr(n, "tensor_name"));
        ASSERT_NE(it, send_of.end()) << n.name();
        add_edge(it->second, key(p, n.name()));
      }
    }
  }
  std::vector<std::string> ready;
  for (const auto& [k, count] : pending) {
    if (count == 0) ready.push_back(k);
  }
  size_t done = 0;
  while (!ready.empty()) {
    std::string k = ready.back();
    ready.pop_back();
    ++done;
    for (const std::string& s : succ[k]) {
      if (--pending[s] == 0) ready.push_back(s);
    }
  }
  EXPECT_EQ(done, pending.size()) << "the joined partitions have a cycle";
}

// CPU:1 runs a0 -> a1 -> a2 -> a3 = a2 + t, with t from CPU:0: t's Recv
// waits for a2, the node that ends just before a3 needs t.
TEST(PartitionTest, RecvSchedulingWaitsForTheNodeBeforeTheConsumer) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"));
  Output t = Build(root.WithOpName("t"), "Neg", {x});
  const Scope cpu1 = root.WithDevice(kCpu1);
  Output a0 = Placeholder(cpu1.WithOpName("a0"));
  Output a1 = Build(cpu1.WithOpName("a1"), "Neg", {a0});
  Output a2 = Build(cpu1.WithOpName("a2"), "Neg", {a1});
  Build(cpu1.WithOpName("a3"), "Add", {a2, t});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions plain, scheduled;
  ASSERT_OK(Partition(Options(), g, &plain));
  ASSERT_OK(Partition(SchedulingOptions(), g, &scheduled));
  const NodeDef* recv = RecvFeeding(plain.at(kCpu1), "a3", 1);
  ASSERT_NE(recv, nullptr);
  EXPECT_TRUE(recv->input().empty());
  recv = RecvFeeding(scheduled.at(kCpu1), "a3", 1);
  ASSERT_NE(recv, nullptr);
  EXPECT_THAT(Inputs(*recv), UnorderedElementsAre("^a2"));
  // Nothing else changes.
  for (const auto& [device, gdef] : plain) {
    ASSERT_EQ(gdef.node_size(), scheduled.at(device).node_size());
    for (int i = 0; i < gdef.node_size(); ++i) {
      if (gdef.node(i).name() == recv->name()) continue;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          gdef.node(i), scheduled.at(device).node(i)))
          << gdef.node(i).name();
    }
  }
  ExpectImportable(g, scheduled);
  ExpectAcyclicWhenJoined(scheduled);
}

// A tensor needed at once (a1 = a0 + t), or one whose sender finishes after
// every node that could hold its Recv back, gets no control input.
TEST(PartitionTest, RecvSchedulingLeavesRecvsThatCannotWaitAlone) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"));
  Output t = Build(root.WithOpName("t"), "Neg", {x});
  Output slow = Build(root.WithOpName("s1"), "Neg", {x});
  for (int i = 2; i <= 4; ++i) {
    slow = Build(root.WithOpName(absl::StrCat("s", i)), "Neg", {slow});
  }
  const Scope cpu1 = root.WithDevice(kCpu1);
  Output a0 = Placeholder(cpu1.WithOpName("a0"));
  Output a1 = Build(cpu1.WithOpName("a1"), "Add", {a0, t});
  Output a2 = Build(cpu1.WithOpName("a2"), "Neg", {a1});
  Build(cpu1.WithOpName("a3"), "Add", {a2, slow});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(SchedulingOptions(), g, &parts));
  for (const NodeDef* r : OfOp(parts.at(kCpu1), "_Recv")) {
    EXPECT_TRUE(r->input().empty()) << r->name();
  }
}

// The node that would end just in time is in a conditional branch (it may
// be dead, and would make the Recv dead): the Recv waits for a node before
// the Switch instead.
TEST(PartitionTest, RecvSchedulingNeverWaitsForAPossiblyDeadNode) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"));
  const Scope cpu1 = root.WithDevice(kCpu1);
  Output a0 = Placeholder(cpu1.WithOpName("a0"));
  Output a1 = Build(cpu1.WithOpName("a1"), "Neg", {a0});
  Output pred = Placeholder(cpu1.WithOpName("pred"), DT_BOOL);
  Operation sw = BuildOp(cpu1.WithOpName("sw"), "Switch", {a1, pred});
  Output b1 = Build(cpu1.WithOpName("b1"), "Neg", {sw.output(1)});
  Output b2 = Build(cpu1.WithOpName("b2"), "Neg", {b1});
  NodeBuilder merge(cpu1.WithOpName("m"), "Merge");
  merge.Input(InputList(std::vector<Output>{sw.output(0), b2}));
  Operation m;
  ASSERT_OK(merge.Finalize(&m));
  Build(cpu1.WithOpName("c"), "Add", {m.output(0), x});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions parts;
  ASSERT_OK(Partition(SchedulingOptions(), g, &parts));
  const NodeDef* recv = RecvFeeding(parts.at(kCpu1), "c", 1);
  ASSERT_NE(recv, nullptr);
  EXPECT_THAT(Inputs(*recv), UnorderedElementsAre("^a1"));
  ExpectAcyclicWhenJoined(parts);
}

// Inside a loop frame Recvs keep only their control loop's Merge; the
// Recv of a tensor entering the loop is in the root frame and may wait.
TEST(PartitionTest, RecvSchedulingLeavesRecvsInsideLoopsAlone) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(BuildCounterLoop(
      root, n,
      [](const Scope& s) {
        return ops::Const(s.WithOpName("step").WithDevice(kCpu1), 1.f);
      },
      &out));
  Build(root.WithOpName("result").WithDevice(kCpu1), "Identity", {out[0]});
  ASSERT_OK(root.status());
  Graph& g = *root.graph();
  Place(&g);

  Partitions plain, scheduled;
  ASSERT_OK(Partition(Options(), g, &plain));
  ASSERT_OK(Partition(SchedulingOptions(), g, &scheduled));
  ExpectImportable(g, scheduled);
  ExpectAcyclicWhenJoined(scheduled);
  for (const auto& [device, gdef] : scheduled) {
    std::map<std::string, std::string> frames = FramesOf(gdef);
    ExpectRecvsInFramesAreControlled(gdef);
    for (const NodeDef* r : OfOp(gdef, "_Recv")) {
      if (!frames[r->name()].empty()) {
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
            *r, *Find(plain.at(device), r->name())))
            << r->name();
      }
      for (const std::string& c : ControlInputs(*r)) {
        EXPECT_EQ(frames[c], frames[r->name()]) << r->name() << " <- " << c;
      }
    }
  }
}

// Random graphs over three devices, with control edges and several
// consumers per tensor: the added edges never close a cycle through the
// Send/Recv pairs, and some are added.
TEST(PartitionTest, RecvSchedulingNeverClosesACycleAcrossDevices) {
  uint64_t state = 12345;
  auto next = [&](int bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>((state >> 33) % bound);
  };
  const char* devices[] = {kCpu0, kCpu1, kCpu2};
  int scheduled = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(trial);
    Scope root = Scope::NewRootScope();
    std::vector<Output> nodes;
    for (int i = 0; i < 30; ++i) {
      const Scope s =
          root.WithOpName(absl::StrCat("n", i)).WithDevice(devices[next(3)]);
      if (i < 3) {
        nodes.push_back(Placeholder(s));
        continue;
      }
      const Output a = nodes[next(i)], b = nodes[next(i)];
      Scope sc =
          next(4) == 0 ? s.WithControlDependencies(nodes[next(i)].op()) : s;
      nodes.push_back(next(2) == 0 ? Build(sc, "Neg", {a})
                                   : Build(sc, "Add", {a, b}));
    }
    ASSERT_OK(root.status());
    Graph& g = *root.graph();
    Place(&g);
    Partitions parts;
    ASSERT_OK(Partition(SchedulingOptions(), g, &parts));
    ExpectImportable(g, parts);
    ExpectAcyclicWhenJoined(parts);
    for (const auto& [device, gdef] : parts) {
      for (const NodeDef* r : OfOp(gdef, "_Recv")) {
        scheduled += !r->input().empty();
      }
    }
  }
  EXPECT_GT(scheduled, 0);
}

}  // namespace
}  // namespace runnel
