// Batched column-sum finishes (host API; the kernels are in column_sum.cuh / column_sum.cu).
#pragma once

namespace gpt::cuda {

// While a ColumnSumBatch is open on the calling thread, column_sum_finish queues its work (and
// keeps its partials) instead of launching it; flush() (or the batch's end) runs everything
// queued in one launch per 64 finishes. A step then pays one launch where it paid one per bias or
// LayerNorm gradient (each a small launch dominated by its latency); the sums, and so the
// bits, are the same. The destinations must not be read before the flush. Batches do not nest.
// Call flush() before the batch ends to see launch errors (the destructor cannot throw them).
class ColumnSumBatch {
 public:
  ColumnSumBatch();
  ~ColumnSumBatch();  // flushes, unless an exception is unwinding the stack
  ColumnSumBatch(const ColumnSumBatch&) = delete;
  ColumnSumBatch& operator=(const ColumnSumBatch&) = delete;
  void flush();
};

}  // namespace gpt::cuda
