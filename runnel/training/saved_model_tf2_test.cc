// SavedModels written by TF 2's tf.saved_model.save (testdata/tf/README.md):
// their signatures are StatefulPartitionedCall nodes over the graph's
// function library, and their saver_def's save and restore ops are calls
// too, so loading them exercises the function library end to end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "proto/example.pb.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/runnel.h"
#include "runnel/training/meta_graph.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel::training {
namespace {

const std::string kModels =
    std::string(RUNNEL_TESTDATA_DIR) + "/tf/saved_models/";
const std::string kHalfPlusTwo = kModels + "half_plus_two_tf2/00000123";

// The tensor names of signature `key`'s input `in` and output `out`.
std::pair<std::string, std::string> SignatureTensors(const SavedModelBundle& b,
                                                     const std::string& key,
                                                     const std::string& in,
                                                     const std::string& out) {
  const auto& sigs = b.meta_graph_def.signature_def();
  auto it = sigs.find(key);
  EXPECT_NE(it, sigs.end()) << key;
  if (it == sigs.end()) return {};
  std::string in_name;
  if (!in.empty()) in_name = it->second.inputs().at(in).name();
  return {in_name, it->second.outputs().at(out).name()};
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
  Session* s = bundle.session.get();
  std::vector<Tensor> out;
  auto [x, y] = SignatureTensors(bundle, "serving_default", "x", "y");
  // The signature declares x as float [1] (and Runnel checks feed shapes, as
  // TF's Python client does), so x = [1, 2, 5] goes in one value at a time.
  const float xs[] = {1, 2, 5}, ys[] = {2.5, 3, 4.5};
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(s->Run({{x, Tensor::FromVector<float>({xs[i]})}}, {y}, {}, &out));
    ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({ys[i]}));
  }
  // Unfed, x is its default, 0.
  ASSERT_OK(s->Run({}, {y}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({2}));

  // Signatures over serialized tf.Examples (ParseExampleV2 in the body) and
  // over floats.
  struct Case {
    const char* sig;
    const char* feature;
    std::vector<float> expected;
  };
  for (const Case& c : {Case{"regress_x_to_y", "x", {2, 2.5, 3, 3.5}},
                        Case{"regress_x_to_y2", "x", {3, 3.5, 4, 4.5}},
                        Case{"regress_x2_to_y3", "x2", {3, 3.5, 4, 4.5}}}) {
    auto [in, outputs] = SignatureTensors(bundle, c.sig, "inputs", "outputs");
    // regress_x2_to_y3 takes x2 itself ([1], one value at a time), the
    // others a batch of serialized tf.Examples.
    if (std::string(c.feature) == "x2") {
      for (int i = 0; i < 4; ++i) {
        ASSERT_OK(s->Run({{in, Tensor::FromVector<float>({float(i)})}},
                         {outputs}, {}, &out));
        ASSERT_EQ(out[0].NumElements(), 1) << c.sig;
        EXPECT_NEAR(out[0].flat<float>()[0], c.expected[i], 1e-6) << c.sig;
      }
      continue;
    }
    ASSERT_OK(s->Run({{in, SerializedExamples(c.feature, {0, 1, 2, 3})}},
                     {outputs}, {}, &out));
    ASSERT_EQ(out[0].NumElements(), 4) << c.sig;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out[0].flat<float>()[i], c.expected[i], 1e-6) << c.sig;
    }
  }
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

// The owner's protocol (regression_savedmodel.py): 201 calls of `train` on
// y = 0.1 x + 0.3, then w ≈ 0.1 and b ≈ 0.3.
TEST(SavedModelTf2Test, RegressionTrainsThroughItsTrainSignature) {
  SavedModelBundle bundle;
  ASSERT_OK(LoadSavedModel({}, kModels + "regression_tf2",
                           {kSavedModelTagServe}, &bundle));
  Session* s = bundle.session.get();
  const auto& train = bundle.meta_graph_def.signature_def().at("train");
  const std::string x = train.inputs().at("x").name();
  const std::string y = train.inputs().at("y").name();
  const std::string loss = train.outputs().at("loss").name();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Tensor> out;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 201; ++step) {
    std::vector<float> xs(100), ys(100);
    for (int i = 0; i < 100; ++i) {
      xs[i] = u(rng);
      ys[i] = 0.1f * xs[i] + 0.3f;
    }
    ASSERT_OK(s->Run({{x, Tensor::FromVector<float>(xs)},
                      {y, Tensor::FromVector<float>(ys)}},
                     {loss}, {}, &out));
    (step == 0 ? first_loss : last_loss) = out[0].scalar<float>();
  }
  EXPECT_LT(last_loss, first_loss);
  auto [unused_w, w] = SignatureTensors(bundle, "w", "", "output");
  auto [unused_b, b] = SignatureTensors(bundle, "b", "", "output");
  ASSERT_OK(s->Run({}, {w, b}, {}, &out));
  EXPECT_NEAR(out[0].scalar<float>(), 0.1f, 1e-3);
  EXPECT_NEAR(out[1].scalar<float>(), 0.3f, 1e-3);
}

}  // namespace
}  // namespace runnel::training
