#include "run/metrics_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"

namespace fs = std::filesystem;

namespace replica {

nlohmann::json EncodeNonFinite(const nlohmann::json& j) {
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return j;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[k] = EncodeNonFinite(v);
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(EncodeNonFinite(v));
    return out;
  }
  return j;
}

namespace {

// The lines of an existing metrics file with step <= keep_through, verbatim.
std::string KeptLines(const std::string& path, int64_t keep_through) {
  const std::string text = ReadFile(path);
  std::string kept;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool torn = nl == std::string::npos;
    const size_t end = torn ? text.size() : nl;
    std::string_view line(text.data() + pos, end - pos);
    ++line_no;
    pos = torn ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const bool ok = !j.is_discarded() && j.is_object() && j.contains("step") &&
                    j["step"].is_number_integer();
    if (!ok) {
      if (torn) {  // the process was killed while writing its last line
        REPLICA_LOG_WARN("{}:{}: dropping a torn last line", path, line_no);
        continue;
      }
      Fail("{}:{}: not a JSON object with an integer \"step\"", path, line_no);
    }
    if (j["step"].get<int64_t>() <= keep_through) {
      kept.append(line);
      kept.push_back('\n');
    }
  }
  return kept;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& run_dir, std::optional<int64_t> resume_step)
    : path_((fs::path(run_dir) / kMetricsFile).string()) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  Require(!ec, "{}: cannot create run directory: {}", run_dir, ec.message());
  std::string kept;
  if (resume_step && fs::exists(path_, ec)) kept = KeptLines(path_, *resume_step);
  if (!resume_step && fs::is_regular_file(path_, ec) && fs::file_size(path_, ec) > 0 && !ec) {
    for (int n = 1;; ++n) {
      const std::string aside = path_ + "." + std::to_string(n);
      if (fs::exists(fs::symlink_status(aside, ec))) continue;
      fs::rename(path_, aside, ec);
      Require(!ec, "{}: cannot move the earlier metrics aside to {}: {}", path_, aside,
              ec.message());
      moved_aside_ = aside;
      break;
    }
  }
  WriteFileAtomic(path_, kept);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) Fail("{}: cannot open for appending: {}", path_, std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsWriter::Write(const nlohmann::json& line) {
  Require(line.is_object() && line.contains("step") && line["step"].is_number_integer() &&
              line["step"].get<int64_t>() >= 0,
          "{}: a metrics line needs a non-negative integer \"step\"", path_);
  std::string text =
      EncodeNonFinite(line).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail("{}: write failed: {}", path_, std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace replica
