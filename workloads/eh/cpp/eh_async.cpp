// eh/cpp mode=async: the exception travels up a chain of C++20 coroutines (g++ -std=c++20
// -fcoroutines).  Level n co_awaits level n-1; the leaf throws.  The promise of the leaf stores
// the exception (unhandled_exception), the awaiting level's await_resume rethrows it
// (std::rethrow_exception), it leaves that level's body and is stored again: one rethrow per
// level, as with Node's `catch (e) { throw e; }` and the C# async state machine.  Every level is
// a real coroutine frame (heap-allocated: GCC 12 does not elide coroutine frames); resumption
// is by symmetric transfer, so the chain runs to completion on the calling thread without an
// executor.  kind=error passes an error value up the same chain instead.
#include <coroutine>
#include <exception>
#include <utility>

#include "eh.h"

namespace {

thread_local unsigned long long t_frames, t_stored, t_thrown;

struct Task {
    struct promise_type {
        int value = 0;
        std::exception_ptr error;
        std::coroutine_handle<> continuation;

        promise_type() { t_frames++; }  // one per coroutine frame: the depth is real
        Task get_return_object() {
            return Task{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }  // lazy: started by co_await
        struct Final {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                auto c = h.promise().continuation;  // resume the awaiting level (symmetric transfer)
                return c ? c : std::noop_coroutine();
            }
            void await_resume() noexcept {}
        };
        Final final_suspend() noexcept { return {}; }
        void return_value(int v) { value = v; }
        void unhandled_exception() {
            t_stored++;
            error = std::current_exception();
        }
    };

    std::coroutine_handle<promise_type> h;
    explicit Task(std::coroutine_handle<promise_type> handle) : h(handle) {}
    Task(Task &&o) noexcept : h(std::exchange(o.h, {})) {}
    Task(const Task &) = delete;
    ~Task() {
        if (h) h.destroy();
    }

    bool await_ready() noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
        h.promise().continuation = awaiting;
        return h;  // start the child now
    }
    int await_resume() {
        if (h.promise().error) std::rethrow_exception(h.promise().error);  // the rethrow per level
        return h.promise().value;
    }
    // From ordinary code: run the whole chain, then rethrow or return its result.
    int get() {
        h.resume();
        return await_resume();
    }
};

struct SmallError {
    int code;
};

struct StdError : std::exception {
    const char *what() const noexcept override { return "perflab eh async"; }
};

volatile int g_fail = -1;  // the error value, not a constant the compiler could fold

}  // namespace

template <class E>
Task perflab_async_frame(int depth) {
    if (depth <= 1) {
        t_thrown++;
        throw E();
    }
    int r = co_await perflab_async_frame<E>(depth - 1);
    co_return r + 1;
}

Task perflab_async_frame_error(int depth) {
    if (depth <= 1) {
        t_thrown++;
        co_return g_fail;
    }
    int r = co_await perflab_async_frame_error(depth - 1);
    if (r < 0) co_return r;  // every level checks and passes the error on
    co_return r + 1;
}

// The coroutine chains for eh_throw_loop / eh_error_loop (eh.h).
struct AsyncChain {
    static void count() { t_thrown++; }
    template <class E>
    static void run(int depth) {
        Task t = perflab_async_frame<E>(depth);
        t.get();
    }
    static int run_error(int depth) {
        Task t = perflab_async_frame_error(depth);
        return t.get();
    }
    static int fail() { return g_fail; }
};

unsigned long long eh_async_loop(long long n, int depth, int kind, bool std_exception,
                                 EhAsyncCounts *counts) {
    unsigned long long f0 = t_frames, s0 = t_stored, th0 = t_thrown, caught;
    if (kind == EH_ASYNC_ERROR)
        caught = eh_error_loop<AsyncChain>(n, depth);
    else if (std_exception)
        caught = eh_throw_loop<AsyncChain, StdError, std::exception>(n, depth);
    else
        caught = eh_throw_loop<AsyncChain, SmallError, SmallError>(n, depth);
    counts->frames = t_frames - f0;
    counts->stored = t_stored - s0;
    counts->thrown = t_thrown - th0;
    return caught;
}
