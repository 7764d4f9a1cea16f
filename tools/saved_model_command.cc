// `runnel run SAVED_MODEL_DIR` and `runnel inspect SAVED_MODEL_DIR`.
//
// A signature is run by its keys, as TF Serving and saved_model_cli do:
//   runnel run DIR [--tag serve]... [--signature serving_default]
//              --input x=1 [--json]
// The input's VALUE is parsed as `--feed` values are (tools/feed_parser.h),
// with the dtype and declared shape of the signature's TensorInfo, so for a
// signature taking float [1] `x=1` is the tensor [1.0]; outputs print by
// key. `inspect DIR` lists what there is to run.
//
// Note [SavedModel checkpoint ops]
// A SavedModel carries its own saver: TF 1 as save/SaveV2 and
// save/RestoreV2 nodes, TF 2 as library functions (__inference__traced_save
// and _restore) holding SaveV2, MergeV2Checkpoints and RestoreV2. In
// untrusted mode (the default of `run`), LoadSavedModel fixes the saver's
// filename to DIR/variables/variables and allows exactly the checkpoint
// ops whose paths derive from it (Note [Paths derived from trusted roots]
// in runnel/runtime/untrusted_paths.h), so a model can read and write only
// its own variables; a checkpoint op with a path of the model's choosing,
// and every other I/O op (file readers, WriteFile, ...), is refused at
// load, and steps have untrusted mode's time bound.
#include "tools/saved_model_command.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "runnel/base/json.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/training/meta_graph.h"
#include "tools/feed_parser.h"
#include "tools/tensor_output.h"

namespace runnel {
namespace {

using training::SavedModelBundle;

// "[?, 3]", "[]" (a scalar) or "<unknown rank>".
std::string ShapeText(const TensorShapeProto& p) {
  if (p.unknown_rank()) return "<unknown rank>";
  std::vector<std::string> dims;
  for (const auto& d : p.dim())
    dims.push_back(d.size() < 0 ? "?" : absl::StrCat(d.size()));
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

std::string TensorInfoText(const TensorInfo& info) {
  std::string where;
  if (info.encoding_case() == TensorInfo::kName) {
    where = info.name();
  } else if (info.encoding_case() == TensorInfo::kCooSparse) {
    where = absl::StrCat("sparse: ", info.coo_sparse().values_tensor_name());
  } else {
    where = "composite tensor (not supported)";
  }
  return absl::StrCat(DataTypeString(info.dtype()), " ",
                      ShapeText(info.tensor_shape()), " (", where, ")");
}

// A signature's method, inputs and outputs, each line indented by `indent`.
void PrintSignature(std::ostream& os, const std::string& indent,
                    const std::string& key, const SignatureDef& sig) {
  os << indent << "signature '" << key << "'"
     << (sig.method_name().empty() ? ""
                                   : absl::StrCat(" (", sig.method_name(), ")"))
     << ":\n";
  const std::map<std::string, TensorInfo> in(sig.inputs().begin(),
                                             sig.inputs().end());
  const std::map<std::string, TensorInfo> out(sig.outputs().begin(),
                                              sig.outputs().end());
  os << indent << "  inputs:" << (in.empty() ? " none" : "") << "\n";
  for (const auto& [k, info] : in)
    os << indent << "    " << k << ": " << TensorInfoText(info) << "\n";
  os << indent << "  outputs:" << (out.empty() ? " none" : "") << "\n";
  for (const auto& [k, info] : out)
    os << indent << "    " << k << ": " << TensorInfoText(info) << "\n";
}

void PrintSignatures(std::ostream& os, const std::string& indent,
                     const MetaGraphDef& mgd) {
  const std::vector<std::string> keys = training::SignatureKeys(mgd);
  if (keys.empty()) os << indent << "(no signatures)\n";
  for (const std::string& key : keys)
    PrintSignature(os, indent, key, mgd.signature_def().at(key));
}

std::string TagsText(const google::protobuf::RepeatedPtrField<std::string>& t) {
  std::vector<std::string> v(t.begin(), t.end());
  std::sort(v.begin(), v.end());
  return absl::StrCat("{", absl::StrJoin(v, ", "), "}");
}

}  // namespace

Status RunSavedModel(const SavedModelRunFlags& flags) {
  std::set<std::string> tags = flags.tags;
  if (tags.empty()) tags = {training::kSavedModelTagServe};
  SessionOptions options;
  options.config = flags.config;
  options.untrusted = flags.untrusted;  // Note [SavedModel checkpoint ops].
  SavedModelBundle bundle;
  RETURN_IF_ERROR(training::LoadSavedModel(options, flags.dir, tags, &bundle));
  const MetaGraphDef& mgd = bundle.meta_graph_def;
  const auto sig = mgd.signature_def().find(flags.signature);
  if (sig == mgd.signature_def().end() ||
      flags.signature == training::kSavedModelInitOpSignatureKey) {
    // RunSignature's NotFound, and what each signature takes and gives.
    std::map<std::string, Tensor> unused;
    Status s = training::RunSignature(bundle, flags.signature, {}, &unused);
    std::ostringstream list;
    PrintSignatures(list, "  ", mgd);
    return Status(s.code(),
                  absl::StrCat(s.message(), "\nsignatures of ", flags.dir,
                               " (tags {", absl::StrJoin(tags, ", "), "}):\n",
                               absl::StripTrailingAsciiWhitespace(list.str())));
  }
  std::map<std::string, Tensor> inputs;
  for (const auto& [key, text] : flags.inputs) {
    if (inputs.count(key) > 0) {
      return errors::InvalidArgument("--input '", key, "' is given twice");
    }
    auto info = sig->second.inputs().find(key);
    if (info == sig->second.inputs().end()) {
      // RunSignature names the signature's inputs.
      inputs[key] = Tensor();
      continue;
    }
    PartialTensorShape declared;
    if (auto s = PartialTensorShape::FromProto(info->second.tensor_shape());
        s.ok()) {
      declared = *s;
    }
    auto t = ParseFeedValue(text, info->second.dtype(), declared);
    if (!t.ok()) {
      return errors::Prefix(t.status(), absl::StrCat("input '", key, "': "));
    }
    inputs[key] = std::move(*t);
  }
  RunOptions run_options;
  run_options.set_timeout_in_ms(flags.timeout_ms);
  std::map<std::string, Tensor> outputs;
  RETURN_IF_ERROR(training::RunSignature(run_options, bundle, flags.signature,
                                         inputs, &outputs));
  if (flags.json) {
    std::vector<std::string> parts;
    for (const auto& [key, t] : outputs)
      parts.push_back(absl::StrCat(JsonString(key), ": ", JsonTensor(t)));
    std::cout << "{" << absl::StrJoin(parts, ", ") << "}\n";
  } else {
    for (const auto& [key, t] : outputs)
      std::cout << TensorLine(key, t) << "\n";
  }
  return absl::OkStatus();
}

Status InspectSavedModel(const std::string& dir) {
  SavedModel sm;
  RETURN_IF_ERROR(training::ReadSavedModel(dir, &sm));
  std::cout << "SavedModel " << dir << ": " << sm.meta_graphs_size()
            << " meta graph(s)\n";
  for (const MetaGraphDef& m : sm.meta_graphs()) {
    std::cout << "\nmeta graph with tags " << TagsText(m.meta_info_def().tags())
              << ": " << m.graph_def().node_size() << " nodes, "
              << m.graph_def().library().function_size() << " functions\n";
    PrintSignatures(std::cout, "  ", m);
    // TF 2's object graph: what the saved program tracked, by path.
    ASSIGN_OR_RETURN(std::vector<training::SavedObjectInfo> objects,
                     training::ListSavedObjects(m));
    if (!objects.empty()) std::cout << "  objects:\n";
    for (const training::SavedObjectInfo& o : objects) {
      std::cout << "    " << o.path << ": "
                << (o.kind.empty() ? "(no kind)" : o.kind)
                << (o.detail.empty() ? "" : " " + o.detail) << "\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace runnel
