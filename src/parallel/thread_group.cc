#include "parallel/thread_group.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace replica::parallel {
namespace {

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queues;  // (src, dst)
  bool failed = false;
  std::exception_ptr first_error;  // the root cause: later ones are "another rank failed"
  int world = 1, barrier_count = 0;
  long barrier_generation = 0;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return s_.world; }

  void Send(const void* data, size_t bytes, int dest) override {
    CheckRank(dest);
    const char* p = static_cast<const char*>(data);
    std::lock_guard<std::mutex> lock(s_.mu);
    s_.queues[{rank_, dest}].emplace_back(p, p + bytes);
    s_.cv.notify_all();
  }
  void Recv(void* data, size_t bytes, int src) override {
    CheckRank(src);
    std::unique_lock<std::mutex> lock(s_.mu);
    auto& q = s_.queues[{src, rank_}];
    s_.cv.wait(lock, [&] { return s_.failed || !q.empty(); });
    Require(!s_.failed, "thread group: another rank failed");
    std::vector<char> msg = std::move(q.front());
    q.pop_front();
    Require(msg.size() == bytes, "thread group: rank {} expected {} bytes from rank {}, got {}",
            rank_, bytes, src, msg.size());
    if (bytes > 0) std::memcpy(data, msg.data(), bytes);
  }
  void SendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes,
                int partner) override {
    Send(send, send_bytes, partner);
    Recv(recv, recv_bytes, partner);
  }
  void Barrier() override {
    std::unique_lock<std::mutex> lock(s_.mu);
    const long gen = s_.barrier_generation;
    if (++s_.barrier_count == s_.world) {
      s_.barrier_count = 0;
      ++s_.barrier_generation;
      s_.cv.notify_all();
      return;
    }
    s_.cv.wait(lock, [&] { return s_.failed || s_.barrier_generation != gen; });
    Require(!s_.failed, "thread group: another rank failed");
  }
  [[noreturn]] void Abort(int code) override {
    Fail("thread group: rank {} aborted ({})", rank_, code);
  }
  const char* kind() const override { return "threads"; }

 private:
  void CheckRank(int r) const {
    Require(r >= 0 && r < s_.world && r != rank_, "thread group: rank {} cannot talk to rank {}",
            rank_, r);
  }
  Shared& s_;
  int rank_;
};

}  // namespace

void RunThreadGroup(int world, const std::function<void(Communicator&)>& body) {
  Require(world >= 1, "thread group: world must be >= 1, got {}", world);
  Shared shared;
  shared.world = world;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(shared, r);
      try {
        body(comm);
      } catch (...) {
        std::lock_guard<std::mutex> lock(shared.mu);
        if (!shared.failed) shared.first_error = std::current_exception();
        shared.failed = true;
        shared.cv.notify_all();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (shared.first_error) std::rethrow_exception(shared.first_error);
}

}  // namespace replica::parallel
