// CHECK macros for programmer bugs (never for user input: that is a Status).
#ifndef RUNNEL_BASE_LOGGING_H_
#define RUNNEL_BASE_LOGGING_H_

#include <cstdio>
#include <cstdlib>

namespace runnel::internal {
[[noreturn]] inline void CheckFailed(const char* file, int line,
                                     const char* cond) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, cond);
  std::abort();
}
}  // namespace runnel::internal

#define RUNNEL_CHECK(cond)                                        \
  do {                                                            \
    if (__builtin_expect(!(cond), 0))                             \
      ::runnel::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)

#ifdef NDEBUG
#define RUNNEL_DCHECK(cond) \
  do {                      \
  } while (false && (cond))
#else
#define RUNNEL_DCHECK(cond) RUNNEL_CHECK(cond)
#endif

#endif  // RUNNEL_BASE_LOGGING_H_
