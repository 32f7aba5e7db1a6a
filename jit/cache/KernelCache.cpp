#include "cache/KernelCache.h"
#include <future>
#include <list>
#include <mutex>
#include <set>
#include <unordered_map>

namespace weft {
namespace internal {

std::atomic<int64_t> &live_kernels() {
    static std::atomic<int64_t> n{0};
    return n;
}


CacheCounters &cache_counters() {
    static CacheCounters c;
    return c;
}

namespace {
struct Slot {
    std::shared_future<std::shared_ptr<const CompiledKernel>> fut;
    std::list<std::string>::iterator lru;
    bool ready = false;
};
struct Cache {
    std::mutex m;
    std::list<std::string> lru;  // front = most recent
    std::unordered_map<std::string, Slot> map;
    struct Shapes {
        std::unordered_map<std::string, size_t> rank;
        std::list<std::string>::iterator lru;
    };
    std::unordered_map<std::string, Shapes> shapes;
    std::list<std::string> shapes_lru;  // front = most recent
    size_t capacity = 256;

    void evict_locked() {
        auto it = lru.end();
        while (map.size() > capacity && it != lru.begin()) {
            --it;
            auto s = map.find(*it);
            if (s != map.end() && s->second.ready) {
                auto victim = it++;
                map.erase(s);
                lru.erase(victim);
                cache_counters().evictions++;
            }
        }
    }
};
Cache &cache() {
    static Cache *c = new Cache;  // never destroyed: kernels may be released during exit
    return *c;
}
}  // namespace

std::shared_ptr<const CompiledKernel> cache_get(const std::string &key,
                                               const std::function<std::shared_ptr<CompiledKernel>()> &make) {
    Cache &c = cache();
    std::promise<std::shared_ptr<const CompiledKernel>> promise;
    {
        std::unique_lock<std::mutex> lock(c.m);
        auto it = c.map.find(key);
        if (it != c.map.end()) {
            cache_counters().hits++;
            c.lru.splice(c.lru.begin(), c.lru, it->second.lru);
            auto fut = it->second.fut;
            lock.unlock();
            return fut.get();
        }
        cache_counters().misses++;
        c.lru.push_front(key);
        Slot s;
        s.fut = promise.get_future().share();
        s.lru = c.lru.begin();
        c.map.emplace(key, s);
    }
    std::shared_ptr<const CompiledKernel> result;
    try {
        result = make();
    } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard<std::mutex> lock(c.m);
        auto it = c.map.find(key);
        if (it != c.map.end()) {
            c.lru.erase(it->second.lru);
            c.map.erase(it);
        }
        throw;
    }
    promise.set_value(result);
    std::lock_guard<std::mutex> lock(c.m);
    auto it = c.map.find(key);
    if (it != c.map.end()) it->second.ready = true;
    c.evict_locked();
    return result;
}

size_t cache_note_shape(const std::string &algo, const std::string &shape, size_t keep) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    auto found = c.shapes.find(algo);
    if (found == c.shapes.end()) {
        c.shapes_lru.push_front(algo);
        found = c.shapes.emplace(algo, Cache::Shapes{{}, c.shapes_lru.begin()}).first;
        size_t max_tables = std::max<size_t>(64, 4 * c.capacity);
        while (c.shapes.size() > max_tables) {
            c.shapes.erase(c.shapes_lru.back());
            c.shapes_lru.pop_back();
        }
    } else {
        c.shapes_lru.splice(c.shapes_lru.begin(), c.shapes_lru, found->second.lru);
    }
    auto &s = found->second.rank;
    auto it = s.find(shape);
    if (it != s.end()) return it->second;
    if (s.size() >= keep) return keep + 1;
    size_t rank = s.size() + 1;
    s[shape] = rank;
    return rank;
}
size_t cache_shape_tables() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    return c.shapes.size();
}
size_t cache_entries() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    return c.map.size();
}
void cache_clear() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    for (auto it = c.map.begin(); it != c.map.end();) {
        if (it->second.ready) {
            c.lru.erase(it->second.lru);
            it = c.map.erase(it);
        } else ++it;
    }
    c.shapes.clear();
    c.shapes_lru.clear();
    auto &k = cache_counters();
    k.hits = k.misses = k.compilations = k.generic_compilations = k.evictions = 0;
    k.disk_hits = k.disk_writes = 0;
}
void cache_set_capacity(size_t n) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    c.capacity = std::max<size_t>(n, 1);
    c.evict_locked();
}

}  // namespace internal
}  // namespace weft
