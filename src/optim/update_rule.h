// The per-element rule of an optimizer over a ParamLayout's flat buffers (docs/design.md §2.1),
// and the factory that builds it from the run config's `optim` section: `optim.type` names the
// rule, every rule is one row of one table (update_rule.cc), so a second optimizer is its rule
// class and a row (or a RegisterUpdateRule call), with no change to the optimizers that run it. The rule is written once
// over a contiguous range of float offsets — one call updates [begin, end) of the layout from
// pointers at element `begin` — so the single-process optimizer (adamw.h AdamW: [0, N)) and the
// sharded one (parallel/sharded_optimizer.h: a rank's shard) run the same code and get the same
// bits, whatever the range's owner holds outside it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "optim/adamw_config.h"
#include "tensor/flat_buffer.h"

namespace replica {

// Elements [begin, end) of the layout. Every pointer points at element `begin` (params[0], grads[0],
// m[0] and v[0] are element `begin`): a caller holding whole buffers adds `begin` to them.
struct ShardSpan {
  size_t begin = 0, end = 0;
  float* params = nullptr;
  const float* grads = nullptr;
  float* m = nullptr;  // the rule's two state slots (Adam m and v)
  float* v = nullptr;
};

// What changes from step to step: the learning rate, the global clipping coefficient applied to
// the gradient, and t (already incremented: 1 on the first update).
struct StepArgs {
  double lr = 0;
  double grad_coef = 1;
  int64_t step = 0;
};

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // Updates the span's parameters and state in place; each element depends only on its own
  // values, so any split of the layout into spans gives the same bits. Runs on `backend`.
  virtual void Apply(const ShardSpan& span, const StepArgs& step, const Backend& backend) const = 0;
  // The clipping threshold of the gradient norm (<= 0: no clipping).
  virtual double max_grad_norm() const = 0;
};

// What the `optim` section says about the update: the rule (`optim.type`) and the keys of the
// rules side by side, each rule reading its own (AdamW's: adamw_config.h).
struct UpdateRuleConfig : AdamWConfig {
  std::string type = "adamw";
};

// Builds the rule of one type from the config (Error naming the key for a bad value); `layout`
// must outlive the rule.
using UpdateRuleFactory = std::unique_ptr<const UpdateRule> (*)(const ParamLayout& layout,
                                                                const UpdateRuleConfig& config);

// The types `optim.type` accepts, sorted: the table's rows and what RegisterUpdateRule added.
std::vector<std::string> UpdateRuleTypes();
bool IsUpdateRuleType(const std::string& type);
// Adds a rule under a new type (Error when the type is taken).
void RegisterUpdateRule(const std::string& type, UpdateRuleFactory factory);

// The rule `config.type` names; an unknown type is an Error naming 'optim.type' and the types.
std::unique_ptr<const UpdateRule> MakeUpdateRule(const ParamLayout& layout,
                                                 const UpdateRuleConfig& config);

}  // namespace replica
