// CUDA testcase in AMD Magpie's latency-protocol style: checks its kernel, then times it with
// graph replay (include/magpie_bench.hpp) and prints one MAGPIE_LATENCY_JSON line that magpie
// reads into its statistics. Exit code 0 only when every element is right.
#include "magpie_bench.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void vector_scale(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + 1.0f;
}

static int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);  // magpie passes latency.rep_ms & co. as MAGPIE_BENCH_*
    return v ? std::atoi(v) : fallback;
}

int main() {
    const int n = 1 << 24;
    const float a = 3.0f;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) x[i] = 0.25f * (i % 1024);
    float *dx = nullptr, *dy = nullptr;
    if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess || cudaMalloc(&dy, n * sizeof(float)) != cudaSuccess) {
        std::fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    if (cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(dy, 0xff, n * sizeof(float)) != cudaSuccess) {  // NaN: an unwritten element fails
        std::fprintf(stderr, "copy to the device failed\n");
        return 1;
    }
    const int block = 256, grid = (n + block - 1) / block;
    auto launch = [&]() { vector_scale<<<grid, block, 0, magpie::bench::current_stream()>>>(dx, dy, a, n); };
    try {
        auto stats = magpie::bench::do_bench_cudagraph(launch, env_int("MAGPIE_BENCH_REP_MS", 20),
                                                       env_int("MAGPIE_BENCH_N_RETRIES", 5),
                                                       env_int("MAGPIE_BENCH_ESTIMATE_REPS", 5));
        magpie::bench::check(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
        for (int i = 0; i < n; ++i) {
            float want = a * x[i] + 1.0f;
            if (!(std::fabs(y[i] - want) <= 1e-6f * std::fabs(want))) {
                std::fprintf(stderr, "mismatch at %d: expected %g, got %g\n", i, want, y[i]);
                return 1;
            }
        }
        magpie::bench::print_marker(stats, "vector_scale");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
