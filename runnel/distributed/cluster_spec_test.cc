#include "runnel/distributed/cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace runnel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

using JobCounts = std::vector<std::pair<std::string, int>>;

// An environment of the test's own; it must outlive the GetEnvFn.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  GetEnvFn Fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

std::vector<std::string> JobNames(const ClusterDef& cluster) {
  std::vector<std::string> names;
  for (const JobDef& job : cluster.job()) names.push_back(job.name());
  return names;
}

std::map<int, std::string> Tasks(const ClusterDef& cluster,
                                 const std::string& job) {
  for (const JobDef& def : cluster.job()) {
    if (def.name() == job) return {def.tasks().begin(), def.tasks().end()};
  }
  ADD_FAILURE() << "no job " << job;
  return {};
}

void ExpectInvalid(const Status& s, const std::string& substring,
                   const std::string& context = "") {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << context << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(substring)) << context;
}

// ---- ParseClusterSpec / ClusterSpecString ----

TEST(ParseClusterSpecTest, ReadsJobsAndTasksInOrderAndRoundTrips) {
  const std::string spec =
      "worker=h1:2222,[::1]:0,w-2.ns.svc:65535;ps=10.0.0.3:1;chief_0=c:7";
  StatusOr<ClusterDef> cluster = ParseClusterSpec(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_THAT(JobNames(*cluster), ElementsAre("worker", "ps", "chief_0"));
  EXPECT_THAT(Tasks(*cluster, "worker"),
              ElementsAre(Pair(0, "h1:2222"), Pair(1, "[::1]:0"),
                          Pair(2, "w-2.ns.svc:65535")));
  EXPECT_THAT(Tasks(*cluster, "ps"), ElementsAre(Pair(0, "10.0.0.3:1")));
  EXPECT_THAT(Tasks(*cluster, "chief_0"), ElementsAre(Pair(0, "c:7")));
  EXPECT_EQ(ClusterSpecString(*cluster), spec);
  StatusOr<ClusterDef> again = ParseClusterSpec(ClusterSpecString(*cluster));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(*again, *cluster));
}

TEST(ParseClusterSpecTest, BadSpecsAreInvalidArgumentSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "cluster spec is empty"},
      {"ps=", "job 'ps' has no tasks"},
      {"ps=h", "address 'h' is not host:port"},
      {"ps=h:99999", "the port is not a number in 0..65535"},
      {"ps=h:1;ps=h:2", "job 'ps' appears twice"},
      {"p s=h:1", "job name 'p s' may only have letters, digits and '_'"},
      {"ps=:1", "the host is empty"},
      {"ps=h:", "the port is not a number"},
      {"ps=h:+1", "the port is not a number"},
      {"ps=h: 1", "the port is not a number"},
      {"ps=::1:2", "an IPv6 host goes in brackets"},
      {"ps=[::1:2", "is not a bracketed IPv6 address"},
      {"ps=[]:2", "is not a bracketed IPv6 address"},
      {"ps=h:1,", "job 'ps' task 1: address '' is not host:port"},
      {"ps=h:1;", "job entry '' is not name=host:port"},
      {"ps", "job entry 'ps' is not name=host:port"},
      {"=h:1", "a job name is empty"},
      {"ps=h:1;;w=h:2", "job entry ''"},
      {"ps=h/x:1", "host 'h/x' may only have"},
  };
  for (const auto& [spec, why] : cases) {
    ExpectInvalid(ParseClusterSpec(spec).status(), why, spec);
  }
}

TEST(ParseClusterSpecTest, RejectsMoreThanTheMaximumTasks) {
  std::vector<std::string> addresses(kMaxClusterTasks, "h:1");
  EXPECT_TRUE(
      ParseClusterSpec(absl::StrCat("w=", absl::StrJoin(addresses, ","))).ok());
  addresses.push_back("h:1");
  ExpectInvalid(
      ParseClusterSpec(absl::StrCat("w=", absl::StrJoin(addresses, ",")))
          .status(),
      "more than 100000 tasks");
}

TEST(ClusterSpecStringTest, WritesTasksInIndexOrder) {
  ClusterDef cluster;
  JobDef* job = cluster.add_job();
  job->set_name("w");
  (*job->mutable_tasks())[3] = "b:2";
  (*job->mutable_tasks())[1] = "a:1";
  cluster.add_job()->set_name("ps");
  (*cluster.mutable_job(1)->mutable_tasks())[0] = "p:3";
  EXPECT_EQ(ClusterSpecString(cluster), "w=a:1,b:2;ps=p:3");
  EXPECT_EQ(ClusterSpecString(ClusterDef()), "");
}

// ---- TF_CONFIG ----

StatusOr<ClusterTask> ReadTfConfig(const std::string& json) {
  return ClusterFromTfConfig(json);
}

TEST(TfConfigTest, ReadsFormatsExampleExactly) {
  // FORMATS.md (d), as tf-operator writes it.
  StatusOr<ClusterTask> t = ReadTfConfig(R"json(
{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222","h2:2222"], "ps": ["h3:2222"]},
 "task": {"type": "worker", "index": 1}, "environment": "cloud", "rpc_layer": "grpc"}
)json");
  ASSERT_TRUE(t.ok()) << t.status();
  // Sorted by name, as TF's ClusterSpec.as_cluster_def writes them.
  EXPECT_THAT(JobNames(t->cluster), ElementsAre("chief", "ps", "worker"));
  EXPECT_THAT(Tasks(t->cluster, "chief"), ElementsAre(Pair(0, "h0:2222")));
  EXPECT_THAT(Tasks(t->cluster, "worker"),
              ElementsAre(Pair(0, "h1:2222"), Pair(1, "h2:2222")));
  EXPECT_THAT(Tasks(t->cluster, "ps"), ElementsAre(Pair(0, "h3:2222")));
  EXPECT_EQ(t->job, "worker");
  EXPECT_EQ(t->task, 1);
  StatusOr<std::string> address = TaskAddress(t->cluster, t->job, t->task);
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "h2:2222");
}

TEST(TfConfigTest, NormalClusterSpecRead) {
  // TF: tfconfig_cluster_resolver_test.py, testNormalClusterSpecRead.
  StatusOr<ClusterTask> t = ReadTfConfig(R"json(
    {
      "cluster": {
        "ps": ["ps0:2222", "ps1:2222"],
        "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]
      },
      "task": {
        "type": "ps",
        "index": 0
      },
      "session_master": "grpc://ps0:2222"
    }
  )json");
  ASSERT_TRUE(t.ok()) << t.status();
  ClusterDef expected;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        job {
          name: 'ps'
          tasks { key: 0 value: 'ps0:2222' }
          tasks { key: 1 value: 'ps1:2222' }
        }
        job {
          name: 'worker'
          tasks { key: 0 value: 'worker0:2222' }
          tasks { key: 1 value: 'worker1:2222' }
          tasks { key: 2 value: 'worker2:2222' }
        }
      )pb",
      &expected));
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(t->cluster, expected))
      << t->cluster.DebugString();
  EXPECT_EQ(t->job, "ps");
  EXPECT_EQ(t->task, 0);
}

TEST(TfConfigTest, SparseFormKeepsItsIndices) {
  StatusOr<ClusterTask> t = ReadTfConfig(R"json(
    {"cluster": {"worker": {"3": "h3:2222", "1": "h1:2222"}, "ps": ["p:1"]},
     "task": {"type": "worker", "index": 3}})json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(JobNames(t->cluster), ElementsAre("ps", "worker"));
  EXPECT_THAT(Tasks(t->cluster, "worker"),
              ElementsAre(Pair(1, "h1:2222"), Pair(3, "h3:2222")));
  EXPECT_EQ(t->job, "worker");
  EXPECT_EQ(t->task, 3);

  ExpectInvalid(ReadTfConfig(R"({"cluster": {"worker": {"1": "h:1"}},
                                 "task": {"type": "worker", "index": 0}})")
                    .status(),
                "TF_CONFIG: task.index 0 is not a task of job 'worker' (it "
                "has 1 tasks, indices up to 1)");
}

TEST(TfConfigTest, EvaluatorMayBeOutsideTheCluster) {
  StatusOr<ClusterTask> t = ReadTfConfig(R"json(
    {"cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]},
     "task": {"type": "evaluator", "index": 0}})json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "evaluator");
  EXPECT_EQ(t->task, 0);
  EXPECT_THAT(JobNames(t->cluster), ElementsAre("chief", "worker"));
  EXPECT_EQ(TaskAddress(t->cluster, "evaluator", 0).status().code(),
            absl::StatusCode::kNotFound);

  // Listed in the cluster, it is checked like any job.
  t = ReadTfConfig(R"({"cluster": {"evaluator": ["e:1"]},
                      "task": {"type": "evaluator", "index": 0}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "evaluator");
  ExpectInvalid(ReadTfConfig(R"({"cluster": {"evaluator": ["e:1"]},
                                 "task": {"type": "evaluator", "index": 1}})")
                    .status(),
                "task.index 1 is out of range: job 'evaluator' has 1 tasks");
}

TEST(TfConfigTest, TaskIsOptionalAndIndexDefaultsToZero) {
  StatusOr<ClusterTask> t = ReadTfConfig(R"({"cluster": {"w": ["h:1"]}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "");
  EXPECT_EQ(t->task, 0);
  EXPECT_THAT(Tasks(t->cluster, "w"), ElementsAre(Pair(0, "h:1")));

  t = ReadTfConfig(R"({"cluster": {"w": ["h:1", "h:2"]},
                      "task": {"type": "w"}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "w");
  EXPECT_EQ(t->task, 0);

  // As Python's int() reads it, TF takes an index string too.
  t = ReadTfConfig(R"({"cluster": {"w": ["h:1", "h:2"]},
                      "task": {"type": "w", "index": "1"}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->task, 1);

  t = ReadTfConfig(R"({"cluster": {"w": ["h:1"]}, "task": {"index": 4}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "");
  EXPECT_EQ(t->task, 4);
}

TEST(TfConfigTest, ErrorsStartWithTfConfigAndSayWhatIsWrong) {
  const std::string two_jobs = R"("cluster": {"worker": ["w:1", "w:2"],
                                              "ps": ["p:1"]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "TF_CONFIG: not a JSON object"},
      {"{", "TF_CONFIG: not a JSON object"},
      {"[1]", "TF_CONFIG: not a JSON object"},
      {R"({"task": {"type": "worker"}})", "TF_CONFIG: has no \"cluster\""},
      {R"({"cluster": ["h:1"]})",
       "TF_CONFIG: \"cluster\" must be an object of job -> addresses, not a "
       "list"},
      {R"({"cluster": {}})", "TF_CONFIG: cluster has no jobs"},
      {R"({"cluster": {"worker": "h:1"}})",
       "TF_CONFIG: cluster.worker must be a list of addresses or an object "
       "of index -> address, not the string 'h:1'"},
      {R"({"cluster": {"worker": []}})",
       "TF_CONFIG: cluster.worker has no tasks"},
      {R"({"cluster": {"worker": {}}})",
       "TF_CONFIG: cluster.worker has no tasks"},
      {R"({"cluster": {"worker": [1]}})",
       "TF_CONFIG: cluster.worker[0] must be a \"host:port\" string, not the "
       "number 1"},
      {R"({"cluster": {"worker": ["w:1", "h"]}})",
       "TF_CONFIG: cluster.worker[1]: address 'h' is not host:port"},
      {R"({"cluster": {"worker": ["h:70000"]}})",
       "TF_CONFIG: cluster.worker[0]: address 'h:70000': the port"},
      {R"({"cluster": {"wo rker": ["h:1"]}})",
       "TF_CONFIG: cluster: job name 'wo rker' may only have letters"},
      {R"({"cluster": {"worker": {"x": "h:1"}}})",
       "TF_CONFIG: cluster.worker: task index 'x' is not a non-negative "
       "integer"},
      {R"({"cluster": {"worker": {"-1": "h:1"}}})",
       "task index '-1' is not a non-negative integer"},
      {R"({"cluster": {"worker": {"1": "h:1", "01": "h:2"}}})",
       "TF_CONFIG: cluster.worker: task 1 appears twice"},
      {"{" + two_jobs + R"(, "task": 1})",
       "TF_CONFIG: \"task\" must be an object, not the number 1"},
      {"{" + two_jobs + R"(, "task": {"type": 3}})",
       "TF_CONFIG: task.type must be a string, not the number 3"},
      {"{" + two_jobs + R"(, "task": {"type": "foo", "index": 0}})",
       "TF_CONFIG: task.type 'foo' is not a job of the cluster (jobs: ps, "
       "worker)"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": -1}})",
       "TF_CONFIG: task.index must be a non-negative integer, not the number "
       "-1"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": 1.5}})",
       "TF_CONFIG: task.index must be a non-negative integer, not the number "
       "1.5"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": "one"}})",
       "TF_CONFIG: task.index must be a non-negative integer, not the string "
       "'one'"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": true}})",
       "TF_CONFIG: task.index must be a non-negative integer, not true"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": 1e10}})",
       "TF_CONFIG: task.index must be a non-negative integer"},
      {"{" + two_jobs + R"(, "task": {"type": "worker", "index": 2}})",
       "TF_CONFIG: task.index 2 is out of range: job 'worker' has 2 tasks"},
      {"{" + two_jobs + R"(, "task": {"type": "ps", "index": 1}})",
       "TF_CONFIG: task.index 1 is out of range: job 'ps' has 1 tasks"},
  };
  for (const auto& [json, why] : cases) {
    Status s = ReadTfConfig(json).status();
    ExpectInvalid(s, why, json);
    EXPECT_THAT(std::string(s.message()), StartsWith("TF_CONFIG: ")) << json;
  }
  // The one the brief names, in full.
  EXPECT_EQ(ReadTfConfig("{" + two_jobs + R"(, "task": {"type": "foo"}})")
                .status()
                .message(),
            "TF_CONFIG: task.type 'foo' is not a job of the cluster (jobs: "
            "ps, worker)");
}

TEST(TfConfigTest, RejectsMoreThanTheMaximumTasks) {
  std::vector<std::string> addresses(kMaxClusterTasks / 2 + 1, "\"h:1\"");
  const std::string list =
      absl::StrCat("[", absl::StrJoin(addresses, ","), "]");
  ExpectInvalid(ReadTfConfig(absl::StrCat(R"({"cluster": {"a": )", list,
                                          R"(, "b": )", list, "}}"))
                    .status(),
                "TF_CONFIG: cluster has more than 100000 tasks");
}

TEST(TfConfigTest, RefusesDeepNestingBeforeParsing) {
  // Protobuf's parser is slow on deep lists: Note [TF_CONFIG bounds].
  const std::string deep =
      absl::StrCat(R"({"cluster": {"w": ["h:1"]}, "x": )",
                   std::string(1000000, '['), std::string(1000000, ']'), "}");
  ExpectInvalid(ReadTfConfig(deep).status(),
                "TF_CONFIG: nests deeper than 16 levels");
  ExpectInvalid(
      ReadTfConfig(absl::StrCat(R"({"cluster": {"w": ["h:1"]}, "x": ")",
                                std::string(9 << 20, 'x'), "\"}"))
          .status(),
      "TF_CONFIG: is 9437220 bytes, more than the 8388608 allowed");
  // Brackets inside strings do not count; shallow extra keys are ignored.
  StatusOr<ClusterTask> t = ReadTfConfig(absl::StrCat(
      R"({"cluster": {"w": ["h:1"]}, "x": [[[{"y": [[1]]}]]], "z": ")",
      std::string(100, '['), R"(\"[\\"})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster), "w=h:1");
}

// ---- TaskAddress ----

TEST(TaskAddressTest, FindsTasksAndNamesMissingOnes) {
  StatusOr<ClusterDef> cluster = ParseClusterSpec("ps=p:1;worker=w:1,w:2");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  StatusOr<std::string> address = TaskAddress(*cluster, "worker", 1);
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "w:2");

  Status s = TaskAddress(*cluster, "worker", 5).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("/job:worker/task:5 is not in the cluster: job "
                        "'worker' has 2 tasks and no task 5"));
  s = TaskAddress(*cluster, "chief", 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("/job:chief/task:0 is not in the cluster: it has no "
                        "job 'chief' (jobs: ps, worker)"));
  EXPECT_EQ(TaskAddress(*cluster, "ps", -1).status().code(),
            absl::StatusCode::kNotFound);
}

// ---- ParseJobCounts ----

TEST(ParseJobCountsTest, ReadsJobsInOrder) {
  StatusOr<JobCounts> jobs = ParseJobCounts("worker=2,ps=1");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(*jobs, ElementsAre(Pair("worker", 2), Pair("ps", 1)));
}

TEST(ParseJobCountsTest, BadCountsAreInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "job counts are empty"},
      {"ps", "entry 'ps' is not name=count"},
      {"ps=", "entry 'ps=' is not name=count"},
      {"ps=-1", "is not name=count"},
      {"ps=x", "is not name=count"},
      {"ps=1,", "entry '' is not name=count"},
      {"ps=0", "job 'ps' has 0 tasks; it needs at least 1"},
      {"ps=1,ps=2", "job 'ps' appears twice"},
      {"p s=1", "job name 'p s' may only have"},
      {"=1", "a job name is empty"},
      {"ps=100001", "more than 100000 tasks"},
      {"ps=60000,worker=60000", "more than 100000 tasks"},
  };
  for (const auto& [spec, why] : cases) {
    ExpectInvalid(ParseJobCounts(spec).status(), why, spec);
  }
}

// ---- Slurm ----

TEST(SlurmTest, ExpandsNodeLists) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"n[1-3]", {"n1", "n2", "n3"}},
      {"t[01-02],x", {"t01", "t02", "x"}},
      {"a[9-11]", {"a9", "a10", "a11"}},
      {"n[08-10]", {"n08", "n09", "n10"}},
      {"node[01-03,07],gpu-a,h[1-2]b",
       {"node01", "node02", "node03", "node07", "gpu-a", "h1b", "h2b"}},
      {"single", {"single"}},
      {"[1-2]", {"1", "2"}},
  };
  for (const auto& [list, expected] : cases) {
    StatusOr<std::vector<std::string>> nodes = ExpandSlurmNodeList(list);
    ASSERT_TRUE(nodes.ok()) << list << ": " << nodes.status();
    EXPECT_EQ(*nodes, expected) << list;
  }
}

TEST(SlurmTest, BadNodeListsAreInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "the node list is empty"},
      {"a,,b", "a node name is empty"},
      {"n[1-3", "unmatched bracket in 'n[1-3'"},
      {"n1-3]", "unmatched bracket"},
      {"n[3-1]", "range '3-1' in 'n[3-1]' is not a number or lo-hi"},
      {"n[]", "range '' in 'n[]'"},
      {"n[a-b]", "range 'a-b'"},
      {"n[1-]", "range '1-'"},
      {"n[1-2][3-4]", "more than one bracket group"},
      {"n[[1]]", "more than one bracket group"},
      {"n x", "host 'n x' may only have"},
      {"n@[1-2]", "may only have letters, digits, '.', '-' and '_' outside"},
      {"n[1-200000]", "more than 100000 nodes"},
      {"n[1-99999999999999999]", "more than 100000 nodes"},
  };
  for (const auto& [list, why] : cases) {
    ExpectInvalid(ExpandSlurmNodeList(list).status(), why, list);
  }
}

TEST(SlurmTest, ExpandsTasksPerNode) {
  StatusOr<std::vector<int>> counts = ExpandSlurmTasksPerNode("2(x2),1");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(2, 2, 1));
  counts = ExpandSlurmTasksPerNode("2(x3),1");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(2, 2, 2, 1));
  counts = ExpandSlurmTasksPerNode("4");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(4));

  ExpectInvalid(ExpandSlurmTasksPerNode("").status(),
                "the task counts are empty");
  for (const char* bad :
       {"0", "2(x0)", "2(3)", "2(x3", "x", "2,,1", "-1", "2(x)", "(x2)"}) {
    ExpectInvalid(ExpandSlurmTasksPerNode(bad).status(), "is not N or N(xR)",
                  bad);
  }
  ExpectInvalid(ExpandSlurmTasksPerNode("1(x100001)").status(),
                "more than 100000 tasks");
}

// ps=1,worker=3 over 2 nodes with 2 tasks each.
FakeEnv TwoByTwo(int rank) {
  return FakeEnv{{{"SLURM_PROCID", absl::StrCat(rank)},
                  {"SLURM_NTASKS", "4"},
                  {"SLURM_STEP_NODELIST", "n[1-2]"},
                  {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                  {"SLURM_JOB_NODELIST", "ignored[1-9]"}}};
}

TEST(SlurmTest, MapsRanksToJobsTasksAndAddresses) {
  const JobCounts jobs = {{"ps", 1}, {"worker", 3}};
  const std::vector<std::pair<std::string, int>> expected = {
      {"ps", 0}, {"worker", 0}, {"worker", 1}, {"worker", 2}};
  const std::vector<std::string> addresses = {"n1:8888", "n1:8889", "n2:8888",
                                              "n2:8889"};
  for (int rank = 0; rank < 4; ++rank) {
    const FakeEnv env = TwoByTwo(rank);
    StatusOr<ClusterTask> t = ClusterFromSlurm(jobs, 8888, env.Fn());
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(ClusterSpecString(t->cluster),
              "ps=n1:8888;worker=n1:8889,n2:8888,n2:8889");
    EXPECT_EQ(t->job, expected[rank].first) << rank;
    EXPECT_EQ(t->task, expected[rank].second) << rank;
    StatusOr<std::string> address = TaskAddress(t->cluster, t->job, t->task);
    ASSERT_TRUE(address.ok()) << address.status();
    EXPECT_EQ(*address, addresses[rank]) << rank;
  }
}

TEST(SlurmTest, FallsBackToJobNodeListAndNtasksPerNode) {
  // srun -n 3 --ntasks-per-node=2: a maximum, the last node is not full.
  const FakeEnv env{{{"SLURM_PROCID", "2"},
                     {"SLURM_NTASKS", "3"},
                     {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                     {"SLURM_NTASKS_PER_NODE", "2"}}};
  StatusOr<ClusterTask> t = ClusterFromSlurm({{"worker", 3}}, 9000, env.Fn());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster),
            "worker=gpu07:9000,gpu07:9001,gpu08:9000");
  EXPECT_EQ(t->job, "worker");
  EXPECT_EQ(t->task, 2);

  // SLURM_TASKS_PER_NODE is read when the step's is not set.
  const FakeEnv uneven{{{"SLURM_PROCID", "0"},
                        {"SLURM_NTASKS", "3"},
                        {"SLURM_JOB_NODELIST", "a,b"},
                        {"SLURM_TASKS_PER_NODE", "1,2"},
                        {"SLURM_NTASKS_PER_NODE", "7"}}};
  t = ClusterFromSlurm({{"chief", 1}, {"worker", 2}}, 2222, uneven.Fn());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster), "chief=a:2222;worker=b:2222,b:2223");
  EXPECT_EQ(t->job, "chief");
  EXPECT_EQ(t->task, 0);
}

TEST(SlurmTest, BadEnvironmentsAreInvalidArgumentNamingTheVariable) {
  const JobCounts jobs = {{"ps", 1}, {"worker", 3}};
  struct Case {
    std::map<std::string, std::string> change;  // "" erases
    std::string why;
  };
  const std::vector<Case> cases = {
      {{{"SLURM_PROCID", ""}}, "Slurm: SLURM_PROCID is not set"},
      {{{"SLURM_PROCID", "x"}},
       "Slurm: SLURM_PROCID='x' is not a non-negative integer"},
      {{{"SLURM_PROCID", "-1"}}, "SLURM_PROCID='-1' is not a non-negative"},
      {{{"SLURM_PROCID", "4"}}, "SLURM_PROCID=4 is not below SLURM_NTASKS=4"},
      {{{"SLURM_NTASKS", ""}}, "SLURM_NTASKS is not set"},
      {{{"SLURM_NTASKS", "99999999"}}, "SLURM_NTASKS=99999999 is above 100000"},
      {{{"SLURM_NTASKS", "5"}},
       "Slurm: jobs ps=1,worker=3 have 4 tasks but SLURM_NTASKS=5"},
      {{{"SLURM_STEP_NODELIST", ""}, {"SLURM_JOB_NODELIST", ""}},
       "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set"},
      {{{"SLURM_STEP_NODELIST", "n[1-2"}},
       "Slurm: SLURM_STEP_NODELIST: unmatched bracket"},
      {{{"SLURM_STEP_NODELIST", ""}},
       "SLURM_STEP_TASKS_PER_NODE='2(x2)' counts 2 nodes but "
       "SLURM_JOB_NODELIST has 9"},
      {{{"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}},
       "SLURM_STEP_TASKS_PER_NODE='2(x3)' counts 3 nodes but "
       "SLURM_STEP_NODELIST has 2"},
      {{{"SLURM_STEP_TASKS_PER_NODE", "2,1"}},
       "SLURM_STEP_TASKS_PER_NODE='2,1' adds up to 3 tasks but "
       "SLURM_NTASKS=4"},
      {{{"SLURM_STEP_TASKS_PER_NODE", "two"}},
       "Slurm: SLURM_STEP_TASKS_PER_NODE: group 'two' is not N or N(xR)"},
      {{{"SLURM_STEP_TASKS_PER_NODE", ""}},
       "none of SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE and "
       "SLURM_NTASKS_PER_NODE is set"},
      {{{"SLURM_STEP_TASKS_PER_NODE", ""}, {"SLURM_NTASKS_PER_NODE", "1"}},
       "SLURM_NTASKS_PER_NODE=1 on 2 nodes has no room for SLURM_NTASKS=4"},
      {{{"SLURM_STEP_TASKS_PER_NODE", ""}, {"SLURM_NTASKS_PER_NODE", "0"}},
       "SLURM_NTASKS_PER_NODE=0 on 2 nodes has no room"},
      {{{"SLURM_STEP_TASKS_PER_NODE", ""}, {"SLURM_NTASKS_PER_NODE", "2x"}},
       "SLURM_NTASKS_PER_NODE='2x' is not a non-negative integer"},
  };
  for (const Case& c : cases) {
    FakeEnv env = TwoByTwo(1);
    for (const auto& [name, value] : c.change) {
      if (value.empty()) {
        env.vars.erase(name);
      } else {
        env.vars[name] = value;
      }
    }
    ExpectInvalid(ClusterFromSlurm(jobs, 8888, env.Fn()).status(), c.why,
                  c.why);
  }
}

TEST(SlurmTest, BadArgumentsAreInvalidArgument) {
  const FakeEnv env = TwoByTwo(0);
  ExpectInvalid(
      ClusterFromSlurm({{"ps", 1}, {"worker", 3}}, 65535, env.Fn()).status(),
      "port_base 65535 + 1 (task 1 on node 'n1') is above 65535");
  ExpectInvalid(
      ClusterFromSlurm({{"ps", 1}, {"worker", 3}}, 0, env.Fn()).status(),
      "port_base 0 is not in 1..65535");
  ExpectInvalid(ClusterFromSlurm({}, 8888, env.Fn()).status(),
                "Slurm: no jobs are given");
  ExpectInvalid(
      ClusterFromSlurm({{"ps", 1}, {"ps", 3}}, 8888, env.Fn()).status(),
      "job 'ps' appears twice");
  ExpectInvalid(
      ClusterFromSlurm({{"ps", 0}, {"worker", 4}}, 8888, env.Fn()).status(),
      "job 'ps' has 0 tasks");
  ExpectInvalid(ClusterFromSlurm({{"a/b", 4}}, 8888, env.Fn()).status(),
                "job name 'a/b'");
  ExpectInvalid(ClusterFromSlurm({{"worker", 4}}, 8888, GetEnvFn()).status(),
                "no getenv function");
}

// ---- MPI ----

TEST(MpiTest, MapsRankToJobTaskAndPort) {
  const FakeEnv env{{{"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "3"},
                     {"PMI_RANK", "0"},
                     {"PMI_SIZE", "3"}}};
  StatusOr<ClusterTask> t = ClusterFromMpi({{"ps", 1}, {"worker", 2}}, 9000,
                                           kDefaultMpiHost, env.Fn());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster),
            "ps=127.0.0.1:9000;worker=127.0.0.1:9001,127.0.0.1:9002");
  EXPECT_EQ(t->job, "worker");
  EXPECT_EQ(t->task, 1);
  StatusOr<std::string> address = TaskAddress(t->cluster, t->job, t->task);
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "127.0.0.1:9002");
}

TEST(MpiTest, FallsBackToPmi) {
  const FakeEnv env{{{"PMI_RANK", "0"}, {"PMI_SIZE", "3"}}};
  StatusOr<ClusterTask> t =
      ClusterFromMpi({{"ps", 1}, {"worker", 2}}, 9000, "[::1]", env.Fn());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster),
            "ps=[::1]:9000;worker=[::1]:9001,[::1]:9002");
  EXPECT_EQ(t->job, "ps");
  EXPECT_EQ(t->task, 0);
}

TEST(MpiTest, BadInputsAreInvalidArgument) {
  const JobCounts jobs = {{"ps", 1}, {"worker", 2}};
  const FakeEnv good{
      {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"}}};
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "h", FakeEnv{}.Fn()).status(),
                "MPI: neither OMPI_COMM_WORLD_RANK (Open MPI) nor PMI_RANK");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "h",
                               FakeEnv{{{"OMPI_COMM_WORLD_RANK", "1"}}}.Fn())
                    .status(),
                "MPI: OMPI_COMM_WORLD_SIZE is not set");
  ExpectInvalid(
      ClusterFromMpi(jobs, 9000, "h",
                     FakeEnv{{{"PMI_RANK", "1"}, {"PMI_SIZE", "z"}}}.Fn())
          .status(),
      "MPI: PMI_SIZE='z' is not a non-negative integer");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "h",
                               FakeEnv{{{"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_SIZE", "3"}}}
                                   .Fn())
                    .status(),
                "OMPI_COMM_WORLD_RANK=3 is not below OMPI_COMM_WORLD_SIZE=3");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "h",
                               FakeEnv{{{"OMPI_COMM_WORLD_RANK", "0"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"}}}
                                   .Fn())
                    .status(),
                "MPI: jobs ps=1,worker=2 have 3 tasks but "
                "OMPI_COMM_WORLD_SIZE=4");
  ExpectInvalid(ClusterFromMpi(jobs, 65534, "h", good.Fn()).status(),
                "MPI: port_base 65534 + rank 2 is above 65535");
  ExpectInvalid(ClusterFromMpi(jobs, -5, "h", good.Fn()).status(),
                "MPI: port_base -5 is not in 1..65535");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "", good.Fn()).status(),
                "MPI: the host is empty");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "a:b", good.Fn()).status(),
                "MPI: host 'a:b' may only have");
  ExpectInvalid(ClusterFromMpi({}, 9000, "h", good.Fn()).status(),
                "MPI: no jobs are given");
  ExpectInvalid(ClusterFromMpi(jobs, 9000, "h", nullptr).status(),
                "no getenv function");
  // Largest port allowed: 65533 + 2.
  StatusOr<ClusterTask> t = ClusterFromMpi(jobs, 65533, "h", good.Fn());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ClusterSpecString(t->cluster), "ps=h:65533;worker=h:65534,h:65535");
}

}  // namespace
}  // namespace runnel
