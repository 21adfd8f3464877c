// Document lengths of plain fixed-length instances (OLMo-core's NumpyFSLDataset with
// generate_doc_lengths): the get_document_lengths rule on its edge cases and against a literal
// transcription of it, the loader's cu_doc_lens over a NumpyFslDataset and a MixtureDataset, and
// every instance and collated batch of OLMo-core's own dataset (tests/data/reference/fsl_doc_lens,
// written by tools/crosscheck/generate_fsl_doc_lens.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "data/batch_lookup.h"
#include "data/fsl_dataset.h"
#include "data/loader.h"
#include "data/mixture.h"
#include "test_util.h"

namespace replica::data {
namespace {

using testing::ScratchDir;
using testing::WriteTokens;

constexpr int32_t E = 9;  // EOS in the hand-written cases
constexpr int32_t B = 8;  // BOS in the hand-written cases

std::vector<int32_t> Lens(const std::vector<int32_t>& ids, int64_t bos = -1) {
  return DocumentLengths(ids.data(), static_cast<int64_t>(ids.size()), {E, bos});
}

// get_document_lengths as OLMo-core writes it: boundaries = [-1] + the positions that end a
// document (every EOS; with a BOS id, every EOS followed by BOS) + [n - 1] unless that position is
// already one, and the lengths are the differences of consecutive boundaries.
std::vector<int32_t> Transcribed(const std::vector<int32_t>& ids, int32_t eos, int32_t bos) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> bounds = {-1};
  if (bos < 0) {
    for (int64_t i = 0; i < n; ++i)
      if (ids[i] == eos) bounds.push_back(i);
    if (ids[n - 1] != eos) bounds.push_back(n - 1);
  } else {
    for (int64_t i = 0; i + 1 < n; ++i)
      if (ids[i] == eos && ids[i + 1] == bos) bounds.push_back(i);
    bounds.push_back(n - 1);
  }
  std::vector<int32_t> lens;
  for (size_t k = 1; k < bounds.size(); ++k)
    lens.push_back(static_cast<int32_t>(bounds[k] - bounds[k - 1]));
  return lens;
}

TEST(FslDocumentLengths, EdgeCasesWithoutBos) {
  // No EOS: the instance is one document.
  EXPECT_EQ(Lens({1, 2, 3, 4}), (std::vector<int32_t>{4}));
  // EOS as the last token ends the last document there; nothing follows it.
  EXPECT_EQ(Lens({1, 2, 3, E}), (std::vector<int32_t>{4}));
  EXPECT_EQ(Lens({1, E, 3, E}), (std::vector<int32_t>{2, 2}));
  // EOS as the first token: a document of one token (the tail of one cut by the instance edge).
  EXPECT_EQ(Lens({E, 2, 3, 4}), (std::vector<int32_t>{1, 3}));
  // Consecutive EOS: each is a document of its own.
  EXPECT_EQ(Lens({1, E, E, E, 5}), (std::vector<int32_t>{2, 1, 1, 1}));
  EXPECT_EQ(Lens({E, E, E}), (std::vector<int32_t>{1, 1, 1}));
  // A document running past the instance's end is cut there.
  EXPECT_EQ(Lens({1, E, 3, 4, 5}), (std::vector<int32_t>{2, 3}));
}

TEST(FslDocumentLengths, EdgeCasesWithBos) {
  // A boundary is an EOS followed by BOS; an EOS followed by anything else is inside a document.
  EXPECT_EQ(Lens({B, 2, E, B, 5}, B), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(Lens({B, E, 3, E, B}, B), (std::vector<int32_t>{4, 1}));
  EXPECT_EQ(Lens({1, 2, 3, 4}, B), (std::vector<int32_t>{4}));
  // EOS last: there is no next token, so the last document simply ends with the instance.
  EXPECT_EQ(Lens({B, 2, E, B, E}, B), (std::vector<int32_t>{3, 2}));
  // EOS first, followed by BOS: a one-token document.
  EXPECT_EQ(Lens({E, B, 3, 4}, B), (std::vector<int32_t>{1, 3}));
  // BOS equal to EOS (dolma2_sigdig): a document ends at an EOS followed by another EOS.
  EXPECT_EQ(Lens({1, E, E, 4, E, 6}, E), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(Lens({E, E, E, E}, E), (std::vector<int32_t>{1, 1, 1, 1}));
}

TEST(FslDocumentLengths, MatchesTheTranscribedRuleOnRandomInstances) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 4000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 24);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    // Few distinct ids, so EOS and BOS are frequent, often adjacent and often at the edges.
    for (int32_t& v : ids) v = static_cast<int32_t>(rng() % 4);  // 0, 1 ordinary; 2 EOS; 3 BOS
    for (int32_t bos : {-1, 3, 2}) {
      const auto got = DocumentLengths(ids.data(), n, {2, bos});
      ASSERT_EQ(got, Transcribed(ids, 2, bos)) << "trial " << trial << " bos " << bos;
      int64_t sum = 0;
      for (int32_t l : got) {
        EXPECT_GE(l, 1);
        sum += l;
      }
      EXPECT_EQ(sum, n);
    }
  }
}

// The loader's cu_doc_lens over a plain dataset: the running sum of each row's document lengths,
// so every row edge is a document edge even where a document continues into the next instance.
TEST(FslDocumentLengths, LoaderGivesCuDocLensOfPlainInstances) {
  ScratchDir dir("fsl_doc_lens");
  // 3 instances of 6: [1 2 E 4 5 6] [7 E E 1 2 3] [E 5 6 7 8 E].
  const std::vector<uint32_t> tokens = {1, 2, E, 4, 5, 6, 7, E, E, 1, 2, 3, E, 5, 6, 7, 8, E, 1};
  WriteTokens(dir.File("a.npy"), tokens);
  const FslDatasetOptions o{{dir.File("a.npy")}, 6, TokenDtype::kUint32, 100};
  auto ds = std::make_shared<NumpyFslDataset>(o, DocumentBoundary{E, -1});
  ASSERT_EQ(ds->num_instances(), 3u);
  ASSERT_TRUE(ds->document_boundary().has_value());
  DataLoader loader(ds, {5, 3});
  const RankBatch b = loader.Next();
  std::vector<int32_t> want = {0};
  std::vector<int32_t> ids(6);
  for (uint32_t g : b.instances) {
    ds->ReadInstance(g, ids.data());
    for (int32_t len : Transcribed(ids, E, -1)) want.push_back(want.back() + len);
  }
  EXPECT_EQ(b.cu_doc_lens, want);
  EXPECT_EQ(b.cu_doc_lens.back(), 18);
  for (int32_t row_edge : {6, 12})
    EXPECT_NE(std::find(b.cu_doc_lens.begin(), b.cu_doc_lens.end(), row_edge),
              b.cu_doc_lens.end());

  // Without a boundary the batch has no document lengths, and the instances are the same.
  DataLoader plain(std::make_shared<NumpyFslDataset>(o), {5, 3});
  const RankBatch p = plain.Next();
  EXPECT_TRUE(p.cu_doc_lens.empty());
  EXPECT_EQ(p.input_ids, b.input_ids);
  EXPECT_EQ(p.labels, b.labels);
  // The document lengths change nothing the loader state checks (the same instances).
  EXPECT_EQ(NumpyFslDataset(o, DocumentBoundary{E, -1}).fingerprint(),
            NumpyFslDataset(o).fingerprint());
  EXPECT_THROW(NumpyFslDataset(o, DocumentBoundary{-1, -1}), Error);
}

TEST(FslDocumentLengths, MixtureInstancesHaveDocumentLengths) {
  ScratchDir dir("mix_doc_lens");
  WriteTokens(dir.File("a.npy"), std::vector<uint32_t>{1, E, 3, 4, E, E, 7, 8, 1, 2, 3, E});
  WriteTokens(dir.File("b.npy"), std::vector<uint32_t>{E, 2, 3, 4, 5, 6, 7, 8});
  MixtureOptions o;
  o.sources = {{"a", {dir.File("a.npy")}, 0, 8, 1.0}, {"b", {dir.File("b.npy")}, 0, 8, 1.0}};
  o.seq_len = 4;
  o.vocab_size = 100;
  o.seed = 3;
  o.document_boundary = DocumentBoundary{E, -1};
  auto mix = std::make_shared<MixtureDataset>(o);
  ASSERT_EQ(mix->num_instances(), 4u);
  DataLoader loader(mix, {1, 4});
  const RankBatch b = loader.Next();
  std::vector<int32_t> want = {0};
  std::vector<int32_t> ids(4);
  for (uint32_t g : b.instances) {
    mix->ReadInstance(g, ids.data());
    for (int32_t len : Transcribed(ids, E, -1)) want.push_back(want.back() + len);
  }
  EXPECT_EQ(b.cu_doc_lens, want);
  o.document_boundary.reset();
  DataLoader plain(std::make_shared<MixtureDataset>(o), {1, 4});
  EXPECT_TRUE(plain.Next().cu_doc_lens.empty());
}

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/fsl_doc_lens";

std::string Sha16(const std::vector<int32_t>& ids) {
  Sha256 h;
  h.Update(ids.data(), ids.size() * sizeof(int32_t));
  return h.HexDigest().substr(0, 16);
}

// Every instance of OLMo-core's NumpyFSLDataset (generate_doc_lengths on) over the fixture's token
// files, synthetic and written by `replica tokenize`: token ids, doc_lens, the instance count and
// fingerprint; and the loader's first two global batches for two seeds: instance ids, and the
// cu_doc_lens OLMo-core's model is given (get_cumulative_document_lengths of the collated
// doc_lens), which must be the loader's cu_doc_lens; `replica data batch`'s lookup agrees too.
TEST(FslDocumentLengths, EveryInstanceAndBatchMatchesOlmoCore) {
  std::ifstream in(kDir + "/olmo_core.json");
  ASSERT_TRUE(in.good()) << kDir;
  const nlohmann::json ref = nlohmann::json::parse(in);
  size_t cases = 0, instances = 0, batches = 0;
  for (const auto& [name, c] : ref.at("cases").items()) {
    SCOPED_TRACE(name);
    const nlohmann::json& spec = c.at("spec");
    const nlohmann::json& s = ref.at("token_sets").at(spec.at("set").get<std::string>());
    FslDatasetOptions o;
    for (const auto& p : spec.at("paths")) o.paths.push_back(kDir + "/tokens/" + p.get<std::string>());
    o.seq_len = spec.at("seq_len");
    o.dtype = ParseDtype(s.at("dtype").get<std::string>());
    o.vocab_size = s.at("vocab_size");
    const int64_t bos = s.at("bos").is_null() ? -1 : s.at("bos").get<int64_t>();
    const DocumentBoundary boundary{s.at("eos").get<int64_t>(), bos};
    auto ds = std::make_shared<NumpyFslDataset>(o, boundary);
    ASSERT_EQ(ds->num_instances(), c.at("num_instances").get<uint64_t>());
    std::vector<uint64_t> sizes;
    for (const TokenFile& f : ds->files()) sizes.push_back(f.size_bytes());
    EXPECT_EQ(OlmoCoreFslFingerprint(o.paths, sizes, o.dtype,
                                     {o.vocab_size, s.at("pad").get<int64_t>(), boundary.eos_token_id,
                                      bos, -1}),
              c.at("fingerprint").get<std::string>());
    const int64_t T = o.seq_len;
    std::vector<int32_t> ids(static_cast<size_t>(T));
    for (uint64_t i = 0; i < ds->num_instances(); ++i) {
      SCOPED_TRACE(i);
      ds->ReadInstance(i, ids.data());
      const auto& rec = c.at("instances")[i];
      EXPECT_EQ(Sha16(ids), rec.at("ids").get<std::string>());
      EXPECT_EQ(DocumentLengths(ids.data(), T, boundary),
                rec.at("doc_lens").get<std::vector<int32_t>>());
      if (i < c.at("full").size()) {
        EXPECT_EQ(ids, c.at("full")[i].at("ids").get<std::vector<int32_t>>());
      }
      ++instances;
    }
    for (const auto& [key, rows] : c.at("loader").items()) {
      const uint64_t seed = std::stoull(key.substr(0, key.find('/')));
      const uint64_t batch = std::stoull(key.substr(key.find('/') + 1));
      DataLoader loader(ds, {seed, batch});
      BatchLookupOptions lo;
      lo.paths = o.paths;
      lo.seq_len = T;
      lo.dtype = o.dtype;
      lo.seed = seed;
      lo.global_batch_instances = batch;
      lo.document_boundary = boundary;
      for (size_t k = 0; k < rows.size(); ++k) {
        const auto& row = rows[k];
        const RankBatch b = loader.Next();
        EXPECT_EQ(b.instances, row.at("index").get<std::vector<uint32_t>>()) << key;
        EXPECT_EQ(b.cu_doc_lens, row.at("cu_doc_lens").get<std::vector<int32_t>>()) << key;
        const BatchLookup look = LookupGlobalBatch(lo, k);
        ASSERT_EQ(look.instances.size(), batch);
        for (size_t r = 0; r < batch; ++r) {
          // The collated doc_lens: each row's lengths, zero-padded to the batch's most documents.
          std::vector<int32_t> padded = look.instances[r].doc_lens;
          padded.resize(row.at("doc_lens")[r].size(), 0);
          EXPECT_EQ(padded, row.at("doc_lens")[r].get<std::vector<int32_t>>()) << key << " " << r;
        }
        ++batches;
      }
    }
    ++cases;
  }
  EXPECT_GE(cases, 14u);
  EXPECT_GE(instances, 900u);
  EXPECT_GE(batches, 50u);
}

}  // namespace
}  // namespace replica::data
