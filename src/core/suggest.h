// "Did you mean ...?" for misspelt names (subcommands, options, config keys): the edit distance of
// two words and the closest of a list of candidates.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replica {

// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions of
// two adjacent characters each cost 1 ("trian" -> "train" is 1).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, if it is near enough to be a likely misspelling: distance at
// most 1 for words of up to 3 characters, 2 up to 8, 3 beyond; or `word` a prefix of the
// candidate of at least 3 characters. Ties go to the earliest candidate. nullopt when none is near
// or `word` is itself a candidate.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates);

}  // namespace replica
