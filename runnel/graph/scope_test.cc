#include "runnel/graph/scope.h"
