/*
 * perflab_workload.h - the shared skeleton of a C/C++ perflab workload (header-only, C99/C++).
 *
 * It implements the workload contract of docs/workload-manifest.md so each workload only writes
 * its hot operation:
 *   - flags: --name=value or --name value; an unknown flag, a bad number, a value out of
 *     [min, max] or not among the choices prints one line on stderr and exits with status 2;
 *   - --iterations=N (0 = calibrate to about 0.5 s, clamped) and --threads=N are always there;
 *   - warm-up in every thread, then all threads released from one barrier; each times itself
 *     with CLOCK_MONOTONIC; the timed region is announced (include/perflab_region.h) around it;
 *   - one JSON object on the last stdout line: ops, threads, iterations, warmup, per_thread_ns,
 *     ns_per_op (per-thread average), per_thread_cpu_ns / cpu_ns_per_op (the same from each
 *     thread's CPU clock: robust to a busy machine), ops_per_s (aggregate), checksum, params
 *     (+ extra keys).
 *
 * The timed loop runs inside perflab_timed_region() so callgrind can count just that region with
 * --collect-atstart=no --toggle-collect='*perflab_timed_region*' (use threads=1 there: the toggle
 * is process-wide).
 *
 * Usage:
 *   static unsigned long long loop(long long n, void *arg) { ... return checksum; }
 *   pw_param ps[] = { PW_INT("depth", 0, 0, 100000), PW_STR("kind", "software", "software|error") };
 *   pw_parse(argc, argv, ps, PW_COUNT(ps));
 *   pw_result r; pw_run(loop, NULL, &r);
 *   pw_print_json(&r, ps, PW_COUNT(ps), "\"thrown\":12");
 *
 * A workload with flags of its own kind (mmap/c: k/m/g sizes, several benches) sets pw_prog and
 * scans with pw_next_flag, pw_parse_u64 and pw_parse_bool; pw_usage_error and pw_fail are its
 * one-line exits (2 for bad input, 1 for a failed syscall).
 */
#ifndef PERFLAB_WORKLOAD_H
#define PERFLAB_WORKLOAD_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perflab_region.h"

#if defined(__GNUC__)
#define PW_UNUSED __attribute__((unused))
#else
#define PW_UNUSED
#endif

#define PW_MAX_THREADS 1024
#define PW_CALIBRATE_NS 500000000.0 /* iterations=0: aim for about 0.5 s per thread */
#define PW_MIN_ITERATIONS 100LL
#define PW_MAX_ITERATIONS 200000000LL

typedef enum { PW_T_INT, PW_T_STR } pw_type;

typedef struct {
    const char *name;
    pw_type type;
    long long ival;      /* default on input, value after pw_parse */
    long long min, max;  /* PW_T_INT bounds */
    const char *sval;    /* default on input, value after pw_parse */
    const char *choices; /* PW_T_STR: "a|b|c", NULL = any */
} pw_param;

#define PW_INT(name, def, lo, hi) {(name), PW_T_INT, (def), (lo), (hi), NULL, NULL}
#define PW_STR(name, def, choices) {(name), PW_T_STR, 0, 0, 0, (def), (choices)}
#define PW_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Set by pw_parse from the built-in flags. */
PW_UNUSED static long long pw_iterations = 0;
PW_UNUSED static long long pw_threads = 1;

PW_UNUSED static void pw_vdie(const char *prog, const char *fmt, va_list ap) {
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(2);
}

/* One line on stderr naming the problem (and the fix), exit 2: the contract for bad input. */
PW_UNUSED static void pw_die(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pw_vdie(prog, fmt, ap);
}

/* The program name in messages of workloads that parse their own flags (pw_parse uses argv[0]). */
PW_UNUSED static const char *pw_prog = "workload";

PW_UNUSED static void pw_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pw_vdie(pw_prog, fmt, ap);
}

/* A runtime failure (a syscall that should not fail): one line, exit 1. */
PW_UNUSED static void pw_fail(const char *what) {
    fprintf(stderr, "%s: %s failed: %s\n", pw_prog, what, strerror(errno));
    exit(1);
}

/* One step of a flag scan: argv[*i] must be --name=value or --name value (else one line, exit 2).
 * Sets name/len (not NUL-terminated) and value: after '=', else the next argument (*i moves past
 * it), else NULL.  The caller says what an unknown name or a missing value is. */
PW_UNUSED static void pw_next_flag(const char *prog, int argc, char **argv, int *i,
                                   const char **name, size_t *len, const char **value) {
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0) pw_die(prog, "unexpected argument '%s'; flags are --name=value", a);
    a += 2;
    const char *eq = strchr(a, '=');
    *name = a;
    *len = eq ? (size_t)(eq - a) : strlen(a);
    *value = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
}

PW_UNUSED static int pw_choice_ok(const char *choices, const char *v) {
    size_t n = strlen(v);
    const char *p = choices;
    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

PW_UNUSED static void pw_set(const char *prog, pw_param *p, const char *v) {
    if (p->type == PW_T_STR) {
        if (p->choices && !pw_choice_ok(p->choices, v))
            pw_die(prog, "--%s=%s is not allowed; choose one of %s", p->name, v, p->choices);
        p->sval = v;
        return;
    }
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || !end || end == v || *end)
        pw_die(prog, "--%s=%s is not an integer; give a whole number in [%lld, %lld]", p->name, v,
               p->min, p->max);
    if (x < p->min || x > p->max)
        pw_die(prog, "--%s=%lld is out of range; allowed: %lld..%lld", p->name, x, p->min, p->max);
    p->ival = x;
}

/* Parse argv into params (plus --iterations and --threads); exits 2 on any bad flag. */
PW_UNUSED static void pw_parse(int argc, char **argv, pw_param *params, int n) {
    const char *prog = argc > 0 ? argv[0] : "workload";
    const char *slash = strrchr(prog, '/');
    if (slash) prog = slash + 1;
    static pw_param builtin[2] = {PW_INT("iterations", 0, 0, PW_MAX_ITERATIONS),
                                  PW_INT("threads", 1, 1, PW_MAX_THREADS)};
    for (int i = 1; i < argc; i++) {
        const char *a, *v;
        size_t len;
        pw_next_flag(prog, argc, argv, &i, &a, &len, &v);
        pw_param *p = NULL;
        for (int k = 0; k < n + 2 && !p; k++) {
            pw_param *c = k < n ? &params[k] : &builtin[k - n];
            if (strlen(c->name) == len && strncmp(c->name, a, len) == 0) p = c;
        }
        if (!p) {
            fprintf(stderr, "%s: unknown flag --%.*s; known:", prog, (int)len, a);
            for (int k = 0; k < n; k++) fprintf(stderr, " --%s", params[k].name);
            fprintf(stderr, " --iterations --threads\n");
            exit(2);
        }
        if (!v) pw_die(prog, "--%s needs a value (--%s=VALUE)", p->name, p->name);
        pw_set(prog, p, v);
    }
    pw_iterations = builtin[0].ival;
    pw_threads = builtin[1].ival;
}

PW_UNUSED static long long pw_int(const pw_param *ps, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(ps[i].name, name) == 0) return ps[i].ival;
    abort();
}

PW_UNUSED static const char *pw_str(const pw_param *ps, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(ps[i].name, name) == 0) return ps[i].sval;
    abort();
}

PW_UNUSED static inline long long pw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* This thread's CPU time: next to the wall time it shows how much a busy machine stole. */
PW_UNUSED static inline long long pw_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* xorshift64: a seeded, reproducible sequence (the same in the Go and Rust ports of a workload). */
PW_UNUSED static inline uint64_t pw_xorshift64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* An unsigned integer flag (decimal, 0x hex or 0 octal) with an optional k/m/g suffix (powers of
 * 1024), checked against [lo, hi]; bad input is one line (pw_prog), exit 2. */
PW_UNUSED static uint64_t pw_parse_u64(const char *name, const char *s, uint64_t lo, uint64_t hi) {
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') pw_usage_error("--%s='%s' is not a non-negative integer", name, s ? s : "");
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024ull, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024ull * 1024, end++;
    else if (*end == 'g' || *end == 'G') mul = 1024ull * 1024 * 1024, end++;
    if (errno || *end) pw_usage_error("--%s='%s' is not an integer (suffixes k, m, g allowed)", name, s);
    if (v > hi / mul || v * mul < lo || v * mul > hi)
        pw_usage_error("--%s=%s is out of range [%" PRIu64 ", %" PRIu64 "]", name, s, lo, hi);
    return v * mul;
}

/* true/1/yes or false/0/no; anything else is one line (pw_prog), exit 2. */
PW_UNUSED static int pw_parse_bool(const char *name, const char *s) {
    if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes")) return 1;
    if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) return 0;
    pw_usage_error("--%s='%s' is not a boolean; use true or false", name, s);
    return 0;
}

/* The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled ("unknown" if absent). */
PW_UNUSED static void pw_thp(char *out, size_t n) {
    snprintf(out, n, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return;
    char line[256];
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a) < n) {
            memcpy(out, a + 1, (size_t)(b - a - 1));
            out[b - a - 1] = 0;
        }
    }
    fclose(f);
}

/* The hot loop: run n operations, return the checksum (e.g. exceptions caught). */
typedef unsigned long long (*pw_loop_fn)(long long n, void *arg);

/* Per-thread setup (e.g. install a signal stack); may be NULL. */
typedef void (*pw_thread_init_fn)(void *arg);

/* Called once in the main thread after every thread warmed up and before the timed region starts
 * (all workers are parked on a barrier, so it may reset shared counters); may be NULL. */
typedef void (*pw_before_timed_fn)(void *arg);

typedef struct {
    long long iterations; /* per thread */
    long long warmup;     /* untimed operations per thread before the timed region */
    int threads;
    int calibrated;
    long long per_thread_ns[PW_MAX_THREADS];
    long long per_thread_cpu_ns[PW_MAX_THREADS];
    unsigned long long per_thread_checksum[PW_MAX_THREADS];
    unsigned long long checksum;
    long long wall_ns;
} pw_result;

/* The timed region: a real, named frame so callgrind's --toggle-collect can find it. */
#if defined(__GNUC__)
__attribute__((noinline, used))
#endif
PW_UNUSED static unsigned long long perflab_timed_region(pw_loop_fn loop, void *arg, long long n) {
    unsigned long long c = loop(n, arg);
#if defined(__GNUC__)
    __asm__ __volatile__("" ::: "memory"); /* keep the call a call, not a tail jump */
#endif
    return c;
}

typedef struct {
    pw_loop_fn loop;
    pw_thread_init_fn init;
    void *arg;
    long long n;
    long long warmup;
    pthread_barrier_t *ready, *go;
    long long ns, cpu_ns;
    unsigned long long checksum;
} pw_thread;

PW_UNUSED static void *pw_thread_main(void *p) {
    pw_thread *t = (pw_thread *)p;
    if (t->init) t->init(t->arg);
    if (t->warmup > 0) t->loop(t->warmup, t->arg); /* warm caches, lazy binding, unwinder tables */
    pthread_barrier_wait(t->ready);
    pthread_barrier_wait(t->go);
    long long c0 = pw_thread_cpu_ns();
    long long t0 = pw_now_ns();
    t->checksum = perflab_timed_region(t->loop, t->arg, t->n);
    t->ns = pw_now_ns() - t0;
    t->cpu_ns = pw_thread_cpu_ns() - c0;
    return NULL;
}

/* Calibrate (iterations=0), warm up, run every thread from one barrier, fill r.  `init` runs
 * first in each thread (and in the calling thread before calibration); `before_timed` runs once
 * between the warm-up and the timed region.  Both may be NULL. */
PW_UNUSED static void pw_run_ex(pw_loop_fn loop, pw_thread_init_fn init, pw_before_timed_fn before_timed,
                      void *arg, pw_result *r) {
    memset(r, 0, sizeof *r);
    r->threads = (int)pw_threads;
    long long n = pw_iterations;
    if (init) init(arg);
    if (n == 0) {
        /* Double until one batch takes >= 20 ms, then scale to the target (also a warm-up). */
        long long k = 16, ns = 0;
        for (;;) {
            long long t0 = pw_now_ns();
            loop(k, arg);
            ns = pw_now_ns() - t0;
            if (ns >= 20000000LL || k >= PW_MAX_ITERATIONS) break;
            k *= 2;
        }
        double per = (double)ns / (double)k;
        n = (long long)(PW_CALIBRATE_NS / (per > 0 ? per : 1));
        if (n < PW_MIN_ITERATIONS) n = PW_MIN_ITERATIONS;
        if (n > PW_MAX_ITERATIONS) n = PW_MAX_ITERATIONS;
        r->calibrated = 1;
    }
    r->iterations = n;
    long long warmup = n / 10 < 1000 ? n / 10 : 1000;
    if (warmup < 10) warmup = 10;
    r->warmup = warmup;

    pthread_barrier_t ready, go;
    pthread_barrier_init(&ready, NULL, (unsigned)r->threads + 1);
    pthread_barrier_init(&go, NULL, (unsigned)r->threads + 1);
    pw_thread *ts = (pw_thread *)calloc((size_t)r->threads, sizeof *ts);
    pthread_t *tid = (pthread_t *)calloc((size_t)r->threads, sizeof *tid);
    for (int i = 0; i < r->threads; i++) {
        ts[i].loop = loop;
        ts[i].init = init;
        ts[i].arg = arg;
        ts[i].n = n;
        ts[i].warmup = warmup;
        ts[i].ready = &ready;
        ts[i].go = &go;
        if (pthread_create(&tid[i], NULL, pw_thread_main, &ts[i]) != 0) {
            fprintf(stderr, "workload: cannot create thread %d of %d\n", i + 1, r->threads);
            exit(1);
        }
    }
    pthread_barrier_wait(&ready); /* everyone warmed up */
    if (before_timed) before_timed(arg);
    perflab_region_begin();
    long long w0 = pw_now_ns();
    pthread_barrier_wait(&go);
    for (int i = 0; i < r->threads; i++) pthread_join(tid[i], NULL);
    r->wall_ns = pw_now_ns() - w0;
    perflab_region_end();
    for (int i = 0; i < r->threads; i++) {
        r->per_thread_ns[i] = ts[i].ns;
        r->per_thread_cpu_ns[i] = ts[i].cpu_ns;
        r->per_thread_checksum[i] = ts[i].checksum;
        r->checksum += ts[i].checksum;
    }
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&go);
    free(ts);
    free(tid);
}

PW_UNUSED static void pw_run(pw_loop_fn loop, void *arg, pw_result *r) {
    pw_run_ex(loop, NULL, NULL, arg, r);
}

/* Print the one JSON line.  `extra`: more "key":value pairs (no braces), or NULL. */
PW_UNUSED static void pw_print_json(const pw_result *r, const pw_param *ps, int n, const char *extra) {
    double sum = 0, cpu = 0, slowest = 0;
    for (int i = 0; i < r->threads; i++) {
        sum += (double)r->per_thread_ns[i] / (double)r->iterations;
        cpu += (double)r->per_thread_cpu_ns[i] / (double)r->iterations;
        if ((double)r->per_thread_ns[i] > slowest) slowest = (double)r->per_thread_ns[i];
    }
    long long ops = r->iterations * r->threads;
    printf("{\"ops\":%lld,\"threads\":%d,\"iterations\":%lld,\"warmup\":%lld,\"calibrated\":%s,"
           "\"per_thread_ns\":[",
           ops, r->threads, r->iterations, r->warmup, r->calibrated ? "true" : "false");
    for (int i = 0; i < r->threads; i++) printf("%s%lld", i ? "," : "", r->per_thread_ns[i]);
    printf("],\"per_thread_cpu_ns\":[");
    for (int i = 0; i < r->threads; i++) printf("%s%lld", i ? "," : "", r->per_thread_cpu_ns[i]);
    printf("],\"ns_per_op\":%.3f,\"cpu_ns_per_op\":%.3f,\"ops_per_s\":%.1f,\"wall_ns\":%lld,"
           "\"checksum\":%llu",
           sum / r->threads, cpu / r->threads, slowest > 0 ? (double)ops * 1e9 / slowest : 0.0,
           r->wall_ns, r->checksum);
    if (extra && *extra) printf(",%s", extra);
    printf(",\"params\":{\"iterations\":%lld,\"threads\":%d", pw_iterations, r->threads);
    for (int i = 0; i < n; i++) {
        if (ps[i].type == PW_T_INT)
            printf(",\"%s\":%lld", ps[i].name, ps[i].ival);
        else
            printf(",\"%s\":\"%s\"", ps[i].name, ps[i].sval); /* values are from fixed choices */
    }
    printf("}}\n");
    fflush(stdout);
}

#endif /* PERFLAB_WORKLOAD_H */
