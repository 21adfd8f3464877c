// The MPI implementation of Communicator over MPI_COMM_WORLD (OpenMPI from Debian, started by
// mpirun). Owns MPI's lifetime: MPI_Init_thread (FUNNELED: only the main thread calls MPI; the
// checkpoint writer's thread and OpenMP workers never do) in the constructor, MPI_Finalize in the
// destructor — unless it runs while an exception unwinds the stack: then the failed rank must not
// wait in MPI_Finalize for ranks that wait for it, so it lets main() print the error and aborts the
// whole job (MPI_Abort, exit code 2) when the process exits. Messages larger than 1 GiB are sent as
// several MPI messages.
#pragma once
#include <memory>

#include "parallel/communicator.h"

namespace replica::parallel {

// Error when this binary was built without MPI.
std::unique_ptr<Communicator> MakeMpiCommunicator();

}  // namespace replica::parallel
