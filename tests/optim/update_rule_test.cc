// The update rules' table: `optim.type` chooses the rule; a second rule is its class and one
// registration, run by the optimizer unchanged and accepted by the run config; unknown types are
// refused naming the key and the known ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ops/cpu/cpu_backend.h"
#include "optim/adamw.h"
#include "optim/update_rule.h"
#include "run/run_config.h"
#include "testing/util.h"

namespace replica {
namespace {

ParamLayout Layout() {
  ParamLayout l;
  l.Add("model.embed_tokens.weight", {7, 5});
  l.Add("lm_head.weight", {7, 5});
  return l;
}

// A second rule for the test: p -= lr · coef · sign(g), no state.
class SignDescent final : public UpdateRule {
 public:
  void Apply(const ShardSpan& span, const StepArgs& step, const Backend&) const override {
    for (size_t i = 0; i < span.end - span.begin; ++i) {
      const float g = span.grads[i];
      const double s = g > 0 ? 1.0 : (g < 0 ? -1.0 : 0.0);
      span.params[i] = static_cast<float>(span.params[i] - step.lr * step.grad_coef * s);
    }
  }
  double max_grad_norm() const override { return 0; }
};

std::unique_ptr<const UpdateRule> MakeSignDescent(const ParamLayout&, const UpdateRuleConfig&) {
  return std::make_unique<SignDescent>();
}

TEST(UpdateRule, AdamwIsTheDefaultTypeAndTheAdamWRule) {
  EXPECT_EQ(UpdateRuleConfig{}.type, "adamw");
  EXPECT_TRUE(IsUpdateRuleType("adamw"));
  const ParamLayout l = Layout();
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0, 1);
  FlatBuffer p0(l.total_floats()), g(l.total_floats());
  for (size_t i = 0; i < p0.size(); ++i) p0.data()[i] = 0.02f * d(rng), g.data()[i] = d(rng);
  FlatBuffer a(l.total_floats()), b(l.total_floats());
  std::memcpy(a.data(), p0.data(), p0.size() * sizeof(float));
  std::memcpy(b.data(), p0.data(), p0.size() * sizeof(float));
  AdamW direct(l, AdamWConfig{}, CpuBackend());
  AdamW made(l, MakeUpdateRule(l, UpdateRuleConfig{}), CpuBackend());
  for (int s = 0; s < 3; ++s) {
    direct.Step(a, g, 1e-3, 0.5);
    made.Step(b, g, 1e-3, 0.5);
  }
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(UpdateRule, UnknownTypeIsRefusedNamingTheKeyAndTheTypes) {
  UpdateRuleConfig c;
  c.type = "lion";
  const ParamLayout l = Layout();
  const std::string e = test::ErrorOf([&] { MakeUpdateRule(l, c); });
  EXPECT_NE(e.find("'optim.type'"), std::string::npos) << e;
  EXPECT_NE(e.find("'lion'"), std::string::npos) << e;
  EXPECT_NE(e.find("adamw"), std::string::npos) << e;
  const std::string r = test::ErrorOf(
      [&] { RunConfig::FromYaml(test::kTinyRunConfig, "/b", {"optim.type=lion"}, "x.yaml"); });
  EXPECT_NE(r.find("'optim.type'"), std::string::npos) << r;
  EXPECT_NE(r.find("adamw"), std::string::npos) << r;
}

TEST(UpdateRule, ASecondRuleIsOneRegistration) {
  RegisterUpdateRule("sign_descent_test", &MakeSignDescent);
  EXPECT_NE(test::ErrorOf([] { RegisterUpdateRule("sign_descent_test", &MakeSignDescent); })
                .find("registered already"),
            std::string::npos);
  const std::vector<std::string> types = UpdateRuleTypes();
  EXPECT_EQ(types, (std::vector<std::string>{"adamw", "sign_descent_test"}));

  // The run config accepts it, and the optimizer runs it as it runs AdamW.
  const RunConfig rc = RunConfig::FromYaml(test::kTinyRunConfig, "/b",
                                           {"optim.type=sign_descent_test"}, "x.yaml");
  EXPECT_EQ(rc.optim.type, "sign_descent_test");
  const ParamLayout l = Layout();
  AdamW opt(l, MakeUpdateRule(l, rc.optim), CpuBackend());
  FlatBuffer p(l.total_floats()), g(l.total_floats());
  for (size_t i = 0; i < g.size(); ++i) g.data()[i] = (i % 3 == 0) ? 2.0f : (i % 3 == 1 ? -0.5f : 0.0f);
  opt.Step(p, g, 0.25, 1.0);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(p.data()[i], (i % 3 == 0) ? -0.25f : (i % 3 == 1 ? 0.25f : 0.0f)) << i;
  EXPECT_EQ(opt.step(), 1);
}

}  // namespace
}  // namespace replica
