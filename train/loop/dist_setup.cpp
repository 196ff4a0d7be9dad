#include "train/loop/dist_setup.h"

#include <unistd.h>

#include <iterator>
#include <ostream>
#include <sstream>

#include "common/cli/error.h"
#include "train/backend/backend.h"
#include "train/dist/process_groups.h"
#include "train/dist/rendezvous.h"
#include "train/dist/tcp_communicator.h"
#include "train/dist/watchdog.h"
#include "train/loop/pipeline_parallel.h"
#ifdef GPT_HAVE_NCCL
#include "train/dist/nccl_communicator.h"
#endif

namespace gpt {
namespace {

class Job final : public DistJob {
 public:
  const DistEnv* env() const override { return env_.distributed() ? &env_ : nullptr; }
  std::unique_ptr<dist::Rendezvous> rv;
  std::unique_ptr<dist::Communicator> comm;
  dist::ProcessGroups groups;  // T·P > 1 only
  ModelParallelEnv mp;
  std::unique_ptr<dist::Watchdog> watchdog;  // destroyed first: its goodbye, then the rest
  DistEnv env_;
};

std::string text(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> shared_options(const TrainArgs& a) {
  const auto joined = [](const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
  };
  // The model's shape, then the vocabulary as given (not yet read from the tokenizer) and the rest.
  std::vector<std::pair<std::string, std::string>> options = a.model.shape_fields();
  const std::pair<std::string, std::string> rest[] = {
      {"vocab-size", std::to_string(a.vocab_size)},
      {"micro-batch-size", std::to_string(a.micro_batch_size)},
      {"global-batch-size", std::to_string(a.global_batch_size)},
      {"train-iters", std::to_string(a.train_iters)},
      {"train-samples", std::to_string(a.train_samples)},
      {"lr", text(a.lr)},
      {"min-lr", text(a.min_lr)},
      {"clip-grad", text(a.clip_grad)},
      {"seed", std::to_string(a.seed)},
      {"device", a.device},
      {"bf16", a.bf16 ? "1" : "0"},
      {"fp16", a.fp16 ? "1" : "0"},
      {"mock-data", a.mock_data ? "1" : "0"},
      {"data-path", joined(a.data.data_path)},
      {"train-data-path", joined(a.data.split_data_path[0])},
      {"valid-data-path", joined(a.data.split_data_path[1])},
      {"test-data-path", joined(a.data.split_data_path[2])},
      {"data-args-path", a.data.data_args_path},
      {"per-split-data-args-path", a.data.per_split_data_args_path},
      {"split", a.split},
      {"split-rounding", a.data.split_rounding},
      {"mid-level-dataset-surplus", text(a.data.mid_level_surplus)},
      {"use-distributed-optimizer", a.use_distributed_optimizer ? "1" : "0"},
      {"grad-reduce-in-bf16", a.grad_reduce_in_bf16 ? "1" : "0"},
      {"ddp-bucket-size", std::to_string(a.ddp_bucket_size)},
      {"tensor-model-parallel-size", std::to_string(a.layout.tensor)},
      {"pipeline-model-parallel-size", std::to_string(a.layout.pipeline)},
      {"pipeline-partition", a.layout.partition_text()},
      {"num-layers-per-virtual-pipeline-stage",
       std::to_string(a.parallel.layers_per_virtual_stage)},
      {"sequence-parallel", a.layout.sequence_parallel ? "1" : "0"},
      {"load", a.load},
      {"save", a.save}};
  options.insert(options.end(), std::begin(rest), std::end(rest));
  return options;
}

std::unique_ptr<DistJob> join_data_parallel(TrainArgs& a, std::ostream& log) {
  auto job = std::make_unique<Job>();
  const dist::LaunchInfo li = dist::discover_launch(a.launch);
  if (!li.note.empty()) log << " > " << li.note << "\n";
  apply_world_size(a, li.world_size);
  if (!li.distributed()) return job;
  if (li.rank == 0)
    for (const std::string& line : a.layout.describe()) log << line << "\n";
  DistEnv& env = job->env_;
  env.rank = li.rank;
  env.world_size = li.world_size;
  env.local_rank = li.local_rank;
  // The GPU first (a clear error before anyone waits for this rank).
  int device = 0;
  env.device_id = a.device == "cuda"
                      ? select_cuda_device(li.local_rank, li.local_world_size, &device)
                      : std::string("cpu");
  dist::RendezvousOptions ro;
  ro.timeout_s = a.distributed_timeout_minutes * 60.0;
  ro.config = shared_options(a);
  const bool nccl = a.device == "cuda";
#ifdef GPT_HAVE_NCCL
  if (nccl && li.rank == 0) ro.nccl_id = dist::NcclCommunicator::make_unique_id();
#else
  if (nccl)
    throw suite::ToolError("--device cuda with " + std::to_string(li.world_size) +
                           " ranks: this gpt-train was built without NCCL");
#endif
  job->rv = dist::Rendezvous::join(li, ro);
  env.host = job->rv->host(li.rank);
  if (nccl) {
#ifdef GPT_HAVE_NCCL
    // Queued on the default stream until the trainer hands it the backend's (set_stream).
    auto c = std::make_unique<dist::NcclCommunicator>(job->rv->nccl_id(), li.rank, li.world_size,
                                                      device, nullptr, ro.timeout_s);
    dist::NcclCommunicator* raw = c.get();
    env.set_stream = [raw](void* stream) { raw->set_stream(static_cast<cudaStream_t>(stream)); };
    job->comm = std::move(c);
#endif
  } else {
    job->comm = std::make_unique<dist::TcpCommunicator>(*job->rv);
  }
  dist::Communicator* comm = job->comm.get();
  env.comm = comm;
  env.host_sum = [comm](double* v, size_t n) { comm->host_reduce_f64(v, n, false); };
  if (a.layout.tensor * a.layout.pipeline > 1) {
    // Every rank makes its groups in the same order; the trainer's data parallelism then runs
    // over the data-parallel group.
    dist::GroupFactory make;
#ifdef GPT_HAVE_NCCL
    if (nccl) make = dist::nccl_group_factory(job->rv->store(), device, ro.timeout_s);
#endif
    if (!nccl) make = dist::tcp_group_factory(job->rv->store(), job->rv->hosts(), ro.timeout_s);
    job->groups = dist::make_process_groups(a.layout, li.rank, make);
    ModelParallelEnv& mp = job->mp;
    mp.layout = a.layout;
    mp.coord = a.layout.coord(li.rank);
    mp.tensor = job->groups.tensor.get();
    mp.data = job->groups.data.get();
    mp.pipeline = job->groups.pipeline.get();
    mp.embedding = job->groups.embedding.get();
    env.model_parallel = &mp;
#ifdef GPT_HAVE_NCCL
    if (nccl) {
      std::vector<dist::NcclCommunicator*> all{static_cast<dist::NcclCommunicator*>(comm)};
      for (dist::Communicator* g : {mp.tensor, mp.data, mp.pipeline, mp.embedding})
        all.push_back(static_cast<dist::NcclCommunicator*>(g));
      env.set_stream = [all](void* stream) {
        for (auto* c : all) c->set_stream(static_cast<cudaStream_t>(stream));
      };
      mp.set_reduction_stream = [world = all[0], data = all[2]](void* stream) {
        world->set_stream(static_cast<cudaStream_t>(stream));
        data->set_stream(static_cast<cudaStream_t>(stream));
      };
    }
#endif
  }
  dist::WatchdogOptions wo;
  wo.timeout_s = ro.timeout_s;
  wo.store_is_rank0 = !li.agent_store;
  job->watchdog = dist::Watchdog::start(*job->rv, comm, wo);
  if (job->groups.tensor) {
    // A rank stopped inside a group's collective is named too (NCCL waits for a peer forever).
    const dist::ParallelLayout& l = a.layout;
    const int r = li.rank;
    job->watchdog->watch_group(job->groups.tensor.get(), 0, "tensor-parallel group",
                               l.tensor_group(r));
    job->watchdog->watch_group(job->groups.data.get(), 1, "data-parallel group", l.data_group(r));
    job->watchdog->watch_group(job->groups.pipeline.get(), 2, "pipeline group",
                               l.pipeline_group(r));
    job->watchdog->watch_group(job->groups.embedding.get(), 3, "embedding group",
                               l.embedding_group(r));
  }
  return job;
}

}  // namespace gpt
