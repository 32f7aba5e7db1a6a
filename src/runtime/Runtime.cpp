// The runtime called by JIT-compiled pipelines: thread pool, memory pool, error reporting.
#include "runtime/Runtime.h"
#include "weft/Float16.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif

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

// A parallel loop is split into one contiguous range per thread of the pool, thread k taking
// the k-th range (the caller is thread 0, worker i is thread i): each thread streams through
// its own part of the data, and the same part at every call, so data written by one call is
// in that thread's caches at the next (on these machines that is the difference between 0.22
// and 0.57 ms for a layer-norm of 16 MB on two threads). Iterations are claimed one at a time
// from the front of a range; a thread whose range is empty steals the back half of the fullest
// other range, which balances the load when a thread starts late or is slowed down.
struct alignas(64) Slot {
    std::atomic<uint64_t> range{0};  // next iteration in the low 32 bits, end in the high 32
};
inline uint64_t pack(uint32_t next, uint32_t end) { return (uint64_t)end << 32 | next; }
inline uint32_t next_of(uint64_t r) { return (uint32_t)r; }
inline uint32_t end_of(uint64_t r) { return (uint32_t)(r >> 32); }
inline uint32_t left_of(uint64_t r) { return next_of(r) < end_of(r) ? end_of(r) - next_of(r) : 0; }

struct Job {
    weft_task_fn fn;
    void *closure;
    weft_context_t *ctx;
    int32_t min, extent;
    std::atomic<int32_t> result{0};
    std::atomic<int> workers_inside{0};  // incremented under Pool::mu
    int num_slots = 1;
    Slot *slots = nullptr;

    bool has_work() const {
        for (int k = 0; k < num_slots; k++)
            if (left_of(slots[k].range.load(std::memory_order_relaxed))) return true;
        return false;
    }
    void cancel() {
        for (int k = 0; k < num_slots; k++) slots[k].range.store(0, std::memory_order_relaxed);
    }
    /** Claims the first iteration of slot k; false when it is empty. */
    bool claim(int k, uint32_t *i) {
        uint64_t r = slots[k].range.load(std::memory_order_relaxed);
        while (left_of(r)) {
            if (slots[k].range.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) {
                *i = next_of(r);
                return true;
            }
        }
        return false;
    }
    /** Moves the back half of the fullest other slot into slot `own` (which is empty). */
    bool steal(int own) {
        while (true) {
            int victim = -1;
            uint32_t most = 0;
            for (int k = 0; k < num_slots; k++) {
                uint32_t left = k == own ? 0 : left_of(slots[k].range.load(std::memory_order_relaxed));
                if (left > most) most = left, victim = k;
            }
            if (victim < 0) return false;
            uint64_t r = slots[victim].range.load(std::memory_order_relaxed);
            uint32_t left = left_of(r);
            if (!left) continue;
            uint32_t mid = end_of(r) - (left + 1) / 2;  // the victim keeps [next, mid)
            if (slots[victim].range.compare_exchange_strong(r, pack(next_of(r), mid), std::memory_order_relaxed)) {
                slots[own].range.store(pack(mid, end_of(r)), std::memory_order_relaxed);
                return true;
            }
        }
    }
};

void run_job(Job *j, int thread_index) {
    struct Run {  // (this thread's part of the loop is a run: see weft_rt_enter_run)
        Run() { weft_rt_enter_run(); }
        ~Run() { weft_rt_leave_run(); }
    } run;
    const int own = thread_index % j->num_slots;
    uint32_t i;
    while (j->claim(own, &i) || (j->steal(own) && j->claim(own, &i))) {
        if (j->result.load(std::memory_order_relaxed) != 0) break;  // failed: skip the rest
        int32_t r = j->fn(j->ctx, (int32_t)((uint32_t)j->min + i), j->closure);
        if (r != 0) {
            int32_t expected = 0;
            j->result.compare_exchange_strong(expected, r);
            break;
        }
    }
    if (j->result.load(std::memory_order_relaxed) != 0) j->cancel();  // nothing left to claim
}

// Spinning instead of sleeping: a thread woken from a futex takes tens of microseconds to run
// again, while pipelines called in a loop post their next parallel loop within a fraction of
// a millisecond (a layer-norm of 16 MB on two threads: 0.30 ms with sleeping workers, 0.21
// spinning). Workers spin this long after their last job before sleeping; a caller spins
// as long for the last workers to leave its job.
// With more threads than hardware threads, a spinning thread takes the core that another
// needs to finish its part: then nobody spins.
constexpr int64_t kSpinWorkerNs = 2000000, kSpinCallerNs = 1000000;
inline bool may_spin(int num_threads) {
    static const int hw = std::max(1, (int)std::thread::hardware_concurrency());
    return num_threads <= hw;
}

template <typename Done>
bool spin_until(Done done, int64_t ns) {
    auto start = std::chrono::steady_clock::now();
    while (true) {
        for (int k = 0; k < 64; k++) {
            if (done()) return true;
            __builtin_ia32_pause();
        }
        if (std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count() > ns)
            return done();
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
            if (j->has_work()) return j;
        return nullptr;
    }

    std::atomic<uint64_t> generation{0};  // bumped when a job is posted
    std::atomic<int> sleepers{0};

    void worker(int index) {
        tl_in_task = true;
        std::unique_lock<std::mutex> lk(mu);
        while (true) {
            Job *j = nullptr;
            if (!(j = find_work())) {
                // Spin briefly before sleeping: pipelines called in a loop post their next
                // parallel loop within microseconds, and waking a sleeping thread costs more.
                uint64_t g = generation.load(std::memory_order_acquire);
                lk.unlock();
                spin_until([&] { return generation.load(std::memory_order_acquire) != g; },
                           may_spin(num_threads) ? kSpinWorkerNs : 0);
                lk.lock();
                sleepers++;
                cv_work.wait(lk, [&] { return (j = find_work()) != nullptr; });
                sleepers--;
            }
            j->workers_inside.fetch_add(1, std::memory_order_relaxed);
            lk.unlock();
            run_job(j, index);
            // The last touch of the job (it lives on the caller's stack): the caller may return
            // as soon as it sees the count drop, so notify through the pool, not the job.
            bool last = j->workers_inside.fetch_sub(1, std::memory_order_acq_rel) == 1;
            lk.lock();
            if (last) cv_done.notify_all();
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
            q->threads.emplace_back([q, i] { q->worker(i); });
        }
        return q;
    }();
    return *p;
}

// ---------------------------------------------------------------- memory pool

constexpr int kMinShift = 6;   // 64 bytes
constexpr int kMaxShift = 30;  // 1 GiB
constexpr int64_t kMaxBytes = int64_t(1) << 40;

// The free lists are sharded: each thread takes and returns blocks through a shard of its own
// (threads beyond kShards share), so that pipelines allocating inside parallel loops do not
// serialise on one lock. The byte counts are atomics, shared by all.
constexpr int kShards = 16;
struct alignas(64) PoolShard {
    std::mutex mu;
    std::vector<void *> free_lists[kMaxShift + 1];  // block bases, by size class
    std::atomic<int64_t> blocks{0};                  // in the lists (read without the lock)
    char *take(int cls) {
        if (blocks.load(std::memory_order_relaxed) == 0) return nullptr;
        std::lock_guard<std::mutex> lk(mu);
        auto &fl = free_lists[cls];
        if (fl.empty()) return nullptr;
        char *b = (char *)fl.back();
        fl.pop_back();
        blocks.fetch_sub(1, std::memory_order_relaxed);
        return b;
    }
    void put(int cls, void *base) {
        std::lock_guard<std::mutex> lk(mu);
        free_lists[cls].push_back(base);
        blocks.fetch_add(1, std::memory_order_relaxed);
    }
};
struct MemPool {
    PoolShard shards[kShards];
    // Bytes of blocks held by running pipelines, the most ever held (since the last reset), and
    // the bytes kept in the free lists for reuse.
    std::atomic<int64_t> in_use{0}, peak{0}, pooled{0};
    std::atomic<int64_t> allocations{0};  // blocks taken from the system
    std::atomic<int> next_shard{0};
    void add_in_use(int64_t bytes) {
        int64_t now = in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        int64_t p = peak.load(std::memory_order_relaxed);
        while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
        }
    }
    int my_shard() {
        thread_local int shard = -1;
        if (shard < 0) shard = next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
        return shard;
    }
    /** A pooled block of the class: from this thread's shard, else from another's (so that
        blocks freed by other threads are reused before the system is asked). */
    char *take(int cls) {
        int me = my_shard();
        for (int k = 0; k < kShards; k++)
            if (char *b = shards[(me + k) % kShards].take(cls)) return b;
        return nullptr;
    }
};

constexpr size_t kHeader = 64;
constexpr uint64_t kMagic = 0x7765667462756621ull;
struct BlockHeader {
    uint64_t magic;
    int32_t cls;  // size class, or -1 for a large block freed directly
    int64_t size;  // the block's bytes (after the header)
};

MemPool &mem_pool() {
    static MemPool *p = new MemPool;  // leaked: blocks may be freed during static destruction
    return *p;
}

/** This thread's blocks freed inside a run (weft_rt_enter_run), one per size class up to 1 MiB
    (storage per tile; larger blocks go back to the pool at once, so that the bytes counted in
    use while a run goes on stay within a few MiB per thread of what it holds), still counted in
    use: taken again by its next allocation of the class without touching the pool. */
constexpr int kThreadBlockMaxShift = 20;
struct ThreadBlocks {
    char *blocks[kThreadBlockMaxShift + 1];
    uint32_t held;  // bit c: blocks[c] is set (leaving a run with none is a test of this word)
    int depth;
};
thread_local ThreadBlocks tl_blocks{};

void pool_free(char *base);

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
    // One range per thread (see Slot); on the stack up to 64 threads.
    // (Raw storage: only the pool's num_threads slots are constructed, not all 64.)
    alignas(Slot) unsigned char inline_slots[64 * sizeof(Slot)];
    std::unique_ptr<Slot[]> heap_slots;
    job.num_slots = p->num_threads;
    if (job.num_slots > 64) {
        heap_slots.reset(new Slot[job.num_slots]);
        job.slots = heap_slots.get();
    } else {
        job.slots = reinterpret_cast<Slot *>(inline_slots);
        for (int k = 0; k < job.num_slots; k++) new (&job.slots[k]) Slot;  // trivially destructible
    }
    for (int k = 0; k < job.num_slots; k++) {
        uint32_t b = (uint32_t)((int64_t)extent * k / job.num_slots), e = (uint32_t)((int64_t)extent * (k + 1) / job.num_slots);
        job.slots[k].range.store(pack(b, e), std::memory_order_relaxed);
    }
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
    run_job(&job, 0);
    tl_in_task = false;
    {
        std::unique_lock<std::mutex> lk(p->mu);
        p->jobs.erase(std::find(p->jobs.begin(), p->jobs.end(), &job));  // no worker enters now
    }
    auto all_left = [&] { return job.workers_inside.load(std::memory_order_acquire) == 0; };
    if (!spin_until(all_left, may_spin(p->num_threads) ? kSpinCallerNs : 0)) {
        std::unique_lock<std::mutex> lk(p->mu);
        p->cv_done.wait(lk, all_left);
    }
    return job.result.load();
}

namespace {
/** Blocks of this size and more are 2 MiB aligned and asked to be backed by transparent huge
    pages (where the kernel offers them on request, madvise mode): a first run that touches an
    intermediate of hundreds of megabytes then takes one page fault per 2 MiB, not per 4 KiB, and
    later runs miss the TLB less. A hint: where it is refused nothing changes. */
constexpr size_t kHugeBlock = size_t(4) << 20;
constexpr size_t kHugePage = size_t(2) << 20;
void advise_huge_pages(char *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t b = ((uintptr_t)p + kHugePage - 1) & ~(uintptr_t)(kHugePage - 1), e = ((uintptr_t)p + n) & ~(uintptr_t)(kHugePage - 1);
    if (e > b) (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}
}  // namespace

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
        ThreadBlocks &tb = tl_blocks;
        if (tb.held >> cls & 1) {  // (only inside a run)
            char *base = tb.blocks[cls];
            tb.held &= ~(1u << cls);
            return base + kHeader;
        }
        if (char *base = mp.take(cls)) {
            mp.pooled.fetch_sub(int64_t(1) << cls, std::memory_order_relaxed);
            mp.add_in_use(int64_t(1) << cls);
            return base + kHeader;
        }
    }
    // Each block has a 64-byte header in front of it that records its size class.
    size_t sz = cls <= kMaxShift ? (size_t(1) << cls) : (size_t)((bytes + 63) & ~int64_t(63));
    const bool huge = sz >= kHugeBlock;
    const size_t align = huge ? kHugePage : 64, total = ((sz + kHeader + align - 1) / align) * align;
    char *base = (char *)std::aligned_alloc(align, total);
    if (!base) {
        set_error(ctx, -1, "out of memory");
        return nullptr;
    }
    if (huge) advise_huge_pages(base, total);
    BlockHeader *h = (BlockHeader *)base;
    h->magic = kMagic;
    h->cls = cls <= kMaxShift ? cls : -1;
    h->size = (int64_t)sz;
    mp.add_in_use((int64_t)sz);
    mp.allocations.fetch_add(1, std::memory_order_relaxed);
    return base + kHeader;
}

void weft_rt_free(weft_context_t *, void *q) {
    if (!q) return;
    char *base = (char *)q - kHeader;
    BlockHeader *h = (BlockHeader *)base;
    if (h->magic != kMagic) return;  // not ours
    ThreadBlocks &tb = tl_blocks;
    if (tb.depth > 0 && h->cls >= 0 && h->cls <= kThreadBlockMaxShift && !(tb.held >> h->cls & 1)) {
        tb.blocks[h->cls] = base;
        tb.held |= 1u << h->cls;
        return;
    }
    pool_free(base);
}

void weft_rt_enter_run() { tl_blocks.depth++; }

void weft_rt_leave_run() {
    ThreadBlocks &tb = tl_blocks;
    if (--tb.depth > 0) return;
    for (; tb.held; tb.held &= tb.held - 1) pool_free(tb.blocks[__builtin_ctz(tb.held)]);
}

}  // extern "C"

namespace {
void pool_free(char *base) {
    BlockHeader *h = (BlockHeader *)base;
    MemPool &mp = mem_pool();
    mp.in_use.fetch_sub(h->size, std::memory_order_relaxed);
    if (h->cls < 0) {
        std::free(base);  // a large block goes back to the system
        return;
    }
    mp.pooled.fetch_add(h->size, std::memory_order_relaxed);
    mp.shards[mp.my_shard()].put(h->cls, base);
}
}  // namespace

extern "C" {

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

int64_t weft_rt_device_call(weft_context_t *ctx, weft_device_t *dev, int32_t op, int32_t index, const int64_t *args,
                            int32_t nargs) {
    if (!dev || !dev->call) {
        set_error(ctx, -1, "weft internal error: host code called a device that is not there");
        return 0;
    }
    return dev->call(ctx, dev, op, index, args, nargs);
}

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

extern "C" void weft_rt_memory_stats(int64_t *in_use, int64_t *peak, int64_t *pooled, int64_t *allocations) {
    MemPool &mp = mem_pool();
    *allocations = mp.allocations.load();
    *in_use = mp.in_use.load();
    *peak = mp.peak.load();
    *pooled = mp.pooled.load();
}
extern "C" void weft_rt_reset_peak_memory() {
    MemPool &mp = mem_pool();
    mp.peak.store(mp.in_use.load());
}

// ---------------- print ----------------
namespace {
thread_local std::string t_print_line;
thread_local bool t_print_glued = false;
void print_piece(const char *s) {
    if (!t_print_line.empty() && !t_print_glued) t_print_line += ' ';
    t_print_line += s;
}
}  // namespace
extern "C" int32_t weft_rt_print_i64(int64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "%lld", (long long)v);
    print_piece(b);
    return 0;
}
extern "C" int32_t weft_rt_print_u64(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    print_piece(b);
    return 0;
}
extern "C" int32_t weft_rt_print_f64(double v, int32_t bits) {
    // The shortest text that reads back as the same value of the type.
    char b[64];
    for (int prec = 1; prec <= 17; prec++) {
        std::snprintf(b, sizeof b, "%.*g", prec, v);
        double back = std::strtod(b, nullptr);
        bool same = bits == 32 ? (float)back == (float)v
                    : bits == 16 ? (double)weft::float16_t(back) == v   // (bits -16: bfloat16)
                    : bits == -16 ? (double)weft::bfloat16_t(back) == v : back == v;
        if (same) break;
        if (v != v) break;
    }
    print_piece(b);
    return 0;
}
extern "C" int32_t weft_rt_print_str(const char *s) {
    print_piece(s ? s : "");
    return 0;
}
extern "C" int32_t weft_rt_print_glued() {
    t_print_glued = true;
    return 0;
}
extern "C" int32_t weft_rt_print_end() {
    t_print_glued = false;
    t_print_line += '\n';
    std::fwrite(t_print_line.data(), 1, t_print_line.size(), stderr);  // one write: lines of threads do not mix
    t_print_line.clear();
    return 0;
}
