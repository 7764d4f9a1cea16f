#include "runnel/distributed/cluster_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace runnel {
namespace {

constexpr int64_t kMaxPort = 65535;
constexpr char kTfConfig[] = "TF_CONFIG: ";
// Note [TF_CONFIG bounds]: protobuf 3.21's JSON parser bounds the nesting of
// objects but not of lists, and its time grows steeply with list depth
// (10000 nested '[', 20 KB, take seconds); TF_CONFIG nests 3 deep, so deeper
// input is refused before protobuf sees it. Within that depth the parse costs
// about 1 s per MB of small values, so the size is bounded too: 8 MiB holds
// kMaxClusterTasks tasks of ~60-byte addresses (and Linux caps one
// environment string at 128 KiB anyway).
constexpr size_t kMaxTfConfigBytes = 8 << 20;
constexpr int kMaxTfConfigDepth = 16;

std::string Quote(absl::string_view s) {
  return absl::StrCat("'", absl::CEscape(s), "'");
}

// A decimal of 1 to 18 digits and nothing else: absl::SimpleAtoi also takes
// signs and surrounding spaces, which no field read here allows.
bool ParseDecimal(absl::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t value = 0;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

// The characters of a host name (and of Slurm node names).
bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '-' || c == '_';
}

Status ValidateJobName(absl::string_view name) {
  if (name.empty()) return errors::InvalidArgument("a job name is empty");
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return errors::InvalidArgument(
          "job name ", Quote(name),
          " may only have letters, digits and '_' ([A-Za-z0-9_]+)");
    }
  }
  return absl::OkStatus();
}

Status ValidateHost(absl::string_view host) {
  if (host.empty()) return errors::InvalidArgument("the host is empty");
  if (host.front() == '[') {
    const absl::string_view inner = host.substr(1, host.size() - 2);
    bool ok = host.size() > 2 && host.back() == ']';
    for (char c : inner) ok = ok && (IsHostChar(c) || c == ':' || c == '%');
    if (!ok) {
      return errors::InvalidArgument("host ", Quote(host),
                                     " is not a bracketed IPv6 address");
    }
    return absl::OkStatus();
  }
  for (char c : host) {
    if (!IsHostChar(c)) {
      return errors::InvalidArgument(
          "host ", Quote(host),
          " may only have letters, digits, '.', '-' and '_' (an IPv6 host "
          "goes in brackets: [::1])");
    }
  }
  return absl::OkStatus();
}

Status ValidateAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return errors::InvalidArgument("address ", Quote(address),
                                   " is not host:port");
  }
  RETURN_IF_ERROR(
      errors::Prefix(ValidateHost(address.substr(0, colon)),
                     absl::StrCat("address ", Quote(address), ": ")));
  int64_t port = 0;
  if (!ParseDecimal(address.substr(colon + 1), &port) || port > kMaxPort) {
    return errors::InvalidArgument("address ", Quote(address),
                                   ": the port is not a number in 0..65535");
  }
  return absl::OkStatus();
}

template <typename T>
StatusOr<T> WithPrefix(StatusOr<T> value, absl::string_view prefix) {
  if (!value.ok()) return errors::Prefix(value.status(), prefix);
  return value;
}

const JobDef* FindJob(const ClusterDef& cluster, absl::string_view name) {
  for (const JobDef& job : cluster.job()) {
    if (job.name() == name) return &job;
  }
  return nullptr;
}

std::string JobNames(const ClusterDef& cluster) {
  return absl::StrJoin(cluster.job(), ", ",
                       [](std::string* out, const JobDef& job) {
                         absl::StrAppend(out, job.name());
                       });
}

std::string JobCountsString(
    const std::vector<std::pair<std::string, int>>& jobs) {
  return absl::StrJoin(jobs, ",", absl::PairFormatter("="));
}

// Checks names, duplicates and counts; returns the total task count.
StatusOr<int> ValidateJobCounts(
    const std::vector<std::pair<std::string, int>>& jobs) {
  if (jobs.empty()) return errors::InvalidArgument("no jobs are given");
  std::set<std::string> seen;
  int64_t total = 0;
  for (const auto& [name, count] : jobs) {
    RETURN_IF_ERROR(ValidateJobName(name));
    if (!seen.insert(name).second) {
      return errors::InvalidArgument("job ", Quote(name), " appears twice");
    }
    if (count < 1) {
      return errors::InvalidArgument("job ", Quote(name), " has ", count,
                                     " tasks; it needs at least 1");
    }
    total += count;
    if (total > kMaxClusterTasks) {
      return errors::InvalidArgument("the jobs have more than ",
                                     kMaxClusterTasks, " tasks in all");
    }
  }
  return static_cast<int>(total);
}

// Gives ranks to jobs in order: job 0 takes ranks 0..n0-1, and so on.
// `addresses` has one address per rank, as many as the jobs' tasks.
ClusterTask AssignRanks(const std::vector<std::pair<std::string, int>>& jobs,
                        const std::vector<std::string>& addresses, int rank) {
  ClusterTask result;
  int next = 0;
  for (const auto& [name, count] : jobs) {
    JobDef* job = result.cluster.add_job();
    job->set_name(name);
    for (int t = 0; t < count; ++t, ++next) {
      (*job->mutable_tasks())[t] = addresses[next];
      if (next == rank) {
        result.job = name;
        result.task = t;
      }
    }
  }
  return result;
}

Status ValidatePortBase(int port_base) {
  if (port_base < 1 || port_base > kMaxPort) {
    return errors::InvalidArgument("port_base ", port_base,
                                   " is not in 1..65535");
  }
  return absl::OkStatus();
}

// A non-negative integer variable no larger than `max`.
StatusOr<int> ReadIntVar(const GetEnvFn& getenv, const char* name,
                         int64_t max) {
  const char* value = getenv(name);
  if (value == nullptr) return errors::InvalidArgument(name, " is not set");
  int64_t n = 0;
  if (!ParseDecimal(value, &n)) {
    return errors::InvalidArgument(name, "=", Quote(value),
                                   " is not a non-negative integer");
  }
  if (n > max) {
    return errors::InvalidArgument(name, "=", n, " is above ", max);
  }
  return static_cast<int>(n);
}

// The first of `names` that is set, as (name, value); name is nullptr when
// none is.
std::pair<const char*, const char*> FirstSet(
    const GetEnvFn& getenv, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* value = getenv(name)) return {name, value};
  }
  return {nullptr, nullptr};
}

// ---- TF_CONFIG ----

// The deepest nesting of [ and { outside strings, for Note [TF_CONFIG bounds].
// Only a guard: on malformed input it may be off, but only past the point
// where protobuf's parser stops anyway. Both quote kinds open strings, so
// the count never misses a bracket that protobuf would parse.
int JsonDepth(absl::string_view json) {
  int depth = 0, max_depth = 0;
  char quote = 0;  // the open string's quote, or 0 outside strings
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

using google::protobuf::Struct;
using google::protobuf::Value;

std::string KindName(const Value& v) {
  switch (v.kind_case()) {
    case Value::kNullValue:
      return "null";
    case Value::kNumberValue:
      return absl::StrCat("the number ", v.number_value());
    case Value::kStringValue:
      return absl::StrCat("the string ", Quote(v.string_value()));
    case Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "a list";
    default:
      return "nothing";
  }
}

std::vector<std::string> SortedKeys(const Struct& s) {
  std::vector<std::string> keys;
  keys.reserve(s.fields().size());
  for (const auto& [key, value] : s.fields()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

Status AddTfConfigTask(const std::string& job_name, int64_t index,
                       const Value& address, int* total, JobDef* job) {
  if (++*total > kMaxClusterTasks) {
    return errors::InvalidArgument(kTfConfig, "cluster has more than ",
                                   kMaxClusterTasks, " tasks");
  }
  const std::string where =
      absl::StrCat(kTfConfig, "cluster.", job_name, "[", index, "]");
  if (address.kind_case() != Value::kStringValue) {
    return errors::InvalidArgument(where,
                                   " must be a \"host:port\" string, "
                                   "not ",
                                   KindName(address));
  }
  RETURN_IF_ERROR(errors::Prefix(ValidateAddress(address.string_value()),
                                 absl::StrCat(where, ": ")));
  (*job->mutable_tasks())[static_cast<int32_t>(index)] = address.string_value();
  return absl::OkStatus();
}

// One job of "cluster": a list of addresses, or TF's sparse form, an object
// of index strings to addresses (TF's ClusterSpec takes int() of each key).
Status ReadTfConfigJob(const std::string& name, const Value& tasks, int* total,
                       JobDef* job) {
  RETURN_IF_ERROR(errors::Prefix(ValidateJobName(name),
                                 absl::StrCat(kTfConfig, "cluster: ")));
  job->set_name(name);
  const std::string where = absl::StrCat(kTfConfig, "cluster.", name);
  if (tasks.kind_case() == Value::kListValue) {
    const auto& values = tasks.list_value().values();
    if (values.empty()) {
      return errors::InvalidArgument(where, " has no tasks");
    }
    for (int i = 0; i < values.size(); ++i) {
      RETURN_IF_ERROR(AddTfConfigTask(name, i, values[i], total, job));
    }
    return absl::OkStatus();
  }
  if (tasks.kind_case() != Value::kStructValue) {
    return errors::InvalidArgument(
        where,
        " must be a list of addresses or an object of index -> address,"
        " not ",
        KindName(tasks));
  }
  if (tasks.struct_value().fields().empty()) {
    return errors::InvalidArgument(where, " has no tasks");
  }
  for (const std::string& key : SortedKeys(tasks.struct_value())) {
    int64_t index = 0;
    if (!ParseDecimal(key, &index) ||
        index > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument(where, ": task index ", Quote(key),
                                     " is not a non-negative integer");
    }
    if (job->tasks().contains(static_cast<int32_t>(index))) {
      return errors::InvalidArgument(where, ": task ", index, " appears twice");
    }
    RETURN_IF_ERROR(AddTfConfigTask(
        name, index, tasks.struct_value().fields().at(key), total, job));
  }
  return absl::OkStatus();
}

StatusOr<int> ReadTaskIndex(const Value& v) {
  constexpr double kMaxIndex = std::numeric_limits<int32_t>::max();
  if (v.kind_case() == Value::kNumberValue) {
    const double d = v.number_value();
    if (d >= 0 && d <= kMaxIndex && d == std::floor(d)) {
      return static_cast<int>(d);
    }
  } else if (v.kind_case() == Value::kStringValue) {
    int64_t index = 0;
    if (ParseDecimal(v.string_value(), &index) && index <= kMaxIndex) {
      return static_cast<int>(index);
    }
  }
  return errors::InvalidArgument(
      kTfConfig, "task.index must be a non-negative integer, not ",
      KindName(v));
}

// "task": {"type": ..., "index": ...}, checked against the cluster.
Status ReadTfConfigTask(const Value& task_value, ClusterTask* result) {
  if (task_value.kind_case() != Value::kStructValue) {
    return errors::InvalidArgument(
        kTfConfig, "\"task\" must be an object, not ", KindName(task_value));
  }
  const auto& task = task_value.struct_value().fields();
  if (auto it = task.find("index"); it != task.end()) {
    ASSIGN_OR_RETURN(result->task, ReadTaskIndex(it->second));
  }
  auto it = task.find("type");
  if (it == task.end()) return absl::OkStatus();
  if (it->second.kind_case() != Value::kStringValue) {
    return errors::InvalidArgument(
        kTfConfig, "task.type must be a string, not ", KindName(it->second));
  }
  const std::string& type = it->second.string_value();
  const JobDef* job = FindJob(result->cluster, type);
  if (job == nullptr) {
    // TF: the evaluator runs beside the cluster, not in it.
    if (type == "evaluator") {
      result->job = type;
      return absl::OkStatus();
    }
    return errors::InvalidArgument(
        kTfConfig, "task.type ", Quote(type),
        " is not a job of the cluster (jobs: ", JobNames(result->cluster), ")");
  }
  if (!job->tasks().contains(result->task)) {
    int max_index = 0;
    for (const auto& [index, address] : job->tasks()) {
      max_index = std::max(max_index, index);
    }
    if (max_index + 1 == job->tasks_size()) {
      return errors::InvalidArgument(kTfConfig, "task.index ", result->task,
                                     " is out of range: job ", Quote(type),
                                     " has ", job->tasks_size(), " tasks");
    }
    return errors::InvalidArgument(kTfConfig, "task.index ", result->task,
                                   " is not a task of job ", Quote(type),
                                   " (it has ", job->tasks_size(),
                                   " tasks, indices up to ", max_index, ")");
  }
  result->job = type;
  return absl::OkStatus();
}

// ---- Slurm ----

// One name of a node list: "gpu-a" or "node[01-03,07]b".
Status ExpandNodeName(absl::string_view name, std::vector<std::string>* out) {
  if (name.empty()) return errors::InvalidArgument("a node name is empty");
  const size_t open = name.find('[');
  const size_t close = name.find(']');
  if (open == absl::string_view::npos && close == absl::string_view::npos) {
    RETURN_IF_ERROR(ValidateHost(name));
    if (out->size() >= static_cast<size_t>(kMaxClusterTasks)) {
      return errors::InvalidArgument("more than ", kMaxClusterTasks, " nodes");
    }
    out->emplace_back(name);
    return absl::OkStatus();
  }
  if (open == absl::string_view::npos || close == absl::string_view::npos ||
      close < open) {
    return errors::InvalidArgument("unmatched bracket in ", Quote(name));
  }
  const absl::string_view prefix = name.substr(0, open);
  const absl::string_view ranges = name.substr(open + 1, close - open - 1);
  const absl::string_view suffix = name.substr(close + 1);
  if (ranges.find('[') != absl::string_view::npos ||
      suffix.find_first_of("[]") != absl::string_view::npos) {
    return errors::InvalidArgument(
        Quote(name), " has more than one bracket group (or nested ones)");
  }
  for (char c : absl::StrCat(prefix, suffix)) {
    if (!IsHostChar(c)) {
      return errors::InvalidArgument(
          Quote(name),
          " may only have letters, digits, '.', '-' and '_' outside brackets");
    }
  }
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    const size_t dash = range.find('-');
    const absl::string_view lo_text = range.substr(0, dash);
    const absl::string_view hi_text =
        dash == absl::string_view::npos ? lo_text : range.substr(dash + 1);
    int64_t lo = 0, hi = 0;
    if (!ParseDecimal(lo_text, &lo) || !ParseDecimal(hi_text, &hi) || lo > hi) {
      return errors::InvalidArgument("range ", Quote(range), " in ",
                                     Quote(name),
                                     " is not a number or lo-hi with lo <= hi");
    }
    if (hi - lo + 1 > static_cast<int64_t>(kMaxClusterTasks - out->size())) {
      return errors::InvalidArgument("more than ", kMaxClusterTasks, " nodes");
    }
    for (int64_t i = lo; i <= hi; ++i) {
      std::string digits = absl::StrCat(i);
      // Slurm keeps the low bound's width: [08-10] is 08, 09, 10.
      if (digits.size() < lo_text.size()) {
        digits.insert(0, lo_text.size() - digits.size(), '0');
      }
      out->push_back(absl::StrCat(prefix, digits, suffix));
    }
  }
  return absl::OkStatus();
}

// This rank's view of the Slurm step: one address per rank, in rank order.
StatusOr<std::vector<std::string>> SlurmAddresses(int ntasks, int port_base,
                                                  const GetEnvFn& getenv) {
  const auto [list_var, list] =
      FirstSet(getenv, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  if (list_var == nullptr) {
    return errors::InvalidArgument(
        "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set");
  }
  ASSIGN_OR_RETURN(
      std::vector<std::string> nodes,
      WithPrefix(ExpandSlurmNodeList(list), absl::StrCat(list_var, ": ")));
  std::vector<int> per_node;
  const auto [counts_var, counts] =
      FirstSet(getenv, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (counts_var != nullptr) {
    ASSIGN_OR_RETURN(per_node, WithPrefix(ExpandSlurmTasksPerNode(counts),
                                          absl::StrCat(counts_var, ": ")));
    if (per_node.size() != nodes.size()) {
      return errors::InvalidArgument(counts_var, "=", Quote(counts), " counts ",
                                     per_node.size(), " nodes but ", list_var,
                                     " has ", nodes.size());
    }
    int64_t sum = 0;
    for (int n : per_node) sum += n;
    if (sum != ntasks) {
      return errors::InvalidArgument(counts_var, "=", Quote(counts), " adds up",
                                     " to ", sum,
                                     " tasks but SLURM_NTASKS=", ntasks);
    }
  } else {
    if (getenv("SLURM_NTASKS_PER_NODE") == nullptr) {
      return errors::InvalidArgument(
          "none of SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE and "
          "SLURM_NTASKS_PER_NODE is set");
    }
    ASSIGN_OR_RETURN(
        int n, ReadIntVar(getenv, "SLURM_NTASKS_PER_NODE", kMaxClusterTasks));
    // With srun -n it is a maximum: the ranks may not fill every node.
    if (n < 1 || static_cast<int64_t>(nodes.size()) * n < ntasks) {
      return errors::InvalidArgument(
          "SLURM_NTASKS_PER_NODE=", n, " on ", nodes.size(),
          " nodes has no room for SLURM_NTASKS=", ntasks);
    }
    per_node.assign(nodes.size(), n);
  }
  std::vector<std::string> addresses;
  for (size_t node = 0; node < nodes.size(); ++node) {
    for (int local = 0; local < per_node[node] &&
                        addresses.size() < static_cast<size_t>(ntasks);
         ++local) {
      if (port_base + local > kMaxPort) {
        return errors::InvalidArgument("port_base ", port_base, " + ", local,
                                       " (task ", local, " on node ",
                                       Quote(nodes[node]), ") is above 65535");
      }
      addresses.push_back(absl::StrCat(nodes[node], ":", port_base + local));
    }
  }
  return addresses;
}

}  // namespace

StatusOr<ClusterDef> ParseClusterSpec(absl::string_view spec) {
  if (spec.empty()) return errors::InvalidArgument("cluster spec is empty");
  ClusterDef cluster;
  std::set<std::string> seen;
  int total = 0;
  for (absl::string_view entry : absl::StrSplit(spec, ';')) {
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) {
      return errors::InvalidArgument("cluster spec: job entry ", Quote(entry),
                                     " is not name=host:port,...");
    }
    const absl::string_view name = entry.substr(0, eq);
    RETURN_IF_ERROR(errors::Prefix(ValidateJobName(name), "cluster spec: "));
    if (!seen.emplace(name).second) {
      return errors::InvalidArgument("cluster spec: job ", Quote(name),
                                     " appears twice");
    }
    const absl::string_view addresses = entry.substr(eq + 1);
    if (addresses.empty()) {
      return errors::InvalidArgument("cluster spec: job ", Quote(name),
                                     " has no tasks");
    }
    JobDef* job = cluster.add_job();
    job->set_name(std::string(name));
    int index = 0;
    for (absl::string_view address : absl::StrSplit(addresses, ',')) {
      if (++total > kMaxClusterTasks) {
        return errors::InvalidArgument("cluster spec has more than ",
                                       kMaxClusterTasks, " tasks");
      }
      RETURN_IF_ERROR(
          errors::Prefix(ValidateAddress(address),
                         absl::StrCat("cluster spec: job ", Quote(name),
                                      " task ", index, ": ")));
      (*job->mutable_tasks())[index++] = std::string(address);
    }
  }
  return cluster;
}

std::string ClusterSpecString(const ClusterDef& cluster) {
  std::vector<std::string> jobs;
  for (const JobDef& job : cluster.job()) {
    std::vector<std::pair<int, std::string>> tasks;
    for (const auto& [index, address] : job.tasks()) {
      tasks.emplace_back(index, address);
    }
    std::sort(tasks.begin(), tasks.end());
    jobs.push_back(absl::StrCat(
        job.name(), "=",
        absl::StrJoin(tasks, ",", [](std::string* out, const auto& task) {
          absl::StrAppend(out, task.second);
        })));
  }
  return absl::StrJoin(jobs, ";");
}

StatusOr<ClusterTask> ClusterFromTfConfig(absl::string_view json) {
  if (json.size() > kMaxTfConfigBytes) {
    return errors::InvalidArgument(kTfConfig, "is ", json.size(),
                                   " bytes, more than the ", kMaxTfConfigBytes,
                                   " allowed");
  }
  if (JsonDepth(json) > kMaxTfConfigDepth) {
    return errors::InvalidArgument(kTfConfig, "nests deeper than ",
                                   kMaxTfConfigDepth, " levels");
  }
  Struct config;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(std::string(json), &config);
  if (!parsed.ok()) {
    return errors::InvalidArgument(
        kTfConfig, "not a JSON object: ", std::string(parsed.message()));
  }
  const auto& fields = config.fields();
  auto cluster = fields.find("cluster");
  if (cluster == fields.end()) {
    return errors::InvalidArgument(kTfConfig, "has no \"cluster\"");
  }
  if (cluster->second.kind_case() != Value::kStructValue) {
    return errors::InvalidArgument(
        kTfConfig, "\"cluster\" must be an object of job -> addresses, not ",
        KindName(cluster->second));
  }
  const Struct& jobs = cluster->second.struct_value();
  if (jobs.fields().empty()) {
    return errors::InvalidArgument(kTfConfig, "cluster has no jobs");
  }
  ClusterTask result;
  int total = 0;
  // Sorted, as TF's ClusterSpec.as_cluster_def writes them.
  for (const std::string& name : SortedKeys(jobs)) {
    RETURN_IF_ERROR(ReadTfConfigJob(name, jobs.fields().at(name), &total,
                                    result.cluster.add_job()));
  }
  if (auto task = fields.find("task"); task != fields.end()) {
    RETURN_IF_ERROR(ReadTfConfigTask(task->second, &result));
  }
  return result;
}

StatusOr<std::vector<std::pair<std::string, int>>> ParseJobCounts(
    absl::string_view spec) {
  if (spec.empty()) return errors::InvalidArgument("job counts are empty");
  std::vector<std::pair<std::string, int>> jobs;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    const size_t eq = entry.find('=');
    int64_t count = 0;
    if (eq == absl::string_view::npos ||
        !ParseDecimal(entry.substr(eq + 1), &count)) {
      return errors::InvalidArgument("job counts: entry ", Quote(entry),
                                     " is not name=count");
    }
    if (count > kMaxClusterTasks) {
      return errors::InvalidArgument("job counts: ", Quote(entry), " has more",
                                     " than ", kMaxClusterTasks, " tasks");
    }
    jobs.emplace_back(std::string(entry.substr(0, eq)),
                      static_cast<int>(count));
    if (jobs.size() > static_cast<size_t>(kMaxClusterTasks)) {
      return errors::InvalidArgument("job counts: more than ", kMaxClusterTasks,
                                     " jobs");
    }
  }
  RETURN_IF_ERROR(
      errors::Prefix(ValidateJobCounts(jobs).status(), "job counts: "));
  return jobs;
}

StatusOr<std::vector<std::string>> ExpandSlurmNodeList(absl::string_view list) {
  if (list.empty()) return errors::InvalidArgument("the node list is empty");
  std::vector<std::string> nodes;
  // Names are separated by commas outside brackets.
  size_t start = 0;
  bool in_brackets = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && !in_brackets)) {
      RETURN_IF_ERROR(ExpandNodeName(list.substr(start, i - start), &nodes));
      start = i + 1;
    } else if (list[i] == '[') {
      in_brackets = true;
    } else if (list[i] == ']') {
      in_brackets = false;
    }
  }
  return nodes;
}

StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view counts) {
  if (counts.empty())
    return errors::InvalidArgument("the task counts are empty");
  std::vector<int> per_node;
  int64_t total = 0;
  for (absl::string_view group : absl::StrSplit(counts, ',')) {
    // "N" or "N(xR)": N tasks on each of R nodes.
    const size_t paren = group.find('(');
    int64_t n = 0, repeat = 1;
    bool ok = ParseDecimal(group.substr(0, paren), &n) && n >= 1;
    if (paren != absl::string_view::npos) {
      ok = ok && absl::StartsWith(group.substr(paren), "(x") &&
           absl::EndsWith(group, ")") &&
           ParseDecimal(group.substr(paren + 2, group.size() - paren - 3),
                        &repeat) &&
           repeat >= 1;
    }
    if (!ok) {
      return errors::InvalidArgument("group ", Quote(group),
                                     " is not N or N(xR), with N, R >= 1");
    }
    if (n > kMaxClusterTasks || repeat > kMaxClusterTasks ||
        (total += n * repeat) > kMaxClusterTasks) {
      return errors::InvalidArgument(Quote(counts), " has more than ",
                                     kMaxClusterTasks, " tasks");
    }
    per_node.insert(per_node.end(), repeat, static_cast<int>(n));
  }
  return per_node;
}

StatusOr<ClusterTask> ClusterFromSlurm(
    const std::vector<std::pair<std::string, int>>& jobs, int port_base,
    const GetEnvFn& getenv) {
  if (!getenv) return errors::InvalidArgument("Slurm: no getenv function");
  ASSIGN_OR_RETURN(const int total,
                   WithPrefix(ValidateJobCounts(jobs), "Slurm: "));
  RETURN_IF_ERROR(errors::Prefix(ValidatePortBase(port_base), "Slurm: "));
  ASSIGN_OR_RETURN(const int rank, WithPrefix(ReadIntVar(getenv, "SLURM_PROCID",
                                                         kMaxClusterTasks),
                                              "Slurm: "));
  ASSIGN_OR_RETURN(
      const int ntasks,
      WithPrefix(ReadIntVar(getenv, "SLURM_NTASKS", kMaxClusterTasks),
                 "Slurm: "));
  if (rank >= ntasks) {
    return errors::InvalidArgument("Slurm: SLURM_PROCID=", rank,
                                   " is not below SLURM_NTASKS=", ntasks);
  }
  if (total != ntasks) {
    return errors::InvalidArgument("Slurm: jobs ", JobCountsString(jobs),
                                   " have ", total,
                                   " tasks but SLURM_NTASKS=", ntasks);
  }
  ASSIGN_OR_RETURN(
      std::vector<std::string> addresses,
      WithPrefix(SlurmAddresses(ntasks, port_base, getenv), "Slurm: "));
  return AssignRanks(jobs, addresses, rank);
}

StatusOr<ClusterTask> ClusterFromMpi(
    const std::vector<std::pair<std::string, int>>& jobs, int port_base,
    const std::string& host, const GetEnvFn& getenv) {
  if (!getenv) return errors::InvalidArgument("MPI: no getenv function");
  ASSIGN_OR_RETURN(const int total,
                   WithPrefix(ValidateJobCounts(jobs), "MPI: "));
  RETURN_IF_ERROR(errors::Prefix(ValidatePortBase(port_base), "MPI: "));
  RETURN_IF_ERROR(errors::Prefix(ValidateHost(host), "MPI: "));
  const char* rank_var = "OMPI_COMM_WORLD_RANK";
  const char* size_var = "OMPI_COMM_WORLD_SIZE";
  if (getenv(rank_var) == nullptr) {
    rank_var = "PMI_RANK";
    size_var = "PMI_SIZE";
    if (getenv(rank_var) == nullptr) {
      return errors::InvalidArgument(
          "MPI: neither OMPI_COMM_WORLD_RANK (Open MPI) nor PMI_RANK (MPICH) "
          "is set; was this started by mpirun?");
    }
  }
  ASSIGN_OR_RETURN(
      const int rank,
      WithPrefix(ReadIntVar(getenv, rank_var, kMaxClusterTasks), "MPI: "));
  ASSIGN_OR_RETURN(
      const int size,
      WithPrefix(ReadIntVar(getenv, size_var, kMaxClusterTasks), "MPI: "));
  if (rank >= size) {
    return errors::InvalidArgument("MPI: ", rank_var, "=", rank,
                                   " is not below ", size_var, "=", size);
  }
  if (total != size) {
    return errors::InvalidArgument("MPI: jobs ", JobCountsString(jobs),
                                   " have ", total, " tasks but ", size_var,
                                   "=", size);
  }
  if (port_base + static_cast<int64_t>(size) - 1 > kMaxPort) {
    return errors::InvalidArgument("MPI: port_base ", port_base, " + rank ",
                                   size - 1, " is above 65535");
  }
  std::vector<std::string> addresses;
  addresses.reserve(size);
  for (int r = 0; r < size; ++r) {
    addresses.push_back(absl::StrCat(host, ":", port_base + r));
  }
  return AssignRanks(jobs, addresses, rank);
}

StatusOr<std::string> TaskAddress(const ClusterDef& cluster,
                                  absl::string_view job, int task) {
  const std::string name =
      absl::StrCat("/job:", absl::CEscape(job), "/task:", task);
  const JobDef* def = FindJob(cluster, job);
  if (def == nullptr) {
    return errors::NotFound(name, " is not in the cluster: it has no job ",
                            Quote(job), " (jobs: ", JobNames(cluster), ")");
  }
  auto it = def->tasks().find(task);
  if (it == def->tasks().end()) {
    return errors::NotFound(name, " is not in the cluster: job ", Quote(job),
                            " has ", def->tasks_size(), " tasks and no task ",
                            task);
  }
  return it->second;
}

}  // namespace runnel
