#include "parallel/communicator.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "parallel/mpi_communicator.h"

namespace replica::parallel {

void LocalCommunicator::Send(const void*, size_t, int dest) {
  Fail("communicator: rank 0 of a 1-rank job has no rank {} to send to", dest);
}
void LocalCommunicator::Recv(void*, size_t, int src) {
  Fail("communicator: rank 0 of a 1-rank job has no rank {} to receive from", src);
}
void LocalCommunicator::SendRecv(const void*, size_t, void*, size_t, int partner) {
  Fail("communicator: rank 0 of a 1-rank job has no partner rank {}", partner);
}
Request LocalCommunicator::Isend(const void*, size_t, int dest, int) {
  Fail("communicator: rank 0 of a 1-rank job has no rank {} to send to", dest);
}
Request LocalCommunicator::Irecv(void*, size_t, int src, int) {
  Fail("communicator: rank 0 of a 1-rank job has no rank {} to receive from", src);
}
void LocalCommunicator::Abort(int code) {
  std::fflush(stderr);
  std::_Exit(code);
}

bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Communicator> CommunicatorFromEnvironment() {
  if (!LaunchedByMpirun()) return std::make_unique<LocalCommunicator>();
  return MakeMpiCommunicator();
}

void RestrictFaultToRank(const Communicator& comm) {
  const char* only = std::getenv("REPLICA_FAULT_RANK");
  if (only == nullptr) return;
  char* end = nullptr;
  const long r = std::strtol(only, &end, 10);
  Require(end != only && *end == '\0' && r >= 0,
          "REPLICA_FAULT_RANK: expected a rank number, got '{}'", only);
  if (r != comm.rank()) unsetenv("REPLICA_FAULT");
}

}  // namespace replica::parallel
