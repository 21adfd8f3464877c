// The packed dataset against OLMo-core's own NumpyPackedFSLDataset (tests/data/reference/packed,
// written by tools/crosscheck/generate_packed.py): every instance's token ids, label mask and
// document lengths, the instance count, the cases OLMo-core refuses, and the data loader's first
// global batches over the packed instances; plus the numpy argsort port against numpy itself.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "data/loader.h"
#include "data/numpy_argsort.h"
#include "data/obfd.h"
#include "data/packed_dataset.h"

namespace replica::data {
namespace {

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/packed";

nlohmann::json Load(const std::string& name) {
  std::ifstream in(kDir + "/" + name);
  EXPECT_TRUE(in.good()) << kDir << "/" << name;
  return nlohmann::json::parse(in);
}

std::string Sha16(const void* data, size_t size) {
  Sha256 h;
  h.Update(data, size);
  return h.HexDigest().substr(0, 16);
}

PackedDatasetOptions CaseOptions(const nlohmann::json& sets, const nlohmann::json& spec) {
  const nlohmann::json& s = sets.at(spec.at("set").get<std::string>());
  PackedDatasetOptions o;
  for (const auto& p : spec.at("paths")) o.paths.push_back(kDir + "/tokens/" + p.get<std::string>());
  o.seq_len = spec.at("seq_len");
  o.dtype = ParseDtype(s.at("dtype").get<std::string>());
  o.vocab_size = s.at("vocab_size");
  o.eos_token_id = s.at("eos");
  o.pad_token_id = s.at("pad");
  o.bos_token_id = s.at("bos").is_null() ? -1 : s.at("bos").get<int64_t>();
  o.long_doc_strategy = ParseLongDocStrategy(spec.at("strategy").get<std::string>(), "strategy");
  o.source_group_size = spec.at("group");
  o.generate_doc_lengths = true;
  return o;
}

TEST(NumpyArgsort, MatchesNumpyScalarPathOnTies) {
  const nlohmann::json cases = Load("argsort.json");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& c : cases) {
    const std::vector<int64_t> v = c.at("values").get<std::vector<int64_t>>();
    EXPECT_EQ(NumpyArgsort(v), c.at("argsort").get<std::vector<int64_t>>()) << "n=" << v.size();
  }
}

TEST(PackDocuments, RefusesWhatTheReferenceCannotPack) {
  EXPECT_THROW(PackDocuments({{0, 3}}, 24), Error);  // not a power of two
  EXPECT_THROW(PackDocuments({{0, 17}}, 16), Error);  // longer than an instance
  EXPECT_THROW(PackDocuments({{5, 5}}, 16), Error);   // empty document
  EXPECT_TRUE(PackDocuments({}, 16).instances.empty());
}

TEST(PackedDataset, EveryInstanceMatchesOlmoCore) {
  const nlohmann::json ref = Load("olmo_core.json");
  const nlohmann::json& sets = ref.at("token_sets");
  size_t compared = 0, instances = 0, refused = 0;
  for (const auto& [name, c] : ref.at("cases").items()) {
    SCOPED_TRACE(name);
    const PackedDatasetOptions o = CaseOptions(sets, c.at("spec"));
    if (c.contains("error") || c.at("num_instances") == 0) {
      // OLMo-core asserts (sequence length not a power of two) or builds no instance at all
      // (no file has an EOS); replica refuses both when it opens the dataset.
      EXPECT_THROW(PackedDataset{o}, Error);
      ++refused;
      continue;
    }
    const PackedDataset ds(o);
    ASSERT_EQ(ds.num_instances(), c.at("num_instances").get<uint64_t>());
    std::vector<uint64_t> sizes;
    for (const TokenFile& f : ds.files()) sizes.push_back(f.size_bytes());
    EXPECT_EQ(OlmoCorePackedFingerprint(o, sizes), c.at("fingerprint").get<std::string>());
    const int64_t T = ds.seq_len();
    std::vector<int32_t> ids(static_cast<size_t>(T));
    std::vector<uint8_t> mask(static_cast<size_t>(T));
    const auto& recs = c.at("instances");
    for (uint64_t i = 0; i < ds.num_instances(); ++i) {
      SCOPED_TRACE(i);
      ds.ReadInstance(i, ids.data());
      ds.ReadLabelMask(i, mask.data());
      const auto lens = DocumentLengths(ids.data(), T, *ds.document_boundary());
      EXPECT_EQ(Sha16(ids.data(), ids.size() * 4), recs[i].at("ids").get<std::string>());
      EXPECT_EQ(Sha16(mask.data(), mask.size()), recs[i].at("mask").get<std::string>());
      EXPECT_EQ(ds.InstanceTokens(i), recs[i].at("tokens").get<uint64_t>());
      EXPECT_EQ(lens, recs[i].at("doc_lens").get<std::vector<int32_t>>());
      if (i < c.at("full").size()) {
        const auto& full = c.at("full")[i];
        EXPECT_EQ(ids, full.at("ids").get<std::vector<int32_t>>());
        EXPECT_EQ(mask, full.at("mask").get<std::vector<uint8_t>>());
      }
      ++instances;
    }
    // The loader's shuffle over the packed instances: the first two global batches of epoch 1.
    for (const auto& [key, rows] : c.at("loader").items()) {
      const uint64_t seed = std::stoull(key.substr(0, key.find('/')));
      const uint64_t batch = std::stoull(key.substr(key.find('/') + 1));
      DataLoader loader(std::make_shared<PackedDataset>(o), {seed, batch});
      for (const auto& row : rows) {
        RankBatch b = loader.Next();
        EXPECT_EQ(b.instances, row.get<std::vector<uint32_t>>()) << key;
      }
    }
    ++compared;
  }
  EXPECT_GE(compared, 30u);
  EXPECT_GE(instances, 3000u);
  EXPECT_EQ(refused, 2u);
}

// The loader over a packed dataset: labels are ignored where OLMo-core's label mask is false (the
// padding), and cu_doc_lens is [0] + the running sum of the reference's doc_lens, rows in order.
TEST(PackedDataset, LoaderMasksPaddingAndConcatenatesDocumentLengths) {
  const nlohmann::json ref = Load("olmo_core.json");
  const nlohmann::json& c = ref.at("cases").at("u16bos.T32.fragment.g1.a.s0");
  PackedDatasetOptions o = CaseOptions(ref.at("token_sets"), c.at("spec"));
  const auto& recs = c.at("instances");
  for (bool lengths : {true, false}) {
    o.generate_doc_lengths = lengths;
    DataLoader loader(std::make_shared<PackedDataset>(o), {7, 8, 0, 1, 4});
    for (int step = 0; step < 3; ++step) {
      const RankBatch b = loader.Next();
      const int64_t T = b.seq_len;
      std::vector<int32_t> want_cu = {0};
      for (size_t r = 0; r < b.instances.size(); ++r) {
        const auto& rec = recs[b.instances[r]];
        const int64_t used = rec.at("tokens");
        for (int64_t t = 0; t < T; ++t) {
          const int32_t label = b.labels[r * T + t];
          if (t + 1 >= used) {
            EXPECT_EQ(label, kLabelIgnore) << "row " << r << " t " << t;
          } else {
            EXPECT_EQ(label, b.input_ids[r * T + t + 1]) << "row " << r << " t " << t;
          }
        }
        for (int32_t len : rec.at("doc_lens").get<std::vector<int32_t>>())
          want_cu.push_back(want_cu.back() + len);
      }
      if (lengths) {
        EXPECT_EQ(b.cu_doc_lens, want_cu);
        EXPECT_EQ(b.cu_doc_lens.back(), static_cast<int32_t>(b.instances.size() * T));
      } else {
        EXPECT_TRUE(b.cu_doc_lens.empty());
      }
    }
  }
}

}  // namespace
}  // namespace replica::data
