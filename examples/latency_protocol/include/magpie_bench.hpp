// magpie_bench.hpp: graph-replay kernel timing that prints AMD Magpie's latency marker line.
//
// Source-compatible with testcases written for AMD Magpie's header of the same name
// (magpie::bench::do_bench_hipgraph, current_stream, print_marker) and usable from CUDA too
// (do_bench_cudagraph is the same function). Written for magpie; the contract is:
//
//   MAGPIE_LATENCY_JSON: {"mode":"<hip|cuda>_graph","stats":{"median_ms":..,"samples_ms":[..],..},"kernel_name":".."}
//
// Method: one warm-up call; a graph of `estimate_reps` calls estimates the cost of one call;
// a graph of n_repeat = max(1, rep_ms / estimate) unrolled calls is replayed `n_retries` times,
// each replay timed with events and divided by n_repeat. Launch overhead is amortised over the
// unrolled calls, so each sample is close to the device time of one call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define MB_API(name) hip##name
#define MB_MODE "hip_graph"
typedef hipStream_t mb_stream_t;
typedef hipGraph_t mb_graph_t;
typedef hipGraphExec_t mb_exec_t;
typedef hipEvent_t mb_event_t;
typedef hipError_t mb_error_t;
#define MB_SUCCESS hipSuccess
#define MB_CAPTURE_MODE hipStreamCaptureModeThreadLocal
#else
#include <cuda_runtime.h>
#define MB_API(name) cuda##name
#define MB_MODE "cuda_graph"
typedef cudaStream_t mb_stream_t;
typedef cudaGraph_t mb_graph_t;
typedef cudaGraphExec_t mb_exec_t;
typedef cudaEvent_t mb_event_t;
typedef cudaError_t mb_error_t;
#define MB_SUCCESS cudaSuccess
#define MB_CAPTURE_MODE cudaStreamCaptureModeThreadLocal
#endif

namespace magpie {
namespace bench {

struct LatencyStats {
    double median_ms = 0, p50_ms = 0, p99_ms = 0, min_ms = 0, max_ms = 0, std_ms = 0, estimate_ms = 0;
    int n_repeat = 0, n_retries = 0;
    std::vector<double> samples_ms;
};

inline void check(mb_error_t err, const char* what) {
    if (err != MB_SUCCESS) throw std::runtime_error(std::string(what) + ": " + MB_API(GetErrorString)(err));
}

// The stream every launch inside `fn` must use: graphs are captured from it.
inline mb_stream_t& current_stream() {
    static mb_stream_t stream = nullptr;
    return stream;
}

namespace detail {

// Linear interpolation between order statistics (numpy's default percentile).
inline double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    double rank = p / 100.0 * (sorted.size() - 1);
    size_t lo = static_cast<size_t>(rank), hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

inline LatencyStats summarize(const std::vector<double>& samples, int n_repeat, double estimate_ms) {
    LatencyStats s;
    s.samples_ms = samples;
    s.n_repeat = n_repeat;
    s.n_retries = static_cast<int>(samples.size());
    s.estimate_ms = estimate_ms;
    if (samples.empty()) return s;
    std::vector<double> sorted(samples);
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double x : samples) mean += x;
    mean /= samples.size();
    double var = 0;
    for (double x : samples) var += (x - mean) * (x - mean);
    s.min_ms = sorted.front();
    s.max_ms = sorted.back();
    s.median_ms = s.p50_ms = percentile(sorted, 50);
    s.p99_ms = percentile(sorted, 99);
    s.std_ms = samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;
    return s;
}

template <typename Fn>
inline mb_exec_t capture(Fn& fn, int calls) {
    mb_stream_t stream = current_stream();
    mb_graph_t graph = nullptr;
    mb_exec_t exec = nullptr;
    check(MB_API(StreamBeginCapture)(stream, MB_CAPTURE_MODE), "begin capture");
    for (int i = 0; i < calls; ++i) fn();
    check(MB_API(StreamEndCapture)(stream, &graph), "end capture");
    check(MB_API(GraphInstantiate)(&exec, graph, nullptr, nullptr, 0), "instantiate graph");
    check(MB_API(GraphDestroy)(graph), "destroy graph");
    return exec;
}

inline double replay_ms(mb_exec_t exec, mb_event_t start, mb_event_t stop) {
    mb_stream_t stream = current_stream();
    check(MB_API(EventRecord)(start, stream), "record start");
    check(MB_API(GraphLaunch)(exec, stream), "launch graph");
    check(MB_API(EventRecord)(stop, stream), "record stop");
    check(MB_API(EventSynchronize)(stop), "synchronize");
    float ms = 0;
    check(MB_API(EventElapsedTime)(&ms, start, stop), "elapsed time");
    return ms;
}

}  // namespace detail

template <typename Fn>
inline LatencyStats do_bench_graph(Fn&& fn, int rep_ms = 20, int n_retries = 5, int estimate_reps = 5) {
    mb_stream_t& stream = current_stream();
    if (stream == nullptr) check(MB_API(StreamCreate)(&stream), "create stream");
    mb_event_t start, stop;
    check(MB_API(EventCreate)(&start), "create event");
    check(MB_API(EventCreate)(&stop), "create event");
    fn();  // warm-up: first-launch costs stay out of the graphs
    check(MB_API(StreamSynchronize)(stream), "warm-up");

    mb_exec_t estimate = detail::capture(fn, estimate_reps);
    double estimate_ms = detail::replay_ms(estimate, start, stop) / estimate_reps;
    check(MB_API(GraphExecDestroy)(estimate), "destroy graph");
    int n_repeat = estimate_ms > 0 ? std::max(1, static_cast<int>(rep_ms / estimate_ms)) : 1000;

    mb_exec_t timed = detail::capture(fn, n_repeat);
    std::vector<double> samples;
    for (int i = 0; i < n_retries; ++i) samples.push_back(detail::replay_ms(timed, start, stop) / n_repeat);
    check(MB_API(GraphExecDestroy)(timed), "destroy graph");
    check(MB_API(EventDestroy)(start), "destroy event");
    check(MB_API(EventDestroy)(stop), "destroy event");
    return detail::summarize(samples, n_repeat, estimate_ms);
}

// AMD Magpie's spellings of the same function.
template <typename Fn>
inline LatencyStats do_bench_hipgraph(Fn&& fn, int rep_ms = 20, int n_retries = 5, int estimate_reps = 5) {
    return do_bench_graph(fn, rep_ms, n_retries, estimate_reps);
}
template <typename Fn>
inline LatencyStats do_bench_cudagraph(Fn&& fn, int rep_ms = 20, int n_retries = 5, int estimate_reps = 5) {
    return do_bench_graph(fn, rep_ms, n_retries, estimate_reps);
}

// One marker line on stdout; magpie (and AMD Magpie) read it from the testcase's output.
inline void print_marker(const LatencyStats& s, const std::string& kernel_name = "") {
    std::printf("MAGPIE_LATENCY_JSON: {\"mode\":\"%s\",\"stats\":{\"median_ms\":%.6f,\"p50_ms\":%.6f,\"p99_ms\":%.6f,"
                "\"min_ms\":%.6f,\"max_ms\":%.6f,\"std_ms\":%.6f,\"n_repeat\":%d,\"n_retries\":%d,"
                "\"estimate_ms\":%.6f,\"samples_ms\":[",
                MB_MODE, s.median_ms, s.p50_ms, s.p99_ms, s.min_ms, s.max_ms, s.std_ms, s.n_repeat, s.n_retries,
                s.estimate_ms);
    for (size_t i = 0; i < s.samples_ms.size(); ++i) std::printf("%s%.6f", i ? "," : "", s.samples_ms[i]);
    std::printf("]}");
    if (!kernel_name.empty()) std::printf(",\"kernel_name\":\"%s\"", kernel_name.c_str());
    std::printf("}\n");
    std::fflush(stdout);
}

}  // namespace bench
}  // namespace magpie
