// Gradients of the unique_ops family.
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// As TensorFlow (ops.NotDifferentiable("Unique")).
REGISTER_NO_GRADIENT("Unique", "it selects values; idx is an integer index");

}  // namespace
}  // namespace runnel
