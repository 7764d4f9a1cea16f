// Optimizer update ops: each updates one variable (and its slots: momentum
// accumulators, moment estimates, ...) in place from a gradient
// (whitepaper §4.1: "optimizers are ops that update variables").
//
// Note [Training op variables]
// Every optimizer comes in a ref form (ApplyX: the variable inputs are
// Ref(T) inputs from legacy Variable nodes; output 0 forwards the var ref)
// and a resource form (ResourceApplyX: the variable inputs are DT_RESOURCE
// handles of resource variables; no outputs). One kernel serves both:
// VariableInputs resolves the variable inputs, locks their mutexes in
// address order (so two ops sharing variables never deadlock), checks that
// each is initialised and holds T, and before the update copies any
// variable whose buffer someone else still holds (a reader's value must not
// change under it; see Note [Resource variable copy-on-write] in
// runnel/framework/resource_var.h). The update formulas are TensorFlow's
// (tensorflow/core/kernels/training_ops.cc), computed in T.
//
// Sparse forms (SparseApplyX / ResourceSparseApplyX) update the rows of var
// (and slots) named by `indices`, one index after another in order, so a
// duplicated index is applied twice; all indices are checked before any
// row changes.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "runnel/cpu/isa.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_var.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Variable inputs

// The variable inputs [0, names.size()) of a training op, locked for the
// lifetime of this object.
class VariableInputs {
 public:
  VariableInputs() = default;
  VariableInputs(const VariableInputs&) = delete;
  VariableInputs& operator=(const VariableInputs&) = delete;
  ~VariableInputs() {
    for (absl::Mutex* mu : locked_) mu->Unlock();
    for (Var* v : vars_) v->Unref();
  }

  // Resolves, locks and checks the inputs named `names` (input k is
  // names[k]). FailedPrecondition if a variable is uninitialised.
  template <size_t N>
  Status Acquire(OpKernelContext* ctx, const std::array<const char*, N>& names,
                 DataType dtype, bool resource) {
    std::vector<absl::Mutex*> mus;
    for (size_t k = 0; k < N; ++k) {
      const int i = static_cast<int>(k);
      if (resource) {
        const ResourceHandle* h;
        RETURN_IF_ERROR(HandleFromInput(ctx, i, &h));
        Var* var = nullptr;
        RETURN_IF_ERROR(LookupVar(ctx, *h, &var));
        vars_.push_back(var);
        handles_.push_back(h);
        tensors_.push_back(var->tensor());
        mus.push_back(var->mu());
      } else {
        if (!ctx->input_is_ref(i)) {
          return errors::InvalidArgument("input ", i, " (", names[k],
                                         ") must be a variable reference");
        }
        tensors_.push_back(ctx->mutable_input(i));
        mus.push_back(ctx->input_ref_mutex(i));
      }
    }
    std::sort(mus.begin(), mus.end());
    mus.erase(std::unique(mus.begin(), mus.end()), mus.end());
    for (absl::Mutex* mu : mus) {
      mu->Lock();
      locked_.push_back(mu);
    }
    for (size_t k = 0; k < N; ++k) {
      if (resource) {
        RETURN_IF_ERROR(CheckVarInitialized(vars_[k], *handles_[k], dtype));
        continue;
      }
      const Tensor* t = tensors_[k];
      if (!t->IsInitialized() || t->dtype() == DT_INVALID) {
        return errors::FailedPrecondition(
            "Attempting to use uninitialized variables: ", names[k]);
      }
      if (t->dtype() != dtype) {
        return errors::InvalidArgument(
            names[k], " holds ", DataTypeString(t->dtype()),
            " but the op's T is ", DataTypeString(dtype));
      }
    }
    return absl::OkStatus();
  }

  const Tensor& tensor(int k) const { return *tensors_[k]; }

  // Copy-on-write: gives every variable an unshared buffer. Call after all
  // validation, just before writing.
  Status PrepareForUpdate() {
    for (Tensor* t : tensors_) {
      if (!t->RefCountIsOne()) {
        ASSIGN_OR_RETURN(*t, t->TryDeepCopy());
      }
    }
    return absl::OkStatus();
  }
  template <typename T>
  T* data(int k) const {
    return tensors_[k]->data<T>();
  }

 private:
  std::vector<Var*> vars_;  // Resource form: one reference each.
  std::vector<const ResourceHandle*> handles_;
  std::vector<Tensor*> tensors_;
  std::vector<absl::Mutex*> locked_;
};

// A scalar hyper-parameter input.
struct ScalarArg {
  const char* name;
  int input;
};

// The input index of `a`: rules list dense positions; the sparse forms have
// `indices` right after grad.
int ScalarInput(const ScalarArg& a, bool sparse, int grad) {
  return sparse && a.input > grad ? a.input + 1 : a.input;
}

// Checks the scalar inputs `args` and reads their values.
template <typename T, size_t N>
Status ReadScalars(OpKernelContext* ctx, const std::array<ScalarArg, N>& args,
                   bool sparse, int grad, std::array<T, N>* values) {
  for (size_t k = 0; k < N; ++k) {
    const int i = ScalarInput(args[k], sparse, grad);
    const Tensor& t = ctx->input(i);
    if (t.dims() != 0) {
      return errors::InvalidArgument(
          args[k].name, " is not a scalar: ", t.shape().DebugString());
    }
    (*values)[k] = t.scalar<T>();
  }
  return absl::OkStatus();
}

// TensorFlow's wording, shapes run on: "var and grad do not have the same
// shape[2] [3]".
Status NotSameShape(const char* a, const TensorShape& sa, const char* b,
                    const TensorShape& sb) {
  return errors::InvalidArgument(a, " and ", b, " do not have the same shape",
                                 sa.DebugString(), " ", sb.DebugString());
}

// ---------------------------------------------------------------------------
// Update rules. Each names its variable inputs (var first), its gradient
// input and its scalar inputs (dense positions; the sparse forms insert
// `indices` right after grad), and applies the update to elements
// [begin, end) given pointers to var and slots.

struct GradientDescentRule {
  static constexpr std::array<const char*, 1> kVars = {"var"};
  static constexpr const char* kGradName = "delta";
  static constexpr int kGrad = 2;
  static constexpr std::array<ScalarArg, 1> kScalars = {{{"alpha", 1}}};
  static constexpr int64_t kCost = 1;
  explicit GradientDescentRule(OpKernelConstruction*) {}

  // var -= alpha * delta
  template <typename T>
  RUNNEL_AVX512_CLONES void Apply(const std::array<T*, 1>& p,
                                  const std::array<T, 1>& s, const T* g,
                                  int64_t begin, int64_t end) const {
    T* var = p[0];
    const T alpha = s[0];
    for (int64_t i = begin; i < end; ++i) var[i] -= alpha * g[i];
  }
};

struct MomentumRule {
  static constexpr std::array<const char*, 2> kVars = {"var", "accum"};
  static constexpr const char* kGradName = "grad";
  static constexpr int kGrad = 3;
  static constexpr std::array<ScalarArg, 2> kScalars = {
      {{"lr", 2}, {"momentum", 4}}};
  static constexpr int64_t kCost = 2;
  explicit MomentumRule(OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov));
  }
  bool use_nesterov = false;

  // accum = accum * momentum + grad
  // var -= lr * accum                                  (plain)
  // var -= lr * grad + lr * momentum * accum           (Nesterov)
  template <typename T>
  RUNNEL_AVX512_CLONES void Apply(const std::array<T*, 2>& p,
                                  const std::array<T, 2>& s, const T* g,
                                  int64_t begin, int64_t end) const {
    T* var = p[0];
    T* accum = p[1];
    const T lr = s[0], momentum = s[1];
    if (use_nesterov) {
      for (int64_t i = begin; i < end; ++i) {
        accum[i] = accum[i] * momentum + g[i];
        var[i] -= g[i] * lr + accum[i] * momentum * lr;
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        accum[i] = accum[i] * momentum + g[i];
        var[i] -= accum[i] * lr;
      }
    }
  }
};

struct AdagradRule {
  static constexpr std::array<const char*, 2> kVars = {"var", "accum"};
  static constexpr const char* kGradName = "grad";
  static constexpr int kGrad = 3;
  static constexpr std::array<ScalarArg, 1> kScalars = {{{"lr", 2}}};
  static constexpr int64_t kCost = 3;
  explicit AdagradRule(OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("update_slots", &update_slots));
  }
  bool update_slots = true;

  // accum += grad^2 (if update_slots); var -= lr * grad / sqrt(accum)
  template <typename T>
  void Apply(const std::array<T*, 2>& p, const std::array<T, 1>& s, const T* g,
             int64_t begin, int64_t end) const {
    T* var = p[0];
    T* accum = p[1];
    const T lr = s[0];
    if (update_slots) {
      for (int64_t i = begin; i < end; ++i) accum[i] += g[i] * g[i];
    }
    for (int64_t i = begin; i < end; ++i)
      var[i] -= g[i] * lr / std::sqrt(accum[i]);
  }
};

struct RMSPropRule {
  static constexpr std::array<const char*, 3> kVars = {"var", "ms", "mom"};
  static constexpr const char* kGradName = "grad";
  static constexpr int kGrad = 7;
  static constexpr std::array<ScalarArg, 4> kScalars = {
      {{"lr", 3}, {"rho", 4}, {"momentum", 5}, {"epsilon", 6}}};
  static constexpr int64_t kCost = 4;
  explicit RMSPropRule(OpKernelConstruction*) {}

  // ms += (grad^2 - ms) * (1 - rho)
  // mom = mom * momentum + lr * grad / sqrt(ms + epsilon)
  // var -= mom
  template <typename T>
  void Apply(const std::array<T*, 3>& p, const std::array<T, 4>& s, const T* g,
             int64_t begin, int64_t end) const {
    T* var = p[0];
    T* ms = p[1];
    T* mom = p[2];
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    const T one_minus_rho = T(1) - rho;
    for (int64_t i = begin; i < end; ++i) {
      ms[i] += (g[i] * g[i] - ms[i]) * one_minus_rho;
      mom[i] = mom[i] * momentum + (g[i] * lr) / std::sqrt(ms[i] + epsilon);
      var[i] -= mom[i];
    }
  }
};

struct AdamRule {
  static constexpr std::array<const char*, 3> kVars = {"var", "m", "v"};
  static constexpr const char* kGradName = "grad";
  static constexpr int kGrad = 9;
  static constexpr std::array<ScalarArg, 6> kScalars = {{{"beta1_power", 3},
                                                         {"beta2_power", 4},
                                                         {"lr", 5},
                                                         {"beta1", 6},
                                                         {"beta2", 7},
                                                         {"epsilon", 8}}};
  static constexpr int64_t kCost = 5;
  explicit AdamRule(OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov));
  }
  bool use_nesterov = false;

  // alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
  // m += (grad - m) * (1 - beta1)
  // v += (grad^2 - v) * (1 - beta2)
  // var -= alpha * m / (sqrt(v) + epsilon) (plain) var -= alpha * (grad * (1 -
  // beta1) + beta1 * m) / (sqrt(v) + epsilon) (Nesterov)
  template <typename T>
  void Apply(const std::array<T*, 3>& p, const std::array<T, 6>& s, const T* g,
             int64_t begin, int64_t end) const {
    T* var = p[0];
    T* m = p[1];
    T* v = p[2];
    const T beta1_power = s[0], beta2_power = s[1], lr = s[2], beta1 = s[3],
            beta2 = s[4], epsilon = s[5];
    const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
    if (use_nesterov) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] += (g[i] - m[i]) * one_minus_beta1;
        v[i] += (g[i] * g[i] - v[i]) * one_minus_beta2;
        var[i] -= ((g[i] * one_minus_beta1 + beta1 * m[i]) * alpha) /
                  (std::sqrt(v[i]) + epsilon);
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        m[i] += (g[i] - m[i]) * one_minus_beta1;
        v[i] += (g[i] * g[i] - v[i]) * one_minus_beta2;
        var[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + epsilon);
      }
    }
  }
};

struct AdadeltaRule {
  static constexpr std::array<const char*, 3> kVars = {"var", "accum",
                                                       "accum_update"};
  static constexpr const char* kGradName = "grad";
  static constexpr int kGrad = 6;
  static constexpr std::array<ScalarArg, 3> kScalars = {
      {{"lr", 3}, {"rho", 4}, {"epsilon", 5}}};
  static constexpr int64_t kCost = 5;
  explicit AdadeltaRule(OpKernelConstruction*) {}

  // accum = rho * accum + (1 - rho) * grad^2
  // update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
  // var -= lr * update
  // accum_update = rho * accum_update + (1 - rho) * update^2
  template <typename T>
  void Apply(const std::array<T*, 3>& p, const std::array<T, 3>& s, const T* g,
             int64_t begin, int64_t end) const {
    T* var = p[0];
    T* accum = p[1];
    T* accum_update = p[2];
    const T lr = s[0], rho = s[1], epsilon = s[2];
    const T one_minus_rho = T(1) - rho;
    for (int64_t i = begin; i < end; ++i) {
      accum[i] = accum[i] * rho + g[i] * g[i] * one_minus_rho;
      const T update = std::sqrt(accum_update[i] + epsilon) /
                       std::sqrt(accum[i] + epsilon) * g[i];
      var[i] -= update * lr;
      accum_update[i] = accum_update[i] * rho + update * update * one_minus_rho;
    }
  }
};

// ---------------------------------------------------------------------------
// Kernels

template <typename T, typename Rule, bool kResource>
class ApplyKernel : public OpKernel {
 public:
  explicit ApplyKernel(OpKernelConstruction* c) : OpKernel(c), rule_(c) {}

  void Compute(OpKernelContext* ctx) override {
    constexpr size_t kNumVars = Rule::kVars.size();
    {
      VariableInputs vars;
      OP_REQUIRES_OK(ctx, vars.Acquire(ctx, Rule::kVars,
                                       DataTypeToEnum<T>::value, kResource));
      std::array<T, Rule::kScalars.size()> scalars;
      OP_REQUIRES_OK(ctx, ReadScalars(ctx, Rule::kScalars, /*sparse=*/false,
                                      Rule::kGrad, &scalars));
      const TensorShape& shape = vars.tensor(0).shape();
      for (size_t k = 1; k < kNumVars; ++k) {
        OP_REQUIRES(
            ctx, vars.tensor(k).shape() == shape,
            NotSameShape("var", shape, Rule::kVars[k], vars.tensor(k).shape()));
      }
      const Tensor& grad = ctx->input(Rule::kGrad);
      OP_REQUIRES(ctx, grad.shape() == shape,
                  NotSameShape("var", shape, Rule::kGradName, grad.shape()));
      OP_REQUIRES_OK(ctx, vars.PrepareForUpdate());
      std::array<T*, kNumVars> p;
      for (size_t k = 0; k < kNumVars; ++k) p[k] = vars.template data<T>(k);
      const T* g = grad.data<T>();
      const Rule& rule = rule_;
      ctx->intra_op_threadpool()->ParallelFor(
          shape.num_elements(), Rule::kCost,
          [&rule, &p, &scalars, g](int64_t b, int64_t e) {
            rule.template Apply<T>(p, scalars, g, b, e);
          });
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  const Rule rule_;
};

template <typename T, typename Index, typename Rule, bool kResource>
class SparseApplyKernel : public OpKernel {
 public:
  explicit SparseApplyKernel(OpKernelConstruction* c) : OpKernel(c), rule_(c) {}

  void Compute(OpKernelContext* ctx) override {
    constexpr size_t kNumVars = Rule::kVars.size();
    {
      VariableInputs vars;
      OP_REQUIRES_OK(ctx, vars.Acquire(ctx, Rule::kVars,
                                       DataTypeToEnum<T>::value, kResource));
      const Tensor& var = vars.tensor(0);
      for (size_t k = 1; k < kNumVars; ++k) {
        OP_REQUIRES(ctx, vars.tensor(k).shape() == var.shape(),
                    NotSameShape("var", var.shape(), Rule::kVars[k],
                                 vars.tensor(k).shape()));
      }
      OP_REQUIRES(
          ctx, var.dims() >= 1,
          errors::InvalidArgument("var must be at least 1 dimensional"));
      std::array<T, Rule::kScalars.size()> scalars;
      OP_REQUIRES_OK(ctx, ReadScalars(ctx, Rule::kScalars, /*sparse=*/true,
                                      Rule::kGrad, &scalars));
      const Tensor& grad = ctx->input(Rule::kGrad);
      const Tensor& indices = ctx->input(Rule::kGrad + 1);
      OP_REQUIRES(ctx, indices.dims() == 1,
                  errors::InvalidArgument("indices must be one-dimensional"));
      OP_REQUIRES(
          ctx, grad.dims() == var.dims(),
          errors::InvalidArgument("var and grad do not have the same rank: ",
                                  var.shape().DebugString(), " vs ",
                                  grad.shape().DebugString()));
      int64_t inner = 1;
      for (int d = 1; d < var.dims(); ++d) {
        OP_REQUIRES(ctx, var.dim_size(d) == grad.dim_size(d),
                    errors::InvalidArgument(
                        "var and grad must match in dimension ", d));
        inner *= var.dim_size(d);
      }
      const int64_t n = indices.dim_size(0);
      OP_REQUIRES(
          ctx, grad.dim_size(0) == n,
          errors::InvalidArgument(
              "grad must be the same size as indices in the first dimension."));
      OP_REQUIRES(ctx, inner > 0,
                  errors::InvalidArgument(
                      "Inner dimension should be greater than zero."));
      const Index* ix = indices.data<Index>();
      const int64_t rows = var.dim_size(0);
      for (int64_t i = 0; i < n; ++i) {
        OP_REQUIRES(ctx, ix[i] >= 0 && static_cast<int64_t>(ix[i]) < rows,
                    errors::InvalidArgument("Index ", ix[i], " at offset ", i,
                                            " in indices is out of range"));
      }
      if (n > 0) {
        OP_REQUIRES_OK(ctx, vars.PrepareForUpdate());
        std::array<T*, kNumVars> base;
        for (size_t k = 0; k < kNumVars; ++k)
          base[k] = vars.template data<T>(k);
        const T* g = grad.data<T>();
        const Rule& rule = rule_;
        // Columns are independent; within a column the indices apply in
        // order, so duplicates compose exactly as a sequential loop.
        ctx->intra_op_threadpool()->ParallelFor(
            inner, Rule::kCost * n,
            [&rule, &base, &scalars, g, ix, n, inner](int64_t cb, int64_t ce) {
              for (int64_t i = 0; i < n; ++i) {
                const int64_t row = static_cast<int64_t>(ix[i]) * inner;
                std::array<T*, kNumVars> p;
                for (size_t k = 0; k < kNumVars; ++k) p[k] = base[k] + row;
                rule.template Apply<T>(p, scalars, g + i * inner, cb, ce);
              }
            });
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  const Rule rule_;
};

// ---------------------------------------------------------------------------
// Shape functions (TensorFlow's). Resource inputs carry no shape here (no
// handle data), so the variable shape starts unknown in resource forms.

PartialTensorShape VarShape(InferenceContext* c, int i, bool resource) {
  return resource ? PartialTensorShape::UnknownRank() : c->input(i);
}

// Merges the variable inputs, checks scalars and merges grad (dense) or
// grad[1:] and indices (sparse). Sets output 0 when the op has one.
template <typename Rule>
Status ApplyShapeFn(InferenceContext* c, bool sparse, bool resource) {
  PartialTensorShape s = VarShape(c, 0, resource);
  for (size_t k = 1; k < Rule::kVars.size(); ++k) {
    RETURN_IF_ERROR(
        c->Merge(s, VarShape(c, static_cast<int>(k), resource), &s));
  }
  PartialTensorShape unused;
  for (const ScalarArg& a : Rule::kScalars) {
    RETURN_IF_ERROR(
        c->WithRank(ScalarInput(a, sparse, Rule::kGrad), 0, &unused));
  }
  const PartialTensorShape& grad = c->input(Rule::kGrad);
  if (!sparse) {
    RETURN_IF_ERROR(c->Merge(s, grad, &s));
  } else {
    PartialTensorShape indices;
    RETURN_IF_ERROR(c->WithRank(Rule::kGrad + 1, 1, &indices));
    if (grad.dims() == 0) {
      return c->InvalidArgument(
          "Argument grad must not be a scalar. Got grad with rank 0");
    }
    if (grad.dims() > 0) {
      if (indices.dim_size(0) >= 0 && grad.dim_size(0) >= 0 &&
          indices.dim_size(0) != grad.dim_size(0)) {
        return c->InvalidArgument("grad ", grad.DebugString(), " and indices ",
                                  indices.DebugString(),
                                  " must have the same first dimension");
      }
      PartialTensorShape g = grad;
      g.set_dim(0, -1);
      RETURN_IF_ERROR(c->Merge(s, g, &s));
    }
  }
  if (c->num_outputs() > 0) c->set_output(0, s);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Registration

#define REGISTER_DENSE_KERNELS(NAME, RULE)                                  \
  REGISTER_KERNEL_BUILDER(                                                  \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<float>("T"),             \
      ApplyKernel<float, RULE, false>);                                     \
  REGISTER_KERNEL_BUILDER(                                                  \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<double>("T"),            \
      ApplyKernel<double, RULE, false>);                                    \
  REGISTER_KERNEL_BUILDER(                                                  \
      Name("Resource" NAME).Device(kDeviceCpu).TypeConstraint<float>("T"),  \
      ApplyKernel<float, RULE, true>);                                      \
  REGISTER_KERNEL_BUILDER(                                                  \
      Name("Resource" NAME).Device(kDeviceCpu).TypeConstraint<double>("T"), \
      ApplyKernel<double, RULE, true>)

#define REGISTER_SPARSE_KERNELS_T_INDEX(NAME, RULE, T, INDEX)        \
  REGISTER_KERNEL_BUILDER(Name("Sparse" NAME)                        \
                              .Device(kDeviceCpu)                    \
                              .TypeConstraint<T>("T")                \
                              .TypeConstraint<INDEX>("Tindices"),    \
                          SparseApplyKernel<T, INDEX, RULE, false>); \
  REGISTER_KERNEL_BUILDER(Name("ResourceSparse" NAME)                \
                              .Device(kDeviceCpu)                    \
                              .TypeConstraint<T>("T")                \
                              .TypeConstraint<INDEX>("Tindices"),    \
                          SparseApplyKernel<T, INDEX, RULE, true>)
#define REGISTER_SPARSE_KERNELS(NAME, RULE)                     \
  REGISTER_SPARSE_KERNELS_T_INDEX(NAME, RULE, float, int32_t);  \
  REGISTER_SPARSE_KERNELS_T_INDEX(NAME, RULE, float, int64_t);  \
  REGISTER_SPARSE_KERNELS_T_INDEX(NAME, RULE, double, int32_t); \
  REGISTER_SPARSE_KERNELS_T_INDEX(NAME, RULE, double, int64_t)

// Shape functions by (rule, sparse, resource).
template <typename Rule, bool kSparse, bool kResource>
Status ShapeFn(InferenceContext* c) {
  return ApplyShapeFn<Rule>(c, kSparse, kResource);
}

// ---------------------------------------------------------------------------
// ApplyGradientDescent

REGISTER_OP("ApplyGradientDescent")
    .Input("var: Ref(T)")
    .Input("alpha: T")
    .Input("delta: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<GradientDescentRule, false, false>)
    .Doc(
        "Update '*var' by subtracting 'alpha' * 'delta' from it.\n"
        "var -= alpha * delta.");

REGISTER_OP("ResourceApplyGradientDescent")
    .Input("var: resource")
    .Input("alpha: T")
    .Input("delta: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<GradientDescentRule, false, true>)
    .Doc(
        "Update '*var' by subtracting 'alpha' * 'delta' from it.\n"
        "var -= alpha * delta, on a resource variable.");

REGISTER_DENSE_KERNELS("ApplyGradientDescent", GradientDescentRule);

// ---------------------------------------------------------------------------
// ApplyMomentum / SparseApplyMomentum

REGISTER_OP("ApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<MomentumRule, false, false>)
    .Doc(
        "Update '*var' according to the momentum scheme.\n"
        "accum = accum * momentum + grad; var -= lr * accum. With "
        "use_nesterov: "
        "var -= lr * grad + lr * momentum * accum.");

REGISTER_OP("ResourceApplyMomentum")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<MomentumRule, false, true>)
    .Doc(
        "Update '*var' according to the momentum scheme (resource variables).\n"
        "accum = accum * momentum + grad; var -= lr * accum. With "
        "use_nesterov: "
        "var -= lr * grad + lr * momentum * accum.");

REGISTER_DENSE_KERNELS("ApplyMomentum", MomentumRule);

REGISTER_OP("SparseApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<MomentumRule, true, false>)
    .Doc(
        "Update relevant entries in '*var' and '*accum' according to the "
        "momentum "
        "scheme.\n"
        "For each i: accum[indices[i]] = accum[indices[i]] * momentum + "
        "grad[i]; "
        "var[indices[i]] -= lr * accum[indices[i]] (Nesterov as in "
        "ApplyMomentum). "
        "Indices apply in order; duplicates apply repeatedly.");

REGISTER_OP("ResourceSparseApplyMomentum")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("momentum: T")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<MomentumRule, true, true>)
    .Doc(
        "Update relevant entries in '*var' and '*accum' according to the "
        "momentum "
        "scheme (resource variables).\n"
        "For each i: accum[indices[i]] = accum[indices[i]] * momentum + "
        "grad[i]; "
        "var[indices[i]] -= lr * accum[indices[i]] (Nesterov as in "
        "ApplyMomentum).");

REGISTER_SPARSE_KERNELS("ApplyMomentum", MomentumRule);

// ---------------------------------------------------------------------------
// ApplyAdagrad / SparseApplyAdagrad

REGISTER_OP("ApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(ShapeFn<AdagradRule, false, false>)
    .Doc(
        "Update '*var' according to the adagrad scheme.\n"
        "accum += grad * grad (if update_slots); var -= lr * grad / "
        "sqrt(accum).");

REGISTER_OP("ResourceApplyAdagrad")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(ShapeFn<AdagradRule, false, true>)
    .Doc(
        "Update '*var' according to the adagrad scheme (resource variables).\n"
        "accum += grad * grad (if update_slots); var -= lr * grad / "
        "sqrt(accum).");

REGISTER_DENSE_KERNELS("ApplyAdagrad", AdagradRule);

REGISTER_OP("SparseApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(ShapeFn<AdagradRule, true, false>)
    .Doc(
        "Update relevant entries in '*var' and '*accum' according to the "
        "adagrad "
        "scheme.\n"
        "For each i: accum[indices[i]] += grad[i]^2 (if update_slots); "
        "var[indices[i]] -= lr * grad[i] / sqrt(accum[indices[i]]). Indices "
        "apply "
        "in order; duplicates apply repeatedly.");

REGISTER_OP("ResourceSparseApplyAdagrad")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(ShapeFn<AdagradRule, true, true>)
    .Doc(
        "Update relevant entries in '*var' and '*accum' according to the "
        "adagrad "
        "scheme (resource variables).\n"
        "For each i: accum[indices[i]] += grad[i]^2 (if update_slots); "
        "var[indices[i]] -= lr * grad[i] / sqrt(accum[indices[i]]).");

REGISTER_SPARSE_KERNELS("ApplyAdagrad", AdagradRule);

// ---------------------------------------------------------------------------
// ApplyRMSProp

REGISTER_OP("ApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<RMSPropRule, false, false>)
    .Doc(
        "Update '*var' according to the RMSProp algorithm.\n"
        "ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad "
        "/ "
        "sqrt(ms + epsilon); var -= mom.");

REGISTER_OP("ResourceApplyRMSProp")
    .Input("var: resource")
    .Input("ms: resource")
    .Input("mom: resource")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<RMSPropRule, false, true>)
    .Doc(
        "Update '*var' according to the RMSProp algorithm (resource "
        "variables).\n"
        "ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad "
        "/ "
        "sqrt(ms + epsilon); var -= mom.");

REGISTER_DENSE_KERNELS("ApplyRMSProp", RMSPropRule);

// ---------------------------------------------------------------------------
// ApplyAdam

REGISTER_OP("ApplyAdam")
    .Input("var: Ref(T)")
    .Input("m: Ref(T)")
    .Input("v: Ref(T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<AdamRule, false, false>)
    .Doc(
        "Update '*var' according to the Adam algorithm.\n"
        "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - "
        "m) * "
        "(1 - beta1); v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / "
        "(sqrt(v) + "
        "epsilon). With use_nesterov, m is replaced by beta1 * m + (1 - beta1) "
        "* "
        "grad in the last step.");

REGISTER_OP("ResourceApplyAdam")
    .Input("var: resource")
    .Input("m: resource")
    .Input("v: resource")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ShapeFn<AdamRule, false, true>)
    .Doc(
        "Update '*var' according to the Adam algorithm (resource variables).\n"
        "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - "
        "m) * "
        "(1 - beta1); v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / "
        "(sqrt(v) + "
        "epsilon).");

REGISTER_DENSE_KERNELS("ApplyAdam", AdamRule);

// ---------------------------------------------------------------------------
// ApplyAdadelta

REGISTER_OP("ApplyAdadelta")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("accum_update: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<AdadeltaRule, false, false>)
    .Doc(
        "Update '*var' according to the adadelta scheme.\n"
        "accum = rho * accum + (1 - rho) * grad^2; update = sqrt(accum_update "
        "+ "
        "epsilon) / sqrt(accum + epsilon) * grad; var -= lr * update; "
        "accum_update "
        "= rho * accum_update + (1 - rho) * update^2.");

REGISTER_OP("ResourceApplyAdadelta")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("accum_update: resource")
    .Input("lr: T")
    .Input("rho: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(ShapeFn<AdadeltaRule, false, true>)
    .Doc(
        "Update '*var' according to the adadelta scheme (resource variables).\n"
        "accum = rho * accum + (1 - rho) * grad^2; update = sqrt(accum_update "
        "+ "
        "epsilon) / sqrt(accum + epsilon) * grad; var -= lr * update; "
        "accum_update "
        "= rho * accum_update + (1 - rho) * update^2.");

REGISTER_DENSE_KERNELS("ApplyAdadelta", AdadeltaRule);

#undef REGISTER_DENSE_KERNELS
#undef REGISTER_SPARSE_KERNELS
#undef REGISTER_SPARSE_KERNELS_T_INDEX

}  // namespace
}  // namespace runnel
