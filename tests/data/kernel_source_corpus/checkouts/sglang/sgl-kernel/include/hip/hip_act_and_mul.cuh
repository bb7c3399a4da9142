// Extract of sgl-project/sglang @ b87b16742dd3, sgl-kernel/include/hip/hip_act_and_mul.cuh: the kernel's template
// head and signature verbatim (a function-pointer template parameter); body left out.
#pragma once

#include "utils.h"

namespace sgl_hip {
namespace activation {

template <typename T, T (*Activation)(const T&)>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  // (body left out of this extract)
}

}  // namespace activation
}  // namespace sgl_hip
