// weft public API: a pipeline's schedule as a value.
#pragma once
#include <memory>
#include <string>

namespace weft {

namespace internal {
struct PipelineSchedule;
}

/** The schedule of every Func of a pipeline, apart from the algorithm: where each Func is
    computed and stored, and each stage's splits, loop order and loop types, specializations,
    prefetches and the rest. Funcs are named by their names within the pipeline (a second
    Func called "f" is "f$2").

    A Schedule is a value: cheap to copy, compared with ==, written as text with to_string()
    and read back exactly with from_string() (a tuning database's form), and printed with
    cpp_source() as the C++ schedule calls that give it. Get one with Pipeline::get_schedule()
    and put one on a pipeline with the same algorithm with Pipeline::apply_schedule(). */
class Schedule {
public:
    /** The empty schedule (no Funcs). */
    Schedule();
    explicit Schedule(std::shared_ptr<const internal::PipelineSchedule> v);
    /** Reads to_string()'s text; throws weft::Error naming the line of anything else. */
    static Schedule from_string(const std::string &text);
    std::string to_string() const;
    /** C++ statements: Var and RVar declarations for the loops the calls name, then one
        schedule call a line (Funcs by their names made C++ identifiers, "f$2" -> f_2). */
    std::string cpp_source() const;
    bool operator==(const Schedule &o) const;
    bool operator!=(const Schedule &o) const { return !(*this == o); }
    const internal::PipelineSchedule &value() const { return *v_; }

private:
    std::shared_ptr<const internal::PipelineSchedule> v_;
};

}  // namespace weft
