// ColumnSumBatch (column_sum.cuh): the queue of deferred column-sum finishes and its flush kernel.
#include <exception>
#include <stdexcept>
#include <vector>

#include "kernels/column_sum.cuh"

namespace gpt::cuda {
namespace {

struct Pending {
  float* dst[3];
  int K, chunks, C;
  Scratch<float> partial;
};

// One launch's finishes, passed as a kernel parameter (64 × 48 bytes: within the 4 KB limit).
constexpr int kBatchEntries = 64;
struct BatchEntry {
  float* dst[3];
  const float* partial;
  int chunks, C, K, first_block;  // blocks [first_block, first_block + ceil(C / 32) · K)
};
struct BatchTable {
  int n;
  BatchEntry e[kBatchEntries];
};

__global__ void column_sum_final_batch_kernel(const __grid_constant__ BatchTable t) {
  int i = 0;
  while (i + 1 < t.n && t.e[i + 1].first_block <= int(blockIdx.x)) ++i;
  const BatchEntry& e = t.e[i];
  const int local = int(blockIdx.x) - e.first_block, column_blocks = (e.C + 31) / 32;
  const int k = local / column_blocks;
  column_finish_block(k == 0 ? e.dst[0] : k == 1 ? e.dst[1] : e.dst[2], e.partial, e.chunks, e.K,
                      e.C, k, local % column_blocks);
}

thread_local std::vector<Pending>* t_open = nullptr;  // the calling thread's open batch

void run(std::vector<Pending>& queue) {
  for (size_t b = 0; b < queue.size(); b += kBatchEntries) {
    BatchTable t{};
    int blocks = 0;
    for (size_t i = b; i < queue.size() && t.n < kBatchEntries; ++i, ++t.n) {
      const Pending& p = queue[i];
      t.e[t.n] = BatchEntry{{p.dst[0], p.dst[1], p.dst[2]}, p.partial.get(), p.chunks, p.C, p.K,
                            blocks};
      blocks += int(ceil_div(p.C, 32)) * p.K;
    }
    if (blocks == 0) continue;
    column_sum_final_batch_kernel<<<blocks, dim3(32, kFinishRows), 0, stream()>>>(t);
    GPT_CUDA_CHECK_LAUNCH();
  }
  queue.clear();  // frees the partials on the stream, after the launches that read them
}

}  // namespace

ColumnSumBatch::ColumnSumBatch() {
  if (t_open) throw std::logic_error("ColumnSumBatch: a batch is already open on this thread");
  t_open = new std::vector<Pending>();
}

ColumnSumBatch::~ColumnSumBatch() {
  std::vector<Pending>* queue = t_open;
  t_open = nullptr;
  if (std::uncaught_exceptions() == 0) {
    try {
      run(*queue);
    } catch (...) {  // a destructor must not throw; the launch error stays on the stream
    }
  }
  delete queue;
}

void ColumnSumBatch::flush() { run(*t_open); }

bool column_sum_defer(float* const* dst, int K, Scratch<float>& partial, int chunks, int C) {
  if (!t_open) return false;
  if (K < 1 || K > 3) throw std::invalid_argument("column_sum_defer: K must be 1, 2 or 3");
  t_open->push_back(Pending{{dst[0], K > 1 ? dst[1] : nullptr, K > 2 ? dst[2] : nullptr}, K,
                            chunks, C, std::move(partial)});
  return true;
}

}  // namespace gpt::cuda
