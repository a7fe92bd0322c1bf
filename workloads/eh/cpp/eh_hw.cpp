// eh/cpp kind=hardware: a real SIGSEGV whose handler throws a C++ exception that unwinds through
// the signal frame and `depth` frames.  Compiled with -fnon-call-exceptions so the faulting load
// has unwind info (GCC on x86-64 only; libgcc recognises the kernel's signal trampoline).
#include <csignal>
#include <cstring>

#include "eh.h"

struct HardwareFault {
    void *addr;
};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)

// Volatile pointer AND volatile load: the compiler can neither prove the fault nor drop the load.
static volatile int *volatile g_null = nullptr;
static thread_local unsigned long long t_signals;

static void on_segv(int, siginfo_t *si, void *) {
    t_signals++;
    throw HardwareFault{si->si_addr};
}

bool eh_hw_supported() { return true; }

void eh_hw_thread_init() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    // SA_NODEFER: we leave the handler by unwinding, never through sigreturn, so the kernel
    // would otherwise keep SIGSEGV blocked and kill us on the next fault.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
}

EH_NOINLINE void perflab_frame_hardware(int depth) {
    if (depth <= 1) {
        int v = *g_null;  // faults: SIGSEGV
        EH_BARRIER();
        (void)v;
        return;
    }
    perflab_frame_hardware(depth - 1);
    EH_BARRIER();
}

unsigned long long eh_hw_loop(long long n, int depth, unsigned long long *signals) {
    unsigned long long caught = 0, before = t_signals;
    for (long long i = 0; i < n; i++) {
        try {
            if (depth == 0) {
                int v = *g_null;  // the fault inside the try block
                EH_BARRIER();
                (void)v;
            } else {
                perflab_frame_hardware(depth);
            }
        } catch (const HardwareFault &) {
            caught++;
        }
    }
    *signals = t_signals - before;
    return caught;
}

#else

bool eh_hw_supported() { return false; }
void eh_hw_thread_init() {}
unsigned long long eh_hw_loop(long long, int, unsigned long long *signals) {
    *signals = 0;
    return 0;
}

#endif
