// The benchmarking library's JSON forms of its values, shared by its files and its server.
#pragma once
#include <nlohmann/json.hpp>

#include "weft/bench.h"

namespace weft {
namespace bench {

nlohmann::ordered_json result_json(const Result &r);
/** Throws nlohmann's exceptions on a record of the wrong shape. */
Result result_from_json(const nlohmann::ordered_json &j);
nlohmann::ordered_json machine_json(const Machine &m);
Machine machine_from_json(const nlohmann::ordered_json &j);
/** "blur/2048x2048/default/threads:2": a run's name in Google Benchmark's files. */
std::string run_name(const Result &r);

}  // namespace bench
}  // namespace weft
