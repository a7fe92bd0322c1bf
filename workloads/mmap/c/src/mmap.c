/*
 * perflab mmap workloads (after the LKML thread "lmbench lat_mmap slowdown with CONFIG_PARAVIRT",
 * Jan 2009).  One binary, three benches selected by --bench:
 *
 *   churn          a seeded, fully deterministic sequence of anonymous mmap / munmap / mremap
 *                  operations over SLOTS slots (the same sequence, and checksum, as the Rust and
 *                  Go versions in ../rust and ../go; see CHURN SPEC below).
 *   lat_mmap       lmbench lat_mmap: map a file of SIZE shared read-write, write one byte every
 *                  16 KiB across the first tenth (or, --random=true, across the whole mapping in
 *                  a random order), unmap.  ns per map/unmap, by size.
 *   lat_pagefault  lmbench lat_pagefault: map a file (>= 1 MiB) read-only, msync(MS_INVALIDATE),
 *                  read one byte a page in a random order, unmap; minus the same without the
 *                  reads.  ns per page and per minor fault (getrusage).
 *
 * CHURN SPEC (keep ../rust/src/main.rs and ../go/main.go in step):
 *   rng: xorshift64 (13, 7, 17), state = seed + t * 0x9E3779B97F4A7C15 for thread t.
 *   h = 0xcbf29ce484222325; mix(v): h = (h ^ v) * 0x100000001b3 (FNV-1a step, 64-bit wrap).
 *   each op: r = next(); s = r % SLOTS;
 *     slot empty:           np = 1 + ((r >> 20) & 15); prot = {NONE, R, RW, RW}[(r >> 24) & 3];
 *                           mmap(np pages, prot, private anonymous)            kind 1
 *     else if (r >> 28) & 1: munmap, slot empty (np = 0)                      kind 2
 *     else:                 np = 1 + ((r >> 20) & 15); mremap(MAYMOVE) to np   kind 3
 *     mix(kind << 40 | s << 16 | np << 8 | prot)      (prot bits: R = 1, W = 2)
 *     if the slot is mapped RW and ((r >> 32) & 7) == 0 (probability 1/8):
 *       r2 = next(); pg = r2 % np; off = (r2 >> 8) & 4095; val = (r2 >> 24) & 255;
 *       old = byte at pg * PAGE + off; write val there; mix(1 << 48 | pg << 20 | off << 8 | old)
 *   checksum = (sum over threads of h) & (2^53 - 1)   (exact in a double, fits SQLite).
 *   Addresses never enter the checksum; the old bytes do, and they are deterministic because
 *   fresh anonymous pages are zero and mremap keeps contents.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perflab_workload.h" /* workloads/common/c: flags, clock, one-line errors */

#define MAX_PAGES 16
#define DEFAULT_SEED 88172645463325252ull
#define WARMUP_SALT 0xD1B54A32D192ED03ull
#define MASK53 ((1ull << 53) - 1)

static size_t page_size;

/* ------------------------------------------------------------------ churn */

typedef struct {
    uint8_t *addr;
    uint32_t pages;
    uint32_t prot;
} slot_t;

typedef struct {
    uint64_t rng, h;
    uint64_t n_mmap, n_munmap, n_mremap, n_touch;
    uint32_t nslots;
    slot_t *slots;
} churn_t;

static const int PROTS[4] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE};

static void churn_init(churn_t *c, uint64_t seed, uint32_t nslots) {
    memset(c, 0, sizeof *c);
    c->rng = seed ? seed : 1; /* xorshift's one forbidden state */
    c->h = 0xcbf29ce484222325ull;
    c->nslots = nslots;
    c->slots = calloc(nslots, sizeof(slot_t));
    if (!c->slots) pw_fail("calloc");
}

static inline void mix(churn_t *c, uint64_t v) { c->h = (c->h ^ v) * 0x100000001b3ull; }

static void churn_ops(churn_t *c, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = pw_xorshift64(&c->rng);
        uint32_t s = (uint32_t)(r % c->nslots);
        slot_t *sl = &c->slots[s];
        uint64_t kind;
        if (sl->pages == 0) {
            uint32_t np = 1 + (uint32_t)((r >> 20) & 15);
            int prot = PROTS[(r >> 24) & 3];
            void *p = mmap(NULL, np * page_size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) pw_fail("mmap");
            sl->addr = p, sl->pages = np, sl->prot = (uint32_t)prot;
            kind = 1, c->n_mmap++;
        } else if ((r >> 28) & 1) {
            if (munmap(sl->addr, sl->pages * page_size)) pw_fail("munmap");
            sl->addr = NULL, sl->pages = 0;
            kind = 2, c->n_munmap++;
        } else {
            uint32_t np = 1 + (uint32_t)((r >> 20) & 15);
            void *p = mremap(sl->addr, sl->pages * page_size, np * page_size, MREMAP_MAYMOVE);
            if (p == MAP_FAILED) pw_fail("mremap");
            sl->addr = p, sl->pages = np;
            kind = 3, c->n_mremap++;
        }
        mix(c, kind << 40 | (uint64_t)s << 16 | (uint64_t)sl->pages << 8 | (sl->pages ? sl->prot : 0));
        if (sl->pages && sl->prot == (PROT_READ | PROT_WRITE) && ((r >> 32) & 7) == 0) {
            uint64_t r2 = pw_xorshift64(&c->rng);
            uint64_t pg = r2 % sl->pages, off = (r2 >> 8) & 4095;
            volatile uint8_t *b = sl->addr + pg * page_size + off;
            uint64_t old = *b;
            *b = (uint8_t)(r2 >> 24);
            mix(c, 1ull << 48 | pg << 20 | off << 8 | old);
            c->n_touch++;
        }
    }
}

static void churn_free(churn_t *c) {
    for (uint32_t s = 0; s < c->nslots; s++)
        if (c->slots[s].pages) munmap(c->slots[s].addr, c->slots[s].pages * page_size);
    free(c->slots);
}

/* The timed loops run inside functions named perflab_timed_region_*, so callgrind can count just
 * them (--toggle-collect='*perflab_timed_region*', the manifest's region_symbol); warm-up and
 * calibration call the loops directly. */
__attribute__((noinline, used)) static void perflab_timed_region_churn(churn_t *c, uint64_t n) {
    churn_ops(c, n);
    __asm__ __volatile__("" ::: "memory"); /* a call, not a tail jump */
}

typedef struct {
    pthread_t tid;
    uint64_t seed, n, warmup, ns;
    uint32_t nslots;
    churn_t c;
    pthread_barrier_t *ready, *go;
} churn_thread_t;

static void *churn_thread(void *arg) {
    churn_thread_t *t = arg;
    /* Warm-up on a throw-away state, so the timed sequence starts from empty slots. */
    churn_t w;
    churn_init(&w, t->seed ^ WARMUP_SALT, t->nslots);
    churn_ops(&w, t->warmup);
    churn_free(&w);
    churn_init(&t->c, t->seed, t->nslots);
    pthread_barrier_wait(t->ready);
    pthread_barrier_wait(t->go);
    uint64_t t0 = pw_now_ns();
    perflab_timed_region_churn(&t->c, t->n);
    t->ns = pw_now_ns() - t0;
    return NULL;
}

static void print_per_thread(const uint64_t *ns, unsigned n) {
    printf("\"per_thread_ns\":[");
    for (unsigned i = 0; i < n; i++) printf("%s%" PRIu64, i ? "," : "", ns[i]);
    printf("]");
}

static int run_churn(uint64_t iterations, int calibrate, unsigned threads, uint64_t seed,
                     uint32_t nslots) {
    if (calibrate) {
        /* Double a single-threaded trial until it takes 50 ms, then scale to about 0.5 s. */
        uint64_t n = 1000, ns = 0;
        for (;;) {
            churn_t w;
            churn_init(&w, seed ^ WARMUP_SALT, nslots);
            uint64_t t0 = pw_now_ns();
            churn_ops(&w, n);
            ns = pw_now_ns() - t0;
            churn_free(&w);
            if (ns >= 50000000ull || n >= 20000000ull) break;
            n *= 2;
        }
        iterations = (uint64_t)((double)n * 5e8 / (double)(ns ? ns : 1));
        if (iterations < 10000) iterations = 10000;
        if (iterations > 20000000) iterations = 20000000;
    }
    uint64_t warmup = iterations / 10 < 20000 ? iterations / 10 : 20000;
    pthread_barrier_t ready, go;
    pthread_barrier_init(&ready, NULL, threads + 1);
    pthread_barrier_init(&go, NULL, threads + 1);
    churn_thread_t *ts = calloc(threads, sizeof *ts);
    if (!ts) pw_fail("calloc");
    for (unsigned i = 0; i < threads; i++) {
        ts[i].seed = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
        ts[i].n = iterations, ts[i].warmup = warmup, ts[i].nslots = nslots;
        ts[i].ready = &ready, ts[i].go = &go;
        if (pthread_create(&ts[i].tid, NULL, churn_thread, &ts[i])) pw_fail("pthread_create");
    }
    pthread_barrier_wait(&ready);
    fprintf(stderr, "mmap churn: timed region begins (%u thread(s) x %" PRIu64 " ops)\n", threads,
            iterations);
    perflab_region_begin();
    pthread_barrier_wait(&go);
    for (unsigned i = 0; i < threads; i++) pthread_join(ts[i].tid, NULL);
    perflab_region_end();

    uint64_t h = 0, nm = 0, nu = 0, nr = 0, nt = 0, maxns = 1;
    double nsop = 0;
    uint64_t *per = calloc(threads, sizeof *per);
    for (unsigned i = 0; i < threads; i++) {
        h += ts[i].c.h;
        nm += ts[i].c.n_mmap, nu += ts[i].c.n_munmap, nr += ts[i].c.n_mremap, nt += ts[i].c.n_touch;
        per[i] = ts[i].ns;
        if (ts[i].ns > maxns) maxns = ts[i].ns;
        nsop += iterations ? (double)ts[i].ns / (double)iterations : 0;
        churn_free(&ts[i].c);
    }
    nsop /= threads;
    char thp[32];
    pw_thp(thp, sizeof thp);
    uint64_t ops = iterations * threads;
    printf("{\"workload\":\"mmap\",\"bench\":\"churn\",\"lang\":\"c\",\"ops\":%" PRIu64
           ",\"threads\":%u,",
           ops, threads);
    print_per_thread(per, threads);
    printf(",\"ns_per_op\":%.3f,\"ops_per_s\":%.1f,\"checksum\":%" PRIu64
           ",\"counts\":{\"mmap\":%" PRIu64 ",\"munmap\":%" PRIu64 ",\"mremap\":%" PRIu64
           ",\"touch\":%" PRIu64 "},\"thp\":\"%s\",\"page_size\":%zu,"
           "\"params\":{\"bench\":\"churn\",\"iterations\":%" PRIu64 ",\"threads\":%u,\"seed\":%" PRIu64
           ",\"slots\":%u}}\n",
           nsop, (double)ops * 1e9 / (double)maxns, (uint64_t)(h & MASK53), nm, nu, nr, nt, thp, page_size,
           iterations, threads, seed, nslots);
    free(per);
    free(ts);
    return 0;
}

/* ------------------------------------------------------------- file helpers */

/* A file of `size` bytes, every page filled (byte k of page p = (p * 7 + 1) & 255 at offset 0,
 * zero elsewhere), created in a fresh temp dir under `dir` and unlinked at once: the open fd
 * keeps it alive and nothing is left behind even if the process is killed. */
static int make_file(const char *dir, uint64_t size) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/perflab-mmap-XXXXXX", dir) >= (int)sizeof path)
        pw_usage_error("--dir='%s' is too long", dir);
    if (!mkdtemp(path))
        pw_usage_error("cannot create a temp dir in --dir='%s' (%s); pass a writable directory",
                       dir, strerror(errno));
    char file[4200];
    snprintf(file, sizeof file, "%s/data", path);
    int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) pw_fail("open");
    unlink(file);
    rmdir(path);
    uint8_t *buf = calloc(1, page_size);
    if (!buf) pw_fail("calloc");
    for (uint64_t p = 0; p * page_size < size; p++) {
        buf[0] = (uint8_t)(p * 7 + 1);
        size_t len = size - p * page_size < page_size ? size - p * page_size : page_size;
        if (pwrite(fd, buf, len, (off_t)(p * page_size)) != (ssize_t)len) pw_fail("pwrite");
    }
    free(buf);
    return fd;
}

static void shuffle(uint64_t *a, uint64_t n, uint64_t seed) {
    uint64_t s = seed ? seed : 1;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = pw_xorshift64(&s) % i;
        uint64_t t = a[i - 1];
        a[i - 1] = a[j], a[j] = t;
    }
}

/* ------------------------------------------------------------------ lat_mmap */

#define STRIDE 16384u
#define MAX_SIZES 32

typedef struct {
    uint64_t size, n, writes, ns;
    uint64_t *offs;
    int fd;
} msize_t;

static void map_write_unmap(msize_t *m) {
    uint8_t *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED) pw_fail("mmap");
    for (uint64_t i = 0; i < m->writes; i++) ((volatile uint8_t *)p)[m->offs[i]] = (uint8_t)i;
    if (munmap(p, m->size)) pw_fail("munmap");
}

__attribute__((noinline, used)) static void perflab_timed_region_lat_mmap(msize_t *ms, unsigned nsz) {
    for (unsigned k = 0; k < nsz; k++) {
        uint64_t t0 = pw_now_ns();
        for (uint64_t i = 0; i < ms[k].n; i++) map_write_unmap(&ms[k]);
        ms[k].ns = pw_now_ns() - t0;
    }
    __asm__ __volatile__("" ::: "memory");
}

static int run_lat_mmap(uint64_t iterations, int calibrate, const char *sizes, int random,
                        const char *dir, uint64_t seed) {
    msize_t ms[MAX_SIZES];
    unsigned nsz = 0;
    char *copy = strdup(sizes), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (nsz == MAX_SIZES) pw_usage_error("--sizes has more than %d sizes", MAX_SIZES);
        ms[nsz].size = pw_parse_u64("sizes", tok, page_size, 1ull << 32);
        ms[nsz].size = (ms[nsz].size + page_size - 1) / page_size * page_size;
        nsz++;
    }
    free(copy);
    if (nsz == 0) pw_usage_error("--sizes is empty; give sizes such as 64k,1m,16m");
    for (unsigned k = 0; k < nsz; k++) {
        msize_t *m = &ms[k];
        /* Sequential: every 16 KiB across the first tenth (at least one write); random: every
         * 16 KiB of the whole mapping, in a shuffled order. */
        uint64_t span = random ? m->size : m->size / 10;
        m->writes = span ? (span + STRIDE - 1) / STRIDE : 1;
        m->offs = malloc(m->writes * sizeof(uint64_t));
        if (!m->offs) pw_fail("malloc");
        for (uint64_t i = 0; i < m->writes; i++) m->offs[i] = i * STRIDE;
        if (random) shuffle(m->offs, m->writes, seed + k);
        m->fd = make_file(dir, m->size);
        for (int w = 0; w < 3; w++) map_write_unmap(m); /* warm-up: page cache populated */
        m->n = iterations;
        if (calibrate) {
            uint64_t n = 1, ns;
            for (;;) {
                uint64_t t0 = pw_now_ns();
                for (uint64_t i = 0; i < n; i++) map_write_unmap(m);
                ns = pw_now_ns() - t0;
                if (ns >= 20000000ull || n >= 1000000) break;
                n *= 2;
            }
            m->n = (uint64_t)((double)n * 5e8 / nsz / (double)(ns ? ns : 1));
            if (m->n < 1) m->n = 1;
            if (m->n > 1000000) m->n = 1000000;
        }
    }
    fprintf(stderr, "mmap lat_mmap: timed region begins (%u size(s))\n", nsz);
    perflab_region_begin();
    perflab_timed_region_lat_mmap(ms, nsz);
    perflab_region_end();
    uint64_t ops = 0, ns = 0, writes = 0;
    for (unsigned k = 0; k < nsz; k++) {
        ops += ms[k].n, ns += ms[k].ns, writes += ms[k].n * ms[k].writes;
        close(ms[k].fd);
    }
    char thp[32];
    pw_thp(thp, sizeof thp);
    printf("{\"workload\":\"mmap\",\"bench\":\"lat_mmap\",\"lang\":\"c\",\"ops\":%" PRIu64
           ",\"threads\":1,\"per_thread_ns\":[%" PRIu64 "],\"ns_per_op\":%.3f,\"ops_per_s\":%.1f,"
           "\"checksum\":%" PRIu64 ",\"by_size\":[",
           ops, ns, ops ? (double)ns / (double)ops : 0.0, ns ? (double)ops * 1e9 / (double)ns : 0.0,
           writes);
    for (unsigned k = 0; k < nsz; k++) {
        printf("%s{\"size\":%" PRIu64 ",\"iterations\":%" PRIu64 ",\"writes_per_map\":%" PRIu64
               ",\"us_per_op\":%.4f}",
               k ? "," : "", ms[k].size, ms[k].n, ms[k].writes,
               ms[k].n ? (double)ms[k].ns / (double)ms[k].n / 1000.0 : 0.0);
        free(ms[k].offs);
    }
    printf("],\"thp\":\"%s\",\"page_size\":%zu,\"params\":{\"bench\":\"lat_mmap\",\"iterations\":%" PRIu64
           ",\"threads\":1,\"sizes\":\"%s\",\"random\":%s,\"dir\":\"%s\",\"seed\":%" PRIu64 "}}\n",
           thp, page_size, calibrate ? 0 : iterations, sizes, random ? "true" : "false", dir, seed);
    return 0;
}

/* ------------------------------------------------------------- lat_pagefault */

static uint64_t minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt;
}

static uint8_t *map_invalidate(int fd, uint64_t size) {
    uint8_t *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) pw_fail("mmap");
    if (msync(p, size, MS_INVALIDATE)) pw_fail("msync");
    return p;
}

static uint64_t touch_pages(const uint8_t *p, const uint64_t *order, uint64_t pages) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < pages; i++) sum += ((const volatile uint8_t *)p)[order[i] * page_size];
    return sum;
}

typedef struct {
    uint64_t base_ns, full_ns, base_flt, full_flt, sum;
} pf_totals_t;

__attribute__((noinline, used)) static void perflab_timed_region_lat_pagefault(
    pf_totals_t *t, int fd, uint64_t size, const uint64_t *order, uint64_t pages, uint64_t n) {
    /* Interleave the baseline (map + msync + unmap) with the full cycle so drift hits both. */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t f0 = minflt(), t0 = pw_now_ns();
        uint8_t *p = map_invalidate(fd, size);
        if (munmap(p, size)) pw_fail("munmap");
        uint64_t t1 = pw_now_ns(), f1 = minflt();
        p = map_invalidate(fd, size);
        t->sum += touch_pages(p, order, pages);
        if (munmap(p, size)) pw_fail("munmap");
        uint64_t t2 = pw_now_ns(), f2 = minflt();
        t->base_ns += t1 - t0, t->full_ns += t2 - t1;
        t->base_flt += f1 - f0, t->full_flt += f2 - f1;
    }
    __asm__ __volatile__("" ::: "memory");
}

static int run_lat_pagefault(uint64_t iterations, int calibrate, uint64_t size, const char *dir,
                             uint64_t seed) {
    size = (size + page_size - 1) / page_size * page_size;
    uint64_t pages = size / page_size;
    uint64_t *order = malloc(pages * sizeof(uint64_t));
    if (!order) pw_fail("malloc");
    uint64_t expect_sum = 0;
    for (uint64_t i = 0; i < pages; i++) order[i] = i, expect_sum += (uint8_t)(i * 7 + 1);
    shuffle(order, pages, seed);
    int fd = make_file(dir, size);
    /* Warm-up: page cache populated, code paths hot. */
    for (int w = 0; w < 3; w++) {
        uint8_t *p = map_invalidate(fd, size);
        touch_pages(p, order, pages);
        munmap(p, size);
    }
    uint64_t n = iterations;
    if (calibrate) {
        uint64_t t0 = pw_now_ns(), k = 0;
        while (pw_now_ns() - t0 < 50000000ull && k < 100000) {
            uint8_t *p = map_invalidate(fd, size);
            touch_pages(p, order, pages);
            munmap(p, size);
            k++;
        }
        uint64_t ns = pw_now_ns() - t0;
        n = (uint64_t)((double)k * 5e8 / (double)(ns ? ns : 1));
        if (n < 1) n = 1;
        if (n > 1000000) n = 1000000;
    }
    pf_totals_t tot = {0};
    fprintf(stderr, "mmap lat_pagefault: timed region begins (%" PRIu64 " x %" PRIu64 " pages)\n",
            n, pages);
    perflab_region_begin();
    perflab_timed_region_lat_pagefault(&tot, fd, size, order, pages, n);
    perflab_region_end();
    uint64_t base_ns = tot.base_ns, full_ns = tot.full_ns, base_flt = tot.base_flt,
             full_flt = tot.full_flt, sum = tot.sum;
    close(fd);
    free(order);
    uint64_t touched = n * pages;
    double net = (double)full_ns - (double)base_ns;
    uint64_t faults = full_flt > base_flt ? full_flt - base_flt : 0;
    char thp[32];
    pw_thp(thp, sizeof thp);
    printf("{\"workload\":\"mmap\",\"bench\":\"lat_pagefault\",\"lang\":\"c\",\"ops\":%" PRIu64
           ",\"threads\":1,\"per_thread_ns\":[%.0f],\"ns_per_op\":%.3f,\"ops_per_s\":%.1f,"
           "\"checksum\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"faults\":%" PRIu64
           ",\"faults_per_map\":%.2f,\"pages_per_fault\":%.2f,\"ns_per_page\":%.3f,"
           "\"ns_per_fault\":%.3f,\"map_msync_ns\":%.1f,\"full_cycle_ns\":%.1f,"
           "\"byte_sum\":%" PRIu64 ",\"byte_sum_ok\":%s,\"thp\":\"%s\",\"page_size\":%zu,"
           "\"params\":{\"bench\":\"lat_pagefault\",\"iterations\":%" PRIu64
           ",\"threads\":1,\"size\":%" PRIu64 ",\"dir\":\"%s\",\"seed\":%" PRIu64 "}}\n",
           touched, net, net / (double)touched, net > 0 ? (double)touched * 1e9 / net : 0.0,
           touched, pages, faults, (double)faults / (double)n,
           faults ? (double)touched / (double)faults : 0.0, net / (double)touched,
           faults ? net / (double)faults : 0.0, (double)base_ns / (double)n,
           (double)full_ns / (double)n, sum, sum == expect_sum * n ? "true" : "false", thp,
           page_size, calibrate ? 0 : iterations, size, dir, seed);
    return 0;
}

/* ---------------------------------------------------------------------- main */

/* Flags as strings (name -> value, NULL = not given): each bench reads the ones it needs. */
typedef struct {
    const char *name;
    const char *value;
} wl_flag;

static void wl_parse(int argc, char **argv, wl_flag *flags, size_t n) {
    for (int i = 1; i < argc; i++) {
        const char *a, *val;
        size_t len, k;
        pw_next_flag(pw_prog, argc, argv, &i, &a, &len, &val);
        for (k = 0; k < n; k++)
            if (strlen(flags[k].name) == len && strncmp(flags[k].name, a, len) == 0) break;
        if (k == n) pw_usage_error("unknown flag '--%.*s'; see the workload.toml for its parameters", (int)len, a);
        if (!val) pw_usage_error("flag '--%s' needs a value", flags[k].name);
        flags[k].value = val;
    }
}

static const char *wl_get(wl_flag *flags, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(flags[k].name, name) == 0) return flags[k].value;
    return NULL;
}

int main(int argc, char **argv) {
    pw_prog = "mmap";
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    wl_flag flags[] = {{"bench", "churn"}, {"iterations", NULL}, {"threads", "1"},
                       {"seed", NULL},     {"slots", "1024"},    {"sizes", "1m"},
                       {"random", "false"}, {"dir", ""},         {"size", "16m"}};
    size_t nf = sizeof flags / sizeof flags[0];
    wl_parse(argc, argv, flags, nf);
    const char *bench = wl_get(flags, nf, "bench");
    const char *its = wl_get(flags, nf, "iterations");
    const char *seed_s = wl_get(flags, nf, "seed");
    uint64_t seed = seed_s ? pw_parse_u64("seed", seed_s, 1, UINT64_MAX) : DEFAULT_SEED;
    unsigned threads = (unsigned)pw_parse_u64("threads", wl_get(flags, nf, "threads"), 1, 256);
    uint32_t slots = (uint32_t)pw_parse_u64("slots", wl_get(flags, nf, "slots"), 1, 65536);
    const char *dir = wl_get(flags, nf, "dir");
    if (!*dir) dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        pw_usage_error("--dir='%s' is not a directory; pass an existing writable directory", dir);
    /* Both go verbatim into the JSON line: refuse what would need escaping. */
    const char *verbatim[2] = {dir, wl_get(flags, nf, "sizes")};
    for (int k = 0; k < 2; k++)
        for (const char *c = verbatim[k]; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
                pw_usage_error("--%s='%s' contains a quote, backslash or control character; "
                               "use a plain path", k ? "sizes" : "dir", verbatim[k]);
    if ((uint64_t)threads * slots > 65536)
        pw_usage_error("--threads=%u x --slots=%u is over 65536 mappings (vm.max_map_count is "
                       "usually 65530); use fewer threads or slots", threads, slots);
    int random = pw_parse_bool("random", wl_get(flags, nf, "random"));
    uint64_t size = pw_parse_u64("size", wl_get(flags, nf, "size"), 1ull << 20, 1ull << 34);

    if (!strcmp(bench, "churn")) {
        uint64_t n = its ? pw_parse_u64("iterations", its, 0, 1ull << 34) : 1000000;
        return run_churn(n, n == 0, threads, seed, slots);
    }
    if (threads != 1)
        pw_usage_error("--threads=%u: %s is single-threaded; use --threads=1", threads, bench);
    uint64_t n = its ? pw_parse_u64("iterations", its, 0, 1000000) : 0;
    if (!strcmp(bench, "lat_mmap"))
        return run_lat_mmap(n, n == 0, wl_get(flags, nf, "sizes"), random, dir, seed);
    if (!strcmp(bench, "lat_pagefault")) return run_lat_pagefault(n, n == 0, size, dir, seed);
    pw_usage_error("--bench='%s' is unknown; use churn, lat_mmap or lat_pagefault", bench);
    return 2;
}
