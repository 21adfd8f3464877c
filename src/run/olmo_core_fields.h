// The OLMo-core classes replica's importer knows, and what it does with each of their fields
// (docs/olmo-core.md "The field table"). One table decides every field of every known class:
//   - mapped: a reader (the Importer of run/olmo_core_import.h: olmo_core_read_model.cc,
//     olmo_core_read_train.cc) takes it and turns it into replica keys;
//   - accepted: it changes nothing replica computes, at any value (with the reason), or only at
//     the listed values (other values are refused with the stated reason);
//   - refused: replica lacks what it sets (the reason says what), whenever it is present.
// A class is read field by field, accepted whole (e.g. logging callbacks), or refused whole. A key
// that is not a field of its class is refused as unknown; "type" (OLMo-core's registered name,
// written for Registrable classes) must equal the class's registered name.
// The table is what `replica import-config --field-table` prints; tools/crosscheck/
// check_olmo_core_fields.py compares it with the installed OLMo-core's dataclasses, and
// tests/run/olmo_core_fields_test.cc with the committed snapshot of them.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace replica::olmo_core {

// Where in the config a class may appear; a known class in the wrong place is refused.
enum class Role {
  kExperiment,
  kModel,
  kBlock,
  kAttention,
  kSlidingWindow,
  kRope,
  kRopeScaling,
  kLayerNorm,
  kFeedForward,
  kLmHead,
  kMoe,
  kGate,
  kDataset,
  kTokenizer,
  kDataLoader,
  kTrainModule,
  kOptim,
  kGroupOverride,
  kScheduler,
  kTrainer,
  kDuration,
  kCallback,
  kDataParallel,
  kOtherParallel,
  kContextParallel,
  kFloat8,
  kActivationCheckpointing,
  kLaunch,
  kCheckpointer,
  kDatasetPart,
};
const char* RoleName(Role r);

enum class Use { kMapped, kAccepted, kRefused };

struct FieldRule {
  std::string name;
  Use use;
  std::string text;             // mapped: the replica key(s); accepted / refused: the reason
  std::vector<nlohmann::json> at;  // accepted only at these values (empty: at any value)
  std::string otherwise;        // accepted at values: why other values are refused
  // Accepted at values: what OLMo-core uses when the field is absent or null (the dataclass
  // default, or the module's default for a None one), checked like a given value; null: absent
  // is accepted.
  nlohmann::json absent;
};

enum class Whole {
  kFields,    // read field by field
  kAccepted,  // the object and everything in it change nothing replica computes
  kRefused,   // replica cannot reproduce it
  kRefusedButRead,  // refused, but its fields are still read so that a plan can show the rest
};

struct ClassRule {
  std::string name;  // "module.ClassName", as "_CLASS_" spells it
  Role role;
  std::string type;  // registered name (Registrable classes), "" if none
  Whole whole;
  std::string reason;  // for kAccepted / kRefused / kRefusedButRead
  std::vector<FieldRule> fields;
  const FieldRule* Field(const std::string& field) const;
};

// The class named `name`, or nullptr.
const ClassRule* FindClass(const std::string& name);
const std::vector<ClassRule>& ClassTable();

// {"classes": {name: {"role", "type", "whole", "reason", "fields": {field: {"use", "text",
// "at", "otherwise"}}}}}: the table as `import-config --field-table` prints it.
nlohmann::json FieldTableJson();

}  // namespace replica::olmo_core
