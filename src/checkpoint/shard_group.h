// The ranks that write one sharded checkpoint together (docs/design.md §4, format version 2), as
// the checkpoint writer sees them: who am I, how many are we, and the two small collectives the
// commit needs. The checkpoint layer cannot see src/parallel; the data-parallel implementation
// (parallel::CommunicatorCheckpointGroup) runs these over the job's communicator, and
// SingleProcessGroup (here) is the world of one.
//
// Promises: every rank calls the collectives in the same order, from the thread that runs the
// training loop (never from the writer's background thread), so they interleave with the
// gradient collectives in one fixed order.
#pragma once
#include <string>
#include <vector>

namespace replica {

class CheckpointGroup {
 public:
  virtual ~CheckpointGroup() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // Collective: true on every rank iff every rank passed true.
  virtual bool AllTrue(bool mine) = 0;
  // Collective: rank 0 receives every rank's text in rank order (its own first); the other ranks
  // receive an empty vector.
  virtual std::vector<std::string> GatherToRoot(const std::string& mine) = 0;
};

class SingleProcessGroup final : public CheckpointGroup {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  bool AllTrue(bool mine) override { return mine; }
  std::vector<std::string> GatherToRoot(const std::string& mine) override { return {mine}; }
};

}  // namespace replica
