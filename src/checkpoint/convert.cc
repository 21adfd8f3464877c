#include "checkpoint/convert.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/finite.h"
#include "core/progress.h"
#include "core/resolved_path.h"
#include "io/safetensors.h"
#include "tokenizer/tokenizer_dolma2.h"
#include "tokenizer/tokenizer_hf_export.h"
#include "tokenizer/tokenizer_registry.h"
#include "hf/hf_checkpoint.h"
#include "model/model_config.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

bool IsHfDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / kConfigFile, ec) && !fs::exists(p / kManifestFile, ec) &&
         (fs::exists(p / HfCheckpoint::kSingleFile, ec) ||
          fs::exists(p / HfCheckpoint::kIndexFile, ec));
}

bool IsCheckpointOrRunDir(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p / kManifestFile, ec) || fs::exists(p / kDoneFile, ec) ||
         fs::is_directory(p / kCheckpointsSubdir, ec);
}

bool IsShardName(const std::string& name) {  // model-00001-of-00003.safetensors
  static const std::regex shard(R"(model-[0-9]{5,}-of-[0-9]{5,}\.safetensors)");
  return std::regex_match(name, shard);
}

// What an export writes into its directory.
bool IsExportFile(const std::string& name) {
  return name == kConfigFile || name == HfCheckpoint::kSingleFile ||
         name == HfCheckpoint::kIndexFile || IsShardName(name) ||
         name == "generation_config.json" || name == "tokenizer.json" ||
         name == "tokenizer_config.json" || name == "special_tokens_map.json";
}

// What an import writes: a weights-only checkpoint.
bool IsImportFile(const std::string& name) {
  return name == kModelFile || name == kConfigFile || name == kManifestFile || name == kDoneFile;
}

// What an import with optimizer and trainer state writes (a weights-only import never replaces
// such a checkpoint).
bool IsResumableImportFile(const std::string& name) {
  return IsImportFile(name) || name == kOptimFile || name == kStateFile;
}

// The optimizer and trainer state an import carries over: `from`/optim.safetensors (F32
// m.<name> and v.<name> for every tensor of the layout, I64 scalar `step`) with
// `from`/state.json (the trainer state, docs/checkpoints.md). Neither present: a weights-only
// import. One without the other, a missing, misshapen or unexpected tensor, or a state whose
// adam_step is not the file's step is an Error naming the file.
struct ImportedOptimizer {
  FlatBuffer m, v;
  int64_t step = 0;
  nlohmann::json state;
};

std::optional<ImportedOptimizer> ReadImportOptimizer(const fs::path& from,
                                                     const ParamLayout& layout) {
  std::error_code ec;
  const fs::path optim_path = from / kOptimFile, state_path = from / kStateFile;
  const bool has_optim = fs::exists(optim_path, ec), has_state = fs::exists(state_path, ec);
  if (!has_optim && !has_state) return std::nullopt;
  Require(has_optim && has_state, "{}: missing; {} imports only together with {}",
          (has_optim ? state_path : optim_path).string(),
          (has_optim ? optim_path : state_path).string(),
          (has_optim ? state_path : optim_path).filename().string());
  ImportedOptimizer r;
  r.m = FlatBuffer(layout.total_floats());
  r.v = FlatBuffer(layout.total_floats());
  const SafetensorsFile f = SafetensorsFile::Open(optim_path.string());
  for (const auto& [prefix, buf] : {std::pair{"m.", &r.m}, std::pair{"v.", &r.v}}) {
    for (const ParamView& v : layout.views()) {
      const std::string name = prefix + v.name;
      const TensorInfo* t = f.Find(name);
      Require(t != nullptr, "{}: missing tensor '{}'", optim_path.string(), name);
      Require(t->dtype == DType::kF32 && t->shape == v.shape,
              "{}: tensor '{}' is {} {}, expected F32 {}", optim_path.string(), name,
              DTypeName(t->dtype), ShapeString(t->shape), ShapeString(v.shape));
      f.ReadF32Into(name, buf->data() + v.offset, v.numel);
      RequireFiniteTensor(buf->data() + v.offset, static_cast<size_t>(v.numel),
                          optim_path.string(), name);
    }
  }
  const TensorInfo& st = f.Get("step");
  Require(st.dtype == DType::kI64 && st.numel() == 1, "{}: tensor 'step' must be an I64 scalar",
          optim_path.string());
  r.step = f.ReadI64("step")[0];
  for (const TensorInfo& t : f.tensors()) {
    const bool known = t.name == "step" ||
                       ((t.name.rfind("m.", 0) == 0 || t.name.rfind("v.", 0) == 0) &&
                        layout.Find(t.name.substr(2)) != nullptr);
    Require(known, "{}: unexpected tensor '{}'", optim_path.string(), t.name);
  }
  const std::string state_text = ReadFile(state_path.string());
  r.state = nlohmann::json::parse(state_text, nullptr, /*allow_exceptions=*/false);
  Require(r.state.is_object() && r.state.value("format", "") == "replica-train-state",
          "{}: not a replica trainer state (a JSON object with \"format\": "
          "\"replica-train-state\")",
          state_path.string());
  Require(r.state.contains("step") && r.state["step"].is_number_integer() &&
              r.state["step"].get<int64_t>() >= 0,
          "{}: field 'step': expected a non-negative integer", state_path.string());
  Require(r.state.contains("adam_step") && r.state["adam_step"].is_number_integer() &&
              r.state["adam_step"].get<int64_t>() == r.step,
          "{}: field 'adam_step' must equal the step tensor of {} ({})", state_path.string(),
          optim_path.string(), r.step);
  return r;
}

// `--to` may be written when it does not exist, is an empty directory, or holds only what this
// direction of convert writes (re-running a convert); anything else is refused, naming an entry
// that convert did not write, so a training checkpoint or an unrelated directory is never touched.
void RequireWritableDestination(const std::string& to, bool (*own_file)(const std::string&),
                                const char* what) {
  std::error_code ec;
  const fs::file_status st = fs::status(to, ec);
  if (st.type() == fs::file_type::not_found) return;
  Require(!ec, "--to {}: cannot inspect: {}", to, ec.message());
  Require(st.type() == fs::file_type::directory, "--to {}: exists and is not a directory", to);
  fs::directory_iterator it(to, ec);
  Require(!ec, "--to {}: cannot list: {}", to, ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    Require(!ec, "--to {}: cannot list: {}", to, ec.message());
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    Require(it->is_regular_file(type_ec) && own_file(name),
            "--to {}: exists and holds '{}', which convert does not write: refusing to write {} "
            "into it (give a new or empty directory, or an earlier output of the same convert)",
            to, name, what);
  }
}

// A run's checkpoints/ folder belongs to its trainer: a directory converted into it would be taken
// for the run's own checkpoint on resume, or pruned by the next save. Both the path as written and
// where it leads (symbolic links followed: a link to the folder, or to a step directory not
// written yet) are checked; a link placed inside the folder is taken for a checkpoint as well.
void RequireOutsideRunCheckpoints(const std::string& to) {
  for (const fs::path& dir : {ResolvedPath(to), fs::absolute(to).lexically_normal()}) {
    const fs::path parent = (dir.has_filename() ? dir : dir.parent_path()).parent_path();
    Require(parent.filename() != kCheckpointsSubdir,
            "--to {}: inside a run's checkpoint folder {}; the run's next `replica train` would "
            "resume from it or delete it. Convert elsewhere and point init.from_checkpoint at it",
            to, parent.string());
  }
}

// Progress of a convert in megabytes: what it reads (fp32 floats) and then writes.
class ConvertProgress {
 public:
  ConvertProgress(bool enabled, uint64_t read_bytes, uint64_t write_bytes)
      : read_(read_bytes),
        meter_("convert", "MB", Mb(read_bytes + write_bytes), enabled) {}
  void Read(uint64_t bytes, const std::string& from) { meter_.Update(Mb(bytes), "reading " + from); }
  void Written(uint64_t bytes, const std::string& to) {
    meter_.Update(Mb(read_ + bytes), "writing " + to);
  }
  void Finish(const std::string& to) { meter_.Finish("wrote " + to); }

 private:
  static int64_t Mb(uint64_t bytes) { return static_cast<int64_t>((bytes + 500000) / 1000000); }
  uint64_t read_;
  ProgressMeter meter_;
};

void RequireDistinct(const std::string& from, const std::string& to) {
  std::error_code ec;
  Require(!to.empty(), "--to: empty path");
  Require(!(fs::exists(to, ec) && fs::equivalent(from, to, ec)),
          "--to: {} is the source directory", to);
}

ConvertResult Export(const ConvertOptions& o) {
  Require(o.dtype == DType::kF32 || o.dtype == DType::kBF16,
          "--dtype: export writes f32 or bf16, not {}", DTypeName(o.dtype));
  std::error_code ec;
  Require(!IsCheckpointOrRunDir(o.to), "--to: {} is a checkpoint or run directory; refusing to "
                                      "write a Hugging Face directory into it", o.to);
  RequireOutsideRunCheckpoints(o.to);
  // Everything is read before anything is written; a run directory's newest checkpoint may be
  // pruned meanwhile, then the newest is read again.
  CheckpointInfo info;
  ModelConfig config;
  FlatBuffer params;
  std::unique_ptr<ConvertProgress> progress;
  ReadNewestCheckpoint(o.from, [&](const CheckpointInfo& found) {
    info = found;
    RequireDistinct(info.dir, o.to);
    RequireWritableDestination(o.to, IsExportFile, "a Hugging Face directory");
    Checkpoint ckpt = Checkpoint::Open(info.dir, /*verify=*/false);  // ResolveCheckpoint verified
    const std::string config_path = (fs::path(info.dir) / kConfigFile).string();
    Require(!ckpt.model_config().is_null(),
            "{}: missing: the checkpoint carries no model config to export", config_path);
    config = ModelConfig::FromHfJson(ckpt.model_config(), config_path);
    const ParamLayout read_layout = config.BuildLayout();
    params = FlatBuffer(read_layout.total_floats());
    progress = std::make_unique<ConvertProgress>(
        o.progress, 4 * read_layout.total_floats(),
        read_layout.num_elements() * (o.dtype == DType::kBF16 ? 2 : 4));
    ckpt.LoadParams(read_layout, params, [&](size_t floats) {  // name, shape and dtype checks
      progress->Read(4 * floats, info.dir);
    });
  });
  const ParamLayout layout = config.BuildLayout();
  // bf16 ends at 3.3895e38: a larger fp32 weight would be stored as ±Inf, which readers refuse.
  if (o.dtype == DType::kBF16) {
    for (const ParamView& v : layout.views()) {
      const float* p = params.data() + v.offset;
      if (const auto bad = FirstBf16Overflow(p, v.numel))
        Fail("--dtype bf16: {}: tensor '{}' holds {:g} at element {} (of {}), beyond bf16's range "
             "(largest finite 3.3895e+38): it would be stored as {}inf. Export with --dtype f32",
             info.dir, v.name, p[*bad], *bad, v.numel, p[*bad] < 0 ? "-" : "");
    }
  }

  // The tokenizer is resolved and checked before anything is written.
  std::string tokenizer = o.tokenizer;
  if (tokenizer == "auto") {
    tokenizer = config.vocab_size >= static_cast<int64_t>(kDolma2VocabSize) ? "dolma2" : "none";
  }
  const Tokenizer* tok = tokenizer == "none" ? nullptr : &SharedTokenizer(tokenizer);
  Require(!tok || static_cast<int64_t>(tok->vocab_size()) <= config.vocab_size,
          "--tokenizer {}: {} ids do not fit the model's vocabulary of {}", tokenizer,
          tok ? tok->vocab_size() : 0, config.vocab_size);

  HfCheckpointWriter writer(o.max_shard_bytes);
  for (const ParamView& v : layout.views())
    writer.AddF32(v.name, v.shape, params.data() + v.offset, o.dtype);
  ConvertResult r;
  r.direction = ConvertDirection::kCheckpointToHf;
  r.source = info.dir;
  r.step = info.step;
  r.tensors = static_cast<int64_t>(layout.views().size());
  r.parameters = static_cast<int64_t>(layout.num_elements());
  fs::create_directories(o.to, ec);
  Require(!ec, "{}: cannot create directory: {}", o.to, ec.message());
  r.files = writer.Write(o.to, [&](uint64_t bytes) { progress->Written(bytes, o.to); });
  nlohmann::json hf = config.ToHfDirectoryJson();
  hf["torch_dtype"] = o.dtype == DType::kBF16 ? "bfloat16" : "float32";
  WriteFileAtomic((fs::path(o.to) / kConfigFile).string(), hf.dump(2) + "\n");
  r.files.push_back(kConfigFile);
  nlohmann::ordered_json gen = {{"_from_model_config", true}};
  if (config.bos_token_id >= 0) gen["bos_token_id"] = config.bos_token_id;
  if (config.eos_token_id >= 0) gen["eos_token_id"] = config.eos_token_id;
  if (config.pad_token_id >= 0) gen["pad_token_id"] = config.pad_token_id;
  WriteFileAtomic((fs::path(o.to) / "generation_config.json").string(), gen.dump(2) + "\n");
  r.files.push_back("generation_config.json");
  if (tok) {
    const int64_t max_len = config.max_position_embeddings > 0 ? config.max_position_embeddings : 8192;
    for (const std::string& f : WriteHfTokenizerFiles(*tok, o.to, max_len)) r.files.push_back(f);
  }
  progress->Finish(o.to);
  return r;
}

ConvertResult Import(const ConvertOptions& o) {
  Require(o.dtype == DType::kF32, "--dtype: checkpoints hold f32 weights; import with --dtype f32");
  RequireDistinct(o.from, o.to);
  RequireOutsideRunCheckpoints(o.to);
  std::error_code ec;
  const bool resumable = fs::exists(fs::path(o.from) / kOptimFile, ec) ||
                         fs::exists(fs::path(o.from) / kStateFile, ec);
  RequireWritableDestination(o.to, resumable ? IsResumableImportFile : IsImportFile,
                             resumable ? "an imported checkpoint" : "a weights-only checkpoint");
  const std::string config_path = (fs::path(o.from) / kConfigFile).string();
  const ModelConfig config = ModelConfig::FromHfFile(config_path);
  const ParamLayout layout = config.BuildLayout();
  HfCheckpoint hf = HfCheckpoint::Open(o.from);
  FlatBuffer params(layout.total_floats());
  ConvertProgress progress(o.progress, 4 * layout.total_floats(), 4 * layout.total_floats());
  for (const ParamView& v : layout.views()) {
    const TensorInfo* t = hf.Find(v.name);
    Require(t != nullptr, "{}: missing tensor '{}' required by {}", o.from, v.name, config_path);
    Require(t->shape == v.shape, "{}: tensor '{}' has shape {}, {} implies {}", hf.FileOf(v.name),
            v.name, ShapeString(t->shape), config_path, ShapeString(v.shape));
    hf.ReadF32Into(v.name, params.data() + v.offset, v.numel);
    RequireFiniteTensor(params.data() + v.offset, static_cast<size_t>(v.numel), hf.FileOf(v.name),
                        v.name);
    progress.Read(4 * (v.offset + v.numel), o.from);
  }
  for (const TensorInfo* t : hf.tensors())
    Require(layout.Find(t->name) != nullptr, "{}: unexpected tensor '{}' (not part of the model "
                                             "{} describes)", hf.FileOf(t->name), t->name,
            config_path);

  const std::optional<ImportedOptimizer> optim = ReadImportOptimizer(o.from, layout);

  CheckpointContents c;
  c.step = 0;
  c.layout = &layout;
  c.params = params.data();
  c.model_config = config.ToHfJson();
  if (optim) {
    c.step = optim->state["step"].get<int64_t>();
    c.adam_m = optim->m.data();
    c.adam_v = optim->v.data();
    c.adam_step = optim->step;
    c.state = optim->state;
  }
  progress.Written(0, o.to);
  WriteCheckpointDir(fs::absolute(o.to).lexically_normal().string(), c);
  progress.Finish(o.to);
  ConvertResult r;
  r.direction = ConvertDirection::kHfToCheckpoint;
  r.source = o.from;
  r.tensors = static_cast<int64_t>(layout.views().size());
  r.parameters = static_cast<int64_t>(layout.num_elements());
  r.files = {kModelFile, kConfigFile, kManifestFile, kDoneFile};
  if (optim) r.files.insert(r.files.begin() + 1, {kOptimFile, kStateFile});
  r.step = c.step;
  return r;
}

}  // namespace

ConvertResult Convert(const ConvertOptions& o) {
  std::error_code ec;
  Require(fs::is_directory(o.from, ec), "--from: {}: no such directory", o.from);
  const fs::path from(o.from);
  if (IsCheckpointOrRunDir(from)) return Export(o);
  if (IsHfDir(from)) return Import(o);
  Fail("--from: {} is neither a checkpoint/run directory (MANIFEST.json or checkpoints/) nor a "
       "Hugging Face directory (config.json + model.safetensors or {})",
       o.from, HfCheckpoint::kIndexFile);
}

}  // namespace replica
