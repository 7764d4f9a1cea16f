// The registry test: every registered op has a shape function, a doc string,
// a gradient function or an explicit NoGradient, and a CPU kernel for each
// dtype its type attrs allow (DESIGN.md §4, "Op registration"). It walks the
// registries, so a new op is checked without being listed anywhere.
#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_join.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// Every combination of allowed types for the op's "type" attrs (first
// allowed value of the others when the product gets large).
std::vector<AttrMap> TypeCombinations(const OpDef& def) {
  std::vector<AttrMap> combos(1);
  for (const auto& a : def.attr()) {
    if (a.type() != "type") continue;
    std::vector<DataType> allowed;
    for (int t : a.allowed_values().list().type())
      allowed.push_back(static_cast<DataType>(t));
    if (allowed.empty())
      continue;  // Any type: covered by the kernel's own tests.
    std::vector<AttrMap> next;
    for (const AttrMap& c : combos) {
      for (DataType t : allowed) {
        AttrMap m = c;
        m[a.name()] = MakeAttrValue(t);
        next.push_back(std::move(m));
      }
    }
    combos = std::move(next);
  }
  return combos;
}

bool KernelMatches(const KernelDef& k, const AttrMap& types) {
  if (k.device_type != "CPU" || !k.label.empty()) return false;
  for (const auto& [attr, allowed] : k.type_constraints) {
    auto it = types.find(attr);
    if (it == types.end()) continue;  // Constraint on an unconstrained attr.
    bool ok = false;
    for (DataType t : allowed) ok |= t == it->second.type();
    if (!ok) return false;
  }
  return true;
}

TEST(OpsRegistryTest, EveryOpHasShapeFnDocAndKernels) {
  std::vector<std::string> problems;
  int ops = 0;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(name);
    ++ops;
    if (!d->shape_fn) problems.push_back(name + ": no shape function");
    if (d->op_def.summary().empty()) problems.push_back(name + ": no doc");
    auto kernels = KernelRegistry::Global()->KernelsForOp(name);
    for (const AttrMap& combo : TypeCombinations(d->op_def)) {
      bool found = false;
      for (const KernelDef* k : kernels) found |= KernelMatches(*k, combo);
      if (!found) {
        std::vector<std::string> types;
        for (const auto& [k, v] : combo)
          types.push_back(k + "=" + DataTypeString(v.type()));
        problems.push_back(name + ": no CPU kernel for " +
                           absl::StrJoin(types, ","));
      }
    }
  }
  EXPECT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
  EXPECT_GT(ops, 100);
}

// Every op that can pass a gradient on (it has inputs and outputs) has a
// REGISTER_GRADIENT or a REGISTER_NO_GRADIENT with its reason. Internal
// ("_...") ops are exempt.
TEST(OpsRegistryTest, EveryOpHasAGradientOrSaysWhyNot) {
  std::vector<std::string> missing;
  int differentiable = 0;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    const OpDef& def = OpRegistry::Global()->LookUp(name)->op_def;
    if (name[0] == '_' || def.input_arg_size() == 0 ||
        def.output_arg_size() == 0) {
      continue;
    }
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(name);
    if (e == nullptr) {
      missing.push_back(name);
    } else if (e->fn == nullptr) {
      EXPECT_FALSE(e->reason.empty()) << name << ": NoGradient without reason";
    } else {
      ++differentiable;
    }
  }
  EXPECT_TRUE(missing.empty())
      << "ops with neither REGISTER_GRADIENT nor REGISTER_NO_GRADIENT: "
      << absl::StrJoin(missing, ", ");
  EXPECT_GT(differentiable, 50);
}

// Every gradient entry names a registered op (a misspelt REGISTER_GRADIENT
// would otherwise never be used).
TEST(OpsRegistryTest, EveryGradientEntryNamesAnOp) {
  for (const std::string& name : GradientRegistry::Global()->ListOps()) {
    EXPECT_NE(OpRegistry::Global()->LookUp(name), nullptr) << name;
  }
}

// The ops issue #2 names must all exist.
TEST(OpsRegistryTest, CoreOpsAreRegistered) {
  const char* kOps[] = {"Const",
                        "Placeholder",
                        "PlaceholderV2",
                        "PlaceholderWithDefault",
                        "Identity",
                        "IdentityN",
                        "NoOp",
                        "Add",
                        "AddV2",
                        "Sub",
                        "Mul",
                        "Div",
                        "RealDiv",
                        "FloorDiv",
                        "FloorMod",
                        "Maximum",
                        "Minimum",
                        "Pow",
                        "SquaredDifference",
                        "Neg",
                        "Abs",
                        "Sign",
                        "Square",
                        "Sqrt",
                        "Rsqrt",
                        "Exp",
                        "Log",
                        "Log1p",
                        "Tanh",
                        "Sigmoid",
                        "Relu",
                        "Relu6",
                        "Elu",
                        "Softplus",
                        "Floor",
                        "Ceil",
                        "Round",
                        "Reciprocal",
                        "Less",
                        "LessEqual",
                        "Greater",
                        "GreaterEqual",
                        "Equal",
                        "NotEqual",
                        "LogicalAnd",
                        "LogicalOr",
                        "LogicalNot",
                        "Select",
                        "SelectV2",
                        "Cast",
                        "MatMul",
                        "BatchMatMulV2",
                        "Sum",
                        "Mean",
                        "Max",
                        "Min",
                        "Prod",
                        "All",
                        "Any",
                        "ArgMax",
                        "ArgMin",
                        "Reshape",
                        "Squeeze",
                        "ExpandDims",
                        "Transpose",
                        "ConcatV2",
                        "Split",
                        "SplitV",
                        "Slice",
                        "StridedSlice",
                        "Pack",
                        "Unpack",
                        "Tile",
                        "Fill",
                        "ZerosLike",
                        "OnesLike",
                        "Shape",
                        "ShapeN",
                        "Size",
                        "Rank",
                        "Range",
                        "GatherV2",
                        "OneHot",
                        "Softmax",
                        "LogSoftmax",
                        "BiasAdd",
                        "AddN",
                        "RandomUniform",
                        "RandomStandardNormal",
                        "TruncatedNormal",
                        "RandomUniformInt",
                        "BroadcastGradientArgs",
                        "DynamicStitch"};
  for (const char* op : kOps) {
    EXPECT_NE(OpRegistry::Global()->LookUp(op), nullptr) << op;
  }
}

// Untrusted mode (SessionOptions::untrusted) refuses the ops marked
// SetDoesIO(). Every op whose kernel opens, writes, renames, lists or deletes
// files must be marked.
TEST(OpsRegistryTest, FileOpsAreMarkedDoesIO) {
  const char* kFileOps[] = {
      "SaveV2",
      "RestoreV2",
      "MergeV2Checkpoints",
      "TFRecordReaderV2",
      "FixedLengthRecordReaderV2",
      "TextLineReaderV2",
      "WholeFileReaderV2",
  };
  for (const char* op : kFileOps) {
    ASSERT_NE(OpRegistry::Global()->LookUp(op), nullptr) << op;
    EXPECT_TRUE(OpRegistry::Global()->LookUp(op)->does_io) << op;
    EXPECT_TRUE(OpRegistry::Global()->DoesIO(op)) << op;
  }
  // Ops of the same families that open nothing.
  const char* kHarmless[] = {
      "Const",           "MatMul",           "ShardedFilename",
      "ShardedFilespec", "IdentityReaderV2", "ReaderReadV2",
      "FIFOQueueV2",     "ParseExample"};
  for (const char* op : kHarmless) {
    ASSERT_NE(OpRegistry::Global()->LookUp(op), nullptr) << op;
    EXPECT_FALSE(OpRegistry::Global()->DoesIO(op)) << op;
  }
  // An unknown op is reported as doing I/O, so a check cannot be bypassed by
  // a name the registry does not know.
  EXPECT_TRUE(OpRegistry::Global()->DoesIO("NoSuchOpAnywhere"));
}

// Makes a forgotten SetDoesIO() loud: an op whose name suggests files must
// be marked, or be listed here with the reason it is not.
TEST(OpsRegistryTest, OpsNamedLikeFileOpsAreMarkedOrExempt) {
  const char* kHints[] = {"File",   "Save",    "Restore",  "Checkpoint",
                          "Reader", "Writer",  "Print",    "Load",
                          "Dump",   "Summary", "Matching", "Directory"};
  const std::set<std::string> kExempt = {
      // Strings only: format shard names, open nothing.
      "ShardedFilename",
      "ShardedFilespec",
      // Returns its work items as strings; opens nothing.
      "IdentityReaderV2",
      // Verbs on a reader handle: the reader that a (marked) constructor op
      // made opens the files.
      "ReaderReadV2",
      "ReaderReadUpToV2",
      "ReaderNumRecordsProducedV2",
      "ReaderNumWorkUnitsCompletedV2",
      "ReaderResetV2",
      // Summary ops serialize a Summary proto in memory and open nothing
      // (training::FileWriter, outside the graph, writes event files).
      "ScalarSummary",
      "HistogramSummary",
      "MergeSummary",
      "TensorSummary",
      "TensorSummaryV2",
      "ImageSummary",
      "AudioSummary",
      "AudioSummaryV2",
      // Write to the process's own stderr/stdout; PrintV2 refuses
      // TensorFlow's file:// streams (logging_ops.cc).
      "Print",
      "PrintV2",
  };
  std::vector<std::string> unmarked;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    bool hinted = false;
    for (const char* h : kHints) hinted |= name.find(h) != std::string::npos;
    if (!hinted || kExempt.count(name)) continue;
    if (!OpRegistry::Global()->DoesIO(name)) unmarked.push_back(name);
  }
  EXPECT_TRUE(unmarked.empty())
      << "mark with SetDoesIO() (or exempt here, with the reason): "
      << absl::StrJoin(unmarked, ", ");
}

// The marker lives beside the OpDef, not in it: an OpDef is TensorFlow's
// wire format and must be the same with or without it.
TEST(OpsRegistryTest, DoesIOLeavesTheOpDefUnchanged) {
  OpRegistrationData plain, marked;
  ASSERT_TRUE(OpDefBuilder("RegistryTestIO")
                  .Input("path: string")
                  .SetIsStateful()
                  .Finalize(&plain)
                  .ok());
  ASSERT_TRUE(OpDefBuilder("RegistryTestIO")
                  .Input("path: string")
                  .SetIsStateful()
                  .SetDoesIO()
                  .Finalize(&marked)
                  .ok());
  EXPECT_FALSE(plain.does_io);
  EXPECT_TRUE(marked.does_io);
  EXPECT_EQ(plain.op_def.SerializeAsString(),
            marked.op_def.SerializeAsString());
}

}  // namespace
}  // namespace runnel
