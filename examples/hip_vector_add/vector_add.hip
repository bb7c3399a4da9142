// HIP vector add with its own testcase: fills inputs, launches, checks every element,
// exits 0 only when all match. Built by magpie into $MAGPIE_BUILD_DIR/vector_add.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        hipError_t err_ = (call);                                                     \
        if (err_ != hipSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, hipGetErrorString(err_)); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Also callable from the built-in harness (entry: launch_vector_add).
extern "C" int launch_vector_add(const float* a, const float* b, float* c, int n, hipStream_t stream) {
    int block = 256;
    hipLaunchKernelGGL(vector_add, dim3((n + block - 1) / block), dim3(block), 0, stream, a, b, c, n);
    return (int)hipGetLastError();
}

int main() {
    const int n = 1 << 22;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) {
        a[i] = 0.5f * i;
        b[i] = 2.0f - i;
    }
    float *da, *db, *dc;
    CHECK(hipMalloc(&da, n * sizeof(float)));
    CHECK(hipMalloc(&db, n * sizeof(float)));
    CHECK(hipMalloc(&dc, n * sizeof(float)));
    CHECK(hipMemcpy(da, a.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(db, b.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(dc, 0xff, n * sizeof(float)));  // NaN: an unwritten element fails
    if (launch_vector_add(da, db, dc, n, nullptr) != 0) return 1;
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(c.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        if (!(std::fabs(c[i] - (a[i] + b[i])) <= 1e-6f * std::fabs(a[i] + b[i]) + 1e-6f)) {
            std::fprintf(stderr, "mismatch at %d: expected %g, got %g\n", i, a[i] + b[i], c[i]);
            return 1;
        }
    }
    std::printf("vector_add: %d elements ok\n", n);
    CHECK(hipFree(da));
    CHECK(hipFree(db));
    CHECK(hipFree(dc));
    return 0;
}
