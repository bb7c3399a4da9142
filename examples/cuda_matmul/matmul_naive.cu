// Naive fp32 matmul C = A @ B (row-major, N x N): one thread per output element,
// every operand read straight from global memory.
#include <cuda_runtime.h>

__global__ void matmul_naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}

// The launcher magpie calls (through ctypes): plain C linkage, device pointers, the stream last.
extern "C" int launch_matmul_naive(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
