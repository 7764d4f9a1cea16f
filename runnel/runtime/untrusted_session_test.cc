// Untrusted mode (SessionOptions::untrusted): graphs whose ops touch the
// filesystem are refused at Create/Extend, naming the node, unless allowed;
// everything else runs as usual.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/base/env.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "runnel/runtime/untrusted_paths.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

GraphDef Text(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

// prefix (fed) -> save/SaveV2 writing tensor "v" = [3].
constexpr char kSaveGraph[] = R"pb(
  node {
    name: "save/prefix"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_STRING }
    }
  }
  node {
    name: "save/names"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_STRING }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_STRING
          tensor_shape { dim { size: 1 } }
          string_val: "v"
        }
      }
    }
  }
  node {
    name: "save/slices"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_STRING }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_STRING
          tensor_shape { dim { size: 1 } }
          string_val: ""
        }
      }
    }
  }
  node {
    name: "v"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape { dim { size: 1 } }
          float_val: 3
        }
      }
    }
  }
  node {
    name: "save/SaveV2"
    op: "SaveV2"
    input: "save/prefix"
    input: "save/names"
    input: "save/slices"
    input: "v"
    attr {
      key: "dtypes"
      value { list { type: DT_FLOAT } }
    }
  }
)pb";

// z = x + 1, no I/O.
constexpr char kHarmlessGraph[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "one"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {}
          float_val: 1
        }
      }
    }
  }
  node {
    name: "z"
    op: "AddV2"
    input: "x"
    input: "one"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

SessionOptions Untrusted() {
  SessionOptions o;
  o.untrusted = true;
  return o;
}

std::string TempPrefix(const std::string& name) {
  return ::testing::TempDir() + "/untrusted_session_test_" + name;
}

// Runs save/SaveV2 with `prefix` fed; returns the step's status.
Status RunSave(Session* s, const std::string& prefix) {
  return s->Run({{"save/prefix", Tensor::FromVector<tstring>({prefix}, {})}},
                {}, {"save/SaveV2"}, nullptr);
}

void ExpectHarmlessGraphRuns(Session* s) {
  std::vector<Tensor> out;
  ASSERT_OK(
      s->Run({{"x", Tensor::FromVector<float>({41}, {})}}, {"z"}, {}, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].flat<float>()[0], 42.0f);
}

TEST(UntrustedSessionTest, SaveGraphIsRefusedNamingTheNode) {
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  const Status c = (*s)->Create(Text(kSaveGraph));
  EXPECT_EQ(c.code(), absl::StatusCode::kPermissionDenied) << c;
  EXPECT_NE(c.message().find("node 'save/SaveV2' (SaveV2)"), std::string::npos)
      << c;
  EXPECT_NE(c.message().find("untrusted mode"), std::string::npos) << c;
  // Nothing was added: the session still takes a harmless graph.
  ASSERT_OK((*s)->Create(Text(kHarmlessGraph)));
  ExpectHarmlessGraphRuns(s->get());
}

TEST(UntrustedSessionTest, HarmlessGraphRunsInUntrustedMode) {
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  ASSERT_OK((*s)->Create(Text(kHarmlessGraph)));
  ExpectHarmlessGraphRuns(s->get());
}

// Creates a session with `o`, loads the saver graph and saves to a fresh
// prefix: the save must succeed and write its index.
void ExpectSaveGraphRuns(const SessionOptions& o, const std::string& name) {
  auto s = NewSession(o);
  ASSERT_OK(s.status());
  ASSERT_OK((*s)->Create(Text(kSaveGraph)));
  const std::string prefix = TempPrefix(name);
  ASSERT_OK(RunSave(s->get(), prefix));
  EXPECT_TRUE(FileExists(prefix + ".index"));
}

TEST(UntrustedSessionTest, SameGraphRunsWhenTrusted) {
  ExpectSaveGraphRuns(SessionOptions(), "trusted");
}

TEST(UntrustedSessionTest, SameGraphRunsWhenItsOpIsAllowed) {
  SessionOptions o = Untrusted();
  o.allowed_io_ops = {"SaveV2"};
  ExpectSaveGraphRuns(o, "allowed_op");
}

TEST(UntrustedSessionTest, SameGraphRunsWhenItsNodeIsAllowed) {
  SessionOptions o = Untrusted();
  o.allowed_io_nodes = {"save/SaveV2"};
  ExpectSaveGraphRuns(o, "allowed_node");
}

TEST(UntrustedSessionTest, AllowingOtherNodesOrOpsDoesNotAllowThisOne) {
  SessionOptions o = Untrusted();
  o.allowed_io_ops = {"RestoreV2"};
  o.allowed_io_nodes = {"save/RestoreV2"};
  auto s = NewSession(o);
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)->Create(Text(kSaveGraph)).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(UntrustedSessionTest, ExtendIsCheckedToo) {
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  ASSERT_OK((*s)->Create(Text(kHarmlessGraph)));
  const Status e = (*s)->Extend(Text(kSaveGraph));
  EXPECT_EQ(e.code(), absl::StatusCode::kPermissionDenied) << e;
  EXPECT_NE(e.message().find("'save/SaveV2'"), std::string::npos) << e;
  // The refused Extend added nothing; the graph still runs.
  ExpectHarmlessGraphRuns(s->get());
  EXPECT_FALSE(
      (*s)->Run({}, {}, {"save/SaveV2"}, nullptr).ok());  // No such node.
}

TEST(UntrustedSessionTest, FileReadersAreRefused) {
  const GraphDef g = Text(R"pb(
    node { name: "reader" op: "WholeFileReaderV2" }
  )pb");
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  const Status c = (*s)->Create(g);
  EXPECT_EQ(c.code(), absl::StatusCode::kPermissionDenied) << c;
  EXPECT_NE(c.message().find("node 'reader' (WholeFileReaderV2)"),
            std::string::npos)
      << c;
}

TEST(UntrustedSessionTest, IONodesInTheFunctionLibraryAreRefused) {
  GraphDef g = Text(kHarmlessGraph);
  FunctionDef* f = g.mutable_library()->add_function();
  f->mutable_signature()->set_name("sneaky_save");
  NodeDef* n = f->add_node_def();
  n->set_name("inner_restore");
  n->set_op("RestoreV2");
  const Status c = CheckUntrustedGraph(g, Untrusted());
  EXPECT_EQ(c.code(), absl::StatusCode::kPermissionDenied) << c;
  EXPECT_NE(c.message().find(
                "node 'inner_restore' (RestoreV2) in function 'sneaky_save'"),
            std::string::npos)
      << c;
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)->Create(g).code(), absl::StatusCode::kPermissionDenied);
  // Allowed by op type, the library passes the check.
  SessionOptions o = Untrusted();
  o.allowed_io_ops = {"RestoreV2"};
  EXPECT_OK(CheckUntrustedGraph(g, o));
}

TEST(UntrustedSessionTest, UnknownOpsAreLeftToTheImport) {
  const GraphDef g = Text(R"pb(
    node { name: "n" op: "NoSuchOpInRunnel" }
  )pb");
  EXPECT_OK(CheckUntrustedGraph(g, Untrusted()));
  auto s = NewSession(Untrusted());
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)->Create(g).code(), absl::StatusCode::kNotFound);
}

// Note [Paths derived from trusted roots]: checkpoint ops whose paths come
// from SessionOptions::io_path_roots, in the graph or through calls into
// the library, as TF 2's saver functions are written.

NodeDef* AddNode(google::protobuf::RepeatedPtrField<NodeDef>* nodes,
                 const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs = {}) {
  NodeDef* n = nodes->Add();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

NodeDef* AddString(google::protobuf::RepeatedPtrField<NodeDef>* nodes,
                   const std::string& name, const std::string& value) {
  NodeDef* n = AddNode(nodes, name, "Const");
  (*n->mutable_attr())["dtype"].set_type(DT_STRING);
  TensorProto* t = (*n->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(DT_STRING);
  t->add_string_val(value);
  return n;
}

void SetFunc(NodeDef* n, const std::string& attr, const std::string& f) {
  (*n->mutable_attr())[attr].mutable_func()->set_name(f);
}

struct SaverShape {
  std::string suffix = "_temp/part";  // TF 2's, and ".part" for s3.
  std::string separator;
  std::string restore_prefix = "file_prefix";
};

// TF 2's __inference__traced_save/_restore shape (saved_models in
// testdata), both in one function `saver`, called with the Placeholder
// "saver_filename".
GraphDef Tf2Saver(const SaverShape& o = {}) {
  GraphDef g;
  NodeDef* ph = AddNode(g.mutable_node(), "saver_filename", "Placeholder");
  (*ph->mutable_attr())["dtype"].set_type(DT_STRING);
  SetFunc(AddNode(g.mutable_node(), "call", "StatefulPartitionedCall",
                  {"saver_filename"}),
          "f", "saver");
  FunctionDef* f = g.mutable_library()->add_function();
  f->mutable_signature()->set_name("saver");
  f->mutable_signature()->add_input_arg()->set_name("file_prefix");
  auto* body = f->mutable_node_def();
  AddString(body, "suffix", o.suffix);
  AddString(body, "s3_suffix", ".part");
  AddNode(body, "is_s3", "StaticRegexFullMatch", {"file_prefix"});
  AddNode(body, "select", "Select",
          {"is_s3:output:0", "suffix:output:0", "s3_suffix:output:0"});
  NodeDef* join =
      AddNode(body, "join", "StringJoin", {"file_prefix", "select:output:0"});
  if (!o.separator.empty()) {
    (*join->mutable_attr())["separator"].set_s(o.separator);
  }
  AddNode(body, "sharded", "ShardedFilename",
          {"join:output:0", "shard:output:0", "num_shards:output:0"});
  AddNode(body, "save", "SaveV2",
          {"sharded:filename:0", "names:output:0", "slices:output:0"});
  AddNode(body, "prefixes", "Pack", {"sharded:filename:0", "^save"});
  AddNode(body, "merge", "MergeV2Checkpoints",
          {"prefixes:output:0", "file_prefix"});
  AddString(body, "evil", "/etc/passwd");
  AddNode(body, "restore", "RestoreV2",
          {o.restore_prefix, "names:output:0", "slices:output:0"});
  return g;
}

SessionOptions UntrustedWithRoot(const std::string& root) {
  SessionOptions o = Untrusted();
  o.io_path_roots = {root};
  return o;
}

TEST(UntrustedPathsTest, Tf2SaverFunctionsRunFromTheirRoot) {
  EXPECT_OK(
      CheckUntrustedGraph(Tf2Saver(), UntrustedWithRoot("saver_filename")));
  // Without the root, or with another one, the saver is refused.
  for (const SessionOptions& o :
       {Untrusted(), UntrustedWithRoot("call"), UntrustedWithRoot("nope")}) {
    const Status s = CheckUntrustedGraph(Tf2Saver(), o);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_NE(s.message().find("node 'save' (SaveV2) in function 'saver'"),
              std::string::npos)
        << s;
  }
  // TF 1's save/ nodes, in the graph itself.
  EXPECT_OK(
      CheckUntrustedGraph(Text(kSaveGraph), UntrustedWithRoot("save/prefix")));
}

TEST(UntrustedPathsTest, PathsTheModelChoosesAreRefused) {
  auto refused = [](const GraphDef& g, const std::string& node) {
    const Status s =
        CheckUntrustedGraph(g, UntrustedWithRoot("saver_filename"));
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_NE(s.message().find("node '" + node + "'"), std::string::npos) << s;
  };
  // Suffixes that climb out of the root's directory.
  for (const char* suffix :
       {"/../../etc/cron.d/x", "..", ".", "./x", "a/..b"}) {
    SCOPED_TRACE(suffix);
    SaverShape o;
    o.suffix = suffix;
    refused(Tf2Saver(o), "save");
  }
  SaverShape sep;
  sep.separator = "/../";
  refused(Tf2Saver(sep), "save");
  // A restore from the model's own constant.
  SaverShape own;
  own.restore_prefix = "evil:output:0";
  refused(Tf2Saver(own), "restore");
  // The function is also called with the model's own path.
  GraphDef twice = Tf2Saver();
  AddString(twice.mutable_node(), "evil", "/etc/passwd");
  SetFunc(AddNode(twice.mutable_node(), "call2", "PartitionedCall", {"evil"}),
          "f", "saver");
  refused(twice, "save");
  // Or run as an If's branch, whose arguments are not traced.
  GraphDef branch = Tf2Saver();
  SetFunc(
      AddNode(branch.mutable_node(), "if", "If", {"cond", "saver_filename"}),
      "then_branch", "saver");
  refused(branch, "save");
}

TEST(UntrustedPathsTest, OnlyConstOrPlaceholderRootsAndShortChains) {
  // A root must be a Const or a Placeholder: naming a node that computes
  // a path does not make the path trusted.
  GraphDef g;
  AddString(g.mutable_node(), "evil", "/etc/passwd");
  AddNode(g.mutable_node(), "id", "Identity", {"evil"});
  AddNode(g.mutable_node(), "restore", "RestoreV2", {"id", "n", "s"});
  Status s = CheckUntrustedGraph(g, UntrustedWithRoot("id"));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  // Identity chains pass a path on, up to kMaxPathDepth of them.
  for (int length : {10, 100}) {
    GraphDef chain;
    NodeDef* ph = AddNode(chain.mutable_node(), "p0", "Placeholder");
    (*ph->mutable_attr())["dtype"].set_type(DT_STRING);
    for (int i = 1; i <= length; ++i) {
      AddNode(chain.mutable_node(), absl::StrCat("p", i), "Identity",
              {absl::StrCat("p", i - 1)});
    }
    AddNode(chain.mutable_node(), "restore", "RestoreV2",
            {absl::StrCat("p", length), "n", "s"});
    s = CheckUntrustedGraph(chain, UntrustedWithRoot("p0"));
    if (length <= kMaxPathDepth) {
      EXPECT_OK(s);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    }
  }
}

}  // namespace
}  // namespace runnel
