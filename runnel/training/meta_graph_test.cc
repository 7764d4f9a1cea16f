// MetaGraphDef import/export and SavedModel loading, on TensorFlow's own
// meta graphs and checkpoints (testdata/tf/README.md) and on ours.
#include "runnel/training/meta_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/base/env.h"
#include "runnel/graph/graph_def.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runnel.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel::training {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kTf = std::string(RUNNEL_TESTDATA_DIR) + "/tf/";
const std::string kConv = kTf + "graphs/tf_conv_with_checkpoint/";

std::vector<Tensor> Fetch(Session* s, const std::vector<std::string>& fetches) {
  std::vector<Tensor> out;
  Status st = s->Run({}, fetches, {}, &out);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

Tensor FromCheckpoint(const std::string& prefix, const std::string& key) {
  BundleReader r(prefix);
  Tensor t;
  EXPECT_TRUE(r.Lookup(key, &t).ok()) << key;
  return t;
}

bool AllZero(const Tensor& t) {
  for (float f : t.flat<float>()) {
    if (f != 0.f) return false;
  }
  return true;
}

// README: the conv graph restored from its checkpoint gives ScalarW =
// 0.0020255179 and zero convolutions of shapes [2,3,3,6] and [2,2,2,12].
void ExpectConvModelRestored(Session* session) {
  auto out =
      Fetch(session, {"ScalarW:0", "DW:0", "DW2:0", "Conv2D:0", "Conv2D_1:0"});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 0.0020255179f);
  ExpectTensorEqual<float>(out[1], FromCheckpoint(kConv + "ckpt", "DW"));
  ExpectTensorEqual<float>(out[2], FromCheckpoint(kConv + "ckpt", "DW2"));
  EXPECT_EQ(out[3].shape(), TensorShape({2, 3, 3, 6}));
  EXPECT_TRUE(AllZero(out[3]));
  EXPECT_EQ(out[4].shape(), TensorShape({2, 2, 2, 12}));
  EXPECT_TRUE(AllZero(out[4]));
}

TEST(MetaGraphTest, ImportsTfConvMetaGraphAndRestores) {
  MetaGraphDef mgd;
  ASSERT_OK(ReadMetaGraphDef(kConv + "ckpt.meta", &mgd));
  EXPECT_EQ(mgd.saver_def().filename_tensor_name(), "save/Const:0");
  EXPECT_EQ(mgd.saver_def().restore_op_name(), "save/restore_all");
  EXPECT_EQ(mgd.saver_def().version(), SaverDef::V2);
  auto vars = VariablesInCollection(mgd, kGlobalVariablesKey);
  ASSERT_OK(vars.status());
  std::vector<std::string> names;
  for (const VariableDef& v : *vars) names.push_back(v.variable_name());
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre("DW:0", "DW2:0", "ScalarW:0"));

  auto session = NewSession();
  ASSERT_OK(session.status());
  std::unique_ptr<Saver> saver;
  ASSERT_OK(ImportMetaGraph(mgd, session->get(), &saver));
  ASSERT_NE(saver, nullptr);
  ASSERT_OK(saver->Restore(session->get(), kConv + "ckpt"));
  ExpectConvModelRestored(session->get());

  // TF's own save nodes, run here, write TF's bytes.
  const std::string dir = MakeTempDir();
  auto path = saver->Save(session->get(), dir + "/ckpt", -1, false);
  ASSERT_OK(path.status());
  EXPECT_EQ(ReadFile(DataFilename(*path, 0, 1)),
            ReadFile(kConv + "ckpt.data-00000-of-00001"));
  EXPECT_EQ(ReadFile(MetaFilename(*path)), ReadFile(kConv + "ckpt.index"));
}

// The same graph from its text GraphDef, restored with a Saver-less
// RestoreV2 + Assign graph added by Extend.
TEST(MetaGraphTest, TfConvGraphPbtxtWithCheckpoint) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(kConv + "graph.pbtxt", &gdef));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(gdef));
  GraphDef restore;
  ASSERT_OK(ParseGraphDefText(
      R"pb(
        node {
          name: "r/prefix"
          op: "Placeholder"
          attr {
            key: "dtype"
            value { type: DT_STRING }
          }
        }
        node {
          name: "r/names"
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
                tensor_shape { dim { size: 3 } }
                string_val: "DW"
                string_val: "DW2"
                string_val: "ScalarW"
              }
            }
          }
        }
        node {
          name: "r/slices"
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
                tensor_shape { dim { size: 3 } }
                string_val: ""
                string_val: ""
                string_val: ""
              }
            }
          }
        }
        node {
          name: "r/RestoreV2"
          op: "RestoreV2"
          input: "r/prefix"
          input: "r/names"
          input: "r/slices"
          attr {
            key: "dtypes"
            value { list { type: DT_FLOAT type: DT_FLOAT type: DT_FLOAT } }
          }
        }
        node {
          name: "r/a0"
          op: "Assign"
          input: "DW"
          input: "r/RestoreV2"
          attr {
            key: "T"
            value { type: DT_FLOAT }
          }
        }
        node {
          name: "r/a1"
          op: "Assign"
          input: "DW2"
          input: "r/RestoreV2:1"
          attr {
            key: "T"
            value { type: DT_FLOAT }
          }
        }
        node {
          name: "r/a2"
          op: "Assign"
          input: "ScalarW"
          input: "r/RestoreV2:2"
          attr {
            key: "T"
            value { type: DT_FLOAT }
          }
        }
        node {
          name: "r/all"
          op: "NoOp"
          input: "^r/a0"
          input: "^r/a1"
          input: "^r/a2"
        }
      )pb",
      &restore));
  ASSERT_OK((*session)->Extend(restore));
  std::vector<Tensor> out;
  ASSERT_OK(
      (*session)->Run({{"r/prefix:0", Tensor::Scalar<tstring>(kConv + "ckpt")}},
                      {}, {"r/all"}, &out));
  ExpectConvModelRestored(session->get());
}

TEST(MetaGraphTest, ImportsTfEmbeddingMetaGraph) {
  MetaGraphDef mgd;
  ASSERT_OK(ReadMetaGraphDef(kTf + "checkpoints/embedding/embedding.ckpt.meta",
                             &mgd));
  auto session = NewSession();
  ASSERT_OK(session.status());
  std::unique_ptr<Saver> saver;
  ASSERT_OK(ImportMetaGraph(mgd, session->get(), &saver));
  ASSERT_NE(saver, nullptr);
  EXPECT_FALSE(saver->saver_def().sharded());
  ASSERT_OK(saver->Restore(session->get(),
                           kTf + "checkpoints/embedding/embedding.ckpt"));
  auto out = Fetch(session->get(), {"my_embedding:0"});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensorEqual<float>(
      out[0],
      Tensor::FromVector<float>({1, 2, 3, 5, 7, 11}, TensorShape({3, 2})));
}

// A model built here: export its meta graph, checkpoint it, bring both back
// in a new session.
struct Model {
  Scope root = Scope::NewRootScope();
  Variable w, counter;
  Output x, y;
  Model() {
    w = Variable(root, "w", TensorShape({2}), Initializer::Constant(3.0));
    counter = Variable(root, "counter", TensorShape({}), Initializer::Zeros(),
                       DT_INT32, /*trainable=*/false);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    y = ops::Mul(root.WithOpName("y"), x, w.value());
  }
};

TEST(MetaGraphTest, ExportThenImportOurGraph) {
  Model m;
  Saver saver(m.root);
  auto init = GlobalVariablesInitializer(m.root);
  ASSERT_OK(m.root.status());
  MetaGraphExportOptions opts;
  opts.saver_def = &saver.saver_def();
  opts.tags = {"train"};
  SignatureDef sig;
  sig.set_method_name("tensorflow/serving/predict");
  (*sig.mutable_inputs())["x"].set_name("x:0");
  (*sig.mutable_outputs())["y"].set_name("y:0");
  opts.signature_defs["serving_default"] = sig;
  opts.collections["train_op"].mutable_node_list()->add_value("init");
  auto mgd = ExportMetaGraph(m.root, opts);
  ASSERT_OK(mgd.status());
  EXPECT_EQ(mgd->saver_def().restore_op_name(), "save/restore_all");
  EXPECT_EQ(mgd->meta_info_def().tags(0), "train");
  std::set<std::string> ops;
  for (const OpDef& d : mgd->meta_info_def().stripped_op_list().op()) {
    ops.insert(d.name());
    EXPECT_TRUE(d.summary().empty());
  }
  for (const char* op : {"VarHandleOp", "SaveV2", "RestoreV2", "Mul",
                         "MergeV2Checkpoints", "StringJoin"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
  auto all = VariablesInCollection(*mgd, kGlobalVariablesKey);
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].variable_name(), "w:0");
  EXPECT_EQ((*all)[0].snapshot_name(), "w/Read:0");
  EXPECT_EQ((*all)[0].initializer_name(), "w/Assign");
  EXPECT_TRUE((*all)[0].is_resource());
  EXPECT_EQ(VariablesInCollection(*mgd, kTrainableVariablesKey)->size(), 1u);

  // Train-ish: set w, save checkpoint and meta graph.
  const std::string dir = MakeTempDir();
  ClientSession session(m.root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  auto set = ops::AssignVariableOp(m.root, m.w.handle(), {5.f, -1.f});
  ASSERT_OK(session.Run({}, {}, {set.operation}, &out));
  auto path = saver.Save(&session, dir + "/model.ckpt", 7);
  ASSERT_OK(path.status());
  ASSERT_OK(WriteMetaGraphDef(*path + ".meta", *mgd));

  MetaGraphDef read;
  ASSERT_OK(ReadMetaGraphDef(*path + ".meta", &read));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(read, *mgd));
  auto fresh = NewSession();
  ASSERT_OK(fresh.status());
  std::unique_ptr<Saver> restored;
  ASSERT_OK(ImportMetaGraph(read, fresh->get(), &restored));
  ASSERT_OK(restored->Restore(fresh->get(), *LatestCheckpoint(dir)));
  ASSERT_OK((*fresh)->Run({{"x:0", Tensor::FromVector<float>({2, 3})}}, {"y:0"},
                          {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({10, -3}));
  // Deleting a checkpoint removes its .meta too.
  DeleteCheckpoint(*path);
  EXPECT_FALSE(fs::exists(*path + ".meta"));
  EXPECT_FALSE(CheckpointExists(*path));
}

// A SavedModel directory assembled from TensorFlow's conv meta graph and
// checkpoint, in binary and text form.
TEST(MetaGraphTest, LoadsSavedModelFromTfFiles) {
  for (bool text : {false, true}) {
    const std::string dir = MakeTempDir();
    fs::create_directories(dir + "/variables");
    fs::copy_file(kConv + "ckpt.index", dir + "/variables/variables.index");
    fs::copy_file(kConv + "ckpt.data-00000-of-00001",
                  dir + "/variables/variables.data-00000-of-00001");
    SavedModel sm;
    sm.set_saved_model_schema_version(1);
    MetaGraphDef* train = sm.add_meta_graphs();
    ASSERT_OK(ReadMetaGraphDef(kConv + "ckpt.meta", train));
    train->mutable_meta_info_def()->add_tags("train");
    MetaGraphDef* serve = sm.add_meta_graphs();
    *serve = *train;
    serve->mutable_meta_info_def()->clear_tags();
    serve->mutable_meta_info_def()->add_tags("serve");
    if (text) {
      std::string s;
      ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(sm, &s));
      // A field of a newer TF this build does not know is skipped.
      s += "\nfingerprint_from_the_future: 12\n";
      ASSERT_OK(WriteStringToFile(dir + "/saved_model.pbtxt", s));
    } else {
      ASSERT_OK(
          WriteStringToFile(dir + "/saved_model.pb", sm.SerializeAsString()));
    }
    EXPECT_TRUE(MaybeSavedModelDirectory(dir));
    SavedModelBundle bundle;
    ASSERT_OK(LoadSavedModel({}, dir, {kSavedModelTagServe}, &bundle));
    EXPECT_EQ(bundle.meta_graph_def.meta_info_def().tags(0), "serve");
    ExpectConvModelRestored(bundle.session.get());
    // Untrusted, TF 1's save/ nodes restore from the fixed variables path.
    SessionOptions untrusted;
    untrusted.untrusted = true;
    SavedModelBundle vetted;
    ASSERT_OK(LoadSavedModel(untrusted, dir, {kSavedModelTagServe}, &vetted));
    ExpectConvModelRestored(vetted.session.get());

    Status s = LoadSavedModel({}, dir, {"serve", "gpu"}, &bundle);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("{serve}"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("{train}"));
  }
}

// Our own SavedModel: variables restored, then the init op runs.
TEST(MetaGraphTest, SavedModelRunsInitOpAfterRestore) {
  Model m;
  Saver saver(m.root);
  auto init = GlobalVariablesInitializer(m.root);
  ops::AssignVariableOp(m.root.WithOpName("main_op"), m.counter.handle(), 7);
  ASSERT_OK(m.root.status());
  const std::string dir = MakeTempDir();
  ClientSession session(m.root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  auto set = ops::AssignVariableOp(m.root, m.w.handle(), {1.5f, 2.5f});
  ASSERT_OK(session.Run({}, {}, {set.operation}, &out));
  ASSERT_OK(
      saver.Save(&session, dir + "/variables/variables", -1, false).status());
  MetaGraphExportOptions opts;
  opts.saver_def = &saver.saver_def();
  opts.tags = {"serve"};
  opts.collections[kSavedModelMainOpKey].mutable_node_list()->add_value(
      "main_op");
  auto mgd = ExportMetaGraph(m.root, opts);
  ASSERT_OK(mgd.status());
  SavedModel sm;
  *sm.add_meta_graphs() = *mgd;
  ASSERT_OK(WriteStringToFile(dir + "/saved_model.pb", sm.SerializeAsString()));

  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, dir, {"serve"}, &bundle));
  ASSERT_OK(bundle.session->Run({{"x:0", Tensor::FromVector<float>({2, 2})}},
                                {"y:0", "counter/Read:0"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({3, 5}));
  EXPECT_EQ(out[1].scalar<int32_t>(), 7);
}

TEST(MetaGraphTest, Errors) {
  const std::string dir = MakeTempDir();
  SavedModelBundle bundle;
  Status s = LoadSavedModel({}, dir, {"serve"}, &bundle);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_FALSE(MaybeSavedModelDirectory(dir));
  ASSERT_OK(WriteStringToFile(dir + "/saved_model.pb", "\xff\xff garbage {"));
  s = LoadSavedModel({}, dir, {"serve"}, &bundle);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  MetaGraphDef mgd;
  EXPECT_EQ(ReadMetaGraphDef(dir + "/none.meta", &mgd).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(WriteStringToFile(dir + "/bad.meta", "\x0a\xff\xff\xff"));
  EXPECT_EQ(ReadMetaGraphDef(dir + "/bad.meta", &mgd).code(),
            absl::StatusCode::kDataLoss);
  // A meta graph whose graph uses an unknown op.
  MetaGraphDef unknown;
  NodeDef* n = unknown.mutable_graph_def()->add_node();
  n->set_name("n");
  n->set_op("NoSuchOpAnywhere");
  auto session = NewSession();
  ASSERT_OK(session.status());
  s = ImportMetaGraph(unknown, session->get(), nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("NoSuchOpAnywhere"));
  // A scope with an error exports nothing.
  Scope root = Scope::NewRootScope();
  root.UpdateStatus(errors::InvalidArgument("boom"));
  EXPECT_EQ(ExportMetaGraph(root, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel::training
