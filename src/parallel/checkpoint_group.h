// The CheckpointGroup (checkpoint/shard_group.h) of a data-parallel job: the two small collectives
// a sharded checkpoint's commit needs, run over the job's Communicator with point-to-point
// messages to and from rank 0. Called only from the thread that runs the training loop.
#pragma once
#include <string>
#include <vector>

#include "checkpoint/shard_group.h"
#include "parallel/communicator.h"

namespace replica::parallel {

class CommunicatorCheckpointGroup final : public CheckpointGroup {
 public:
  // `comm` must outlive this object.
  explicit CommunicatorCheckpointGroup(Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int world() const override { return comm_.world(); }
  bool AllTrue(bool mine) override;
  std::vector<std::string> GatherToRoot(const std::string& mine) override;

 private:
  Communicator& comm_;
};

}  // namespace replica::parallel
