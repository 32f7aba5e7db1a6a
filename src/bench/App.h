// The benchmarking app's parts, shared by its command line (App.cpp) and its server (Server.cpp).
#pragma once
#include <string>
#include <vector>

#include "weft/bench.h"

namespace weft {
namespace bench {

std::string read_file(const std::string &path);
/** Writes text to path ("-": stdout); a weft::Error when it cannot. */
void write_file(const std::string &path, const std::string &text);
Options::Mode parse_mode(const std::string &m);
/** "name=value" items; a weft::Error for anything else or a value outside 1 .. 2^30. */
Sizes parse_sizes(const std::vector<std::string> &items);
/** N of "schedule line N: ..." in an error message, else 0. */
int schedule_error_line(const std::string &msg);
/** The table printed after a run, with warnings and mismatches under it. */
std::string results_table(const std::vector<Result> &runs);
std::string comparison_table(const std::vector<Comparison> &cs);

/** Serves the page on 127.0.0.1:port until killed; measures the machine first when asked. */
int serve(int port, bool measure_machine);
/** Reads a JSON file of runs and writes the self-contained HTML report. */
int write_report(const std::string &runs_json, const std::string &html_out);
/** Chart.js from Debian's libjs-chart.js (or WEFT_CHART_JS); a weft::Error naming the package. */
std::string chart_js();

}  // namespace bench
}  // namespace weft
