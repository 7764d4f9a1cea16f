// Reference-variable ops (state_ops.cc) are not differentiable: gradients
// are taken with respect to a variable's value (its output), not through
// its updates.
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

REGISTER_NO_GRADIENT("Assign", "a state update");
REGISTER_NO_GRADIENT("AssignAdd", "a state update");
REGISTER_NO_GRADIENT("AssignSub", "a state update");
REGISTER_NO_GRADIENT("IsVariableInitialized", "its output is a bool");

}  // namespace
}  // namespace runnel
