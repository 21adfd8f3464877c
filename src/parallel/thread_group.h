// An in-process data-parallel "job" for tests: R threads, each with its own Communicator, whose
// messages go through in-memory queues. The collectives and ZeRO-1 code run unchanged on it, so
// unit tests prove rank-count independence (R = 1, 2, 4, 8) without mpirun.
//
// Promises: per-pair, per-tag FIFO delivery; Send and Isend never block (Isend copies the message
// at once, so its request is complete); an Irecv is filled at its Wait; a receive of the wrong size
// is an Error.
// When any rank throws, every rank blocked in Recv/Barrier is woken with an Error, all threads are
// joined, and RunThreadGroup rethrows the first exception.
#pragma once
#include <functional>

#include "parallel/communicator.h"

namespace replica::parallel {

void RunThreadGroup(int world, const std::function<void(Communicator&)>& body);

}  // namespace replica::parallel
