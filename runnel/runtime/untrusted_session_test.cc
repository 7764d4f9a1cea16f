// Untrusted mode (SessionOptions::untrusted): graphs whose ops touch the
// filesystem are refused at Create/Extend, naming the node, unless allowed;
// everything else runs as usual.
#include <gtest/gtest.h>

#include <string>

#include "runnel/base/env.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
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

}  // namespace
}  // namespace runnel
