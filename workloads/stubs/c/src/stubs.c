/*
 * perflab stubs workload (after dotnet/runtime#65738: call stubs with code and data on separate
 * pages).  Calls one non-inlined target, f(x) = x + 1, through:
 *
 *   direct    a plain `call target`
 *   pointer   `call *slot`, slot a volatile function pointer (COUNT slots round-robin)
 *   stub      `call stub` where each stub is `jmp [rip+disp]` (FF 25 disp32) and its slot lives
 *             at the same offset on the NEXT page; code pages r-x, slot pages rw- (W^X)
 *   precode   the two-slot StubPrecode of .NET 7: `mov r10, [rip+d1]; jmp [rip+d2]`, slot 1 the
 *             "MethodDesc" (here the stub's index), slot 2 the target, both on the next page
 *
 * COUNT stubs (e.g. 64, 4096) are called round-robin to load the branch predictors and the iTLB.
 * Code and data pages are interleaved (code, data, code, data, ...) as .NET does, so every stub's
 * slot sits one page after its code.  Generated with mmap + mprotect; where the kernel refuses to
 * make anonymous memory executable (SELinux execmem, PaX), with one memfd mapped twice: r-x code
 * pages + rw- data pages for running, a temporary rw- view for writing the code.
 * wx=off is the "before W^X" side of the seed's matrix: one anonymous read+write+execute mapping,
 * written in place and never re-protected (what a runtime without W^X does).
 *
 * Start-up: first_call_ns is the time from the start of stub generation (mmap) to the return of
 * the first call through the first stub (page faults of that call included).  maps_writable,
 * maps_exec and maps_wx count the process's mappings in /proc/self/maps that are writable,
 * executable, and both, read right after generation: W^X splits the interleaved area into one
 * mapping per page kind, wx=off keeps it one RWX mapping.
 *
 * mode=latency: x = f(x), a dependent chain.  mode=throughput: acc += f(i), independent calls.
 * checksum = the number of calls, recomputed from the values f returned (so every call happened).
 * The JSON also reports the first stub's bytes, addresses and page protections as read back from
 * /proc/self/maps, and whether every generated stub decodes to a slot on its next page.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perflab_workload.h"

#if !defined(__x86_64__)
int main(void) {
    fprintf(stderr, "stubs: this workload generates x86-64 machine code and this machine is not "
                    "x86-64; run it on an x86-64 host\n");
    return 1;
}
#else

typedef uint64_t (*fn_t)(uint64_t);

/* The target: never inlined, never cloned or analysed across calls (noipa), so each call is real. */
__attribute__((noinline, noipa)) uint64_t perflab_stub_target(uint64_t x) {
    __asm__ __volatile__("");
    return x + 1;
}

enum { K_DIRECT, K_POINTER, K_STUB, K_PRECODE };

typedef struct {
    int kind, latency;
    uint64_t count, mask;
    fn_t *entries;          /* what the loop calls: stub entry points, or the target */
    fn_t volatile *slots;   /* pointer kind: the volatile slots */
} ctx_t;

static ctx_t C;

/* The loops, one per kind and mode, so each has exactly one kind of call site. */
__attribute__((noinline)) static unsigned long long loop_direct_latency(long long n, void *arg) {
    (void)arg;
    uint64_t x = 0;
    for (long long i = 0; i < n; i++) x = perflab_stub_target(x);
    return x;
}

__attribute__((noinline)) static unsigned long long loop_direct_throughput(long long n, void *arg) {
    (void)arg;
    uint64_t acc = 0;
    for (long long i = 0; i < n; i++) acc += perflab_stub_target((uint64_t)i);
    return acc - (uint64_t)n * (uint64_t)(n - 1) / 2;
}

__attribute__((noinline)) static unsigned long long loop_pointer_latency(long long n, void *arg) {
    ctx_t *c = arg;
    fn_t volatile *s = c->slots; /* hoisted, as in the stub loops: only the slot load remains */
    uint64_t x = 0, m = c->mask;
    for (long long i = 0; i < n; i++) x = s[(uint64_t)i & m](x);
    return x;
}

__attribute__((noinline)) static unsigned long long loop_pointer_throughput(long long n, void *arg) {
    ctx_t *c = arg;
    fn_t volatile *s = c->slots;
    uint64_t acc = 0, m = c->mask;
    for (long long i = 0; i < n; i++) acc += s[(uint64_t)i & m]((uint64_t)i);
    return acc - (uint64_t)n * (uint64_t)(n - 1) / 2;
}

__attribute__((noinline)) static unsigned long long loop_entries_latency(long long n, void *arg) {
    ctx_t *c = arg;
    fn_t *e = c->entries;
    uint64_t x = 0, m = c->mask;
    for (long long i = 0; i < n; i++) x = e[(uint64_t)i & m](x);
    return x;
}

__attribute__((noinline)) static unsigned long long loop_entries_throughput(long long n, void *arg) {
    ctx_t *c = arg;
    fn_t *e = c->entries;
    uint64_t acc = 0, m = c->mask;
    for (long long i = 0; i < n; i++) acc += e[(uint64_t)i & m]((uint64_t)i);
    return acc - (uint64_t)n * (uint64_t)(n - 1) / 2;
}

/* ----------------------------------------------------------------- generation */

static size_t PAGE;

typedef struct {
    uint8_t *base;     /* the executing view: code page, data page, code page, ... */
    size_t size, stub_size, per_page, pairs;
    const char *method; /* "off", "mprotect" or "memfd" */
} gen_t;

static void put32(uint8_t *p, int32_t v) { memcpy(p, &v, 4); }

/* Write stub i's code (into `code`, the writable alias of its code bytes) and its slots (into
 * `data`, the writable alias of the next page at the same offset). */
static void emit(int kind, uint8_t *code, uint8_t *data, uint64_t i) {
    if (kind == K_STUB) {
        code[0] = 0xFF, code[1] = 0x25;            /* jmp qword ptr [rip + disp32] */
        put32(code + 2, (int32_t)(PAGE - 6));       /* rip = code + 6; slot = code + PAGE */
        code[6] = code[7] = 0xCC;                  /* int3 padding */
        fn_t t = perflab_stub_target;
        memcpy(data, &t, 8);
    } else {
        code[0] = 0x4C, code[1] = 0x8B, code[2] = 0x15; /* mov r10, [rip + disp32] */
        put32(code + 3, (int32_t)(PAGE - 7));            /* rip = code + 7; slot 1 = code + PAGE */
        code[7] = 0xFF, code[8] = 0x25;                  /* jmp [rip + disp32] */
        put32(code + 9, (int32_t)(PAGE + 8 - 13));       /* rip = code + 13; slot 2 = code+PAGE+8 */
        memset(code + 13, 0xCC, 3);
        uint64_t md = i;
        fn_t t = perflab_stub_target;
        memcpy(data, &md, 8);
        memcpy(data + 8, &t, 8);
    }
}

static void fill(gen_t *g, int kind, uint8_t *writable, uint64_t count) {
    for (uint64_t i = 0; i < count; i++) {
        size_t off = (i / g->per_page) * 2 * PAGE + (i % g->per_page) * g->stub_size;
        emit(kind, writable + off, writable + off + PAGE, i);
    }
}

static int gen_mprotect(gen_t *g, int kind, uint64_t count) {
    uint8_t *p = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    fill(g, kind, p, count);
    for (size_t k = 0; k < g->pairs; k++) {
        if (mprotect(p + k * 2 * PAGE, PAGE, PROT_READ | PROT_EXEC)) {
            munmap(p, g->size);
            return -1;
        }
    }
    g->base = p, g->method = "mprotect";
    return 0;
}

/* W^X off: one rwx mapping, written in place; nothing is ever re-protected. */
static int gen_rwx(gen_t *g, int kind, uint64_t count) {
    uint8_t *p = mmap(NULL, g->size, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    fill(g, kind, p, count);
    g->base = p, g->method = "off";
    return 0;
}

static int gen_memfd(gen_t *g, int kind, uint64_t count) {
    int fd = memfd_create("perflab-stubs", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)g->size)) return -1;
    uint8_t *w = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    /* Reserve the executing view, then map each code page r-x and each data page rw- over it. */
    uint8_t *x = mmap(NULL, g->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED || x == MAP_FAILED) return -1;
    fill(g, kind, w, count);
    for (size_t k = 0; k < g->pairs; k++) {
        off_t off = (off_t)(k * 2 * PAGE);
        if (mmap(x + off, PAGE, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED ||
            mmap(x + off + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                 off + (off_t)PAGE) == MAP_FAILED)
            return -1;
    }
    munmap(w, g->size); /* no writable alias of the code stays behind */
    close(fd);
    g->base = x, g->method = "memfd";
    return 0;
}

/* ------------------------------------------------------------ start-up */

static long long first_call_ns;
static fn_t DIRECT_ENTRY = perflab_stub_target;

/* The first call through the first entry, timed from the start of generation (t0). */
static void first_call(long long t0) {
    uint64_t r = C.entries[0](41);
    __asm__ __volatile__("" ::: "memory");
    first_call_ns = pw_now_ns() - t0;
    if (r != 42) {
        fprintf(stderr, "stubs: the first call returned %llu, not 42\n", (unsigned long long)r);
        exit(1);
    }
}

/* ------------------------------------------------------------ self-inspection */

typedef struct {
    uintptr_t lo, hi;
    char perms[5];
} range_t;

static range_t *maps;
static size_t nmaps;

static void read_maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[512];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        range_t r;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, r.perms) != 3) continue;
        r.lo = lo, r.hi = hi;
        if (nmaps == cap) {
            cap = cap ? cap * 2 : 64;
            maps = realloc(maps, cap * sizeof *maps);
            if (!maps) exit(1);
        }
        maps[nmaps++] = r;
    }
    fclose(f);
}

/* Mappings of the process that are writable, executable, and both. */
static void count_maps(int *w, int *x, int *wx) {
    *w = *x = *wx = 0;
    for (size_t i = 0; i < nmaps; i++) {
        int mw = maps[i].perms[1] == 'w', mx = maps[i].perms[2] == 'x';
        *w += mw, *x += mx, *wx += mw && mx;
    }
}

static const char *perms_of(uintptr_t a) {
    for (size_t i = 0; i < nmaps; i++)
        if (a >= maps[i].lo && a < maps[i].hi) return maps[i].perms;
    return "none";
}

static int32_t get32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Every stub: the expected opcode, its slot one page later, code page r-x, slot page rw- (with
 * W^X off both are rwx). */
static int check_layout(const gen_t *g, int kind, uint64_t count) {
    int off = !strcmp(g->method, "off");
    const char *code_want = off ? "rwx" : "r-x", *slot_want = off ? "rwx" : "rw-";
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *code = (const uint8_t *)C.entries[i];
        uintptr_t slot;
        if (kind == K_STUB) {
            if (code[0] != 0xFF || code[1] != 0x25) return 0;
            slot = (uintptr_t)code + 6 + (intptr_t)get32(code + 2);
        } else {
            if (code[0] != 0x4C || code[1] != 0x8B || code[2] != 0x15) return 0;
            if (code[7] != 0xFF || code[8] != 0x25) return 0;
            uintptr_t md = (uintptr_t)code + 7 + (intptr_t)get32(code + 3);
            slot = (uintptr_t)code + 13 + (intptr_t)get32(code + 9);
            if (md / PAGE != (uintptr_t)code / PAGE + 1 || *(const uint64_t *)md != i) return 0;
        }
        if (slot / PAGE != (uintptr_t)code / PAGE + 1) return 0;
        if (*(const fn_t *)slot != perflab_stub_target) return 0;
        if (strncmp(perms_of((uintptr_t)code), code_want, 3) ||
            strncmp(perms_of(slot), slot_want, 3))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    pw_param ps[] = {
        PW_STR("kind", "stub", "direct|pointer|stub|precode"),
        PW_INT("count", 1, 1, 65536),
        PW_STR("mode", "latency", "latency|throughput"),
        PW_STR("wx", "auto", "auto|off|mprotect|memfd"),
    };
    int np = PW_COUNT(ps);
    pw_parse(argc, argv, ps, np);
    const char *kind_s = pw_str(ps, np, "kind"), *wx = pw_str(ps, np, "wx");
    uint64_t count = (uint64_t)pw_int(ps, np, "count");
    if (count & (count - 1))
        pw_die("stubs", "--count=%llu is not a power of two; use 1, 64, 4096, ...",
               (unsigned long long)count);
    PAGE = (size_t)sysconf(_SC_PAGESIZE);
    C.kind = !strcmp(kind_s, "direct")    ? K_DIRECT
             : !strcmp(kind_s, "pointer") ? K_POINTER
             : !strcmp(kind_s, "stub")    ? K_STUB
                                          : K_PRECODE;
    C.latency = !strcmp(pw_str(ps, np, "mode"), "latency");
    if (C.kind == K_DIRECT) count = 1, ps[1].ival = 1; /* one call site: count does not apply */
    C.count = count, C.mask = count - 1;

    if (strcmp(wx, "auto") && (C.kind == K_DIRECT || C.kind == K_POINTER))
        pw_die("stubs", "--wx=%s applies to generated code (--kind=stub or precode), not "
               "--kind=%s; drop --wx", wx, kind_s);

    gen_t g = {0};
    char extra[2048] = "";
    pw_loop_fn loop;
    long long gen_t0 = pw_now_ns();
    if (C.kind == K_DIRECT) {
        loop = C.latency ? loop_direct_latency : loop_direct_throughput;
    } else if (C.kind == K_POINTER) {
        C.slots = calloc(count, sizeof(fn_t));
        for (uint64_t i = 0; i < count; i++) C.slots[i] = perflab_stub_target;
        loop = C.latency ? loop_pointer_latency : loop_pointer_throughput;
    } else {
        g.stub_size = C.kind == K_STUB ? 8 : 16;
        g.per_page = PAGE / g.stub_size;
        g.pairs = (count + g.per_page - 1) / g.per_page;
        g.size = g.pairs * 2 * PAGE;
        int rc = -1;
        if (!strcmp(wx, "off")) {
            if (gen_rwx(&g, C.kind, count)) {
                fprintf(stderr, "stubs: --wx=off: the kernel refuses a read+write+execute mapping "
                                "(%s); use --wx=mprotect or --wx=memfd\n", strerror(errno));
                return 1;
            }
            rc = 0;
        }
        if (rc && strcmp(wx, "memfd")) rc = gen_mprotect(&g, C.kind, count);
        if (rc && strcmp(wx, "mprotect")) rc = gen_memfd(&g, C.kind, count);
        if (rc) {
            perror("stubs: cannot generate executable stubs (mprotect and memfd both refused)");
            return 1;
        }
        C.entries = calloc(count, sizeof(fn_t));
        for (uint64_t i = 0; i < count; i++) {
            uint8_t *code = g.base + (i / g.per_page) * 2 * PAGE + (i % g.per_page) * g.stub_size;
            C.entries[i] = (fn_t)(uintptr_t)code;
        }
        first_call(gen_t0);
        read_maps();
        const uint8_t *c0 = (const uint8_t *)C.entries[0];
        uintptr_t slot0 = C.kind == K_STUB ? (uintptr_t)c0 + 6 + (intptr_t)get32(c0 + 2)
                                           : (uintptr_t)c0 + 13 + (intptr_t)get32(c0 + 9);
        char hex[64] = "";
        for (size_t k = 0; k < g.stub_size; k++) sprintf(hex + 2 * k, "%02x", c0[k]);
        snprintf(extra, sizeof extra,
                 "\"wx_method\":\"%s\",\"stub_addr\":\"0x%lx\",\"slot_addr\":\"0x%lx\","
                 "\"target_addr\":\"0x%lx\",\"stub_bytes\":\"%s\",\"code_perms\":\"%s\","
                 "\"slot_perms\":\"%s\",\"page_size\":%zu,\"pages\":%zu,\"layout_ok\":%s,",
                 g.method, (unsigned long)(uintptr_t)c0, (unsigned long)slot0,
                 (unsigned long)(uintptr_t)perflab_stub_target, hex, perms_of((uintptr_t)c0),
                 perms_of(slot0), PAGE, g.size / PAGE,
                 check_layout(&g, C.kind, count) ? "true" : "false");
        loop = C.latency ? loop_entries_latency : loop_entries_throughput;
    }
    if (!*extra) {
        /* Nothing generated: the "first call" is the slot set-up (pointer) and one call. */
        if (C.kind == K_POINTER) C.entries = (fn_t *)C.slots;
        else C.entries = &DIRECT_ENTRY;
        first_call(gen_t0);
        read_maps();
        snprintf(extra, sizeof extra, "\"target_addr\":\"0x%lx\",",
                 (unsigned long)(uintptr_t)perflab_stub_target);
    }
    int mw, mx, mwx;
    count_maps(&mw, &mx, &mwx);
    size_t len = strlen(extra);
    snprintf(extra + len, sizeof extra - len,
             "\"first_call_ns\":%lld,\"maps_writable\":%d,\"maps_exec\":%d,\"maps_wx\":%d",
             first_call_ns, mw, mx, mwx);
    fprintf(stderr, "stubs: kind=%s count=%llu mode=%s: timed region begins\n", kind_s,
            (unsigned long long)count, C.latency ? "latency" : "throughput");
    pw_result r;
    pw_run(loop, &C, &r);
    pw_print_json(&r, ps, np, extra);
    return 0;
}
#endif
