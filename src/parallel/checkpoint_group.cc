#include "parallel/checkpoint_group.h"

#include <cstdint>

namespace replica::parallel {

bool CommunicatorCheckpointGroup::AllTrue(bool mine) {
  uint8_t all = mine ? 1 : 0;
  if (comm_.rank() == 0) {
    for (int r = 1; r < comm_.world(); ++r) {
      uint8_t theirs = 0;
      comm_.Recv(&theirs, 1, r);
      all = static_cast<uint8_t>(all & theirs);
    }
    for (int r = 1; r < comm_.world(); ++r) comm_.Send(&all, 1, r);
  } else {
    comm_.Send(&all, 1, 0);
    comm_.Recv(&all, 1, 0);
  }
  return all != 0;
}

std::vector<std::string> CommunicatorCheckpointGroup::GatherToRoot(const std::string& mine) {
  if (comm_.rank() != 0) {
    const uint64_t n = mine.size();
    comm_.Send(&n, sizeof(n), 0);
    comm_.Send(mine.data(), mine.size(), 0);
    return {};
  }
  std::vector<std::string> all{mine};
  for (int r = 1; r < comm_.world(); ++r) {
    uint64_t n = 0;
    comm_.Recv(&n, sizeof(n), r);
    std::string text(n, '\0');
    comm_.Recv(text.data(), n, r);
    all.push_back(std::move(text));
  }
  return all;
}

}  // namespace replica::parallel
