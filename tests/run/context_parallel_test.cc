// The context-parallel plan: what degree d of the reference's layout means for one rank — the
// same run over d·I instances of T/d tokens plus the gathered K and V — and the K/V traffic.
#include <gtest/gtest.h>

#include "core/error.h"
#include "run/context_parallel.h"
#include "run/plan.h"
#include "run/run_config.h"
#include "testing/util.h"

namespace replica {
namespace {

RunConfig Stage1(std::vector<std::string> sets) {
  sets.push_back("parallel.sharding=zero3");
  sets.push_back("train.grad_accumulation=sequential");
  return RunConfig::Load(test::ConfigsDir() + "olmo3-7b-stage1.yaml", sets);
}

TEST(ContextParallelPlan, NoneAtDegreeOne) {
  EXPECT_FALSE(PlanContextParallel(Stage1({}), std::nullopt).has_value());
}

TEST(ContextParallelPlan, ARankHoldsItsSliceAndTheGatheredKeysAndValues) {
  const int64_t d = 8;
  const RunConfig c = Stage1({"parallel.context_parallel_degree=8", "train.recompute=full"});
  const auto p = PlanContextParallel(c, uint64_t{1} << 50);  // everything fits: the first world
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->degree, d);
  EXPECT_EQ(p->tokens_per_rank, 8192 / d);
  ASSERT_EQ(p->smallest_world.world, d);  // one group of d ranks
  EXPECT_EQ(p->smallest_world.recompute, Recompute::kFull);

  // The same run over d·I instances of T/d tokens, sharded over the d ranks.
  RunConfig slice = Stage1({"train.recompute=full", "data.seq_len=1024",
                            "train.global_batch_instances=4096"});
  const MemoryPlan mem = PlanMemory(slice, d, Recompute::kFull);
  const uint64_t mu = static_cast<uint64_t>(c.train.micro_batch_instances);
  const uint64_t kv = 4 * 2 * mu * 8192 * static_cast<uint64_t>(c.model.num_kv_heads * c.model.head_dim);
  EXPECT_EQ(p->kv_gather_bytes, kv);
  EXPECT_EQ(p->memory.activations, mem.activations + kv);
  EXPECT_EQ(p->memory.params, mem.params);
  EXPECT_EQ(p->memory.total(), mem.total() + kv);
  // Fewer activation bytes per rank than the whole sequence on one rank.
  EXPECT_LT(p->memory.activations, PlanMemory(c, d, Recompute::kFull).activations);

  // Traffic: L layers × micro-batches per rank × (d−1)/d of K and V × 4 passes (forward,
  // backward's gather and reduce-scatter, the recomputed forward), values of compute.precision.
  const uint64_t micro = static_cast<uint64_t>(c.train.global_batch_instances) / 1 / mu;
  const uint64_t per_layer = (d - 1) * 2 * mu * 8192 *
                             static_cast<uint64_t>(c.model.num_kv_heads * c.model.head_dim) *
                             (c.compute.precision == "bf16" ? 2 : 4) / d;
  EXPECT_EQ(p->kv_traffic_bytes_per_step,
            static_cast<uint64_t>(c.model.num_layers) * micro * per_layer * 4);
}

TEST(ContextParallelPlan, TheDegreeMustDivideTheSequence) {
  const std::string e = test::ErrorOf([] { Stage1({"parallel.context_parallel_degree=3"}); });
  EXPECT_NE(e.find("parallel.context_parallel_degree"), std::string::npos) << e;
  EXPECT_NE(e.find("dividing data.seq_len (8192)"), std::string::npos) << e;
  EXPECT_NE(test::ErrorOf([] { Stage1({"parallel.context_parallel_degree=0"}); }), "");
}

}  // namespace
}  // namespace replica
