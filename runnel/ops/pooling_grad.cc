// Gradients of the pooling ops (pooling_ops.cc).
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// The attrs every pooling op and its backprops require, read from `op`.
struct Window {
  std::vector<int64_t> ksize, strides;
  std::string padding;
};
Status GetWindow(const Operation& op, Window* w) {
  const AttrMap& attrs = op.node()->attrs();
  RETURN_IF_ERROR(GetAttr(attrs, "ksize", &w->ksize));
  RETURN_IF_ERROR(GetAttr(attrs, "strides", &w->strides));
  return GetAttr(attrs, "padding", &w->padding);
}

// y = maxpool(x): each window's gradient goes to its maximum (MaxPoolGrad).
Status MaxPoolGradFn(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  dx->push_back(ops::MaxPoolGrad(s, op.input(0), op.output(0), dy[0], w.ksize,
                                 w.strides, w.padding,
                                 grad::SharedAttrsOf<ops::MaxPoolGrad>(op)));
  return s.status();
}
REGISTER_GRADIENT("MaxPool", MaxPoolGradFn);

// y = avgpool(x): each window's gradient is spread evenly (AvgPoolGrad).
Status AvgPoolGradFn(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  dx->push_back(ops::AvgPoolGrad(s, ops::Shape(s, op.input(0)), dy[0], w.ksize,
                                 w.strides, w.padding,
                                 grad::SharedAttrsOf<ops::AvgPoolGrad>(op)));
  return s.status();
}
REGISTER_GRADIENT("AvgPool", AvgPoolGradFn);

// AvgPoolGrad is linear in its gradient input, with AvgPool as its
// adjoint.
Status AvgPoolGradGrad(const Scope& s, const Operation& op, const Outputs& dd,
                       Outputs* dx) {
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  dx->push_back(NoGradient());
  dx->push_back(ops::AvgPool(s, dd[0], w.ksize, w.strides, w.padding,
                             grad::SharedAttrsOf<ops::AvgPool>(op)));
  return s.status();
}
REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGrad);

// dx = MaxPoolGrad(x, y, dy) is linear in dy and piecewise constant in x
// (and does not read y): d/d(dy) is MaxPoolGradGrad, which gathers where
// MaxPoolGrad scatters. x and y get zeros (TF's _MaxPoolGradGrad returns
// zeros_like; a null gradient is zeros here, without computing them).
Status MaxPoolGradGradFn(const Scope& s, const Operation& op, const Outputs& dd,
                         Outputs* dx) {
  std::string padding;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "padding", &padding));
  if (padding == "EXPLICIT") {
    // TF's MaxPoolGradGrad has no explicit_paddings either.
    return errors::Unimplemented(
        "the gradient of MaxPoolGrad with EXPLICIT padding is not supported "
        "(MaxPoolGradGrad takes SAME or VALID padding only)");
  }
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  dx->push_back(ops::MaxPoolGradGrad(
      s, op.input(0), op.input(1), dd[0], w.ksize, w.strides, w.padding,
      grad::SharedAttrsOf<ops::MaxPoolGradGrad>(op)));
  return s.status();
}
REGISTER_GRADIENT("MaxPoolGrad", MaxPoolGradGradFn);

// out = MaxPoolGradGrad(x, y, g) is linear in g with MaxPoolGrad as its
// adjoint; x and y get zeros (TF's _MaxPoolGradGradGrad), as above.
Status MaxPoolGradGradGradFn(const Scope& s, const Operation& op,
                             const Outputs& dout, Outputs* dx) {
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  dx->push_back(ops::MaxPoolGrad(s, op.input(0), op.input(1), dout[0], w.ksize,
                                 w.strides, w.padding,
                                 grad::SharedAttrsOf<ops::MaxPoolGrad>(op)));
  return s.status();
}
REGISTER_GRADIENT("MaxPoolGradGrad", MaxPoolGradGradGradFn);

}  // namespace
}  // namespace runnel
