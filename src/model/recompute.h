// Activation recomputation policies of Olmo3Model (docs/design.md §3): which of a layer's forward
// values the model keeps for the backward and which it recomputes there from the kept ones.
//   none  keep every value (the largest arena, no extra work)
//   mlp   keep the attention half and the norm statistics; recompute the SwiGLU MLP's g, u, s, m
//         from the kept h (gate, up, down GEMMs and the SwiGLU, per layer, in backward)
//   full  keep only each layer's input x (the residual stream); re-run the whole layer's forward
//         into one shared working set before its backward
// A policy changes no bit of any result: the recompute issues the forward's own op calls on the
// forward's own inputs.
#pragma once
#include <string>

namespace replica {

enum class Recompute { kNone, kMlp, kFull };

// "none" | "mlp" | "full" -> Recompute; Error naming `where` (a config key or a flag) otherwise.
Recompute ParseRecompute(const std::string& name, const std::string& where);
const char* RecomputeName(Recompute policy);

}  // namespace replica
