// Optimizer ops through a Session: the ref forms (ApplyX on VariableV2
// nodes) need the executor to pass variable references, and the resource
// forms (ResourceApplyX on VarHandleOp handles) run the same graphs with
// resource variables. Each update is checked against the closed form,
// computed here in double, over several steps.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Graph text

std::string TypeText(DataType dt) {
  switch (dt) {
    case DT_FLOAT:
      return "DT_FLOAT";
    case DT_DOUBLE:
      return "DT_DOUBLE";
    case DT_INT32:
      return "DT_INT32";
    case DT_INT64:
      return "DT_INT64";
    default:
      return "DT_INVALID";
  }
}

std::string TypeAttr(const std::string& name, DataType dt) {
  return absl::StrCat("attr { key: \"", name, "\" value { type: ", TypeText(dt),
                      " } } ");
}

std::string ShapeProtoText(const TensorShape& s) {
  std::string out = "shape { ";
  for (int d = 0; d < s.dims(); ++d)
    absl::StrAppend(&out, "dim { size: ", s.dim_size(d), " } ");
  return out + "}";
}

Tensor MakeTensor(DataType dt, const TensorShape& shape,
                  const std::vector<double>& v) {
  Tensor t(dt, shape);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.NumElements());
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DT_FLOAT)
      t.flat<float>()[i] = static_cast<float>(v[i]);
    else
      t.flat<double>()[i] = v[i];
  }
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v.push_back(t.dtype() == DT_FLOAT ? t.flat<float>()[i]
                                      : t.flat<double>()[i]);
  }
  return v;
}

std::string ConstNode(const std::string& name, const Tensor& t) {
  std::string vals;
  for (double v : Values(t)) {
    absl::StrAppend(
        &vals, t.dtype() == DT_FLOAT ? "float_val: " : "double_val: ", v, " ");
  }
  std::string shape = "tensor_shape { ";
  for (int d = 0; d < t.dims(); ++d)
    absl::StrAppend(&shape, "dim { size: ", t.dim_size(d), " } ");
  shape += "}";
  return absl::StrCat("node { name: \"", name, "\" op: \"Const\" ",
                      TypeAttr("dtype", t.dtype()),
                      "attr { key: \"value\" value { tensor { dtype: ",
                      TypeText(t.dtype()), " ", shape, " ", vals, "} } } }\n");
}

std::string PlaceholderNode(const std::string& name, DataType dt) {
  return absl::StrCat(
      "node { name: \"", name, "\" op: \"Placeholder\" ", TypeAttr("dtype", dt),
      "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n");
}

// ---------------------------------------------------------------------------
// Running an optimizer

// An optimizer op: its ref-form name and its inputs in order. The first
// `num_vars` inputs are variables (var and its slots); "grad" and "indices"
// are fed per step; every other input is a scalar fed per step.
struct Optimizer {
  std::string op;
  std::vector<std::string> inputs;
  int num_vars;
  std::string attrs = "";  // Extra attrs, in text format.
  bool sparse = false;
};

struct VarSetup {
  DataType dtype = DT_FLOAT;
  bool resource = false;
  TensorShape shape;
  std::vector<std::vector<double>> init;  // One per variable input.
  DataType index_dtype = DT_INT32;
  bool initialise = true;
};

std::string OpName(const Optimizer& opt, bool resource) {
  if (!resource) return opt.sparse ? "Sparse" + opt.op : opt.op;
  return opt.sparse ? "ResourceSparse" + opt.op : "Resource" + opt.op;
}

// The graph: variables (initialised by "<name>/assign" from a Const),
// placeholders for the other inputs, and the update node "update".
std::string OptimizerGraph(const Optimizer& opt, const VarSetup& s) {
  std::string g;
  for (int k = 0; k < opt.num_vars; ++k) {
    const std::string& n = opt.inputs[k];
    g += ConstNode(n + "/init", MakeTensor(s.dtype, s.shape, s.init[k]));
    if (s.resource) {
      absl::StrAppend(&g, "node { name: \"", n, "\" op: \"VarHandleOp\" ",
                      TypeAttr("dtype", s.dtype),
                      "attr { key: \"shape\" value { ", ShapeProtoText(s.shape),
                      " } } attr { key: \"shared_name\" value { s: \"", n,
                      "\" } } }\n");
      absl::StrAppend(&g, "node { name: \"", n,
                      "/assign\" op: \"AssignVariableOp\" input: \"", n,
                      "\" input: \"", n, "/init\" ", TypeAttr("dtype", s.dtype),
                      "}\n");
      absl::StrAppend(&g, "node { name: \"", n,
                      "/read\" op: \"ReadVariableOp\" input: \"", n, "\" ",
                      TypeAttr("dtype", s.dtype), "}\n");
    } else {
      absl::StrAppend(&g, "node { name: \"", n, "\" op: \"VariableV2\" ",
                      TypeAttr("dtype", s.dtype),
                      "attr { key: \"shape\" value { ", ShapeProtoText(s.shape),
                      " } } }\n");
      absl::StrAppend(&g, "node { name: \"", n,
                      "/assign\" op: \"Assign\" input: \"", n, "\" input: \"",
                      n, "/init\" ", TypeAttr("T", s.dtype), "}\n");
    }
  }
  std::string update = absl::StrCat("node { name: \"update\" op: \"",
                                    OpName(opt, s.resource), "\" ");
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& n = opt.inputs[i];
    absl::StrAppend(&update, "input: \"", n, "\" ");
    if (static_cast<int>(i) < opt.num_vars) continue;
    g += PlaceholderNode(n, n == "indices" ? s.index_dtype : s.dtype);
  }
  absl::StrAppend(&update, TypeAttr("T", s.dtype));
  if (opt.sparse) absl::StrAppend(&update, TypeAttr("Tindices", s.index_dtype));
  absl::StrAppend(&update, opt.attrs, "}\n");
  return g + update;
}

std::unique_ptr<Session> MakeSession(const std::string& text) {
  GraphDef g;
  Status parsed = ParseGraphDefText(text, &g);
  EXPECT_TRUE(parsed.ok()) << parsed << "\n" << text;
  auto s = NewSession();
  EXPECT_TRUE(s.ok());
  Status c = (*s)->Create(g);
  EXPECT_TRUE(c.ok()) << c << "\n" << text;
  return std::move(*s);
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

// Initialises the variables, runs `steps` updates with feeds(step) and
// returns every variable's final value.
StatusOr<std::vector<std::vector<double>>> Train(
    const Optimizer& opt, const VarSetup& s, int steps,
    const std::function<Feeds(int)>& feeds) {
  auto session = MakeSession(OptimizerGraph(opt, s));
  std::vector<Tensor> out;
  if (s.initialise) {
    std::vector<std::string> init;
    for (int k = 0; k < opt.num_vars; ++k)
      init.push_back(opt.inputs[k] + "/assign");
    RETURN_IF_ERROR(session->Run({}, {}, init, &out));
  }
  for (int step = 0; step < steps; ++step) {
    RETURN_IF_ERROR(session->Run(feeds(step), {}, {"update"}, &out));
  }
  std::vector<std::string> fetch;
  for (int k = 0; k < opt.num_vars; ++k) {
    fetch.push_back(s.resource ? opt.inputs[k] + "/read" : opt.inputs[k]);
  }
  RETURN_IF_ERROR(session->Run({}, fetch, {}, &out));
  std::vector<std::vector<double>> values;
  for (const Tensor& t : out) {
    EXPECT_EQ(t.dtype(), s.dtype);
    EXPECT_EQ(t.shape(), s.shape);
    values.push_back(Values(t));
  }
  return values;
}

// ---------------------------------------------------------------------------
// Dense optimizers against their closed forms

using State = std::vector<std::vector<double>>;  // var, then slots.
using Scalars = std::map<std::string, double>;
using Reference =
    std::function<void(State*, const Scalars&, const std::vector<double>&)>;

// A varied gradient for element i at `step`.
double GradValue(int64_t i, int step) {
  return std::sin(1.0 + 0.7 * i + 2.3 * step) * 0.9;
}

// Runs `opt` for 3 steps in every form (ref/resource × float/double) and
// compares var and slots with `reference` applied in double.
void CheckDense(const Optimizer& opt, const TensorShape& shape,
                const State& init, const std::function<Scalars(int)>& scalars,
                const Reference& reference) {
  const int kSteps = 3;
  const int64_t n = shape.num_elements();
  State expected = init;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<double> g(n);
    for (int64_t i = 0; i < n; ++i) g[i] = GradValue(i, step);
    reference(&expected, scalars(step), g);
  }
  for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
    for (bool resource : {false, true}) {
      SCOPED_TRACE(
          absl::StrCat(OpName(opt, resource), " ", DataTypeString(dt)));
      VarSetup s;
      s.dtype = dt;
      s.resource = resource;
      s.shape = shape;
      s.init = init;
      auto got = Train(opt, s, kSteps, [&](int step) {
        Feeds f;
        std::vector<double> g(n);
        for (int64_t i = 0; i < n; ++i) g[i] = GradValue(i, step);
        f.push_back({"grad", MakeTensor(dt, shape, g)});
        for (const auto& [name, v] : scalars(step)) {
          f.push_back({name, MakeTensor(dt, TensorShape({}), {v})});
        }
        return f;
      });
      ASSERT_TRUE(got.ok()) << got.status();
      const double tol = dt == DT_FLOAT ? 2e-6 : 1e-13;
      for (int k = 0; k < opt.num_vars; ++k) {
        for (int64_t i = 0; i < n; ++i) {
          const double want = expected[k][i];
          EXPECT_NEAR((*got)[k][i], want, tol * std::max(1.0, std::abs(want)))
              << opt.inputs[k] << "[" << i << "]";
        }
      }
    }
  }
}

const TensorShape kShape({2, 3});
const std::vector<double> kVar = {1.0, -2.0, 0.5, 3.0, 0.0, -0.25};

TEST(TrainingOpsTest, GradientDescent) {
  Optimizer opt{"ApplyGradientDescent", {"var", "alpha", "grad"}, 1};
  CheckDense(
      opt, kShape, {kVar},
      [](int step) {
        return Scalars{{"alpha", 0.5 - 0.1 * step}};
      },
      [](State* s, const Scalars& c, const std::vector<double>& g) {
        for (size_t i = 0; i < g.size(); ++i)
          (*s)[0][i] -= c.at("alpha") * g[i];
      });
}

TEST(TrainingOpsTest, GradientDescentHandComputed) {
  // var = [1, 2], alpha = 0.5, delta = [2, -4] twice: [1-1-1, 2+2+2].
  Optimizer opt{"ApplyGradientDescent", {"var", "alpha", "grad"}, 1};
  for (bool resource : {false, true}) {
    VarSetup s;
    s.resource = resource;
    s.shape = TensorShape({2});
    s.init = {{1, 2}};
    auto got = Train(opt, s, 2, [](int) {
      return Feeds{{"grad", Tensor::FromVector<float>({2, -4})},
                   {"alpha", Tensor::Scalar<float>(0.5f)}};
    });
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0], (std::vector<double>{-1, 6}));
  }
}

Reference MomentumReference(bool nesterov) {
  return [nesterov](State* s, const Scalars& c, const std::vector<double>& g) {
    const double lr = c.at("lr"), mom = c.at("momentum");
    for (size_t i = 0; i < g.size(); ++i) {
      double& var = (*s)[0][i];
      double& accum = (*s)[1][i];
      accum = accum * mom + g[i];
      var -= nesterov ? g[i] * lr + accum * mom * lr : accum * lr;
    }
  };
}

TEST(TrainingOpsTest, Momentum) {
  Optimizer opt{"ApplyMomentum", {"var", "accum", "lr", "grad", "momentum"}, 2};
  auto scalars = [](int step) {
    return Scalars{{"lr", 0.1 + 0.05 * step}, {"momentum", 0.9}};
  };
  const State init = {kVar, {0.1, 0.2, 0.0, -0.3, 0.5, 1.0}};
  CheckDense(opt, kShape, init, scalars, MomentumReference(false));
  opt.attrs = "attr { key: \"use_nesterov\" value { b: true } }";
  CheckDense(opt, kShape, init, scalars, MomentumReference(true));
}

Reference AdagradReference(bool update_slots) {
  return
      [update_slots](State* s, const Scalars& c, const std::vector<double>& g) {
        for (size_t i = 0; i < g.size(); ++i) {
          double& accum = (*s)[1][i];
          if (update_slots) accum += g[i] * g[i];
          (*s)[0][i] -= c.at("lr") * g[i] / std::sqrt(accum);
        }
      };
}

TEST(TrainingOpsTest, Adagrad) {
  Optimizer opt{"ApplyAdagrad", {"var", "accum", "lr", "grad"}, 2};
  auto scalars = [](int step) { return Scalars{{"lr", 0.3 - 0.05 * step}}; };
  const State init = {kVar, {0.1, 0.1, 0.2, 0.3, 1.0, 2.0}};
  CheckDense(opt, kShape, init, scalars, AdagradReference(true));
  opt.attrs = "attr { key: \"update_slots\" value { b: false } }";
  CheckDense(opt, kShape, init, scalars, AdagradReference(false));
}

TEST(TrainingOpsTest, RMSProp) {
  Optimizer opt{
      "ApplyRMSProp",
      {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"},
      3};
  CheckDense(
      opt, kShape, {kVar, {0.5, 0.5, 0.5, 1, 1, 1}, {0, 0.1, -0.1, 0, 0, 0.2}},
      [](int step) {
        return Scalars{{"lr", 0.01 * (step + 1)},
                       {"rho", 0.9},
                       {"momentum", 0.5},
                       {"epsilon", 1e-3}};
      },
      [](State* s, const Scalars& c, const std::vector<double>& g) {
        const double lr = c.at("lr"), rho = c.at("rho"), mom = c.at("momentum"),
                     eps = c.at("epsilon");
        for (size_t i = 0; i < g.size(); ++i) {
          double& ms = (*s)[1][i];
          double& m = (*s)[2][i];
          ms = rho * ms + (1 - rho) * g[i] * g[i];
          m = mom * m + lr * g[i] / std::sqrt(ms + eps);
          (*s)[0][i] -= m;
        }
      });
}

Reference AdamReference(bool nesterov) {
  return [nesterov](State* s, const Scalars& c, const std::vector<double>& g) {
    const double b1 = c.at("beta1"), b2 = c.at("beta2"), eps = c.at("epsilon");
    const double alpha = c.at("lr") * std::sqrt(1 - c.at("beta2_power")) /
                         (1 - c.at("beta1_power"));
    for (size_t i = 0; i < g.size(); ++i) {
      double& m = (*s)[1][i];
      double& v = (*s)[2][i];
      m = b1 * m + (1 - b1) * g[i];
      v = b2 * v + (1 - b2) * g[i] * g[i];
      const double step = nesterov ? (1 - b1) * g[i] + b1 * m : m;
      (*s)[0][i] -= alpha * step / (std::sqrt(v) + eps);
    }
  };
}

TEST(TrainingOpsTest, Adam) {
  Optimizer opt{"ApplyAdam",
                {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                 "beta2", "epsilon", "grad"},
                3};
  // beta powers advance as the Python optimizer's would: beta^t at step t.
  auto scalars = [](int step) {
    return Scalars{{"beta1_power", std::pow(0.9, step + 1)},
                   {"beta2_power", std::pow(0.999, step + 1)},
                   {"lr", 0.01},
                   {"beta1", 0.9},
                   {"beta2", 0.999},
                   {"epsilon", 1e-8}};
  };
  const State init = {kVar, std::vector<double>(6, 0.0),
                      std::vector<double>(6, 0.0)};
  CheckDense(opt, kShape, init, scalars, AdamReference(false));
  opt.attrs = "attr { key: \"use_nesterov\" value { b: true } }";
  const State warm = {
      kVar, {0.1, -0.1, 0, 0.2, 0.3, -0.4}, {0.01, 0.02, 0.03, 0.04, 0.05, 1}};
  CheckDense(opt, kShape, warm, scalars, AdamReference(true));
}

TEST(TrainingOpsTest, Adadelta) {
  Optimizer opt{
      "ApplyAdadelta",
      {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"},
      3};
  CheckDense(
      opt, kShape,
      {kVar, std::vector<double>(6, 0.0), {0, 0.1, 0.2, 0.3, 0.4, 0.5}},
      [](int step) {
        return Scalars{
            {"lr", 1.0 - 0.25 * step}, {"rho", 0.95}, {"epsilon", 1e-6}};
      },
      [](State* s, const Scalars& c, const std::vector<double>& g) {
        const double lr = c.at("lr"), rho = c.at("rho"), eps = c.at("epsilon");
        for (size_t i = 0; i < g.size(); ++i) {
          double& accum = (*s)[1][i];
          double& accum_update = (*s)[2][i];
          accum = rho * accum + (1 - rho) * g[i] * g[i];
          const double update =
              std::sqrt(accum_update + eps) / std::sqrt(accum + eps) * g[i];
          (*s)[0][i] -= lr * update;
          accum_update = rho * accum_update + (1 - rho) * update * update;
        }
      });
}

// ---------------------------------------------------------------------------
// Sparse optimizers

// Applies `row_update` (a dense reference on one row) for each index in
// order, as TF's sparse kernels do.
void SparseReference(State* s, const std::vector<int64_t>& indices,
                     const std::vector<double>& grad, int64_t row,
                     const Scalars& c, const Reference& dense) {
  for (size_t i = 0; i < indices.size(); ++i) {
    State rows(s->size());
    for (size_t k = 0; k < s->size(); ++k) {
      rows[k].assign((*s)[k].begin() + indices[i] * row,
                     (*s)[k].begin() + (indices[i] + 1) * row);
    }
    std::vector<double> g(grad.begin() + i * row, grad.begin() + (i + 1) * row);
    dense(&rows, c, g);
    for (size_t k = 0; k < s->size(); ++k) {
      std::copy(rows[k].begin(), rows[k].end(),
                (*s)[k].begin() + indices[i] * row);
    }
  }
}

Tensor IndexTensor(DataType dt, const std::vector<int64_t>& v) {
  if (dt == DT_INT32) {
    std::vector<int32_t> w(v.begin(), v.end());
    return Tensor::FromVector<int32_t>(w);
  }
  return Tensor::FromVector<int64_t>(v);
}

// var [4, 2]; each step updates rows `indices[step]` (with a repeat).
void CheckSparse(const Optimizer& opt, const State& init,
                 const Scalars& scalars, const Reference& dense) {
  const TensorShape shape({4, 2});
  const std::vector<std::vector<int64_t>> indices = {{2, 0}, {3, 3}, {0}};
  State expected = init;
  auto grad_values = [&](int step) {
    std::vector<double> g;
    for (size_t i = 0; i < indices[step].size() * 2; ++i)
      g.push_back(GradValue(i, step));
    return g;
  };
  for (int step = 0; step < 3; ++step) {
    SparseReference(&expected, indices[step], grad_values(step), 2, scalars,
                    dense);
  }
  for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
    for (bool resource : {false, true}) {
      for (DataType index_dt : {DT_INT32, DT_INT64}) {
        SCOPED_TRACE(absl::StrCat(OpName(opt, resource), " ",
                                  DataTypeString(dt), " ",
                                  DataTypeString(index_dt)));
        VarSetup s;
        s.dtype = dt;
        s.resource = resource;
        s.shape = shape;
        s.init = init;
        s.index_dtype = index_dt;
        auto got = Train(opt, s, 3, [&](int step) {
          const int64_t rows = static_cast<int64_t>(indices[step].size());
          Feeds f = {{"grad", MakeTensor(dt, TensorShape({rows, 2}),
                                         grad_values(step))},
                     {"indices", IndexTensor(index_dt, indices[step])}};
          for (const auto& [name, v] : scalars) {
            f.push_back({name, MakeTensor(dt, TensorShape({}), {v})});
          }
          return f;
        });
        ASSERT_TRUE(got.ok()) << got.status();
        const double tol = dt == DT_FLOAT ? 2e-6 : 1e-13;
        for (int k = 0; k < opt.num_vars; ++k) {
          for (size_t i = 0; i < expected[k].size(); ++i) {
            EXPECT_NEAR((*got)[k][i], expected[k][i],
                        tol * std::max(1.0, std::abs(expected[k][i])))
                << opt.inputs[k] << "[" << i << "]";
          }
          // Row 1 is never indexed: bit-for-bit unchanged.
          EXPECT_EQ((*got)[k][2],
                    static_cast<double>(static_cast<float>(init[k][2])));
          EXPECT_EQ((*got)[k][3],
                    static_cast<double>(static_cast<float>(init[k][3])));
        }
      }
    }
  }
}

const std::vector<double> kSparseVar = {1, 2, 3.5, -4.5, 5, 6, -7, 8};

TEST(TrainingOpsTest, SparseAdagrad) {
  Optimizer opt{"ApplyAdagrad", {"var", "accum", "lr", "grad", "indices"}, 2};
  opt.sparse = true;
  const State init = {kSparseVar, {0.1, 0.2, 0.25, 0.5, 0.5, 0.6, 0.7, 0.8}};
  CheckSparse(opt, init, {{"lr", 0.2}}, AdagradReference(true));
  opt.attrs = "attr { key: \"update_slots\" value { b: false } }";
  CheckSparse(opt, init, {{"lr", 0.2}}, AdagradReference(false));
}

TEST(TrainingOpsTest, SparseMomentum) {
  Optimizer opt{"ApplyMomentum",
                {"var", "accum", "lr", "grad", "indices", "momentum"},
                2};
  opt.sparse = true;
  const State init = {kSparseVar, {0, 0.5, 0.25, 0.5, -1, 0, 0.5, 0}};
  CheckSparse(opt, init, {{"lr", 0.1}, {"momentum", 0.9}},
              MomentumReference(false));
  opt.attrs = "attr { key: \"use_nesterov\" value { b: true } }";
  CheckSparse(opt, init, {{"lr", 0.1}, {"momentum", 0.9}},
              MomentumReference(true));
}

// ---------------------------------------------------------------------------
// Errors

const Optimizer kMomentum{
    "ApplyMomentum", {"var", "accum", "lr", "grad", "momentum"}, 2};

VarSetup MomentumSetup(bool resource) {
  VarSetup s;
  s.resource = resource;
  s.shape = TensorShape({3});
  s.init = {{1, 2, 3}, {0, 0, 0}};
  return s;
}

Feeds MomentumFeeds(Tensor grad, Tensor lr = Tensor::Scalar<float>(0.1f)) {
  return {{"grad", std::move(grad)},
          {"lr", std::move(lr)},
          {"momentum", Tensor::Scalar<float>(0.9f)}};
}

void ExpectError(const Status& s, absl::StatusCode code,
                 const std::string& text) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(text), std::string::npos) << s;
}

TEST(TrainingOpsErrorsTest, UninitializedVariable) {
  for (bool resource : {false, true}) {
    VarSetup s = MomentumSetup(resource);
    s.initialise = false;
    auto got = Train(kMomentum, s, 1, [](int) {
      return MomentumFeeds(Tensor::FromVector<float>({1, 1, 1}));
    });
    ExpectError(got.status(), absl::StatusCode::kFailedPrecondition,
                resource ? "Error while reading resource variable var"
                         : "uninitialized");
  }
}

TEST(TrainingOpsErrorsTest, ShapesAndScalars) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource);
    auto run = [&](Feeds feeds) {
      return Train(kMomentum, MomentumSetup(resource), 1,
                   [&](int) { return feeds; })
          .status();
    };
    ExpectError(run(MomentumFeeds(Tensor::FromVector<float>({1, 1}))),
                absl::StatusCode::kInvalidArgument,
                "var and grad do not have the same shape[3] [2]");
    ExpectError(run(MomentumFeeds(Tensor::FromVector<float>({1, 1, 1}),
                                  Tensor::FromVector<float>({0.1f, 0.1f}))),
                absl::StatusCode::kInvalidArgument, "lr is not a scalar: [2]");
    // Slots of another shape.
    VarSetup s = MomentumSetup(resource);
    s.init[1] = {0, 0, 0};
    auto session = MakeSession(
        OptimizerGraph(kMomentum, s) +
        ConstNode("small", Tensor::FromVector<float>({0, 0})) +
        (resource
             ? "node { name: \"shrink\" op: \"AssignVariableOp\" "
               "input: \"accum\" input: \"small\" " +
                   TypeAttr("dtype", DT_FLOAT) + "}"
             : "node { name: \"shrink\" op: \"Assign\" input: "
               "\"accum\" input: \"small\" " +
                   TypeAttr("T", DT_FLOAT) +
                   "attr { key: \"validate_shape\" value { b: false } } }"));
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {}, {"var/assign", "shrink"}, &out));
    ExpectError(
        session->Run(MomentumFeeds(Tensor::FromVector<float>({1, 1, 1})), {},
                     {"update"}, &out),
        absl::StatusCode::kInvalidArgument,
        "var and accum do not have the same shape[3] [2]");
  }
}

const Optimizer kSparseAdagrad = [] {
  Optimizer o{"ApplyAdagrad", {"var", "accum", "lr", "grad", "indices"}, 2};
  o.sparse = true;
  return o;
}();

TEST(TrainingOpsErrorsTest, SparseBadIndicesLeaveTheVariableUnchanged) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource);
    VarSetup s;
    s.resource = resource;
    s.shape = TensorShape({3, 2});
    s.init = {{1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1}};
    auto session = MakeSession(OptimizerGraph(kSparseAdagrad, s));
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {}, {"var/assign", "accum/assign"}, &out));
    auto run = [&](Tensor grad, Tensor indices,
                   Tensor lr = Tensor::Scalar<float>(1)) {
      return session->Run({{"grad", std::move(grad)},
                           {"indices", std::move(indices)},
                           {"lr", lr}},
                          {}, {"update"}, &out);
    };
    const Tensor grad2 =
        Tensor::FromVector<float>({1, 1, 1, 1}, TensorShape({2, 2}));
    ExpectError(run(grad2, Tensor::FromVector<int32_t>({0, 5})),
                absl::StatusCode::kInvalidArgument,
                "Index 5 at offset 1 in indices is out of range");
    ExpectError(run(grad2, Tensor::FromVector<int32_t>({-1, 0})),
                absl::StatusCode::kInvalidArgument, "Index -1 at offset 0");
    ExpectError(run(grad2, Tensor::FromVector<int32_t>({0, 1, 2})),
                absl::StatusCode::kInvalidArgument,
                "grad must be the same size as indices");
    ExpectError(run(Tensor::FromVector<float>({1, 1, 1}, TensorShape({1, 3})),
                    Tensor::FromVector<int32_t>({0})),
                absl::StatusCode::kInvalidArgument,
                "var and grad must match in dimension 1");
    ExpectError(
        run(grad2, Tensor::FromVector<int32_t>({0, 1}, TensorShape({1, 2}))),
        absl::StatusCode::kInvalidArgument, "indices must be one-dimensional");
    ExpectError(run(grad2, Tensor::FromVector<int32_t>({0, 1}),
                    Tensor::FromVector<float>({1})),
                absl::StatusCode::kInvalidArgument, "lr is not a scalar");
    // Nothing was written.
    const std::string fetch_var = resource ? "var/read" : "var";
    ASSERT_OK(session->Run({}, {fetch_var}, {}, &out));
    ExpectTensorEqual<float>(
        out[0],
        Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
    // Empty indices update nothing.
    ASSERT_OK(run(Tensor(DT_FLOAT, TensorShape({0, 2})),
                  Tensor(DT_INT32, TensorShape({0}))));
  }
}

TEST(TrainingOpsErrorsTest, ResourceVariableOfTheWrongDtype) {
  // A float variable updated by a double op.
  VarSetup s = MomentumSetup(true);
  Optimizer opt = kMomentum;
  std::string g = OptimizerGraph(opt, s);
  // Rebuild only the update node as double.
  const size_t at = g.find("node { name: \"update\"");
  g = g.substr(0, at) + PlaceholderNode("grad64", DT_DOUBLE) +
      PlaceholderNode("lr64", DT_DOUBLE) + PlaceholderNode("m64", DT_DOUBLE) +
      "node { name: \"update\" op: \"ResourceApplyMomentum\" input: \"var\" "
      "input: \"accum\" "
      "input: \"lr64\" input: \"grad64\" input: \"m64\" " +
      TypeAttr("T", DT_DOUBLE) + "}";
  auto session = MakeSession(g);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"var/assign", "accum/assign"}, &out));
  ExpectError(session->Run({{"grad64", Tensor::FromVector<double>({1, 1, 1})},
                            {"lr64", Tensor::Scalar<double>(1)},
                            {"m64", Tensor::Scalar<double>(1)}},
                           {}, {"update"}, &out),
              absl::StatusCode::kInvalidArgument, "dtype");
}

// ---------------------------------------------------------------------------
// Semantics of the update

TEST(TrainingOpsTest, RefFormOutputsTheUpdatedVariable) {
  VarSetup s = MomentumSetup(false);
  auto session = MakeSession(OptimizerGraph(kMomentum, s));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"var/assign", "accum/assign"}, &out));
  ASSERT_OK(session->Run(MomentumFeeds(Tensor::FromVector<float>({10, 20, 30})),
                         {"update"}, {}, &out));
  // accum = g; var -= 0.1 * g.
  ExpectTensorNear<float>(out[0], Tensor::FromVector<float>({0, 0, 0}), 1e-6);
}

TEST(TrainingOpsTest, AValueReadBeforeTheUpdateKeepsItsValue) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource);
    Optimizer opt{"ApplyGradientDescent", {"var", "alpha", "grad"}, 1};
    VarSetup s;
    s.resource = resource;
    s.shape = TensorShape({2});
    s.init = {{1, 2}};
    // "before" reads var; the update waits for it (control edge) and the
    // fetched value must still be the old one.
    opt.attrs =
        "input: \"^before\"";  // Text format: appended after the data inputs.
    std::string g = OptimizerGraph(opt, s);
    const std::string read_op = resource ? "ReadVariableOp" : "Identity";
    g += absl::StrCat("node { name: \"before\" op: \"", read_op,
                      "\" input: \"var\" ",
                      TypeAttr(resource ? "dtype" : "T", DT_FLOAT), "}\n");
    auto session = MakeSession(g);
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {}, {"var/assign"}, &out));
    for (int step = 0; step < 3; ++step) {
      ASSERT_OK(session->Run({{"grad", Tensor::FromVector<float>({1, 1})},
                              {"alpha", Tensor::Scalar<float>(1)}},
                             {"before"}, {"update"}, &out));
      ExpectTensorEqual<float>(
          out[0], Tensor::FromVector<float>({1.0f - step, 2.0f - step}));
    }
  }
}

TEST(TrainingOpsTest, ConcurrentStepsSerialiseOnTheVariable) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource);
    Optimizer opt{"ApplyGradientDescent", {"var", "alpha", "grad"}, 1};
    VarSetup s;
    s.resource = resource;
    s.shape = TensorShape({1000});
    s.init = {std::vector<double>(1000, 0.0)};
    auto session = MakeSession(OptimizerGraph(opt, s));
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {}, {"var/assign"}, &out));
    Tensor ones(DT_FLOAT, TensorShape({1000}));
    for (float& v : ones.flat<float>()) v = 1;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          std::vector<Tensor> o;
          if (!session
                   ->Run({{"grad", ones}, {"alpha", Tensor::Scalar<float>(1)}},
                         {}, {"update"}, &o)
                   .ok()) {
            ++failures;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    ASSERT_OK(session->Run({}, {resource ? "var/read" : "var"}, {}, &out));
    for (int64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(out[0].flat<float>()[i], -200.0f) << i;
  }
}

TEST(TrainingOpsTest, LargeAdamMatchesTheClosedFormEverywhere) {
  // Large enough for the intra-op pool to split the loop.
  const int64_t n = 1 << 18;
  Optimizer opt{"ApplyAdam",
                {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                 "beta2", "epsilon", "grad"},
                3};
  VarSetup s;
  s.resource = true;
  s.shape = TensorShape({n});
  std::vector<double> var(n);
  for (int64_t i = 0; i < n; ++i) var[i] = std::cos(0.001 * i);
  s.init = {var, std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  const Scalars c = {{"beta1_power", 0.9}, {"beta2_power", 0.999},
                     {"lr", 0.01},         {"beta1", 0.9},
                     {"beta2", 0.999},     {"epsilon", 1e-8}};
  std::vector<double> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = GradValue(i, 0);
  auto got = Train(opt, s, 1, [&](int) {
    Feeds f = {{"grad", MakeTensor(DT_FLOAT, s.shape, g)}};
    for (const auto& [name, v] : c)
      f.push_back({name, MakeTensor(DT_FLOAT, TensorShape({}), {v})});
    return f;
  });
  ASSERT_TRUE(got.ok()) << got.status();
  State expected = s.init;
  AdamReference(false)(&expected, c, g);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR((*got)[0][i], expected[0][i],
                2e-6 * std::max(1.0, std::abs(expected[0][i])))
        << i;
  }
}

TEST(TrainingOpsShapeTest, ShapeFunctions) {
  AttrMap f = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto s = InferShapes(
      "ApplyMomentum", f,
      {PartialTensorShape({2, -1}), PartialTensorShape({-1, 3}),
       PartialTensorShape({}), PartialTensorShape(), PartialTensorShape({})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 3}));
  // Resource forms have no outputs and do not read shapes from handles.
  s = InferShapes(
      "ResourceApplyMomentum", f,
      {PartialTensorShape({}), PartialTensorShape({}), PartialTensorShape({}),
       PartialTensorShape({5, 7}), PartialTensorShape({})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->empty());
  // Non-scalar lr, mismatched grad.
  EXPECT_EQ(InferShapes("ApplyAdagrad", f,
                        {PartialTensorShape({2}), PartialTensorShape({2}),
                         PartialTensorShape({1}), PartialTensorShape({2})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InferShapes("ApplyGradientDescent", f,
                        {PartialTensorShape({2}), PartialTensorShape({}),
                         PartialTensorShape({3})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Sparse: grad [?, 3] merges with var's inner dims; indices must be a vector.
  AttrMap sf = {{"T", MakeAttrValue(DT_FLOAT)},
                {"Tindices", MakeAttrValue(DT_INT32)}};
  s = InferShapes("SparseApplyAdagrad", sf,
                  {PartialTensorShape({10, -1}), PartialTensorShape(),
                   PartialTensorShape({}), PartialTensorShape({4, 3}),
                   PartialTensorShape({4})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0], PartialTensorShape({10, 3}));
  EXPECT_FALSE(InferShapes("SparseApplyAdagrad", sf,
                           {PartialTensorShape({10, 3}), PartialTensorShape(),
                            PartialTensorShape({}), PartialTensorShape({4, 3}),
                            PartialTensorShape({5})})
                   .ok());
  EXPECT_FALSE(InferShapes("SparseApplyMomentum", sf,
                           {PartialTensorShape({10, 3}), PartialTensorShape(),
                            PartialTensorShape({}), PartialTensorShape({4, 3}),
                            PartialTensorShape({4, 1}), PartialTensorShape({})})
                   .ok());
}

}  // namespace
}  // namespace runnel
