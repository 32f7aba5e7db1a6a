// weft::Schedule: the public handle of a PipelineSchedule (see weft/Schedule.h).
#include "lang/Schedule.h"
#include "weft/Schedule.h"

namespace weft {

using namespace internal;

Schedule::Schedule() : v_(std::make_shared<const PipelineSchedule>()) {}
Schedule::Schedule(std::shared_ptr<const PipelineSchedule> v) : v_(std::move(v)) {
    if (!v_) v_ = std::make_shared<const PipelineSchedule>();
}
Schedule Schedule::from_string(const std::string &text) {
    return Schedule(std::make_shared<const PipelineSchedule>(parse_schedule(text)));
}
std::string Schedule::to_string() const { return serialize_schedule(*v_); }
std::string Schedule::cpp_source() const { return schedule_cpp_source(*v_); }
bool Schedule::operator==(const Schedule &o) const { return *v_ == *o.v_; }

}  // namespace weft
