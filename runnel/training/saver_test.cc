// Saver: TF-compatible checkpoints of resource and reference variables,
// the state file, max_to_keep, and restores that are all or nothing.
#include "runnel/training/saver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runnel.h"
#include "testing/op_test_util.h"
#include "testing/test_files.h"

namespace runnel::training {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kTf = std::string(RUNNEL_TESTDATA_DIR) + "/tf/";

Status RunOps(const ClientSession& session, const std::vector<Operation>& ops) {
  std::vector<Tensor> unused;
  return session.Run({}, {}, ops, &unused);
}

Tensor Fetch(const ClientSession& session, const Output& out) {
  std::vector<Tensor> v;
  Status s = session.Run({out}, &v);
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? v[0] : Tensor();
}

// Sets a resource variable to `value`.
void Set(const Scope& root, const ClientSession& session, const Variable& v,
         const Tensor& value) {
  auto assign = ops::AssignVariableOp(root, v.handle(), value);
  ASSERT_OK(root.status());
  ASSERT_OK(RunOps(session, {assign.operation}));
}

// A model with two resource variables and an int64 step counter.
struct Model {
  Scope root = Scope::NewRootScope();
  Variable w, b, step;
  Model() {
    const Scope dense = root.NewSubScope("dense");
    w = Variable(dense, "kernel", TensorShape({2, 3}),
                 Initializer::Constant(1.0));
    b = Variable(dense, "bias", TensorShape({3}), Initializer::Constant(-2.0));
    step = CreateGlobalStep(root);
  }
};

TEST(SaverTest, SaverDefAndGraphFollowTf) {
  Model m;
  Saver saver(m.root);
  ASSERT_OK(saver.status());
  ASSERT_OK(m.root.status());
  const SaverDef& d = saver.saver_def();
  EXPECT_EQ(d.filename_tensor_name(), "save/Const:0");
  EXPECT_EQ(d.save_tensor_name(), "save/Identity:0");
  EXPECT_EQ(d.restore_op_name(), "save/restore_all");
  EXPECT_EQ(d.version(), SaverDef::V2);
  EXPECT_TRUE(d.sharded());
  EXPECT_EQ(d.max_to_keep(), 5);
  const Graph* g = m.root.graph();
  for (const char* n :
       {"save/StringJoin", "save/ShardedFilename", "save/SaveV2",
        "save/control_dependency", "save/MergeV2Checkpoints", "save/RestoreV2",
        "save/restore_barrier"}) {
    EXPECT_NE(g->FindNode(n), nullptr) << n;
  }
  // Keys sorted, as TF's Saver sorts them.
  Node* save = g->FindNode("save/SaveV2");
  const Edge* e;
  ASSERT_OK(save->input_edge(1, &e));
  Tensor names;
  ASSERT_OK(GetAttr(e->src()->attrs(), "value", &names));
  EXPECT_THAT(std::vector<std::string>(names.flat<tstring>().begin(),
                                       names.flat<tstring>().end()),
              ElementsAre("dense/bias", "dense/kernel", "global_step"));
  // A second Saver gets its own scope.
  Saver second(m.root);
  EXPECT_EQ(second.saver_def().restore_op_name(), "save_1/restore_all");
}

TEST(SaverTest, SaveAndRestoreResourceVariables) {
  Model m;
  Saver saver(m.root);
  ASSERT_OK(saver.status());
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  const Tensor w_saved =
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Set(m.root, session, m.w, w_saved);
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(42));

  const std::string dir = MakeTempDir();
  auto path = saver.Save(&session, dir + "/model.ckpt", 42);
  ASSERT_OK(path.status());
  EXPECT_EQ(*path, dir + "/model.ckpt-42");
  EXPECT_THAT(DirEntries(dir),
              ElementsAre("checkpoint", "model.ckpt-42.data-00000-of-00001",
                          "model.ckpt-42.index"));
  // The state file is TF's text CheckpointState, with relative paths.
  CheckpointState raw;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      ReadFile(dir + "/checkpoint"), &raw));
  EXPECT_EQ(raw.model_checkpoint_path(), "model.ckpt-42");
  EXPECT_THAT(raw.all_model_checkpoint_paths(), ElementsAre("model.ckpt-42"));
  EXPECT_EQ(raw.all_model_checkpoint_timestamps_size(), 1);
  auto latest = LatestCheckpoint(dir);
  ASSERT_OK(latest.status());
  EXPECT_EQ(*latest, dir + "/model.ckpt-42");

  // Change everything, then restore.
  Set(m.root, session, m.w,
      Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  Set(m.root, session, m.b, Tensor::FromVector<float>({9, 9, 9}));
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(0));
  ASSERT_OK(saver.Restore(&session, *latest));
  ExpectTensorEqual<float>(Fetch(session, m.w.value()), w_saved);
  ExpectTensorEqual<float>(Fetch(session, m.b.value()),
                           Tensor::FromVector<float>({-2, -2, -2}));
  EXPECT_EQ(Fetch(session, m.step.value()).scalar<int64_t>(), 42);

  // The files hold exactly these tensors.
  BundleReader r(*path);
  ASSERT_OK(r.status());
  Tensor t;
  ASSERT_OK(r.Lookup("dense/kernel", &t));
  ExpectTensorEqual<float>(t, w_saved);
}

// A fresh process: new graph, new session, restore instead of init.
TEST(SaverTest, RestoreIntoFreshSession) {
  const std::string dir = MakeTempDir();
  {
    Model m;
    Saver saver(m.root);
    ClientSession session(m.root);
    ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
    Set(m.root, session, m.b, Tensor::FromVector<float>({7, 8, 9}));
    ASSERT_OK(saver.Save(&session, dir + "/m").status());
  }
  Model m;
  Saver saver(m.root);
  ClientSession session(m.root);
  ASSERT_OK(saver.Restore(&session, dir + "/m"));
  ExpectTensorEqual<float>(Fetch(session, m.b.value()),
                           Tensor::FromVector<float>({7, 8, 9}));
  ExpectTensorEqual<float>(
      Fetch(session, m.w.value()),
      Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({2, 3})));
}

// Reference variables (VariableV2 + Assign), restored from TF's own file.
TEST(SaverTest, RestoresTfHalfPlusTwoIntoRefVariables) {
  Scope root = Scope::NewRootScope();
  std::map<std::string, Output> vars;
  for (const char* n : {"a", "b", "c"}) {
    vars[n] = ops::VariableV2(root.WithOpName(n), TensorShape({}), DT_FLOAT);
  }
  Saver saver(root, vars);
  ASSERT_OK(saver.status());
  ClientSession session(root);
  ASSERT_OK(
      saver.Restore(&session, kTf + "checkpoints/half_plus_two/variables"));
  EXPECT_EQ(Fetch(session, vars["a"]).scalar<float>(), 0.5f);
  EXPECT_EQ(Fetch(session, vars["b"]).scalar<float>(), 2.0f);
  EXPECT_EQ(Fetch(session, vars["c"]).scalar<float>(), 3.0f);

  // Saving them again writes TF's bytes exactly (data and index).
  const std::string dir = MakeTempDir();
  auto path = saver.Save(&session, dir + "/variables", -1, false);
  ASSERT_OK(path.status());
  EXPECT_EQ(
      ReadFile(DataFilename(*path, 0, 1)),
      ReadFile(kTf +
               "checkpoints/half_plus_two/variables.data-00000-of-00001"));
  EXPECT_EQ(ReadFile(MetaFilename(*path)),
            ReadFile(kTf + "checkpoints/half_plus_two/variables.index"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint"));  // write_state = false.
  // Only the checkpoint: the temporary shard directory is gone.
  EXPECT_THAT(DirEntries(dir),
              ElementsAre("variables.data-00000-of-00001", "variables.index"));
}

TEST(SaverTest, RestoresTfEmbeddingIntoResourceVariable) {
  Scope root = Scope::NewRootScope();
  Variable emb(root, "my_embedding", TensorShape({3, 2}), Initializer::Zeros());
  Saver saver(root, std::vector<Variable>{emb});
  ClientSession session(root);
  ASSERT_OK(
      saver.Restore(&session, kTf + "checkpoints/embedding/embedding.ckpt"));
  ExpectTensorEqual<float>(
      Fetch(session, emb.value()),
      Tensor::FromVector<float>({1, 2, 3, 5, 7, 11}, TensorShape({3, 2})));
}

TEST(SaverTest, MaxToKeepDeletesOldCheckpoints) {
  Model m;
  SaverOptions opts;
  opts.max_to_keep = 2;
  Saver saver(m.root, opts);
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  const std::string dir = MakeTempDir();
  for (int step = 1; step <= 4; ++step) {
    ASSERT_OK(saver.Save(&session, dir + "/model.ckpt", step).status());
  }
  EXPECT_THAT(
      DirEntries(dir),
      ElementsAre("checkpoint", "model.ckpt-3.data-00000-of-00001",
                  "model.ckpt-3.index", "model.ckpt-4.data-00000-of-00001",
                  "model.ckpt-4.index"));
  EXPECT_THAT(saver.last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-3", dir + "/model.ckpt-4"));
  CheckpointState state;
  ASSERT_OK(GetCheckpointState(dir, &state));
  EXPECT_EQ(state.model_checkpoint_path(), dir + "/model.ckpt-4");
  EXPECT_THAT(state.all_model_checkpoint_paths(),
              ElementsAre(dir + "/model.ckpt-3", dir + "/model.ckpt-4"));
  // Saving the same path again moves it to the end, no duplicate.
  ASSERT_OK(saver.Save(&session, dir + "/model.ckpt", 3).status());
  EXPECT_THAT(saver.last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-4", dir + "/model.ckpt-3"));
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/model.ckpt-3");

  // After a restart a new Saver adopts the list and keeps counting.
  Saver again(m.root, opts);
  ASSERT_OK(again.RecoverLastCheckpoints(dir));
  EXPECT_THAT(again.last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-4", dir + "/model.ckpt-3"));
  ASSERT_OK(again.Save(&session, dir + "/model.ckpt", 5).status());
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-4"));
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-3"));
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-5"));

  // max_to_keep = 0 keeps everything.
  SaverOptions all;
  all.max_to_keep = 0;
  Saver keep_all(m.root, all);
  const std::string dir2 = MakeTempDir();
  for (int step = 0; step < 7; ++step) {
    ASSERT_OK(keep_all.Save(&session, dir2 + "/k", step).status());
  }
  EXPECT_EQ(keep_all.last_checkpoints().size(), 7u);
  for (int step = 0; step < 7; ++step) {
    EXPECT_TRUE(CheckpointExists(absl::StrCat(dir2, "/k-", step)));
  }
}

TEST(SaverTest, KeepCheckpointEveryNHoursPreservesOldOnes) {
  Model m;
  SaverOptions opts;
  opts.max_to_keep = 1;
  opts.keep_checkpoint_every_n_hours = 1e-12;  // Every one is "old enough".
  Saver saver(m.root, opts);
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  const std::string dir = MakeTempDir();
  for (int step = 1; step <= 3; ++step) {
    ASSERT_OK(saver.Save(&session, dir + "/p", step).status());
  }
  // All three stay on disk; only the newest is in the list.
  for (int step = 1; step <= 3; ++step) {
    EXPECT_TRUE(CheckpointExists(absl::StrCat(dir, "/p-", step)));
  }
  EXPECT_THAT(saver.last_checkpoints(), ElementsAre(dir + "/p-3"));
  CheckpointState state;
  ASSERT_OK(GetCheckpointState(dir, &state));
  EXPECT_GT(state.last_preserved_timestamp(), 0);
}

// Note [Atomic restore]: a corrupt checkpoint changes no variable.
TEST(SaverTest, CorruptCheckpointRestoresNothing) {
  Model m;
  Saver saver(m.root);
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  Set(m.root, session, m.b, Tensor::FromVector<float>({5, 6, 7}));
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(3));
  const std::string dir = MakeTempDir();
  auto path = saver.Save(&session, dir + "/model.ckpt", 3);
  ASSERT_OK(path.status());
  // Now change the variables: these values must survive failed restores.
  Set(m.root, session, m.b, Tensor::FromVector<float>({-1, -1, -1}));
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(100));
  auto unchanged = [&] {
    ExpectTensorEqual<float>(Fetch(session, m.b.value()),
                             Tensor::FromVector<float>({-1, -1, -1}));
    EXPECT_EQ(Fetch(session, m.step.value()).scalar<int64_t>(), 100);
    ExpectTensorEqual<float>(
        Fetch(session, m.w.value()),
        Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({2, 3})));
  };
  const std::string data = DataFilename(*path, 0, 1);
  const std::string good = ReadFile(data);
  // The sorted keys' data order: dense/bias, dense/kernel, global_step.
  // Flip a byte of global_step (the last 8 bytes): the bias, read first,
  // is fine, but must not be assigned either.
  std::string bad = good;
  bad[bad.size() - 3] ^= 0x01;
  ASSERT_OK(WriteStringToFile(data, bad));
  Status s = saver.Restore(&session, *path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'global_step'"));
  unchanged();

  // Truncated data file.
  ASSERT_OK(WriteStringToFile(data, good.substr(0, good.size() - 4)));
  s = saver.Restore(&session, *path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'global_step'"));
  unchanged();

  // Missing shard.
  fs::remove(data);
  s = saver.Restore(&session, *path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  unchanged();

  // Garbage index.
  ASSERT_OK(WriteStringToFile(data, good));
  ASSERT_OK(WriteStringToFile(MetaFilename(*path), "not a table at all"));
  s = saver.Restore(&session, *path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  unchanged();

  // Missing checkpoint.
  s = saver.Restore(&session, dir + "/nothing");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  unchanged();
}

TEST(SaverTest, MismatchedCheckpointRestoresNothing) {
  const std::string dir = MakeTempDir();
  {
    // A checkpoint with "dense/bias" of another shape and no "global_step".
    BundleWriter w(dir + "/other");
    ASSERT_OK(w.Add("dense/bias", Tensor::FromVector<float>({1, 2})));
    ASSERT_OK(w.Add(
        "dense/kernel",
        Tensor::FromVector<float>({6, 5, 4, 3, 2, 1}, TensorShape({2, 3}))));
    ASSERT_OK(w.Finish());
  }
  Model m;
  Saver saver(m.root);
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  Status s = saver.Restore(&session, dir + "/other");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'dense/bias'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("[3]"));
  ExpectTensorEqual<float>(
      Fetch(session, m.w.value()),
      Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({2, 3})));
  // A variable missing from the checkpoint.
  Scope root = Scope::NewRootScope();
  Variable k(root.NewSubScope("dense"), "kernel", TensorShape({2, 3}),
             Initializer::Zeros());
  Variable extra(root, "extra", TensorShape({}), Initializer::Zeros());
  Saver saver2(root);
  ClientSession session2(root);
  ASSERT_OK(RunOps(session2, {GlobalVariablesInitializer(root)}));
  s = saver2.Restore(&session2, dir + "/other");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'extra'"));
  ExpectTensorEqual<float>(
      Fetch(session2, k.value()),
      Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  // A dtype mismatch.
  Scope root3 = Scope::NewRootScope();
  Variable kd(root3.NewSubScope("dense"), "kernel", TensorShape({2, 3}),
              Initializer::Zeros(), DT_DOUBLE);
  Saver saver3(root3);
  ClientSession session3(root3);
  s = saver3.Restore(&session3, dir + "/other");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("double"));
}

// A save that dies half-way leaves the last good checkpoint usable.
TEST(SaverTest, InterruptedSaveLeavesLastCheckpoint) {
  Model m;
  Saver saver(m.root);
  ClientSession session(m.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(m.root)}));
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(10));
  const std::string dir = MakeTempDir();
  ASSERT_OK(saver.Save(&session, dir + "/model.ckpt", 10).status());
  // What a crash mid-save of step 20 can leave: a temporary shard directory
  // with a half-written part, and a data file renamed without its index.
  fs::create_directories(dir + "/model.ckpt-20_temp_0123/");
  ASSERT_OK(WriteStringToFile(
      dir + "/model.ckpt-20_temp_0123/part-00000-of-00001.data-00000-of-00001",
      "partial"));
  ASSERT_OK(
      WriteStringToFile(dir + "/model.ckpt-20.data-00000-of-00001", "partial"));
  ASSERT_OK(WriteStringToFile(dir + "/checkpoint.tempstate123", "model_che"));
  auto latest = LatestCheckpoint(dir);
  ASSERT_OK(latest.status());
  EXPECT_EQ(*latest, dir + "/model.ckpt-10");
  Set(m.root, session, m.step, Tensor::Scalar<int64_t>(0));
  ASSERT_OK(saver.Restore(&session, *latest));
  EXPECT_EQ(Fetch(session, m.step.value()).scalar<int64_t>(), 10);
  // The next save of step 20 succeeds over the debris.
  ASSERT_OK(saver.Save(&session, dir + "/model.ckpt", 20).status());
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/model.ckpt-20");
}

TEST(SaverTest, LatestCheckpointErrors) {
  const std::string dir = MakeTempDir();
  EXPECT_EQ(LatestCheckpoint(dir).status().code(), absl::StatusCode::kNotFound);
  ASSERT_OK(WriteStringToFile(dir + "/checkpoint",
                              "model_checkpoint_path: \"gone-1\"\n"));
  auto s = LatestCheckpoint(dir).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("gone-1"));
  ASSERT_OK(WriteStringToFile(dir + "/checkpoint", "this is { not text"));
  EXPECT_EQ(LatestCheckpoint(dir).status().code(), absl::StatusCode::kDataLoss);
  // A TF-written absolute path is used as is.
  ASSERT_OK(WriteStringToFile(
      dir + "/checkpoint",
      absl::StrCat("model_checkpoint_path: \"", kTf,
                   "checkpoints/half_plus_two/variables\"\n")));
  EXPECT_EQ(*LatestCheckpoint(dir),
            kTf + "checkpoints/half_plus_two/variables");
}

TEST(SaverTest, ConstructionErrors) {
  {
    Scope root = Scope::NewRootScope();
    Saver saver(root);  // No variables.
    EXPECT_EQ(saver.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(saver.status().message()),
                HasSubstr("no variables"));
  }
  {
    Scope root = Scope::NewRootScope();
    auto c = ops::Const(root, 1.0f);
    Saver saver(root, std::map<std::string, Output>{{"c", c}});
    EXPECT_EQ(saver.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(saver.status().message()),
                HasSubstr("not a variable"));
    EXPECT_FALSE(root.ok());  // Recorded in the scope too.
  }
  {
    Scope root = Scope::NewRootScope();
    Variable a(root, "a", TensorShape({}), Initializer::Zeros());
    Saver saver(root, std::vector<Variable>{a, a});
    EXPECT_EQ(saver.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(saver.status().message()), HasSubstr("'a'"));
  }
  {
    SaverDef def;
    def.set_version(SaverDef::V1);
    EXPECT_EQ(Saver(def).status().code(), absl::StatusCode::kUnimplemented);
  }
}

// The same save/restore nodes driven by name through a plain Session.
TEST(SaverTest, SessionByName) {
  Model m;
  Saver saver(m.root);
  GlobalVariablesInitializer(m.root);
  GraphDef gdef;
  ASSERT_OK(m.root.ToGraphDef(&gdef));
  auto session = NewSession();
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(gdef));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {}, {"init"}, &out));
  Saver by_def(saver.saver_def());
  ASSERT_OK(by_def.status());
  const std::string dir = MakeTempDir();
  auto path = by_def.Save(session->get(), dir + "/s", 1);
  ASSERT_OK(path.status());
  ASSERT_OK((*session)->Run({}, {}, {"init"}, &out));
  ASSERT_OK(by_def.Restore(session->get(), *path));
  ASSERT_OK((*session)->Run({}, {"dense/bias/Read:0"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({-2, -2, -2}));
  EXPECT_EQ(*LatestCheckpoint(dir), dir + "/s-1");
}

}  // namespace
}  // namespace runnel::training
