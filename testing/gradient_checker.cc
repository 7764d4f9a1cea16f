#include "testing/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/graph/gradients.h"

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
    for (size_t i = 0; i < xs_.size(); ++i) feeds.insert_or_assign(xs_[i], x_values[i]);
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
    if (!IsFloat(BaseType(xs[i].type())) || x_values[i].dtype() != BaseType(xs[i].type())) {
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
    NodeBuilder b(s, "Placeholder");
    b.Attr("dtype", BaseType(y.type()));
    Operation op;
    RETURN_IF_ERROR(b.Finalize(&op));
    dys.push_back(op.output(0));
  }
  RETURN_IF_ERROR(AddSymbolicGradients(scope, ys, xs, dys, &dxs));

  Evaluator eval(scope, xs, options);
  std::vector<Tensor> y0;
  RETURN_IF_ERROR(eval.Run(x_values, {}, ys, &y0));
  result->x_size = result->y_size = 0;
  for (const Tensor& x : x_values) result->x_size += x.NumElements();
  for (const Tensor& y : y0) result->y_size += y.NumElements();
  const int64_t nx = result->x_size, ny = result->y_size;
  result->symbolic.assign(nx * ny, 0.0);
  result->numeric.assign(nx * ny, 0.0);

  // Symbolic: row j of J^T is dx for dy = e_j.
  int64_t j = 0;
  for (size_t k = 0; k < ys.size(); ++k) {
    for (int64_t e = 0; e < y0[k].NumElements(); ++e, ++j) {
      ClientSession::FeedType dy_feeds;
      for (size_t m = 0; m < ys.size(); ++m) {
        Tensor dy = Zeros(y0[m].dtype(), y0[m].shape());
        if (m == k) Set(&dy, e, 1.0);
        dy_feeds.insert_or_assign(dys[m], dy);
      }
      std::vector<Tensor> dx;
      RETURN_IF_ERROR(eval.Run(x_values, dy_feeds, dxs, &dx));
      int64_t i = 0;
      for (size_t p = 0; p < xs.size(); ++p) {
        if (dx[p].shape() != x_values[p].shape() ||
            dx[p].dtype() != x_values[p].dtype()) {
          return errors::InvalidArgument(
              "the symbolic gradient for x ", p, " is a ",
              DataTypeString(dx[p].dtype()), " ", dx[p].shape().DebugString(),
              " tensor; x is ", DataTypeString(x_values[p].dtype()), " ",
              x_values[p].shape().DebugString());
        }
        for (int64_t q = 0; q < dx[p].NumElements(); ++q, ++i) {
          result->symbolic[i * ny + j] = Get(dx[p], q);
        }
      }
    }
  }

  // Numeric: column i of J is (y(x + d e_i) - y(x - d e_i)) / 2d.
  int64_t i = 0;
  for (size_t p = 0; p < xs.size(); ++p) {
    const double delta = options.delta > 0                      ? options.delta
                         : x_values[p].dtype() == DT_DOUBLE ? 1e-5
                                                                : 1e-3;
    for (int64_t q = 0; q < x_values[p].NumElements(); ++q, ++i) {
      std::vector<Tensor> moved = x_values;
      moved[p] = x_values[p].DeepCopy();
      const double v = Get(x_values[p], q);
      std::vector<Tensor> y_plus, y_minus;
      Set(&moved[p], q, v + delta);
      const double up = Get(moved[p], q);
      RETURN_IF_ERROR(eval.Run(moved, {}, ys, &y_plus));
      moved[p] = x_values[p].DeepCopy();
      Set(&moved[p], q, v - delta);
      const double down = Get(moved[p], q);
      RETURN_IF_ERROR(eval.Run(moved, {}, ys, &y_minus));
      for (size_t k = 0; k < ys.size(); ++k) {
        if (y_plus[k].shape() != y0[k].shape() ||
            y_minus[k].shape() != y0[k].shape()) {
          return errors::InvalidArgument("y ", k,
                                         " changes shape when x moves");
        }
      }
      int64_t jj = 0;
      for (size_t k = 0; k < ys.size(); ++k) {
        for (int64_t e = 0; e < y_plus[k].NumElements(); ++e, ++jj) {
          result->numeric[i * ny + jj] =
              (Get(y_plus[k], e) - Get(y_minus[k], e)) / (up - down);
        }
      }
    }
  }
  result->max_error = 0;
  for (int64_t e = 0; e < nx * ny; ++e) {
    const double d = std::abs(result->symbolic[e] - result->numeric[e]);
    result->max_error = std::isnan(d) ? d : std::max(result->max_error, d);
    if (std::isnan(d)) break;
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
