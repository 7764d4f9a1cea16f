// Helpers shared by the training library's files (not a public API).
#ifndef RUNNEL_TRAINING_INTERNAL_H_
#define RUNNEL_TRAINING_INTERNAL_H_

#include <cstdint>
#include <utility>

#include "runnel/graph/scope.h"

namespace runnel::training::internal {

// The (seed, seed2) attrs of a random op given the user's op seed (0:
// the next number of the graph's counter; see layers.cc).
std::pair<int64_t, int64_t> OpSeeds(const Scope& scope, int64_t seed);

}  // namespace runnel::training::internal

#endif  // RUNNEL_TRAINING_INTERNAL_H_
