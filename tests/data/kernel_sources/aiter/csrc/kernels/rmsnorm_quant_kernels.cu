namespace aiter {

template <typename DTYPE_I, typename DTYPE_O, int BlockSize, int thread_data_size, bool FUSE_ADD, bool SMOOTH,
          bool ROUND, int MODE>
__global__ void add_rmsnorm_quant_kernel(DTYPE_O* out, DTYPE_I* residual_out, float* scale, DTYPE_I* input) {
  // stub
}

}  // namespace aiter

void add_rmsnorm_quant(torch::Tensor& out, torch::Tensor& input, torch::Tensor& residual_in) {
  aiter::add_rmsnorm_quant_kernel<float, float, 256, 8, true, false, true, 1><<<1, 256>>>(nullptr, nullptr, nullptr, nullptr);
}
