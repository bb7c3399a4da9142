// Extract of sgl-project/sglang @ fc31a672f150, python/sglang/jit_kernel/csrc/elementwise/clamp_position.cuh,
// verbatim except the host launcher's body.
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDevice
#include <sgl_kernel/utils.h>   // For div_ceil

namespace {

template <typename T>
__global__ void clamp_position_kernel(T* __restrict__ dst, const T* __restrict__ seq_lens, size_t n) {
  size_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) {
    T val = seq_lens[idx] - 1;
    dst[idx] = val < 0 ? 0 : val;
  }
}

constexpr size_t kBlockSize = 256;

template <typename T>
struct ClampPosition {
  static void run(tvm::ffi::TensorView dst, tvm::ffi::TensorView seq_lens) {
    // (checks left out of this extract)
    LaunchKernel(grid_size, kBlockSize, device)(
        clamp_position_kernel<T>,
        static_cast<T*>(dst.data_ptr()),
        static_cast<const T*>(seq_lens.data_ptr()),
        num_elements);
  }
};

}  // namespace
