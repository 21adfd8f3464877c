#include "parallel/owner_collectives.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/profile.h"
#include "optim/adamw.h"
#include "parallel/collectives.h"

namespace replica::parallel {

namespace {

void CheckWorld(const Communicator& comm, const ShardPlan& plan) {
  Require(plan.world() == comm.world(), "collective: shard plan for {} ranks used on {} ranks",
          plan.world(), comm.world());
}

// The part of [lo, hi) rank o owns: [a, b) (empty when a >= b).
struct Overlap {
  size_t a, b;
  bool empty() const { return a >= b; }
};
Overlap OverlapOf(const ShardPlan& plan, int o, size_t lo, size_t hi) {
  return {std::max(lo, plan.begin(o)), std::min(hi, plan.end(o))};
}

// Send / receive n floats of `backend`'s memory: in place when it is the host's, else through
// `staging` and CopyToHost / CopyFromHost.
void SendFloats(Communicator& comm, const Backend& backend, const float* src, size_t n, int to,
                std::vector<float>& staging) {
  if (!backend.is_host()) {
    staging.resize(n);
    backend.CopyToHost(staging.data(), src, n * sizeof(float));
    src = staging.data();
  }
  comm.Send(src, n * sizeof(float), to);
}
void RecvFloats(Communicator& comm, const Backend& backend, float* dst, size_t n, int from,
                std::vector<float>& staging) {
  if (backend.is_host()) {
    comm.Recv(dst, n * sizeof(float), from);
    return;
  }
  staging.resize(n);
  comm.Recv(staging.data(), n * sizeof(float), from);
  backend.CopyFromHost(dst, staging.data(), n * sizeof(float));
}

}  // namespace

void OrderedFoldRange(Communicator& comm, const ShardPlan& plan, size_t lo, size_t hi,
                      const float* piece, float* acc, float* recv, const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kReduce);
  CheckWorld(comm, plan);
  Require(lo <= hi && hi <= plan.total(), "ordered fold: range [{}, {}) outside [0, {})", lo, hi,
          plan.total());
  const int me = comm.rank();
  thread_local std::vector<float> staging;  // used when the backend's memory is not the host's
  for (int o = 0; o < comm.world(); ++o) {
    const Overlap v = OverlapOf(plan, o, lo, hi);
    if (v.empty()) continue;
    const size_t n = v.b - v.a;
    const float* mine = piece + (v.a - lo);
    if (o != me) {
      SendFloats(comm, backend, mine, n, o, staging);
      continue;
    }
    float* dst = acc + (v.a - plan.begin(me));
    for (int r = 0; r < comm.world(); ++r) {
      const float* src = mine;
      if (r != me) {
        RecvFloats(comm, backend, recv, n, r, staging);
        src = recv;
      }
      backend.AddInto(dst, src, static_cast<int64_t>(n));
    }
  }
}

double OwnedGradNorm(Communicator& comm, const ShardPlan& plan, const float* owned,
                     const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kOptimizer);
  CheckWorld(comm, plan);
  const int me = comm.rank();
  // The shard starts on a block boundary, so its blocks are the whole buffer's blocks.
  const std::vector<double> mine = GradSquarePartials(owned, 0, plan.size(me), backend);
  Require(mine.size() == plan.block_end(me) - plan.block_begin(me),
          "grad norm: shard {} has {} blocks, expected {}", me, mine.size(),
          plan.block_end(me) - plan.block_begin(me));
  double total = 0;
  for (int o = 0; o < comm.world(); ++o) {
    std::vector<double> blocks = o == me ? mine
                                         : std::vector<double>(plan.block_end(o) - plan.block_begin(o));
    if (!blocks.empty()) Broadcast(comm, blocks.data(), blocks.size() * sizeof(double), o);
    for (double p : blocks) total += p;
  }
  return std::sqrt(total);
}

std::vector<double> AllGatherEqual(Communicator& comm, const std::vector<double>& mine) {
  const size_t n = mine.size();
  std::vector<double> all(n * static_cast<size_t>(comm.world()));
  for (int o = 0; o < comm.world(); ++o) {
    double* dst = all.data() + n * static_cast<size_t>(o);
    if (o == comm.rank()) std::copy(mine.begin(), mine.end(), dst);
    if (n > 0) Broadcast(comm, dst, n * sizeof(double), o);
  }
  return all;
}

void GatherOwned(Communicator& comm, const ShardPlan& plan, const float* owned, float* whole,
                 const Backend& backend, int root) {
  CheckWorld(comm, plan);
  const int me = comm.rank();
  std::vector<float> staging;  // used when the backend's memory is not the host's
  if (me != root) {
    if (plan.size(me) > 0) SendFloats(comm, backend, owned, plan.size(me), root, staging);
    return;
  }
  if (plan.size(me) > 0)
    backend.Copy(whole + plan.begin(me), owned, static_cast<int64_t>(plan.size(me)));
  for (int o = 0; o < comm.world(); ++o) {
    if (o != root && plan.size(o) > 0)
      RecvFloats(comm, backend, whole + plan.begin(o), plan.size(o), o, staging);
  }
}

}  // namespace replica::parallel
