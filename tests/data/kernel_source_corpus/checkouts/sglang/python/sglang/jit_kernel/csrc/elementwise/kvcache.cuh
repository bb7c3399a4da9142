// Extract of sgl-project/sglang, python/sglang/jit_kernel/csrc/elementwise/kvcache.cuh (an earlier stored
// version, the one with four template parameters as in the trace; commit not recorded by the index): the
// kernel's template head and signature verbatim, body left out.
namespace {

/**
 * \tparam kElementBytes The size of each key/value element in bytes.
 * \tparam kSplit The number of warps that handle each element.
 * \tparam kUsePDL Whether to use PDL feature.
 * \tparam T The data type of the indices (`int32_t` or `int64_t`).
 */
template <int64_t kElementBytes, int kSplit, bool kUsePDL, typename T>
__global__ void store_kvcache(const __grid_constant__ StoreKVCacheParams params) {
  // (body left out of this extract)
}

}  // namespace
