// Opening input files that must be regular files (weights, token files, configs, eval sets,
// checkpoints). open(2) on a FIFO blocks until a writer appears, so a FIFO given as a weights file
// would hang the process; these helpers open without blocking and refuse anything that is not a
// regular file (FIFO, socket, device, directory) with an Error naming the path and what it is.
#pragma once
#include <string>

namespace replica {

// A read-only file descriptor of the regular file `path` (O_CLOEXEC, blocking mode restored).
// Error naming the path when it is missing, unreadable or not a regular file. The caller closes it.
int OpenRegularFileForReading(const std::string& path);

// "a FIFO", "a directory", "a socket", ... for an st_mode (for messages).
const char* FileTypeName(unsigned mode);

}  // namespace replica
