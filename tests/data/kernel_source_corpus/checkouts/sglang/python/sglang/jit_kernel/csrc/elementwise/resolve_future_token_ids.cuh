// Extract of sgl-project/sglang (a stored version of
// python/sglang/jit_kernel/csrc/elementwise/resolve_future_token_ids.cuh; the index lists d29260cd6ce7 as its
// newest), the generic kernel verbatim; the int32 vec4 kernel and the host launcher are left out.
#include <cstddef>
#include <cstdint>

namespace {

template <typename T>
__global__ void resolve_future_token_ids_kernel(T* __restrict__ input_ids, const T* __restrict__ future_map, size_t n) {
  size_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) {
    T val = input_ids[idx];
    if (val < 0) {
      T key = -val;
      if (key < 0) key = 0;  // clamp for overflow
      input_ids[idx] = future_map[key];
    }
  }
}

}  // namespace
