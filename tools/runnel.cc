// The `runnel` command line.
//
//   runnel run GRAPH [--feed NAME=VALUE]... [--fetch NAME]... [--target
//   NODE]...
//                    [--init NODE]... [--repeat N] [--json]
//                    [--allow_io | --untrusted] [--timeout_ms N]
//                    [--max_graph_bytes N] [--memory_limit_mb N]
//                    [--step_memory_limit_mb N]
//                    [--device_count TYPE=N]... [--soft_placement]
//                    [--log_device_placement] [--partition_graphs DIR]
//                    [--placement colocate_with_inputs|greedy_cost_model]
//                    [--trace RUN_METADATA.pb]
//                    [--master grpc://HOST:PORT [--tls_cert F --tls_key F
//                    --tls_ca F]]
//   runnel run MODEL.meta --restore CKPT_PREFIX [the flags above]
//   runnel run SAVED_MODEL_DIR [--tag TAG]... [--signature NAME]
//                    [--input KEY=VALUE]... [--json] [--allow_io |
//                    --untrusted] [--timeout_ms N] [--memory_limit_mb N]
//                    [--device_count TYPE=N]... [--soft_placement]
//   runnel inspect GRAPH|MODEL.meta|SAVED_MODEL_DIR [--max_graph_bytes N]
//   runnel ckpt CKPT_PREFIX [TENSOR] [--json] (tools/ckpt_command.cc)
//   runnel events PATH [--tag TAG] [--json]
//   runnel timeline ... (tools/timeline_command.cc)
//   runnel board ... (tools/board_command.cc)
//   runnel server ... (tools/server_command.cc)
//   runnel ops
//
// `--init` nodes run once first (e.g. a variable initializer); then the
// targets and fetches run N times in one session (training from the command
// line), and the fetches of the last run are printed.
//
// GRAPH is a binary (.pb) or text (.pbtxt) GraphDef, a regular file of at
// most --max_graph_bytes (default 1 GiB). A feed VALUE is a number,
// true/false, a quoted string, or a nested list like [[1,2],[3,4]]
// (tools/feed_parser.h); its dtype comes from the fed node's output and its
// shape from the list's nesting (a single value fills a placeholder whose
// shape has one element).
//
// Meta graphs: a GRAPH ending in ".meta", or any GRAPH with --restore, is a
// MetaGraphDef (binary or text; e.g. TF 1's "model.ckpt-N.meta"). It is
// imported (training::ImportMetaGraph), and with --restore CKPT_PREFIX its
// saver_def's restore op runs once with the prefix fed to its filename
// tensor, after the --init steps and before the targets and fetches.
//
// SavedModels: when GRAPH is a SavedModel directory (saved_model.pb or
// .pbtxt), `run` loads its meta graph with tags --tag (repeatable; default
// serve), runs signature --signature (default serving_default) with each
// --input KEY=VALUE fed to the signature's input KEY (VALUE parsed as for
// --feed, with the dtype and shape of the signature's TensorInfo), and
// prints the outputs by signature key (tools/saved_model_command.h). An
// unknown signature lists the signatures there are; `runnel inspect
// SAVED_MODEL_DIR` lists every meta graph's tags and signatures (inputs and
// outputs: dtype, shape, tensor), as TF's `saved_model_cli show --all`.
//
// Checkpoints: `ckpt` lists a V2 checkpoint's tensors (name, dtype, shape;
// sorted by name, as TF's inspect_checkpoint) or prints TENSOR's values; a
// missing or damaged checkpoint is an error (exit status 1).
//
// Note [Untrusted by default]
// A graph named on the command line is untrusted unless --allow_io says
// otherwise: `run` makes its session with SessionOptions::untrusted, so a
// node whose op touches the filesystem (SaveV2, RestoreV2, the file readers,
// ...) is refused before anything runs, and every step is bounded by
// --timeout_ms (60000 by default; 0 means no bound), since a mutated loop
// condition can loop forever. --untrusted spells the default out. Checkpoint
// paths named on the command line stay allowed: a SaveV2, RestoreV2 or
// MergeV2Checkpoints node whose path inputs are all fed with --feed reads
// and writes only where the user said, so it is allowed (those feeds are
// given to the --init steps too, so the graph's own path is never used).
// --restore CKPT_PREFIX is such a feed: the prefix goes to the saver_def's
// filename tensor in the restore step and in every other step (unless a
// --feed gives that tensor another path), so the meta graph's RestoreV2 and
// SaveV2 nodes reading that tensor are allowed and touch only checkpoints
// the user named (a --target of the save op writes back to the prefix). A
// SavedModel directory carries its own saver, so `run SAVED_MODEL_DIR` allows
// the checkpoint op types (RestoreV2, SaveV2, MergeV2Checkpoints) and still
// refuses every other I/O op (Note [SavedModel checkpoint ops] in
// tools/saved_model_command.cc).
// --allow_io trusts the graph: all I/O ops run and there is no default
// timeout (--timeout_ms still applies when given). --memory_limit_mb N caps
// the bytes of tensors alive at once in the whole run (default: 80% of RAM,
// the CPU allocator's limit); an op past it fails with RESOURCE_EXHAUSTED.
// --step_memory_limit_mb N caps what one step holds at once
// (ConfigProto.runnel_step_memory_limit_bytes; default half of RAM).
//
// Devices: --device_count CPU=2 makes two CPU devices
// (/job:localhost/replica:0/task:0/device:CPU:0 and :1, ConfigProto's
// device_count), so nodes whose device says /device:CPU:1 run there, with
// _Send/_Recv between the devices. --soft_placement lets a node whose device
// does not exist run elsewhere; --log_device_placement prints each node's
// device on stderr in TensorFlow's format ("name: (Op): /job:..."); and
// --partition_graphs DIR writes each device's graph of the last step as
// DIR/partition_<i>.pbtxt. --placement greedy_cost_model places the nodes
// that no device constraint pins with the whitepaper's greedy cost model
// (GraphOptions.runnel_placement_strategy; runtime/placement_cost_model.h)
// instead of TF's follow-the-input rule. --trace PATH runs the last step
// with a full trace and writes its RunMetadata (per-node step stats, per
// device) to PATH, for `runnel timeline`.
//
// Clusters: --master grpc://HOST:PORT runs the graph on the cluster whose
// task serves that address (a `runnel server`); its nodes' devices may name
// any task ("/job:ps/task:0"). The untrusted-graph check runs here, before
// the graph is sent. --tls_cert/--tls_key/--tls_ca talk to a cluster with
// mutual TLS (the certificate must be signed by the cluster's CA).
//
// Event files: `events` reads TensorBoard event files
// (runnel/io/event_reader.h). PATH is an event file or a log directory,
// searched recursively: each directory holding event files is a run (named
// by its path under PATH, "." for PATH itself). It lists each run's tags
// with their kind (scalar, histogram, image, audio, tensor), count and
// steps, or with --tag TAG the (step, wall_time, value) series of that tag
// in every run having it. --json prints the same as one JSON object. A
// damaged file is read as TensorBoard reads it: each truncated tail or
// corrupt record is a warning on stderr naming its byte offset, and the
// good records count; and orphaned points are dropped as TensorBoard drops
// them (Note [Orphaned data] in runnel/io/event_reader.h).
//
// Errors go to stderr with exit status 1 (2 for usage errors); a step that
// runs past its timeout is an error like any other (DeadlineExceeded).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#ifdef RUNNEL_WITH_GRPC
#include "tools/server_command.h"
#endif

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"
#include "runnel/base/json.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/tensor_id.h"
#include "runnel/io/event_reader.h"
#include "runnel/io/tensor_bundle.h"
#include "runnel/runtime/session.h"
#include "runnel/training/meta_graph.h"
#include "runnel/training/saver.h"
#include "tools/board_command.h"
#include "tools/ckpt_command.h"
#include "tools/feed_parser.h"
#include "tools/saved_model_command.h"
#include "tools/tensor_output.h"
#include "tools/timeline_command.h"

namespace runnel {
namespace {

int Usage() {
  std::cerr
      << "usage:\n"
         "  runnel run GRAPH [--feed NAME=VALUE]... [--fetch NAME]... "
         "[--target NODE]... [--init NODE]... [--repeat N] [--json]\n"
         "             [--allow_io | --untrusted] [--timeout_ms N] "
         "[--max_graph_bytes N] [--memory_limit_mb N]\n"
         "             [--step_memory_limit_mb N] [--device_count TYPE=N]... "
         "[--soft_placement] "
         "[--log_device_placement] [--partition_graphs DIR]\n"
         "             [--placement colocate_with_inputs|greedy_cost_model] "
         "[--trace RUN_METADATA.pb]\n"
         "             [--master grpc://HOST:PORT [--tls_cert F --tls_key "
         "F --tls_ca F]]\n"
         "  runnel run MODEL.meta --restore CKPT_PREFIX [--feed ...] "
         "[--fetch ...] [--target ...] (and the flags above)\n"
         "  runnel run SAVED_MODEL_DIR [--tag TAG]... [--signature NAME] "
         "[--input KEY=VALUE]... [--json]\n"
         "             [--allow_io | --untrusted] [--timeout_ms N] "
         "[--memory_limit_mb N] [--device_count TYPE=N]...\n"
         "  runnel inspect GRAPH|MODEL.meta|SAVED_MODEL_DIR "
         "[--max_graph_bytes N]   (a SavedModel: its signatures)\n"
         "  runnel ckpt CKPT_PREFIX [TENSOR] [--json]\n"
         "  runnel events PATH [--tag TAG] [--json]\n"
         "  runnel timeline RUN_METADATA.pb|EVENT_FILE [--tag T] [-o "
         "TRACE.json] [--top N] [--no_dataflow]\n"
         "  runnel board LOGDIR -o REPORT.html [--max_scalar_points N] "
         "[--max_histogram_steps N] [--max_images N]\n"
         "  runnel server (--cluster SPEC --job J --task T | --slurm | "
         "--mpi | TF_CONFIG) ...\n"
         "  runnel ops\n"
         "run treats GRAPH as untrusted unless --allow_io: ops that "
         "touch files are refused\n"
         "(except checkpoint ops whose paths are --feed values) and "
         "each step times out\n"
         "after --timeout_ms (default 60000; 0: none). "
         "--memory_limit_mb caps the tensor memory\n"
         "of the whole run, --step_memory_limit_mb that of each step "
         "(default: half of RAM;\nan op past either fails with "
         "RESOURCE_EXHAUSTED). See SECURITY.md.\n";
  return 2;
}

int Fail(const Status& s) {
  std::cerr << "runnel: " << s << "\n";
  return 1;
}

// ---------------------------------------------------------------------------
// Reading graphs

constexpr int64_t kDefaultMaxGraphBytes = int64_t{1} << 30;

// Checks on what a graph path names: a regular file (not a directory, FIFO
// or device, which could be read forever) of at most `max_bytes`, if it
// exists (a missing file is the reader's NotFound). Errors name the file.
Status CheckGraphFile(const std::string& path, int64_t max_bytes) {
  RETURN_IF_ERROR(errors::Prefix(ValidatePath(path), "graph file name: "));
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status)) {
    if (!std::filesystem::is_regular_file(status)) {
      return errors::InvalidArgument("graph file '", path,
                                     "' is not a regular file");
    }
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > static_cast<uintmax_t>(max_bytes)) {
      return errors::ResourceExhausted("graph file '", path, "' is ", size,
                                       " bytes, more than the limit of ",
                                       max_bytes,
                                       " (raise it with --max_graph_bytes)");
    }
  }
  return absl::OkStatus();
}

// ReadGraphDefFile after CheckGraphFile.
Status ReadGraphFile(const std::string& path, int64_t max_bytes,
                     GraphDef* gdef) {
  RETURN_IF_ERROR(CheckGraphFile(path, max_bytes));
  return ReadGraphDefFile(path, gdef);
}

// ReadMetaGraphDef (binary or text) after CheckGraphFile.
Status ReadMetaGraphFile(const std::string& path, int64_t max_bytes,
                         MetaGraphDef* mgd) {
  RETURN_IF_ERROR(CheckGraphFile(path, max_bytes));
  return training::ReadMetaGraphDef(path, mgd);
}

// A size in MiB for `flag`, 1 to 2^30; says what it wants on stderr when
// `v` is not one.
bool ParseMiB(const std::string& flag, const std::string& v, int64_t* mb) {
  if (absl::SimpleAtoi(v, mb) && *mb >= 1 && *mb <= (int64_t{1} << 30)) {
    return true;
  }
  std::cerr << "runnel: " << flag << " wants a positive size in MiB\n";
  return false;
}

// Parses "--max_graph_bytes N".
bool ParseMaxGraphBytes(const std::string& v, int64_t* out) {
  return absl::SimpleAtoi(v, out) && *out > 0;
}

// ---------------------------------------------------------------------------
// Untrusted mode (Note [Untrusted by default])

constexpr int64_t kUntrustedTimeoutMs = 60000;

// The inputs of a checkpoint op that name files (SaveV2/RestoreV2: the
// prefix; MergeV2Checkpoints: the source and destination prefixes).
std::vector<int> PathInputs(const std::string& op) {
  if (op == "SaveV2" || op == "RestoreV2") return {0};
  if (op == "MergeV2Checkpoints") return {0, 1};
  return {};
}

// The checkpoint nodes of `gdef` whose path inputs are all fed (`fed[i]` is
// the tensor feed i replaces): their paths come from the command line, so
// untrusted mode allows them. Adds the feeds they use to `path_feeds`.
std::vector<std::string> NodesWithFedPaths(const GraphDef& gdef,
                                           const std::vector<TensorId>& fed,
                                           std::set<size_t>* path_feeds) {
  auto feed_of = [&](const std::string& input) -> int {
    auto id = ParseTensorName(input);
    if (!id.ok() || id->IsControl()) return -1;
    for (size_t f = 0; f < fed.size(); ++f) {
      if (fed[f] == *id) return static_cast<int>(f);
    }
    return -1;
  };
  std::vector<std::string> nodes;
  for (const NodeDef& n : gdef.node()) {
    const std::vector<int> paths = PathInputs(n.op());
    if (paths.empty()) continue;
    std::vector<size_t> feeds;
    for (int i : paths) {
      const int f = i < n.input_size() ? feed_of(n.input(i)) : -1;
      if (f < 0) break;
      feeds.push_back(static_cast<size_t>(f));
    }
    if (feeds.size() != paths.size()) continue;
    nodes.push_back(n.name());
    path_feeds->insert(feeds.begin(), feeds.end());
  }
  return nodes;
}

// ---------------------------------------------------------------------------
// Commands

// The message for a failed step; a timeout says how to change the bound.
int FailStep(const Status& s, bool default_timeout) {
  if (absl::IsDeadlineExceeded(s)) {
    std::cerr << "runnel: " << s << "\nrunnel: "
              << (default_timeout
                      ? absl::StrCat("untrusted graphs get a ",
                                     kUntrustedTimeoutMs,
                                     " ms step bound by default")
                      : std::string("the step bound came from --timeout_ms"))
              << "; set another with --timeout_ms N (0: none)\n";
    return 1;
  }
  return Fail(s);
}

int Run(const std::vector<std::string>& args) {
  if (args.empty()) return Usage();
  std::string graph_path;
  std::vector<std::pair<std::string, std::string>> feed_text;
  std::vector<std::string> fetches, targets, inits;
  bool json = false, allow_io = false, untrusted_flag = false;
  int64_t repeat = 1;
  int64_t timeout_ms = -1;  // -1: the mode's default.
  int64_t max_graph_bytes = kDefaultMaxGraphBytes;
  ConfigProto config;
  std::string partition_dir, trace_path, master, tls_cert, tls_key, tls_ca;
  std::string restore;             // --restore CKPT_PREFIX
  SavedModelRunFlags saved_model;  // --input, --tag, --signature
  bool saved_model_flags = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--json") {
      json = true;
    } else if (a == "--allow_io") {
      allow_io = true;
    } else if (a == "--untrusted") {
      untrusted_flag = true;
    } else if (a == "--soft_placement") {
      config.set_allow_soft_placement(true);
    } else if (a == "--log_device_placement") {
      config.set_log_device_placement(true);
    } else if (a == "--master" && value(&v)) {
      master = v;
    } else if (a == "--tls_cert" && value(&v)) {
      tls_cert = v;
    } else if (a == "--tls_key" && value(&v)) {
      tls_key = v;
    } else if (a == "--tls_ca" && value(&v)) {
      tls_ca = v;
    } else if (a == "--partition_graphs" && value(&v)) {
      partition_dir = v;
    } else if (a == "--trace" && value(&v)) {
      trace_path = v;
    } else if (a == "--placement" && value(&v)) {
      config.mutable_graph_options()->set_runnel_placement_strategy(v);
    } else if (a == "--device_count" && value(&v)) {
      const size_t eq = v.find('=');
      int32_t n = 0;
      if (eq == std::string::npos || eq == 0 ||
          !absl::SimpleAtoi(v.substr(eq + 1), &n) || n < 0) {
        std::cerr << "runnel: --device_count wants TYPE=N (e.g. CPU=2), got '"
                  << v << "'\n";
        return 2;
      }
      (*config.mutable_device_count())[v.substr(0, eq)] = n;
    } else if (a == "--feed" && value(&v)) {
      size_t eq = v.find('=');
      if (eq == std::string::npos) {
        std::cerr << "runnel: --feed wants NAME=VALUE, got '" << v << "'\n";
        return 2;
      }
      feed_text.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--input" && value(&v)) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "runnel: --input wants KEY=VALUE, got '" << v << "'\n";
        return 2;
      }
      saved_model.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      saved_model_flags = true;
    } else if (a == "--tag" && value(&v)) {
      saved_model.tags.insert(v);
      saved_model_flags = true;
    } else if (a == "--signature" && value(&v)) {
      saved_model.signature = v;
      saved_model_flags = true;
    } else if (a == "--restore" && value(&v)) {
      restore = v;
    } else if (a == "--fetch" && value(&v)) {
      fetches.push_back(v);
    } else if (a == "--target" && value(&v)) {
      targets.push_back(v);
    } else if (a == "--init" && value(&v)) {
      inits.push_back(v);
    } else if (a == "--repeat" && value(&v)) {
      if (!absl::SimpleAtoi(v, &repeat) || repeat < 1) {
        std::cerr << "runnel: --repeat wants a positive count\n";
        return 2;
      }
    } else if (a == "--timeout_ms" && value(&v)) {
      if (!absl::SimpleAtoi(v, &timeout_ms) || timeout_ms < 0 ||
          timeout_ms > std::numeric_limits<int32_t>::max()) {
        std::cerr << "runnel: --timeout_ms wants milliseconds, 0 to "
                  << std::numeric_limits<int32_t>::max() << " (0: none)\n";
        return 2;
      }
    } else if (a == "--max_graph_bytes" && value(&v)) {
      if (!ParseMaxGraphBytes(v, &max_graph_bytes)) {
        std::cerr << "runnel: --max_graph_bytes wants a positive size\n";
        return 2;
      }
    } else if (a == "--memory_limit_mb" && value(&v)) {
      int64_t mb = 0;
      if (!ParseMiB(a, v, &mb)) return 2;
      SetTensorMemoryLimit(mb << 20);
    } else if (a == "--step_memory_limit_mb" && value(&v)) {
      int64_t mb = 0;
      if (!ParseMiB(a, v, &mb)) return 2;
      config.set_runnel_step_memory_limit_bytes(mb << 20);
    } else if (!a.empty() && a[0] != '-' && graph_path.empty()) {
      graph_path = a;
    } else {
      std::cerr << "runnel: unexpected argument '" << a << "'\n";
      return Usage();
    }
  }
  if (graph_path.empty()) return Usage();
  if (allow_io && untrusted_flag) {
    std::cerr << "runnel: --allow_io and --untrusted contradict each other\n";
    return 2;
  }
  const bool untrusted = !allow_io;
  const bool default_timeout = timeout_ms < 0;
  if (default_timeout) timeout_ms = untrusted ? kUntrustedTimeoutMs : 0;

  // A SavedModel directory: its signature by key
  // (tools/saved_model_command.h).
  if (training::MaybeSavedModelDirectory(graph_path)) {
    if (!feed_text.empty() || !fetches.empty() || !targets.empty() ||
        !inits.empty() || !restore.empty() || repeat != 1 ||
        !partition_dir.empty() || !trace_path.empty() || !master.empty()) {
      std::cerr << "runnel: " << graph_path
                << " is a SavedModel: run a signature with [--tag T]... "
                   "[--signature NAME] --input KEY=VALUE...\n"
                   "(--feed, --fetch, --target, --init, --restore, --repeat, "
                   "--partition_graphs, --trace and --master are for graph "
                   "files; `runnel inspect "
                << graph_path << "` lists the signatures)\n";
      return 2;
    }
    saved_model.dir = graph_path;
    saved_model.json = json;
    saved_model.untrusted = untrusted;
    saved_model.timeout_ms = timeout_ms;
    saved_model.config = config;
    if (Status s = RunSavedModel(saved_model); !s.ok())
      return FailStep(s, default_timeout);
    return 0;
  }
  if (saved_model_flags) {
    std::cerr << "runnel: --input, --tag and --signature are for SavedModel "
                 "directories; "
              << graph_path << " is not one (no saved_model.pb)\n";
    return 2;
  }
  if (fetches.empty() && targets.empty()) {
    std::cerr << "runnel: nothing to run: give --fetch or --target\n";
    return 2;
  }

  // A MetaGraphDef (--restore, or a .meta file) brings its saver_def.
  GraphDef gdef;
  MetaGraphDef mgd;
  const bool meta = !restore.empty() || absl::EndsWith(graph_path, ".meta");
  if (meta) {
    if (Status s = ReadMetaGraphFile(graph_path, max_graph_bytes, &mgd);
        !s.ok())
      return Fail(s);
    gdef = mgd.graph_def();
    if (!restore.empty() && !mgd.has_saver_def()) {
      return Fail(
          errors::FailedPrecondition("--restore: the meta graph ", graph_path,
                                     " has no saver_def to restore with"));
    }
    if (!restore.empty() && !training::CheckpointExists(restore)) {
      return Fail(errors::NotFound("--restore: no checkpoint at ", restore,
                                   " (no ", MetaFilename(restore), ")"));
    }
  } else if (Status s = ReadGraphFile(graph_path, max_graph_bytes, &gdef);
             !s.ok()) {
    return Fail(s);
  }
  Graph graph;
  if (Status s = ImportGraphDef(gdef, &graph); !s.ok()) return Fail(s);

  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<TensorId> fed;
  for (const auto& [name, text] : feed_text) {
    auto id = ParseTensorName(name);
    if (!id.ok()) return Fail(id.status());
    const Node* n = graph.FindNode(id->node);
    if (n == nullptr)
      return Fail(errors::InvalidArgument("feed '", name, "': no node '",
                                          id->node, "'"));
    if (id->index < 0 || id->index >= n->num_outputs()) {
      return Fail(errors::InvalidArgument("feed '", name, "': node '", id->node,
                                          "' has ", n->num_outputs(),
                                          " outputs"));
    }
    PartialTensorShape declared;
    if (!GetAttr(n->attrs(), "shape", &declared).ok())
      declared = PartialTensorShape();
    auto t =
        ParseFeedValue(text, BaseType(n->output_type(id->index)), declared);
    if (!t.ok()) {
      return Fail(
          errors::Prefix(t.status(), absl::StrCat("feed '", name, "': ")));
    }
    feeds.emplace_back(name, std::move(*t));
    fed.push_back(*id);
  }
  // --restore feeds the prefix to the saver's filename tensor in the
  // restore step, and in every other step unless a --feed names that tensor
  // (e.g. to save elsewhere), like a --feed naming a checkpoint path (Note
  // [Untrusted by default]).
  std::vector<std::pair<std::string, Tensor>> restore_feeds;
  if (!restore.empty()) {
    const std::string& name = mgd.saver_def().filename_tensor_name();
    auto id = ParseTensorName(name);
    if (!id.ok()) return Fail(id.status());
    restore_feeds.emplace_back(name, Tensor::Scalar<tstring>(restore));
    if (std::find(fed.begin(), fed.end(), *id) == fed.end()) {
      feeds.push_back(restore_feeds.back());
      fed.push_back(*id);
    }
  }

  SessionOptions options;
  options.config = config;
  options.untrusted = untrusted;
  options.target = master;
#ifdef RUNNEL_WITH_GRPC
  if (!tls_cert.empty() || !tls_key.empty() || !tls_ca.empty()) {
    EnableGrpcSessions(tls_cert, tls_key, tls_ca);
  }
#endif
  std::set<size_t> path_feeds;
  if (untrusted) {
    options.allowed_io_nodes = NodesWithFedPaths(gdef, fed, &path_feeds);
  }
  // The --init steps get the feeds that name checkpoint paths, so that an
  // allowed node never runs with the graph's own path.
  std::vector<std::pair<std::string, Tensor>> init_feeds;
  for (size_t f : path_feeds) init_feeds.push_back(feeds[f]);

  auto session = NewSession(options);
  if (!session.ok()) return Fail(session.status());
  if (meta) {
    if (Status s = training::ImportMetaGraph(mgd, session->get(), nullptr);
        !s.ok())
      return Fail(s);
  } else if (Status s = (*session)->Create(gdef); !s.ok()) {
    return Fail(s);
  }
  RunOptions run_options;
  run_options.set_timeout_in_ms(timeout_ms);
  RunOptions last_options = run_options;
  RunMetadata metadata;
  if (!partition_dir.empty()) last_options.set_output_partition_graphs(true);
  if (!trace_path.empty()) last_options.set_trace_level(RunOptions::FULL_TRACE);
  std::vector<Tensor> outputs;
  if (!inits.empty()) {
    Status s =
        (*session)->Run(run_options, init_feeds, {}, inits, nullptr, nullptr);
    if (!s.ok()) return FailStep(s, default_timeout);
  }
  if (!restore.empty()) {
    // The saver_def's restore op with the prefix fed, after --init (which
    // may initialize what the checkpoint does not hold).
    Status s =
        (*session)->Run(run_options, restore_feeds, {},
                        {mgd.saver_def().restore_op_name()}, nullptr, nullptr);
    if (!s.ok()) {
      return FailStep(
          errors::Prefix(s, absl::StrCat("--restore ", restore, ": ")),
          default_timeout);
    }
  }
  for (int64_t r = 0; r < repeat; ++r) {
    const bool last = r + 1 == repeat;
    Status s =
        (*session)->Run(last ? last_options : run_options, feeds, fetches,
                        targets, &outputs, last ? &metadata : nullptr);
    if (!s.ok()) return FailStep(s, default_timeout);
  }
  if (!partition_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(partition_dir, ec);
    for (int i = 0; i < metadata.partition_graphs_size(); ++i) {
      const std::string path =
          absl::StrCat(partition_dir, "/partition_", i, ".pbtxt");
      std::string text;
      google::protobuf::TextFormat::PrintToString(metadata.partition_graphs(i),
                                                  &text);
      if (Status s = WriteStringToFile(path, text); !s.ok()) return Fail(s);
    }
    std::cerr << "wrote " << metadata.partition_graphs_size()
              << " partition graph(s) to " << partition_dir << "\n";
  }
  if (!trace_path.empty()) {
    // The last step's RunMetadata, for `runnel timeline`.
    std::string bytes;
    if (!metadata.SerializeToString(&bytes)) {
      return Fail(errors::Internal("cannot serialize the run metadata"));
    }
    if (Status s = WriteStringToFile(trace_path, bytes); !s.ok())
      return Fail(s);
    std::cerr << "wrote the last step's trace to " << trace_path << "\n";
  }
  if (json) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < fetches.size(); ++i) {
      parts.push_back(
          absl::StrCat(JsonString(fetches[i]), ": ", JsonTensor(outputs[i])));
    }
    std::cout << "{" << absl::StrJoin(parts, ", ") << "}\n";
  } else {
    for (size_t i = 0; i < fetches.size(); ++i) {
      std::cout << TensorLine(fetches[i], outputs[i]) << "\n";
    }
    if (fetches.empty())
      std::cout << "ran " << absl::StrJoin(targets, ", ") << "\n";
  }
  return 0;
}

int Inspect(const std::vector<std::string>& args) {
  std::string path;
  int64_t max_graph_bytes = kDefaultMaxGraphBytes;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--max_graph_bytes" && i + 1 < args.size()) {
      if (!ParseMaxGraphBytes(args[++i], &max_graph_bytes)) {
        std::cerr << "runnel: --max_graph_bytes wants a positive size\n";
        return 2;
      }
    } else if (path.empty() && !args[i].empty() && args[i][0] != '-') {
      path = args[i];
    } else {
      return Usage();
    }
  }
  if (path.empty()) return Usage();
  if (training::MaybeSavedModelDirectory(path)) {
    if (Status s = InspectSavedModel(path); !s.ok()) return Fail(s);
    return 0;
  }
  GraphDef gdef;
  MetaGraphDef mgd;
  if (absl::EndsWith(path, ".meta")) {
    if (Status s = ReadMetaGraphFile(path, max_graph_bytes, &mgd); !s.ok())
      return Fail(s);
    gdef = mgd.graph_def();
  } else if (Status s = ReadGraphFile(path, max_graph_bytes, &gdef); !s.ok()) {
    return Fail(s);
  }
  Graph graph;
  Status import = ImportGraphDef(gdef, &graph);
  std::cout << path << ": " << gdef.node_size() << " nodes, producer "
            << gdef.versions().producer() << "\n";
  if (!import.ok())
    std::cout << "  (does not import here: " << import.message() << ")\n";
  std::map<std::string, int> histogram;
  std::map<std::string, int> devices;
  std::cout << "\nnodes:\n";
  for (const NodeDef& n : gdef.node()) {
    ++histogram[n.op()];
    ++devices[n.device().empty() ? "(unspecified)" : n.device()];
    std::cout << "  " << n.name() << " = " << n.op() << "("
              << absl::StrJoin(n.input(), ", ") << ")";
    if (!n.device().empty()) std::cout << " @" << n.device();
    std::cout << "\n";
  }
  std::cout << "\ndevices:\n";
  for (const auto& [d, c] : devices)
    std::cout << "  " << d << ": " << c << "\n";
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, c] : histogram) ops.emplace_back(-c, op);
  std::sort(ops.begin(), ops.end());
  std::cout << "\nop histogram:\n";
  for (const auto& [c, op] : ops) std::cout << "  " << -c << "  " << op << "\n";
  return 0;
}

// ---------------------------------------------------------------------------
// Event files

// The shortest text that reads back as `v` (a float32 stays a float32:
// 0.2473653, not 0.24736529588699341).
template <typename T>
std::string ShortestNumber(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// A number in JSON: NaN and the infinities as strings, as `run --json`.
template <typename T>
std::string JsonNumber(T v) {
  std::string s = ShortestNumber(v);
  return std::isfinite(v) ? s : JsonString(s);
}

std::string ShapeText(const TensorProto& t) {
  std::vector<int64_t> dims;
  for (const auto& d : t.tensor_shape().dim()) dims.push_back(d.size());
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// One point of a series: its value as text and as JSON.
struct EventPoint {
  int64_t step;
  double wall_time;
  std::string text, json;
};

void DescribeValue(const Summary::Value& v, EventPoint* p) {
  if (v.has_simple_value()) {
    p->text = ShortestNumber(v.simple_value());
    p->json = JsonNumber(v.simple_value());
    return;
  }
  if (std::optional<double> x = ScalarSummaryValue(v)) {
    p->text = ShortestNumber(*x);
    p->json = JsonNumber(*x);
    return;
  }
  if (v.has_histo()) {
    const HistogramProto& h = v.histo();
    p->text = absl::StrCat("histogram num=", ShortestNumber(h.num()),
                           " min=", ShortestNumber(h.min()),
                           " max=", ShortestNumber(h.max()),
                           " sum=", ShortestNumber(h.sum()));
    p->json = absl::StrCat(
        "{\"num\": ", JsonNumber(h.num()), ", \"min\": ", JsonNumber(h.min()),
        ", \"max\": ", JsonNumber(h.max()), ", \"sum\": ", JsonNumber(h.sum()),
        ", \"buckets\": ", h.bucket_size(), "}");
  } else if (v.has_image()) {
    const Summary::Image& im = v.image();
    p->text = absl::StrCat("image ", im.width(), "x", im.height(),
                           " colorspace ", im.colorspace(), ", ",
                           im.encoded_image_string().size(), " bytes");
    p->json =
        absl::StrCat("{\"width\": ", im.width(), ", \"height\": ", im.height(),
                     ", \"colorspace\": ", im.colorspace(),
                     ", \"bytes\": ", im.encoded_image_string().size(), "}");
  } else if (v.has_audio()) {
    const Summary::Audio& a = v.audio();
    p->text =
        absl::StrCat("audio ", ShortestNumber(a.sample_rate()), " Hz, ",
                     a.num_channels(), " channel(s), ", a.length_frames(),
                     " frames, ", a.encoded_audio_string().size(), " bytes");
    p->json =
        absl::StrCat("{\"sample_rate\": ", JsonNumber(a.sample_rate()),
                     ", \"channels\": ", a.num_channels(),
                     ", \"frames\": ", a.length_frames(),
                     ", \"bytes\": ", a.encoded_audio_string().size(), "}");
  } else if (v.has_tensor()) {
    const TensorProto& t = v.tensor();
    const std::string dtype = DataTypeString(t.dtype());
    p->text = absl::StrCat("tensor ", dtype, " ", ShapeText(t));
    p->json = absl::StrCat("{\"dtype\": ", JsonString(dtype),
                           ", \"shape\": ", ShapeText(t), "}");
  } else {
    p->text = "(no value)";
    p->json = "null";
  }
}

// What `events` gathers from one run: its tags' points after TensorBoard's
// purges of orphaned data (Note [Orphaned data] in runnel/io/event_reader.h),
// so counts and series are what TensorBoard would show; the values are kept
// for --tag only.
struct RunStats {
  EventRun run;
  std::vector<std::pair<std::string, EventFileReport>> files;
  EventAccumulator acc;
  std::vector<EventPoint> series;  // Of --tag.
};

// Reads every file of `run`; warnings for damage and unreadable files go to
// stderr.
RunStats ReadRun(const EventRun& run, const std::string& tag) {
  EventAccumulator::Options options;
  options.values_to_keep = [tag](const std::string& t, SummaryKind) {
    return !tag.empty() && t == tag ? EventAccumulator::kAllValues : 0;
  };
  RunStats stats{run, {}, EventAccumulator(std::move(options)), {}};
  for (const std::string& file : run.files) {
    auto report = ReadEvents(file, [&](const Event& e) {
      stats.acc.AddEvent(e);
      return absl::OkStatus();
    });
    if (!report.ok()) {
      std::cerr << "runnel: warning: " << report.status() << "\n";
      continue;
    }
    for (const EventFileDamage& d : report->damage)
      std::cerr << "runnel: warning: " << d.status.message() << "\n";
    if (report->num_damaged > static_cast<int64_t>(report->damage.size())) {
      std::cerr << "runnel: warning: " << file << ": "
                << report->num_damaged - report->damage.size()
                << " more damaged records\n";
    }
    stats.files.emplace_back(file, std::move(*report));
  }
  auto it = stats.acc.tags().find(tag);
  if (!tag.empty() && it != stats.acc.tags().end()) {
    for (const TagPoint& tp : it->second.points) {
      EventPoint p{tp.step, tp.wall_time, "", ""};
      DescribeValue(tp.value, &p);
      stats.series.push_back(std::move(p));
    }
  }
  return stats;
}

// A tag's steps as "first-last", "-" when every point was purged.
std::string StepRange(const TagSeries& t) {
  if (t.points.empty()) return "-";
  return absl::StrCat(t.points.front().step, "-", t.points.back().step);
}

std::string JsonDamage(const EventFileReport& r) {
  std::vector<std::string> parts;
  for (const EventFileDamage& d : r.damage) {
    parts.push_back(absl::StrCat(
        "{\"offset\": ", d.offset, ", \"kind\": ",
        JsonString(std::string(EventFileDamageKindName(d.kind))),
        ", \"message\": ", JsonString(std::string(d.status.message())), "}"));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string JsonRun(const RunStats& s) {
  std::vector<std::string> files, tags;
  for (const auto& [path, r] : s.files) {
    files.push_back(absl::StrCat("{\"path\": ", JsonString(path),
                                 ", \"events\": ", r.num_events,
                                 ", \"damage\": ", JsonDamage(r), "}"));
  }
  for (const auto& [tag, t] : s.acc.tags()) {
    const bool any = !t.points.empty();
    tags.push_back(absl::StrCat(
        "{\"tag\": ", JsonString(tag), ", \"kind\": \"",
        SummaryKindName(t.kind), "\", \"count\": ", t.points.size(),
        ", \"first_step\": ",
        any ? absl::StrCat(t.points.front().step) : "null",
        ", \"last_step\": ", any ? absl::StrCat(t.points.back().step) : "null",
        t.purged > 0 ? absl::StrCat(", \"purged\": ", t.purged) : "", "}"));
  }
  const EventAccumulator& a = s.acc;
  return absl::StrCat("{\"name\": ", JsonString(s.run.name),
                      ", \"dir\": ", JsonString(s.run.dir), ", \"files\": [",
                      absl::StrJoin(files, ", "),
                      "], \"events\": ", a.num_events(),
                      ", \"graphs\": ", a.num_graphs(),
                      ", \"meta_graphs\": ", a.num_meta_graphs(),
                      ", \"run_metadata\": ", a.num_run_metadata(),
                      ", \"session_logs\": ", a.num_session_logs(),
                      ", \"purged\": ", a.num_purged(), ", \"tags\": [",
                      absl::StrJoin(tags, ", "), "]}");
}

std::string JsonSeries(const RunStats& s, const std::string& tag) {
  std::vector<std::string> points;
  for (const EventPoint& p : s.series) {
    points.push_back(absl::StrCat("{\"step\": ", p.step,
                                  ", \"wall_time\": ", JsonNumber(p.wall_time),
                                  ", \"value\": ", p.json, "}"));
  }
  const TagSeries& t = s.acc.tags().at(tag);
  return absl::StrCat("{\"run\": ", JsonString(s.run.name), ", \"kind\": \"",
                      SummaryKindName(t.kind), "\", \"purged\": ", t.purged,
                      ", \"points\": [", absl::StrJoin(points, ", "), "]}");
}

void PrintRun(const RunStats& s) {
  std::cout << "run " << s.run.name << " (" << s.run.dir
            << "): " << s.files.size() << " event file(s), "
            << s.acc.num_events() << " events\n";
  std::cout << "  graphs " << s.acc.num_graphs() << ", meta graphs "
            << s.acc.num_meta_graphs() << ", run metadata "
            << s.acc.num_run_metadata() << ", session logs "
            << s.acc.num_session_logs() << "\n";
  if (s.acc.num_purged() > 0) {
    std::vector<std::string> per_tag;
    for (const auto& [tag, t] : s.acc.tags()) {
      if (t.purged > 0) per_tag.push_back(absl::StrCat(tag, " ", t.purged));
    }
    std::cout << "  purged " << s.acc.num_purged()
              << " orphaned point(s), as TensorBoard does (a restart or a step "
                 "going back): "
              << absl::StrJoin(per_tag, ", ") << "\n";
  }
  if (s.acc.tags().empty()) return;
  size_t width = 3;
  for (const auto& [tag, t] : s.acc.tags()) width = std::max(width, tag.size());
  std::cout << absl::StrFormat("  %-*s  %-9s  %7s  %s\n", width, "tag", "kind",
                               "count", "steps");
  for (const auto& [tag, t] : s.acc.tags()) {
    std::cout << absl::StrFormat("  %-*s  %-9s  %7d  %s\n", width, tag,
                                 SummaryKindName(t.kind), t.points.size(),
                                 StepRange(t));
  }
}

void PrintSeries(const RunStats& s, const std::string& tag) {
  const TagSeries& t = s.acc.tags().at(tag);
  std::cout << "run " << s.run.name << ", tag " << tag << " ("
            << SummaryKindName(t.kind) << "): " << s.series.size() << " points"
            << (t.purged > 0 ? absl::StrCat(" (", t.purged, " purged)") : "")
            << "\n";
  std::cout << "  step  wall_time  value\n";
  for (const EventPoint& p : s.series) {
    std::cout << "  " << p.step << "  " << ShortestNumber(p.wall_time) << "  "
              << p.text << "\n";
  }
}

int Events(const std::vector<std::string>& args) {
  std::string path, tag;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--tag" && i + 1 < args.size()) {
      tag = args[++i];
      if (tag.empty()) return Usage();
    } else if (path.empty() && !args[i].empty() && args[i][0] != '-') {
      path = args[i];
    } else {
      std::cerr << "runnel: unexpected argument '" << args[i] << "'\n";
      return Usage();
    }
  }
  if (path.empty()) return Usage();
  auto runs = FindEventRuns(path);
  if (!runs.ok()) return Fail(runs.status());
  if (runs->empty())
    return Fail(errors::NotFound("no event files (*tfevents*) in ", path));
  std::vector<RunStats> stats;
  for (const EventRun& run : *runs) stats.push_back(ReadRun(run, tag));

  if (tag.empty()) {
    if (json) {
      std::vector<std::string> parts;
      for (const RunStats& s : stats) parts.push_back(JsonRun(s));
      std::cout << "{\"runs\": [" << absl::StrJoin(parts, ", ") << "]}\n";
    } else {
      for (size_t i = 0; i < stats.size(); ++i) {
        if (i > 0) std::cout << "\n";
        PrintRun(stats[i]);
      }
    }
    return 0;
  }
  std::vector<const RunStats*> with_tag;
  for (const RunStats& s : stats) {
    if (s.acc.tags().count(tag) > 0) with_tag.push_back(&s);
  }
  if (with_tag.empty()) {
    return Fail(
        errors::NotFound("no run in ", path, " has the tag '", tag, "'"));
  }
  if (json) {
    std::vector<std::string> parts;
    for (const RunStats* s : with_tag) parts.push_back(JsonSeries(*s, tag));
    std::cout << "{\"tag\": " << JsonString(tag) << ", \"runs\": ["
              << absl::StrJoin(parts, ", ") << "]}\n";
  } else {
    for (size_t i = 0; i < with_tag.size(); ++i) {
      if (i > 0) std::cout << "\n";
      PrintSeries(*with_tag[i], tag);
    }
  }
  return 0;
}

int Ops() {
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!op.empty() && op[0] == '_') continue;
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(op);
    std::cout << op << ": " << d->op_def.summary()
              << (d->does_io ? " [I/O: refused in untrusted mode]" : "")
              << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) {
#ifdef RUNNEL_WITH_GRPC
  runnel::EnableGrpcSessions();
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return runnel::Usage();
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "run") return runnel::Run(args);
  if (cmd == "inspect") return runnel::Inspect(args);
  if (cmd == "events") return runnel::Events(args);
  if (cmd == "timeline") return runnel::TimelineCommand(args);
  if (cmd == "board") return runnel::BoardCommand(args);
  if (cmd == "ckpt") return runnel::CkptCommand(args);
  if (cmd == "ops") return runnel::Ops();
#ifdef RUNNEL_WITH_GRPC
  if (cmd == "server") return runnel::ServerCommand(args);
#endif
  return runnel::Usage();
}
