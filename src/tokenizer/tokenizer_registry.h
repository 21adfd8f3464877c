// Turns a --tokenizer argument into a Tokenizer: "dolma2" (the bundled cl100k_base rank file, hash
// checked) or the path of a Hugging Face tokenizer.json. Bundled files are looked up in, in order:
// $REPLICA_DATA_DIR, <directory of the executable>/../data, <executable>/../share/replica/data,
// and the data/ folder of the source tree this library was built from.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace replica {

// The directories searched for bundled data, in order (existing or not).
std::vector<std::string> DataSearchDirs();
// The first existing <dir>/<name>; Error listing the directories tried.
std::string FindDataFile(std::string_view name);

// Error for an unknown name or an unloadable file.
Tokenizer LoadTokenizer(std::string_view spec);

// One loaded tokenizer per spec for the whole process (loading dolma2 takes ~0.1 s); thread-safe.
const Tokenizer& SharedTokenizer(std::string_view spec);

}  // namespace replica
