// Random ops (random_ops.cc) are not differentiable: their only inputs are
// shapes and bounds.
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

REGISTER_NO_GRADIENT("RandomUniform", "a random sample (input: a shape)");
REGISTER_NO_GRADIENT("RandomStandardNormal",
                     "a random sample (input: a shape)");
REGISTER_NO_GRADIENT("TruncatedNormal", "a random sample (input: a shape)");
REGISTER_NO_GRADIENT("RandomUniformInt", "a random sample of integers");

}  // namespace
}  // namespace runnel
