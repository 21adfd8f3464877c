// The model shape a command is pointed at (`replica bench --model-config`), whatever holds it: a
// Hugging Face config.json, a run config (YAML, its `model` section; or an OLMo-core config.json),
// or a directory with a config.json (an HF model directory, a checkpoint's step-N/) or a
// config.yaml (a run directory). Anything else is an Error that says which of these is expected.
#pragma once
#include <string>

#include "model/model_config.h"

namespace replica {

// `what` names the flag in errors ("--model-config").
ModelConfig LoadModelShape(const std::string& path, const std::string& what);

}  // namespace replica
