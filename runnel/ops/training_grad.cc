// Optimizer updates (training_ops.cc) are not differentiable: they are
// state updates applied after the gradients are computed.
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

REGISTER_NO_GRADIENT("ApplyGradientDescent", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyGradientDescent", "an optimizer update");
REGISTER_NO_GRADIENT("ApplyMomentum", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyMomentum", "an optimizer update");
REGISTER_NO_GRADIENT("SparseApplyMomentum", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceSparseApplyMomentum", "an optimizer update");
REGISTER_NO_GRADIENT("ApplyAdagrad", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyAdagrad", "an optimizer update");
REGISTER_NO_GRADIENT("SparseApplyAdagrad", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceSparseApplyAdagrad", "an optimizer update");
REGISTER_NO_GRADIENT("ApplyRMSProp", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyRMSProp", "an optimizer update");
REGISTER_NO_GRADIENT("ApplyAdam", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyAdam", "an optimizer update");
REGISTER_NO_GRADIENT("ApplyAdadelta", "an optimizer update");
REGISTER_NO_GRADIENT("ResourceApplyAdadelta", "an optimizer update");

}  // namespace
}  // namespace runnel
