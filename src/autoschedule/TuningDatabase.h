// The tuning database: the best schedule found per algorithm (names aside), shapes, target,
// threads and weft build, in a text file that processes share.
//
// One record a line, appended with a single write (O_APPEND), so that concurrent processes
// never interleave within a record: "<key hash> <candidate> <measured ms> <predicted ms>
// <checksum>", the candidate written "rank/planned". A schedule is stored as the rank of the
// planner's candidate that won among as many as it was asked for (the
// planner is deterministic for a key), which reproduces it exactly, whatever the Funcs and
// Vars are called. The file starts with a header line; a file with another header (foreign)
// is never read or written, a damaged line is skipped; either is reported once on stderr.
#pragma once
#include <string>

namespace weft {
namespace internal {

struct TuningRecord {
    int candidate = 0;
    int planned = 1;  // how many candidates the planner was asked for (their order depends on it)
    double measured_ms = 0;  // NaN: not measured (cost model only)
    double predicted_ms = 0;
};

/** The database path to use: `option` if set, else WEFT_TUNING_DB (where it is not "off", "OFF",
    "0" or "none"), else "" (none). */
std::string tuning_database_path(const std::string &option);
/** The best record for key (the fastest measured, else the latest); false if none. */
bool tuning_lookup(const std::string &path, const std::string &key, TuningRecord *out);
/** Appends a record; false (reported once) where the file cannot be written. */
bool tuning_store(const std::string &path, const std::string &key, const TuningRecord &r);
/** A short stable hash of a long key text (hex). */
std::string tuning_key_hash(const std::string &text);

}  // namespace internal
}  // namespace weft
