// What each pipeline rank does in one training step, as an ordered list of actions: the forward
// or backward of micro-batch i through its model chunk c, and between them the point-to-point
// transfers with the neighbouring stages. Pure functions, so the schedules are tested by running
// every rank's list together (train/dist's tests) and the executor only walks the list.
//
// 1F1B (V = 1): rank pp runs min(P - pp - 1, m) warm-up forwards, then one forward and one
// backward at a time, then the remaining backwards (Megatron's non-interleaved schedule): at most
// P - pp micro-batches' activations are held at once.
// Interleaved (V > 1 model chunks per rank; chunk c of rank pp is model stage c·P + pp): Megatron's
// order, forwards in groups of P micro-batches through chunk 0, then chunk 1, ...; backwards from
// the last chunk; (P - pp - 1)·2 + (V - 1)·P warm-up forwards (all of them when m == P). It needs
// m to be a multiple of P.
//
// Transfers: the ones after an action and the ones before the next are one batch that progresses
// together (Megatron's send_forward_recv_backward and its kin), each transfer done once the peer
// posts its match; with blocking transfers one at a time, neighbours would each wait in a send.
#pragma once

#include <string>
#include <vector>

namespace gpt::dist {

struct PipeTransfer {
  bool send = false;
  bool gradient = false;  // false: a forward activation; true: its gradient (backward)
  int microbatch = 0;
  int chunk = 0;          // this rank's chunk the data belongs to (produced or consumed here)
  int peer = 0;           // pipeline rank of the other side
};

struct PipeAction {
  enum class Kind { kForward, kBackward, kTransfer };
  Kind kind = Kind::kForward;
  int microbatch = 0, chunk = 0;        // kForward / kBackward
  std::vector<PipeTransfer> transfers;  // kTransfer: at most one send and one receive
};

// Rank pp's actions for m micro-batches over P pipeline ranks of V chunks each. Throws
// suite::UsageError when the interleaved schedule cannot take m ("number of microbatches (6) is
// not divisible by pipeline-model-parallel-size (4) when using interleaved schedule").
std::vector<PipeAction> pipeline_schedule(int P, int V, int m, int pp);

// The most micro-batch chunks whose forward has run and backward not yet (the backend's slots).
int max_in_flight(const std::vector<PipeAction>& actions);

// "F3.1" (forward of micro-batch 3, chunk 1), "B0.0", "[>F2.0@1 <B0.0@1]" (send / receive);
// one action per word, for tests and messages.
std::string schedule_text(const std::vector<PipeAction>& actions);

}  // namespace gpt::dist
