#pragma once
// Warp-level tensor-core products (mma.sync, f16 inputs, f32 accumulators) used by the GEMV.
// Fragment layouts (PTX ISA, m16n8k16 / m16n8k8 .row.col): lane (g = lane / 4, t = lane % 4)
// holds A rows g and g + 8, columns 2t, 2t + 1 (and 2t + 8, 2t + 9 for k16); B columns (n) g,
// rows (k) 2t, 2t + 1 (and 2t + 8, 2t + 9); C/D rows g and g + 8, columns 2t, 2t + 1.
#include <cstdint>

namespace chorus::cuda {

// c += A (16 x 16) B (16 x 8).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = A (16 x 16) B (16 x 8), starting from zero (the first k-step of a sum).
__device__ __forceinline__ void mma_16816_first(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const float z = 0.0f;
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
}

// c += A (16 x 8) B (8 x 8).
__device__ __forceinline__ void mma_1688(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(b0));
}

}  // namespace chorus::cuda
