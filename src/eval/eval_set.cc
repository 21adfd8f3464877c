#include "eval/eval_set.h"

#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/regular_file.h"

namespace replica::eval {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string DecompressZstd(const std::string& raw, const std::string& path) {
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  Require(ds != nullptr, "{}: cannot create a zstd decoder", path);
  ZSTD_initDStream(ds.get());
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{raw.data(), raw.size(), 0};
  size_t last = 0;
  while (in.pos < in.size) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ds.get(), &ob, &in);
    Require(!ZSTD_isError(last), "{}: corrupt zstd data ({})", path, ZSTD_getErrorName(last));
    out.append(buf.data(), ob.pos);
  }
  // Flush whatever the decoder still holds once the input is consumed.
  while (last != 0) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ds.get(), &ob, &in);
    Require(!ZSTD_isError(last), "{}: corrupt zstd data ({})", path, ZSTD_getErrorName(last));
    if (ob.pos == 0 && last != 0) Fail("{}: truncated zstd stream", path);
    out.append(buf.data(), ob.pos);
  }
  return out;
}

std::string DecompressGzip(const std::string& path) {
  const int fd = OpenRegularFileForReading(path);  // a FIFO would block gzopen()
  gzFile f = gzdopen(fd, "rb");
  if (f == nullptr) {
    ::close(fd);
    Fail("{}: cannot open: {}", path, std::strerror(errno));
  }
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  // The message lives in the gzFile: copy it before gzclose() frees it. It starts with the
  // stream's name, "<fd:N>: " for gzdopen(); the path is in our message already.
  std::string reason = msg != nullptr && *msg != '\0' ? msg : "?";
  if (reason.rfind("<fd:", 0) == 0 && reason.find(">: ") != std::string::npos)
    reason = reason.substr(reason.find(">: ") + 3);
  gzclose(f);
  Require(n == 0 && err == Z_OK, "{}: corrupt gzip data ({})", path, reason);
  return out;
}

std::string IdOf(const nlohmann::json& j, const std::string& where) {
  auto it = j.find("id");
  Require(it != j.end(), "{}: missing field \"id\"", where);
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  Fail("{}: field \"id\" must be a string or an integer", where);
}

PplDoc ParseDoc(const nlohmann::json& j, const std::string& where) {
  PplDoc d;
  d.id = IdOf(j, where);
  auto text = j.find("text");
  auto tokens = j.find("tokens");
  Require((text != j.end()) != (tokens != j.end()),
          "{}: a perplexity document needs exactly one of \"text\" or \"tokens\"", where);
  if (text != j.end()) {
    Require(text->is_string(), "{}: field \"text\" must be a string", where);
    d.text = text->get<std::string>();
    Require(!d.text.empty(), "{}: document \"{}\" has an empty \"text\"", where, d.id);
  } else {
    Require(tokens->is_array() && !tokens->empty(),
            "{}: field \"tokens\" must be a non-empty array of token ids", where);
    for (const auto& t : *tokens) {
      Require(t.is_number_integer() && t.get<int64_t>() >= 0 && t.get<int64_t>() < (1LL << 31),
              "{}: field \"tokens\" holds a value that is not a token id in [0, 2^31)", where);
      d.tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  return d;
}

McItem ParseItem(const nlohmann::json& j, const std::string& where) {
  McItem m;
  m.id = IdOf(j, where);
  auto ctx = j.find("context");
  Require(ctx != j.end() && ctx->is_string(), "{}: field \"context\" must be a string", where);
  m.context = ctx->get<std::string>();
  auto ch = j.find("choices");
  Require(ch != j.end() && ch->is_array(), "{}: field \"choices\" must be an array of strings", where);
  for (const auto& c : *ch) {
    Require(c.is_string(), "{}: field \"choices\" must be an array of strings", where);
    m.choices.push_back(c.get<std::string>());
    Require(!m.choices.back().empty(), "{}: item \"{}\" has an empty choice", where, m.id);
  }
  Require(m.choices.size() >= 2, "{}: item \"{}\" needs at least two choices, has {}", where, m.id,
          m.choices.size());
  auto g = j.find("gold");
  Require(g != j.end() && g->is_number_integer(), "{}: field \"gold\" must be an integer", where);
  m.gold = g->get<int64_t>();
  Require(m.gold >= 0 && m.gold < static_cast<int64_t>(m.choices.size()),
          "{}: item \"{}\" has gold {} but only {} choices", where, m.id, m.gold, m.choices.size());
  return m;
}

}  // namespace

const char* KindName(SetKind kind) {
  return kind == SetKind::kPerplexity ? "perplexity" : "multiple_choice";
}

std::string ReadTextFile(const std::string& path) {
  if (EndsWith(path, ".gz")) return DecompressGzip(path);
  std::string raw = ReadFile(path);
  if (EndsWith(path, ".zst")) return DecompressZstd(raw, path);
  return raw;
}

std::string SetNameFromPath(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char* suffix : {".zst", ".gz"}) {
    if (EndsWith(base, suffix)) base.resize(base.size() - std::string(suffix).size());
  }
  for (const char* suffix : {".jsonl", ".json"}) {
    if (EndsWith(base, suffix)) base.resize(base.size() - std::string(suffix).size());
  }
  return base;
}

EvalSet ParseEvalSet(const std::string& text, const std::string& source) {
  EvalSet set;
  set.path = source;
  set.name = SetNameFromPath(source);
  bool kind_known = false;
  std::set<std::string> ids;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    const nlohmann::json j = ParseJson(line, where);
    Require(j.is_object(), "{}: expected a JSON object", where);
    const bool is_mc = j.contains("choices") || j.contains("context");
    const SetKind kind = is_mc ? SetKind::kMultipleChoice : SetKind::kPerplexity;
    if (!kind_known) {
      set.kind = kind;
      kind_known = true;
    }
    Require(kind == set.kind, "{}: a {} line in a {} set (every line of a file must be of one kind)",
            where, KindName(kind), KindName(set.kind));
    std::string id;
    if (is_mc) {
      set.items.push_back(ParseItem(j, where));
      set.items.back().line = line_no;
      id = set.items.back().id;
    } else {
      set.docs.push_back(ParseDoc(j, where));
      set.docs.back().line = line_no;
      id = set.docs.back().id;
    }
    Require(ids.insert(id).second, "{}: duplicate id \"{}\"", where, id);
  }
  Require(set.size() > 0, "{}: the evaluation set is empty (no JSON lines)", source);
  return set;
}

EvalSet LoadEvalSet(const std::string& path) { return ParseEvalSet(ReadTextFile(path), path); }

}  // namespace replica::eval
