// The ZeRO-3 ParamStore (model/param_store.h): rank r holds only its owned range
// [plan.begin(r), plan.end(r)) of the flat layout (shard_plan.h) — the fp32 master parameters and
// the step's gradient accumulator — and gathers a unit's weights from their owners when the model
// acquires it.
//   Acquire(u)    gathers unit u's floats into a unit buffer: each owner sends its overlap to every
//                 other rank (Isend/Irecv on the gather stream, kGatherTag); Release(u) returns the
//                 buffer. A unit wholly inside the owned range is read in place from the master
//                 copy (the owner only sends it; at world 1 nothing moves).
//   Prefetch      (Options::prefetch) Acquire(u) completes u's gather and then starts the gather
//                 of the unit predicted to come next, which the next Acquire completes. The
//                 prediction is the unit that followed the same pair (previous unit, u) last time,
//                 else u+1 going up and u-1 going down (turning at the ends): a function of the
//                 Acquire sequence alone, which the model makes the same on every rank, so every
//                 rank posts the same messages. After one micro-batch it knows the model's sequence
//                 (forward 0..L+1, the tied head's 0, backward L..1, the next forward's 0). A
//                 wrong prediction is still correct: the prefetch is completed and discarded, and
//                 the acquired unit gathered at once. No prefetch is started for a unit that is
//                 acquired now. The prefetch after a step's last backward unit is discarded by
//                 the Drain before the optimizer step (one wasted gather per step).
//   Drain()       completes the prefetch in flight (discarding it) and every pending send. Call it
//                 before anything writes the master parameters (Zero3::ReduceGradients does, before
//                 the optimizer step): a pending send reads them, a pending gather would be stale.
//   bf16 gathers  (Options::bf16_matmul_weights, set when the model computes on the bf16 backend)
//                 a tensor that the model reads only through bf16-rounding matmuls travels as bf16
//                 (round to nearest even, core/half.h) and is widened on receipt: every tensor
//                 the layout marks a matmul weight (ParamView::matmul_weight, from
//                 model/layer_tensors.h: q, k, v, o, gate, up, down and the untied LM head).
//                 Those ops round the weight to bf16 before any use (forward and both backward
//                 products; Backend::matmul_precision), and round(widen(bf16(w))) = round(w), so
//                 the bits of training do not change. The embedding (an fp32 row lookup, and the
//                 tied LM head), RMSNorm and QK-norm gains stay fp32; so does every tensor in fp32
//                 precision. The owner's own part, and a unit read in place, stay fp32 (the matmul
//                 rounds them itself). A unit's wire image is its tensors in layout order, each
//                 2 or 4 bytes an element (padding with the tensor before it); an owner's overlap
//                 is one contiguous byte range of it, sent as one message. The receiver puts the
//                 image at the end of the unit buffer and widens it forward in place (element e's
//                 wire bytes lie at or after its float, so no unread byte is overwritten).
//   Grads(u)      a zeroed unit-sized buffer the backward accumulates into (one per open unit);
//   GradsDone(u)  the ordered fold: each owner adds the R ranks' pieces of its part of unit u to its
//                 accumulator in rank order (OrderedFoldRange, blocking Send/Recv on the blocking
//                 stream, tag 0, so it never matches a prefetch's messages), then the buffer is
//                 returned.
// Micro-batch k of rank r is global micro-batch j = k·R + r (the loader's strided split), so when
// every rank runs its local micro-batches k = 0, 1, ... in order, the accumulator ends up with
// the left fold over j = 0..M-1: the bits of the world-1 sequential accumulation, for any R.
// Memory per rank: 2 owned buffers (master, accumulator) + unit weight buffers (at most 2 open —
// the tied LM head holds units L+1 and 0 together — plus 1 for the prefetch in flight; none for
// units read in place) + at most 2 unit gradient buffers (1 untied), each of the largest unit's
// size (U floats), + 1 fold receive buffer (world > 1) of the largest part of a unit this rank
// owns (at most min(U, S), S = the owned range's floats); with bf16 gathers also 2 send staging buffers (1 without
// prefetch) of the owned part of a unit's wire image, 2·min(U, S) bytes each (U = the largest
// unit's, S = the owned range's floats): the owner packs its part there, and with prefetch a send
// may still be pending while the next gather packs. Every call is collective (all ranks make the
// same calls, as Olmo3Model does).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/param_store.h"
#include "ops/backend.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"

namespace replica::parallel {

struct Zero3StoreOptions {
  bool prefetch = true;              // start the predicted next unit's gather on Acquire
  bool bf16_matmul_weights = false;  // gather matmul-only weights as bf16 (bf16 backend only)
};

class Zero3ParamStore final : public ParamStore {
 public:
  using Options = Zero3StoreOptions;
  static constexpr int kGatherTag = 1;  // the gathers' message stream (communicator.h)

  // `comm` and `backend` must outlive the store. Owned buffers start at zero.
  Zero3ParamStore(const ParamLayout& layout, int64_t num_layers, Communicator& comm,
                  const Backend& backend, Options options = {});
  // Drains (unless an exception is unwinding: the job is being aborted).
  ~Zero3ParamStore() override;

  const float* Acquire(int unit) override;
  void Release(int unit) override;
  float* Grads(int unit) override;
  void GradsDone(int unit) override;

  // Zeroes the gradient accumulator (the start of an optimizer step). Not collective.
  void BeginStep();
  // See the comment at the top. Collective (every rank drains at the same point of its calls).
  void Drain();

  const Options& options() const { return options_; }
  const ShardPlan& plan() const { return plan_; }
  size_t owned_begin() const { return plan_.begin(comm_.rank()); }
  size_t owned_end() const { return plan_.end(comm_.rank()); }
  FlatBuffer& master() { return master_; }          // owned fp32 parameters
  FlatBuffer& accumulator() { return accumulator_; }  // owned gradient sum of this step
  size_t unit_floats() const { return unit_floats_; }  // the largest unit
  // Bytes unit `unit` takes on the wire: 4 per float, 2 per float of a bf16-gathered tensor.
  size_t wire_bytes(int unit) const { return wire_bytes_.at(static_cast<size_t>(unit)); }
  // Unit buffers allocated so far (weights, gradients): what memory the units take.
  size_t unit_buffers() const { return weights_.size() + grads_.size() + (recv_.size() ? 1 : 0); }
  // Wall seconds spent in Acquire (waiting for a unit's gather, and starting the next one's) and
  // Drain, and in the gradient folds (GradsDone) so far, waiting for other ranks included: what the model
  // waits for its weights, and what the folds cost.
  double gather_seconds() const { return gather_s_; }
  double fold_seconds() const { return fold_s_; }
  // Acquires so far, and those whose unit had been prefetched.
  int64_t acquires() const { return acquires_; }
  int64_t prefetch_hits() const { return prefetch_hits_; }

  const Backend& backend() const { return backend_; }  // whose memory every buffer is

 private:
  struct Slot {
    int unit = -1;  // -1: free
    FlatBuffer buffer;
  };
  // A tensor's floats [lo, hi) of the flat layout, at byte `wire` of its unit's wire image.
  struct Span {
    size_t lo, hi;
    bool bf16;
    size_t wire;
  };
  // One unit's gather in flight: its receives into `out` (a unit buffer, or the master copy when
  // read in place).
  struct Gather {
    int unit = -1;  // -1: none
    float* out = nullptr;
    bool in_place = false;
    std::vector<Request> recvs;
    // A backend whose memory is not the host's: the wire image is received here, on the host.
    std::vector<unsigned char> host_image;
  };
  float* Take(std::vector<Slot>& slots, int unit);
  Slot* Find(std::vector<Slot>& slots, int unit);
  bool Open(int unit) const;
  size_t lo(int unit) const { return bounds_.at(static_cast<size_t>(unit)); }
  size_t hi(int unit) const { return bounds_.at(static_cast<size_t>(unit) + 1); }
  size_t WireAt(int unit, size_t e) const;  // byte of element e in the unit's wire image
  Gather StartGather(int unit);
  const float* FinishGather(Gather& g);
  void Discard(Gather& g);  // completes g's receives, frees its buffer
  int Predict(int before, int unit) const;

  Communicator& comm_;
  const Backend& backend_;
  Options options_;
  ShardPlan plan_;
  std::vector<size_t> bounds_;
  size_t unit_floats_ = 0;
  size_t fold_floats_ = 0;  // the largest part of a unit this rank owns
  std::vector<std::vector<Span>> spans_;  // per unit, in layout order
  std::vector<size_t> wire_bytes_;        // per unit
  FlatBuffer master_, accumulator_, recv_;
  std::vector<Slot> weights_, grads_;
  std::vector<int> open_;  // units acquired and not yet released
  Gather pending_;         // the prefetch in flight
  // Sends of the gathers, alternating with prefetch: gather k packs into stage_[k % 2] and waits
  // for the sends of gather k-2 (sends_[k % 2]) first; without prefetch only stage_[0] and the
  // sends of gather k-1.
  std::vector<Request> sends_[2];
  std::vector<unsigned char> stage_[2];
  std::vector<float> own_[2];  // host copies of the master range sent (backend not the host's)
  int64_t gathers_ = 0;
  int last_ = -1, before_last_ = -1;       // the last two units acquired
  std::map<std::pair<int, int>, int> next_;  // (unit before, unit) -> the unit that came next
  double gather_s_ = 0, fold_s_ = 0;
  int64_t acquires_ = 0, prefetch_hits_ = 0;
};

}  // namespace replica::parallel
