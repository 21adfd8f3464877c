// The cos/sin table of one rotary embedding (Backend::RopeForward / RopeBackward). Entry [t, j]
// holds m·cos(t·inv_freq[j]) and m·sin(...), m the RopeParams scale. How the entries are computed
// is the backend's (Backend::FillRopeTable): RopeTableEntries below computes each in double and
// rounds it to float once; a backend that follows another stack's rounding computes them its way.
// The storage is the backend's too (MakeRopeTable(backend, ...)).
#pragma once
#include <cstdint>

#include "ops/rope_params.h"
#include "tensor/buffer.h"

namespace replica {

class Backend;

struct RopeTable {
  int64_t max_positions = 0, head_dim = 0;
  RopeParams params;
  Buffer cos, sin;  // fp32 [max_positions, head_dim / 2], both already times m
};

// The entries in double, each rounded to float once: cos and sin [max_positions, head_dim / 2].
// Error on a bad head_dim or params (RopeInvFreq) or max_positions < 0.
void RopeTableEntries(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                      float* cos, float* sin);
// The table `backend`'s rope ops read: entries from backend.FillRopeTable, storage from
// backend.Allocate (filled in place when backend.is_host(), else through CopyFromHost).
RopeTable MakeRopeTable(const Backend& backend, int64_t max_positions, int64_t head_dim,
                        const RopeParams& params);
// A host table of RopeTableEntries (the reference the backends' tables are tested against).
RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, const RopeParams& params);
// Plain RoPE with this theta, on the host.
RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta);
// The bytes of a table of max_positions positions (both halves).
uint64_t RopeTableBytesOf(int64_t max_positions, int64_t head_dim);

}  // namespace replica
