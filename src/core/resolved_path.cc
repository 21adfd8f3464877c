#include "core/resolved_path.h"

namespace fs = std::filesystem;

namespace replica {

fs::path ResolvedPath(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  for (int links = 0; links < 40; ++links) {
    // The longest leading part that exists (links followed), and the first part that does not.
    fs::path prefix;
    auto it = p.begin();
    for (; it != p.end(); ++it) {
      const fs::path next = prefix / *it;
      if (!fs::exists(fs::status(next, ec))) break;
      prefix = next;
    }
    if (it == p.end()) break;
    const fs::path missing = prefix / *it;
    if (!fs::is_symlink(fs::symlink_status(missing, ec))) break;
    const fs::path target = fs::read_symlink(missing, ec);
    if (ec) break;
    fs::path rest;
    for (++it; it != p.end(); ++it) rest /= *it;
    p = target.is_absolute() ? target : prefix / target;
    if (!rest.empty()) p /= rest;
  }
  const fs::path resolved = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : resolved;
}

}  // namespace replica
