// The importer's field table against the committed snapshot of the installed OLMo-core's config
// classes (tests/data/reference/olmo_core_fields/classes.json, written by
// tools/crosscheck/generate_olmo_core_fields.py): every class reachable from ExperimentConfig
// through the fields the importer reads is in the table, every field of the classes it reads field
// by field is decided, and registered names ("type") agree. The same walk as
// tools/crosscheck/olmo_core_classes.py's, without Python.
#include "run/olmo_core_fields.h"

#include <gtest/gtest.h>

#include <set>

#include "core/atomic_file.h"
#include "run/olmo_core_config.h"

namespace replica {
namespace {

using json = nlohmann::json;
using olmo_core::FindClass;
using olmo_core::Use;
using olmo_core::Whole;

json Snapshot() {
  return json::parse(
      ReadFile(std::string(REPLICA_TEST_DATA) + "/reference/olmo_core_fields/classes.json"));
}

TEST(OlmoCoreFields, EveryReachableClassAndFieldIsDecided) {
  const json snap = Snapshot();
  std::set<std::string> seen;
  std::vector<std::string> todo = {snap["root"].get<std::string>()}, unknown;
  size_t fields = 0;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    const json& cls = snap["classes"][name];
    const olmo_core::ClassRule* rule = FindClass(name);
    if (!rule) {
      unknown.push_back(name + " (class)");
      continue;
    }
    EXPECT_EQ(rule->type, cls["type"].get<std::string>()) << name;
    if (rule->whole == Whole::kAccepted || rule->whole == Whole::kRefused) {
      EXPECT_FALSE(rule->reason.empty()) << name;
      continue;
    }
    for (auto it = cls["fields"].begin(); it != cls["fields"].end(); ++it) {
      ++fields;
      const olmo_core::FieldRule* f = rule->Field(it.key());
      if (!f) {
        unknown.push_back(name + "." + it.key());
        continue;
      }
      EXPECT_FALSE(f->text.empty()) << name << "." << it.key();
      if (!f->at.empty()) {
        EXPECT_FALSE(f->otherwise.empty()) << name << "." << it.key();
      }
      if (f->use == Use::kMapped) {
        for (const json& r : (*it)["refs"]) todo.push_back(r.get<std::string>());
      }
    }
  }
  EXPECT_TRUE(unknown.empty()) << testing::PrintToString(unknown);
  EXPECT_GT(seen.size(), 90u);  // the walk reached the whole config, not a corner of it
  EXPECT_GT(fields, 250u);
}

// A field accepted only at some values: when the dataclass default is a plain value, it is one of
// them or the rule says what absence means (and so refuses it), so a config that leaves the field
// out is never read as something OLMo-core would not build.
TEST(OlmoCoreFields, DefaultsOfValueBoundFieldsAreDecided) {
  const json snap = Snapshot();
  for (const olmo_core::ClassRule& rule : olmo_core::ClassTable()) {
    auto c = snap["classes"].find(rule.name);
    if (c == snap["classes"].end()) continue;
    for (const olmo_core::FieldRule& f : rule.fields) {
      if (f.at.empty()) continue;
      auto fi = (*c)["fields"].find(f.name);
      if (fi == (*c)["fields"].end() || !(*fi)["default"].contains("value")) continue;
      const json& d = (*fi)["default"]["value"];
      if (d.is_null()) continue;  // None: the module's default (the rule's `absent` when set)
      bool ok = false;
      for (const json& a : f.at) ok = ok || a == d;
      if (!ok) {
        EXPECT_EQ(f.absent, d) << rule.name << "." << f.name << " default " << d.dump();
      }
    }
  }
}

// --field-table's JSON has every class and field of the table.
TEST(OlmoCoreFields, TableJsonListsEveryRule) {
  const json t = olmo_core::FieldTableJson();
  size_t n = 0;
  for (const olmo_core::ClassRule& rule : olmo_core::ClassTable()) {
    ASSERT_TRUE(t["classes"].contains(rule.name)) << rule.name;
    EXPECT_EQ(t["classes"][rule.name]["fields"].size(), rule.fields.size()) << rule.name;
    n += rule.fields.size();
  }
  EXPECT_GT(n, 200u);
}

}  // namespace
}  // namespace replica
