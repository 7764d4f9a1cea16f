#include <gtest/gtest.h>

#include <filesystem>

#include "runnel/base/env.h"
#include "runnel/io/tensor_bundle.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;

const std::string kTf = std::string(RUNNEL_TESTDATA_DIR) + "/tf/";

Tensor Strings(const std::vector<std::string>& v) {
  return Tensor::FromVector<tstring>(v);
}

AttrValue Dtypes(std::vector<DataType> v) {
  return MakeAttrValue(absl::MakeConstSpan(v));
}

Status Save(const std::string& prefix, const std::vector<std::string>& names,
            const std::vector<Tensor>& tensors) {
  OpTestCase t("SaveV2");
  std::vector<DataType> dts;
  for (const Tensor& x : tensors) dts.push_back(x.dtype());
  t.Attr("dtypes", Dtypes(dts));
  t.Input(Tensor::Scalar<tstring>(prefix));
  t.Input(Strings(names));
  t.Input(Strings(std::vector<std::string>(names.size())));
  for (const Tensor& x : tensors) t.Input(x);
  return t.Run();
}

StatusOr<std::vector<Tensor>> Restore(const std::string& prefix,
                                      const std::vector<std::string>& names,
                                      const std::vector<DataType>& dtypes) {
  OpTestCase t("RestoreV2");
  t.Attr("dtypes", Dtypes(dtypes));
  t.Input(Tensor::Scalar<tstring>(prefix));
  t.Input(Strings(names));
  t.Input(Strings(std::vector<std::string>(names.size())));
  RETURN_IF_ERROR(t.Run());
  std::vector<Tensor> out;
  for (int i = 0; i < t.num_outputs(); ++i) out.push_back(t.output(i));
  return out;
}

TEST(IoOpsTest, SaveThenRestoreEveryDtype) {
  const std::string prefix = MakeTempDir() + "/model.ckpt-1";
  const std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2.f}, TensorShape({2, 1})),
      Tensor::FromVector<double>({3.25}),
      Tensor::Scalar<int32_t>(-7),
      Tensor::FromVector<int64_t>({1LL << 40, 2}),
      Tensor::FromVector<bool>({true, false, true}),
      Tensor::FromVector<tstring>({"a", "", "ccc"}),
      Tensor(DT_FLOAT, TensorShape({0})),
  };
  const std::vector<std::string> names = {"f", "d", "i", "l", "b", "s", "e"};
  ASSERT_OK(Save(prefix, names, tensors));
  EXPECT_TRUE(fs::exists(prefix + ".index"));
  EXPECT_TRUE(fs::exists(prefix + ".data-00000-of-00001"));
  // Restore in another order, a subset.
  auto out = Restore(
      prefix, {"s", "f", "l", "e", "b", "i", "d"},
      {DT_STRING, DT_FLOAT, DT_INT64, DT_FLOAT, DT_BOOL, DT_INT32, DT_DOUBLE});
  ASSERT_OK(out.status());
  ExpectTensorEqual<tstring>((*out)[0], tensors[5]);
  ExpectTensorEqual<float>((*out)[1], tensors[0]);
  ExpectTensorEqual<int64_t>((*out)[2], tensors[3]);
  ExpectTensorEqual<float>((*out)[3], tensors[6]);
  ExpectTensorEqual<bool>((*out)[4], tensors[4]);
  ExpectTensorEqual<int32_t>((*out)[5], tensors[2]);
  ExpectTensorEqual<double>((*out)[6], tensors[1]);
}

TEST(IoOpsTest, RestoresTfCheckpoints) {
  auto hp2 = Restore(kTf + "checkpoints/half_plus_two/variables",
                     {"c", "a", "b"}, {DT_FLOAT, DT_FLOAT, DT_FLOAT});
  ASSERT_OK(hp2.status());
  EXPECT_EQ((*hp2)[0].scalar<float>(), 3.0f);
  EXPECT_EQ((*hp2)[1].scalar<float>(), 0.5f);
  EXPECT_EQ((*hp2)[2].scalar<float>(), 2.0f);
  auto emb = Restore(kTf + "checkpoints/embedding/embedding.ckpt",
                     {"my_embedding"}, {DT_FLOAT});
  ASSERT_OK(emb.status());
  ExpectTensorEqual<float>(
      (*emb)[0],
      Tensor::FromVector<float>({1, 2, 3, 5, 7, 11}, TensorShape({3, 2})));
  auto strs = Restore(kTf + "checkpoints/string_tensors/foo",
                      {"strs", "floats"}, {DT_STRING, DT_FLOAT});
  ASSERT_OK(strs.status());
  EXPECT_EQ((*strs)[0].flat<tstring>()[2], "x01");
  EXPECT_EQ((*strs)[1].shape(), TensorShape({2, 3}));
}

TEST(IoOpsTest, RestoreErrors) {
  const std::string hp2 = kTf + "checkpoints/half_plus_two/variables";
  // Wrong dtype.
  auto s = Restore(hp2, {"a"}, {DT_DOUBLE}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'a'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("float"), std::string::npos) << s;
  // Unknown tensor, missing checkpoint.
  s = Restore(hp2, {"a", "nope"}, {DT_FLOAT, DT_FLOAT}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("'nope'"), std::string::npos) << s;
  s = Restore(MakeTempDir() + "/none", {"a"}, {DT_FLOAT}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;

  // Slices are rejected clearly.
  OpTestCase sl("RestoreV2");
  sl.Attr("dtypes", Dtypes({DT_FLOAT}))
      .Input(Tensor::Scalar<tstring>(hp2))
      .Input(Strings({"a"}))
      .Input(Strings({"4 0,2"}));
  s = sl.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("partitioned"), std::string::npos) << s;

  // Bad input shapes.
  OpTestCase p("RestoreV2");
  p.Attr("dtypes", Dtypes({DT_FLOAT}))
      .Input(Strings({hp2}))
      .Input(Strings({"a"}))
      .Input(Strings({""}));
  s = p.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("prefix must be a scalar"), std::string::npos);
  EXPECT_FALSE(p.Run().ok());  // The shape function rejects it too.
  OpTestCase n("RestoreV2");
  n.Attr("dtypes", Dtypes({DT_FLOAT, DT_FLOAT}))
      .Input(Tensor::Scalar<tstring>(hp2))
      .Input(Strings({"a"}))
      .Input(Strings({""}));
  s = n.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("tensor_names must be a vector of 2"),
            std::string::npos)
      << s;
  EXPECT_EQ(n.Run().code(), absl::StatusCode::kInvalidArgument);
}

TEST(IoOpsTest, CorruptCheckpointIsDataLoss) {
  const std::string dir = MakeTempDir();
  const std::string prefix = dir + "/c";
  ASSERT_OK(Save(prefix, {"x", "y"},
                 {Tensor::FromVector<float>({1, 2, 3}),
                  Tensor::FromVector<float>({4, 5})}));
  const std::string data = prefix + ".data-00000-of-00001";
  std::string bytes;
  ASSERT_OK(ReadFileToString(data, &bytes));
  bytes[13] ^= 0x40;  // In y (bytes 12..19).
  ASSERT_OK(WriteStringToFile(data, bytes));
  auto s = Restore(prefix, {"x", "y"}, {DT_FLOAT, DT_FLOAT}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("'y'"), std::string::npos) << s;
}

TEST(IoOpsTest, SaveErrors) {
  const std::string dir = MakeTempDir();
  // Mismatched names.
  OpTestCase t("SaveV2");
  t.Attr("dtypes", Dtypes({DT_FLOAT}))
      .Input(Tensor::Scalar<tstring>(dir + "/p"))
      .Input(Strings({"a", "b"}))
      .Input(Strings({"", ""}))
      .Input(Tensor::Scalar<float>(1));
  Status s = t.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument);
  // Duplicate names.
  s = Save(dir + "/q", {"a", "a"},
           {Tensor::Scalar<float>(1), Tensor::Scalar<float>(2)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'a' added twice"), std::string::npos) << s;
  // A failed save leaves no checkpoint behind.
  EXPECT_FALSE(fs::exists(dir + "/q.index"));
  EXPECT_FALSE(fs::exists(dir + "/q.data-00000-of-00001"));
  // Slices.
  OpTestCase sl("SaveV2");
  sl.Attr("dtypes", Dtypes({DT_FLOAT}))
      .Input(Tensor::Scalar<tstring>(dir + "/r"))
      .Input(Strings({"a"}))
      .Input(Strings({"2 0,1"}))
      .Input(Tensor::FromVector<float>({1}));
  EXPECT_EQ(sl.Run().code(), absl::StatusCode::kUnimplemented);
  // Unwritable place.
  s = Save("/proc/no/such/dir/p", {"a"}, {Tensor::Scalar<float>(1)});
  EXPECT_FALSE(s.ok());
  // No tensors at all is a valid (empty) checkpoint.
  ASSERT_OK(Save(dir + "/empty", {}, {}));
  BundleReader r(dir + "/empty");
  EXPECT_OK(r.status());
}

TEST(IoOpsTest, MergeV2Checkpoints) {
  const std::string dir = MakeTempDir();
  const std::string tmp = dir + "/model.ckpt-5_temp_abc";
  const std::string part0 = tmp + "/part-00000-of-00002";
  const std::string part1 = tmp + "/part-00001-of-00002";
  ASSERT_OK(Save(part0, {"w"}, {Tensor::FromVector<float>({1, 2})}));
  ASSERT_OK(Save(part1, {"b"}, {Tensor::Scalar<float>(3)}));
  OpTestCase m("MergeV2Checkpoints");
  m.Input(Strings({part0, part1}))
      .Input(Tensor::Scalar<tstring>(dir + "/model.ckpt-5"));
  ASSERT_OK(m.Run());
  EXPECT_FALSE(fs::exists(tmp));  // delete_old_dirs (default true).
  auto out = Restore(dir + "/model.ckpt-5", {"w", "b"}, {DT_FLOAT, DT_FLOAT});
  ASSERT_OK(out.status());
  ExpectTensorEqual<float>((*out)[0], Tensor::FromVector<float>({1, 2}));
  EXPECT_EQ((*out)[1].scalar<float>(), 3.f);

  // allow_missing_files skips absent prefixes.
  const std::string p2 = dir + "/t2/part";
  ASSERT_OK(Save(p2, {"x"}, {Tensor::Scalar<int32_t>(4)}));
  OpTestCase m2("MergeV2Checkpoints");
  m2.Attr("allow_missing_files", true)
      .Attr("delete_old_dirs", false)
      .Input(Strings({dir + "/absent", p2}))
      .Input(Tensor::Scalar<tstring>(dir + "/merged2"));
  ASSERT_OK(m2.Run());
  EXPECT_TRUE(fs::exists(dir + "/t2"));
  auto x = Restore(dir + "/merged2", {"x"}, {DT_INT32});
  ASSERT_OK(x.status());
  EXPECT_EQ((*x)[0].scalar<int32_t>(), 4);

  // Errors.
  OpTestCase bad("MergeV2Checkpoints");
  bad.Input(Strings({dir + "/absent"}))
      .Input(Tensor::Scalar<tstring>(dir + "/m3"));
  EXPECT_EQ(bad.Run().code(), absl::StatusCode::kNotFound);
  OpTestCase empty("MergeV2Checkpoints");
  empty.Input(Tensor(DT_STRING, TensorShape({0})))
      .Input(Tensor::Scalar<tstring>(dir + "/m4"));
  EXPECT_EQ(empty.Run().code(), absl::StatusCode::kInvalidArgument);
  OpTestCase rank("MergeV2Checkpoints");
  rank.Input(Tensor::Scalar<tstring>(p2))
      .Input(Tensor::Scalar<tstring>(dir + "/m5"));
  Status s = rank.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("vector"), std::string::npos) << s;
}

TEST(IoOpsTest, ShardedFilenameAndSpec) {
  OpTestCase f("ShardedFilename");
  f.Input(Tensor::Scalar<tstring>("/a/b_temp/part"))
      .Input(Tensor::Scalar<int32_t>(3))
      .Input(Tensor::Scalar<int32_t>(12));
  ASSERT_OK(f.Run());
  EXPECT_EQ(f.output(0).scalar<tstring>(), "/a/b_temp/part-00003-of-00012");
  EXPECT_EQ(f.output(0).dims(), 0);

  OpTestCase spec("ShardedFilespec");
  spec.Input(Tensor::Scalar<tstring>("model"))
      .Input(Tensor::Scalar<int32_t>(2));
  ASSERT_OK(spec.Run());
  EXPECT_EQ(spec.output(0).scalar<tstring>(),
            "model-?????"
            "-of-00002");

  for (auto [shard, num] : {std::pair{2, 2}, {-1, 2}, {0, 0}}) {
    OpTestCase b("ShardedFilename");
    b.Input(Tensor::Scalar<tstring>("x"))
        .Input(Tensor::Scalar<int32_t>(shard))
        .Input(Tensor::Scalar<int32_t>(num));
    Status s = b.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("num_shards"), std::string::npos) << s;
  }
  OpTestCase v("ShardedFilename");
  v.Input(Strings({"x"}))
      .Input(Tensor::Scalar<int32_t>(0))
      .Input(Tensor::Scalar<int32_t>(1));
  EXPECT_EQ(v.RunKernelOnly().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.Run().code(), absl::StatusCode::kInvalidArgument);
  OpTestCase z("ShardedFilespec");
  z.Input(Tensor::Scalar<tstring>("x")).Input(Tensor::Scalar<int32_t>(0));
  EXPECT_EQ(z.Run().code(), absl::StatusCode::kInvalidArgument);
}

TEST(IoOpsTest, ShapeFunctions) {
  AttrMap attrs;
  attrs["dtypes"] = Dtypes({DT_FLOAT, DT_INT32});
  auto shapes = InferShapes("RestoreV2", attrs,
                            {PartialTensorShape({}), PartialTensorShape({-1}),
                             PartialTensorShape({2})});
  ASSERT_OK(shapes.status());
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_TRUE((*shapes)[0].unknown_rank());
  // Three names for two outputs.
  EXPECT_FALSE(InferShapes("RestoreV2", attrs,
                           {PartialTensorShape({}), PartialTensorShape({3}),
                            PartialTensorShape({-1})})
                   .ok());
  // Unknown ranks are fine.
  EXPECT_OK(InferShapes("RestoreV2", attrs,
                        {PartialTensorShape(), PartialTensorShape(),
                         PartialTensorShape()})
                .status());
  AttrMap save;
  save["dtypes"] = Dtypes({DT_FLOAT});
  EXPECT_OK(InferShapes("SaveV2", save,
                        {PartialTensorShape({}), PartialTensorShape({1}),
                         PartialTensorShape({1}), PartialTensorShape({5, 5})})
                .status());
  EXPECT_FALSE(InferShapes("SaveV2", save,
                           {PartialTensorShape({1}), PartialTensorShape({1}),
                            PartialTensorShape({1}), PartialTensorShape({})})
                   .ok());
  auto fn = InferShapes(
      "ShardedFilename", {},
      {PartialTensorShape(), PartialTensorShape({}), PartialTensorShape({})});
  ASSERT_OK(fn.status());
  EXPECT_EQ((*fn)[0].dims(), 0);
}

}  // namespace
}  // namespace runnel
