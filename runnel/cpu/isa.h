// RUNNEL_AVX512_CLONES: builds a function twice, for the default target
// (x86-64-v3, AVX2) and for x86-64-v4 (AVX-512), and picks one when the
// program starts (GCC/Clang target_clones, an ELF ifunc), so the default
// build still runs on any x86-64-v3 machine (Note [Per-ISA loops]).
//
// Note [Per-ISA loops]
// benchmarks/isa_loops times the shapes of Runnel's hot element-wise loops
// built both ways: on this machine's AVX-512 CPU the v4 build took 0.60-0.89x
// the AVX2 time on 64K floats (in L2) and 0.73-1.06x on 400K (SGD, which is
// bound by memory there, is level). So the loops of the element-wise
// gradient kernels (ReluGrad and its family) and of the dense optimizer
// updates carry the clones. Only functions with internal linkage get them
// (Clang makes a clone's resolver a strong symbol, which two translation
// units must not both define), and none under sanitizers, whose run-time
// libraries are not set up when ifunc resolvers run.
#ifndef RUNNEL_CPU_ISA_H_
#define RUNNEL_CPU_ISA_H_

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define RUNNEL_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RUNNEL_SANITIZED_BUILD 1
#endif

#if defined(__x86_64__) && defined(__ELF__) && !defined(RUNNEL_SANITIZED_BUILD)
#define RUNNEL_AVX512_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v4")))
#else
#define RUNNEL_AVX512_CLONES
#endif

#endif  // RUNNEL_CPU_ISA_H_
