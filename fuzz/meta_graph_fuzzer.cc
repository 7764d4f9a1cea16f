// MetaGraphDef bytes -> ImportMetaGraph into a fresh session (graph Create
// plus a Saver over its saver_def) and the variables collections. No file
// is read or written: only the import path runs.
//
// Input: byte 0 = mode (bit 0: the rest is a SavedModel, saved_model.pb,
// whose first few meta graphs are imported; else one MetaGraphDef), then
// the proto.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz/fuzz_util.h"
#include "proto/meta_graph.pb.h"
#include "proto/saved_model.pb.h"
#include "runnel/runtime/session.h"
#include "runnel/training/meta_graph.h"
#include "runnel/training/saver.h"

namespace runnel::fuzz {
namespace {

void ImportOne(const MetaGraphDef& mgd) {
  training::VariablesInCollection(mgd, training::kGlobalVariablesKey)
      .status()
      .IgnoreError();
  training::VariablesInCollection(mgd, training::kTrainableVariablesKey)
      .status()
      .IgnoreError();
  StatusOr<std::unique_ptr<Session>> session = NewSession();
  if (!session.ok()) return;
  std::unique_ptr<training::Saver> saver;
  training::ImportMetaGraph(mgd, session->get(), &saver).IgnoreError();
  (*session)->Close().IgnoreError();
}

void FuzzMetaGraph(FuzzInput& in) {
  const uint8_t mode = in.Byte();
  const std::string bytes = in.Rest();
  if (mode & 1) {
    SavedModel sm;
    if (!sm.ParseFromString(bytes)) return;
    for (int i = 0; i < sm.meta_graphs_size() && i < 4; ++i) {
      ImportOne(sm.meta_graphs(i));
    }
    return;
  }
  MetaGraphDef mgd;
  if (!mgd.ParseFromString(bytes)) return;
  ImportOne(mgd);
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::InitFuzzing();
  runnel::fuzz::FuzzInput in(data, size);
  runnel::fuzz::FuzzMetaGraph(in);
  return 0;
}
