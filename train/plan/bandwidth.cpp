#include "train/plan/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "common/io/atomic_file.h"
#include "train/backend/backend.h"
#include "train/dist/rendezvous.h"
#include "train/dist/tcp_communicator.h"
#include "train/dist/watchdog.h"
#ifdef GPT_HAVE_NCCL
#include <cuda_runtime.h>

#include "train/dist/nccl_communicator.h"
#endif

namespace plan {
namespace {

using gpt::dist::DType;

// Host or device memory for the collectives.
class Buffer {
 public:
  Buffer(size_t bytes, bool device) : device_(device) {
#ifdef GPT_HAVE_NCCL
    if (device_) {
      if (cudaMalloc(&p_, bytes) != cudaSuccess) throw suite::ToolError("cannot allocate " + std::to_string(bytes) + " bytes on the GPU");
      cudaMemset(p_, 0, bytes);
      return;
    }
#endif
    host_.assign(bytes / 4 + 1, 0.5f);
    p_ = host_.data();
  }
  ~Buffer() {
#ifdef GPT_HAVE_NCCL
    if (device_) cudaFree(p_);
#endif
  }
  void* get() const { return p_; }

 private:
  bool device_;
  void* p_ = nullptr;
  std::vector<float> host_;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string num(double v) {
  std::ostringstream o;
  o << std::setprecision(6) << v;
  return o.str();
}

}  // namespace

size_t parse_size(const std::string& text, const char* what) {
  const char suffix = text.empty() ? '\0' : text.back();
  const double unit = suffix == 'K' || suffix == 'k' ? 1024.0
                      : suffix == 'M'                ? 1024.0 * 1024
                      : suffix == 'G'                ? 1024.0 * 1024 * 1024
                                                     : 1;
  const std::optional<double> v = suite::parse_number<double>(unit == 1 ? text : text.substr(0, text.size() - 1));
  if (!v || !(*v > 0) || *v * unit > double(1ull << 40))
    throw suite::UsageError(std::string(what) + " must be a size such as 4096, 64K, 16M or 1G, got '" + text + "'");
  return size_t(*v * unit);
}

std::string measure_bandwidths(gpt::dist::Communicator& comm, const std::vector<std::string>& host_of,
                               const BandwidthOptions& o, std::ostream& log) {
  const bool nccl = o.device == "cuda";
  const int rank = comm.rank(), n = comm.size();
  std::set<std::string> hosts;
  int peer_intra = -1, peer_inter = -1;
  for (int r = 0; r < n; ++r) {
    hosts.insert(host_of.at(r));
    if (r > 0 && peer_intra < 0 && host_of.at(r) == host_of.at(0)) peer_intra = r;
    if (peer_inter < 0 && host_of.at(r) != host_of.at(0)) peer_inter = r;
  }
  const int nodes = int(hosts.size());
  const std::string scope = nodes > 1 ? "inter-node" : "intra-node";
  std::vector<size_t> sizes = o.sizes;
  std::sort(sizes.begin(), sizes.end());  // the summary holds the largest size's figures
  std::string results;
  size_t last_bytes = 0;
  double last_bus[3] = {0, 0, 0}, last_p2p[2] = {0, 0};
  auto record = [&](const std::string& entry) { results += (results.empty() ? "" : ",\n    ") + entry; };
  for (size_t bytes : sizes) {
    const size_t elems = std::max<size_t>(n, bytes / 4 / n * n), chunk = elems / n;
    last_bytes = elems * 4;
    const double real_bytes = double(elems) * 4;
    Buffer a(elems * 4, nccl), b(elems * 4, nccl);
    const char* names[3] = {"all-reduce", "reduce-scatter", "all-gather"};
    for (int op = 0; op < 3; ++op) {
      auto once = [&] {
        if (op == 0) comm.all_reduce_sum(a.get(), elems, DType::kF32);
        else if (op == 1) comm.reduce_scatter_sum(a.get(), b.get(), chunk, DType::kF32);
        else comm.all_gather(a.get(), b.get(), chunk, DType::kF32);
      };
      for (int w = 0; w < o.warmup; ++w) once();
      comm.synchronize();
      gpt::dist::host_all_reduce_max(comm, 0);  // start together
      const double t0 = now_ms();
      for (int it = 0; it < o.iters; ++it) once();
      comm.synchronize();
      const double ms = gpt::dist::host_all_reduce_max(comm, (now_ms() - t0) / o.iters);
      const double alg = real_bytes / (ms * 1e6);
      const double bus = alg * (op == 0 ? 2.0 * (n - 1) / n : double(n - 1) / n);
      last_bus[op] = bus;
      record("{\"op\":\"" + std::string(names[op]) + "\",\"scope\":\"" + scope + "\",\"ranks\":" + std::to_string(n) +
             ",\"bytes\":" + std::to_string(elems * 4) + ",\"ms\":" + num(ms) + ",\"algorithm-gbs\":" + num(alg) +
             ",\"bus-gbs\":" + num(bus) + "}");
      if (rank == 0) log << "gpt-plan: " << names[op] << " " << num(real_bytes / 1048576) << " MiB over " << n << " ranks: " << num(ms) << " ms, bus " << num(bus) << " GB/s\n";
    }
    // Point to point: a ping-pong between rank 0 and each peer; the others wait.
    for (int kind = 0; kind < 2; ++kind) {
      const int peer = kind == 0 ? peer_intra : peer_inter;
      if (peer < 0) continue;
      double ms = 0;
      if (rank == 0 || rank == peer) {
        const int other = rank == 0 ? peer : 0;
        auto pingpong = [&] {
          if (rank == 0) {
            comm.send(a.get(), elems, DType::kF32, other);
            comm.recv(b.get(), elems, DType::kF32, other);
          } else {
            comm.recv(b.get(), elems, DType::kF32, other);
            comm.send(a.get(), elems, DType::kF32, other);
          }
        };
        for (int w = 0; w < o.warmup; ++w) pingpong();
        comm.synchronize();
        const double t0 = now_ms();
        for (int it = 0; it < o.iters; ++it) pingpong();
        comm.synchronize();
        ms = (now_ms() - t0) / o.iters / 2;
      }
      ms = gpt::dist::host_all_reduce_max(comm, ms);
      const double gbs = real_bytes / (ms * 1e6);
      last_p2p[kind] = gbs;
      const std::string where = kind == 0 ? "intra-node" : "inter-node";
      record("{\"op\":\"send-recv\",\"scope\":\"" + where + "\",\"peers\":[0," + std::to_string(peer) +
             "],\"bytes\":" + std::to_string(elems * 4) + ",\"ms\":" + num(ms) + ",\"gbs\":" + num(gbs) + "}");
      if (rank == 0) log << "gpt-plan: send-recv " << num(real_bytes / 1048576) << " MiB rank 0 <-> " << peer << " (" << where << "): " << num(ms) << " ms, " << num(gbs) << " GB/s\n";
    }
  }
  if (rank == 0) {
    std::string host_list;
    for (const std::string& h : hosts) host_list += (host_list.empty() ? "\"" : ",\"") + h + "\"";
    std::string text = "{\"format\":\"gpt-plan-bandwidth\",\"version\":1,\"communicator\":\"" + comm.kind() +
                       "\",\"ranks\":" + std::to_string(n) + ",\"nodes\":" + std::to_string(nodes) +
                       ",\"hosts\":[" + host_list + "],\n  \"results\":[\n    " + results +
                       "],\n  \"summary\":{\"scope\":\"" + scope + "\",\"bytes\":" + std::to_string(last_bytes) +
                       ",\"all-reduce-bus-gbs\":" + num(last_bus[0]) + ",\"reduce-scatter-bus-gbs\":" + num(last_bus[1]) +
                       ",\"all-gather-bus-gbs\":" + num(last_bus[2]) + ",\"p2p-intra-node-gbs\":" + num(last_p2p[0]) +
                       ",\"p2p-inter-node-gbs\":" + num(last_p2p[1]) + "}}\n";
    return text;
  }
  return {};
}

int run_bandwidth(const BandwidthOptions& o, std::ostream& log) {
  const gpt::dist::LaunchInfo li = gpt::dist::discover_launch(o.launch);
  if (!li.distributed())
    throw suite::UsageError("bandwidth needs several ranks: run it under srun, torchrun or with --nproc-per-node N");
  const bool nccl = o.device == "cuda";
  if (nccl) gpt::dist::default_nccl_environment();  // NVLink multicast stays off
  int device = 0;
  if (nccl) gpt::select_cuda_device(li.local_rank, li.local_world_size, &device);
  gpt::dist::RendezvousOptions ro;
  ro.timeout_s = o.timeout_s;
  std::string size_text;
  for (size_t s : o.sizes) size_text += std::to_string(s) + " ";
  ro.config = {{"device", o.device}, {"sizes", size_text}, {"iters", std::to_string(o.iters)}};
#ifdef GPT_HAVE_NCCL
  if (nccl && li.rank == 0) ro.nccl_id = gpt::dist::NcclCommunicator::make_unique_id();
#else
  if (nccl) throw suite::ToolError("--device cuda: this gpt-plan was built without NCCL");
#endif
  auto rv = gpt::dist::Rendezvous::join(li, ro);
  std::unique_ptr<gpt::dist::Communicator> comm;
#ifdef GPT_HAVE_NCCL
  if (nccl) comm = std::make_unique<gpt::dist::NcclCommunicator>(rv->nccl_id(), li.rank, li.world_size, device, nullptr, o.timeout_s);
#endif
  if (!comm) comm = std::make_unique<gpt::dist::TcpCommunicator>(*rv);
  gpt::dist::WatchdogOptions wo;
  wo.timeout_s = o.timeout_s;
  wo.tool = "gpt-plan";
  wo.store_is_rank0 = !li.agent_store;
  auto watchdog = gpt::dist::Watchdog::start(*rv, comm.get(), wo);

  std::vector<std::string> host_names;
  for (int r = 0; r < comm->size(); ++r) host_names.push_back(rv->host(r));
  const std::string text = measure_bandwidths(*comm, host_names, o, log);
  if (comm->rank() == 0) {
    suite::AtomicFile f(o.output);
    f.write(text.data(), text.size());
    f.commit();
    const size_t nodes = std::set<std::string>(host_names.begin(), host_names.end()).size();
    log << "gpt-plan: wrote " << o.output << " (" << comm->size() << " ranks on " << nodes << " node" << (nodes == 1 ? "" : "s") << ")\n";
  }
  watchdog->finish();
  return 0;
}

}  // namespace plan
