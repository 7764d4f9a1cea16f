// MetaGraphDef export/import, SavedModel loading and signatures.
//
// A MetaGraphDef (proto/meta_graph.proto, TensorFlow's field numbers) is a
// graph plus what is needed to use it again: the SaverDef naming its save
// and restore nodes, TF 1.x collections ("variables", "train_op", ...),
// signatures, and the OpDefs of the ops it uses. TensorFlow writes them as
// "model.ckpt-N.meta" beside checkpoints and inside SavedModels.
//
//   // Export (e.g. beside a checkpoint):
//   training::Saver saver(root);
//   MetaGraphExportOptions opts;
//   opts.saver_def = &saver.saver_def();
//   ASSIGN_OR_RETURN(MetaGraphDef mgd, ExportMetaGraph(root, opts));
//   RETURN_IF_ERROR(WriteMetaGraphDef("/ckpt/model.ckpt-10.meta", mgd));
//
//   // Import into a new session and restore:
//   MetaGraphDef mgd;
//   RETURN_IF_ERROR(ReadMetaGraphDef("/ckpt/model.ckpt-10.meta", &mgd));
//   ASSIGN_OR_RETURN(auto session, NewSession());
//   std::unique_ptr<Saver> saver;
//   RETURN_IF_ERROR(ImportMetaGraph(mgd, session.get(), &saver));
//   RETURN_IF_ERROR(saver->Restore(session.get(), "/ckpt/model.ckpt-10"));
//
//   // A TF1 SavedModel directory (saved_model.pb or saved_model.pbtxt,
//   // variables/variables.{index,data-*}, assets/):
//   SavedModelBundle bundle;
//   RETURN_IF_ERROR(LoadSavedModel({}, "/models/m/1", {"serve"}, &bundle));
//   bundle.session->Run({{"x:0", x}}, {"y:0"}, {}, &out);
//
//   // Or by signature (TF1 and TF2 SavedModels alike), with tensors keyed
//   // by the signature's input and output keys:
//   std::map<std::string, Tensor> outputs;
//   RETURN_IF_ERROR(RunSignature(bundle, "serving_default",
//                                {{"x", Tensor::FromVector<float>({1})}},
//                                &outputs));
//   // outputs["y"] is [2.5] for TF Serving's half_plus_two.
//
// Errors (RunSignature's are at its declaration): NotFound for missing
// files or a tag set no meta graph has (the message lists the tag sets
// there are); DataLoss for files that do not
// parse; the session's errors for graphs that do not import (unknown ops
// are NotFound naming the node) and for failed restores.
//
// Thread safety: the functions are reentrant; a SavedModelBundle's session
// is as thread-safe as any Session.
#ifndef RUNNEL_TRAINING_META_GRAPH_H_
#define RUNNEL_TRAINING_META_GRAPH_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "proto/meta_graph.pb.h"
#include "proto/saved_model.pb.h"
#include "proto/saver.pb.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/session.h"
#include "runnel/training/saver.h"

namespace runnel::training {

// TF's collection keys (tf.GraphKeys) and SavedModel constants.
inline constexpr char kGlobalVariablesKey[] = "variables";
inline constexpr char kTrainableVariablesKey[] = "trainable_variables";
inline constexpr char kSavedModelMainOpKey[] = "saved_model_main_op";
inline constexpr char kSavedModelLegacyInitOpKey[] = "legacy_init_op";
inline constexpr char kSavedModelInitOpSignatureKey[] = "__saved_model_init_op";
inline constexpr char kSavedModelAssetsKey[] = "saved_model_assets";
inline constexpr char kSavedModelTagServe[] = "serve";
inline constexpr char kSavedModelTagTrain[] = "train";

struct MetaGraphExportOptions {
  // Recorded as the MetaGraphDef's saver_def when set.
  const SaverDef* saver_def = nullptr;
  // meta_info_def.tags (for SavedModels).
  std::vector<std::string> tags;
  // Added to collection_def as given.
  std::map<std::string, CollectionDef> collections;
  std::map<std::string, SignatureDef> signature_defs;
  // Record the graph's training::Variables as TF 1.x does: VariableDef
  // protos in the "variables" and "trainable_variables" collections.
  bool variables_collections = true;
};

// Builds the MetaGraphDef of `scope`'s graph: meta_info_def (tags and
// stripped_op_list, the OpDefs of every op the graph uses), graph_def,
// saver_def, collections and signatures. Returns the scope's error if it
// has one.
StatusOr<MetaGraphDef> ExportMetaGraph(const Scope& scope,
                                       const MetaGraphExportOptions& options);

// Reads a MetaGraphDef: binary, or text when the binary parse fails (or the
// name ends in ".pbtxt"/".txt"). Text fields this build lacks are skipped.
Status ReadMetaGraphDef(const std::string& path, MetaGraphDef* mgd);
// Writes it in binary, atomically.
Status WriteMetaGraphDef(const std::string& path, const MetaGraphDef& mgd);

// Puts mgd.graph_def into `session` (Create, or Extend if the session
// already has a graph). If `saver` is non-null it gets a Saver over the
// meta graph's saver_def, or null when there is none.
Status ImportMetaGraph(const MetaGraphDef& mgd, Session* session,
                       std::unique_ptr<Saver>* saver);

// The VariableDefs of a bytes_list collection ("variables",
// "trainable_variables"); DataLoss if one does not parse.
StatusOr<std::vector<VariableDef>> VariablesInCollection(
    const MetaGraphDef& mgd, const std::string& key);

struct SavedModelBundle {
  std::unique_ptr<Session> session;
  MetaGraphDef meta_graph_def;
};

// Loads the meta graph of `export_dir` whose tags are exactly `tags`:
// creates a session with `options` and its graph, restores the variables
// from export_dir/variables/variables (feeding asset file tensors with
// their paths under export_dir/assets) when the meta graph has a saver_def
// and the checkpoint exists, then runs its init op (signature
// "__saved_model_init_op", else collection "saved_model_main_op", else
// "legacy_init_op") if it has one.
//
// With options.untrusted, the model's checkpoint ops may touch only its own
// variables: the saver's filename tensor (a Placeholder or Const node)
// becomes a Const holding export_dir/variables/variables and is added to
// options.io_path_roots, so SaveV2/RestoreV2/MergeV2Checkpoints whose paths
// derive from it (TF 1's save/ nodes, TF 2's saver functions) are allowed
// and every other I/O node is refused (Note [Paths derived from trusted
// roots] in runtime/untrusted_paths.h). bundle->meta_graph_def is the
// graph as it runs.
Status LoadSavedModel(const SessionOptions& options,
                      const std::string& export_dir,
                      const std::set<std::string>& tags,
                      SavedModelBundle* bundle);

// One object of a TF 2 SavedModel's object graph (MetaGraphDef.
// object_graph_def), found by its path of child names from the root:
// "root", "root.w", "root.train", "root.optimizer.iter".
struct SavedObjectInfo {
  int node_id = 0;
  std::string path;  // "#<id>" for an object no path reaches.
  // "user_object", "variable", "function", "bare_concrete_function",
  // "asset", "constant", "resource", "captured_tensor", or "" (none set).
  std::string kind;
  // What it holds: a variable's dtype, shape and name ("float [] 'w'"), a
  // function's concrete functions, an asset's file, a constant's node, a
  // user object's class identifier.
  std::string detail;
};

// The objects of mgd's object graph in node order (empty for a TF 1 meta
// graph, which has none), after checking it: every child, slot variable
// and bound input names an object that exists, every concrete function
// named by a function object is in object_graph_def.concrete_functions and
// in the graph's function library, every asset index is in asset_file_def.
// InvalidArgument naming the object otherwise. LoadSavedModel runs the same
// check.
StatusOr<std::vector<SavedObjectInfo>> ListSavedObjects(
    const MetaGraphDef& mgd);

// True if `export_dir` holds saved_model.pb or saved_model.pbtxt.
bool MaybeSavedModelDirectory(const std::string& export_dir);

// Reads export_dir's saved_model.pb (binary) or saved_model.pbtxt (text)
// without loading anything, e.g. to list its meta graphs' tag sets and
// signatures. NotFound if neither file is there; DataLoss if it does not
// parse.
Status ReadSavedModel(const std::string& export_dir, SavedModel* saved_model);

// The keys of `mgd`'s signatures that a caller can run, sorted: every one
// but the init op's ("__saved_model_init_op", which LoadSavedModel runs).
std::vector<std::string> SignatureKeys(const MetaGraphDef& mgd);

// Runs signature `signature_key` of the bundle's meta graph in its session:
// feeds inputs[k] to the tensor that the signature's input k names and
// fetches every output, keyed by the signature's output keys in *outputs
// (which is replaced). Every input of the signature must be given, and only
// those; each must have the dtype of its TensorInfo (the session checks the
// shape against the placeholder's, as a feed by name would). The second
// form runs the step with `run_options` (e.g. a timeout).
//
// Errors: NotFound for a key the meta graph has no signature for, listing
// SignatureKeys(); InvalidArgument, naming the signature and its input
// keys, for a missing or unknown input, and naming the input, for a dtype
// other than the TensorInfo's; Unimplemented for a TensorInfo that is not
// a tensor name (sparse and composite tensors); the session's errors for
// the step. Thread-safe as the bundle's Session::Run is.
Status RunSignature(const SavedModelBundle& bundle,
                    const std::string& signature_key,
                    const std::map<std::string, Tensor>& inputs,
                    std::map<std::string, Tensor>* outputs);
Status RunSignature(const RunOptions& run_options,
                    const SavedModelBundle& bundle,
                    const std::string& signature_key,
                    const std::map<std::string, Tensor>& inputs,
                    std::map<std::string, Tensor>* outputs);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_META_GRAPH_H_
