/*
 * perflab workload timers/c: create and cancel timers, as dotnet/coreclr#14527 measured them.
 *
 * Each thread, per operation, arms one timer and cancels it (or, with --fire, lets it fire):
 *   kind=timerfd  timerfd_create + timerfd_settime(1 h) + close
 *   kind=posix    timer_create(CLOCK_MONOTONIC, SIGEV_NONE) + timer_settime(1 h) + timer_delete
 *                 (kernels before 6.15 keep every POSIX timer in one global hash under one lock)
 *   kind=heap     insert into / remove from a per-thread userspace binary heap keyed by
 *                 now + 1 h: no kernel, no lock, no firing thread: the floor.
 *   kind=queue    a userspace timer queue as a runtime has one (.NET's TimerQueue): a binary
 *                 min-heap under a mutex, serviced by a firing thread that sleeps on a condition
 *                 variable until the earliest deadline; a timer is a malloc'd node.
 *                   --queue=global       ONE queue, ONE lock and ONE firing thread shared by all
 *                                        threads (the seed's "before")
 *                   --queue=partitioned  one queue, lock and firing thread per thread (the
 *                                        seed's per-core "after"); a timer remembers its queue
 *                 As in .NET, the firing thread is only woken when a new timer is due before the
 *                 time it will wake anyway, so hour-long timers never wake it.
 *
 * --cancel=same   the creating thread cancels its timer right away.
 * --cancel=other  the creating thread hands the timer to a partner thread (one per creating
 *                 thread, a single-producer single-consumer ring, futex-parked when idle), which
 *                 cancels it: timer_delete / close / removal from the timer's queue.  The
 *                 operation ends when the partner has cancelled it (a thread's time covers all of
 *                 its timers cancelled); cross_thread_cancels counts cancels whose thread is not
 *                 the creator (kind=queue checks every cancel's thread id against the timer's).
 * --fire=N        (kind=queue) timers due N microseconds after creation (0 = an hour: they never
 *                 fire).  They are not cancelled: the firing thread runs the callback, which
 *                 measures its lateness (CLOCK_MONOTONIC now - due time) and disposes the timer.
 *                 A thread's time covers creating its timers and all of them firing.
 *
 * --live=N keeps N more timers armed during the run so the queue has depth (kernel kinds: N in the
 * process; heap: N spread evenly over the per-thread heaps; queue: N spread over the queues).
 * checksum = timers cancelled (fire=0) or fired (fire>0), which must equal the timers created.
 * Flags that do not apply to a kind are refused with one line.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "perflab_workload.h"

#define HOUR_NS 3600000000000LL
#define NEVER LLONG_MAX

static pw_param params[] = {
    PW_STR("kind", "timerfd", "timerfd|posix|heap|queue"),
    PW_INT("live", 0, 0, 1000000),
    PW_STR("cancel", "same", "same|other"),
    PW_INT("fire", 0, 0, 1000000),
    PW_STR("queue", "global", "global|partitioned"),
};
static const char *kind;
static long long live, fire_us;
static int cancel_other, partitioned, is_queue, is_heap, is_timerfd;

static __thread pid_t my_tid;

/* ---- the handoff to a partner thread (--cancel=other): an SPSC ring, futex-parked ---- */

#define RING_CAP 1024u
#define SPINS 400

typedef struct {
    _Atomic uint32_t head __attribute__((aligned(64))); /* next slot the consumer reads */
    _Atomic uint32_t tail __attribute__((aligned(64))); /* next slot the producer writes */
    _Atomic int consumer_parked, producer_parked;
    uintptr_t slot[RING_CAP];
} ring_t;

static void futex_wait(_Atomic uint32_t *w, uint32_t seen) {
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w) {
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A parked consumer is woken once a quarter of the ring is waiting (or at ring_flush), a parked
 * producer once the ring is half empty: one futex wake per batch, not one per timer. */
static void ring_push(ring_t *r, uintptr_t v) {
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (int spins = 0;; spins++) {
        uint32_t h = atomic_load(&r->head);
        if (t - h < RING_CAP) break;
        if (spins < SPINS) {
            __builtin_ia32_pause();
            continue;
        }
        atomic_store(&r->producer_parked, 1); /* Dekker with the consumer's head store */
        if (t - atomic_load(&r->head) >= RING_CAP) futex_wait(&r->head, h);
        atomic_store(&r->producer_parked, 0);
    }
    r->slot[t % RING_CAP] = v;
    atomic_store(&r->tail, t + 1);
    /* The exchange makes it one wake per park, however long the consumer takes to run. */
    if (atomic_load(&r->consumer_parked) &&
        t + 1 - atomic_load(&r->head) >= RING_CAP / 4 && atomic_exchange(&r->consumer_parked, 0))
        futex_wake(&r->tail);
}

/* The producer is done for now: wake a parked consumer whatever the backlog. */
static void ring_flush(ring_t *r) {
    if (atomic_exchange(&r->consumer_parked, 0)) futex_wake(&r->tail);
}

static uintptr_t ring_pop(ring_t *r) {
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    for (int spins = 0;; spins++) {
        uint32_t t = atomic_load(&r->tail);
        if (t != h) break;
        if (spins < SPINS) {
            __builtin_ia32_pause();
            continue;
        }
        atomic_store(&r->consumer_parked, 1); /* Dekker with the producer's tail store */
        if (atomic_load(&r->tail) == h) futex_wait(&r->tail, h);
        atomic_store(&r->consumer_parked, 0);
    }
    uintptr_t v = r->slot[h % RING_CAP];
    atomic_store(&r->head, h + 1);
    if (atomic_load(&r->producer_parked) &&
        atomic_load(&r->tail) - (h + 1) <= RING_CAP / 2 && atomic_exchange(&r->producer_parked, 0))
        futex_wake(&r->head);
    return v;
}

/* ---- binary min-heap with cancellation by index (shared by kind=heap and kind=queue) ---- */

typedef struct {
    long long deadline;
    int index; /* position in the heap, -1 when not queued */
} utimer;

typedef struct {
    utimer **a;
    int len, cap;
} uheap;

static void heap_swap(uheap *h, int i, int j) {
    utimer *t = h->a[i];
    h->a[i] = h->a[j];
    h->a[j] = t;
    h->a[i]->index = i;
    h->a[j]->index = j;
}

static void heap_up(uheap *h, int i) {
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->a[p]->deadline <= h->a[i]->deadline) break;
        heap_swap(h, i, p);
        i = p;
    }
}

static void heap_down(uheap *h, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && h->a[l]->deadline < h->a[m]->deadline) m = l;
        if (r < h->len && h->a[r]->deadline < h->a[m]->deadline) m = r;
        if (m == i) break;
        heap_swap(h, i, m);
        i = m;
    }
}

static void heap_push(uheap *h, utimer *t) {
    if (h->len == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->a = (utimer **)realloc(h->a, (size_t)h->cap * sizeof *h->a);
        if (!h->a) abort();
    }
    t->index = h->len;
    h->a[h->len++] = t;
    heap_up(h, t->index);
}

/* Cancel: remove from wherever it sits.  Returns 1 if it was queued. */
static int heap_remove(uheap *h, utimer *t) {
    int i = t->index;
    if (i < 0 || i >= h->len || h->a[i] != t) return 0;
    h->len--;
    if (i != h->len) {
        h->a[i] = h->a[h->len];
        h->a[i]->index = i;
        heap_down(h, i);
        heap_up(h, i);
    }
    t->index = -1;
    return 1;
}

/* ---- per creating thread: its queue, its partner, its counters ---- */

typedef struct tq tq;

typedef struct owner {
    tq *q;                               /* kind=queue: where its timers go */
    ring_t *ring;                        /* --cancel=other: the handoff to its partner */
    pid_t tid;
    _Atomic unsigned long long done;      /* handed timers the partner processed */
    _Atomic unsigned long long cancelled; /* ... and cancelled successfully */
    _Atomic unsigned long long cross;     /* cancels of this owner's timers by another thread */
    _Atomic unsigned long long fired;     /* its timers that fired (--fire) */
} owner;

static __thread owner *me;
static owner *owners[PW_MAX_THREADS + 1];
static atomic_int nowners;

/* ---- kind=queue: the timer queue with its firing thread ---- */

typedef struct {
    utimer u; /* first: the heap sees a utimer */
    tq *q;
    owner *owner;
    pid_t creator;
} qtimer;

struct tq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uheap h;
    long long wake_at; /* when the firing thread wakes anyway (NEVER: it waits for a signal) */
    unsigned long long inserts, fired, wakeups;
    long long *late; /* lateness of every fire since the last reset */
    size_t nlate, caplate;
    pthread_t firer;
} __attribute__((aligned(64)));

static tq *queues;
static int nqueues;

static void tq_insert(tq *q, qtimer *t) {
    pthread_mutex_lock(&q->mu);
    heap_push(&q->h, &t->u);
    q->inserts++;
    if (t->u.deadline < q->wake_at) { /* due before the firing thread wakes: wake it now */
        q->wake_at = t->u.deadline;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

/* Cancel and dispose; returns 1 if the timer was still queued (it had not fired). */
static int tq_cancel(qtimer *t) {
    tq *q = t->q;
    pthread_mutex_lock(&q->mu);
    int ok = heap_remove(&q->h, &t->u);
    pthread_mutex_unlock(&q->mu);
    if (ok && my_tid != t->creator) atomic_fetch_add_explicit(&t->owner->cross, 1,
                                                              memory_order_relaxed);
    if (ok) free(t);
    return ok;
}

static void *firing_thread(void *arg) {
    tq *q = (tq *)arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        long long now = pw_now_ns();
        if (q->h.len && q->h.a[0]->deadline <= now) {
            qtimer *t = (qtimer *)q->h.a[0];
            heap_remove(&q->h, &t->u);
            pthread_mutex_unlock(&q->mu);
            /* The callback: how late it runs, then the timer is disposed. */
            long long late = pw_now_ns() - t->u.deadline;
            owner *o = t->owner;
            free(t);
            pthread_mutex_lock(&q->mu);
            if (q->nlate == q->caplate) {
                q->caplate = q->caplate ? q->caplate * 2 : 4096;
                q->late = (long long *)realloc(q->late, q->caplate * sizeof *q->late);
                if (!q->late) abort();
            }
            q->late[q->nlate++] = late;
            q->fired++;
            atomic_fetch_add(&o->fired, 1); /* after the sample: a reset cannot race it */
            continue;
        }
        /* Woken early by an insert: wake_at is that timer's deadline, keep it.  Past it: the
         * next deadline, or sleep until an insert signals. */
        if (now >= q->wake_at) q->wake_at = q->h.len ? q->h.a[0]->deadline : NEVER;
        if (q->wake_at == NEVER) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else {
            struct timespec ts = {(time_t)(q->wake_at / 1000000000LL),
                                  (long)(q->wake_at % 1000000000LL)};
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        }
        q->wakeups++;
    }
    return NULL;
}

static void make_queues(void) {
    nqueues = partitioned ? (int)pw_threads : 1;
    queues = (tq *)aligned_alloc(64, sizeof(tq) * (size_t)nqueues);
    if (!queues) abort();
    memset(queues, 0, sizeof(tq) * (size_t)nqueues);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    /* Spin briefly before sleeping, as .NET's Monitor does. */
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < nqueues; i++) {
        tq *q = &queues[i];
        pthread_mutex_init(&q->mu, &ma);
        pthread_cond_init(&q->cv, &ca);
        q->wake_at = NEVER;
        if (pthread_create(&q->firer, NULL, firing_thread, q) != 0)
            pw_die("timers", "cannot start the firing thread of queue %d", i);
    }
}

/* Live timers for kind=queue: an hour away (spread over the second half hour), round-robin over
 * the queues; they never fire during a run. */
static qtimer **queue_live;

static void make_queue_live(void) {
    if (!live) return;
    queue_live = (qtimer **)calloc((size_t)live, sizeof *queue_live);
    long long now = pw_now_ns();
    for (long long i = 0; i < live; i++) {
        qtimer *t = (qtimer *)calloc(1, sizeof *t);
        if (!t || !queue_live) abort();
        t->u.deadline = now + HOUR_NS / 2 + (long long)((i * 2654435761LL) % (HOUR_NS / 2));
        t->q = &queues[i % nqueues];
        t->owner = me;
        t->creator = my_tid;
        tq_insert(t->q, t);
        queue_live[i] = t;
    }
}

/* ---- the partner thread of --cancel=other ---- */

static void *partner_thread(void *arg) {
    owner *o = (owner *)arg;
    my_tid = (pid_t)syscall(SYS_gettid);
    for (;;) {
        uintptr_t v = ring_pop(o->ring);
        int ok;
        if (is_queue) {
            ok = tq_cancel((qtimer *)v); /* counts the cross-thread cancel itself */
        } else {
            ok = is_timerfd ? close((int)v) == 0 : timer_delete((timer_t)v) == 0;
            if (ok && my_tid != o->tid) atomic_fetch_add_explicit(&o->cross, 1,
                                                                  memory_order_relaxed);
        }
        if (ok) atomic_fetch_add_explicit(&o->cancelled, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&o->done, 1, memory_order_release);
    }
    return NULL;
}

/* cancel=other: where the partner's counts stand when a loop hands it n more timers. */
typedef struct {
    unsigned long long c0;     /* cancels so far */
    unsigned long long target; /* hand-offs done once it has processed the n */
} partner_mark;

static partner_mark mark_partner(long long n) {
    partner_mark m;
    m.c0 = atomic_load(&me->cancelled);
    m.target = atomic_load(&me->done) + (unsigned long long)n;
    return m;
}

/* Wait until the partner processed everything handed to it; returns the cancels since the mark. */
static unsigned long long await_partner(partner_mark m) {
    ring_flush(me->ring);
    while (atomic_load_explicit(&me->done, memory_order_acquire) < m.target) {
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&me->cancelled) - m.c0;
}

/* ---- per-thread set-up (each timed thread, and the main thread for calibration) ---- */

static __thread uheap heap;        /* kind=heap */
static __thread utimer *heap_live; /* this thread's share of --live */
static __thread utimer op_timer;   /* the one churned by the heap loop */

static void thread_init(void *arg) {
    (void)arg;
    if (me) return;
    my_tid = (pid_t)syscall(SYS_gettid);
    me = (owner *)aligned_alloc(64, (sizeof(owner) + 63) / 64 * 64);
    if (!me) abort();
    memset(me, 0, sizeof *me);
    me->tid = my_tid;
    int idx = atomic_fetch_add(&nowners, 1);
    owners[idx] = me;
    /* The main thread (0, calibration) shares queue 0 with the last timed thread; the timed
     * threads 1..T get queues 1..T-1, 0: one each. */
    if (is_queue) me->q = &queues[idx % nqueues];
    if (cancel_other) {
        me->ring = (ring_t *)aligned_alloc(64, sizeof(ring_t));
        if (!me->ring) abort();
        memset(me->ring, 0, sizeof(ring_t));
        pthread_t p;
        if (pthread_create(&p, NULL, partner_thread, me) != 0)
            pw_die("timers", "cannot start the partner thread of --cancel=other");
    }
    if (is_heap) {
        long long share = live / pw_threads;
        heap_live = (utimer *)calloc((size_t)share + 1, sizeof *heap_live);
        if (!heap_live) abort();
        long long now = pw_now_ns();
        /* Live timers spread over the next hour, so the churned one lands among them. */
        for (long long i = 0; i < share; i++) {
            heap_live[i].deadline =
                now + HOUR_NS / 2 + (long long)((i * 2654435761LL) % (HOUR_NS / 2));
            heap_push(&heap, &heap_live[i]);
        }
    }
}

/* ---- the loops ---- */

static const struct itimerspec ONE_HOUR = {{0, 0}, {3600, 0}};

static unsigned long long loop_timerfd(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    partner_mark mark = {0, 0};
    if (cancel_other) mark = mark_partner(n);
    for (long long i = 0; i < n; i++) {
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (fd < 0) continue;
        if (timerfd_settime(fd, 0, &ONE_HOUR, NULL) != 0) {
            close(fd);
            continue;
        }
        if (cancel_other)
            ring_push(me->ring, (uintptr_t)fd); /* the partner closes it */
        else if (close(fd) == 0)
            cancelled++; /* closing the armed timerfd cancels it */
    }
    return cancel_other ? await_partner(mark) : cancelled;
}

static unsigned long long loop_posix(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    partner_mark mark = {0, 0};
    if (cancel_other) mark = mark_partner(n);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_NONE; /* never delivers anything: pure create/arm/delete cost */
    for (long long i = 0; i < n; i++) {
        timer_t t;
        if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) continue;
        if (timer_settime(t, 0, &ONE_HOUR, NULL) != 0) {
            timer_delete(t);
            continue;
        }
        if (cancel_other)
            ring_push(me->ring, (uintptr_t)t);
        else if (timer_delete(t) == 0)
            cancelled++;
    }
    return cancel_other ? await_partner(mark) : cancelled;
}

static unsigned long long loop_heap(long long n, void *arg) {
    (void)arg;
    unsigned long long cancelled = 0;
    for (long long i = 0; i < n; i++) {
        op_timer.deadline = pw_now_ns() + HOUR_NS; /* armed relative to now, as real timers are */
        heap_push(&heap, &op_timer);
        __asm__ __volatile__("" ::: "memory"); /* keep the insert: do not fold push+remove */
        cancelled += (unsigned long long)heap_remove(&heap, &op_timer);
    }
    return cancelled;
}

static qtimer *new_qtimer(long long due_in_ns) {
    qtimer *t = (qtimer *)malloc(sizeof *t);
    if (!t) abort();
    t->u.deadline = pw_now_ns() + due_in_ns;
    t->u.index = -1;
    t->q = me->q;
    t->owner = me;
    t->creator = my_tid;
    return t;
}

static unsigned long long loop_queue(long long n, void *arg) {
    (void)arg;
    if (fire_us > 0) {
        /* Timers that fire: create them all, then wait for the last one to fire. */
        unsigned long long f0 = atomic_load(&me->fired);
        for (long long i = 0; i < n; i++) tq_insert(me->q, new_qtimer(fire_us * 1000LL));
        while (atomic_load(&me->fired) < f0 + (unsigned long long)n) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        return atomic_load(&me->fired) - f0;
    }
    if (cancel_other) {
        partner_mark mark = mark_partner(n);
        for (long long i = 0; i < n; i++) {
            qtimer *t = new_qtimer(HOUR_NS);
            tq_insert(t->q, t);
            ring_push(me->ring, (uintptr_t)t);
        }
        return await_partner(mark);
    }
    unsigned long long cancelled = 0;
    for (long long i = 0; i < n; i++) {
        qtimer *t = new_qtimer(HOUR_NS);
        tq_insert(t->q, t);
        cancelled += (unsigned long long)tq_cancel(t);
    }
    return cancelled;
}

/* Between warm-up and the timed region (every thread parked): count only the timed region. */
static void reset_counts(void *arg) {
    (void)arg;
    for (int i = 0; i < nqueues; i++) {
        tq *q = &queues[i];
        pthread_mutex_lock(&q->mu);
        q->inserts = q->fired = q->wakeups = 0;
        q->nlate = 0;
        pthread_mutex_unlock(&q->mu);
    }
    for (int i = 0; i < atomic_load(&nowners); i++) atomic_store(&owners[i]->cross, 0);
}

/* ---- --live for the kernel kinds: N timers armed for the whole run ---- */

static int *live_fds;
static timer_t *live_timers;

static void make_live(void) {
    if (live == 0 || is_heap || is_queue) return;
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
    for (long long i = 0; queue_live && i < live; i++) n += tq_cancel(queue_live[i]);
    return n;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted xs. */
static long long pct(const long long *xs, size_t n, double p) {
    if (n == 0) return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return xs[k - 1];
}

static void check_combination(void) {
    const char *q = pw_str(params, PW_COUNT(params), "queue");
    if (!is_queue && strcmp(q, "global") != 0)
        pw_die("timers", "--queue=%s needs --kind=queue (the userspace timer queue); kind=%s keeps "
               "its timers in %s", q, kind,
               is_heap ? "one lock-free heap per thread already" : "the kernel's own queues");
    if (fire_us > 0 && !is_queue)
        pw_die("timers", "--fire=%lld needs --kind=queue (timers with a firing thread); kind=%s "
               "times create+cancel only", fire_us, kind);
    if (fire_us > 0 && cancel_other)
        pw_die("timers", "--fire=%lld: a firing timer is disposed by its callback; --cancel=other "
               "applies to never-firing timers (--fire=0)", fire_us);
    if (cancel_other && is_heap)
        pw_die("timers", "--cancel=other needs a queue another thread may touch; kind=heap is the "
               "lock-free per-thread floor: use --kind=queue");
}

int main(int argc, char **argv) {
    pw_parse(argc, argv, params, PW_COUNT(params));
    kind = pw_str(params, PW_COUNT(params), "kind");
    live = pw_int(params, PW_COUNT(params), "live");
    fire_us = pw_int(params, PW_COUNT(params), "fire");
    cancel_other = strcmp(pw_str(params, PW_COUNT(params), "cancel"), "other") == 0;
    partitioned = strcmp(pw_str(params, PW_COUNT(params), "queue"), "partitioned") == 0;
    is_queue = strcmp(kind, "queue") == 0;
    is_heap = strcmp(kind, "heap") == 0;
    is_timerfd = strcmp(kind, "timerfd") == 0;
    check_combination();
    pw_loop_fn loop = strcmp(kind, "timerfd") == 0 ? loop_timerfd
                      : strcmp(kind, "posix") == 0 ? loop_posix
                      : is_heap                    ? loop_heap
                                                   : loop_queue;
    if (is_queue) make_queues();
    thread_init(NULL); /* the main thread: calibration runs here */
    if (is_queue) make_queue_live();
    make_live();
    pw_result r;
    pw_run_ex(loop, thread_init, reset_counts, NULL, &r);

    /* What the timed region did, read before the live timers are dropped. */
    unsigned long long cross = 0, fired = 0, wakeups = 0;
    for (int i = 0; i < atomic_load(&nowners); i++) cross += atomic_load(&owners[i]->cross);
    int used = 0;
    size_t nlate = 0;
    for (int i = 0; i < nqueues; i++) {
        pthread_mutex_lock(&queues[i].mu);
        used += queues[i].inserts > 0;
        fired += queues[i].fired;
        wakeups += queues[i].wakeups;
        nlate += queues[i].nlate;
    }
    long long *late = (long long *)malloc((nlate + 1) * sizeof *late);
    size_t k = 0;
    for (int i = 0; i < nqueues; i++) {
        memcpy(late + k, queues[i].late, queues[i].nlate * sizeof *late);
        k += queues[i].nlate;
    }
    qsort(late, nlate, sizeof *late, cmp_ll);
    for (int i = 0; i < nqueues; i++) pthread_mutex_unlock(&queues[i].mu);
    long long live_cancelled = drop_live();

    char extra[768];
    int len = snprintf(extra, sizeof extra,
                       "\"workload\":\"timers/c\",\"created\":%lld,\"live_cancelled\":%lld,"
                       "\"timeout_s\":%s,\"parallelism\":\"threads\",\"fired\":%llu,"
                       "\"cross_thread_cancels\":%llu",
                       r.iterations * r.threads, is_heap ? 0 : live_cancelled,
                       fire_us > 0 ? "null" : "3600", fired, cross);
    if (is_queue)
        len += snprintf(extra + len, sizeof extra - (size_t)len,
                        ",\"queues\":%d,\"queues_made\":%d,\"firing_threads\":%d,"
                        "\"firing_wakeups\":%llu",
                        used, nqueues, nqueues, wakeups);
    long long slowest = 0; /* every timer of every thread fired within the slowest thread's time */
    for (int i = 0; i < r.threads; i++)
        if (r.per_thread_ns[i] > slowest) slowest = r.per_thread_ns[i];
    if (fire_us > 0)
        snprintf(extra + len, sizeof extra - (size_t)len,
                 ",\"fire_rate_per_s\":%.1f,\"lateness_p50_ns\":%lld,\"lateness_p99_ns\":%lld,"
                 "\"lateness_max_ns\":%lld",
                 slowest > 0 ? (double)fired * 1e9 / (double)slowest : 0.0,
                 pct(late, nlate, 50), pct(late, nlate, 99), nlate ? late[nlate - 1] : 0);
    pw_print_json(&r, params, PW_COUNT(params), extra);
    return 0;
}
