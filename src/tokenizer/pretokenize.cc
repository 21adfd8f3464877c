#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include "core/error.h"

namespace replica {
namespace {

constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof(buf));
  return n < 0 ? fmt::format("PCRE2 error {}", code) : std::string(reinterpret_cast<char*>(buf));
}

// Per-thread match state. Match data (one ovector pair) is pattern-independent, so one set serves
// every Pretokenizer. The JIT stack may grow to 64 MiB: backtracking over a very long whitespace or
// letter run needs more than PCRE2's 32 KiB default.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    if (data == nullptr || context == nullptr || stack == nullptr) {
      Fail("pre-tokenizer: cannot allocate PCRE2 match state");
    }
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

size_t Utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

}  // namespace

std::string OnigurumaWhitespace(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  size_t class_start = 0;  // index in p just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      if (e == 'Q') {  // \Q...\E: literal text, copied as is
        size_t end = p.find("\\E", i + 2);
        size_t stop = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, stop - i));
        i = stop - 1;
        continue;
      }
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : fmt::format("[{}]", kWhiteSpace);
      } else if (e == 'S' && !in_class) {
        out += fmt::format("[^{}]", kWhiteSpace);
      } else {
        out += c;
        out += e;
      }
      ++i;
      continue;
    }
    if (!in_class) {
      if (c == '[') {
        in_class = true;
        out += c;
        if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
        class_start = i + 1;
      } else {
        out += c;
      }
      continue;
    }
    if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class such as [:alpha:]
      size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (c == ']' && i != class_start) in_class = false;  // a ']' first in a class is literal
    out += c;
  }
  return out;
}

struct Pretokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer(std::string_view pattern, Gaps gaps)
    : pattern_(pattern), gaps_(gaps), compiled_(std::make_unique<Compiled>()) {
  std::string rewritten = OnigurumaWhitespace(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                  PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (compiled_->code == nullptr) {
    Fail("pre-tokenizer regex does not compile at offset {} of '{}': {}", offset, rewritten,
         Pcre2Message(err));
  }
  // Without JIT support (some hardened kernels) the interpreter gives the same matches, slower.
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() = default;
Pretokenizer::Pretokenizer(Pretokenizer&&) noexcept = default;
Pretokenizer& Pretokenizer::operator=(Pretokenizer&&) noexcept = default;

bool Pretokenizer::jit() const { return compiled_->jit; }

bool Pretokenizer::Next(std::string_view text, size_t* pos, std::string_view* piece) const {
  const size_t n = text.size();
  size_t search = *pos;
  ThreadMatchState& state = MatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (*pos < n) {
    int rc = search >= n ? PCRE2_ERROR_NOMATCH
             : compiled_->jit
                 ? pcre2_jit_match(compiled_->code, subject, n, search, PCRE2_NO_UTF_CHECK,
                                   state.data, state.context)
                 : pcre2_match(compiled_->code, subject, n, search, PCRE2_NO_UTF_CHECK,
                               state.data, state.context);
    size_t begin = n, end = n;
    if (rc >= 0) {
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
      begin = ov[0];
      end = ov[1];
      if (end == begin) {  // an empty match is no piece: look again one character further
        search = begin + Utf8Length(static_cast<unsigned char>(text[begin]));
        continue;
      }
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      Fail("pre-tokenizer: regex matching failed at byte {} of a {}-byte text: {}", search, n,
           Pcre2Message(rc));
    }
    if (begin > *pos && gaps_ == Gaps::kKeep) {
      *piece = text.substr(*pos, begin - *pos);
      *pos = begin;
      return true;
    }
    if (begin == n) {
      *pos = n;
      return false;
    }
    *piece = text.substr(begin, end - begin);
    *pos = end;
    return true;
  }
  return false;
}

}  // namespace replica
