#include "parallel/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/profile.h"
#include "core/error.h"
#include "optim/adamw.h"

namespace replica::parallel {
namespace {

void CheckPlan(const Communicator& comm, const ShardPlan& plan) {
  Require(plan.world() == comm.world(), "collective: shard plan for {} ranks used on {} ranks",
          plan.world(), comm.world());
  RequirePowerOfTwoWorld(comm.world());
}

// Recursive doubling over contiguous segments: segment k is bytes [offsets[k], offsets[k+1]).
void AllGatherSegments(Communicator& comm, char* base, const std::vector<size_t>& offsets) {
  const int r = comm.rank(), world = comm.world();
  for (int d = 1; d < world; d *= 2) {
    const int partner = r ^ d;
    const size_t mine = static_cast<size_t>(r & ~(d - 1));
    const size_t theirs = static_cast<size_t>(partner & ~(d - 1));
    const size_t m = static_cast<size_t>(d);
    comm.SendRecv(base + offsets[mine], offsets[mine + m] - offsets[mine], base + offsets[theirs],
                  offsets[theirs + m] - offsets[theirs], partner);
  }
}

}  // namespace

void TreeReduceScatter(Communicator& comm, float* buf, const ShardPlan& plan,
                       const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  CheckPlan(comm, plan);
  const int r = comm.rank(), world = comm.world();
  if (world == 1) return;
  thread_local std::vector<float> scratch;
  // A backend whose memory is not the host's: what is sent is copied out first, and what is
  // received is copied in before the backend adds it.
  const bool host = backend.is_host();
  thread_local std::vector<float> outgoing;
  Buffer incoming;
  int lo = 0;  // current shard range [lo, lo + 2d)
  for (int d = world / 2; d >= 1; d /= 2) {
    const int partner = r ^ d;
    const bool keep_lower = (r & d) == 0;
    const int keep_lo = keep_lower ? lo : lo + d, send_lo = keep_lower ? lo + d : lo;
    const size_t keep_begin = plan.begin(keep_lo), keep_end = plan.begin(keep_lo + d);
    const size_t send_begin = plan.begin(send_lo), send_end = plan.begin(send_lo + d);
    const size_t keep_n = keep_end - keep_begin, send_n = send_end - send_begin;
    // Chunk k of what I send is chunk k of what my partner keeps, and vice versa.
    const size_t chunks = std::max<size_t>(
        1, (std::max(keep_n, send_n) + kCollectiveChunkFloats - 1) / kCollectiveChunkFloats);
    scratch.resize(std::min(keep_n, kCollectiveChunkFloats));
    for (size_t c = 0; c < chunks; ++c) {
      const size_t off = c * kCollectiveChunkFloats;
      const size_t sn = off < send_n ? std::min(kCollectiveChunkFloats, send_n - off) : 0;
      const size_t kn = off < keep_n ? std::min(kCollectiveChunkFloats, keep_n - off) : 0;
      const float* send = buf + send_begin + std::min(off, send_n);
      if (!host) {
        outgoing.resize(sn);
        backend.CopyToHost(outgoing.data(), send, sn * sizeof(float));
        send = outgoing.data();
      }
      comm.SendRecv(send, sn * sizeof(float), scratch.data(), kn * sizeof(float), partner);
      const float* add = scratch.data();
      if (!host) {
        if (incoming.size() < kn) incoming = backend.Allocate(DType::kF32, scratch.size());
        backend.CopyFromHost(incoming.raw(), scratch.data(), kn * sizeof(float));
        add = static_cast<const float*>(incoming.raw());
      }
      backend.AddInto(buf + keep_begin + off, add, static_cast<int64_t>(kn));
    }
    lo = keep_lo;
  }
}

void AllGatherShards(Communicator& comm, float* buf, const ShardPlan& plan,
                     const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  CheckPlan(comm, plan);
  if (comm.world() == 1) return;
  std::vector<size_t> offsets(static_cast<size_t>(comm.world()) + 1);
  for (int k = 0; k <= comm.world(); ++k) {
    offsets[static_cast<size_t>(k)] =
        (k < comm.world() ? plan.begin(k) : plan.total()) * sizeof(float);
  }
  if (backend.is_host()) {
    AllGatherSegments(comm, reinterpret_cast<char*>(buf), offsets);
    return;
  }
  // Not host memory: gather in a host copy of the buffer, then copy the result back.
  const size_t bytes = plan.total() * sizeof(float);
  std::vector<float> host(plan.total());
  backend.CopyToHost(host.data(), buf, bytes);
  AllGatherSegments(comm, reinterpret_cast<char*>(host.data()), offsets);
  backend.CopyFromHost(buf, host.data(), bytes);
}

void TreeAllReduce(Communicator& comm, std::vector<double>& values) {
  RequirePowerOfTwoWorld(comm.world());
  const int r = comm.rank();
  std::vector<double> other(values.size());
  for (int d = comm.world() / 2; d >= 1; d /= 2) {
    comm.SendRecv(values.data(), values.size() * sizeof(double), other.data(),
                  other.size() * sizeof(double), r ^ d);
    for (size_t i = 0; i < values.size(); ++i) values[i] = other[i] + values[i];
  }
}

double ShardedGradNorm(Communicator& comm, const float* grads, const ShardPlan& plan,
                       const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kOptimizer);
  CheckPlan(comm, plan);
  const int r = comm.rank(), world = comm.world();
  std::vector<double> partials(plan.num_blocks());
  const std::vector<double> mine = GradSquarePartials(grads, plan.begin(r), plan.end(r), backend);
  Require(mine.size() == plan.block_end(r) - plan.block_begin(r),
          "grad norm: shard {} has {} blocks, expected {}", r, mine.size(),
          plan.block_end(r) - plan.block_begin(r));
  std::copy(mine.begin(), mine.end(), partials.begin() + static_cast<int64_t>(plan.block_begin(r)));
  std::vector<size_t> offsets(static_cast<size_t>(world) + 1);
  for (int k = 0; k <= world; ++k) {
    offsets[static_cast<size_t>(k)] =
        (k < world ? plan.block_begin(k) : plan.num_blocks()) * sizeof(double);
  }
  if (world > 1) AllGatherSegments(comm, reinterpret_cast<char*>(partials.data()), offsets);
  double total = 0;
  for (double p : partials) total += p;
  return std::sqrt(total);
}

void Broadcast(Communicator& comm, void* data, size_t bytes, int root) {
  const int world = comm.world();
  const int rel = (comm.rank() - root + world) % world;
  for (int mask = 1; mask < world; mask *= 2) {
    if (rel < mask) {
      if (rel + mask < world) comm.Send(data, bytes, (rel + mask + root) % world);
    } else if (rel < 2 * mask) {
      comm.Recv(data, bytes, (rel - mask + root) % world);
    }
  }
}

}  // namespace replica::parallel
