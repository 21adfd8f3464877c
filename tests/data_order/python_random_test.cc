// random.Random reproduced: against what Python and OLMo-core's own code gave
// (tests/data/reference/python_random, written by tools/crosscheck/generate_python_random.py):
// the raw draws for seeds across CPython's key-word boundaries, and the order OLMo-core's
// NumpyDatasetConfig puts source files in for a source_permutation_seed.
#include "data/python_random.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace replica::data {
namespace {

using nlohmann::json;

json ReadFixture(const std::string& name) {
  const std::string path =
      std::string(REPLICA_SOURCE_DIR) + "/tests/data/reference/python_random/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);
}

// A seed as Python wrote it (decimal, possibly negative or up to 2^64 - 1).
PythonRandom FromText(const std::string& s) {
  if (s[0] == '-') return PythonRandom(std::stoll(s));
  return PythonRandom::FromMagnitude(std::stoull(s));
}

TEST(PythonRandom, RawDrawsMatchPython) {
  const json fixture = ReadFixture("draws.json");
  int checked = 0;
  for (const auto& [seed, streams] : fixture.at("seeds").items()) {
    for (const auto& [name, values] : streams.items()) {
      PythonRandom r = FromText(seed);
      const size_t sep = name.find('_');
      const std::string kind = name.substr(0, sep);
      const uint64_t arg = std::stoull(name.substr(sep + 1));
      for (const auto& v : values) {
        const uint64_t want = std::stoull(v.get<std::string>());
        const uint64_t got =
            kind == "getrandbits" ? r.GetRandBits(static_cast<int>(arg)) : r.RandBelow(arg);
        ASSERT_EQ(got, want) << "seed " << seed << " " << name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(PythonRandom, SourceOrderMatchesOlmoCore) {
  const json fixture = ReadFixture("permutations.json");
  int checked = 0;
  for (const json& c : fixture.at("cases")) {
    PythonRandom r = FromText(c.at("seed").get<std::string>());
    std::vector<uint64_t> order(c.at("count").get<size_t>());
    std::iota(order.begin(), order.end(), 0);
    PythonShuffle(r, order);
    EXPECT_EQ(order, c.at("order").get<std::vector<uint64_t>>())
        << "seed " << c.at("seed") << ", " << order.size() << " files";
    ++checked;
  }
  EXPECT_EQ(checked, 13 * 8);
}

TEST(PythonRandom, NegativeSeedIsItsMagnitude) {
  PythonRandom a(-123), b(123);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.NextU32(), b.NextU32());
  PythonRandom lo(std::numeric_limits<int64_t>::min());
  PythonRandom hi = PythonRandom::FromMagnitude(uint64_t{1} << 63);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(lo.NextU32(), hi.NextU32());
}

TEST(PythonRandom, BadArgumentsAreRefused) {
  PythonRandom r(1);
  EXPECT_ANY_THROW(r.GetRandBits(0));
  EXPECT_ANY_THROW(r.GetRandBits(65));
  EXPECT_ANY_THROW(r.RandBelow(0));
}

}  // namespace
}  // namespace replica::data
