// Where a path really leads, for checks that compare output paths with places replica must not
// write into (a run's checkpoints/ folder): a link anywhere in the path, also one that points to a
// directory that does not exist yet, is followed, so the check sees the directory the write lands in.
#pragma once
#include <filesystem>

namespace replica {

// `path` made absolute with every symbolic link resolved (std::filesystem::weakly_canonical for the
// part that exists), the missing rest appended lexically. A link to a missing target is followed
// to that target (its parent then resolved in turn); at most 40 links, as the kernel's limit.
std::filesystem::path ResolvedPath(const std::filesystem::path& path);

}  // namespace replica
