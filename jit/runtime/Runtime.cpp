// The runtime called by JIT-compiled pipelines: thread pool, memory pool, error reporting.
#include "runtime/Runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------- errors

void set_error(weft_context_t *ctx, int32_t code, const char *msg) {
    if (!ctx || ctx->error_code != 0) return;  // keep only the first error
    size_t n = std::strlen(msg);
    if (n >= sizeof(ctx->error)) n = sizeof(ctx->error) - 1;
    std::memcpy(ctx->error, msg, n);
    ctx->error[n] = 0;
    ctx->error_code = code;
}

// ---------------------------------------------------------------- thread pool

thread_local bool tl_in_task = false;

struct Job {
    weft_task_fn fn;
    void *closure;
    weft_context_t *ctx;
    int32_t min, extent;
    std::atomic<int32_t> next{0};
    std::atomic<int32_t> result{0};
    int workers_inside = 0;  // guarded by Pool::mu
};

// Guided self-scheduling: a thread claims a contiguous chunk of about a 1/(2·threads) share of
// what is left (at least one iteration). Early chunks are long, so each thread streams through
// contiguous memory (hardware prefetchers follow it) and the shared counter is touched a few
// dozen times rather than once per iteration; the last chunks are single iterations, which
// balances the load when one thread is late.
void run_job(Job *j, int num_threads) {
    const int32_t divisor = 2 * std::max(1, num_threads);
    int32_t i = j->next.load(std::memory_order_relaxed);
    while (i < j->extent) {
        int32_t chunk = std::max<int32_t>(1, (j->extent - i) / divisor);
        if (!j->next.compare_exchange_weak(i, i + chunk, std::memory_order_relaxed)) continue;  // i reloaded
        for (int32_t k = i; k < i + chunk; k++) {
            if (j->result.load(std::memory_order_relaxed) != 0) break;  // failed: skip the rest
            int32_t r = j->fn(j->ctx, (int32_t)((uint32_t)j->min + (uint32_t)k), j->closure);
            if (r != 0) {
                int32_t expected = 0;
                j->result.compare_exchange_strong(expected, r);
            }
        }
        if (j->result.load(std::memory_order_relaxed) != 0) {
            j->next.store(j->extent, std::memory_order_relaxed);  // nothing left to claim
            return;
        }
        i = j->next.load(std::memory_order_relaxed);
    }
}

struct Pool {
    std::mutex mu;
    std::condition_variable cv_work, cv_done;
    std::vector<Job *> jobs;
    std::vector<std::thread> threads;
    int num_threads = 1;

    Job *find_work() {
        for (Job *j : jobs)
            if (j->next.load(std::memory_order_relaxed) < j->extent) return j;
        return nullptr;
    }

    std::atomic<uint64_t> generation{0};  // bumped when a job is posted
    std::atomic<int> sleepers{0};

    void worker() {
        tl_in_task = true;
        std::unique_lock<std::mutex> lk(mu);
        while (true) {
            Job *j = nullptr;
            if (!(j = find_work())) {
                // Spin briefly before sleeping: pipelines called in a loop post their next
                // parallel loop within microseconds, and waking a sleeping thread costs more.
                uint64_t g = generation.load(std::memory_order_acquire);
                lk.unlock();
                for (int spin = 0; spin < 20000 && generation.load(std::memory_order_acquire) == g; spin++)
                    __builtin_ia32_pause();
                lk.lock();
                sleepers++;
                cv_work.wait(lk, [&] { return (j = find_work()) != nullptr; });
                sleepers--;
            }
            j->workers_inside++;
            lk.unlock();
            run_job(j, num_threads);
            lk.lock();
            if (--j->workers_inside == 0) cv_done.notify_all();
        }
    }
};

int env_num_threads() {
    if (const char *s = std::getenv("WEFT_NUM_THREADS")) {
        int n = std::atoi(s);
        if (n >= 1) return std::min(n, 1024);
    }
    int n = (int)std::thread::hardware_concurrency();
    return n >= 1 ? n : 1;
}

Pool &pool() {
    // Leaked on purpose: workers block forever and must outlive static destruction.
    static Pool *p = [] {
        Pool *q = new Pool;
        q->num_threads = env_num_threads();
        for (int i = 1; i < q->num_threads; i++) {
            q->threads.emplace_back([q] { q->worker(); });
        }
        return q;
    }();
    return *p;
}

// ---------------------------------------------------------------- memory pool

constexpr int kMinShift = 6;   // 64 bytes
constexpr int kMaxShift = 30;  // 1 GiB
constexpr int64_t kMaxBytes = int64_t(1) << 40;

struct MemPool {
    std::mutex mu;
    std::vector<void *> free_lists[kMaxShift + 1];  // block bases, by size class
};

constexpr size_t kHeader = 64;
constexpr uint64_t kMagic = 0x7765667462756621ull;
struct BlockHeader {
    uint64_t magic;
    int32_t cls;  // size class, or -1 for a large block freed directly
};

MemPool &mem_pool() {
    static MemPool *p = new MemPool;  // leaked: blocks may be freed during static destruction
    return *p;
}

}  // namespace

extern "C" {

int32_t weft_rt_num_threads() { return pool().num_threads; }

int32_t weft_rt_parallel_for(weft_context_t *ctx, weft_task_fn body, void *closure, int32_t min, int32_t extent) {
    if (extent <= 0) return 0;
    Pool *p = (tl_in_task || extent == 1) ? nullptr : &pool();
    if (!p || p->num_threads <= 1) {
        for (int32_t i = 0; i < extent; i++) {
            int32_t r = body(ctx, (int32_t)((uint32_t)min + (uint32_t)i), closure);
            if (r != 0) return r;
        }
        return 0;
    }
    Job job;
    job.fn = body;
    job.closure = closure;
    job.ctx = ctx;
    job.min = min;
    job.extent = extent;
    int sleeping;
    {
        std::lock_guard<std::mutex> lk(p->mu);
        p->jobs.push_back(&job);
        p->generation.fetch_add(1, std::memory_order_release);
        sleeping = p->sleepers.load();
    }
    if (sleeping > 0) {  // spinning workers see the new generation without a wake-up
        if (extent >= p->num_threads) p->cv_work.notify_all();
        else
            for (int32_t i = 1; i < extent; i++) p->cv_work.notify_one();
    }
    tl_in_task = true;
    run_job(&job, p->num_threads);
    tl_in_task = false;
    {
        std::unique_lock<std::mutex> lk(p->mu);
        p->jobs.erase(std::find(p->jobs.begin(), p->jobs.end(), &job));
        p->cv_done.wait(lk, [&] { return job.workers_inside == 0; });
    }
    return job.result.load();
}

void *weft_rt_malloc(weft_context_t *ctx, int64_t bytes) {
    if (bytes < 0 || bytes > kMaxBytes) {
        char buf[128];
        std::snprintf(buf, sizeof(buf), "allocation of %lld bytes is out of range", (long long)bytes);
        set_error(ctx, -1, buf);
        return nullptr;
    }
    MemPool &mp = mem_pool();
    int cls = kMinShift;
    while (cls <= kMaxShift && (int64_t(1) << cls) < bytes) cls++;
    if (cls <= kMaxShift) {
        std::lock_guard<std::mutex> lk(mp.mu);
        auto &fl = mp.free_lists[cls];
        if (!fl.empty()) {
            char *base = (char *)fl.back();
            fl.pop_back();
            return base + kHeader;
        }
    }
    // Each block has a 64-byte header in front of it that records its size class.
    size_t sz = cls <= kMaxShift ? (size_t(1) << cls) : (size_t)((bytes + 63) & ~int64_t(63));
    char *base = (char *)std::aligned_alloc(64, sz + kHeader);
    if (!base) {
        set_error(ctx, -1, "out of memory");
        return nullptr;
    }
    BlockHeader *h = (BlockHeader *)base;
    h->magic = kMagic;
    h->cls = cls <= kMaxShift ? cls : -1;
    return base + kHeader;
}

void weft_rt_free(weft_context_t *, void *q) {
    if (!q) return;
    char *base = (char *)q - kHeader;
    BlockHeader *h = (BlockHeader *)base;
    if (h->magic != kMagic) return;  // not ours
    if (h->cls < 0) {
        std::free(base);
        return;
    }
    MemPool &mp = mem_pool();
    std::lock_guard<std::mutex> lk(mp.mu);
    mp.free_lists[h->cls].push_back(base);
}

int32_t weft_rt_assert_fail(weft_context_t *ctx, const char *msg, const int64_t *args, int32_t nargs) {
    std::string out;
    int32_t k = 0;
    for (const char *c = msg ? msg : ""; *c; c++) {
        if (*c == '%' && k < nargs) out += std::to_string((long long)args[k++]);
        else out += *c;
    }
    set_error(ctx, -1, out.c_str());
    return -1;
}

}  // extern "C"

// ---------------- profiling ----------------
#include <chrono>
namespace {
constexpr int kMaxProfiled = 4096;
struct ProfileSlot {
    std::atomic<uint64_t> ns{0}, count{0};
};
ProfileSlot g_profile[kMaxProfiled];
constexpr int kMaxDepth = 64;
thread_local uint64_t tl_start[kMaxDepth];
thread_local int32_t tl_ids[kMaxDepth];
thread_local int tl_depth = 0;
uint64_t now_ns() {
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

extern "C" int32_t weft_rt_profile(weft_context_t *, int32_t id, int32_t begin) {
    // Exclusive time: an item's clock pauses while a nested item (a producer computed inside
    // it) runs on the same thread.
    if (id < 0 || id >= kMaxProfiled) return 0;
    uint64_t t = now_ns();
    if (begin) {
        if (tl_depth > 0 && tl_depth <= kMaxDepth)
            g_profile[tl_ids[tl_depth - 1]].ns.fetch_add(t - tl_start[tl_depth - 1], std::memory_order_relaxed);
        if (tl_depth < kMaxDepth) {
            tl_ids[tl_depth] = id;
            tl_start[tl_depth] = t;
        }
        tl_depth++;
        return 0;
    }
    if (tl_depth <= 0) return 0;
    tl_depth--;
    if (tl_depth < kMaxDepth && tl_ids[tl_depth] == id) {
        g_profile[id].ns.fetch_add(t - tl_start[tl_depth], std::memory_order_relaxed);
        g_profile[id].count.fetch_add(1, std::memory_order_relaxed);
    }
    if (tl_depth > 0 && tl_depth <= kMaxDepth) tl_start[tl_depth - 1] = t;
    return 0;
}
extern "C" void weft_rt_profile_read(int32_t id, uint64_t *ns, uint64_t *count) {
    if (id < 0 || id >= kMaxProfiled) {
        *ns = *count = 0;
        return;
    }
    *ns = g_profile[id].ns.load();
    *count = g_profile[id].count.load();
}
extern "C" void weft_rt_profile_reset() {
    for (auto &p : g_profile) {
        p.ns = 0;
        p.count = 0;
    }
}
