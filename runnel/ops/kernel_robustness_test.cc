// Runs every CPU kernel on empty, scalar, mismatched and extreme-valued
// inputs. Each run must end in a correct result or a clean error: never a
// crash, never an Internal error, and when the kernel succeeds its output
// shape must agree with the op's shape function (OpTestCase checks that).
#include <gtest/gtest.h>

#include <limits>

#include "absl/strings/str_join.h"
#include "runnel/framework/op_kernel.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// Ops that need a runtime context the harness does not give: call frames,
// or an executor that turns an unset output into a dead token (Switch;
// control_flow_test covers its bad inputs through a session).
bool Skip(const std::string& op) {
  return op == "_Arg" || op == "_Retval" || op == "Switch" || op == "RefSwitch";
}

Tensor Filled(DataType dt, const TensorShape& shape, double v) {
  Tensor t(dt, shape);
  if (dt == DT_STRING) {
    for (auto& s : t.flat<tstring>()) s = "a";
    return t;
  }
  DispatchPod(dt, [&]<typename T>() {
    for (auto& x : t.flat<T>()) {
      if constexpr (std::is_same_v<T, half>)
        x = FloatToHalf(static_cast<float>(v));
      else if constexpr (std::is_same_v<T, bfloat16>)
        x = FloatToBFloat16(static_cast<float>(v));
      else if constexpr (std::is_same_v<T, bool>)
        x = v > 0;
      else if constexpr (std::is_integral_v<T>) {
        // Saturate: casting an out-of-range double to an integer is UB.
        const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
        const double hi = static_cast<double>(std::numeric_limits<T>::max());
        x = static_cast<T>(std::min(std::max(v, lo), hi));
      } else {
        x = static_cast<T>(v);
      }
    }
  });
  return t;
}

// Attrs for one instantiation: type attrs from `types`, others from
// defaults or simple choices.
AttrMap BaseAttrs(const OpDef& def, DataType default_type) {
  AttrMap attrs;
  for (const auto& a : def.attr()) {
    if (a.has_default_value()) continue;
    const std::string& t = a.type();
    if (t == "type") {
      const auto& allowed = a.allowed_values().list().type();
      attrs[a.name()] = MakeAttrValue(
          allowed.empty() ? default_type : static_cast<DataType>(allowed[0]));
    } else if (t == "int") {
      attrs[a.name()] = MakeAttrValue(std::max<int64_t>(2, a.minimum()));
    } else if (t == "list(type)") {
      const auto& allowed = a.allowed_values().list().type();
      attrs[a.name()] = MakeAttrValue(std::vector<DataType>(
          std::max<int64_t>(2, a.minimum()),
          allowed.empty() ? DT_FLOAT : static_cast<DataType>(allowed[0])));
    } else if (t == "func") {
      // A function no library has: call kernels must fail cleanly.
      attrs[a.name()].mutable_func()->set_name("NoSuchFunction");
    } else if (t == "tensor") {
      attrs[a.name()] = MakeAttrValue(Tensor::Scalar<float>(1));
    } else if (t == "shape") {
      attrs[a.name()] = MakeAttrValue(PartialTensorShape());
    } else if (t == "string") {
      const auto& allowed = a.allowed_values().list().s();
      attrs[a.name()] =
          MakeAttrValue(allowed.empty() ? std::string() : allowed[0]);
    } else if (t == "float") {
      attrs[a.name()] = MakeAttrValue(1.0f);
    } else if (t == "bool") {
      attrs[a.name()] = MakeAttrValue(false);
    } else if (t == "list(string)") {
      attrs[a.name()] = MakeAttrValue(std::vector<std::string>(
          std::max<int64_t>(0, a.minimum()), std::string("a")));
    } else if (t == "list(shape)") {
      attrs[a.name()] = MakeAttrValue(std::vector<PartialTensorShape>(
          std::max<int64_t>(0, a.minimum()), PartialTensorShape()));
    } else if (t == "list(int)") {
      attrs[a.name()] = MakeAttrValue(
          std::vector<int64_t>(std::max<int64_t>(2, a.minimum()), 1));
    }
  }
  return attrs;
}

std::vector<AttrMap> Instantiations(const OpDef& def) {
  std::vector<AttrMap> out;
  // One instantiation per allowed type of the first constrained type attr.
  const OpDef::AttrDef* first = nullptr;
  for (const auto& a : def.attr()) {
    if (a.type() == "type" && a.allowed_values().list().type_size() > 0) {
      first = &a;
      break;
    }
  }
  if (first == nullptr) return {BaseAttrs(def, DT_FLOAT)};
  for (int t : first->allowed_values().list().type()) {
    AttrMap m = BaseAttrs(def, DT_FLOAT);
    m[first->name()] = MakeAttrValue(static_cast<DataType>(t));
    out.push_back(std::move(m));
  }
  return out;
}

TEST(KernelRobustnessTest, EmptyScalarMismatchedAndExtremeInputs) {
  std::vector<std::string> failures;
  int runs = 0;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (Skip(op)) continue;
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(op);
    // Ref inputs (variables) need the executor; their ops have own tests.
    bool has_ref = false;
    for (const auto& arg : d->op_def.input_arg()) has_ref |= arg.is_ref();
    if (has_ref) continue;
    if (KernelRegistry::Global()->KernelsForOp(op).empty()) continue;
    for (const AttrMap& attrs : Instantiations(d->op_def)) {
      auto props = NodeProperties::Create("n", op, "", attrs);
      if (!props.ok()) {
        failures.push_back(op + ": cannot instantiate: " +
                           std::string(props.status().message()));
        continue;
      }
      const auto& in_types = (*props)->input_types;
      struct Variant {
        const char* name;
        std::function<TensorShape(size_t)> shape;
        double value;
      };
      const Variant variants[] = {
          {"empty", [](size_t) { return TensorShape({0}); }, 1},
          {"scalar", [](size_t) { return TensorShape({}); }, 1},
          {"scalar0", [](size_t) { return TensorShape({}); }, 0},
          {"mismatched",
           [](size_t i) {
             return i % 2 ? TensorShape({4}) : TensorShape({2, 3});
           },
           1},
          {"negative",
           [](size_t i) {
             return i % 2 ? TensorShape({2}) : TensorShape({2, 3});
           },
           -1},
          // One large value: out-of-range indices, big-but-sane sizes.
          {"large", [](size_t) { return TensorShape({1}); }, 100000},
      };
      for (const Variant& v : variants) {
        OpTestCase t(op);
        for (const auto& [k, val] : attrs) t.Attr(k, val);
        for (size_t i = 0; i < in_types.size(); ++i) {
          t.Input(Filled(BaseType(in_types[i]), v.shape(i), v.value));
        }
        ++runs;
        // The kernel alone (graphs imported from GraphDefs skip shape
        // functions), then with the shape-function cross-check.
        Status s = t.RunKernelOnly();
        if (s.code() != absl::StatusCode::kInternal) s = t.Run();
        if (s.code() == absl::StatusCode::kInternal ||
            s.code() == absl::StatusCode::kUnknown) {
          std::vector<std::string> types;
          for (const auto& [k, val] : attrs)
            types.push_back(k + "=" + SummarizeAttrValue(val));
          failures.push_back(absl::StrCat(op, " [", absl::StrJoin(types, ","),
                                          "] ", v.name, ": ", s.ToString()));
        }
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n"
                                << absl::StrJoin(failures, "\n");
  EXPECT_GT(runs, 500);
}

}  // namespace
}  // namespace runnel
