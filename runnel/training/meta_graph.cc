#include "runnel/training/meta_graph.h"

#include <algorithm>
#include <deque>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"
#include "runnel/framework/op.h"
#include "runnel/graph/tensor_id.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/training/layers.h"

namespace runnel::training {
namespace {

// Keeps text-format parse errors for the Status (instead of logging them).
struct TextErrors : google::protobuf::io::ErrorCollector {
  void AddError(int line, int column, const std::string& msg) override {
    if (message.empty()) {
      message = absl::StrCat(line + 1, ":", column + 1, ": ", msg);
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string message;
};

// Parses `bytes` as binary, else as text (`text_first` tries text first).
// Unknown text fields are skipped (newer TF protos have more).
Status ParseProtoFile(const std::string& path, const std::string& bytes,
                      bool text_first, google::protobuf::Message* msg) {
  auto binary = [&] { return msg->ParseFromString(bytes); };
  TextErrors errs;
  auto text = [&] {
    google::protobuf::TextFormat::Parser parser;
    parser.AllowUnknownField(true);
    parser.RecordErrorsTo(&errs);
    msg->Clear();
    return parser.ParseFromString(bytes, msg);
  };
  if (text_first ? (text() || binary()) : (binary() || text())) {
    return absl::OkStatus();
  }
  return errors::DataLoss(path, " is not a ", msg->GetTypeName(),
                          " (binary or text; text error: ", errs.message, ")");
}

bool LooksLikeText(const std::string& path) {
  return absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".txt") ||
         absl::EndsWith(path, ".pbtext");
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return absl::StrCat(a, a.back() == '/' ? "" : "/", b);
}

// VariableDef of a resource variable as TF 1.x records it.
VariableDef ToVariableDef(const Variable& v) {
  VariableDef d;
  d.set_variable_name(v.handle().name());
  d.set_initializer_name(v.initializer().name());
  d.set_snapshot_name(v.value().name());
  const Operation init = v.initializer();
  if (init.num_inputs() > 1) d.set_initial_value_name(init.input(1).name());
  d.set_is_resource(true);
  d.set_trainable(v.trainable());
  return d;
}

// The op the SavedModel asks to run after restoring, or "".
StatusOr<std::string> InitOpName(const MetaGraphDef& mgd) {
  auto sig = mgd.signature_def().find(kSavedModelInitOpSignatureKey);
  if (sig != mgd.signature_def().end()) {
    auto out = sig->second.outputs().find(kSavedModelInitOpSignatureKey);
    if (out != sig->second.outputs().end()) return out->second.name();
  }
  for (const char* key : {kSavedModelMainOpKey, kSavedModelLegacyInitOpKey}) {
    auto it = mgd.collection_def().find(key);
    if (it == mgd.collection_def().end()) continue;
    const auto& nodes = it->second.node_list().value();
    if (nodes.size() != 1) {
      return errors::DataLoss("SavedModel collection '", key,
                              "' should name one op, it has ", nodes.size());
    }
    return nodes[0];
  }
  return std::string();
}

// Feeds for the asset file tensors: their paths under export_dir/assets.
std::vector<std::pair<std::string, Tensor>> AssetFeeds(
    const MetaGraphDef& mgd, const std::string& export_dir) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const AssetFileDef& a : mgd.asset_file_def()) {
    feeds.push_back({a.tensor_info().name(),
                     Tensor::Scalar<tstring>(JoinPath(
                         JoinPath(export_dir, "assets"), a.filename()))});
  }
  return feeds;
}

std::string TagsString(
    const google::protobuf::RepeatedPtrField<std::string>& t) {
  std::vector<std::string> v(t.begin(), t.end());
  std::sort(v.begin(), v.end());
  return absl::StrCat("{", absl::StrJoin(v, ", "), "}");
}

}  // namespace

// ---------------------------------------------------------------------------
// Export

StatusOr<MetaGraphDef> ExportMetaGraph(const Scope& scope,
                                       const MetaGraphExportOptions& options) {
  MetaGraphDef mgd;
  RETURN_IF_ERROR(scope.ToGraphDef(mgd.mutable_graph_def()));
  auto* info = mgd.mutable_meta_info_def();
  for (const std::string& tag : options.tags) info->add_tags(tag);
  std::set<std::string> ops;
  for (const NodeDef& n : mgd.graph_def().node()) ops.insert(n.op());
  for (const std::string& op : ops) {
    const OpRegistrationData* reg = OpRegistry::Global()->LookUp(op);
    if (reg == nullptr) continue;  // Cannot happen for a built graph.
    OpDef* def = info->mutable_stripped_op_list()->add_op();
    *def = reg->op_def;
    // As TF strips them: docs are not needed to run the graph.
    def->clear_summary();
    def->clear_description();
    for (auto& a : *def->mutable_input_arg()) a.clear_description();
    for (auto& a : *def->mutable_output_arg()) a.clear_description();
    for (auto& a : *def->mutable_attr()) a.clear_description();
  }
  if (options.saver_def != nullptr)
    *mgd.mutable_saver_def() = *options.saver_def;
  if (options.variables_collections) {
    const std::vector<Variable> vars = GlobalVariables(scope);
    if (!vars.empty()) {
      auto* all = (*mgd.mutable_collection_def())[kGlobalVariablesKey]
                      .mutable_bytes_list();
      for (const Variable& v : vars) {
        all->add_value(ToVariableDef(v).SerializeAsString());
      }
      const std::vector<Variable> trainable = TrainableVariables(scope);
      if (!trainable.empty()) {
        auto* t = (*mgd.mutable_collection_def())[kTrainableVariablesKey]
                      .mutable_bytes_list();
        for (const Variable& v : trainable) {
          t->add_value(ToVariableDef(v).SerializeAsString());
        }
      }
    }
  }
  for (const auto& [key, c] : options.collections) {
    (*mgd.mutable_collection_def())[key] = c;
  }
  for (const auto& [key, s] : options.signature_defs) {
    (*mgd.mutable_signature_def())[key] = s;
  }
  return mgd;
}

Status ReadMetaGraphDef(const std::string& path, MetaGraphDef* mgd) {
  if (!FileExists(path)) return errors::NotFound("no meta graph file ", path);
  std::string bytes;
  RETURN_IF_ERROR(ReadFileToString(path, &bytes));
  return ParseProtoFile(path, bytes, LooksLikeText(path), mgd);
}

Status WriteMetaGraphDef(const std::string& path, const MetaGraphDef& mgd) {
  std::string bytes;
  if (!mgd.SerializeToString(&bytes)) {
    return errors::InvalidArgument("cannot serialize the MetaGraphDef");
  }
  return WriteStringToFileAtomically(path, bytes);
}

// ---------------------------------------------------------------------------
// Import

Status ImportMetaGraph(const MetaGraphDef& mgd, Session* session,
                       std::unique_ptr<Saver>* saver) {
  Status s = session->Create(mgd.graph_def());
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    s = session->Extend(mgd.graph_def());
  }
  RETURN_IF_ERROR(s);
  if (saver != nullptr) {
    saver->reset();
    if (mgd.has_saver_def()) {
      auto made = std::make_unique<Saver>(mgd.saver_def());
      RETURN_IF_ERROR(made->status());
      *saver = std::move(made);
    }
  }
  return absl::OkStatus();
}

StatusOr<std::vector<VariableDef>> VariablesInCollection(
    const MetaGraphDef& mgd, const std::string& key) {
  std::vector<VariableDef> out;
  auto it = mgd.collection_def().find(key);
  if (it == mgd.collection_def().end()) return out;
  for (const std::string& bytes : it->second.bytes_list().value()) {
    VariableDef d;
    if (!d.ParseFromString(bytes)) {
      return errors::DataLoss("collection '", key,
                              "' holds an entry that is not a VariableDef");
    }
    out.push_back(std::move(d));
  }
  return out;
}

// ---------------------------------------------------------------------------
// SavedModel

bool MaybeSavedModelDirectory(const std::string& export_dir) {
  return FileExists(JoinPath(export_dir, "saved_model.pb")) ||
         FileExists(JoinPath(export_dir, "saved_model.pbtxt"));
}

Status ReadSavedModel(const std::string& export_dir, SavedModel* sm) {
  const std::string pb = JoinPath(export_dir, "saved_model.pb");
  const std::string pbtxt = JoinPath(export_dir, "saved_model.pbtxt");
  std::string bytes;
  if (FileExists(pb)) {
    RETURN_IF_ERROR(ReadFileToString(pb, &bytes));
    return ParseProtoFile(pb, bytes, false, sm);
  }
  if (FileExists(pbtxt)) {
    RETURN_IF_ERROR(ReadFileToString(pbtxt, &bytes));
    return ParseProtoFile(pbtxt, bytes, true, sm);
  }
  return errors::NotFound("no SavedModel in ", export_dir,
                          " (neither saved_model.pb nor saved_model.pbtxt)");
}

StatusOr<std::vector<SavedObjectInfo>> ListSavedObjects(
    const MetaGraphDef& mgd) {
  std::vector<SavedObjectInfo> out;
  if (!mgd.has_object_graph_def()) return out;
  const SavedObjectGraph& og = mgd.object_graph_def();
  const int n = og.nodes_size();
  auto bad = [](int id, const std::string& what) {
    return errors::InvalidArgument("SavedModel object graph: object ", id, " ",
                                   what);
  };
  auto check_id = [&](int id, int of, const char* what) -> Status {
    if (of < 0 || of >= n) {
      return bad(id, absl::StrCat("names ", what, " ", of, ", but there are ",
                                  n, " objects"));
    }
    return absl::OkStatus();
  };
  absl::flat_hash_set<std::string> library;
  for (const FunctionDef& f : mgd.graph_def().library().function()) {
    library.insert(f.signature().name());
  }
  auto check_function = [&](int id, const std::string& name) -> Status {
    if (!og.concrete_functions().contains(name) || !library.contains(name)) {
      return bad(id, absl::StrCat("names concrete function '", name,
                                  "', which the object graph or the graph's "
                                  "library lacks"));
    }
    for (int b : og.concrete_functions().at(name).bound_inputs()) {
      RETURN_IF_ERROR(check_id(id, b, "bound input"));
    }
    return absl::OkStatus();
  };
  out.resize(n);
  for (int id = 0; id < n; ++id) {
    const SavedObject& o = og.nodes(id);
    SavedObjectInfo& info = out[id];
    info.node_id = id;
    for (const SavedObjectReference& c : o.children()) {
      RETURN_IF_ERROR(check_id(id, c.node_id(), "child"));
    }
    for (const SavedSlotVariableReference& r : o.slot_variables()) {
      RETURN_IF_ERROR(check_id(id, r.original_variable_node_id(), "variable"));
      RETURN_IF_ERROR(check_id(id, r.slot_variable_node_id(), "slot variable"));
    }
    switch (o.kind_case()) {
      case SavedObject::kUserObject:
        info.kind = "user_object";
        info.detail = o.user_object().identifier();
        break;
      case SavedObject::kVariable: {
        info.kind = "variable";
        StatusOr<PartialTensorShape> shape =
            PartialTensorShape::FromProto(o.variable().shape());
        if (!shape.ok()) return bad(id, "has a bad variable shape");
        info.detail =
            absl::StrCat(DataTypeString(o.variable().dtype()), " ",
                         shape->DebugString(), " '", o.variable().name(), "'",
                         o.variable().trainable() ? "" : " (not trainable)");
        break;
      }
      case SavedObject::kFunction: {
        info.kind = "function";
        for (const std::string& f : o.function().concrete_functions()) {
          RETURN_IF_ERROR(check_function(id, f));
        }
        info.detail = absl::StrJoin(o.function().concrete_functions(), ", ");
        break;
      }
      case SavedObject::kBareConcreteFunction:
        info.kind = "bare_concrete_function";
        RETURN_IF_ERROR(check_function(
            id, o.bare_concrete_function().concrete_function_name()));
        info.detail = o.bare_concrete_function().concrete_function_name();
        break;
      case SavedObject::kAsset: {
        info.kind = "asset";
        const int a = o.asset().asset_file_def_index();
        if (a < 0 || a >= mgd.asset_file_def_size()) {
          return bad(id, absl::StrCat("names asset ", a, ", but there are ",
                                      mgd.asset_file_def_size()));
        }
        info.detail = mgd.asset_file_def(a).filename();
        break;
      }
      case SavedObject::kConstant:
        info.kind = "constant";
        info.detail = o.constant().operation();
        break;
      case SavedObject::kResource:
        info.kind = "resource";
        info.detail = o.resource().device();
        break;
      case SavedObject::kCapturedTensor:
        info.kind = "captured_tensor";
        info.detail = o.captured_tensor().name();
        break;
      case SavedObject::KIND_NOT_SET:
        break;
    }
  }
  // Paths: breadth first from the root, so each object gets its shortest.
  if (n > 0) out[0].path = "root";
  std::deque<int> queue{0};
  while (n > 0 && !queue.empty()) {
    const int id = queue.front();
    queue.pop_front();
    for (const SavedObjectReference& c : og.nodes(id).children()) {
      if (!out[c.node_id()].path.empty()) continue;
      out[c.node_id()].path = absl::StrCat(out[id].path, ".", c.local_name());
      queue.push_back(c.node_id());
    }
  }
  for (SavedObjectInfo& info : out) {
    if (info.path.empty()) info.path = absl::StrCat("#", info.node_id);
  }
  return out;
}

namespace {

// Makes the node of mgd's saver filename tensor a Const holding `path`
// (keeping its name and device); returns the node's name.
// InvalidArgument if the tensor is not output 0 of a Placeholder or Const
// string node of the graph.
StatusOr<std::string> FixSaverFilename(const std::string& path,
                                       MetaGraphDef* mgd) {
  const std::string& tensor = mgd->saver_def().filename_tensor_name();
  ASSIGN_OR_RETURN(TensorId id, ParseTensorName(tensor));
  for (NodeDef& n : *mgd->mutable_graph_def()->mutable_node()) {
    if (n.name() != id.node) continue;
    if (id.index != 0 || (n.op() != "Placeholder" && n.op() != "Const")) {
      return errors::InvalidArgument(
          "the saver's filename tensor '", tensor,
          "' is not a Placeholder or Const node's output; refused in "
          "untrusted mode");
    }
    NodeDef fixed;
    fixed.set_name(n.name());
    fixed.set_op("Const");
    fixed.set_device(n.device());
    (*fixed.mutable_attr())["dtype"].set_type(DT_STRING);
    TensorProto* value = (*fixed.mutable_attr())["value"].mutable_tensor();
    value->set_dtype(DT_STRING);
    value->mutable_tensor_shape();
    value->add_string_val(path);
    n = std::move(fixed);
    return id.node;
  }
  return errors::InvalidArgument("the saver's filename tensor '", tensor,
                                 "' names no node of the graph");
}

}  // namespace

Status LoadSavedModel(const SessionOptions& options,
                      const std::string& export_dir,
                      const std::set<std::string>& tags,
                      SavedModelBundle* bundle) {
  // 1. The SavedModel proto.
  SavedModel sm;
  RETURN_IF_ERROR(ReadSavedModel(export_dir, &sm));
  // 2. The meta graph with exactly these tags.
  const MetaGraphDef* found = nullptr;
  std::vector<std::string> available;
  for (const MetaGraphDef& m : sm.meta_graphs()) {
    const auto& t = m.meta_info_def().tags();
    if (std::set<std::string>(t.begin(), t.end()) == tags) {
      found = &m;
      break;
    }
    available.push_back(TagsString(t));
  }
  if (found == nullptr) {
    return errors::NotFound(
        "SavedModel ", export_dir, " has no meta graph with tags {",
        absl::StrJoin(tags, ", "), "}; it has ",
        available.empty() ? "none" : absl::StrJoin(available, " "));
  }
  const std::string variables =
      JoinPath(JoinPath(export_dir, "variables"), "variables");
  RETURN_IF_ERROR(ListSavedObjects(*found).status());
  // 3. Session and graph; untrusted, the saver's path is fixed to ours.
  MetaGraphDef mgd = *found;
  SessionOptions session_options = options;
  if (options.untrusted && mgd.has_saver_def()) {
    ASSIGN_OR_RETURN(std::string root, FixSaverFilename(variables, &mgd));
    session_options.io_path_roots.push_back(std::move(root));
  }
  found = &mgd;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   NewSession(session_options));
  std::unique_ptr<Saver> saver;
  RETURN_IF_ERROR(ImportMetaGraph(*found, session.get(), &saver));
  // 4. Variables.
  const auto assets = AssetFeeds(*found, export_dir);
  if (saver != nullptr && CheckpointExists(variables)) {
    std::vector<std::pair<std::string, Tensor>> feeds = assets;
    feeds.push_back({found->saver_def().filename_tensor_name(),
                     Tensor::Scalar<tstring>(variables)});
    std::vector<Tensor> out;
    RETURN_IF_ERROR(
        session->Run(feeds, {}, {found->saver_def().restore_op_name()}, &out));
  }
  // 5. The init op.
  ASSIGN_OR_RETURN(std::string init_op, InitOpName(*found));
  if (!init_op.empty()) {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session->Run(assets, {}, {init_op}, &out));
  }
  bundle->session = std::move(session);
  bundle->meta_graph_def = *found;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Signatures

std::vector<std::string> SignatureKeys(const MetaGraphDef& mgd) {
  std::vector<std::string> keys;
  for (const auto& [key, sig] : mgd.signature_def()) {
    if (key != kSavedModelInitOpSignatureKey) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

Status RunSignature(const SavedModelBundle& bundle,
                    const std::string& signature_key,
                    const std::map<std::string, Tensor>& inputs,
                    std::map<std::string, Tensor>* outputs) {
  return RunSignature(RunOptions(), bundle, signature_key, inputs, outputs);
}

Status RunSignature(const RunOptions& run_options,
                    const SavedModelBundle& bundle,
                    const std::string& signature_key,
                    const std::map<std::string, Tensor>& inputs,
                    std::map<std::string, Tensor>* outputs) {
  const MetaGraphDef& mgd = bundle.meta_graph_def;
  auto sig_it = mgd.signature_def().find(signature_key);
  if (sig_it == mgd.signature_def().end() ||
      signature_key == kSavedModelInitOpSignatureKey) {
    const std::vector<std::string> keys = SignatureKeys(mgd);
    return errors::NotFound(
        "no signature '", signature_key, "' in the SavedModel; it has ",
        keys.empty() ? "none"
                     : absl::StrCat("'", absl::StrJoin(keys, "', '"), "'"));
  }
  const SignatureDef& sig = sig_it->second;
  // The signature's input keys, sorted (protobuf maps are not).
  std::vector<std::string> expected;
  for (const auto& [key, info] : sig.inputs()) expected.push_back(key);
  std::sort(expected.begin(), expected.end());
  auto inputs_error = [&](const std::string& what) {
    return errors::InvalidArgument(
        "signature '", signature_key, "': ", what, "; its inputs are ",
        expected.empty()
            ? "none"
            : absl::StrCat("'", absl::StrJoin(expected, "', '"), "'"));
  };
  auto tensor_name = [&](const char* kind, const std::string& key,
                         const TensorInfo& info) -> StatusOr<std::string> {
    if (info.encoding_case() != TensorInfo::kName || info.name().empty()) {
      return errors::Unimplemented(
          "signature '", signature_key, "': ", kind, " '", key,
          "' is not a dense tensor (sparse and composite tensors are not "
          "supported)");
    }
    return info.name();
  };
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [key, value] : inputs) {
    auto info = sig.inputs().find(key);
    if (info == sig.inputs().end()) {
      return inputs_error(absl::StrCat("no input '", key, "'"));
    }
    if (info->second.dtype() != DT_INVALID &&
        value.dtype() != info->second.dtype()) {
      return errors::InvalidArgument("signature '", signature_key, "': input '",
                                     key, "' must be ",
                                     DataTypeString(info->second.dtype()),
                                     ", got ", DataTypeString(value.dtype()));
    }
    ASSIGN_OR_RETURN(std::string name, tensor_name("input", key, info->second));
    feeds.emplace_back(std::move(name), value);
  }
  for (const std::string& key : expected) {
    if (inputs.count(key) == 0) {
      return inputs_error(absl::StrCat("input '", key, "' is missing"));
    }
  }
  std::vector<std::string> keys, fetches;
  for (const auto& [key, info] : sig.outputs()) {
    ASSIGN_OR_RETURN(std::string name, tensor_name("output", key, info));
    keys.push_back(key);
    fetches.push_back(std::move(name));
  }
  std::vector<Tensor> values;
  RETURN_IF_ERROR(
      bundle.session->Run(run_options, feeds, fetches, {}, &values, nullptr));
  outputs->clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    (*outputs)[keys[i]] = std::move(values[i]);
  }
  return absl::OkStatus();
}

}  // namespace runnel::training
