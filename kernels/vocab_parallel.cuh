// Tensor parallelism's vocabulary split (Megatron's VocabParallelEmbedding and
// vocab_parallel_cross_entropy): a rank holds the word-embedding rows [v0, v0 + Vl) of the padded
// vocabulary, so its output layer computes only those logits. The cross-entropy never gathers
// them: each rank reduces its rows to three numbers per token (maximum, sum of exponentials
// relative to it, target logit), the ranks exchange those (an all-gather of [rows, 3] floats), and
// every rank combines them in rank order, so all ranks hold the same loss bits. Columns at or past
// the real vocabulary V (padding) take no probability, as in fused_classifier.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// out[b,t,:] = (v0 <= inp[b,t] < v0 + Vl ? wte[inp[b,t] - v0, :] : 0) + (wpe ? wpe[t, :] : 0).
// Summed over the ranks (one of them passing wpe) it is encoder_forward's value exactly.
void vocab_embedding_forward(float* out, const int* inp, const float* wte, const float* wpe,
                             int B, int T, int C, int v0, int Vl);
// dwte[inp[b,t] - v0, :] += dout[b,t,:] for the tokens of this rank's rows (in (b,t) order per
// token, deterministic, as encoder_backward); dwpe[t, :] += sum_b dout[b,t,:] (the position
// table is replicated; dwpe may be nullptr: a rank whose share is summed over the group later).
void vocab_embedding_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B,
                              int T, int C, int v0, int Vl);

// stats[r] = {max, sum of exp(x - max), target logit or 0} over the valid local columns of row r
// of logits [rows, Vl] (columns i with v0 + i < V); max = -inf and sum 0 when there are none.
void vocab_ce_stats(float* stats, const float* logits, const int* targets, int rows, int Vl,
                    int v0, int V);
void vocab_ce_stats(float* stats, const bf16* logits, const int* targets, int rows, int Vl, int v0,
                    int V);
// From gathered = every rank's stats ([tp][rows][3], rank order): losses[r] = logsumexp - target
// logit; with dlogits (may equal logits) WRITES dloss·(softmax - [target]) for the valid local
// columns and 0 for the padded ones.
void vocab_ce_finish(float* dlogits, float* losses, const float* logits, const int* targets,
                     const float* gathered, int tp, float dloss, int rows, int Vl, int v0, int V);
void vocab_ce_finish(bf16* dlogits, float* losses, const bf16* logits, const int* targets,
                     const float* gathered, int tp, float dloss, int rows, int Vl, int v0, int V);

}  // namespace gpt::cuda
