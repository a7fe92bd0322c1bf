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
