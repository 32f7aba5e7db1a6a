// weft public API: automatic scheduling (Pipeline::auto_schedule).
#pragma once
#include <functional>
#include <limits>
#include <string>

namespace weft {

/** Where a search stands, for AutoScheduleOptions::progress. */
struct AutoScheduleProgress {
    int candidates_measured = 0;
    /** The best measured time so far (NaN before the first measurement). */
    double best_ms = std::numeric_limits<double>::quiet_NaN();
    double elapsed_seconds = 0;
    /** elapsed_seconds / budget_seconds, at most 1. */
    double budget_fraction = 0;
};

/** How Pipeline::auto_schedule works. A plain struct: set the fields one by one. */
struct AutoScheduleOptions {
    /** 0: the cost model alone, nothing is run. Above 0: candidates may be compiled and timed
        on this machine for at most this much wall-clock time (compiles included); the best
        found when time is up is kept. */
    double budget_seconds = 0;
    /** The tuning database's path; empty: WEFT_TUNING_DB, else none. */
    std::string database;
    /** The threads the schedule is for; 0: the thread pool's size (WEFT_NUM_THREADS). */
    int threads = 0;
    /** Called during a search (after each measurement). */
    std::function<void(const AutoScheduleProgress &)> progress;
};

/** What Pipeline::auto_schedule chose. */
struct AutoScheduleResult {
    /** C++ statements with the public schedule calls that, pasted after the algorithm, give
        exactly the schedule chosen. */
    std::string schedule_source;
    /** The cost model's time for one call at the estimated shapes. */
    double predicted_ms = 0;
    /** The best measured time (NaN where nothing ran). */
    double measured_ms = std::numeric_limits<double>::quiet_NaN();
    int candidates_measured = 0;
    /** The schedule came from the tuning database (no search). */
    bool from_database = false;
};

}  // namespace weft
