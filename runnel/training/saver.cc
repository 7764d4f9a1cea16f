#include "runnel/training/saver.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {
namespace {

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string JoinPath(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || dir.empty() || dir == ".") return path;
  return absl::StrCat(dir, dir.back() == '/' ? "" : "/", path);
}

double NowSeconds() { return static_cast<double>(WallMicros()) / 1e6; }

std::string RandomHex() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(NowNanos());
  return absl::StrFormat("%016x", v);
}

// Reads the dtype and static shape of a variable node's output.
Status DescribeVariable(const std::string& key, const Output& var,
                        DataType* dtype, PartialTensorShape* shape,
                        bool* is_resource) {
  if (var.node() == nullptr) {
    return errors::InvalidArgument("Saver: variable '", key, "' is null");
  }
  const std::string& op = var.node()->type_string();
  if (op == "VariableV2" || op == "Variable") {
    *is_resource = false;
  } else if (op == "VarHandleOp") {
    *is_resource = true;
  } else {
    return errors::InvalidArgument(
        "Saver: '", key, "' is output ", var.index(), " of ", op, " node '",
        var.node()->name(), "', not a variable (VariableV2 or VarHandleOp)");
  }
  RETURN_IF_ERROR(GetAttr(var.node()->attrs(), "dtype", dtype));
  RETURN_IF_ERROR(GetAttr(var.node()->attrs(), "shape", shape));
  return absl::OkStatus();
}

// Keeps text-format parse errors for the Status (instead of logging them).
struct TextErrors : google::protobuf::io::ErrorCollector {
  void AddError(int line, int column, const std::string& msg) override {
    if (message.empty())
      message = absl::StrCat(line + 1, ":", column + 1, ": ", msg);
  }
  std::string message;
};

}  // namespace

// ---------------------------------------------------------------------------
// Checkpoint files and the state file

bool CheckpointExists(const std::string& prefix) {
  return FileExists(MetaFilename(prefix));
}

void DeleteCheckpoint(const std::string& prefix) {
  ::unlink(MetaFilename(prefix).c_str());
  ::unlink(absl::StrCat(prefix, ".meta").c_str());
  const std::string data_start = Basename(prefix) + ".data-";
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(Dirname(prefix), ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, data_start)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

Status GetCheckpointState(const std::string& dir, CheckpointState* state,
                          const std::string& latest_filename) {
  const std::string path = JoinPath(dir, latest_filename);
  std::string text;
  if (!FileExists(path)) {
    return errors::NotFound("no checkpoint state file ", path);
  }
  RETURN_IF_ERROR(ReadFileToString(path, &text));
  CheckpointState parsed;
  TextErrors errors_seen;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors_seen);
  if (!parser.ParseFromString(text, &parsed)) {
    return errors::DataLoss(
        "checkpoint state file ", path,
        " is not a text CheckpointState: ", errors_seen.message);
  }
  if (!parsed.model_checkpoint_path().empty()) {
    parsed.set_model_checkpoint_path(
        JoinPath(dir, parsed.model_checkpoint_path()));
  }
  for (std::string& p : *parsed.mutable_all_model_checkpoint_paths()) {
    p = JoinPath(dir, p);
  }
  *state = std::move(parsed);
  return absl::OkStatus();
}

Status UpdateCheckpointState(const std::string& dir,
                             const CheckpointState& state,
                             const std::string& latest_filename) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return errors::Internal("cannot print the checkpoint state");
  }
  return WriteStringToFileAtomically(JoinPath(dir, latest_filename), text);
}

StatusOr<std::string> LatestCheckpoint(const std::string& dir,
                                       const std::string& latest_filename) {
  CheckpointState state;
  RETURN_IF_ERROR(GetCheckpointState(dir, &state, latest_filename));
  const std::string& path = state.model_checkpoint_path();
  if (path.empty()) {
    return errors::NotFound("the checkpoint state file in ", dir,
                            " names no checkpoint");
  }
  if (!CheckpointExists(path)) {
    return errors::NotFound("checkpoint ", path, " named by the state file in ",
                            dir, " does not exist");
  }
  return path;
}

// ---------------------------------------------------------------------------
// Saver construction

Saver::Saver(const Scope& scope, const SaverOptions& options)
    : Saver(scope, GlobalVariables(scope), options) {}

Saver::Saver(const Scope& scope, const std::vector<Variable>& vars,
             const SaverOptions& options) {
  std::vector<Saveable> saveables;
  for (const Variable& v : vars) {
    if (!v.ok()) {
      status_ = errors::InvalidArgument("Saver: a variable is null");
      scope.UpdateStatus(status_);
      return;
    }
    saveables.push_back({v.name(), v.handle(), v.dtype(),
                         PartialTensorShape(v.shape()), v.value()});
  }
  Build(scope, std::move(saveables), options);
}

Saver::Saver(const Scope& scope, const std::map<std::string, Output>& vars,
             const SaverOptions& options) {
  std::vector<Saveable> saveables;
  for (const auto& [key, var] : vars) {
    Saveable s{key, var, DT_INVALID, PartialTensorShape(), Output()};
    bool is_resource = false;
    status_ = DescribeVariable(key, var, &s.dtype, &s.shape, &is_resource);
    if (!status_.ok()) {
      scope.UpdateStatus(status_);
      return;
    }
    saveables.push_back(std::move(s));
  }
  Build(scope, std::move(saveables), options);
}

Saver::Saver(const SaverDef& saver_def) : def_(saver_def) {
  if (def_.version() != SaverDef::V2) {
    status_ = errors::Unimplemented(
        "Saver: only V2 checkpoints are supported, the SaverDef has version ",
        SaverDef::CheckpointFormatVersion_Name(def_.version()));
  } else if (def_.filename_tensor_name().empty() ||
             def_.save_tensor_name().empty() ||
             def_.restore_op_name().empty()) {
    status_ = errors::InvalidArgument(
        "Saver: the SaverDef lacks tensor or op names: ",
        def_.ShortDebugString());
  }
  last_preserved_time_ = NowSeconds();
}

void Saver::Build(const Scope& scope, std::vector<Saveable> saveables,
                  const SaverOptions& options) {
  last_preserved_time_ = NowSeconds();
  def_.set_max_to_keep(options.max_to_keep);
  def_.set_keep_checkpoint_every_n_hours(
      static_cast<float>(options.keep_checkpoint_every_n_hours));
  def_.set_sharded(true);
  def_.set_version(SaverDef::V2);
  status_ = scope.status();
  if (!status_.ok()) return;
  if (saveables.empty()) {
    status_ = errors::InvalidArgument("Saver: no variables to save");
  }
  std::sort(
      saveables.begin(), saveables.end(),
      [](const Saveable& a, const Saveable& b) { return a.name < b.name; });
  for (size_t i = 1; status_.ok() && i < saveables.size(); ++i) {
    if (saveables[i].name == saveables[i - 1].name) {
      status_ = errors::InvalidArgument("Saver: two variables are named '",
                                        saveables[i].name, "'");
    }
  }
  if (status_.ok()) {
    status_ = AddSaveAndRestore(
        scope.WithNoControlDependencies().NewSubScope(options.name), saveables);
  }
  if (!status_.ok()) {
    scope.UpdateStatus(status_);
    return;
  }
  saveables_ = std::move(saveables);
}

// Builds Note [Saver graph].
Status Saver::AddSaveAndRestore(const Scope& s,
                                std::vector<Saveable>& saveables) {
  // Shards: the variables of each requested device, devices sorted.
  std::map<std::string, std::vector<Saveable*>> shards;
  for (Saveable& v : saveables) {
    shards[v.var.node()->requested_device()].push_back(&v);
  }
  const int num_shards = static_cast<int>(shards.size());

  filename_ = ops::Const(s.WithOpName("Const"), std::string("model"));
  Output tmp;
  {
    NodeBuilder b(s, "StringJoin");
    b.Input(
        InputList{filename_, std::string("_temp_" + RandomHex() + "/part")});
    Operation op;
    RETURN_IF_ERROR(b.Finalize(&op));
    tmp = op.output(0);
  }
  const Output n = ops::Const(s.WithOpName("num_shards"), num_shards);
  std::vector<Output> shard_files;
  std::vector<Operation> restores, assigns;
  std::vector<std::pair<Saveable*, Output>> restored;
  int shard = 0;
  for (auto& [device, vars] : shards) {
    const Scope ds = s.WithDevice(device);
    auto file = ops::ShardedFilename(ds, tmp, shard++, n);
    std::vector<std::string> names;
    std::vector<DataType> dtypes;
    std::vector<Input> values;
    for (Saveable* v : vars) {
      names.push_back(v->name);
      dtypes.push_back(v->dtype);
      if (v->value.node() == nullptr) {
        v->value = v->var.type() == DT_RESOURCE
                       ? Output(ops::ReadVariableOp(ds, v->var, v->dtype))
                       : v->var;
      }
      values.push_back(v->value);
    }
    const Tensor names_t = Tensor::FromVector<tstring>(names);
    const Tensor slices_t =
        Tensor::FromVector<tstring>(std::vector<tstring>(names.size()));
    Operation save;
    RETURN_IF_ERROR(NodeBuilder(ds, "SaveV2")
                        .Input(file)
                        .Input(names_t)
                        .Input(slices_t)
                        .Input(InputList(values))
                        .Finalize(&save));
    shard_files.push_back(ops::Identity(
        ds.WithOpName("control_dependency").WithControlDependencies(save),
        file));
    Operation restore;
    RETURN_IF_ERROR(NodeBuilder(ds, "RestoreV2")
                        .Input(filename_)
                        .Input(names_t)
                        .Input(slices_t)
                        .Attr("dtypes", absl::MakeConstSpan(dtypes))
                        .Finalize(&restore));
    restores.push_back(restore);
    for (size_t i = 0; i < vars.size(); ++i) {
      restored.push_back({vars[i], restore.output(static_cast<int>(i))});
    }
  }
  auto packed = ops::Pack(s, shard_files);
  auto merge = ops::MergeV2Checkpoints(s, packed, filename_);
  save_tensor_ = ops::Identity(
      s.WithOpName("Identity").WithControlDependencies(merge.operation),
      filename_);

  // Every assign waits for every read (Note [Atomic restore]).
  auto barrier = ops::NoOp(
      s.WithOpName("restore_barrier").WithControlDependencies(restores));
  const Scope as = s.WithControlDependencies(barrier.operation);
  for (auto& [v, value] : restored) {
    const Scope vs = as.ColocateWith(v->var.op());
    if (v->var.type() == DT_RESOURCE) {
      assigns.push_back(ops::AssignVariableOp(vs, v->var, value).operation);
    } else {
      assigns.push_back(ops::Assign(vs, v->var, value).operation);
    }
  }
  restore_op_ =
      ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns))
          .operation;
  RETURN_IF_ERROR(s.status());
  def_.set_filename_tensor_name(filename_.name());
  def_.set_save_tensor_name(save_tensor_.name());
  def_.set_restore_op_name(restore_op_.name());
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Save and restore

std::string Saver::CheckpointPath(const std::string& prefix,
                                  int64_t global_step) const {
  return global_step >= 0 ? absl::StrCat(prefix, "-", global_step) : prefix;
}

StatusOr<std::string> Saver::Save(ClientSession* session,
                                  const std::string& prefix,
                                  int64_t global_step, bool write_state) {
  RETURN_IF_ERROR(status_);
  if (filename_.node() == nullptr) {
    return errors::FailedPrecondition(
        "Saver: made from a SaverDef; save with a Session");
  }
  if (prefix.empty()) return errors::InvalidArgument("Saver: empty prefix");
  const std::string path = CheckpointPath(prefix, global_step);
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run(
      {{filename_, Input::Initializer(Tensor::Scalar<tstring>(path))}},
      {save_tensor_}, &out));
  if (write_state) RETURN_IF_ERROR(RecordCheckpoint(path));
  return path;
}

StatusOr<std::string> Saver::Save(Session* session, const std::string& prefix,
                                  int64_t global_step, bool write_state) {
  RETURN_IF_ERROR(status_);
  if (prefix.empty()) return errors::InvalidArgument("Saver: empty prefix");
  const std::string path = CheckpointPath(prefix, global_step);
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run(
      {{def_.filename_tensor_name(), Tensor::Scalar<tstring>(path)}},
      {def_.save_tensor_name()}, {}, &out));
  if (write_state) RETURN_IF_ERROR(RecordCheckpoint(path));
  return path;
}

Status Saver::CheckCheckpointMatches(const std::string& prefix) const {
  if (!CheckpointExists(prefix)) {
    return errors::NotFound("Saver: no checkpoint at ", prefix, " (",
                            MetaFilename(prefix), " does not exist)");
  }
  BundleReader reader(prefix);
  RETURN_IF_ERROR(reader.status());
  for (const Saveable& v : saveables_) {
    DataType dtype;
    TensorShape shape;
    RETURN_IF_ERROR(reader.LookupDtypeAndShape(v.name, &dtype, &shape));
    if (dtype != v.dtype) {
      return errors::InvalidArgument(
          "Saver: variable '", v.name, "' is ", DataTypeString(v.dtype),
          " but checkpoint ", prefix, " holds ", DataTypeString(dtype));
    }
    if (!v.shape.IsCompatibleWith(shape)) {
      return errors::InvalidArgument(
          "Saver: variable '", v.name, "' has shape ", v.shape.DebugString(),
          " but checkpoint ", prefix, " holds shape ", shape.DebugString());
    }
  }
  return absl::OkStatus();
}

Status Saver::Restore(ClientSession* session, const std::string& prefix) {
  RETURN_IF_ERROR(status_);
  if (restore_op_.node() == nullptr) {
    return errors::FailedPrecondition(
        "Saver: made from a SaverDef; restore with a Session");
  }
  RETURN_IF_ERROR(CheckCheckpointMatches(prefix));
  std::vector<Tensor> out;
  return session->Run(
      {{filename_, Input::Initializer(Tensor::Scalar<tstring>(prefix))}}, {},
      {restore_op_}, &out);
}

Status Saver::Restore(Session* session, const std::string& prefix) {
  RETURN_IF_ERROR(status_);
  RETURN_IF_ERROR(CheckCheckpointMatches(prefix));
  std::vector<Tensor> out;
  return session->Run(
      {{def_.filename_tensor_name(), Tensor::Scalar<tstring>(prefix)}}, {},
      {def_.restore_op_name()}, &out);
}

// ---------------------------------------------------------------------------
// Bookkeeping (Note [Checkpoint state])

std::vector<std::string> Saver::last_checkpoints() const {
  std::vector<std::string> out;
  for (const auto& [path, time] : last_checkpoints_) out.push_back(path);
  return out;
}

Status Saver::RecoverLastCheckpoints(const std::string& dir) {
  CheckpointState state;
  RETURN_IF_ERROR(GetCheckpointState(dir, &state));
  last_checkpoints_.clear();
  const int n = state.all_model_checkpoint_paths_size();
  for (int i = 0; i < n; ++i) {
    const std::string& p = state.all_model_checkpoint_paths(i);
    if (!CheckpointExists(p)) continue;
    const double t = i < state.all_model_checkpoint_timestamps_size()
                         ? state.all_model_checkpoint_timestamps(i)
                         : NowSeconds();
    last_checkpoints_.push_back({p, t});
  }
  if (state.last_preserved_timestamp() > 0) {
    last_preserved_time_ = state.last_preserved_timestamp();
  }
  return absl::OkStatus();
}

Status Saver::RecordCheckpoint(const std::string& path) {
  const double now = NowSeconds();
  std::erase_if(last_checkpoints_,
                [&](const auto& p) { return p.first == path; });
  last_checkpoints_.push_back({path, now});
  std::vector<std::string> to_delete;
  const int max_to_keep = def_.max_to_keep();
  const double keep_s =
      static_cast<double>(def_.keep_checkpoint_every_n_hours()) * 3600.0;
  while (max_to_keep > 0 &&
         static_cast<int>(last_checkpoints_.size()) > max_to_keep) {
    const auto [old_path, old_time] = last_checkpoints_.front();
    last_checkpoints_.erase(last_checkpoints_.begin());
    if (keep_s > 0 && old_time - last_preserved_time_ >= keep_s) {
      last_preserved_time_ = old_time;  // Kept on disk, off the list.
    } else {
      to_delete.push_back(old_path);
    }
  }
  const std::string dir = Dirname(path);
  auto relative = [&](const std::string& p) {
    return Dirname(p) == dir ? Basename(p) : p;
  };
  CheckpointState state;
  state.set_model_checkpoint_path(relative(path));
  for (const auto& [p, t] : last_checkpoints_) {
    state.add_all_model_checkpoint_paths(relative(p));
    state.add_all_model_checkpoint_timestamps(t);
  }
  state.set_last_preserved_timestamp(last_preserved_time_);
  RETURN_IF_ERROR(UpdateCheckpointState(dir, state));
  for (const std::string& p : to_delete) {
    if (p != path) DeleteCheckpoint(p);
  }
  return absl::OkStatus();
}

}  // namespace runnel::training
