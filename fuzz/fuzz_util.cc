#include "fuzz/fuzz_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/op.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/runtime/session.h"

namespace runnel::fuzz {

uint64_t FuzzInput::Range(uint64_t lo, uint64_t hi) {
  const uint64_t span = hi - lo;
  if (span == 0) return lo;
  uint64_t v = 0;
  for (uint64_t s = span; s != 0; s >>= 8) v = (v << 8) | Byte();
  return span == UINT64_MAX ? v : lo + v % (span + 1);
}

std::string FuzzInput::Bytes(size_t n) {
  n = std::min(n, remaining());
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

std::string FuzzInput::ShortString(size_t max_len) {
  return Bytes(Range(0, max_len));
}

std::string FuzzInput::Rest() { return Bytes(remaining()); }

void InitFuzzing() {
  static std::once_flag once;
  std::call_once(once, [] {
    SetCpuAllocatorLimit(kFuzzMemoryLimitBytes);
    SetMaxDecodedTensorBytes(kFuzzMaxDecodedTensorBytes);
    // Parse failures of garbage protos are expected; their log lines are
    // noise (RUNNEL_FUZZ_VERBOSE keeps them).
    if (!Verbose()) google::protobuf::SetLogHandler(nullptr);
  });
}

std::string TempPath(absl::string_view name) {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                          "/runnel-fuzz-XXXXXX";
    auto* d = new std::string(mkdtemp(pattern.data()) ? pattern : "/tmp");
    std::atexit([] {
      std::error_code ec;
      if (*dir != "/tmp") std::filesystem::remove_all(*dir, ec);
    });
    return d;
  }();
  return absl::StrCat(*dir, "/", name);
}

bool WriteTempFile(const std::string& path, absl::string_view contents) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  return static_cast<bool>(f);
}

bool IsIoOp(absl::string_view op) {
  // Note [Fuzzing without files]: the harnesses must never touch the
  // filesystem, whatever the graph says. Ops registered with SetDoesIO(),
  // ops named here, and any op whose name says it saves, restores, reads or
  // lists files are refused (the names catch an op whose mark was
  // forgotten); RunGraphOnce's sessions run in untrusted mode on top.
  const OpRegistrationData* reg = OpRegistry::Global()->LookUp(op);
  if (reg != nullptr && reg->does_io) return true;
  static const std::set<std::string, std::less<>> kIoOps = {
      "SaveV2",     "RestoreV2",     "MergeV2Checkpoints", "Save",
      "SaveSlices", "Restore",       "RestoreSlice",       "ReadFile",
      "WriteFile",  "MatchingFiles", "DeleteFile",
  };
  if (kIoOps.count(op) != 0) return true;
  for (absl::string_view word :
       {"Save", "Restore", "Reader", "File", "Checkpoint", "Summary"}) {
    if (absl::StrContains(op, word)) return true;
  }
  return false;
}

bool HasIoOps(const GraphDef& gdef) {
  for (const NodeDef& n : gdef.node()) {
    if (IsIoOp(n.op())) return true;
  }
  return false;
}

StatusOr<Tensor> Zeros(DataType dtype, const TensorShape& shape,
                       int64_t max_bytes) {
  if (dtype != DT_STRING && !DataTypeIsPod(dtype)) {
    return errors::InvalidArgument("no zeros of dtype ",
                                   static_cast<int>(dtype));
  }
  const int64_t n = shape.num_elements();
  const int64_t elem = dtype == DT_STRING ? 32 : DataTypeSize(dtype);
  if (n < 0 || (n > 0 && n > max_bytes / std::max<int64_t>(elem, 1))) {
    return errors::InvalidArgument("zeros of shape ", shape.DebugString(),
                                   " are too big to feed");
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dtype, shape));
  if (dtype != DT_STRING && t.raw_data() != nullptr) {
    std::memset(t.raw_data(), 0, t.TotalBytes());
  }
  return t;
}

NodeDef* AddNode(GraphDef* gdef, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs) {
  NodeDef* n = gdef->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

NodeDef* AddConst(GraphDef* gdef, const std::string& name,
                  const Tensor& value) {
  NodeDef* n = AddNode(gdef, name, "Const");
  (*n->mutable_attr())["dtype"].set_type(value.dtype());
  TensorProto* proto = (*n->mutable_attr())["value"].mutable_tensor();
  if (value.dtype() == DT_STRING) {
    value.AsProtoField(proto);
  } else {
    value.AsProtoTensorContent(proto);
  }
  return n;
}

namespace {

// Zeros for a Placeholder's declared dtype and shape, or an error when the
// node does not declare a feedable one.
StatusOr<Tensor> PlaceholderZeros(const NodeDef& n) {
  auto dtype_it = n.attr().find("dtype");
  if (dtype_it == n.attr().end()) {
    return errors::InvalidArgument("no dtype");
  }
  TensorShape shape;
  auto shape_it = n.attr().find("shape");
  if (shape_it != n.attr().end() && shape_it->second.has_shape() &&
      !shape_it->second.shape().unknown_rank()) {
    const TensorShapeProto& p = shape_it->second.shape();
    if (p.dim_size() > 8) return errors::InvalidArgument("rank too big");
    for (const auto& d : p.dim()) {
      shape.AddDim(d.size() < 0 ? 1 : d.size());
      if (d.size() > (int64_t{1} << 20)) {
        return errors::InvalidArgument("dim too big");
      }
    }
  }
  return Zeros(dtype_it->second.type(), shape);
}

bool IsPlaceholder(const NodeDef& n) {
  return n.op() == "Placeholder" || n.op() == "PlaceholderV2";
}

Status RunGraphOnceImpl(const GraphDef& gdef, const RunGraphOptions& options,
                        std::vector<Tensor>* outputs) {
  if (gdef.node_size() > options.max_nodes) {
    return errors::FailedPrecondition("graph too big to fuzz");
  }
  if (HasIoOps(gdef)) {
    return errors::FailedPrecondition("graph has I/O ops");
  }
  SessionOptions session_options;
  session_options.untrusted = true;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   NewSession(session_options));
  RETURN_IF_ERROR(session->Create(gdef));

  std::vector<std::pair<std::string, Tensor>> feeds;
  std::set<std::string> fed;
  if (options.feed_placeholders) {
    for (const NodeDef& n : gdef.node()) {
      if (!IsPlaceholder(n) || fed.count(n.name()) != 0) continue;
      StatusOr<Tensor> zeros = PlaceholderZeros(n);
      if (!zeros.ok()) continue;
      feeds.emplace_back(n.name() + ":0", *std::move(zeros));
      fed.insert(n.name());
    }
  }

  std::vector<std::string> fetches = options.fetches;
  std::vector<std::string> targets = options.targets;
  if (fetches.empty() && targets.empty()) {
    std::set<std::string> seen;
    for (const NodeDef& n : gdef.node()) {
      if (fed.count(n.name()) != 0 || !seen.insert(n.name()).second) continue;
      const OpRegistrationData* reg = OpRegistry::Global()->LookUp(n.op());
      const bool has_outputs =
          reg != nullptr && reg->op_def.output_arg_size() > 0;
      if (has_outputs &&
          static_cast<int>(fetches.size()) < options.max_fetches) {
        fetches.push_back(n.name() + ":0");
      } else {
        targets.push_back(n.name());
      }
    }
  }

  RunOptions run_options;
  run_options.set_timeout_in_ms(options.timeout_ms);
  for (const auto& init : options.init_runs) {
    session->Run(run_options, feeds, {}, init, nullptr, nullptr).IgnoreError();
  }
  std::vector<Tensor> local;
  std::vector<Tensor>* outs = outputs != nullptr ? outputs : &local;
  Status s = session->Run(run_options, feeds, fetches, targets, outs, nullptr);
  if (s.ok()) {
    for (const Tensor& t : *outs) {
      (void)t.DebugString();
      (void)t.SummarizeValue(20);
    }
  }
  session->Close().IgnoreError();
  return s;
}

}  // namespace

bool Verbose() {
  static const bool verbose = std::getenv("RUNNEL_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

Status RunGraphOnce(const GraphDef& gdef, const RunGraphOptions& options,
                    std::vector<Tensor>* outputs) {
  Status s = RunGraphOnceImpl(gdef, options, outputs);
  if (Verbose()) std::fprintf(stderr, "run: %s\n", s.ToString().c_str());
  return s;
}

}  // namespace runnel::fuzz
