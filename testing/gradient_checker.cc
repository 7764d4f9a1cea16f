#include "testing/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

bool IsFloat(DataType dt) { return dt == DT_FLOAT || dt == DT_DOUBLE; }

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_FLOAT ? static_cast<double>(t.flat<float>()[i])
                               : t.flat<double>()[i];
}

void Set(Tensor* t, int64_t i, double v) {
  if (t->dtype() == DT_FLOAT) {
    t->flat<float>()[i] = static_cast<float>(v);
  } else {
    t->flat<double>()[i] = v;
  }
}

Tensor Zeros(DataType dt, const TensorShape& shape) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) Set(&t, i, 0);
  return t;
}

// The evaluation of the graph at some x values.
class Evaluator {
 public:
  Evaluator(const Scope& scope, const std::vector<Output>& xs,
            const GradientCheckOptions& options)
      : session_(scope), xs_(xs), options_(options) {}

  Status Run(const std::vector<Tensor>& x_values,
             const ClientSession::FeedType& more,
             const std::vector<Output>& fetches, std::vector<Tensor>* out) {
    ClientSession::FeedType feeds = options_.extra_feeds;
    for (size_t i = 0; i < xs_.size(); ++i)
      feeds.insert_or_assign(xs_[i], x_values[i]);
    for (const auto& [k, v] : more) feeds.insert_or_assign(k, v);
    return session_.Run(feeds, fetches, out);
  }

 private:
  ClientSession session_;
  const std::vector<Output>& xs_;
  const GradientCheckOptions& options_;
};

Status Validate(const std::vector<Output>& xs,
                const std::vector<Tensor>& x_values,
                const std::vector<Output>& ys) {
  if (xs.size() != x_values.size()) {
    return errors::InvalidArgument("got ", x_values.size(), " values for ",
                                   xs.size(), " xs");
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!IsFloat(BaseType(xs[i].type())) ||
        x_values[i].dtype() != BaseType(xs[i].type())) {
      return errors::InvalidArgument(
          "x ", i, " ('", xs[i].name(), "') must be float or double and match ",
          "its value's dtype; got ", DataTypeString(xs[i].type()), " and ",
          DataTypeString(x_values[i].dtype()));
    }
  }
  for (size_t i = 0; i < ys.size(); ++i) {
    if (!IsFloat(BaseType(ys[i].type()))) {
      return errors::InvalidArgument("y ", i, " ('", ys[i].name(),
                                     "') must be float or double, got ",
                                     DataTypeString(ys[i].type()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string GradientCheckResult::DebugString() const {
  std::string s = absl::StrCat("max error ", max_error, "; Jacobian [", x_size,
                               " x elements][", y_size,
                               " y elements] symbolic | numeric:\n");
  for (int64_t i = 0; i < x_size; ++i) {
    absl::StrAppend(&s, "  x", i, ":");
    for (int64_t j = 0; j < y_size; ++j) {
      absl::StrAppend(&s, " ", symbolic[i * y_size + j], "|",
                      numeric[i * y_size + j]);
    }
    absl::StrAppend(&s, "\n");
  }
  return s;
}

// All of `ts` flattened and concatenated as one double vector, so a step
// fetches a single tensor (Note [One fetch per step]).
Output FlatDoubles(const Scope& s, const std::vector<Output>& ts) {
  std::vector<Output> parts;
  for (const Output& t : ts) {
    Output flat = ops::Reshape(s, t, {-1});
    if (BaseType(t.type()) != DT_DOUBLE) flat = ops::Cast(s, flat, DT_DOUBLE);
    parts.push_back(flat);
  }
  if (parts.size() == 1) return parts[0];
  return ops::ConcatV2(s, InputList(parts), 0);
}

// Note [One fetch per step]: every Run below fetches one tensor. Besides
// being cheaper, this keeps the checker independent of how a session
// gathers several fetches.
Status CheckGradients(const Scope& scope, const std::vector<Output>& xs,
                      const std::vector<Tensor>& x_values,
                      const std::vector<Output>& ys,
                      const GradientCheckOptions& options,
                      GradientCheckResult* result) {
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(Validate(xs, x_values, ys));
  // The symbolic gradients, with one dy placeholder per y.
  const Scope s = scope.NewSubScope("gradient_checker");
  std::vector<Output> dys, dxs;
  for (const Output& y : ys) {
    dys.push_back(ops::Placeholder(s, BaseType(y.type())));
  }
  RETURN_IF_ERROR(s.status());
  RETURN_IF_ERROR(AddSymbolicGradients(scope, ys, xs, dys, &dxs));
  const Output flat_y = FlatDoubles(s, ys);
  const Output flat_dx = FlatDoubles(s, dxs);
  RETURN_IF_ERROR(s.status());

  Evaluator eval(scope, xs, options);
  std::vector<Tensor> y0(ys.size());
  for (size_t k = 0; k < ys.size(); ++k) {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(eval.Run(x_values, {}, {ys[k]}, &out));
    y0[k] = out[0];
  }
  result->x_size = result->y_size = 0;
  for (const Tensor& x : x_values) result->x_size += x.NumElements();
  for (const Tensor& y : y0) result->y_size += y.NumElements();
  const int64_t nx = result->x_size, ny = result->y_size;
  result->symbolic.assign(nx * ny, 0.0);
  result->numeric.assign(nx * ny, 0.0);

  // The feeds for dy = e_j (j-th element of all ys).
  auto dy_feeds = [&](int64_t j) {
    ClientSession::FeedType feeds;
    for (size_t m = 0; m < ys.size(); ++m) {
      Tensor dy = Zeros(y0[m].dtype(), y0[m].shape());
      if (j >= 0 && j < dy.NumElements()) Set(&dy, j, 1.0);
      j -= dy.NumElements();
      feeds.insert_or_assign(dys[m], dy);
    }
    return feeds;
  };
  // Each symbolic gradient must have its x's shape and dtype.
  for (size_t p = 0; p < xs.size(); ++p) {
    std::vector<Tensor> dx;
    RETURN_IF_ERROR(eval.Run(x_values, dy_feeds(0), {dxs[p]}, &dx));
    if (dx[0].shape() != x_values[p].shape() ||
        dx[0].dtype() != x_values[p].dtype()) {
      return errors::InvalidArgument(
          "the symbolic gradient for x ", p, " is a ",
          DataTypeString(dx[0].dtype()), " ", dx[0].shape().DebugString(),
          " tensor; x is ", DataTypeString(x_values[p].dtype()), " ",
          x_values[p].shape().DebugString());
    }
  }

  // Symbolic: row j of J^T is dx for dy = e_j.
  for (int64_t j = 0; j < ny; ++j) {
    std::vector<Tensor> dx;
    RETURN_IF_ERROR(eval.Run(x_values, dy_feeds(j), {flat_dx}, &dx));
    if (dx[0].NumElements() != nx) {
      return errors::Internal("flattened gradients have ", dx[0].NumElements(),
                              " elements, expected ", nx);
    }
    for (int64_t i = 0; i < nx; ++i) {
      result->symbolic[i * ny + j] = dx[0].flat<double>()[i];
    }
  }

  // Numeric: column i of J is (y(x + d e_i) - y(x - d e_i)) / 2d.
  int64_t i = 0;
  for (size_t p = 0; p < xs.size(); ++p) {
    const double delta = options.delta > 0                  ? options.delta
                         : x_values[p].dtype() == DT_DOUBLE ? 1e-5
                                                            : 1e-3;
    for (int64_t q = 0; q < x_values[p].NumElements(); ++q, ++i) {
      std::vector<Tensor> moved = x_values;
      const double v = Get(x_values[p], q);
      double at[2];
      std::vector<Tensor> y_at[2];
      for (int side = 0; side < 2; ++side) {
        moved[p] = x_values[p].DeepCopy();
        Set(&moved[p], q, side == 0 ? v + delta : v - delta);
        at[side] = Get(moved[p], q);
        RETURN_IF_ERROR(eval.Run(moved, {}, {flat_y}, &y_at[side]));
        if (y_at[side][0].NumElements() != ny) {
          return errors::InvalidArgument("y changes size when x ", p, " moves");
        }
      }
      for (int64_t j = 0; j < ny; ++j) {
        result->numeric[i * ny + j] =
            (y_at[0][0].flat<double>()[j] - y_at[1][0].flat<double>()[j]) /
            (at[0] - at[1]);
      }
    }
  }
  result->max_error = 0;
  for (int64_t e = 0; e < nx * ny; ++e) {
    const double d = std::abs(result->symbolic[e] - result->numeric[e]);
    if (std::isnan(d)) {
      result->max_error = d;
      break;
    }
    result->max_error = std::max(result->max_error, d);
  }
  return absl::OkStatus();
}

Status ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                            const std::vector<Tensor>& x_values,
                            const std::vector<Output>& ys, double* max_error,
                            const GradientCheckOptions& options) {
  GradientCheckResult result;
  RETURN_IF_ERROR(CheckGradients(scope, xs, x_values, ys, options, &result));
  *max_error = result.max_error;
  return absl::OkStatus();
}

}  // namespace runnel
