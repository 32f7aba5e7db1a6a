// The runtime that JIT-compiled code calls, with a C ABI. Implemented in Runtime.cpp.
#pragma once
#include <cstdint>

extern "C" {

/** How a buffer argument is passed to a compiled pipeline. */
struct weft_dim_t {
    int32_t min, extent, stride, pad;
};
struct weft_buffer_t {
    void *host;
    int32_t dims;
    int32_t pad;
    weft_dim_t dim[8];
};

/** Per-call context passed to a compiled pipeline: error reporting and profiling. */
struct weft_context_t {
    char error[1024];      // message of the first failure
    int32_t error_code;    // 0 = none
};

/** Signature of a compiled pipeline: args[i] points to a weft_buffer_t for a buffer
    argument, or to the scalar's value for a scalar argument. Returns 0 on success,
    nonzero after an assertion failed (message in ctx->error). */
typedef int32_t (*weft_pipeline_fn)(void **args, weft_context_t *ctx);

/** Body of a parallel loop: called for each index in [min, min+extent); returns nonzero on failure. */
typedef int32_t (*weft_task_fn)(weft_context_t *ctx, int32_t index, void *closure);

/** Runs body(ctx, i, closure) for i in [min, min + extent) on the thread pool
    (WEFT_NUM_THREADS threads; the caller takes part). Nested calls run serially.
    Returns the first nonzero result, else 0. */
int32_t weft_rt_parallel_for(weft_context_t *ctx, weft_task_fn body, void *closure, int32_t min, int32_t extent);

/** Memory for heap allocations, from a pool reused across calls (64-byte aligned).
    Returns null (and records an error in ctx) if bytes is negative or too large. */
void *weft_rt_malloc(weft_context_t *ctx, int64_t bytes);
void weft_rt_free(weft_context_t *ctx, void *p);
/** The pool's bytes: held by running pipelines, the most held at once (since the last reset), and
    kept for reuse; and how many blocks it took from the system. */
void weft_rt_memory_stats(int64_t *in_use, int64_t *peak, int64_t *pooled, int64_t *allocations);
void weft_rt_reset_peak_memory();
/** Around a compiled pipeline's run on this thread (and each thread's part of a parallel loop):
    while inside, the last block of each size class that the thread frees is kept for its next
    allocation of that class, without a lock or an atomic read-modify-write (a locked instruction
    waits for the thread's streaming stores to reach memory: a tile loop that allocated per tile
    ran at half speed); leaving the outermost returns those blocks to the pool. */
void weft_rt_enter_run();
void weft_rt_leave_run();

/** Records an assertion failure: formats msg, replacing each '%' by the next of args.
    Returns -1 (the pipeline returns it). */
int32_t weft_rt_assert_fail(weft_context_t *ctx, const char *msg, const int64_t *args, int32_t nargs);

/** The runtime of a device that host code drives (the host code of a GPU pipeline: kernel
    launches, host stages, its internal device buffers). What op and index mean, and what args
    hold, is the device backend's business; the host code reaches it through
    weft_rt_device_call, with this struct (the backend's state follows it) as an argument. */
struct weft_device_t {
    int64_t (*call)(weft_context_t *ctx, struct weft_device_t *self, int32_t op, int32_t index, const int64_t *args,
                    int32_t nargs);
};
/** dev->call(ctx, dev, op, index, args, nargs). A failure is recorded in ctx (error_code
    nonzero), and the calling code returns that code. */
int64_t weft_rt_device_call(weft_context_t *ctx, weft_device_t *dev, int32_t op, int32_t index, const int64_t *args,
                            int32_t nargs);

/** print() / print_when(): the pieces of one line, appended on this thread (separated by
    spaces), then written to stderr at once by weft_rt_print_end. Each returns 0. */
int32_t weft_rt_print_i64(int64_t v);
int32_t weft_rt_print_u64(uint64_t v);
int32_t weft_rt_print_f64(double v, int32_t bits);
int32_t weft_rt_print_str(const char *s);
int32_t weft_rt_print_end();
/** The next pieces of this thread's line, up to weft_rt_print_end, are joined without spaces
    (the "trace" intrinsic: Func::trace_stores and kin). */
int32_t weft_rt_print_glued();

/** Number of threads in the pool. */
int32_t weft_rt_num_threads();

/** Profiling (WEFT_PROFILE): marks the start (begin = 1) or end (begin = 0) of the work of
    profiled item `id` on this thread; time is accumulated per id across threads. Returns 0. */
int32_t weft_rt_profile(weft_context_t *ctx, int32_t id, int32_t begin);
/** Accumulated nanoseconds and call counts of item `id` (see weft_rt_profile); reset clears. */
void weft_rt_profile_read(int32_t id, uint64_t *ns, uint64_t *count);
void weft_rt_profile_reset();
}
