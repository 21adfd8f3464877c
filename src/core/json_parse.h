// Parsing JSON text with errors a user can act on: the file (or file:line of a JSONL line), the
// line and column of the fault, and what is wrong, in replica's words rather than the JSON
// library's ("[json.exception.parse_error.101] ..."); a number beyond double's range (1e400) is
// said as such, at the number.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace replica {

// "<where>:<line>:<column>: not valid JSON: <what>" for the error `e` thrown while parsing `text`;
// for text of one line (a JSONL line, `where` then names it) "<where>: not valid JSON at column
// <column>: <what>".
std::string JsonErrorMessage(const std::string& where, std::string_view text,
                             const nlohmann::json::exception& e);

// nlohmann::json::parse(text), or an Error with JsonErrorMessage.
nlohmann::json ParseJson(std::string_view text, const std::string& where);

}  // namespace replica
