// The in-memory kernel cache: thread-safe, bounded (LRU), one compile per key even when
// many threads ask at once.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include "cache/Kernel.h"

namespace weft {
namespace internal {

struct CacheCounters {
    std::atomic<uint64_t> hits{0}, misses{0}, compilations{0}, generic_compilations{0}, evictions{0};
    std::atomic<uint64_t> disk_hits{0}, disk_writes{0};
    std::atomic<uint64_t> compile_us{0};  // lowering and code generation (or loading), summed
};
CacheCounters &cache_counters();

/** Returns the kernel for key, made by make() on a miss (which counts its compilations). Concurrent callers with
    the same key wait for one compile. A failed compile is not cached (its Error is rethrown
    to every waiter). */
std::shared_ptr<const CompiledKernel> cache_get(const std::string &key,
                                               const std::function<std::shared_ptr<CompiledKernel>()> &make);
/** Records that `algo` was called with shape `shape`; returns the shape's rank among the
    distinct shapes seen for algo (1 for the first). Only the first `keep` shapes of an algo
    are remembered (any other gets keep + 1), and only the algos noted last (a bound of a few
    times the cache's capacity), so the table stays bounded however many shapes come. */
size_t cache_note_shape(const std::string &algo, const std::string &shape, size_t keep);
/** How many algos' shape tables are kept now (for tests). */
size_t cache_shape_tables();
size_t cache_entries();
void cache_clear();
void cache_set_capacity(size_t n);

}  // namespace internal
}  // namespace weft
