// Element-wise math ops: binary arithmetic with NumPy broadcasting, unary
// functions, comparisons, logical ops, the scans Cumsum/Cumprod,
// Select/SelectV2, Cast, AddN and BroadcastGradientArgs. Names, attrs and
// semantics follow TensorFlow.
//
// Integers (Note [Integer semantics] in runnel/cpu/integer.h): arithmetic
// wraps (two's complement), as in TensorFlow. Div truncates toward zero,
// FloorDiv rounds toward -inf and FloorMod takes the sign of the divisor. A
// zero divisor is an InvalidArgument error, checked before computing;
// INT_MIN/-1 wraps to INT_MIN (and INT_MIN mod -1 is 0) instead of trapping.
//
// Note [Functor]: each element-wise op is a small struct. Binary ones have
//   static constexpr int64_t kCost;  // rough ns per element, for ParallelFor
//   template <typename T> auto operator()(const T& a, const T& b) const;
// and optionally `static constexpr Check kCheck` to validate integer
// divisors or exponents. Unary ones provide
//   template <typename T> static void Run(ThreadPool*, const T*, T*, int64_t);
// usually through ElementUnary (a per-element function the compiler
// vectorises) or EigenUnary (Eigen's vectorised exp, tanh, ...).
#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_join.h"
#include "runnel/cpu/bcast.h"
#include "runnel/cpu/cwise.h"
#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Wrapping integer arithmetic (Note [Integer semantics], runnel/cpu/integer.h).

template <typename T>
constexpr bool kIsInt = cpu::kIsWrappingInt<T>;
using cpu::WrapAdd;
using cpu::WrapMul;
using cpu::WrapNeg;
using cpu::WrapSub;
using cpu::WrapType;

// Integer quotient and remainder that never trap: b != 0 is checked by the
// kernel; b == -1 (INT_MIN / -1 overflows) is handled here.
template <typename T>
inline T TruncDiv(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return WrapNeg(a);
  }
  return a / b;
}
template <typename T>
inline T TruncMod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return a % b;
}

// ---------------------------------------------------------------------------
// Binary kernels

// What a binary op requires of its second input for integer T.
enum class Check { kNone, kNonZeroDivisor, kNonNegativeExponent };

template <typename T, Check kCheck>
Status CheckSecondInput(const Tensor& y) {
  if constexpr (kIsInt<T> && kCheck != Check::kNone) {
    bool bad = false;
    for (T v : y.flat<T>()) {
      if constexpr (kCheck == Check::kNonZeroDivisor) {
        bad |= (v == 0);
      } else {
        bad |= (v < 0);
      }
    }
    if (bad) {
      return kCheck == Check::kNonZeroDivisor
                 ? errors::InvalidArgument("Integer division by zero")
                 : errors::InvalidArgument(
                       "Integers to negative integer powers are not allowed");
    }
  }
  return absl::OkStatus();
}

template <typename F>
constexpr Check CheckOf() {
  if constexpr (requires { F::kCheck; }) {
    return F::kCheck;
  } else {
    return Check::kNone;
  }
}

// z = F(x, y) with broadcasting; Out is T, or bool for comparisons.
template <typename T, typename F, typename Out = T>
class BinaryOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    cpu::BinaryBroadcast b;
    OP_REQUIRES_OK(ctx, b.Init(x.shape(), y.shape()));
    ComputeWith(ctx, b);
  }

 protected:
  void ComputeWith(OpKernelContext* ctx, const cpu::BinaryBroadcast& b) {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    if (b.num_elements() > 0) {
      OP_REQUIRES_OK(ctx, (CheckSecondInput<T, CheckOf<F>()>(y)));
    }
    Tensor* z;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {0, 1}, 0, b.output_shape(), &z));
    cpu::BinaryMap(ctx->intra_op_threadpool(), b, x.data<T>(), y.data<T>(),
                   z->data<Out>(), F::kCost, F());
  }
};

#define REGISTER_BINARY(op, F, T)                                             \
  REGISTER_KERNEL_BUILDER(Name(op).Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          BinaryOpKernel<T, F>)
#define REGISTER_BINARY_FLOAT(op, F) \
  REGISTER_BINARY(op, F, float);     \
  REGISTER_BINARY(op, F, double)
#define REGISTER_BINARY_REAL(op, F) \
  REGISTER_BINARY_FLOAT(op, F);     \
  REGISTER_BINARY(op, F, int32_t);  \
  REGISTER_BINARY(op, F, int64_t)

// The type lists below are those we register kernels for (TensorFlow's ops
// allow more; see the registry test).
#define BINARY_OP(types)      \
  Input("x: T")               \
      .Input("y: T")          \
      .Output("z: T")         \
      .Attr("T: {" types "}") \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
#define REAL_TYPES "float, double, int32, int64"
#define FLOAT_TYPES "float, double"

struct AddFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return WrapAdd(a, b);
  }
};
struct StringAddFn {
  static constexpr int64_t kCost = 50;
  std::string operator()(const std::string& a, const std::string& b) const {
    return a + b;
  }
};

REGISTER_OP("Add")
    .BINARY_OP(REAL_TYPES ", string")
    .Doc(R"doc(Returns x + y element-wise, with NumPy broadcasting.

For strings, concatenates. `AddV2` is the same for numbers and marks the op
commutative and aggregate.)doc");
REGISTER_BINARY_REAL("Add", AddFn);
REGISTER_BINARY("Add", StringAddFn, tstring);

REGISTER_OP("AddV2")
    .BINARY_OP(REAL_TYPES)
    .SetIsCommutative()
    .SetIsAggregate()
    .Doc("Returns x + y element-wise, with NumPy broadcasting.");
REGISTER_BINARY_REAL("AddV2", AddFn);

struct SubFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return WrapSub(a, b);
  }
};
REGISTER_OP("Sub")
    .BINARY_OP(REAL_TYPES)
    .Doc("Returns x - y element-wise, with NumPy broadcasting.");
REGISTER_BINARY_REAL("Sub", SubFn);

struct MulFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return WrapMul(a, b);
  }
};
REGISTER_OP("Mul")
    .BINARY_OP(REAL_TYPES)
    .SetIsCommutative()
    .Doc("Returns x * y element-wise, with NumPy broadcasting.");
REGISTER_BINARY_REAL("Mul", MulFn);

// Integers: truncating division (C semantics); floats: x / y.
struct DivFn {
  static constexpr int64_t kCost = 4;
  static constexpr Check kCheck = Check::kNonZeroDivisor;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return TruncDiv(a, b);
    } else {
      return a / b;
    }
  }
};
REGISTER_OP("Div")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns x / y element-wise, with NumPy broadcasting.

Integer division truncates toward zero; an integer divisor of 0 is an error.)doc");
REGISTER_BINARY_REAL("Div", DivFn);

REGISTER_OP("RealDiv")
    .BINARY_OP(FLOAT_TYPES)
    .Doc("Returns x / y element-wise for real types, with NumPy broadcasting.");
REGISTER_BINARY_FLOAT("RealDiv", DivFn);

// floor(x / y). Integers round toward -inf: FloorDiv(-7, 2) == -4.
struct FloorDivFn {
  static constexpr int64_t kCost = 5;
  static constexpr Check kCheck = Check::kNonZeroDivisor;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      const T q = TruncDiv(a, b);
      const T r = TruncMod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
    } else {
      return std::floor(a / b);
    }
  }
};
REGISTER_OP("FloorDiv")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns floor(x / y) element-wise, with NumPy broadcasting.

Integer division rounds toward negative infinity (Python's //); an integer
divisor of 0 is an error.)doc");
REGISTER_BINARY_REAL("FloorDiv", FloorDivFn);

// Remainder with the sign of the divisor (Python's %): the truncated
// remainder, plus y when the signs differ. FloorMod(-7, 2) == 1,
// FloorMod(7, -2) == -1.
struct FloorModFn {
  static constexpr int64_t kCost = 8;
  static constexpr Check kCheck = Check::kNonZeroDivisor;
  template <typename T>
  T operator()(T a, T b) const {
    T r;
    if constexpr (kIsInt<T>) {
      r = TruncMod(a, b);
    } else {
      r = std::fmod(a, b);
    }
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
};
REGISTER_OP("FloorMod")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns the element-wise remainder of floor division.

`x - floor(x / y) * y`: the result has the sign of `y`, as Python's `%`. For
floats it is `fmod(x, y)` plus `y` when the signs differ. An integer divisor
of 0 is an error.)doc");
REGISTER_BINARY_REAL("FloorMod", FloorModFn);

// Remainder with the sign of the dividend (C's % and fmod): Mod(-7, 2) == -1,
// Mod(7, -2) == 1. Mod and TruncateMod are the same op under two names.
struct TruncateModFn {
  static constexpr int64_t kCost = 8;
  static constexpr Check kCheck = Check::kNonZeroDivisor;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return TruncMod(a, b);
    } else {
      return std::fmod(a, b);
    }
  }
};
REGISTER_OP("Mod")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns the element-wise remainder of division, as C's `%`.

The result has the sign of `x` (`fmod` for floats); see FloorMod for Python's
`%`. An integer divisor of 0 is an error.)doc");
REGISTER_BINARY_REAL("Mod", TruncateModFn);
REGISTER_OP("TruncateMod")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns the element-wise remainder of truncating division.

`x - trunc(x / y) * y`, with the sign of `x` (`fmod` for floats). An integer
divisor of 0 is an error.)doc");
REGISTER_BINARY_REAL("TruncateMod", TruncateModFn);

// x / y rounded toward zero: TruncateDiv(-7, 2) == -3.
struct TruncateDivFn {
  static constexpr int64_t kCost = 5;
  static constexpr Check kCheck = Check::kNonZeroDivisor;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return TruncDiv(a, b);
    } else {
      return std::trunc(a / b);
    }
  }
};
REGISTER_OP("TruncateDiv")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns x / y element-wise, rounded toward zero (C semantics).

An integer divisor of 0 is an error.)doc");
REGISTER_BINARY_REAL("TruncateDiv", TruncateDivFn);

// The angle of the point (x, y): atan(y / x) in the right quadrant.
struct Atan2Fn {
  static constexpr int64_t kCost = 20;
  template <typename T>
  T operator()(T y, T x) const {
    return std::atan2(y, x);
  }
};
REGISTER_OP("Atan2")
    .Input("y: T")
    .Input("x: T")
    .Output("z: T")
    .Attr("T: {" FLOAT_TYPES "}")
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
    .Doc(R"doc(Computes arctangent of y/x element-wise, respecting signs.

The result is in [-pi, pi]: the angle of the point (x, y), as C's atan2,
with NumPy broadcasting.)doc");
REGISTER_BINARY_FLOAT("Atan2", Atan2Fn);

// NaN-propagating for floats (as TensorFlow's Eigen::PropagateNaN).
struct MaximumFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return a > b ? a : b;
    } else {
      return (a > b || a != a) ? a : b;
    }
  }
};
struct MinimumFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return a < b ? a : b;
    } else {
      return (a < b || a != a) ? a : b;
    }
  }
};
REGISTER_OP("Maximum")
    .BINARY_OP(REAL_TYPES)
    .Doc("Returns max(x, y) element-wise, with NumPy broadcasting; NaN wins.");
REGISTER_BINARY_REAL("Maximum", MaximumFn);
REGISTER_OP("Minimum")
    .BINARY_OP(REAL_TYPES)
    .Doc("Returns min(x, y) element-wise, with NumPy broadcasting; NaN wins.");
REGISTER_BINARY_REAL("Minimum", MinimumFn);

// Integer powers by repeated squaring (wrapping); a negative integer
// exponent is an error.
struct PowFn {
  static constexpr int64_t kCost = 20;
  static constexpr Check kCheck = Check::kNonNegativeExponent;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      using U = WrapType<T>;
      U result = 1, base = static_cast<U>(a);
      for (U e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(a, b);
    }
  }
};
REGISTER_OP("Pow")
    .BINARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns x^y element-wise, with NumPy broadcasting.

Integers to negative integer powers are an error.)doc");
REGISTER_BINARY_REAL("Pow", PowFn);

struct SquaredDifferenceFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    const T d = WrapSub(a, b);
    return WrapMul(d, d);
  }
};
REGISTER_OP("SquaredDifference")
    .BINARY_OP(REAL_TYPES)
    .SetIsCommutative()
    .Doc("Returns (x - y)(x - y) element-wise, with NumPy broadcasting.");
REGISTER_BINARY_REAL("SquaredDifference", SquaredDifferenceFn);

// ---------------------------------------------------------------------------
// Comparisons (bool output)

#define REGISTER_COMPARE(op, F, T)                                            \
  REGISTER_KERNEL_BUILDER(Name(op).Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          BinaryOpKernel<T, F, bool>)
#define REGISTER_COMPARE_REAL(op, F) \
  REGISTER_COMPARE(op, F, float);    \
  REGISTER_COMPARE(op, F, double);   \
  REGISTER_COMPARE(op, F, int32_t);  \
  REGISTER_COMPARE(op, F, int64_t)

#define COMPARE_OP(name, F, expr, doc)                 \
  struct F {                                           \
    static constexpr int64_t kCost = 1;                \
    template <typename T>                              \
    bool operator()(const T& a, const T& b) const {    \
      return expr;                                     \
    }                                                  \
  };                                                   \
  REGISTER_OP(name)                                    \
      .Input("x: T")                                   \
      .Input("y: T")                                   \
      .Output("z: bool")                               \
      .Attr("T: {" REAL_TYPES "}")                     \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)   \
      .Doc("Returns the truth value of " doc           \
           " element-wise, with NumPy broadcasting."); \
  REGISTER_COMPARE_REAL(name, F)

COMPARE_OP("Less", LessFn, a < b, "(x < y)");
COMPARE_OP("LessEqual", LessEqualFn, a <= b, "(x <= y)");
COMPARE_OP("Greater", GreaterFn, a > b, "(x > y)");
COMPARE_OP("GreaterEqual", GreaterEqualFn, a >= b, "(x >= y)");

struct EqualFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a == b;
  }
};
struct NotEqualFn {
  static constexpr int64_t kCost = 1;
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a != b;
  }
};

// With incompatible_shape_error=false, shapes that do not broadcast give a
// scalar (false for Equal, true for NotEqual) instead of an error. The shape
// is then unknown whenever some dimension pair might not broadcast.
Status EqualityShape(InferenceContext* c) {
  bool incompatible_shape_error;
  RETURN_IF_ERROR(
      c->GetAttr("incompatible_shape_error", &incompatible_shape_error));
  if (incompatible_shape_error) return shape_fns::BroadcastBinaryOpShape(c);
  const PartialTensorShape& x = c->input(0);
  const PartialTensorShape& y = c->input(1);
  if (x.unknown_rank() || y.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int rank = std::max(x.dims(), y.dims());
  for (int i = 0; i < rank; ++i) {
    const int ix = i - (rank - x.dims()), iy = i - (rank - y.dims());
    const int64_t dx = ix >= 0 ? x.dim_size(ix) : 1;
    const int64_t dy = iy >= 0 ? y.dim_size(iy) : 1;
    if (dx == 1 || dy == 1 || (dx >= 0 && dx == dy)) continue;
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  return shape_fns::BroadcastBinaryOpShape(c);
}

template <typename T, typename F, bool kIsNotEqual>
class EqualityKernel : public BinaryOpKernel<T, F, bool> {
 public:
  explicit EqualityKernel(OpKernelConstruction* c)
      : BinaryOpKernel<T, F, bool>(c) {
    OP_REQUIRES_OK(
        c, c->GetAttr("incompatible_shape_error", &incompatible_shape_error_));
  }

  void Compute(OpKernelContext* ctx) override {
    cpu::BinaryBroadcast b;
    Status s = b.Init(ctx->input(0).shape(), ctx->input(1).shape());
    if (!s.ok() && !incompatible_shape_error_) {
      Tensor* z;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &z));
      z->scalar<bool>() = kIsNotEqual;
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    this->ComputeWith(ctx, b);
  }

 private:
  bool incompatible_shape_error_ = true;
};

#define EQUALITY_OP(name, F, not_equal, doc)                               \
  REGISTER_OP(name)                                                        \
      .Input("x: T")                                                       \
      .Input("y: T")                                                       \
      .Output("z: bool")                                                   \
      .Attr("T: {" REAL_TYPES ", bool, string}")                           \
      .Attr("incompatible_shape_error: bool = true")                       \
      .SetIsCommutative()                                                  \
      .SetShapeFn(EqualityShape)                                           \
      .Doc("Returns the truth value of " doc                               \
           " element-wise, with NumPy broadcasting.\n\nWith "              \
           "incompatible_shape_error=false, shapes that do not broadcast " \
           "give a scalar instead of an error.");                          \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<float>("T"),            \
      EqualityKernel<float, F, not_equal>);                                \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<double>("T"),           \
      EqualityKernel<double, F, not_equal>);                               \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<int32_t>("T"),          \
      EqualityKernel<int32_t, F, not_equal>);                              \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<int64_t>("T"),          \
      EqualityKernel<int64_t, F, not_equal>);                              \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<bool>("T"),             \
      EqualityKernel<bool, F, not_equal>);                                 \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(name).Device(kDeviceCpu).TypeConstraint<tstring>("T"),          \
      EqualityKernel<tstring, F, not_equal>)

EQUALITY_OP("Equal", EqualFn, false, "(x == y)");
EQUALITY_OP("NotEqual", NotEqualFn, true, "(x != y)");

// ---------------------------------------------------------------------------
// Logical ops

struct LogicalAndFn {
  static constexpr int64_t kCost = 1;
  bool operator()(bool a, bool b) const { return a & b; }
};
struct LogicalOrFn {
  static constexpr int64_t kCost = 1;
  bool operator()(bool a, bool b) const { return a | b; }
};

REGISTER_OP("LogicalAnd")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetIsCommutative()
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
    .Doc("Returns x AND y element-wise, with NumPy broadcasting.");
REGISTER_KERNEL_BUILDER(Name("LogicalAnd").Device(kDeviceCpu),
                        BinaryOpKernel<bool, LogicalAndFn>);

REGISTER_OP("LogicalOr")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetIsCommutative()
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
    .Doc("Returns x OR y element-wise, with NumPy broadcasting.");
REGISTER_KERNEL_BUILDER(Name("LogicalOr").Device(kDeviceCpu),
                        BinaryOpKernel<bool, LogicalOrFn>);

// ---------------------------------------------------------------------------
// Unary kernels

template <typename T, typename F>
class UnaryOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    F::Run(ctx->intra_op_threadpool(), x.data<T>(), y->data<T>(),
           x.NumElements());
  }
};

// A unary op from a per-element function Derived::Apply(T).
template <typename Derived, int64_t kCostNs>
struct ElementUnary {
  template <typename T>
  static void Run(ThreadPool* pool, const T* x, T* y, int64_t n) {
    cpu::UnaryMap(pool, x, y, n, kCostNs,
                  [](T v) { return Derived::Apply(v); });
  }
};

// A unary op from an Eigen array expression Derived::Apply(array).
template <typename Derived, int64_t kCostNs>
struct EigenUnary {
  template <typename T>
  static void Run(ThreadPool* pool, const T* x, T* y, int64_t n) {
    cpu::UnaryBlockMap(
        pool, x, y, n, kCostNs, [](const T* in, T* out, int64_t m) {
          using A = Eigen::Array<T, Eigen::Dynamic, 1>;
          Eigen::Map<A>(out, m) = Derived::Apply(Eigen::Map<const A>(in, m));
        });
  }
};

#define REGISTER_UNARY(op, F, T)                                              \
  REGISTER_KERNEL_BUILDER(Name(op).Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          UnaryOpKernel<T, F>)
#define REGISTER_UNARY_FLOAT(op, F) \
  REGISTER_UNARY(op, F, float);     \
  REGISTER_UNARY(op, F, double)
#define REGISTER_UNARY_REAL(op, F) \
  REGISTER_UNARY_FLOAT(op, F);     \
  REGISTER_UNARY(op, F, int32_t);  \
  REGISTER_UNARY(op, F, int64_t)

#define UNARY_OP(types)       \
  Input("x: T")               \
      .Output("y: T")         \
      .Attr("T: {" types "}") \
      .SetShapeFn(shape_fns::UnchangedShape)

struct NegFn : ElementUnary<NegFn, 1> {
  template <typename T>
  static T Apply(T v) {
    return WrapNeg(v);
  }
};
REGISTER_OP("Neg").UNARY_OP(REAL_TYPES).Doc("Computes -x element-wise.");
REGISTER_UNARY_REAL("Neg", NegFn);

struct AbsFn : ElementUnary<AbsFn, 1> {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsInt<T>) {
      return v < 0 ? WrapNeg(v) : v;  // abs(INT_MIN) wraps to INT_MIN.
    } else {
      return std::abs(v);
    }
  }
};
REGISTER_OP("Abs").UNARY_OP(REAL_TYPES).Doc("Computes |x| element-wise.");
REGISTER_UNARY_REAL("Abs", AbsFn);

struct SignFn : ElementUnary<SignFn, 1> {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsInt<T>) {
      return static_cast<T>((v > 0) - (v < 0));
    } else {
      // 0 stays 0, NaN stays NaN.
      return v > 0 ? T(1) : (v < 0 ? T(-1) : (v == 0 ? T(0) : v));
    }
  }
};
REGISTER_OP("Sign")
    .UNARY_OP(REAL_TYPES)
    .Doc(R"doc(Returns an element-wise indication of the sign of x.

-1 if x < 0, 0 if x == 0, 1 if x > 0 (NaN for NaN).)doc");
REGISTER_UNARY_REAL("Sign", SignFn);

struct SquareFn : ElementUnary<SquareFn, 1> {
  template <typename T>
  static T Apply(T v) {
    return WrapMul(v, v);
  }
};
REGISTER_OP("Square").UNARY_OP(REAL_TYPES).Doc("Computes x * x element-wise.");
REGISTER_UNARY_REAL("Square", SquareFn);

// Round half to even (rint in the default rounding mode); integers are
// unchanged.
struct RintFn : EigenUnary<RintFn, 1> {
  template <typename A>
  static auto Apply(const A& a) {
    return a.rint();
  }
};
struct RoundFn {
  template <typename T>
  static void Run(ThreadPool* pool, const T* x, T* y, int64_t n) {
    if constexpr (kIsInt<T>) {
      if (x != y && n > 0) std::memcpy(y, x, n * sizeof(T));
    } else {
      RintFn::Run(pool, x, y, n);
    }
  }
};
REGISTER_OP("Round")
    .UNARY_OP(REAL_TYPES)
    .Doc(R"doc(Rounds x element-wise to the nearest integer, half to even.

Round(2.5) == 2, Round(-0.5) == -0. Integers are unchanged.)doc");
REGISTER_UNARY_REAL("Round", RoundFn);

#define EIGEN_UNARY_OP(name, F, cost, expr, doc)    \
  struct F : EigenUnary<F, cost> {                  \
    template <typename A>                           \
    static auto Apply(const A& a) {                 \
      return expr;                                  \
    }                                               \
  };                                                \
  REGISTER_OP(name).UNARY_OP(FLOAT_TYPES).Doc(doc); \
  REGISTER_UNARY_FLOAT(name, F)

EIGEN_UNARY_OP("Sqrt", SqrtFn, 1, a.sqrt(), "Computes sqrt(x) element-wise.");
EIGEN_UNARY_OP("Rsqrt", RsqrtFn, 2, a.sqrt().inverse(),
               "Computes 1 / sqrt(x) element-wise.");
EIGEN_UNARY_OP("Exp", ExpFn, 2, a.exp(), "Computes e^x element-wise.");
EIGEN_UNARY_OP("Log", LogFn, 2, a.log(),
               "Computes the natural logarithm of x element-wise.");
EIGEN_UNARY_OP("Log1p", Log1pFn, 3, a.log1p(),
               "Computes log(1 + x) element-wise.");
EIGEN_UNARY_OP("Tanh", TanhFn, 3, a.tanh(),
               "Computes the hyperbolic tangent of x element-wise.");
EIGEN_UNARY_OP("Sigmoid", SigmoidFn, 3, a.logistic(),
               "Computes 1 / (1 + exp(-x)) element-wise.");
EIGEN_UNARY_OP("Floor", FloorFn, 1, a.floor(),
               "Returns the largest integer not greater than x, element-wise.");
EIGEN_UNARY_OP("Ceil", CeilFn, 1, a.ceil(),
               "Returns the smallest integer not less than x, element-wise.");
EIGEN_UNARY_OP("Reciprocal", ReciprocalFn, 1, a.inverse(),
               "Computes 1 / x element-wise.");
EIGEN_UNARY_OP("Inv", InvFn, 1, a.inverse(),
               "Computes 1 / x element-wise (the old name of Reciprocal).");
EIGEN_UNARY_OP("Expm1", Expm1Fn, 3, a.expm1(),
               "Computes exp(x) - 1 element-wise, accurate near 0.");
EIGEN_UNARY_OP("Sin", SinFn, 4, a.sin(), "Computes sine element-wise.");
EIGEN_UNARY_OP("Cos", CosFn, 4, a.cos(), "Computes cosine element-wise.");
EIGEN_UNARY_OP("Tan", TanFn, 10, a.tan(), "Computes tangent element-wise.");
EIGEN_UNARY_OP("Asin", AsinFn, 10, a.asin(),
               "Computes arcsine element-wise: in [-pi/2, pi/2], NaN outside "
               "[-1, 1].");
EIGEN_UNARY_OP("Acos", AcosFn, 10, a.acos(),
               "Computes arccosine element-wise: in [0, pi], NaN outside "
               "[-1, 1].");
EIGEN_UNARY_OP("Atan", AtanFn, 10, a.atan(),
               "Computes arctangent element-wise: in (-pi/2, pi/2).");
EIGEN_UNARY_OP("Sinh", SinhFn, 10, a.sinh(),
               "Computes the hyperbolic sine element-wise.");
EIGEN_UNARY_OP("Cosh", CoshFn, 10, a.cosh(),
               "Computes the hyperbolic cosine element-wise.");
EIGEN_UNARY_OP("Asinh", AsinhFn, 10, a.asinh(),
               "Computes the inverse hyperbolic sine element-wise.");
EIGEN_UNARY_OP("Acosh", AcoshFn, 10, a.acosh(),
               "Computes the inverse hyperbolic cosine element-wise (NaN for "
               "x < 1).");
EIGEN_UNARY_OP("Atanh", AtanhFn, 10, a.atanh(),
               "Computes the inverse hyperbolic tangent element-wise: +-inf "
               "at +-1, NaN outside [-1, 1].");

REGISTER_OP("Rint")
    .UNARY_OP(FLOAT_TYPES)
    .Doc(R"doc(Returns the integer closest to x element-wise, half to even.

Rint(-1.5) == -2, Rint(0.5) == 0, Rint(2.5) == 2.)doc");
REGISTER_UNARY_FLOAT("Rint", RintFn);

#define ELEMENT_UNARY_OP(name, F, cost, expr, doc)  \
  struct F : ElementUnary<F, cost> {                \
    template <typename T>                           \
    static T Apply(T v) {                           \
      return expr;                                  \
    }                                               \
  };                                                \
  REGISTER_OP(name).UNARY_OP(FLOAT_TYPES).Doc(doc); \
  REGISTER_UNARY_FLOAT(name, F)

// lgamma_r: std::lgamma writes the global signgam, a data race across the
// threads of ParallelFor.
template <typename T>
T LogAbsGamma(T v) {
  int sign;
  if constexpr (std::is_same_v<T, float>) {
    return ::lgammaf_r(v, &sign);
  } else {
    return ::lgamma_r(v, &sign);
  }
}

// psi(x) = d/dx log Gamma(x), in double: the recurrence psi(x) = psi(x + 1) -
// 1/x up to x >= 10, then the asymptotic series (error < 1e-14). Negative x
// by reflection, psi(x) = psi(1 - x) - pi / tan(pi x). The poles (0, -1, ...)
// and -inf give NaN, as Eigen's digamma does for TF.
template <typename T>
T Digamma(T x) {
  double v = x;
  if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) return x;
  double result = 0;
  if (v <= 0) {
    const double floor_v = std::floor(v);
    if (v == floor_v) return std::numeric_limits<T>::quiet_NaN();
    // tan has period pi: use the fractional part, exact, for accuracy.
    result = -M_PI / std::tan(M_PI * (v - floor_v));
    v = 1 - v;
  }
  for (; v < 10; v += 1) result -= 1 / v;
  const double r = 1 / v, r2 = r * r;
  result +=
      std::log(v) - 0.5 * r -
      r2 * (1.0 / 12 -
            r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 / 132))));
  return static_cast<T>(result);
}

ELEMENT_UNARY_OP("Erf", ErfFn, 10, std::erf(v),
                 "Computes the Gauss error function of x element-wise.");
ELEMENT_UNARY_OP("Erfc", ErfcFn, 10, std::erfc(v),
                 "Computes the complementary error function 1 - erf(x) "
                 "element-wise, accurate for large x.");
ELEMENT_UNARY_OP("Lgamma", LgammaFn, 40, LogAbsGamma(v),
                 "Computes log(|Gamma(x)|) element-wise (+inf at the poles "
                 "0, -1, -2, ...).");
ELEMENT_UNARY_OP("Digamma", DigammaFn, 40, Digamma(v),
                 "Computes Psi, the derivative of Lgamma, element-wise (NaN "
                 "at the poles 0, -1, -2, ...).");
#undef ELEMENT_UNARY_OP

template <typename T>
class IsInfKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    cpu::UnaryMap(ctx->intra_op_threadpool(), x.data<T>(), y->data<bool>(),
                  x.NumElements(), 1, [](T v) { return std::isinf(v); });
  }
};
REGISTER_OP("IsInf")
    .Input("x: T")
    .Output("y: bool")
    .Attr("T: {" FLOAT_TYPES "}")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Returns which elements of x are +inf or -inf.");
REGISTER_KERNEL_BUILDER(
    Name("IsInf").Device(kDeviceCpu).TypeConstraint<float>("T"),
    IsInfKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("IsInf").Device(kDeviceCpu).TypeConstraint<double>("T"),
    IsInfKernel<double>);

struct LogicalNotFn : ElementUnary<LogicalNotFn, 1> {
  static bool Apply(bool v) { return !v; }
};
REGISTER_OP("LogicalNot")
    .Input("x: bool")
    .Output("y: bool")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Returns NOT x element-wise.");
REGISTER_KERNEL_BUILDER(Name("LogicalNot").Device(kDeviceCpu),
                        UnaryOpKernel<bool, LogicalNotFn>);

// ---------------------------------------------------------------------------
// Scans: Cumsum and Cumprod along one axis.

struct CumsumFn {
  template <typename T>
  static constexpr T kIdentity = T(0);
  template <typename T>
  T operator()(T a, T b) const {
    return WrapAdd(a, b);
  }
};
struct CumprodFn {
  template <typename T>
  static constexpr T kIdentity = T(1);
  template <typename T>
  T operator()(T a, T b) const {
    return WrapMul(a, b);
  }
};

// x viewed as [outer, n, inner] (n the scanned axis). Work units are an
// outer index and a block of up to kBlock contiguous inner positions, whose
// running values are kept side by side, so memory is read in order.
template <typename T, typename Tidx, typename F>
class ScanKernel : public OpKernel {
 public:
  explicit ScanKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("exclusive", &exclusive_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reverse", &reverse_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& axis_t = ctx->input(1);
    OP_REQUIRES(ctx, axis_t.dims() == 0,
                errors::InvalidArgument("ScanOp: axis must be a scalar, not ",
                                        axis_t.shape().DebugString()));
    const int64_t rank = x.dims();
    int64_t axis = axis_t.flat<Tidx>()[0];
    OP_REQUIRES(
        ctx, axis >= -rank && axis < rank,
        errors::InvalidArgument("ScanOp: Expected scan axis in the range [",
                                -rank, ", ", rank, "), but got ", axis,
                                " for x of shape ", x.shape().DebugString()));
    if (axis < 0) axis += rank;
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    // Nothing to scan; the loops below would still walk every outer index
    // of an empty x (2^40 of them for shape [2^40, 0] along axis 1).
    if (x.NumElements() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim_size(d);
    for (int d = axis + 1; d < rank; ++d) inner *= x.dim_size(d);
    const int64_t n = x.dim_size(axis);
    const int64_t blocks = (inner + kBlock - 1) / kBlock;
    const T* xp = x.data<T>();
    T* yp = out->data<T>();
    cpu::ParallelRange(ctx->intra_op_threadpool(), outer * blocks,
                       std::max<int64_t>(1, n * std::min(inner, kBlock)),
                       [&](int64_t b, int64_t e) {
                         for (int64_t u = b; u < e; ++u) {
                           const int64_t o = u / blocks,
                                         j0 = (u % blocks) * kBlock;
                           ScanBlock(xp, yp, o * n * inner + j0, n, inner,
                                     std::min(kBlock, inner - j0));
                         }
                       });
  }

 private:
  static constexpr int64_t kBlock = 256;

  // Scans `width` adjacent columns starting at `base`, rows `inner` apart.
  // Each element is read before its output is written (x may be out).
  void ScanBlock(const T* x, T* y, int64_t base, int64_t n, int64_t inner,
                 int64_t width) const {
    T acc[kBlock];
    std::fill(acc, acc + width, F::template kIdentity<T>);
    const F f;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = base + (reverse_ ? n - 1 - k : k) * inner;
      for (int64_t j = 0; j < width; ++j) {
        const T v = x[row + j];
        if (exclusive_) {
          y[row + j] = acc[j];
          acc[j] = f(acc[j], v);
        } else {
          acc[j] = f(acc[j], v);
          y[row + j] = acc[j];
        }
      }
    }
  }

  bool exclusive_ = false;
  bool reverse_ = false;
};

#define SCAN_OP(name, F, what)                                                \
  REGISTER_OP(name)                                                           \
      .Input("x: T")                                                          \
      .Input("axis: Tidx")                                                    \
      .Output("out: T")                                                       \
      .Attr("exclusive: bool = false")                                        \
      .Attr("reverse: bool = false")                                          \
      .Attr("T: {" REAL_TYPES "}")                                            \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                \
      .SetShapeFn(shape_fns::UnchangedShape)                                  \
      .Doc("Computes the cumulative " what                                    \
           " of x along axis.\n\n"                                            \
           "out[i] combines x[0..i] (inclusive); exclusive drops x[i] "       \
           "(out[0] is the identity); reverse scans from the end. axis is a " \
           "scalar in [-rank(x), rank(x)).");                                 \
  REGISTER_SCAN(name, F, float);                                              \
  REGISTER_SCAN(name, F, double);                                             \
  REGISTER_SCAN(name, F, int32_t);                                            \
  REGISTER_SCAN(name, F, int64_t)
#define REGISTER_SCAN(name, F, T)                               \
  REGISTER_KERNEL_BUILDER(Name(name)                            \
                              .Device(kDeviceCpu)               \
                              .TypeConstraint<T>("T")           \
                              .TypeConstraint<int32_t>("Tidx"), \
                          ScanKernel<T, int32_t, F>);           \
  REGISTER_KERNEL_BUILDER(Name(name)                            \
                              .Device(kDeviceCpu)               \
                              .TypeConstraint<T>("T")           \
                              .TypeConstraint<int64_t>("Tidx"), \
                          ScanKernel<T, int64_t, F>)

SCAN_OP("Cumsum", CumsumFn, "sum");
SCAN_OP("Cumprod", CumprodFn, "product");
#undef SCAN_OP
#undef REGISTER_SCAN

// ---------------------------------------------------------------------------
// Select and SelectV2
//
// Both only move elements, so one kernel per element size serves every POD
// type; strings use std::string.

struct Pod16 {
  uint64_t lo, hi;
};
template <typename S>
const S* Elements(const Tensor& t) {
  return static_cast<const S*>(t.raw_data());
}
template <typename S>
S* MutableElements(Tensor* t) {
  return static_cast<S*>(t->raw_data());
}

// Every dtype Select/SelectV2 allow, by storage size. Keep in step with
// kSelectTypes below.
const std::vector<DataType> kSelect1 = {DT_BOOL, DT_UINT8, DT_INT8};
const std::vector<DataType> kSelect2 = {DT_INT16, DT_UINT16, DT_HALF,
                                        DT_BFLOAT16};
const std::vector<DataType> kSelect4 = {DT_FLOAT, DT_INT32, DT_UINT32};
const std::vector<DataType> kSelect8 = {DT_DOUBLE, DT_INT64, DT_UINT64,
                                        DT_COMPLEX64};
const std::vector<DataType> kSelect16 = {DT_COMPLEX128};
#define SELECT_TYPES                                                 \
  "bool, uint8, int8, int16, uint16, half, bfloat16, float, int32, " \
  "uint32, double, int64, uint64, complex64, complex128, string"

Status SelectShape(InferenceContext* c) {
  PartialTensorShape data;
  RETURN_IF_ERROR(c->Merge(c->input(1), c->input(2), &data));
  const PartialTensorShape& cond = c->input(0);
  if (cond.unknown_rank() || data.unknown_rank() || cond.dims() == 0) {
    c->set_output(0, data);  // A scalar condition picks a whole input.
    return absl::OkStatus();
  }
  if (cond.dims() != 1 || data.dims() == 0) {
    RETURN_IF_ERROR(c->Merge(data, cond, &data));
    c->set_output(0, data);
    return absl::OkStatus();
  }
  // A vector condition picks rows of t and e: its length is their dim 0.
  PartialTensorShape unused;
  RETURN_IF_ERROR(
      c->Merge(cond, PartialTensorShape({data.dim_size(0)}), &unused));
  c->set_output(0, data);
  return absl::OkStatus();
}

REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: {" SELECT_TYPES "}")
    .SetShapeFn(SelectShape)
    .Doc(R"doc(Selects elements from t or e depending on condition.

t and e have the same shape. condition is a scalar (picks all of t or all of
e), has the shape of t (picks element-wise), or is a vector whose length is
t's first dimension when t has rank > 1 (picks whole rows).)doc");

template <typename S>
class SelectKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    OP_REQUIRES(
        ctx, t.shape() == e.shape(),
        errors::InvalidArgument(
            "'then' and 'else' must have the same size.  but received: ",
            t.shape().DebugString(), " vs. ", e.shape().DebugString()));
    if (cond.dims() == 0) {
      ctx->set_output(0, cond.scalar<bool>() ? t : e);
      return;
    }
    const bool by_rows = cond.dims() == 1 && t.dims() != 1;
    if (by_rows) {
      OP_REQUIRES(ctx, t.dims() >= 1,
                  errors::InvalidArgument(
                      "'then' must be at least a vector when 'cond' is a "
                      "vector, but saw shape: ",
                      t.shape().DebugString()));
      OP_REQUIRES(ctx, t.dim_size(0) == cond.NumElements(),
                  errors::InvalidArgument(
                      "Number of batches of 'then' must match size of 'cond', "
                      "but saw: ",
                      t.dim_size(0), " vs. ", cond.NumElements()));
    } else {
      OP_REQUIRES(
          ctx, cond.shape() == t.shape(),
          errors::InvalidArgument(
              "'cond' and 'then' must have the same size.  but "
              "received: ",
              cond.shape().DebugString(), " vs. ", t.shape().DebugString()));
    }
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({1, 2}, 0, t.shape(), &out));
    const int64_t n = t.NumElements();
    if (n == 0) return;
    const bool* c = cond.data<bool>();
    const S* tp = Elements<S>(t);
    const S* ep = Elements<S>(e);
    S* o = MutableElements<S>(out);
    ThreadPool* pool = ctx->intra_op_threadpool();
    if (!by_rows) {
      cpu::ParallelRange(pool, n, 1, [&](int64_t b, int64_t end) {
        for (int64_t i = b; i < end; ++i) o[i] = c[i] ? tp[i] : ep[i];
      });
      return;
    }
    const int64_t row = n / t.dim_size(0);
    cpu::ParallelRange(pool, t.dim_size(0), row, [&](int64_t b, int64_t end) {
      for (int64_t r = b; r < end; ++r) {
        const S* src = (c[r] ? tp : ep) + r * row;
        S* dst = o + r * row;
        if (src != dst) std::copy(src, src + row, dst);
      }
    });
  }
};

#define REGISTER_SELECT(op, Kernel)                               \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint("T", kSelect1),  \
      Kernel<uint8_t>);                                           \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint("T", kSelect2),  \
      Kernel<uint16_t>);                                          \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint("T", kSelect4),  \
      Kernel<uint32_t>);                                          \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint("T", kSelect8),  \
      Kernel<uint64_t>);                                          \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint("T", kSelect16), \
      Kernel<Pod16>);                                             \
  REGISTER_KERNEL_BUILDER(                                        \
      Name(op).Device(kDeviceCpu).TypeConstraint<tstring>("T"),   \
      Kernel<tstring>)

REGISTER_SELECT("Select", SelectKernel);

Status SelectV2Shape(InferenceContext* c) {
  PartialTensorShape data, out;
  RETURN_IF_ERROR(
      shape_fns::BroadcastShapes(*c, c->input(1), c->input(2), &data));
  RETURN_IF_ERROR(shape_fns::BroadcastShapes(*c, c->input(0), data, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("SelectV2")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: {" SELECT_TYPES "}")
    .SetShapeFn(SelectV2Shape)
    .Doc(R"doc(Selects elements from t or e depending on condition.

condition, t and e broadcast together (NumPy rules); the output has the
broadcast shape.)doc");

template <typename S>
class SelectV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    if (cond.dims() == 0 && t.shape() == e.shape()) {
      ctx->set_output(0, cond.scalar<bool>() ? t : e);
      return;
    }
    BCastList<3> b({cond.shape().dim_sizes(), t.shape().dim_sizes(),
                    e.shape().dim_sizes()});
    OP_REQUIRES(ctx, b.IsValid() && ShapeElementsFit(b.output_shape()),
                errors::InvalidArgument(
                    "condition ", cond.shape().DebugString(), ", then ",
                    t.shape().DebugString(), ", and else ",
                    e.shape().DebugString(), " must be broadcastable"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {1, 2}, 0, TensorShape(b.output_shape()), &out));
    const bool* c = cond.data<bool>();
    const S* tp = Elements<S>(t);
    const S* ep = Elements<S>(e);
    S* o = MutableElements<S>(out);
    const int64_t n = out->NumElements();
    ThreadPool* pool = ctx->intra_op_threadpool();
    if (!b.IsBroadcastingRequired()) {
      cpu::ParallelRange(pool, n, 1, [&](int64_t s, int64_t end) {
        for (int64_t i = s; i < end; ++i) o[i] = c[i] ? tp[i] : ep[i];
      });
      return;
    }
    const auto plan = cpu::BroadcastPlan<3>::FromBCast(b);
    const int64_t sc = plan.inner_stride(0), st = plan.inner_stride(1),
                  se = plan.inner_stride(2);
    cpu::ParallelRange(pool, n, 2, [&](int64_t s, int64_t end) {
      cpu::ForEachBroadcastRun(
          plan, s, end,
          [&](int64_t off, const std::array<int64_t, 3>& in, int64_t len) {
            const bool* cp = c + in[0];
            const S* tq = tp + in[1];
            const S* eq = ep + in[2];
            for (int64_t j = 0; j < len; ++j) {
              o[off + j] = cp[j * sc] ? tq[j * st] : eq[j * se];
            }
          });
    });
  }
};

REGISTER_SELECT("SelectV2", SelectV2Kernel);

// ---------------------------------------------------------------------------
// Cast

template <typename T>
constexpr bool kIsHalfLike =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <typename T>
constexpr bool kIsFloating = std::is_floating_point_v<T> || kIsHalfLike<T>;
template <typename T>
constexpr int kMantissaBits = std::is_same_v<T, double>  ? 52
                              : std::is_same_v<T, float> ? 23
                              : std::is_same_v<T, half>  ? 10
                                                         : 7;

// half/bfloat16 are computed in float.
template <typename T>
using Wide = std::conditional_t<kIsHalfLike<T>, float, T>;
template <typename T>
inline Wide<T> Widen(T v) {
  if constexpr (std::is_same_v<T, half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return v;
  }
}

// Clears the low `bits` mantissa bits of a float or double (the Truncate
// attr: round toward zero instead of to nearest); NaNs are kept as they are
// so a NaN whose payload sits in the low bits does not become infinity.
// The NaN test is on the bits, with no early return: GCC 12 at -O1/-O2
// drops the mask after an `if (v != v) return v;`.
template <typename F>
inline F ClearLowMantissaBits(F v, int bits) {
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  const U u = std::bit_cast<U>(v);
  const U magnitude = u & (std::numeric_limits<U>::max() >> 1);
  const U inf = std::bit_cast<U>(std::numeric_limits<F>::infinity());
  return std::bit_cast<F>(magnitude > inf ? u : u & ~((U(1) << bits) - 1));
}

// Note [Cast float to int]: C++ leaves NaN and out-of-range conversions
// undefined. We define them: NaN -> 0, and values beyond the destination
// range saturate to its min/max (in range, truncation toward zero).
template <typename Dst, typename W>
inline Dst FloatToInt(W v) {
  constexpr W kLo = static_cast<W>(std::numeric_limits<Dst>::min());
  // max is 2^k - 1, which rounds to 2^k (or is exact): v >= kHi is out of
  // range or exactly max.
  constexpr W kHi = static_cast<W>(std::numeric_limits<Dst>::max());
  if (v != v) return 0;
  if (v >= kHi) return std::numeric_limits<Dst>::max();
  if (v <= kLo) return std::numeric_limits<Dst>::min();
  return static_cast<Dst>(v);
}

template <typename Src, typename Dst, bool kTruncate>
inline Dst Convert(Src s) {
  auto v = Widen(s);
  using W = decltype(v);
  if constexpr (std::is_same_v<Dst, bool>) {
    return v != W(0);
  } else if constexpr (kIsHalfLike<Dst>) {
    float f;
    if constexpr (kTruncate && std::is_same_v<W, double>) {
      f = static_cast<float>(ClearLowMantissaBits(v, 52 - 23));
    } else {
      f = static_cast<float>(v);
    }
    if constexpr (kTruncate && kIsFloating<Src> &&
                  kMantissaBits < Src >> kMantissaBits<Dst>) {
      f = ClearLowMantissaBits(f, 23 - kMantissaBits<Dst>);
    }
    if constexpr (std::is_same_v<Dst, half>) {
      return FloatToHalf(f);
    } else {
      return FloatToBFloat16(f);
    }
  } else if constexpr (kIsInt<Dst> && std::is_floating_point_v<W>) {
    return FloatToInt<Dst>(v);
  } else if constexpr (kTruncate && std::is_same_v<Dst, float> &&
                       std::is_same_v<W, double>) {
    return static_cast<float>(ClearLowMantissaBits(v, 52 - 23));
  } else {
    return static_cast<Dst>(v);
  }
}

template <typename Src, typename Dst, bool kTruncate>
void CastRange(const void* in, void* out, int64_t b, int64_t e) {
  const Src* s = static_cast<const Src*>(in);
  Dst* d = static_cast<Dst*>(out);
  for (int64_t i = b; i < e; ++i) d[i] = Convert<Src, Dst, kTruncate>(s[i]);
}

using CastFn = void (*)(const void*, void*, int64_t, int64_t);

// Calls fn.template operator()<T>() for the dtypes Cast supports.
template <typename Fn>
bool CastTypeSwitch(DataType dt, Fn&& fn) {
  switch (dt) {
    case DT_BOOL:
      fn.template operator()<bool>();
      return true;
    case DT_HALF:
      fn.template operator()<half>();
      return true;
    case DT_BFLOAT16:
      fn.template operator()<bfloat16>();
      return true;
    default:
      return DispatchNumeric(dt, fn);
  }
}
#define CAST_TYPES                                                         \
  "bool, uint8, int8, int16, uint16, int32, uint32, int64, uint64, half, " \
  "bfloat16, float, double"

CastFn GetCastFn(DataType src, DataType dst, bool truncate) {
  CastFn fn = nullptr;
  CastTypeSwitch(src, [&]<typename S>() {
    CastTypeSwitch(dst, [&]<typename D>() {
      fn = truncate ? &CastRange<S, D, true> : &CastRange<S, D, false>;
    });
  });
  return fn;
}

REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: {" CAST_TYPES "}")
    .Attr("DstT: {" CAST_TYPES "}")
    .Attr("Truncate: bool = false")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(Casts x of type SrcT to y of type DstT.

Float to integer truncates toward zero; NaN becomes 0 and out-of-range values
saturate to the integer type's limits. Anything to bool is x != 0. With
Truncate, narrowing float conversions round toward zero instead of to
nearest.)doc");

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(OpKernelConstruction* c) : OpKernel(c) {
    bool truncate = false;
    OP_REQUIRES_OK(c, c->GetAttr("Truncate", &truncate));
    identity_ = input_type(0) == output_type(0);
    fn_ = GetCastFn(input_type(0), output_type(0), truncate);
    OP_REQUIRES(c, fn_ != nullptr,
                errors::InvalidArgument(
                    "Cast from ", DataTypeString(input_type(0)), " to ",
                    DataTypeString(output_type(0)), " is not supported"));
  }

  bool IsExpensive() const override { return !identity_; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (identity_) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const void* in = x.raw_data();
    void* out = y->raw_data();
    cpu::ParallelRange(ctx->intra_op_threadpool(), x.NumElements(), 1,
                       [&](int64_t b, int64_t e) { fn_(in, out, b, e); });
  }

 private:
  bool identity_ = false;
  CastFn fn_ = nullptr;
};
REGISTER_KERNEL_BUILDER(Name("Cast").Device(kDeviceCpu), CastKernel);

// ---------------------------------------------------------------------------
// AddN

REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr("T: {" REAL_TYPES "}")
    .SetIsCommutative()
    .SetIsAggregate()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape cur = c->input(c->num_inputs() - 1);
      for (int i = c->num_inputs() - 2; i >= 0; --i) {
        Status s = c->Merge(c->input(i), cur, &cur);
        if (!s.ok()) {
          return errors::InvalidArgument(s.message(), " (from merging shape ",
                                         i, " with other shapes)");
        }
      }
      c->set_output(0, cur);
      return absl::OkStatus();
    })
    .Doc(R"doc(Adds all input tensors element-wise.

inputs: must all have the same shape (no broadcasting).)doc");

template <typename T>
class AddNKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const int num = ctx->num_inputs();
    const Tensor& in0 = ctx->input(0);
    for (int i = 1; i < num; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == in0.shape(),
                  errors::InvalidArgument(
                      "Inputs to operation AddN must have the same size and "
                      "shape.  Input 0: ",
                      in0.shape().DebugString(), " != input ", i, ": ",
                      ctx->input(i).shape().DebugString()));
    }
    if (num == 1) {
      ctx->set_output(0, in0);
      return;
    }
    // Reuse the buffer of any input nobody else holds; the blocked sum below
    // reads a block of every input before writing that block.
    int reusable = -1;
    for (int i = 0; i < num && reusable < 0; ++i) {
      if (!ctx->input_is_ref(i) && ctx->input(i).RefCountIsOne()) reusable = i;
    }
    Tensor* out;
    if (reusable >= 0) {
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                              {reusable}, 0, in0.shape(), &out));
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in0.shape(), &out));
    }
    absl::InlinedVector<const T*, 8> in(num);
    for (int i = 0; i < num; ++i) in[i] = ctx->input(i).data<T>();
    T* o = out->data<T>();
    cpu::ParallelRange(ctx->intra_op_threadpool(), in0.NumElements(), num,
                       [&](int64_t b, int64_t e) { SumRange(in, o, b, e); });
  }

 private:
  // Sums in the inputs' order (for reproducible rounding), a cache-sized
  // block at a time.
  static void SumRange(absl::Span<const T* const> in, T* out, int64_t begin,
                       int64_t end) {
    constexpr int64_t kBlock = 256;
    T acc[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      const T* x0 = in[0] + b;
      const T* x1 = in[1] + b;
      for (int64_t j = 0; j < m; ++j) acc[j] = WrapAdd(x0[j], x1[j]);
      for (size_t k = 2; k < in.size(); ++k) {
        const T* xk = in[k] + b;
        for (int64_t j = 0; j < m; ++j) acc[j] = WrapAdd(acc[j], xk[j]);
      }
      std::copy(acc, acc + m, out + b);
    }
  }
};
REGISTER_KERNEL_BUILDER(
    Name("AddN").Device(kDeviceCpu).TypeConstraint<float>("T"),
    AddNKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("AddN").Device(kDeviceCpu).TypeConstraint<double>("T"),
    AddNKernel<double>);
REGISTER_KERNEL_BUILDER(
    Name("AddN").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
    AddNKernel<int32_t>);
REGISTER_KERNEL_BUILDER(
    Name("AddN").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
    AddNKernel<int64_t>);

// ---------------------------------------------------------------------------
// BroadcastGradientArgs

Status BroadcastGradientArgsShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(0, 1, &unused));
  RETURN_IF_ERROR(c->WithRank(1, 1, &unused));
  std::vector<int64_t> s0, s1;
  if (c->GetConstInts(0, &s0) && c->GetConstInts(1, &s1)) {
    BCast b(s0, s1);
    if (!b.IsValid()) {
      return c->InvalidArgument("Incompatible shapes: [",
                                absl::StrJoin(s0, ","), "] vs. [",
                                absl::StrJoin(s1, ","), "]");
    }
    c->set_output(0, PartialTensorShape(
                         {static_cast<int64_t>(b.grad_x_reduce_idx().size())}));
    c->set_output(1, PartialTensorShape(
                         {static_cast<int64_t>(b.grad_y_reduce_idx().size())}));
    return absl::OkStatus();
  }
  c->set_output(0, PartialTensorShape({-1}));
  c->set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

REGISTER_OP("BroadcastGradientArgs")
    .Input("s0: T")
    .Input("s1: T")
    .Output("r0: T")
    .Output("r1: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastGradientArgsShape)
    .Doc(R"doc(Returns the reduction indices for the gradients of a broadcast.

Given the shapes s0 and s1 of the inputs of a broadcasting binary op, r0 and
r1 are the output dimensions each input was broadcast along: summing the
output gradient over them (and reshaping) gives each input's gradient.
Dimensions where both shapes are 1 appear in both; identical shapes give
empty lists.)doc");

template <typename T>
class BroadcastGradientArgsKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    BCast::Vec shapes[2];
    for (int i = 0; i < 2; ++i) {
      const Tensor& s = ctx->input(i);
      OP_REQUIRES(ctx, s.dims() == 1,
                  errors::InvalidArgument("In[", i, "] must be a vector, got ",
                                          s.shape().DebugString()));
      for (T d : s.flat<T>()) shapes[i].push_back(d);
    }
    BCast b(shapes[0], shapes[1]);
    OP_REQUIRES(ctx, b.IsValid(),
                errors::InvalidArgument(
                    "Incompatible shapes: [", absl::StrJoin(shapes[0], ","),
                    "] vs. [", absl::StrJoin(shapes[1], ","), "]"));
    SetOutput(ctx, 0, b.grad_x_reduce_idx());
    SetOutput(ctx, 1, b.grad_y_reduce_idx());
  }

 private:
  static void SetOutput(OpKernelContext* ctx, int i, const BCast::Vec& v) {
    Tensor* out;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(
                       i, TensorShape({static_cast<int64_t>(v.size())}), &out));
    T* o = out->data<T>();
    for (size_t j = 0; j < v.size(); ++j) o[j] = static_cast<T>(v[j]);
  }
};
REGISTER_KERNEL_BUILDER(Name("BroadcastGradientArgs")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int32_t>("T"),
                        BroadcastGradientArgsKernel<int32_t>);
REGISTER_KERNEL_BUILDER(Name("BroadcastGradientArgs")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int64_t>("T"),
                        BroadcastGradientArgsKernel<int64_t>);

#undef REGISTER_BINARY
#undef REGISTER_BINARY_FLOAT
#undef REGISTER_BINARY_REAL
#undef BINARY_OP
#undef REAL_TYPES
#undef FLOAT_TYPES
#undef REGISTER_COMPARE
#undef REGISTER_COMPARE_REAL
#undef COMPARE_OP
#undef EQUALITY_OP
#undef REGISTER_UNARY
#undef REGISTER_UNARY_FLOAT
#undef REGISTER_UNARY_REAL
#undef UNARY_OP
#undef EIGEN_UNARY_OP
#undef SELECT_TYPES
#undef REGISTER_SELECT
#undef CAST_TYPES

}  // namespace
}  // namespace runnel
