// A small persistent thread pool for the CPU backend's hot loops.
//
// parallel_for splits [0, n) into contiguous chunks and runs them on the pool (the caller helps).
// Chunks must write disjoint outputs; then results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <functional>

namespace gpt::cpu {

// Threads used by parallel_for (default: hardware concurrency; gpt-train --cpu-threads sets it).
int num_threads();
void set_num_threads(int n);

// Calls fn(begin, end) over chunks of [0, n); at least min_chunk items per chunk (a hint to keep
// tiny loops on one thread).
void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk = 1);

}  // namespace gpt::cpu
