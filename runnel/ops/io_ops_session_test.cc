// The checkpoint ops through a session: TF 1.x's sharded save graph
// (StringJoin -> ShardedFilename -> SaveV2 per shard -> MergeV2Checkpoints)
// built with the op wrappers, restores into reference variables, and
// errors that name the node and the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "runnel/api/client_session.h"
#include "runnel/base/env.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kTf = std::string(RUNNEL_TESTDATA_DIR) + "/tf/";

Tensor Names(const std::vector<std::string>& v) {
  return Tensor::FromVector<tstring>(std::vector<tstring>(v.begin(), v.end()));
}

TEST(IoOpsSessionTest, ShardedSaveGraphAndRestore) {
  Scope root = Scope::NewRootScope();
  auto prefix = ops::Placeholder(root.WithOpName("prefix"), DT_STRING);
  auto tmp =
      ops::StringJoin(root, {Output(prefix), std::string("_temp_x/part")});
  auto a = ops::Const(root.WithOpName("a"), {{1.f, 2.f}, {3.f, 4.f}});
  auto b = ops::Const(root.WithOpName("b"), int64_t{7});
  auto c = ops::Const(root.WithOpName("c"), std::string("text"));
  // Two shards, as two devices' variables would be.
  auto f0 = ops::ShardedFilename(root, tmp, 0, 2);
  auto f1 = ops::ShardedFilename(root, tmp, 1, 2);
  auto s0 = ops::SaveV2(root, f0, Names({"a", "c"}), Names({"", ""}),
                        {Output(a), Output(c)});
  auto s1 = ops::SaveV2(root, f1, Names({"b"}), Names({""}), {Output(b)});
  auto d0 = ops::Identity(root.WithControlDependencies(s0.operation), f0);
  auto d1 = ops::Identity(root.WithControlDependencies(s1.operation), f1);
  auto merge = ops::MergeV2Checkpoints(
      root, ops::Pack(root, {Output(d0), Output(d1)}), prefix);
  auto saved =
      ops::Identity(root.WithControlDependencies(merge.operation), prefix);
  auto restore =
      ops::RestoreV2(root.WithOpName("restore"), prefix, Names({"b", "a", "c"}),
                     Names({"", "", ""}), {DT_INT64, DT_FLOAT, DT_STRING});
  ASSERT_OK(root.status());

  const std::string dir = MakeTempDir();
  const std::string path = dir + "/model.ckpt-1";
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{prefix, path}}, {saved}, &out));
  EXPECT_EQ(out[0].scalar<tstring>(), path);
  EXPECT_THAT(DirEntries(dir), ElementsAre("model.ckpt-1.data-00000-of-00002",
                                           "model.ckpt-1.data-00001-of-00002",
                                           "model.ckpt-1.index"));
  ASSERT_OK(session.Run({{prefix, path}}, restore.tensors, &out));
  EXPECT_EQ(out[0].scalar<int64_t>(), 7);
  ExpectTensorEqual<float>(
      out[1], Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  EXPECT_EQ(out[2].scalar<tstring>(), "text");
  BundleReader r(path);
  ASSERT_OK(r.status());
  EXPECT_EQ(r.num_shards(), 2);
}

// TF 1.x's restore pattern on reference variables: RestoreV2 -> Assign.
TEST(IoOpsSessionTest, RestoreTfCheckpointIntoRefVariables) {
  Scope root = Scope::NewRootScope();
  auto v = ops::VariableV2(root.WithOpName("my_embedding"), TensorShape({3, 2}),
                           DT_FLOAT);
  auto restore = ops::RestoreV2(
      root, std::string(kTf + "checkpoints/embedding/embedding.ckpt"),
      Names({"my_embedding"}), Names({""}), {DT_FLOAT});
  auto assign = ops::Assign(root, v, restore[0]);
  ASSERT_OK(root.status());
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {assign.operation}, &out));
  ASSERT_OK(session.Run({v}, &out));
  ExpectTensorEqual<float>(
      out[0],
      Tensor::FromVector<float>({1, 2, 3, 5, 7, 11}, TensorShape({3, 2})));
}

TEST(IoOpsSessionTest, CorruptCheckpointFailsNamingNodeAndTensor) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/c";
  {
    BundleWriter w(path);
    ASSERT_OK(w.Add("w", Tensor::FromVector<float>({1, 2, 3, 4})));
    ASSERT_OK(w.Finish());
  }
  std::string bytes;
  ASSERT_OK(ReadFileToString(DataFilename(path, 0, 1), &bytes));
  bytes[5] ^= 0x20;
  ASSERT_OK(WriteStringToFile(DataFilename(path, 0, 1), bytes));

  Scope root = Scope::NewRootScope();
  auto restore = ops::RestoreV2(root.WithOpName("restore_w"), path,
                                Names({"w"}), Names({""}), {DT_FLOAT});
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = session.Run(restore.tensors, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("restore_w"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'w'"));
}

TEST(IoOpsSessionTest, OpsHaveNoGradient) {
  for (const char* op : {"SaveV2", "RestoreV2", "MergeV2Checkpoints",
                         "ShardedFilename", "ShardedFilespec", "StringJoin"}) {
    const auto* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_EQ(e->fn, nullptr) << op;
    EXPECT_FALSE(e->reason.empty()) << op;
  }
}

}  // namespace
}  // namespace runnel
