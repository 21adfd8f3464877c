// The processes of a data-parallel job and the point-to-point messages between them (docs/design.md §1,
// src/dist). Every collective replica uses (collectives.h) is built from Send/Recv/SendRecv on this
// interface, so the reduction tree — which decides the bits of every sum — is written once, in
// replica's code, and is the same whether the ranks are MPI processes, threads in a test, or one
// process alone.
//
// Promises:
//  - FromEnvironment() gives an MPI communicator over MPI_COMM_WORLD when the process was started
//    by mpirun (OpenMPI / PMI environment variables present), and otherwise a world-1 communicator
//    that needs no MPI at all (no MPI_Init): `replica train` alone behaves as a 1-rank job.
//  - Messages between one pair of ranks arrive in the order they were sent. Send may block until
//    the matching Recv is posted (MPI does for large messages), so exchanges between two ranks use
//    SendRecv, which is deadlock-free for any size.
//  - Sizes are bytes (size_t); large messages are split internally (MPI counts are int).
//  - Non-blocking point-to-point (Isend/Irecv, completed by Wait): the transfer may happen any
//    time between the call and the return of Wait, so the buffer must stay valid, and a send's
//    unchanged, until then. Every request must be waited for. A message is matched to a receive
//    by (source, tag), in posting order; `tag` (>= 1) names a stream of messages between two ranks
//    that never matches another stream's, nor the blocking calls above (their own stream, tag 0),
//    so a ZeRO-3 gather prefetched with Isend/Irecv can be in flight while the gradient fold runs
//    on blocking Send/Recv between the same two ranks.
//  - A rank that fails must end the whole job, or the others would wait forever in a collective:
//    the MPI communicator, destroyed while an Error unwinds the stack, aborts the job (exit code 2)
//    at process exit, after main() printed the message. Abort(code) does it at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace replica::parallel {

// A pending Isend or Irecv. Wait completes it; a request that is not pending (default-made, or
// already waited for) waits for nothing.
struct Request {
  int64_t id = -1;
  bool pending() const { return id >= 0; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual void Send(const void* data, size_t bytes, int dest) = 0;
  virtual void Recv(void* data, size_t bytes, int src) = 0;
  // Sends `send` to `partner` and receives `recv_bytes` from it, concurrently.
  virtual void SendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes,
                        int partner) = 0;
  // Start sending / receiving `bytes` to `dest` / from `src` on stream `tag` (>= 1); return at once.
  virtual Request Isend(const void* data, size_t bytes, int dest, int tag) = 0;
  virtual Request Irecv(void* data, size_t bytes, int src, int tag) = 0;
  // Blocks until `request` is complete (its buffer may then be reused); leaves it not pending.
  virtual void Wait(Request& request) = 0;
  void WaitAll(std::vector<Request>& requests) {
    for (Request& r : requests) Wait(r);
    requests.clear();
  }
  virtual void Barrier() = 0;
  [[noreturn]] virtual void Abort(int code) = 0;
  // "mpi", "local" (world 1, no MPI) or "threads" (tests).
  virtual const char* kind() const = 0;
};

// World 1: Send/Recv to oneself are refused (there is no partner), Barrier is a no-op, Abort exits.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  void Send(const void*, size_t, int dest) override;
  void Recv(void*, size_t, int src) override;
  void SendRecv(const void*, size_t, void*, size_t, int partner) override;
  Request Isend(const void*, size_t, int dest, int) override;
  Request Irecv(void*, size_t, int src, int) override;
  void Wait(Request& request) override { request.id = -1; }
  void Barrier() override {}
  [[noreturn]] void Abort(int code) override;
  const char* kind() const override { return "local"; }
};

// True when environment variables set by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK) are
// present.
bool LaunchedByMpirun();
// True when this binary was built with MPI (CMake found MPI::MPI_C).
bool HaveMpi();

// See the promises above. Error when started by mpirun but built without MPI.
std::unique_ptr<Communicator> CommunicatorFromEnvironment();

// REPLICA_FAULT_RANK=r (tests): only rank r keeps the REPLICA_FAULT fault-injection setting; it
// is removed from the environment of the others. Call before the trainer configures faults.
void RestrictFaultToRank(const Communicator& comm);

}  // namespace replica::parallel
