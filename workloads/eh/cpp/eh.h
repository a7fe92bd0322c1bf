// Shared declarations of the C++ eh workload (eh.cpp: software/error; eh_hw.cpp: hardware).
#pragma once

#define EH_NOINLINE __attribute__((noinline, noipa))
// After a call: keeps it a call (no tail jump) and stops the compiler from merging frames.
#define EH_BARRIER() __asm__ __volatile__("" ::: "memory")

// The hardware variant lives in its own translation unit because it needs -fnon-call-exceptions,
// which would also change the code of the software variants.
bool eh_hw_supported();
void eh_hw_thread_init();  // installs the SIGSEGV handler (process-wide, idempotent)
// Runs n faults at `depth`; returns how many were caught; adds the signals seen to *signals.
unsigned long long eh_hw_loop(long long n, int depth, unsigned long long *signals);

// mode=async (eh_async.cpp, C++20 coroutines): n operations through a chain of `depth`
// coroutines, each co_awaiting the next.  counts: coroutine frames created, exceptions stored by
// a promise (one per level the exception left), throws at the leaf (or error values returned).
struct EhAsyncCounts {
    unsigned long long frames, stored, thrown;
};
enum { EH_ASYNC_SOFTWARE = 0, EH_ASYNC_ERROR = 1 };
unsigned long long eh_async_loop(long long n, int depth, int kind, bool std_exception,
                                 EhAsyncCounts *counts);

// The timed loops of kind=software and kind=error, written once for both modes (eh.cpp: sync,
// eh_async.cpp: async).  Chain is a policy type, not a pointer: its static members are resolved
// at compile time and inlined, so no call goes through a pointer inside the timed loop (with
// g++ 12 -O2 both objects disassemble instruction for instruction as with the loops written out
// per mode; always_inline is left out because it moved blocks of the coroutine frames).  A Chain
// provides:
//   count()            one throw (or error value) at the leaf, on its unit's thread_local counter
//   run<E>(depth)      a chain of depth frames whose leaf throws E
//   run_error(depth)   the same chain passing an error code up; returns it
//   fail()             the error value at depth 0 (a volatile the compiler cannot fold)
template <class Chain, class E, class Catch>
static unsigned long long eh_throw_loop(long long n, int depth) {
    unsigned long long caught = 0;
    for (long long i = 0; i < n; i++) {
        try {
            if (depth == 0) {
                Chain::count();
                throw E();
            }
            Chain::template run<E>(depth);
        } catch (const Catch &) {
            caught++;
        }
    }
    return caught;
}

template <class Chain>
static unsigned long long eh_error_loop(long long n, int depth) {
    unsigned long long caught = 0;
    for (long long i = 0; i < n; i++) {
        int rc;
        if (depth == 0) {
            Chain::count();
            rc = Chain::fail();
        } else {
            rc = Chain::run_error(depth);
        }
        EH_BARRIER();
        if (rc != 0) caught++;
    }
    return caught;
}
