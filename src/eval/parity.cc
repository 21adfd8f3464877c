#include "eval/parity.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/progress.h"
#include "data/token_files.h"
#include "infer/inference_model.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "infer/model_weights.h"
#include "io/safetensors.h"
#include "hf/hf_weights.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "ops/document_mask.h"
#include "ops/host_copy.h"
#include "ops/registry.h"

namespace replica {
namespace {

// Log-softmax of one row in double, written to out; returns the argmax and sets *lse.
int64_t LogSoftmax(const float* l, int64_t V, double* out, double* lse_out) {
  int64_t arg = 0;
  for (int64_t v = 1; v < V; ++v) arg = l[v] > l[arg] ? v : arg;
  const double m = l[arg];
  double s = 0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(static_cast<double>(l[v]) - m);
  const double lse = m + std::log(s);
  for (int64_t v = 0; v < V; ++v) out[v] = static_cast<double>(l[v]) - lse;
  *lse_out = lse;
  return arg;
}

struct RowStats {
  double kl = 0, max_abs = 0, ce_ref = 0;
  double lse_ref = 0;  // log Σ exp of the reference row
  bool same_top1 = false;
};

// Compares one row of logits `a` with the reference row `r` (V each): top-1 agreement,
// D_KL(P_ref || P), max |a - r| and the reference row's log-sum-exp into `s`; lp_ref and lp (V
// doubles each) are scratch and hold the two log-softmaxes afterwards.
void CompareRow(const float* a, const float* r, int64_t V, double* lp_ref, double* lp,
                RowStats& s) {
  double lse = 0;
  const int64_t top_ref = LogSoftmax(r, V, lp_ref, &s.lse_ref);
  const int64_t top = LogSoftmax(a, V, lp, &lse);
  s.same_top1 = top == top_ref;
  for (int64_t v = 0; v < V; ++v) {
    s.kl += std::exp(lp_ref[v]) * (lp_ref[v] - lp[v]);
    s.max_abs = std::max(s.max_abs, std::abs(static_cast<double>(a[v]) - r[v]));
  }
}

void CheckShape(const SafetensorsFile& f, const TensorInfo& t, const std::vector<int64_t>& want,
                const char* what) {
  Require(t.shape == want, "{}: tensor '{}' has shape {}, expected {} ({})", f.path(), t.name,
          ShapeString(t.shape), ShapeString(want), what);
}

}  // namespace

ParityReport RunParity(const ParityOptions& o) {
  namespace fs = std::filesystem;
  Require(fs::is_directory(o.model_dir),
          "--model {}: not a directory (expected config.json + model.safetensors, or a "
          "checkpoint or run directory)",
          o.model_dir);
  // A replica checkpoint (either format; a run directory: its newest valid one) or an HF model.
  const fs::path md(o.model_dir);
  std::optional<Checkpoint> ckpt;
  if (fs::exists(md / kManifestFile) || fs::exists(md / kDoneFile) ||
      fs::is_directory(md / kCheckpointsSubdir)) {
    ReadNewestCheckpoint(o.model_dir, [&](const CheckpointInfo& info) {
      ckpt = Checkpoint::Open(info.dir, /*verify=*/false);  // ResolveCheckpoint verified
      Require(!ckpt->model_config().is_null(), "{}: checkpoint has no {}", ckpt->dir(),
              kConfigFile);
    });
  }
  const ModelConfig config =
      ckpt ? ModelConfig::FromHfJson(ckpt->model_config(), ckpt->dir() + "/" + kConfigFile)
           : ModelConfig::FromHfFile((md / "config.json").string());
  const SafetensorsFile ref = SafetensorsFile::Open(o.reference_path);
  const int64_t V = config.vocab_size;

  // The dump's shapes must fit the model before anything runs.
  const TensorInfo& ids_info = ref.Get("input_ids");
  Require(ids_info.shape.size() == 2 && ids_info.shape[0] >= 1 && ids_info.shape[1] >= 1,
          "{}: tensor 'input_ids' has shape {}, expected [B, T] with B, T >= 1", ref.path(),
          ShapeString(ids_info.shape));
  const int64_t B = ids_info.shape[0], T = ids_info.shape[1], N = B * T;
  CheckShape(ref, ref.Get("logits"), {B, T, V}, "[B, T] of input_ids and the model's vocab_size");
  const TensorInfo* labels_info = ref.Find("labels");
  if (labels_info) CheckShape(ref, *labels_info, {B, T}, "the shape of input_ids");
  const TensorInfo* loss_info = ref.Find("loss");
  const TensorInfo* z_info = ref.Find("z_loss");
  for (const TensorInfo* t : {loss_info, z_info}) {
    if (t) {
      Require(t->numel() == 1, "{}: tensor '{}' has shape {}, expected a scalar", ref.path(),
              t->name, ShapeString(t->shape));
    }
  }
  Require(o.z_loss_multiplier >= 0 && std::isfinite(o.z_loss_multiplier),
          "parity: --z-loss {} must be a finite number >= 0", o.z_loss_multiplier);
  const ParamLayout layout = config.BuildLayout();
  if (o.grads) {
    for (const ParamView& v : layout.views()) {
      const TensorInfo* g = ref.Find("grad." + v.name);
      Require(g != nullptr, "{}: --grads needs tensor 'grad.{}' {}, which the dump lacks",
              ref.path(), v.name, ShapeString(v.shape));
      CheckShape(ref, *g, v.shape, "the parameter's shape");
    }
  }

  std::vector<float> rope_cos, rope_sin;  // [positions >= T, head_dim / 2]; the first T replace
  if (o.reference_rope) {
    const int64_t half = config.head_dim / 2;
    for (const char* name : {"rope.cos", "rope.sin"}) {
      const TensorInfo* t = ref.Find(name);
      Require(t != nullptr,
              "{}: --rope-table reference needs tensor '{}' [positions >= {}, {}], which the dump "
              "lacks",
              ref.path(), name, T, half);
      Require(t->shape.size() == 2 && t->shape[0] >= T && t->shape[1] == half,
              "{}: tensor '{}' has shape {}, expected [positions >= {}, {}] (T and head_dim / 2)",
              ref.path(), name, ShapeString(t->shape), T, half);
    }
    Require(ref.Get("rope.cos").shape == ref.Get("rope.sin").shape,
            "{}: tensors 'rope.cos' and 'rope.sin' differ in shape", ref.path());
    rope_cos = ref.ReadF32("rope.cos");
    rope_sin = ref.ReadF32("rope.sin");
  }

  std::vector<int32_t> ids(N), labels(N);
  {
    const std::vector<int64_t> raw = ref.ReadI64("input_ids");
    for (int64_t i = 0; i < N; ++i) {
      Require(raw[i] >= 0 && raw[i] < V, "{}: input_ids[{}, {}] = {} is outside [0, {})",
              ref.path(), i / T, i % T, raw[i], V);
      ids[i] = static_cast<int32_t>(raw[i]);
    }
  }
  if (labels_info) {
    const std::vector<int64_t> raw = ref.ReadI64("labels");
    for (int64_t i = 0; i < N; ++i) {
      Require(raw[i] == kIgnoreLabel || (raw[i] >= 0 && raw[i] < V),
              "{}: labels[{}, {}] = {} is neither -100 nor in [0, {})", ref.path(), i / T, i % T,
              raw[i], V);
      labels[i] = static_cast<int32_t>(raw[i]);
    }
  } else {  // next-token labels, as transformers' model(input_ids, labels=input_ids)
    for (int64_t i = 0; i < N; ++i) labels[i] = (i % T == T - 1) ? kIgnoreLabel : ids[i + 1];
  }
  // Packed rows: OLMo-core's cumulative document lengths over the B·T positions.
  std::vector<int32_t> cu;
  if (const TensorInfo* cu_info = ref.Find("cu_doc_lens")) {
    Require(cu_info->shape.size() == 1 && cu_info->shape[0] >= 2,
            "{}: tensor 'cu_doc_lens' has shape {}, expected [n] with n >= 2 (0, ..., B*T)",
            ref.path(), ShapeString(cu_info->shape));
    const std::vector<int64_t> raw = ref.ReadI64("cu_doc_lens");
    for (size_t i = 0; i < raw.size(); ++i) {
      Require(raw[i] >= 0 && raw[i] <= N, "{}: cu_doc_lens[{}] = {} is outside [0, B*T = {}]",
              ref.path(), i, raw[i], N);
      cu.push_back(static_cast<int32_t>(raw[i]));
    }
    try {
      ValidateDocumentLengths(cu.data(), static_cast<int64_t>(cu.size()), B, T);
    } catch (const Error& e) {
      Fail("{}: tensor 'cu_doc_lens': {}", ref.path(), e.what());
    }
  }
  const int32_t* docs = cu.empty() ? nullptr : cu.data();
  const int64_t num_docs = static_cast<int64_t>(cu.size());

  const Backend& backend = SelectBackend(o.device, o.precision);
  Olmo3Model model(config, B, T, backend);
  {
    // Files are read on the host: in place when the backend's memory is the host's, else into a
    // host copy that is copied in.
    FlatBuffer host;
    FlatBuffer& target = backend.is_host() ? model.params() : (host = FlatBuffer(model.params().size()));
    if (ckpt)
      LoadNewestParams(o.model_dir, *ckpt, model.layout(), target);
    else
      LoadHfWeights(o.model_dir, model.layout(), target);
    if (!backend.is_host())
      CopyFloatsFromHost(backend, model.params().data(), host.data(),
                         static_cast<int64_t>(host.size()));
  }

  std::optional<int64_t> rope_differing;
  if (o.reference_rope)
    rope_differing = model.ReplacePlainRopeEntries(T, rope_cos.data(), rope_sin.data());

  std::vector<float> logits(static_cast<size_t>(N * V));
  model.ForwardLogits(ids.data(), B, T, logits.data(), docs, num_docs);
  const std::vector<float> ref_logits = ref.ReadF32("logits");

  std::vector<RowStats> rows(static_cast<size_t>(N));
#pragma omp parallel
  {
    std::vector<double> lp_ref(static_cast<size_t>(V)), lp(static_cast<size_t>(V));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float* a = logits.data() + i * V;
      const float* r = ref_logits.data() + i * V;
      RowStats& s = rows[i];
      CompareRow(a, r, V, lp_ref.data(), lp.data(), s);
      if (labels[i] != kIgnoreLabel) s.ce_ref = -lp_ref[labels[i]];
    }
  }

  ParityReport rep;
  rep.options = o;
  rep.positions = N;
  rep.documents = num_docs > 0 ? num_docs - 1 : 0;
  rep.rope_entries_differing = rope_differing;
  int64_t agree = 0;
  double ce_ref_sum = 0, lse_sq_ref_sum = 0;
  for (int64_t i = 0; i < N; ++i) {
    const RowStats& s = rows[i];
    rep.kl_mean += s.kl;
    rep.kl_max = std::max(rep.kl_max, s.kl);
    rep.max_abs_logit_diff = std::max(rep.max_abs_logit_diff, s.max_abs);
    agree += s.same_top1;
    ce_ref_sum += s.ce_ref;
    if (labels[i] != kIgnoreLabel) lse_sq_ref_sum += s.lse_ref * s.lse_ref;
    if (std::isnan(s.kl) || std::isnan(s.max_abs)) rep.kl_max = rep.max_abs_logit_diff = NAN;
  }
  rep.kl_mean /= static_cast<double>(N);
  rep.top1_agreement = static_cast<double>(agree) / static_cast<double>(N);

  CrossEntropySums sums;
  if (o.grads) {
    int64_t n = 0;
    for (int32_t y : labels) n += y != kIgnoreLabel;
    Require(n > 0, "{}: every label is -100, so there is no loss to differentiate",
            ref.path());
    backend.Zero(model.grads().data(), static_cast<int64_t>(model.grads().size()));
    sums = model.ForwardBackward(ids.data(), labels.data(), B, T, 1.0 / static_cast<double>(n),
                                 o.z_loss_multiplier, docs, num_docs);
    // Per tensor: squared norms of the difference and of the reference, in double.
    std::vector<double> num(layout.views().size()), den(layout.views().size());
    double num_all = 0, den_all = 0;
    std::vector<float> grads_staging;
    const float* grads = ReadOnHost(backend, model.grads(), model.grads().size(), grads_staging);
    for (size_t t = 0; t < layout.views().size(); ++t) {
      const ParamView& v = layout.views()[t];
      const std::vector<float> g_ref = ref.ReadF32("grad." + v.name);
      const float* g = grads + v.offset;
      for (size_t i = 0; i < v.numel; ++i) {
        const double d = static_cast<double>(g[i]) - g_ref[i];
        num[t] += d * d;
        den[t] += static_cast<double>(g_ref[i]) * g_ref[i];
      }
      num_all += num[t];
      den_all += den[t];
    }
    const double norm_all = std::sqrt(den_all);
    rep.grad_rel_floor = o.grad_floor * norm_all;
    auto relative = [](double diff, double scale) {
      const double r = scale > 0 ? diff / scale
                                 : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
      return std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
    };
    double worst = -1;
    for (size_t t = 0; t < layout.views().size(); ++t) {
      const double rel =
          relative(std::sqrt(num[t]), std::max(std::sqrt(den[t]), rep.grad_rel_floor));
      if (rel > worst) worst = rel, rep.grad_worst_tensor = layout.views()[t].name;
    }
    rep.grad_max_rel_err = worst;
    rep.grad_global_rel_err = relative(std::sqrt(num_all), norm_all);
  } else {
    sums = model.ForwardLoss(ids.data(), labels.data(), B, T, docs, num_docs);
  }
  rep.loss_tokens = sums.tokens;
  rep.loss = sums.tokens > 0 ? TorchMeanCe(sums, sums.tokens) : NAN;
  rep.lse_sq_mean =
      sums.tokens > 0 ? TorchMeanLseSq(sums, sums.tokens, o.z_loss_multiplier) : NAN;
  if (z_info) {
    rep.lse_sq_mean_ref = ref.ReadF64("z_loss")[0];
    rep.lse_sq_mean_ref_source = "dump";
  } else if (sums.tokens > 0) {
    rep.lse_sq_mean_ref = lse_sq_ref_sum / static_cast<double>(sums.tokens);
    rep.lse_sq_mean_ref_source = "logits";
  }
  if (loss_info) {
    rep.loss_ref = ref.ReadF64("loss")[0];
    rep.loss_ref_source = "dump";
  } else if (sums.tokens > 0) {
    rep.loss_ref = ce_ref_sum / static_cast<double>(sums.tokens);
    rep.loss_ref_source = "logits";
  }

  rep.pass = rep.kl_max <= o.max_kl && rep.top1_agreement >= o.min_top1 &&
             (!o.grads || (*rep.grad_max_rel_err <= o.max_grad_rel &&
                           *rep.grad_global_rel_err <= o.max_grad_rel));
  return rep;
}

namespace {

// How the model's weights are stored ("BF16", "F32"), read off the token embedding.
std::string StoredDtype(const ModelWeights& w) {
  try {
    return DTypeName(w.Get("model.embed_tokens.weight").dtype);
  } catch (const Error&) {
    return "?";
  }
}

// Why two models that are the same model up to bf16 rounding fail thresholds made for exact
// copies, and the thresholds that check such a pair; empty when bf16 is not involved.
std::string Bf16Hint(const ModelWeights& a, const ModelWeights& b, const ModelParityOptions& o) {
  const std::string da = StoredDtype(a), db = StoredDtype(b);
  const bool bf16_weights = (da == "BF16") != (db == "BF16");
  const bool bf16_compute = MatmulOperands(o.precision) == Precision::kBf16;
  if (!bf16_weights && !bf16_compute) return "";
  const std::string why =
      bf16_weights ? fmt::format("--model stores its weights as {} and --against as {}", da, db)
                   : "--model runs with bf16 matmul inputs (--precision bf16)";
  return fmt::format(
      "{}: rounding to bf16 (8 significant bits) moves every logit, so the default thresholds, "
      "made for exact copies (--max-kl 1e-6 --min-top1 1.0), do not hold. To check a bf16 copy "
      "of an fp32 model use --max-kl 1e-2 --min-top1 0.9 (docs/inference.md){}",
      why, o.tokens_path.empty() ? ", with real text in --tokens" : "");
}

}  // namespace

ParityReport RunParityAgainst(const ModelParityOptions& o) {
  Require(o.batch >= 1 && o.seq_len >= 0, "parity: --batch {} and --seq-len {} must be >= 1",
          o.batch, o.seq_len);
  Require(o.chunk_rows >= 1, "parity: --chunk-rows must be >= 1, got {}", o.chunk_rows);
  InferenceModel a(ModelWeights::Open(o.model_dir), SelectBackend(o.device, o.precision));
  InferenceModel b(ModelWeights::Open(o.against_dir), SelectBackend(o.device, Precision::kFp32));
  int64_t T = o.seq_len;
  if (T == 0) {  // the default: 512 tokens, fewer for a model of a shorter context
    T = 512;
    for (const InferenceModel* m : {&a, &b})
      if (m->config().max_position_embeddings > 0)
        T = std::min(T, m->config().max_position_embeddings);
  }
  const int64_t V = a.config().vocab_size, B = o.batch, N = B * T;
  Require(b.config().vocab_size == V,
          "--against {}: vocab_size {} differs from --model {}'s {}; logits cannot be compared",
          o.against_dir, b.config().vocab_size, o.model_dir, V);
  for (const InferenceModel* m : {&a, &b}) {
    const int64_t max_pos = m->config().max_position_embeddings;
    Require(max_pos <= 0 || T <= max_pos, "parity: --seq-len {} exceeds {}'s max_position_embeddings {}",
            T, m->weights().source(), max_pos);
  }
  std::vector<int32_t> ids(static_cast<size_t>(N));
  if (!o.tokens_path.empty()) {
    const data::TokenFile f = data::TokenFile::Open(o.tokens_path, data::TokenDtype::kUint32,
                                                    static_cast<uint64_t>(V));
    Require(f.num_tokens() >= static_cast<uint64_t>(N),
            "--tokens {}: holds {} tokens, --batch {} x --seq-len {} needs {}", o.tokens_path,
            f.num_tokens(), B, T, N);
    f.Read(0, static_cast<uint64_t>(N), ids.data());
  } else {
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(V - 1));
    for (int32_t& t : ids) t = pick(rng);
  }

  FlatBuffer xa = a.backend().AllocateFloats(static_cast<size_t>(N * a.config().hidden_size));
  FlatBuffer xb = b.backend().AllocateFloats(static_cast<size_t>(N * b.config().hidden_size));
  // Progress in passes: every layer of each model's forward, then every chunk of logits.
  const int64_t La = a.config().num_layers, Lb = b.config().num_layers;
  const int64_t chunks = (N + std::min(o.chunk_rows, N) - 1) / std::min(o.chunk_rows, N);
  ProgressMeter meter("parity", "passes", La + Lb + chunks, o.progress);
  a.ForwardHidden(ids.data(), B, T, xa.data(), [&](int64_t l, const float*, const float*) {
    meter.Update(l + 1, fmt::format("--model layer {} of {}", l + 1, La));
  });
  b.ForwardHidden(ids.data(), B, T, xb.data(), [&](int64_t l, const float*, const float*) {
    meter.Update(La + l + 1, fmt::format("--against layer {} of {}", l + 1, Lb));
  });

  std::vector<RowStats> rows(static_cast<size_t>(N));
  std::vector<double> ce_a(static_cast<size_t>(N), 0.0);
  const int64_t chunk = std::min(o.chunk_rows, N);
  std::vector<float> la(static_cast<size_t>(chunk * V)), lb(la.size());
  for (int64_t r0 = 0; r0 < N; r0 += chunk) {
    meter.Update(La + Lb + r0 / chunk, fmt::format("logits, positions {} to {} of {}", r0,
                                                   std::min(N, r0 + chunk), N));
    const int64_t n = std::min(chunk, N - r0);
    a.LogitsRows(xa.data() + r0 * a.config().hidden_size, n, la.data());
    b.LogitsRows(xb.data() + r0 * b.config().hidden_size, n, lb.data());
#pragma omp parallel
    {
      std::vector<double> lp_ref(static_cast<size_t>(V)), lp(static_cast<size_t>(V));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = r0 + r;
        const float* x = la.data() + r * V;
        const float* y = lb.data() + r * V;
        RowStats& s = rows[i];
        CompareRow(x, y, V, lp_ref.data(), lp.data(), s);
        if (i % T != T - 1) {
          s.ce_ref = -lp_ref[ids[i + 1]];
          ce_a[i] = -lp[ids[i + 1]];
        }
      }
    }
  }
  a.ReleaseLmHead();
  b.ReleaseLmHead();
  meter.Finish();

  ParityReport rep;
  rep.options.model_dir = o.model_dir;
  rep.options.reference_path = o.against_dir;
  rep.options.precision = o.precision;
  rep.options.compute = o.compute;
  rep.options.max_kl = o.max_kl;
  rep.options.min_top1 = o.min_top1;
  rep.positions = N;
  int64_t agree = 0;
  double ce_sum = 0, ce_ref_sum = 0;
  for (int64_t i = 0; i < N; ++i) {
    const RowStats& s = rows[i];
    rep.kl_mean += s.kl;
    rep.kl_max = std::max(rep.kl_max, s.kl);
    rep.max_abs_logit_diff = std::max(rep.max_abs_logit_diff, s.max_abs);
    agree += s.same_top1;
    ce_sum += ce_a[i];
    ce_ref_sum += s.ce_ref;
    if (std::isnan(s.kl) || std::isnan(s.max_abs)) rep.kl_max = rep.max_abs_logit_diff = NAN;
  }
  rep.kl_mean /= static_cast<double>(N);
  rep.top1_agreement = static_cast<double>(agree) / static_cast<double>(N);
  rep.loss_tokens = B * (T - 1);
  if (rep.loss_tokens > 0) {
    rep.loss = ce_sum / static_cast<double>(rep.loss_tokens);
    rep.loss_ref = ce_ref_sum / static_cast<double>(rep.loss_tokens);
    rep.loss_ref_source = "against";
  } else {
    rep.loss = NAN;
  }
  rep.pass = rep.kl_max <= o.max_kl && rep.top1_agreement >= o.min_top1;
  rep.input = o.tokens_path.empty()
                  ? fmt::format("{} random token ids, uniform in [0, {}) from seed {} (not text; "
                                "--tokens FILE for real text)",
                                N, V, o.seed)
                  : fmt::format("the first {} token ids of {}", N, o.tokens_path);
  if (!rep.pass) rep.hint = Bf16Hint(a.weights(), b.weights(), o);
  return rep;
}

nlohmann::ordered_json ParityReport::ToJson() const {
  using json = nlohmann::ordered_json;
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json j;
  j["positions"] = positions;
  j["kl_mean"] = num(kl_mean);
  j["kl_max"] = num(kl_max);
  j["top1_agreement"] = num(top1_agreement);
  j["max_abs_logit_diff"] = num(max_abs_logit_diff);
  j["loss"] = num(loss);
  j["loss_ref"] = loss_ref ? num(*loss_ref) : json(nullptr);
  j["grad_max_rel_err"] = grad_max_rel_err ? num(*grad_max_rel_err) : json(nullptr);
  j["pass"] = pass;
  j["loss_ref_source"] = loss_ref ? json(loss_ref_source) : json(nullptr);
  j["loss_tokens"] = loss_tokens;
  j["grad_worst_tensor"] = grad_max_rel_err ? json(grad_worst_tensor) : json(nullptr);
  j["rope_table"] = options.reference_rope ? "reference" : "own";
  if (rope_entries_differing) j["rope_entries_differing"] = *rope_entries_differing;
  j["grad_global_rel_err"] = grad_global_rel_err ? num(*grad_global_rel_err) : json(nullptr);
  j["grad_rel_floor"] = grad_max_rel_err ? json(grad_rel_floor) : json(nullptr);
  if (lse_sq_mean) {  // --reference only
    const double zm = options.z_loss_multiplier;
    j["lse_sq_mean"] = num(*lse_sq_mean);
    j["lse_sq_mean_ref"] = lse_sq_mean_ref ? num(*lse_sq_mean_ref) : json(nullptr);
    j["lse_sq_mean_ref_source"] = lse_sq_mean_ref ? json(lse_sq_mean_ref_source) : json(nullptr);
    j["z_loss_multiplier"] = zm;
    j["objective"] = num(loss + zm * *lse_sq_mean);
    j["objective_ref"] = loss_ref && lse_sq_mean_ref ? num(*loss_ref + zm * *lse_sq_mean_ref)
                                                     : json(nullptr);
  }
  j["thresholds"] = {{"max_kl", options.max_kl},
                     {"min_top1", options.min_top1},
                     {"max_grad_rel", options.grads ? json(options.max_grad_rel) : json(nullptr)},
                     {"grad_floor", options.grads ? json(options.grad_floor) : json(nullptr)}};
  j["precision"] = PrecisionName(options.precision);
  if (!options.compute.is_null()) j["compute"] = options.compute;
  j["model"] = options.model_dir;
  j["reference"] = options.reference_path;
  j["documents"] = documents;  // 0: no cu_doc_lens in the dump (one sequence per row)
  if (!input.empty()) j["input"] = input;
  j["hint"] = hint.empty() ? json(nullptr) : json(hint);
  return j;
}

std::string ParityReport::ToText() const {
  std::string s = fmt::format("parity of {} ({}) against {} ({} positions)\n", options.model_dir,
                              PrecisionName(options.precision), options.reference_path, positions);
  if (documents > 0)
    s += fmt::format("  packed rows         {} documents (the dump's cu_doc_lens)\n", documents);
  if (rope_entries_differing)
    s += fmt::format("  RoPE table          the reference's (rope.cos, rope.sin); {} of this "
                     "machine's entries differ\n",
                     *rope_entries_differing);
  s += fmt::format("  KL(ref || model)    mean {:.3e}  max {:.3e}   (max allowed {:.1e})\n", kl_mean,
                   kl_max, options.max_kl);
  s += fmt::format("  top-1 agreement     {:.6f}                (min {})\n", top1_agreement,
                   options.min_top1);
  s += fmt::format("  max |logit diff|    {:.3e}\n", max_abs_logit_diff);
  s += fmt::format("  loss                {:.9f} over {} tokens", loss, loss_tokens);
  if (loss_ref) s += fmt::format("; reference {:.9f} (from {})", *loss_ref, loss_ref_source);
  s += "\n";
  if (lse_sq_mean) {
    s += fmt::format("  mean lse^2          {:.9f}", *lse_sq_mean);
    if (lse_sq_mean_ref)
      s += fmt::format("; reference {:.9f} (from {})", *lse_sq_mean_ref, lse_sq_mean_ref_source);
    s += "\n";
  }
  if (options.z_loss_multiplier > 0 && lse_sq_mean) {
    s += fmt::format("  objective           {:.9f} = CE + {:g} x mean lse^2 (the gradient's)",
                     loss + options.z_loss_multiplier * *lse_sq_mean, options.z_loss_multiplier);
    if (loss_ref && lse_sq_mean_ref)
      s += fmt::format("; reference {:.9f}",
                       *loss_ref + options.z_loss_multiplier * *lse_sq_mean_ref);
    s += "\n";
  }
  if (grad_max_rel_err) {
    s += fmt::format("  grad max rel err    {:.3e} ({})   (max allowed {:.1e}; per tensor, "
                     "denominator at least {:.3e} = {:g} x the whole gradient's norm)\n",
                     *grad_max_rel_err, grad_worst_tensor, options.max_grad_rel, grad_rel_floor,
                     options.grad_floor);
    if (grad_global_rel_err)
      s += fmt::format("  grad rel err        {:.3e} (whole gradient)   (max allowed {:.1e})\n",
                       *grad_global_rel_err, options.max_grad_rel);
  }
  if (!input.empty()) s += fmt::format("  input               {}\n", input);
  s += pass ? "PASS\n" : "FAIL\n";
  if (!hint.empty()) s += fmt::format("hint: {}\n", hint);
  return s;
}

}  // namespace replica
