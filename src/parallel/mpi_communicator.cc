#include "parallel/mpi_communicator.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"

#if __has_include(<mpi.h>)
// The C API only: replica links MPI::MPI_C, not the deprecated C++ bindings mpi.h would pull in.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#define REPLICA_HAVE_MPI 1
#else
#define REPLICA_HAVE_MPI 0
#endif

namespace replica::parallel {

bool HaveMpi() {
  return REPLICA_HAVE_MPI != 0;
}

#if REPLICA_HAVE_MPI
namespace {

constexpr size_t kMaxMessage = size_t{1} << 30;  // bytes per MPI message (counts are int)
constexpr int kTag = 0;  // the blocking calls' stream; Isend/Irecv take tags >= 1

void Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  Fail("MPI: {} failed: {}", what, std::string(text, static_cast<size_t>(len)));
}

int Count(size_t bytes) {
  return static_cast<int>(std::min(bytes, kMaxMessage));
}

// Calls post(chunk, n) for consecutive chunks of [data, data + bytes) of at most kMaxMessage
// bytes each: one call (n = 0) for an empty buffer, so both sides of a message post alike.
template <typename Byte, typename Post>
void ForEachChunk(Byte* data, size_t bytes, Post post) {
  do {
    const int n = Count(bytes);
    post(data, n);
    data += n;
    bytes -= static_cast<size_t>(n);
  } while (bytes > 0);
}

int failed_rank = -1, failed_world = 0;
void AbortJobAtExit() {
  std::fprintf(stderr, "replica: rank %d of %d failed (see the error above); aborting all ranks\n",
               failed_rank, failed_world);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as return codes, so they become replica::Error with MPI's text.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
  }
  ~MpiCommunicator() override {
    // Unwinding from an exception: another rank may be waiting for us in a collective, and
    // MPI_Finalize would wait for it in turn. main() has yet to print the error, so the job is
    // aborted at exit, after the message (exit code 2: what main returns for an Error).
    if (std::uncaught_exceptions() > 0) {
      failed_rank = rank_;
      failed_world = world_;
      std::atexit(AbortJobAtExit);
      return;
    }
    MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }

  void Send(const void* data, size_t bytes, int dest) override {
    ForEachChunk(static_cast<const char*>(data), bytes, [&](const char* p, int n) {
      Check(MPI_Send(p, n, MPI_BYTE, dest, kTag, MPI_COMM_WORLD), "MPI_Send");
    });
  }
  void Recv(void* data, size_t bytes, int src) override {
    ForEachChunk(static_cast<char*>(data), bytes, [&](char* p, int n) {
      Check(MPI_Recv(p, n, MPI_BYTE, src, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    });
  }
  // Chunk k of the send matches chunk k of the partner's receive: both sides split by the same
  // kMaxMessage, and one side's send size is the other's receive size.
  void SendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes,
                int partner) override {
    const char* s = static_cast<const char*>(send);
    char* r = static_cast<char*>(recv);
    do {
      const int ns = Count(send_bytes), nr = Count(recv_bytes);
      Check(MPI_Sendrecv(s, ns, MPI_BYTE, partner, kTag, r, nr, MPI_BYTE, partner, kTag,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
      s += ns;
      r += nr;
      send_bytes -= static_cast<size_t>(ns);
      recv_bytes -= static_cast<size_t>(nr);
    } while (send_bytes > 0 || recv_bytes > 0);
  }
  // Chunk k of an Isend matches chunk k of the receiver's Irecv: both split by kMaxMessage, and
  // MPI matches messages of one (source, tag) in posting order.
  Request Isend(const void* data, size_t bytes, int dest, int tag) override {
    CheckTag(tag);
    std::vector<MPI_Request>& chunks = Start();
    ForEachChunk(static_cast<const char*>(data), bytes, [&](const char* p, int n) {
      chunks.emplace_back();
      Check(MPI_Isend(p, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &chunks.back()), "MPI_Isend");
    });
    return {next_id_++};
  }
  Request Irecv(void* data, size_t bytes, int src, int tag) override {
    CheckTag(tag);
    std::vector<MPI_Request>& chunks = Start();
    ForEachChunk(static_cast<char*>(data), bytes, [&](char* p, int n) {
      chunks.emplace_back();
      Check(MPI_Irecv(p, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &chunks.back()), "MPI_Irecv");
    });
    return {next_id_++};
  }
  void Wait(Request& request) override {
    if (!request.pending()) return;
    auto it = pending_.find(request.id);
    Require(it != pending_.end(), "MPI: wait for unknown request {}", request.id);
    request.id = -1;
    std::vector<MPI_Request> chunks = std::move(it->second);
    pending_.erase(it);
    Check(MPI_Waitall(static_cast<int>(chunks.size()), chunks.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
  }
  void Barrier() override { Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  [[noreturn]] void Abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }
  const char* kind() const override { return "mpi"; }

 private:
  static void CheckTag(int tag) {
    Require(tag >= 1,
            "MPI: non-blocking messages need a tag >= 1 (0 is the blocking calls'), got {}", tag);
  }
  std::vector<MPI_Request>& Start() { return pending_[next_id_]; }

  int rank_ = 0, world_ = 1;
  int64_t next_id_ = 0;
  std::unordered_map<int64_t, std::vector<MPI_Request>> pending_;  // request id -> its chunks
};

}  // namespace

std::unique_ptr<Communicator> MakeMpiCommunicator() {
  return std::make_unique<MpiCommunicator>();
}

#else

std::unique_ptr<Communicator> MakeMpiCommunicator() {
  Fail(
      "this replica was built without MPI (CMake did not find MPI::MPI_C; install "
      "libopenmpi-dev and rebuild), but it was started by mpirun");
}

#endif

}  // namespace replica::parallel
