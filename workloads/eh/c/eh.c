/* eh/c: the C ways out of `depth` frames (after dotnet/runtime#77568).
 *   kind=software  setjmp/longjmp
 *   kind=hardware  a real SIGSEGV (--signal=segv) or SIGFPE (--signal=fpe, integer division by
 *                  zero) whose handler siglongjmps back to a sigsetjmp; --savemask=1 saves and
 *                  restores the signal mask (a sigprocmask syscall each way), 0 does not
 *   kind=error     the baseline: an error code returned through the same frames
 * depth 0 = the jump happens in the function that set it up; depth N = N perflab_frame calls. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "perflab_workload.h"

/* The jump buffers live on the loop's stack and are published per thread for the jump sites. */
#pragma GCC diagnostic ignored "-Wdangling-pointer"

#define NOINLINE __attribute__((noinline, noipa))
/* After a call: keeps it a call (no tail jump) and stops the compiler from merging frames. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

enum kind { SOFTWARE, HARDWARE, ERROR };

struct config {
    enum kind kind;
    int fpe;
    int savemask;
    int depth;
};

static __thread jmp_buf *t_env;      /* kind=software */
static __thread sigjmp_buf *t_senv;  /* kind=hardware */
static __thread unsigned long long t_thrown, t_signals;
static volatile int *volatile g_null = NULL; /* volatile: the fault cannot be proved or dropped */
static volatile int g_zero = 0, g_one = 1; /* g_one: GCC folds 1/x without a divide */
static unsigned long long g_thrown, g_signals;
static int g_mismatch;

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    t_signals++;
    siglongjmp(*t_senv, 1);
}

static void fault(int fpe) {
    if (fpe) {
        volatile int x = g_one / g_zero; /* #DE: SIGFPE */
        (void)x;
    } else {
        int v = *g_null; /* #PF: SIGSEGV */
        (void)v;
    }
}

NOINLINE void perflab_frame(int depth, const struct config *c) {
    if (depth <= 1) {
        t_thrown++;
        if (c->kind == HARDWARE) fault(c->fpe);
        else longjmp(*t_env, 1);
        return; /* not reached: the fault jumps out */
    }
    perflab_frame(depth - 1, c);
    BARRIER();
}

NOINLINE int perflab_frame_error(int depth) {
    if (depth <= 1) {
        t_thrown++;
        return -1;
    }
    int rc = perflab_frame_error(depth - 1);
    BARRIER();
    if (rc != 0) return rc; /* how error codes propagate: every frame checks */
    return 0;
}

/* The two jump loops, written once: they differ only in the buffer, how it is set and how depth 0
 * leaves.  A macro rather than a function taking those as parameters: GCC never inlines a
 * function that calls setjmp, so a shared function would put an indirect call inside the timed
 * loop; the macro expands to the same direct code as the loops written out by hand. */
#define JUMP_LOOP(NAME, BUF, SLOT, SET, LEAVE)                                                \
    static unsigned long long NAME(long long n, const struct config *c) {                     \
        volatile unsigned long long caught = 0; /* volatile: survives the jump */            \
        BUF env;                                                                              \
        SLOT = &env;                                                                          \
        for (volatile long long i = 0; i < n; i++) {                                          \
            if (SET == 0) {                                                                   \
                if (c->depth == 0) {                                                          \
                    t_thrown++;                                                               \
                    LEAVE;                                                                    \
                }                                                                             \
                perflab_frame(c->depth, c);                                                   \
            } else {                                                                          \
                caught++;                                                                     \
            }                                                                                 \
        }                                                                                     \
        SLOT = NULL;                                                                          \
        return caught;                                                                        \
    }

JUMP_LOOP(software_loop, jmp_buf, t_env, setjmp(env), longjmp(env, 1))
JUMP_LOOP(hardware_loop, sigjmp_buf, t_senv, sigsetjmp(env, c->savemask), fault(c->fpe))

static unsigned long long error_loop(long long n, const struct config *c) {
    static volatile int fail = -1; /* depth 0: an error value the compiler cannot fold */
    unsigned long long caught = 0;
    for (long long i = 0; i < n; i++) {
        int rc;
        if (c->depth == 0) {
            t_thrown++;
            rc = fail;
        } else {
            rc = perflab_frame_error(c->depth);
        }
        BARRIER();
        if (rc != 0) caught++;
    }
    return caught;
}

static unsigned long long eh_loop(long long n, void *arg) {
    const struct config *c = arg;
    unsigned long long thrown0 = t_thrown, signals0 = t_signals, caught;
    switch (c->kind) {
    case SOFTWARE: caught = software_loop(n, c); break;
    case HARDWARE: caught = hardware_loop(n, c); break;
    default: caught = error_loop(n, c); break;
    }
    unsigned long long thrown = t_thrown - thrown0, signals = t_signals - signals0;
    if (thrown != caught || caught != (unsigned long long)n ||
        (c->kind == HARDWARE && signals != caught))
        __atomic_store_n(&g_mismatch, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&g_thrown, thrown, __ATOMIC_RELAXED);
    __atomic_fetch_add(&g_signals, signals, __ATOMIC_RELAXED);
    return caught;
}

static void eh_init(void *arg) {
    const struct config *c = arg;
    if (c->kind != HARDWARE) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    /* SA_NODEFER: with --savemask=0 siglongjmp does not restore the mask, so the signal would
     * stay blocked and the next fault would kill the process. */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(c->fpe ? SIGFPE : SIGSEGV, &sa, NULL);
}

static void eh_reset(void *arg) {
    (void)arg;
    g_thrown = g_signals = 0; /* count only the timed region */
}

int main(int argc, char **argv) {
    pw_param ps[] = {
        PW_INT("depth", 0, 0, 100000),
        PW_STR("kind", "software", "software|hardware|error"),
        PW_STR("signal", "segv", "segv|fpe"),
        PW_INT("savemask", 1, 0, 1),
    };
    pw_parse(argc, argv, ps, PW_COUNT(ps));
    struct config c;
    const char *kind = pw_str(ps, PW_COUNT(ps), "kind");
    c.kind = !strcmp(kind, "hardware") ? HARDWARE : !strcmp(kind, "error") ? ERROR : SOFTWARE;
    c.fpe = !strcmp(pw_str(ps, PW_COUNT(ps), "signal"), "fpe");
    c.savemask = (int)pw_int(ps, PW_COUNT(ps), "savemask");
    c.depth = (int)pw_int(ps, PW_COUNT(ps), "depth");

    pw_result r;
    pw_run_ex(eh_loop, eh_init, eh_reset, &c, &r);
    if (g_mismatch || g_thrown != r.checksum || (c.kind == HARDWARE && g_signals != r.checksum)) {
        fprintf(stderr, "eh: thrown %llu, caught %llu, signals %llu: the counts disagree\n",
                g_thrown, r.checksum, g_signals);
        return 1;
    }
    char extra[160];
    snprintf(extra, sizeof extra, "\"thrown\":%llu,\"signals\":%llu,\"compiler\":\"gcc %d.%d\"",
             g_thrown, g_signals, __GNUC__, __GNUC_MINOR__);
    pw_print_json(&r, ps, PW_COUNT(ps), extra);
    return 0;
}
