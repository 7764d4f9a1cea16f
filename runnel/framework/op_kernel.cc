#include "runnel/framework/op_kernel.h"

#include <new>
#include <stdexcept>

#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"

namespace runnel {

OpKernel::OpKernel(OpKernelConstruction* ctx) : props_(ctx->props_shared()) {}
OpKernel::~OpKernel() = default;

std::string OpKernel::ErrorPrefix() const {
  return absl::StrCat(type_string(), " '", name(), "': ");
}

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  absl::Notification n;
  ComputeAsync(ctx, [&n] { n.Notify(); });
  n.WaitForNotification();
}

// ---------------------------------------------------------------------------
// OpKernelContext

OpKernelContext::OpKernelContext(Params* params)
    : params_(params), outputs_(params->op_kernel->num_outputs()) {}

OpKernelContext::~OpKernelContext() = default;

Tensor OpKernelContext::input_value(int i) const {
  const TensorValue& v = params_->inputs[i];
  if (v.is_ref()) {
    absl::ReaderMutexLock l(v.mutex_if_ref);
    return *v.tensor;
  }
  return *v.tensor;
}

Status OpKernelContext::allocate_output(int i, const TensorShape& shape,
                                        Tensor** out) {
  Output& o = outputs_[i];
  const DataType dt = BaseType(expected_output_dtype(i));
  auto t = Tensor::Allocate(allocator(), dt, shape);
  if (!t.ok()) return t.status();
  o.value = std::move(*t);
  o.has_value = true;
  *out = &o.value;
  return absl::OkStatus();
}

Status OpKernelContext::forward_input_or_allocate_output(
    std::initializer_list<int> candidate_inputs, int output,
    const TensorShape& shape, Tensor** out) {
  const DataType dt = expected_output_dtype(output);
  for (int in : candidate_inputs) {
    const TensorValue& v = params_->inputs[in];
    if (v.is_ref() || v.tensor->dtype() != dt || dt == DT_STRING) continue;
    if (v.tensor->NumElements() != shape.num_elements()) continue;
    if (!v.tensor->RefCountIsOne()) continue;
    Output& o = outputs_[output];
    o.value.CopyFrom(*v.tensor, shape);
    o.has_value = true;
    *out = &o.value;
    return absl::OkStatus();
  }
  return allocate_output(output, shape, out);
}

Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape,
                                      Tensor* out) {
  auto t = Tensor::Allocate(allocator(), dtype, shape);
  if (!t.ok()) return t.status();
  *out = std::move(*t);
  return absl::OkStatus();
}

void OpKernelContext::set_output(int i, Tensor t) {
  const DataType want = BaseType(expected_output_dtype(i));
  if (t.dtype() != want) {
    SetStatus(errors::Internal(
        "output ", i, " should be ", DataTypeString(want),
        " but the kernel produced ", DataTypeString(t.dtype())));
    return;
  }
  Output& o = outputs_[i];
  o.value = std::move(t);
  o.has_value = true;
}

void OpKernelContext::set_output_ref(int i, absl::Mutex* mu, Tensor* ref) {
  Output& o = outputs_[i];
  o.ref = ref;
  o.ref_mu = mu;
  o.has_value = true;
}

void OpKernelContext::forward_ref_input_to_ref_output(int input, int output) {
  const TensorValue& v = params_->inputs[input];
  set_output_ref(output, v.mutex_if_ref, v.tensor);
}

// ---------------------------------------------------------------------------
// Registry

std::string KernelDef::DebugString() const {
  std::string s = absl::StrCat("device='", device_type, "'");
  for (const auto& [attr, types] : type_constraints) {
    std::vector<std::string> names;
    for (DataType t : types) names.push_back(DataTypeString(t));
    absl::StrAppend(&s, "; ", attr, " in [", absl::StrJoin(names, ", "), "]");
  }
  if (!label.empty()) absl::StrAppend(&s, "; label='", label, "'");
  if (priority != 0) absl::StrAppend(&s, "; priority=", priority);
  return s;
}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* r = new KernelRegistry;
  return r;
}

void KernelRegistry::Register(KernelDef def, std::string class_name,
                              KernelFactory factory) {
  std::string op = def.op;
  kernels_.emplace(std::move(op), Entry{std::move(def), std::move(class_name),
                                        std::move(factory)});
}

namespace {

bool Matches(const KernelDef& def, const NodeProperties& node,
             const std::string& label) {
  if (def.label != label) return false;
  for (const auto& [attr, types] : def.type_constraints) {
    auto it = node.attrs.find(attr);
    if (it == node.attrs.end()) return false;
    const AttrValue& v = it->second;
    if (v.value_case() == AttrValue::kType) {
      bool ok = false;
      for (DataType t : types) ok |= t == v.type();
      if (!ok) return false;
    } else if (v.value_case() == AttrValue::kList) {
      for (int t : v.list().type()) {
        bool ok = false;
        for (DataType a : types) ok |= a == t;
        if (!ok) return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

std::string NodeLabel(const NodeProperties& node) {
  auto it = node.attrs.find("_kernel");
  if (it == node.attrs.end() || it->second.value_case() != AttrValue::kS)
    return "";
  return it->second.s();
}

}  // namespace

Status KernelRegistry::FindKernel(const std::string& device_type,
                                  const NodeProperties& node,
                                  const KernelDef** def,
                                  const KernelFactory** factory) const {
  const std::string label = NodeLabel(node);
  const Entry* best = nullptr;
  auto range = kernels_.equal_range(node.op);
  for (auto it = range.first; it != range.second; ++it) {
    const Entry& e = it->second;
    if (e.def.device_type != device_type || !Matches(e.def, node, label))
      continue;
    if (best == nullptr || e.def.priority > best->def.priority) best = &e;
  }
  if (best != nullptr) {
    *def = &best->def;
    *factory = &best->factory;
    return absl::OkStatus();
  }
  std::vector<std::string> attrs;
  for (const auto& [k, v] : node.attrs) {
    if (v.value_case() == AttrValue::kType) {
      attrs.push_back(absl::StrCat(k, "=", DataTypeString(v.type())));
    }
  }
  std::string msg = absl::StrCat(
      "no ", device_type, " kernel registered for op ", node.op, " on node '",
      node.name, "' with attrs [", absl::StrJoin(attrs, ", "), "]");
  if (!label.empty()) absl::StrAppend(&msg, " and label '", label, "'");
  if (range.first == range.second) {
    absl::StrAppend(&msg, "; op ", node.op, " has no kernels at all");
  } else {
    absl::StrAppend(&msg, "; registered kernels:");
    for (auto it = range.first; it != range.second; ++it) {
      absl::StrAppend(&msg, "\n  ", it->second.def.DebugString());
    }
  }
  return errors::NotFound(msg);
}

std::vector<const KernelDef*> KernelRegistry::KernelsForOp(
    absl::string_view op) const {
  std::vector<const KernelDef*> out;
  auto range = kernels_.equal_range(op);
  for (auto it = range.first; it != range.second; ++it)
    out.push_back(&it->second.def);
  return out;
}

bool KernelRegistry::HasKernel(const std::string& device_type,
                               const NodeProperties& node) const {
  const KernelDef* def;
  const KernelFactory* f;
  return FindKernel(device_type, node, &def, &f).ok();
}

Status CreateOpKernel(const std::string& device_type, DeviceBase* device,
                      std::shared_ptr<const NodeProperties> props,
                      std::unique_ptr<OpKernel>* kernel) {
  const KernelDef* def;
  const KernelFactory* factory;
  RETURN_IF_ERROR(KernelRegistry::Global()->FindKernel(device_type, *props,
                                                       &def, &factory));
  OpKernelConstruction construction(device_type, device, props);
  std::unique_ptr<OpKernel> k;
  // A constructor sizing a container from an attr may throw; that is the
  // node's error, never std::terminate.
  try {
    k.reset((*factory)(&construction));
  } catch (const std::bad_alloc&) {
    construction.CtxFailure(errors::ResourceExhausted(
        "out of memory (std::bad_alloc) constructing the kernel"));
  } catch (const std::exception& e) {
    construction.CtxFailure(errors::Internal(
        "the kernel's constructor threw an exception: ", e.what()));
  }
  if (!construction.status().ok()) {
    return errors::Prefix(construction.status(),
                          absl::StrCat(props->op, " '", props->name, "': "));
  }
  *kernel = std::move(k);
  return absl::OkStatus();
}

}  // namespace runnel
