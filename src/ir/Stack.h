// Running deep recursions without overflowing a thread's stack.
//
// Lowering, code generation and the interpreter recurse over expressions and statements, as deep
// as the user's expression is (a chain of many thousand operations, or of inlined Funcs). The
// recursive routines check, where they recurse, how much of the current thread's stack is left,
// and when it runs low carry on in a thread of their own with a large stack (reserved, not
// committed), then hand the result or exception back: the depth is bounded by memory instead of
// by the caller's stack (8 MiB for a main thread, often less for others).
#pragma once
#include <pthread.h>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>

namespace weft {
namespace internal {

/** The stack of a thread started by on_large_stack(). */
constexpr size_t kLargeStackBytes = (size_t)512 << 20;
/** Below this much stack left, stack_low() says so (a frame of the deepest unchecked stretch of
    recursion between two checks, sanitizers' larger frames included, fits many times). */
constexpr size_t kStackMargin = (size_t)1 << 20;

/** This thread's stack, found once per thread ([0, 0) where it cannot be found). */
inline thread_local uintptr_t tl_stack_lo = 0, tl_stack_hi = 0;
inline thread_local bool tl_stack_known = false;

inline void find_this_stack() {
    tl_stack_known = true;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return;
    void *addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size) {
        tl_stack_lo = (uintptr_t)addr;
        tl_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

/** Is this thread's stack nearly used up? (false when running on a stack that is not the thread's
    own, e.g. a fiber's, or where it cannot be told) */
__attribute__((always_inline)) inline bool stack_low() {
    if (__builtin_expect(!tl_stack_known, 0)) find_this_stack();
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return __builtin_expect(sp >= tl_stack_lo && sp < tl_stack_lo + kStackMargin && sp < tl_stack_hi, 0);
}

/** f() run on a thread of its own with a kLargeStackBytes stack, its result or exception handed
    back (run on this thread where no thread can be started). The caller waits: what f touches is
    used by one thread at a time. */
template <typename R, typename F>
R on_large_stack(F &&f) {
    struct Job {
        F *f;
        std::optional<R> result;
        std::exception_ptr error;
    } job{&f, std::nullopt, nullptr};
    auto run = [](void *p) -> void * {
        Job *j = static_cast<Job *>(p);
        try {
            j->result.emplace((*j->f)());
        } catch (...) {
            j->error = std::current_exception();
        }
        return nullptr;
    };
    pthread_attr_t attr;
    pthread_t thread;
    bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kLargeStackBytes) == 0 &&
                   pthread_create(&thread, &attr, run, &job) == 0;
    pthread_attr_destroy(&attr);
    if (!started) return f();
    pthread_join(thread, nullptr);
    if (job.error) std::rethrow_exception(job.error);
    return std::move(*job.result);
}

/** For a routine returning nothing. */
template <typename F>
void on_large_stack_void(F &&f) {
    on_large_stack<bool>([&] {
        f();
        return true;
    });
}

}  // namespace internal
}  // namespace weft
