// The tuning database (see TuningDatabase.h).
#include "autoschedule/TuningDatabase.h"
#include <fcntl.h>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

namespace weft {
namespace internal {

namespace {

const char *kHeader = "weft-tuning-db 2";

uint64_t fnv1a(const std::string &s, uint64_t h) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}
std::string hex(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
    return b;
}

/** Each problem is said once per file and kind. */
void report_once(const std::string &path, const std::string &what) {
    static std::mutex mu;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> l(mu);
    if (!said.insert(path + "|" + what).second) return;
    std::cerr << "weft: tuning database \"" << path << "\": " << what << "\n";
}

std::string record_body(const std::string &key, const TuningRecord &r) {
    std::ostringstream o;
    o.precision(17);
    o << key << " " << r.candidate << "/" << r.planned << " ";
    if (std::isnan(r.measured_ms)) o << "nan";
    else o << r.measured_ms;
    o << " " << r.predicted_ms;
    return o.str();
}

/** Is the file absent or empty (true), ours (true), or foreign (false)? */
bool header_ok(const std::string &path, bool *empty) {
    std::ifstream in(path);
    *empty = true;
    if (!in) return true;
    std::string first;
    if (!std::getline(in, first)) return true;
    *empty = false;
    return first == kHeader;
}

}  // namespace

std::string tuning_database_path(const std::string &option) {
    if (!option.empty()) return option;
    const char *e = std::getenv("WEFT_TUNING_DB");
    std::string v = e ? e : "";
    // (As WEFT_CACHE_DIR: these turn it off rather than name a file.)
    if (v == "off" || v == "OFF" || v == "0" || v == "none") return "";
    return v;
}

std::string tuning_key_hash(const std::string &text) {
    return hex(fnv1a(text, 14695981039346656037ull)) + hex(fnv1a(text, 0x9e3779b97f4a7c15ull));
}

bool tuning_lookup(const std::string &path, const std::string &key, TuningRecord *out) {
    if (path.empty()) return false;
    std::ifstream in(path);
    if (!in) return false;
    std::string line;
    if (!std::getline(in, line)) return false;
    if (line != kHeader) {
        report_once(path, "not a weft tuning database (its first line is not \"" + std::string(kHeader) + "\"): ignored");
        return false;
    }
    bool found = false;
    while (std::getline(in, line)) {
        auto sp = line.rfind(' ');
        if (sp == std::string::npos) {
            if (!line.empty()) report_once(path, "a damaged record was skipped");
            continue;
        }
        std::string body = line.substr(0, sp), sum = line.substr(sp + 1);
        if (tuning_key_hash(body).substr(0, 16) != sum) {
            report_once(path, "a damaged record was skipped");
            continue;
        }
        std::istringstream is(body);
        std::string k, measured;
        TuningRecord r;
        char slash = 0;
        if (!(is >> k >> r.candidate >> slash >> r.planned >> measured >> r.predicted_ms) || slash != '/' ||
            r.candidate < 0 || r.planned <= r.candidate || r.planned > 1000) {
            report_once(path, "a damaged record was skipped");
            continue;
        }
        if (k != key) continue;
        r.measured_ms = measured == "nan" ? NAN : std::strtod(measured.c_str(), nullptr);
        // The fastest measured wins; an unmeasured record only replaces another unmeasured one.
        bool better = !found || (!std::isnan(r.measured_ms) && (std::isnan(out->measured_ms) || r.measured_ms < out->measured_ms)) ||
                      (std::isnan(r.measured_ms) && std::isnan(out->measured_ms));
        if (better) *out = r;
        found = true;
    }
    return found;
}

bool tuning_store(const std::string &path, const std::string &key, const TuningRecord &r) {
    if (path.empty()) return false;
    bool empty = true;
    if (!header_ok(path, &empty)) {
        report_once(path, "not a weft tuning database (its first line is not \"" + std::string(kHeader) + "\"): not written");
        return false;
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        report_once(path, "cannot be written");
        return false;
    }
    std::string body = record_body(key, r);
    std::string text = body + " " + tuning_key_hash(body).substr(0, 16) + "\n";
    // A new file gets its header, written with the first record in one write; if two processes
    // create it at once, the second header is a damaged line that readers skip.
    if (empty) {
        off_t end = ::lseek(fd, 0, SEEK_END);
        if (end == 0) text = std::string(kHeader) + "\n" + text;
    }
    bool ok = ::write(fd, text.data(), text.size()) == (ssize_t)text.size();
    ::close(fd);
    if (!ok) report_once(path, "a record could not be written");
    return ok;
}

}  // namespace internal
}  // namespace weft
