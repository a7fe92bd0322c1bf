/*
 * wl.h - the small bits of the perflab workload contract these C workloads share: flag parsing
 * (--name=value or --name value; bad input -> one stderr line, exit 2), the monotonic clock,
 * xorshift64 and the THP setting.  Hand-written (a few lines each) so the workload builds with
 * nothing but a C compiler.
 */
#ifndef PERFLAB_MMAP_WL_H
#define PERFLAB_MMAP_WL_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *wl_prog = "workload";

/* One line on stderr naming the problem (and the fix), exit 2: the contract for bad input. */
static void wl_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", wl_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* Runtime failure (a syscall that should not fail): one line, exit 1. */
static void wl_die(const char *what) {
    fprintf(stderr, "%s: %s failed: %s\n", wl_prog, what, strerror(errno));
    exit(1);
}

static inline uint64_t wl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t wl_xorshift64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Flag table: name -> value string (NULL = not given). */
typedef struct {
    const char *name;
    const char *value;
} wl_flag;

static void wl_parse(int argc, char **argv, wl_flag *flags, size_t n) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            wl_usage_error("unexpected argument '%s'; flags are --name=value", a);
        a += 2;
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : NULL;
        size_t k;
        for (k = 0; k < n; k++)
            if (strlen(flags[k].name) == len && strncmp(flags[k].name, a, len) == 0) break;
        if (k == n) wl_usage_error("unknown flag '--%.*s'; see the workload.toml for its parameters", (int)len, a);
        if (!val) {
            if (i + 1 >= argc) wl_usage_error("flag '--%s' needs a value", flags[k].name);
            val = argv[++i];
        }
        flags[k].value = val;
    }
}

static const char *wl_get(wl_flag *flags, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(flags[k].name, name) == 0) return flags[k].value;
    return NULL;
}

/* Integer with optional k/m/g suffix (powers of 1024), range-checked. */
static uint64_t wl_parse_u64(const char *name, const char *s, uint64_t lo, uint64_t hi) {
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') wl_usage_error("--%s='%s' is not a non-negative integer", name, s ? s : "");
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024ull, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024ull * 1024, end++;
    else if (*end == 'g' || *end == 'G') mul = 1024ull * 1024 * 1024, end++;
    if (errno || *end) wl_usage_error("--%s='%s' is not an integer (suffixes k, m, g allowed)", name, s);
    if (v > hi / mul || v * mul < lo || v * mul > hi)
        wl_usage_error("--%s=%s is out of range [%" PRIu64 ", %" PRIu64 "]", name, s, lo, hi);
    return v * mul;
}

static int wl_parse_bool(const char *name, const char *s) {
    if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes")) return 1;
    if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) return 0;
    wl_usage_error("--%s='%s' is not a boolean; use true or false", name, s);
    return 0;
}

/* The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled ("unknown" if absent). */
static void wl_thp(char *out, size_t n) {
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

#endif
