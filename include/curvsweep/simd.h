/* simd.h — one definition, compiled for several vector widths. Header only;
 * part of src/core.
 *
 * CS_VECTOR_CLONES before a function definition has GCC compile it for
 * AVX-512, AVX2 and baseline x86-64, and the dynamic loader binds the
 * widest the CPU runs (an ifunc). Used on the element-wise loops of
 * training (docs/DECISIONS.md, "Training speed"), which the baseline
 * build can only vectorise two doubles wide. Without FMA contraction
 * (-ffp-contract=off) +, −, ×, ÷ and √ round the same in every lane
 * width, so such loops give the same bits in every clone; loops that call
 * exp go through glibc's libmvec, whose 2-, 4- and 8-wide exp round a few
 * arguments in 10⁵ differently: there the bits depend on the CPU's vector
 * width, as those of the BLAS kernels already do. Elsewhere (clang, other
 * architectures) the macro is empty. */
#ifndef CURVSWEEP_SIMD_H
#define CURVSWEEP_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CS_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CS_VECTOR_CLONES
#endif

#endif
