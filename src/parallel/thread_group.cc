#include "parallel/thread_group.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"

namespace replica::parallel {
namespace {

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  // (src, dst, tag): tag 0 is the blocking calls' stream, >= 1 the non-blocking ones'.
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> queues;
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
    s_.queues[{rank_, dest, 0}].emplace_back(p, p + bytes);
    s_.cv.notify_all();
  }
  void Recv(void* data, size_t bytes, int src) override {
    CheckRank(src);
    std::unique_lock<std::mutex> lock(s_.mu);
    Take(lock, {src, rank_, 0}, data, bytes);
  }
  // The message is copied into the destination's queue at once, so the request is complete.
  Request Isend(const void* data, size_t bytes, int dest, int tag) override {
    CheckRank(dest);
    CheckTag(tag);
    const char* p = static_cast<const char*>(data);
    std::lock_guard<std::mutex> lock(s_.mu);
    s_.queues[{rank_, dest, tag}].emplace_back(p, p + bytes);
    s_.cv.notify_all();
    return {};
  }
  // Completes at Wait; receives of one (source, tag) take its messages in posting order.
  Request Irecv(void* data, size_t bytes, int src, int tag) override {
    CheckRank(src);
    CheckTag(tag);
    const Key key{src, rank_, tag};
    const int64_t id = next_id_++;
    posted_[key].push_back(id);
    recvs_[id] = {key, data, bytes, false};
    return {id};
  }
  void Wait(Request& request) override {
    if (!request.pending()) return;
    auto it = recvs_.find(request.id);
    Require(it != recvs_.end(), "thread group: wait for unknown request {}", request.id);
    const Key key = it->second.key;
    request.id = -1;
    std::unique_lock<std::mutex> lock(s_.mu);
    // Fill the receives posted on this stream before it, in order (their own Wait then finds
    // them done), then this one.
    std::deque<int64_t>& posted = posted_[key];
    while (!it->second.done) {
      PendingRecv& r = recvs_.at(posted.front());
      posted.pop_front();
      Take(lock, key, r.data, r.bytes);
      r.done = true;
    }
    recvs_.erase(it);
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
  using Key = std::tuple<int, int, int>;  // (src, dst, tag)
  struct PendingRecv {
    Key key;
    void* data;
    size_t bytes;
    bool done = false;  // filled (by an earlier-posted receive's Wait or its own)
  };
  // The next message of `key` into data (bytes), waiting for it. `lock` holds s_.mu.
  void Take(std::unique_lock<std::mutex>& lock, const Key& key, void* data, size_t bytes) {
    auto& q = s_.queues[key];
    s_.cv.wait(lock, [&] { return s_.failed || !q.empty(); });
    Require(!s_.failed, "thread group: another rank failed");
    std::vector<char> msg = std::move(q.front());
    q.pop_front();
    Require(msg.size() == bytes, "thread group: rank {} expected {} bytes from rank {} (tag {}), got {}",
            rank_, bytes, std::get<0>(key), std::get<2>(key), msg.size());
    if (bytes > 0) std::memcpy(data, msg.data(), bytes);
  }
  static void CheckTag(int tag) {
    Require(tag >= 1, "thread group: non-blocking messages need a tag >= 1, got {}", tag);
  }
  void CheckRank(int r) const {
    Require(r >= 0 && r < s_.world && r != rank_, "thread group: rank {} cannot talk to rank {}",
            rank_, r);
  }
  Shared& s_;
  int rank_;
  int64_t next_id_ = 0;
  std::map<Key, std::deque<int64_t>> posted_;       // receives not yet filled, per stream
  std::map<int64_t, PendingRecv> recvs_;            // by request id
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
