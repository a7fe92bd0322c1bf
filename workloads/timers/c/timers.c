/*
 * perflab workload timers/c: create and cancel timers that never fire (after dotnet/coreclr#14527).
 *
 * Each thread, per operation, arms one timer for an hour and cancels it:
 *   kind=timerfd  timerfd_create + timerfd_settime(1 h) + close
 *   kind=posix    timer_create(CLOCK_MONOTONIC, SIGEV_NONE) + timer_settime(1 h) + timer_delete
 *                 (kernels before 6.15 keep every POSIX timer in one global hash under one lock)
 *   kind=heap     insert into / remove from a per-thread userspace binary heap keyed by
 *                 now + 1 h: no kernel, no lock, the floor.
 * --live=N keeps N more timers armed during the run so the queue has depth (kernel kinds: N in the
 * process; heap: N spread evenly over the per-thread heaps).  checksum = timers cancelled, which
 * must equal the timers created (threads * iterations).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "perflab_workload.h"

#define HOUR_NS 3600000000000LL

static pw_param params[] = {
    PW_STR("kind", "timerfd", "timerfd|posix|heap"),
    PW_INT("live", 0, 0, 1000000),
};
static const char *kind;
static long long live;

/* ---- kernel timers ---- */

static const struct itimerspec ONE_HOUR = {{0, 0}, {3600, 0}};

static unsigned long long loop_timerfd(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    for (long long i = 0; i < n; i++) {
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (fd < 0) continue;
        if (timerfd_settime(fd, 0, &ONE_HOUR, NULL) == 0 && close(fd) == 0)
            cancelled++; /* closing the armed timerfd cancels it */
        else
            close(fd);
    }
    return cancelled;
}

static unsigned long long loop_posix(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_NONE; /* never delivers anything: pure create/arm/delete cost */
    for (long long i = 0; i < n; i++) {
        timer_t t;
        if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) continue;
        if (timer_settime(t, 0, &ONE_HOUR, NULL) == 0 && timer_delete(t) == 0)
            cancelled++;
        else
            timer_delete(t);
    }
    return cancelled;
}

/* ---- the userspace floor: a per-thread binary min-heap with cancellation by index ---- */

typedef struct {
    long long deadline;
    int index; /* position in the heap, -1 when not queued */
} utimer;

typedef struct {
    utimer **a;
    int len, cap;
} uheap;

static __thread uheap heap;
static __thread utimer *heap_live; /* this thread's share of --live */
static __thread utimer op_timer;   /* the one churned by the loop */

static void heap_swap(int i, int j) {
    utimer *t = heap.a[i];
    heap.a[i] = heap.a[j];
    heap.a[j] = t;
    heap.a[i]->index = i;
    heap.a[j]->index = j;
}

static void heap_up(int i) {
    while (i > 0) {
        int p = (i - 1) / 2;
        if (heap.a[p]->deadline <= heap.a[i]->deadline) break;
        heap_swap(i, p);
        i = p;
    }
}

static void heap_down(int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap.len && heap.a[l]->deadline < heap.a[m]->deadline) m = l;
        if (r < heap.len && heap.a[r]->deadline < heap.a[m]->deadline) m = r;
        if (m == i) break;
        heap_swap(i, m);
        i = m;
    }
}

static void heap_push(utimer *t) {
    if (heap.len == heap.cap) {
        heap.cap = heap.cap ? heap.cap * 2 : 64;
        heap.a = (utimer **)realloc(heap.a, (size_t)heap.cap * sizeof *heap.a);
        if (!heap.a) abort();
    }
    t->index = heap.len;
    heap.a[heap.len++] = t;
    heap_up(t->index);
}

/* Cancel: remove from wherever it sits.  Returns 1 if it was queued. */
static int heap_remove(utimer *t) {
    int i = t->index;
    if (i < 0 || i >= heap.len || heap.a[i] != t) return 0;
    heap.len--;
    if (i != heap.len) {
        heap.a[i] = heap.a[heap.len];
        heap.a[i]->index = i;
        heap_down(i);
        heap_up(i);
    }
    t->index = -1;
    return 1;
}

static void heap_thread_init(void *arg) {
    (void)arg;
    if (heap_live) return;
    long long share = live / pw_threads;
    heap_live = (utimer *)calloc((size_t)share + 1, sizeof *heap_live);
    if (!heap_live) abort();
    long long now = pw_now_ns();
    /* Live timers spread over the next hour, so the churned one lands among them. */
    for (long long i = 0; i < share; i++) {
        heap_live[i].deadline = now + HOUR_NS / 2 + (long long)((i * 2654435761LL) % (HOUR_NS / 2));
        heap_push(&heap_live[i]);
    }
}

static unsigned long long loop_heap(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    for (long long i = 0; i < n; i++) {
        op_timer.deadline = pw_now_ns() + HOUR_NS; /* armed relative to now, as real timers are */
        heap_push(&op_timer);
        __asm__ __volatile__("" ::: "memory"); /* keep the insert: do not fold push+remove */
        cancelled += (unsigned long long)heap_remove(&op_timer);
    }
    return cancelled;
}

/* ---- --live for the kernel kinds: N timers armed for the whole run ---- */

static int *live_fds;
static timer_t *live_timers;

static void make_live(void) {
    if (live == 0 || strcmp(kind, "heap") == 0) return;
    if (strcmp(kind, "timerfd") == 0) {
        /* Each live timerfd is a descriptor: raise the soft limit to the hard one. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        live_fds = (int *)calloc((size_t)live, sizeof *live_fds);
        for (long long i = 0; i < live; i++) {
            live_fds[i] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
            if (live_fds[i] < 0 || timerfd_settime(live_fds[i], 0, &ONE_HOUR, NULL) != 0)
                pw_die("timers", "--live=%lld needs %lld open descriptors; only %lld fit (ulimit -n); "
                       "lower --live or raise the limit", live, live + 16, i);
        }
    } else {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_NONE;
        live_timers = (timer_t *)calloc((size_t)live, sizeof *live_timers);
        for (long long i = 0; i < live; i++) {
            if (timer_create(CLOCK_MONOTONIC, &sev, &live_timers[i]) != 0 ||
                timer_settime(live_timers[i], 0, &ONE_HOUR, NULL) != 0)
                pw_die("timers", "--live=%lld: timer_create failed after %lld timers (%s); "
                       "lower --live", live, i, strerror(errno));
        }
    }
}

static long long drop_live(void) {
    long long n = 0;
    for (long long i = 0; live_fds && i < live; i++) n += close(live_fds[i]) == 0;
    for (long long i = 0; live_timers && i < live; i++) n += timer_delete(live_timers[i]) == 0;
    return n;
}

int main(int argc, char **argv) {
    pw_parse(argc, argv, params, PW_COUNT(params));
    kind = pw_str(params, PW_COUNT(params), "kind");
    live = pw_int(params, PW_COUNT(params), "live");
    pw_loop_fn loop = strcmp(kind, "timerfd") == 0 ? loop_timerfd
                      : strcmp(kind, "posix") == 0 ? loop_posix
                                                   : loop_heap;
    make_live();
    pw_result r;
    pw_run_ex(loop, strcmp(kind, "heap") == 0 ? heap_thread_init : NULL, NULL, NULL, &r);
    long long live_cancelled = drop_live();
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"workload\":\"timers/c\",\"created\":%lld,\"live_cancelled\":%lld,"
             "\"timeout_s\":3600,\"parallelism\":\"threads\"",
             r.iterations * r.threads, strcmp(kind, "heap") == 0 ? 0 : live_cancelled);
    pw_print_json(&r, params, PW_COUNT(params), extra);
    return 0;
}
