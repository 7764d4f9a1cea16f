// SavedModels written by TF 2's tf.saved_model.save (testdata/tf/README.md):
// their signatures are StatefulPartitionedCall nodes over the graph's
// function library, and their saver_def's save and restore ops are calls
// too, so loading them exercises the function library end to end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>

#include "absl/strings/strip.h"
#include "proto/example.pb.h"
#include "runnel/base/env.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runnel.h"
#include "runnel/training/meta_graph.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel::training {
namespace {

const std::string kModels =
    std::string(RUNNEL_TESTDATA_DIR) + "/tf/saved_models/";
const std::string kHalfPlusTwo = kModels + "half_plus_two_tf2/00000123";

using ::testing::HasSubstr;

// Runs signature `key` of `b`, expecting success.
std::map<std::string, Tensor> Call(
    const SavedModelBundle& b, const std::string& key,
    const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> out;
  Status s = RunSignature(b, key, inputs, &out);
  EXPECT_TRUE(s.ok()) << key << ": " << s;
  return out;
}

Tensor SerializedExamples(const std::string& key, std::vector<float> xs) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(xs.size())}));
  for (size_t i = 0; i < xs.size(); ++i) {
    Example ex;
    (*ex.mutable_features()->mutable_feature())[key]
        .mutable_float_list()
        ->add_value(xs[i]);
    t.flat<tstring>()[i] = ex.SerializeAsString();
  }
  return t;
}

TEST(SavedModelTf2Test, HalfPlusTwoSignaturesGiveTheirOwnersAnswers) {
  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, kHalfPlusTwo, {kSavedModelTagServe}, &bundle));
  // (README also names a "predict" signature; this copy has none.)
  EXPECT_THAT(SignatureKeys(bundle.meta_graph_def),
              ::testing::ElementsAre("classify_x2_to_y3", "classify_x_to_y",
                                     "regress_x2_to_y3", "regress_x_to_y",
                                     "regress_x_to_y2", "serving_default"));
  // The signatures declare x as float [1] (and Runnel checks feed shapes, as
  // TF's Python client does), so x = [1, 2, 5] goes in one value at a time.
  const float xs[] = {1, 2, 5}, ys[] = {2.5, 3, 4.5};
  for (int i = 0; i < 3; ++i) {
    auto out = Call(bundle, "serving_default",
                    {{"x", Tensor::FromVector<float>({xs[i]})}});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensorEqual<float>(out["y"], Tensor::FromVector<float>({ys[i]}));
  }

  // Signatures over serialized tf.Examples (ParseExampleV2 in the body) and
  // over floats. README does not list the classify_* ones; TF Serving's
  // script that wrote the model scores them with y = 0.5 x + 2 and
  // y3 = 0.5 x2 + 3.
  struct Case {
    const char* sig;
    const char* feature;
    const char* output;
    std::vector<float> expected;
  };
  for (const Case& c :
       {Case{"regress_x_to_y", "x", "outputs", {2, 2.5, 3, 3.5}},
        Case{"regress_x_to_y2", "x", "outputs", {3, 3.5, 4, 4.5}},
        Case{"regress_x2_to_y3", "x2", "outputs", {3, 3.5, 4, 4.5}},
        Case{"classify_x_to_y", "x", "scores", {2, 2.5, 3, 3.5}},
        Case{"classify_x2_to_y3", "x2", "scores", {3, 3.5, 4, 4.5}}}) {
    // The x2 signatures take x2 itself ([1], one value at a time), the
    // others a batch of serialized tf.Examples.
    if (std::string(c.feature) == "x2") {
      for (int i = 0; i < 4; ++i) {
        auto out = Call(bundle, c.sig,
                        {{"inputs", Tensor::FromVector<float>({float(i)})}});
        ASSERT_EQ(out[c.output].NumElements(), 1) << c.sig;
        EXPECT_NEAR(out[c.output].flat<float>()[0], c.expected[i], 1e-6)
            << c.sig;
      }
      continue;
    }
    auto out = Call(bundle, c.sig,
                    {{"inputs", SerializedExamples(c.feature, {0, 1, 2, 3})}});
    ASSERT_EQ(out[c.output].NumElements(), 4) << c.sig;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out[c.output].flat<float>()[i], c.expected[i], 1e-6) << c.sig;
    }
  }
}

TEST(SavedModelTf2Test, RunSignatureErrorsNameWhatIsThere) {
  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, kHalfPlusTwo, {kSavedModelTagServe}, &bundle));
  std::map<std::string, Tensor> out;
  const Tensor one = Tensor::FromVector<float>({1});

  // An unknown key lists the keys there are, but not the init op's.
  Status s = RunSignature(bundle, "serving", {{"x", one}}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("'serving'"));
  EXPECT_THAT(s.message(),
              HasSubstr("it has 'classify_x2_to_y3', 'classify_x_to_y', "
                        "'regress_x2_to_y3', 'regress_x_to_y', "
                        "'regress_x_to_y2', 'serving_default'"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("__saved_model_init_op")));
  s = RunSignature(bundle, kSavedModelInitOpSignatureKey, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;

  // A missing input and an unknown one name the signature and its inputs.
  s = RunSignature(bundle, "serving_default", {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature 'serving_default'"));
  EXPECT_THAT(s.message(), HasSubstr("input 'x' is missing"));
  EXPECT_THAT(s.message(), HasSubstr("its inputs are 'x'"));
  s = RunSignature(bundle, "serving_default", {{"x", one}, {"z", one}}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("no input 'z'"));
  EXPECT_THAT(s.message(), HasSubstr("its inputs are 'x'"));

  // A dtype other than the TensorInfo's.
  s = RunSignature(bundle, "serving_default",
                   {{"x", Tensor::FromVector<int32_t>({1})}}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("input 'x' must be float, got int32"));

  // The session still checks the shape the placeholder declares.
  s = RunSignature(bundle, "serving_default",
                   {{"x", Tensor::FromVector<float>({1, 2, 5})}}, &out);
  EXPECT_FALSE(s.ok());
}

TEST(SavedModelTf2Test, HalfPlusTwoSavesThroughItsSaveFunction) {
  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, kHalfPlusTwo, {kSavedModelTagServe}, &bundle));
  const SaverDef& sd = bundle.meta_graph_def.saver_def();
  const std::string prefix = MakeTempDir() + "/ckpt";
  std::vector<Tensor> out;
  ASSERT_OK(bundle.session->Run(
      {{sd.filename_tensor_name(), Tensor::Scalar<tstring>(prefix)}},
      {sd.save_tensor_name()}, {}, &out));
  EXPECT_EQ(out[0].scalar<tstring>(), prefix);
  BundleReader r(prefix);
  ASSERT_OK(r.status());
  for (const auto& [name, value] :
       {std::pair<std::string, float>{"a", 0.5f}, {"b", 2.0f}, {"c", 3.0f}}) {
    Tensor t;
    ASSERT_OK(r.Lookup(name + "/.ATTRIBUTES/VARIABLE_VALUE", &t));
    EXPECT_EQ(t.scalar<float>(), value) << name;
  }
}

// Untrusted loading (Note [SavedModel checkpoint ops] in
// tools/saved_model_command.cc): the saver's filename becomes the model's
// own variables path, so its save and restore functions run, and a restore
// from a path the model chose is refused at load.
TEST(SavedModelTf2Test, UntrustedLoadsReadOnlyTheModelsOwnVariables) {
  SessionOptions untrusted;
  untrusted.untrusted = true;
  SavedModelBundle bundle;
  ASSERT_OK(
      LoadSavedModel(untrusted, kHalfPlusTwo, {kSavedModelTagServe}, &bundle));
  auto out =
      Call(bundle, "serving_default", {{"x", Tensor::FromVector<float>({1})}});
  ExpectTensorEqual<float>(out["y"], Tensor::FromVector<float>({2.5f}));
  const std::string filename(absl::StripSuffix(
      bundle.meta_graph_def.saver_def().filename_tensor_name(), ":0"));
  bool fixed = false;
  for (const NodeDef& n : bundle.meta_graph_def.graph_def().node()) {
    if (n.name() != filename) continue;
    fixed = n.op() == "Const" && n.attr().at("value").tensor().string_val(0) ==
                                     kHalfPlusTwo + "/variables/variables";
  }
  EXPECT_TRUE(fixed) << "saver filename node '" << filename << "'";
  // The regression model restores the same values either way.
  SavedModelBundle trusted, regression;
  ASSERT_OK(LoadSavedModel({}, kModels + "regression_tf2",
                           {kSavedModelTagServe}, &trusted));
  ASSERT_OK(LoadSavedModel(untrusted, kModels + "regression_tf2",
                           {kSavedModelTagServe}, &regression));
  for (const char* v : {"w", "b"}) {
    ExpectTensorEqual<float>(Call(regression, v, {})["output"],
                             Call(trusted, v, {})["output"]);
  }

  // A copy whose restore function reads a path of its own choosing.
  SavedModel sm;
  ASSERT_OK(ReadSavedModel(kHalfPlusTwo, &sm));
  bool edited = false;
  for (FunctionDef& f : *sm.mutable_meta_graphs(0)
                             ->mutable_graph_def()
                             ->mutable_library()
                             ->mutable_function()) {
    for (NodeDef& n : *f.mutable_node_def()) {
      if (n.op() != "RestoreV2") continue;
      NodeDef* evil = f.add_node_def();
      evil->set_name("evil");
      evil->set_op("Const");
      (*evil->mutable_attr())["dtype"].set_type(DT_STRING);
      TensorProto* t = (*evil->mutable_attr())["value"].mutable_tensor();
      t->set_dtype(DT_STRING);
      t->add_string_val("/etc/passwd");
      n.set_input(0, "evil:output:0");
      edited = true;
      break;
    }
    if (edited) break;
  }
  ASSERT_TRUE(edited);
  const std::string dir = MakeTempDir();
  ASSERT_OK(WriteStringToFile(dir + "/saved_model.pb", sm.SerializeAsString()));
  SavedModelBundle hostile;
  Status s = LoadSavedModel(untrusted, dir, {kSavedModelTagServe}, &hostile);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("(RestoreV2) in function"));
}

// The object graph (SavedObjectGraph) of regression_tf2: the module's
// variables, optimizer state and functions by path, as its script
// (regression_savedmodel.py) made them.
TEST(SavedModelTf2Test, ObjectGraphListsWhatTheProgramTracked) {
  SavedModel sm;
  ASSERT_OK(ReadSavedModel(kModels + "regression_tf2", &sm));
  const MetaGraphDef& mgd = sm.meta_graphs(0);
  auto objects = ListSavedObjects(mgd);
  ASSERT_OK(objects.status());
  std::map<std::string, std::pair<std::string, std::string>> by_path;
  for (const SavedObjectInfo& o : *objects) {
    by_path[o.path] = {o.kind, o.detail};
  }
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(by_path["root"], P("user_object", "_generic_user_object"));
  EXPECT_EQ(by_path["root.w"], P("variable", "float [1] 'w'"));
  EXPECT_EQ(by_path["root.b"], P("variable", "float [1] 'b'"));
  EXPECT_EQ(by_path["root.optimizer.iter"],
            P("variable", "int64 [] 'SGD/iter' (not trainable)"));
  EXPECT_EQ(by_path["root.train"].first, "function");
  EXPECT_EQ(by_path["root.signatures.train"].first, "bare_concrete_function");
  // A TF 1 meta graph has no object graph.
  EXPECT_TRUE(ListSavedObjects(MetaGraphDef())->empty());

  // Broken graphs are InvalidArgument naming the object, at load too.
  struct Break {
    const char* what;
    std::function<void(SavedObjectGraph*)> edit;
  };
  for (const Break& b : std::vector<Break>{
           {"child",
            [](SavedObjectGraph* g) {
              g->mutable_nodes(0)->mutable_children(0)->set_node_id(1000);
            }},
           {"concrete function",
            [](SavedObjectGraph* g) {
              for (SavedObject& o : *g->mutable_nodes()) {
                if (o.has_function()) {
                  o.mutable_function()->add_concrete_functions("missing");
                  return;
                }
              }
            }},
           {"bound input", [](SavedObjectGraph* g) {
              g->mutable_concrete_functions()->begin()->second.add_bound_inputs(
                  -1);
            }}}) {
    SCOPED_TRACE(b.what);
    SavedModel broken = sm;
    b.edit(broken.mutable_meta_graphs(0)->mutable_object_graph_def());
    Status s = ListSavedObjects(broken.meta_graphs(0)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(b.what));
    const std::string dir = MakeTempDir();
    ASSERT_OK(
        WriteStringToFile(dir + "/saved_model.pb", broken.SerializeAsString()));
    SavedModelBundle bundle;
    s = LoadSavedModel({}, dir, {kSavedModelTagServe}, &bundle);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
}

// The owner's protocol (regression_savedmodel.py): 201 calls of `train` on
// y = 0.1 x + 0.3, then w ≈ 0.1 and b ≈ 0.3.
TEST(SavedModelTf2Test, RegressionTrainsThroughItsTrainSignature) {
  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, kModels + "regression_tf2",
                           {kSavedModelTagServe}, &bundle));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 201; ++step) {
    std::vector<float> xs(100), ys(100);
    for (int i = 0; i < 100; ++i) {
      xs[i] = u(rng);
      ys[i] = 0.1f * xs[i] + 0.3f;
    }
    auto out = Call(bundle, "train",
                    {{"x", Tensor::FromVector<float>(xs)},
                     {"y", Tensor::FromVector<float>(ys)}});
    ASSERT_EQ(out.count("loss"), 1u);
    (step == 0 ? first_loss : last_loss) = out["loss"].scalar<float>();
  }
  EXPECT_LT(last_loss, first_loss);
  EXPECT_NEAR(Call(bundle, "w", {})["output"].scalar<float>(), 0.1f, 1e-3);
  EXPECT_NEAR(Call(bundle, "b", {})["output"].scalar<float>(), 0.3f, 1e-3);
}

// A TF 1.x-style SavedModel built here (ExportMetaGraph, Saver, a
// signature over plain tensor names): RunSignature treats it as the TF 2
// ones.
TEST(SavedModelV1Test, RunSignatureOnATf1SavedModel) {
  Scope root = Scope::NewRootScope();
  Variable w(root, "w", TensorShape({2}), Initializer::Constant(3.0));
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Mul(root.WithOpName("y"), x, w.value());
  Saver saver(root);
  auto init = GlobalVariablesInitializer(root);
  ASSERT_OK(root.status());
  MetaGraphExportOptions opts;
  opts.saver_def = &saver.saver_def();
  opts.tags = {kSavedModelTagServe};
  SignatureDef sig;
  sig.set_method_name("tensorflow/serving/predict");
  (*sig.mutable_inputs())["x"].set_name("x:0");
  (*sig.mutable_inputs())["x"].set_dtype(DT_FLOAT);
  (*sig.mutable_outputs())["y"].set_name("y:0");
  (*sig.mutable_outputs())["y"].set_dtype(DT_FLOAT);
  opts.signature_defs["serving_default"] = sig;
  auto mgd = ExportMetaGraph(root, opts);
  ASSERT_OK(mgd.status());

  const std::string dir = MakeTempDir();
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  auto set = ops::AssignVariableOp(root, w.handle(), {5.f, -1.f});
  ASSERT_OK(session.Run({}, {}, {set.operation}, &out));
  ASSERT_OK(saver
                .Save(&session, dir + "/variables/variables", -1,
                      /*write_state=*/false)
                .status());
  SavedModel sm;
  *sm.add_meta_graphs() = *mgd;
  ASSERT_OK(WriteStringToFile(dir + "/saved_model.pb", sm.SerializeAsString()));

  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, dir, {kSavedModelTagServe}, &bundle));
  EXPECT_THAT(SignatureKeys(bundle.meta_graph_def),
              ::testing::ElementsAre("serving_default"));
  auto got = Call(bundle, "serving_default",
                  {{"x", Tensor::FromVector<float>({2, 3})}});
  ExpectTensorEqual<float>(got["y"], Tensor::FromVector<float>({10, -3}));
  std::map<std::string, Tensor> outputs;
  Status s =
      RunSignature(bundle, "serving_default",
                   {{"x", Tensor::FromVector<double>({2, 3})}}, &outputs);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;

  // ReadSavedModel sees the same meta graph without loading it.
  SavedModel read;
  ASSERT_OK(ReadSavedModel(dir, &read));
  ASSERT_EQ(read.meta_graphs_size(), 1);
  EXPECT_EQ(read.meta_graphs(0).signature_def().count("serving_default"), 1u);
}

}  // namespace
}  // namespace runnel::training
