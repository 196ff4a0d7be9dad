#include "train/dist/communicator.h"

#include <stdexcept>

namespace gpt::dist {

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF64: return 8;
    case DType::kI64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "fp64";
    case DType::kI64: return "int64";
  }
  return "?";
}

void Communicator::send_recv(const std::vector<P2POp>&) {
  throw std::logic_error(kind() + " communicator has no batched point-to-point transfers");
}

void Communicator::host_reduce_f64(double*, size_t, bool) {
  throw std::logic_error(kind() + " communicator has no host reduction");
}

void Communicator::begin_capture() {
  throw std::logic_error(kind() + " communicator has no graph capture");
}

std::vector<std::string> Communicator::end_capture() {
  throw std::logic_error(kind() + " communicator has no graph capture");
}

void Communicator::issue_captured(const std::vector<std::string>&, void*) {
  throw std::logic_error(kind() + " communicator has no graph capture");
}

double host_all_reduce_max(Communicator& comm, double v) {
  comm.host_reduce_f64(&v, 1, true);
  return v;
}

double host_all_reduce_sum(Communicator& comm, double v) {
  comm.host_reduce_f64(&v, 1, false);
  return v;
}

}  // namespace gpt::dist
