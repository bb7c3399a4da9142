// Shared-memory tiled fp32 matmul C = A @ B (row-major, N x N): each block stages TILE x TILE
// tiles of A and B in shared memory, so each global element is read N / TILE times instead of N.
#include <cuda_runtime.h>

#define TILE 32

__global__ void matmul_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int n) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];  // +1: no bank conflicts on the transposed read
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        as[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? b[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}

extern "C" int launch_matmul_tiled(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_tiled_kernel<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
