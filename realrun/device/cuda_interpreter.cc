#include "realrun/device/cuda_interpreter.h"

#include <algorithm>
#include <climits>
#include <string>

#include "core/error.h"

namespace collkit::realrun {

CudaInterpreter::CudaInterpreter(std::vector<int> rank_device)
    : rank_device_(std::move(rank_device)) {
  poll_sleep_ns_ = static_cast<unsigned>(env_tuning("COLLKIT_INTERPRETER_POLL_NS", 0, 1000000, 0,
                                                    "nanoseconds between two polls of a flag"));
  full_fences_ = env_tuning("COLLKIT_INTERPRETER_FENCES", 0, 1, 0,
                            "1: a __threadfence besides each release and acquire") != 0;
  stage_ops_ = env_tuning("COLLKIT_INTERPRETER_STAGE", 0, 1, 1,
                          "0: read the program in place, not through shared memory") != 0;
  peer_ = enable_peer_access(rank_device_);
  for (int d : rank_device_)
    if (std::find(devices_.begin(), devices_.end(), d) == devices_.end()) devices_.push_back(d);
  system_scope_ = devices_.size() > 1;
  per_device_.resize(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    PerDevice& pd = per_device_[i];
    pd.device = devices_[i];
    pd.stream = std::make_unique<CudaStream>(pd.device);
    for (int r = 0; r < static_cast<int>(rank_device_.size()); ++r)
      if (rank_device_[r] == pd.device) pd.ranks.push_back(r);
  }
}

bool CudaInterpreter::can_read(void* self, int dst, int src) {
  const auto* e = static_cast<const CudaInterpreter*>(self);
  return e->peer_[e->rank_device_[dst]][e->rank_device_[src]];
}

int CudaInterpreter::max_lanes(DataType type) const {
  int lanes = INT_MAX;
  for (const PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    const int resident = interpreter_resident_blocks(type);
    lanes = std::min(lanes, resident / static_cast<int>(pd.ranks.size()));
  }
  return lanes == INT_MAX ? 0 : lanes;
}

std::string CudaInterpreter::problem(DataType type) const {
  for (int a : devices_)
    for (int b : devices_)
      if (!peer_[a][b])
        return "the ranks on GPU " + std::to_string(a) + " cannot read GPU " + std::to_string(b) +
               "'s memory (no peer access), and the interpreter's ranks pull from their peers";
  for (const PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    const int resident = interpreter_resident_blocks(type);
    if (resident < static_cast<int>(pd.ranks.size()))
      return "GPU " + std::to_string(pd.device) + " holds " + std::to_string(resident) +
             " interpreter blocks at once, fewer than its " + std::to_string(pd.ranks.size()) +
             " ranks (the blocks of a launch wait on each other, so all must be resident)";
  }
  return "";
}

void CudaInterpreter::load(DeviceProgram program, std::span<const AreaBases> bases,
                           double spin_limit_ms) {
  // An LL slot is written once per launch, so the launches that write and
  // read it must be ordered: one stream, one GPU.
  if (program.ll_messages > 0 && devices_.size() > 1)
    throw UsageError("interpreter: a program with LL messages needs every rank on one GPU; its " +
                     std::to_string(program.ranks) + " ranks are on " +
                     std::to_string(devices_.size()) + " GPUs");
  program_ = std::move(program);
  spin_limit_ms_ = spin_limit_ms;
  const auto index_of = [&](int device) {
    return static_cast<std::size_t>(std::find(devices_.begin(), devices_.end(), device) -
                                    devices_.begin());
  };
  // Each flag lives on the GPU of the rank that signals it.
  std::vector<std::size_t> flag_slot(program_.flags());
  std::vector<std::size_t> flags_on(per_device_.size(), 0);
  for (int f = 0; f < program_.flags(); ++f)
    flag_slot[f] = flags_on[index_of(rank_device_[program_.flag_rank[f]])]++;
  for (std::size_t i = 0; i < per_device_.size(); ++i) {
    PerDevice& pd = per_device_[i];
    DeviceGuard g(pd.device);
    const std::size_t flag_bytes = std::max<std::size_t>(flags_on[i], 1) * sizeof(interp::Flag);
    pd.flags = DeviceBuffer(flag_bytes, pd.device);
    pd.state = DeviceBuffer(sizeof(InterpreterState), pd.device);
    CUDA_CHECK(cudaMemsetAsync(pd.flags.data(), 0, flag_bytes, pd.stream->get()));
    CUDA_CHECK(cudaMemsetAsync(pd.state.data(), 0, sizeof(InterpreterState), pd.stream->get()));
  }
  // Each rank's LL area lives on its GPU (its senders write it), zeroed: no
  // line carries a flag before the first iteration writes it.
  std::vector<unsigned char*> ll(program_.ranks, nullptr);
  for (PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    std::int64_t total = 0;
    for (int r : pd.ranks) total += program_.ll_bytes.empty() ? 0 : program_.ll_bytes[r];
    pd.ll = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(total, 16)), pd.device);
    CUDA_CHECK(cudaMemsetAsync(pd.ll.data(), 0, pd.ll.size(), pd.stream->get()));
    std::int64_t at = 0;
    for (int r : pd.ranks) {
      ll[r] = reinterpret_cast<unsigned char*>(pd.ll.data()) + at;
      at += program_.ll_bytes.empty() ? 0 : program_.ll_bytes[r];
    }
  }
  std::vector<interp::Flag*> addresses(program_.flags());
  for (int f = 0; f < program_.flags(); ++f)
    addresses[f] = reinterpret_cast<interp::Flag*>(
                       per_device_[index_of(rank_device_[program_.flag_rank[f]])].flags.data()) +
                   flag_slot[f];
  const std::vector<interp::ExecOp> ops = bind_device_program(program_, bases, addresses, ll);
  for (PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    cudaStream_t s = pd.stream->get();
    const std::size_t op_bytes = std::max<std::size_t>(ops.size(), 1) * sizeof(interp::ExecOp);
    pd.ops = DeviceBuffer(op_bytes, pd.device);
    pd.first_op = DeviceBuffer(program_.first_op.size() * sizeof(std::uint32_t), pd.device);
    pd.ranks_here = DeviceBuffer(pd.ranks.size() * sizeof(int), pd.device);
    if (!ops.empty())
      CUDA_CHECK(cudaMemcpyAsync(pd.ops.data(), ops.data(), ops.size() * sizeof(interp::ExecOp),
                                 cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(pd.first_op.data(), program_.first_op.data(),
                               program_.first_op.size() * sizeof(std::uint32_t),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(pd.ranks_here.data(), pd.ranks.data(), pd.ranks.size() * sizeof(int),
                               cudaMemcpyHostToDevice, s));
    // The host vectors go out of scope: the copies must be done.
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

void CudaInterpreter::enqueue() {
  for (PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    InterpreterLaunch a;
    a.ops = reinterpret_cast<const interp::ExecOp*>(pd.ops.data());
    a.first_op = reinterpret_cast<const std::uint32_t*>(pd.first_op.data());
    a.ranks_here = reinterpret_cast<const int*>(pd.ranks_here.data());
    a.count_here = static_cast<int>(pd.ranks.size());
    a.lanes = program_.lanes;
    a.state = reinterpret_cast<InterpreterState*>(pd.state.data());
    a.avg_ranks = program_.ranks;
    a.spin_limit_ns = static_cast<std::uint64_t>(spin_limit_ms_ * 1e6);
    a.poll_sleep_ns = poll_sleep_ns_;
    a.full_fences = full_fences_;
    a.stage_ops = stage_ops_;
    a.system_scope = system_scope_;
    a.type = program_.type;
    a.op = program_.op;
    launch_interpreter(a, pd.stream->get());
  }
}

void CudaInterpreter::check_errors() {
  interp::Flag first = 0;
  for (PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    InterpreterState st{};
    CUDA_CHECK(
        cudaMemcpyAsync(&st, pd.state.data(), sizeof st, cudaMemcpyDeviceToHost, pd.stream->get()));
    CUDA_CHECK(cudaStreamSynchronize(pd.stream->get()));
    if (st.error != 0 && first == 0) first = st.error;
  }
  if (first == 0) return;
  // The flags of an interrupted iteration mean nothing: start over.
  for (PerDevice& pd : per_device_) {
    DeviceGuard g(pd.device);
    CUDA_CHECK(cudaMemsetAsync(pd.flags.data(), 0, pd.flags.size(), pd.stream->get()));
    CUDA_CHECK(cudaMemsetAsync(pd.state.data(), 0, pd.state.size(), pd.stream->get()));
    CUDA_CHECK(cudaMemsetAsync(pd.ll.data(), 0, pd.ll.size(), pd.stream->get()));
    CUDA_CHECK(cudaStreamSynchronize(pd.stream->get()));
  }
  throw RuntimeFailure(describe_interpreter_error(program_, first, spin_limit_ms_));
}

cudaStream_t CudaInterpreter::stream_of_device(int device) const {
  for (const PerDevice& pd : per_device_)
    if (pd.device == device) return pd.stream->get();
  throw UsageError("interpreter: no rank on GPU " + std::to_string(device));
}

}  // namespace collkit::realrun
