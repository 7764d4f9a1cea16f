#include "testing/op_test_util.h"
namespace runnel { namespace { TEST(ArrayOps, Placeholder0) {} } }
