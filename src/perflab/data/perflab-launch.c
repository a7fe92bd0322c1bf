/*
 * perflab-launch: the small parent that starts a measured command.
 *
 * Why it exists: Linux carries the peak RSS of a forked process's old image into ru_maxrss
 * across exec, so forking the measured command straight from the Python interpreter would report
 * the interpreter's size (tens of MiB) as the command's peak memory.  This launcher is tiny; it
 * starts the command, counts it with perf counters, times it to wait4, and reports wait4's
 * rusage (the command's, not perflab's).
 *
 * usage: perflab-launch --server CTL_FD REPORT_FD
 *   A fork server: it stays alive for a whole measurement and starts runs on request, so a run
 *   costs one fork+exec of the command, not a Python Popen of a launcher.  A request is a verb,
 *   " LEN\n" and LEN bytes of NUL-terminated strings.  A command's spec is CPUS ("-" or a comma
 *   list to pin it to), TIMEOUT_MS (0: none), CWD ("" for the server's), PATH, ARGC, ARGV...,
 *   and its environment (K=V strings).  Each command gets its own process group.  A "run" forks
 *   it, holds it before exec until it is released, and times it from release to wait4; a
 *   "batch" starts it with vfork and times it from just before the vfork.  A timeout kills
 *   the command's whole process group; so does anything arriving on CTL_FD during a run (EOF:
 *   perflab closed the pipe or died), which also ends the server, and so does perflab's death
 *   (PR_SET_PDEATHSIG).  After every run the server kills whatever the command left running,
 *   in its group or not (it is the commands' subreaper: sweep, below).
 *
 *   "run": HOLD ("1" or "0"), then one spec, its environment to the end.  One run, its
 *   stdout and stderr the server's (perflab drains them).  With HOLD the server answers "pid N\n"
 *   and keeps the command before exec until one byte "g" arrives on CTL_FD (perflab opens its
 *   own perf counters on it meanwhile; anything else kills it unreleased and ends the server);
 *   without, it is released at once.  When it ends: "done" and the run's fields (the list
 *   PERFLAB_RUN_FIELDS, below: exit status, wall time, wait4's rusage, ...) "\n", then
 *   "killed LEN\n" and LEN bytes: the processes it left running, killed after it (sweep).
 *
 *   "batch": many runs in one exchange, with no word from perflab between them.  NSPEC, then
 *   NSPEC specs (each environment preceded by its count ENVC), then COUNTERS ("TYPE:CONFIG,..."
 *   perf events, "" for none), REGION_CTL and REGION_ACK (the timed-region fifos' paths, ""
 *   for none), STOP ("1": end the batch after a failed run), ORDER (comma-separated spec
 *   indices: the runs, in order) and, optionally, CHUNK_MS (0: none).  Every run starts with
 *   vfork.  The server opens the
 *   counters once for the batch, on itself, and the commands inherit them (counters_open), so
 *   a run's counts are the difference of two reads; it answers the timed-region protocol with
 *   counter snapshots (region.py's rules) and keeps the last 1 MiB of each run's stdout and
 *   stderr.  It answers
 *   once, at the end: for each run done "rec" + the run's fields + the record's tail (the
 *   list PERFLAB_REC_TAIL, below: the counters' readings, the timed region's, the lengths of
 *   stdout, stderr and the first unknown region command) "\n", then those many bytes of each;
 *   then "end N\n" (N: the records since the last marker).  With CHUNK_MS, once that long has
 *   passed since the last hand-over and runs remain, it hands over the records so far and
 *   "more N\n", and goes on.  A batch may end early (a failure with
 *   STOP, or 8 MiB of records): perflab asks for the rest.  EOF on CTL_FD during a batch kills
 *   the running command, hands over the finished runs' records and ends the server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

struct buf;
static int sweep(pid_t group_leader, struct buf *desc);

/* perflab died (even by SIGKILL): the kernel sends PR_SET_PDEATHSIG's signal here, and the
 * measured command's whole process group goes with us, and every process it left (sweep), so
 * nothing is left running. */
static volatile pid_t group = 0;

static void parent_gone(int sig) {
    (void)sig;
    if (group > 0) kill(-group, SIGKILL);
    sweep(0, NULL);
    _exit(128 + SIGTERM);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The CPU list "0,2,..." ("-": no pinning) as a set; 0 when there is nothing to pin.  No
 * allocation: it runs before a vfork as well as in a forked child. */
static int cpus_parse(const char *cpus, cpu_set_t *set) {
    CPU_ZERO(set);
    if (strcmp(cpus, "-") == 0) return 0;
    for (const char *p = cpus; *p;) {
        char *end;
        long cpu = strtol(p, &end, 10);
        if (end == p) break;
        if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET((int)cpu, set);
        p = *end == ',' ? end + 1 : end;
    }
    return 1;
}

static void pin_to(const char *cpus) {
    cpu_set_t set;
    if (cpus_parse(cpus, &set) && sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
}

static int read_full(int fd, char *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Reads one byte at a time up to `stop` (not kept) or cap-1 bytes, so nothing past the
 * delimiter is consumed from the pipe; 0, or -1 when the peer has gone. */
static int read_until(int fd, char *buf, size_t cap, char stop) {
    size_t i = 0;
    while (i + 1 < cap) {
        ssize_t n = read(fd, buf + i, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        if (buf[i] == stop) break;
        i++;
    }
    buf[i] = 0;
    return 0;
}

/* ---- a run's end: the one list of the fields perflab hears ------------------------------ */

/* The fields of a run's "done" line and, in the same order, the first fields of a batch's
 * "rec" record: each is NAME (process.py's _RawRun field) and the C expression, over the run's
 * struct run_end *r, that gives it; every one is printed as a decimal (long long).  This
 * X-macro is the one description of them: run_end_print prints through it, and process.py
 * reads the names from this file (launch_fields) when it parses the records.  The list lives
 * here, not in Python, because its expressions are C: a Python table would hold C in strings
 * and need a generated header, one more file in the build and in the binary's cache key.  The
 * names are read from the very source the binary was built from (the binary's cache key is this
 * file's hash), so the two sides cannot disagree; a field added here shows up in Python as an
 * unknown _RawRun field at once (tests/core/test_launch_fields.py). */
#define PERFLAB_RUN_FIELDS(X)                                                                   \
    X(status, r->status)                                                                        \
    X(wall_ns, r->wall)                                                                         \
    X(utime_us, (long long)r->ru.ru_utime.tv_sec * 1000000LL + r->ru.ru_utime.tv_usec)         \
    X(stime_us, (long long)r->ru.ru_stime.tv_sec * 1000000LL + r->ru.ru_stime.tv_usec)         \
    X(maxrss, r->ru.ru_maxrss) /* KiB */                                                        \
    X(minflt, r->ru.ru_minflt)                                                                  \
    X(majflt, r->ru.ru_majflt)                                                                  \
    X(nvcsw, r->ru.ru_nvcsw)                                                                    \
    X(nivcsw, r->ru.ru_nivcsw)                                                                  \
    X(exec_errno, r->exec_errno)                                                                \
    X(timed_out, r->why == 1)                                                                   \
    X(pid, r->pid)                                                                              \
    X(run_delay_ns, r->run_delay) /* the zombie's /proc/PID/schedstat; -1: not there */         \
    X(started_ns, r->started)     /* CLOCK_REALTIME at release */

/* The rest of a batch's "rec" record, after the run's fields, in order: the one description of
 * it, which rec_tail_print prints through and process.py reads from this file (rec_tail) to
 * parse the records; each name is claimed by the _RawRun field(s) it fills (their metadata
 * "rec"; tests/core/test_launch_fields.py fails for a name one side lacks).
 *   NUM(NAME)          one decimal
 *   READINGS(NAME, N)  N (a NUM before it) triples VALUE ENABLED RUNNING, one per counter
 *   BYTES(NAME)        its length, a decimal; its bytes follow the record's "\n", in order */
#define PERFLAB_REC_TAIL(NUM, READINGS, BYTES)                                                  \
    NUM(counter_errno)      /* perf_event_open's errno for the batch's counters; 0: open */     \
    NUM(nc)                 /* counters read */                                                  \
    READINGS(final, nc)     /* over the whole run */                                             \
    NUM(region_enables)     /* timed regions begun (0: none, or no region channel) */            \
    NUM(region_ns)          /* their time */                                                     \
    NUM(region_open)        /* a region begun and never ended */                                 \
    NUM(nsum)               /* readings summed over the timed regions: nc, or 0 */               \
    READINGS(region_sum, nsum)                                                                   \
    BYTES(out)              /* the last TAIL_LIMIT bytes (at most twice that) of stdout */       \
    BYTES(err)              /* and of stderr */                                                  \
    BYTES(region_bad)       /* the first region command not understood */                   \
    BYTES(killed)           /* what it left running, killed after it (sweep) */

/* What the server knows of a run once it has ended (see PERFLAB_RUN_FIELDS). */
struct run_end {
    int status, exec_errno, why; /* why: wait_command's answer (1: timed out) */
    pid_t pid;
    struct rusage ru; /* wait4's: the command's own */
    long long wall, run_delay, started; /* ns */
};

#define RUN_FIELD_FORMAT(name, expr) " %lld"
#define RUN_FIELD_VALUE(name, expr) , (long long)(expr)

/* ---- the batch: many runs in one exchange ----------------------------------------------- */

#define TAIL_LIMIT (1u << 20) /* of each run's stdout and stderr kept (process.py TAIL_BYTES) */
#define BATCH_OUTPUT_CAP (8u << 20) /* a batch ends early once its records hold this much */
#define MAX_COUNTERS 32

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) _exit(127);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void buf_printf(struct buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* VERB and the run's fields (PERFLAB_RUN_FIELDS), in one call: as fast as the hand-written
 * format it replaces. */
static void run_end_print(struct buf *b, const char *verb, const struct run_end *r) {
    buf_printf(b, "%s" PERFLAB_RUN_FIELDS(RUN_FIELD_FORMAT),
               verb PERFLAB_RUN_FIELDS(RUN_FIELD_VALUE));
}

/* Keep the last TAIL_LIMIT bytes of what arrives (the same rule as process.py's _StreamTail). */
static void tail_add(struct buf *t, const char *data, size_t n) {
    buf_add(t, data, n);
    if (t->len > 2 * TAIL_LIMIT) {
        memmove(t->p, t->p + t->len - TAIL_LIMIT, TAIL_LIMIT);
        t->len = TAIL_LIMIT;
    }
}

/* Read what a non-blocking pipe holds now. */
static void drain(int fd, struct buf *t) {
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        tail_add(t, chunk, (size_t)n);
    }
}

struct reading {
    long long value, enabled, running;
};

struct counters {
    int n;          /* events asked for */
    int type[MAX_COUNTERS];
    long long config[MAX_COUNTERS];
    int fd[MAX_COUNTERS];
    int pin;        /* the non-inherited dummy event (counters_open) */
    int open;       /* 1 when every fd is open */
};

/* The counters of a batch, opened once on the server itself (pid 0) with the attr
 * perf_events.py's KernelBackend uses (disabled, inherit, exclude_hv, enable_on_exec; enabled
 * and running times read along).  The server never execs, so its own events stay disabled and
 * nothing the server does is counted; each command it starts inherits them, still disabled,
 * and they start counting at the command's exec, for it and its children.  When a task exits
 * the kernel adds its counts to the server's events (before the parent can see it as a
 * zombie), and a read sums the live children's too: a run's counts are the difference of two
 * reads, one before its vfork and one after it ended, and a timed region's are the difference
 * of the snapshots taken at its enable and disable.  Opening counters per run instead (on the
 * command held before exec, as perflab does when it opens them itself) costs four
 * perf_event_open and close calls and a fork in place of a vfork: about 0.4 ms a run of `true`
 * on this project's VM (benchmarks/launch_cost.py, 2026-11-25: 1.41 -> 1.01 ms).  CLOEXEC: the commands do not get the fds.
 *
 * One more event, a dummy one that is not inherited, keeps the commands' inherited events
 * their own.  When every event of a task is inherited, the kernel marks the child's set as a
 * clone of the parent's and, at a switch between the two tasks (the server and its vfork
 * child are such a pair), swaps the sets instead of switching them: the command would then
 * run with the server's own events, enable them at exec and take them along when it exits
 * (perf_event_init_context's inherited_all, context_equiv in kernel/events/core.c).  We saw
 * exactly that: most runs read 0.  A non-inherited event makes the child's set no clone. */
static int counters_open(struct counters *c) {
    c->open = 0;
    for (int i = 0; i < c->n; i++) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.type = (unsigned)c->type[i];
        attr.size = sizeof attr;
        attr.config = (unsigned long long)c->config[i];
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        attr.disabled = 1;
        attr.inherit = 1;
        attr.exclude_hv = 1;
        attr.enable_on_exec = 1;
        c->fd[i] = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (c->fd[i] < 0) {
            int e = errno;
            for (int j = 0; j < i; j++) close(c->fd[j]);
            return e;
        }
    }
    c->open = c->n > 0;
    if (c->open) { /* see the note above */
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof attr;
        attr.config = PERF_COUNT_SW_DUMMY;
        attr.disabled = 1;
        c->pin = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (c->pin < 0) {
            int e = errno;
            for (int j = 0; j < c->n; j++) close(c->fd[j]);
            c->open = 0;
            return e;
        }
    }
    return 0;
}

static void counters_read(const struct counters *c, struct reading *out) {
    for (int i = 0; i < c->n; i++) {
        unsigned long long v[3] = {0, 0, 0};
        if (!c->open || read(c->fd[i], v, sizeof v) != (ssize_t)sizeof v) v[0] = v[1] = v[2] = 0;
        out[i].value = (long long)v[0];
        out[i].enabled = (long long)v[1];
        out[i].running = (long long)v[2];
    }
}

static void counters_close(struct counters *c) {
    if (c->open) {
        for (int i = 0; i < c->n; i++) close(c->fd[i]);
        close(c->pin);
    }
    c->open = 0;
}

/* The timed-region protocol's parent side (region.py's RegionChannel, for runs whose counters
 * the server holds): "enable"/"disable" lines on CTL, one "ack\n" on ACK for each; the counters
 * are read before the acknowledgement, so the region's counts are exactly its own. */
struct region {
    int ctl, ack;
    char line[256];
    size_t len;
    int enables, bad;
    long long ns, t_enable; /* t_enable: -1 when no region is open */
    struct reading snap[MAX_COUNTERS], sum[MAX_COUNTERS];
    int summed;
    char bad_cmd[256];
};

/* A record's tail (PERFLAB_REC_TAIL): its members are the list's names. */
#define TAIL_NUM_MEMBER(name) long long name;
#define TAIL_READINGS_MEMBER(name, n) const struct reading *name;
#define TAIL_BYTES_MEMBER(name) const char *name; size_t name##_len;
struct rec_tail {
    PERFLAB_REC_TAIL(TAIL_NUM_MEMBER, TAIL_READINGS_MEMBER, TAIL_BYTES_MEMBER)
};

/* A decimal appended to b, " %lld" without vsnprintf's parsing: by hand because a record has
 * 3 numbers per counter and a dozen more, and this path is paid on every run. */
static void buf_num(struct buf *b, long long v) {
    char tmp[24], *p = tmp + sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do *--p = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) *--p = '-';
    *--p = ' ';
    buf_add(b, p, (size_t)(tmp + sizeof tmp - p));
}


/* ---- what a command leaves behind ------------------------------------------------------- */

/* The server is its commands' subreaper (PR_SET_CHILD_SUBREAPER, in main): when a process
 * whose parent has ended is orphaned, the kernel re-parents it to the server, not to init, so
 * every descendant of a command that outlives it, whatever its process group or session
 * (setpgid, setsid, a daemon's double fork), becomes the server's child.  After each run
 * sweep() kills them all: it reads the server's children, kills each (its own children are
 * re-parented to the server in turn and found by the next round) and reaps them, until none is
 * left.  Why a subreaper and not a cgroup per run: it needs no privilege and no delegated
 * cgroup tree (cgroup v2 is not writable for an ordinary user without systemd's delegation,
 * and on hybrid hosts v2 has no controllers), works on any kernel since 3.4, and catches every
 * way out of the process group; a descendant escapes it only by being started by another
 * process (a service manager), which a per-run cgroup would not hold either.
 *
 * A run that leaves nothing costs one read of /proc/thread-self/children (about 9 us on this
 * project's VM at load 5, beside about 1 ms a run of `true`).  Only system calls (open, read,
 * kill, waitpid, nanosleep, getdents64), so that parent_gone may sweep from its signal handler
 * (with desc NULL). */
#define SWEEP_ROUNDS 64 /* a process that does not die (uninterruptible) is reaped later */
#define SWEEP_SEEN 256  /* processes remembered, so a slow dier is reported once */

/* The decimals of buf[0..n) (separated by anything else) into out; how many. */
static int parse_pids(const char *buf, ssize_t n, pid_t *out, int cap) {
    int k = 0;
    long v = -1;
    for (ssize_t i = 0; i <= n && k < cap; i++) {
        if (i < n && buf[i] >= '0' && buf[i] <= '9') {
            v = (v < 0 ? 0 : v * 10) + (buf[i] - '0');
        } else if (v >= 0) {
            out[k++] = (pid_t)v;
            v = -1;
        }
    }
    return k;
}

/* /proc/PID/stat's state, ppid, pgrp and session, and its comm (the name, at most 15 bytes)
 * into comm[16]; -1 when the process is gone. */
static int proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp, pid_t *sid, char *comm) {
    char path[32], buf[512];
    int p = (int)sizeof path;
    path[--p] = 0;
    memcpy(path + (p -= 5), "/stat", 5);
    unsigned u = (unsigned)pid;
    do path[--p] = (char)('0' + u % 10); while (u /= 10);
    memcpy(path + (p -= 6), "/proc/", 6);
    int fd = open(path + p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *open_paren = memchr(buf, '(', (size_t)n), *close_paren = NULL;
    for (char *c = buf + n - 1; c > buf && !close_paren; c--)
        if (*c == ')') close_paren = c;
    if (!open_paren || !close_paren || close_paren + 4 > buf + n) return -1;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len > 15) len = 15;
    memcpy(comm, open_paren + 1, len);
    comm[len] = 0;
    *state = close_paren[2];
    pid_t nums[3];
    if (parse_pids(close_paren + 4, buf + n - (close_paren + 4), nums, 3) != 3) return -1;
    *ppid = nums[0];
    *pgrp = nums[1];
    *sid = nums[2];
    return 0;
}

struct linux_dirent64_ {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* The server's children: /proc/thread-self/children (the server is single-threaded, and a
 * subreaper's orphans are its main thread's), or, on a kernel built without that file
 * (CONFIG_PROC_CHILDREN), every /proc/PID whose parent is the server. */
static int children(pid_t *out, int cap) {
    char buf[16384];
    int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        close(fd);
        return n < 0 ? 0 : parse_pids(buf, n, out, cap);
    }
    fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    pid_t self = getpid();
    int k = 0;
    long n;
    while (k < cap && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && k < cap;) {
            struct linux_dirent64_ *d = (struct linux_dirent64_ *)(buf + off);
            off += d->d_reclen;
            pid_t pid, ppid, pgrp, sid;
            char state, comm[16];
            if (parse_pids(d->d_name, (ssize_t)strlen(d->d_name), &pid, 1) == 1 &&
                d->d_name[0] >= '0' && d->d_name[0] <= '9' &&
                proc_stat(pid, &state, &ppid, &pgrp, &sid, comm) == 0 && ppid == self)
                out[k++] = pid;
        }
    }
    close(fd);
    return k;
}

/* Kill and reap every process the last command left (see above); how many were running.
 * With desc, each is described on a line "PID WHERE COMM": WHERE is "group" (the command's
 * process group, leader `group_leader`), "session" (a session of its own: setsid) or "pgrp"
 * (another process group of the command's session: setpgid).  Zombies (ended, not waited for)
 * are reaped and not counted. */
static int sweep(pid_t group_leader, struct buf *desc) {
    pid_t own_sid = getsid(0), kids[1024], seen[SWEEP_SEEN];
    int nseen = 0, killed = 0;
    for (int round = 0; round < SWEEP_ROUNDS; round++) {
        int n = children(kids, 1024);
        if (n == 0) break;
        for (int i = 0; i < n; i++) {
            pid_t ppid, pgrp, sid;
            char state, comm[16];
            if (proc_stat(kids[i], &state, &ppid, &pgrp, &sid, comm) != 0) continue;
            if (state != 'Z') {
                kill(kids[i], SIGKILL);
                int known = 0;
                for (int j = 0; j < nseen && !known; j++) known = seen[j] == kids[i];
                if (!known) {
                    killed++;
                    if (nseen < SWEEP_SEEN) seen[nseen++] = kids[i];
                    if (desc) {
                        buf_num(desc, kids[i]);
                        const char *where = pgrp == group_leader ? " group "
                                            : sid != own_sid     ? " session "
                                                                 : " pgrp ";
                        buf_add(desc, where, strlen(where));
                        buf_add(desc, comm, strlen(comm));
                        buf_add(desc, "\n", 1);
                    }
                }
            }
        }
        /* reap them (and the zombies): up to 50 ms a round for a process still dying */
        for (int tries = 0; tries < 50; tries++) {
            int left = 0;
            for (int i = 0; i < n; i++)
                if (kids[i] > 0) {
                    pid_t w = waitpid(kids[i], NULL, WNOHANG);
                    if (w == kids[i] || (w < 0 && errno == ECHILD)) kids[i] = 0;
                    else left++;
                }
            if (!left) break;
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        /* Only zombies this round is no end: a child read as running when the children were
         * listed may have died since, and its own children are ours now (the next round lists
         * them, or none). */
    }
    return killed;
}

#define TAIL_NUM_PRINT(name) buf_num(b, t->name);
#define TAIL_READINGS_PRINT(name, n)                                                              \
    for (long long j = 0; j < t->n; j++) {                                                        \
        buf_num(b, t->name[j].value);                                                             \
        buf_num(b, t->name[j].enabled);                                                           \
        buf_num(b, t->name[j].running);                                                           \
    }
#define TAIL_BYTES_LEN(name) buf_num(b, (long long)t->name##_len);
#define TAIL_NUM_SKIP(name)
#define TAIL_READINGS_SKIP(name, n)
#define TAIL_BYTES_DATA(name) buf_add(b, t->name, t->name##_len);

/* The record's tail, its "\n", then the bytes it announced. */
static void rec_tail_print(struct buf *b, const struct rec_tail *t) {
    PERFLAB_REC_TAIL(TAIL_NUM_PRINT, TAIL_READINGS_PRINT, TAIL_BYTES_LEN)
    buf_add(b, "\n", 1);
    PERFLAB_REC_TAIL(TAIL_NUM_SKIP, TAIL_READINGS_SKIP, TAIL_BYTES_DATA)
}

static void region_reset(struct region *r) {
    char junk[256];
    while (r->ctl >= 0 && read(r->ctl, junk, sizeof junk) > 0) {
    } /* anything an earlier, killed run left half-said is not this run's */
    r->len = 0;
    r->enables = r->bad = r->summed = 0;
    r->ns = 0;
    r->t_enable = -1;
    r->bad_cmd[0] = 0;
}

static void region_command(struct region *r, const char *cmd, struct counters *c) {
    struct reading now[MAX_COUNTERS];
    if (strcmp(cmd, "enable") == 0 && r->t_enable < 0) {
        if (c->open) counters_read(c, r->snap);
        r->enables++;
        r->t_enable = now_ns();
    } else if (strcmp(cmd, "disable") == 0 && r->t_enable >= 0) {
        r->ns += now_ns() - r->t_enable;
        r->t_enable = -1;
        if (c->open) {
            counters_read(c, now);
            for (int i = 0; i < c->n; i++) {
                r->sum[i].value = (r->summed ? r->sum[i].value : 0) + now[i].value - r->snap[i].value;
                r->sum[i].enabled =
                    (r->summed ? r->sum[i].enabled : 0) + now[i].enabled - r->snap[i].enabled;
                r->sum[i].running =
                    (r->summed ? r->sum[i].running : 0) + now[i].running - r->snap[i].running;
            }
            r->summed = 1;
        }
    } else if (strcmp(cmd, "enable") != 0 && strcmp(cmd, "disable") != 0) {
        r->bad = 1;
        snprintf(r->bad_cmd, sizeof r->bad_cmd, "%s", cmd);
    }
    if (write(r->ack, "ack\n", 4) < 0) {
    }
}

static void region_serve(struct region *r, struct counters *c) {
    char chunk[256];
    ssize_t n;
    while ((n = read(r->ctl, chunk, sizeof chunk)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (chunk[i] != '\n') {
                if (r->len + 1 < sizeof r->line) r->line[r->len++] = chunk[i];
                continue;
            }
            r->line[r->len] = 0;
            char *s = r->line, *e = r->line + r->len;
            while (*s == ' ' || *s == '\t' || *s == '\r') s++;
            while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
            region_command(r, s, c);
            r->len = 0;
        }
    }
}

/* What the server watches during a batch's run besides the command: its stdout and stderr
 * (drained into the run's tails) and the timed-region fifo (answered with counter snapshots). */
struct batch_io {
    int out, err;
    struct buf *out_tail, *err_tail;
    struct region *region; /* NULL: no region channel */
    struct counters *counters;
};

/* Wait for the command, enforcing the timeout and perflab's going away (EOF or a byte on CTL):
 * either kills its whole process group.  Returns 1 on timeout, 2 when perflab went away. */
static int wait_command(pid_t child, int ctl, long timeout_ms, long long t0, int *status,
                        struct rusage *ru, long long *run_delay, long long *t_end,
                        struct batch_io *io) {
    /* a pidfd wakes poll when the command ends (Linux 5.3+); without one, poll in 1 ms steps */
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    int why = 0;
    for (;;) {
        /* Wait for the end without reaping, so the zombie's scheduler statistics can still be
         * read (run_delay, below); wait4 reaps it after. */
        siginfo_t si;
        si.si_pid = 0;
        int wr = waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT | WNOHANG);
        if (wr == 0 && si.si_pid == child) break;
        if (wr < 0 && errno != EINTR) break;
        int wait_ms = pidfd >= 0 ? -1 : 1;
        if (timeout_ms > 0 && !why) {
            long long left = t0 + timeout_ms * 1000000LL - now_ns();
            if (left <= 0) {
                why = 1;
                kill(-child, SIGKILL);
                continue;
            }
            int left_ms = (int)((left + 999999) / 1000000);
            if (wait_ms < 0 || left_ms < wait_ms) wait_ms = left_ms;
        }
        struct pollfd p[5] = {{pidfd, POLLIN, 0}, {why ? -1 : ctl, POLLIN, 0}, {-1, POLLIN, 0},
                              {-1, POLLIN, 0}, {-1, POLLIN, 0}};
        if (io) {
            p[2].fd = io->out;
            p[3].fd = io->err;
            p[4].fd = io->region ? io->region->ctl : -1;
        }
        int r = poll(p, 5, wait_ms);
        if (r > 0 && p[1].revents) { /* perflab closed the pipe (Ctrl-C, an error) or said kill */
            why = 2;
            kill(-child, SIGKILL);
        }
        if (r > 0 && io) {
            if (p[2].revents) drain(io->out, io->out_tail);
            if (p[3].revents) drain(io->err, io->err_tail);
            if (p[4].revents) region_serve(io->region, io->counters);
        }
    }
    if (pidfd >= 0) close(pidfd);
    *run_delay = -1;
    long long t1 = now_ns();
    char stat_path[64];
    snprintf(stat_path, sizeof stat_path, "/proc/%d/schedstat", (int)child);
    FILE *sf = fopen(stat_path, "r");
    if (sf) { /* run_delay: the time its main thread spent runnable but waiting for a CPU */
        unsigned long long on_cpu, delay;
        if (fscanf(sf, "%llu %llu", &on_cpu, &delay) == 2) *run_delay = (long long)delay;
        fclose(sf);
    }
    pid_t w;
    do w = wait4(child, status, 0, ru); while (w < 0 && errno == EINTR);
    *t_end = t1;
    return why;
}

/* One command to start: a request's fields (pointers into the request's buffer). */
struct spec {
    const char *cpus, *cwd, *path;
    long timeout_ms;
    char **argv, **envp;
};

/* Parse a spec from the NUL-separated fields f[*k..count): CPUS, TIMEOUT_MS, CWD, PATH, ARGC,
 * ARGV..., then ENVC and the environment (with_envc) or the environment to the end. */
static int parse_spec(char **f, size_t count, size_t *k, int with_envc, struct spec *s) {
    if (*k + 5 > count) return -1;
    s->cpus = f[*k];
    s->timeout_ms = atol(f[*k + 1]);
    s->cwd = f[*k + 2];
    s->path = f[*k + 3];
    size_t argc = (size_t)atol(f[*k + 4]);
    *k += 5;
    if (argc < 1 || *k + argc > count) return -1;
    s->argv = calloc(argc + 1, sizeof *s->argv);
    for (size_t i = 0; i < argc; i++) s->argv[i] = f[*k + i];
    *k += argc;
    size_t envc = count - *k;
    if (with_envc) {
        if (*k >= count) return -1;
        envc = (size_t)atol(f[*k]);
        *k += 1;
        if (*k + envc > count) return -1;
    }
    s->envp = calloc(envc + 1, sizeof *s->envp);
    for (size_t i = 0; i < envc; i++) s->envp[i] = f[*k + i];
    *k += envc;
    return 0;
}

/* Fork the command into its own process group, held before exec until a byte on *go_w (a
 * "run" request: perflab may open its own counters on it meanwhile); its stdout and stderr are
 * the server's.  *err_r tells exec's errno. */
static pid_t spawn(const struct spec *s, int ctl, int rep, int *go_w, int *err_r) {
    int go[2], err[2];
    if (pipe2(go, O_CLOEXEC) != 0) return -1;
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(go[0]);
        close(go[1]);
        return -1;
    }
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        char b;
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the server killed outright: the command too */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        close(go[1]);
        close(err[0]);
        close(ctl);
        close(rep);
        pin_to(s->cpus);
        /* wait until the parent has made us a process-group leader and started the clock */
        if (read(go[0], &b, 1) != 1) _exit(127);
        int e = 0;
        if (s->cwd[0] && chdir(s->cwd) != 0) e = errno;
        if (!e) {
            execve(s->path, s->argv, s->envp);
            e = errno;
        }
        if (write(err[1], &e, sizeof e) < 0) _exit(127);
        _exit(127);
    }
    setpgid(child, child); /* also here: no race with a kill before the child ran */
    group = child;
    close(go[0]);
    close(err[1]);
    *go_w = go[1];
    *err_r = err[0];
    return child;
}

/* Release the held command, wait for it, and kill what it left in its group. */
static int release_and_wait(pid_t child, int go_w, int err_r, int ctl, long timeout_ms,
                            int *status, struct rusage *ru, long long *wall,
                            long long *run_delay, long long *started, int *exec_errno,
                            struct buf *killed) {
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    *started = (long long)rt.tv_sec * 1000000000LL + rt.tv_nsec;
    long long t0 = now_ns(), t1 = 0;
    if (write(go_w, "g", 1) != 1) return -1;
    close(go_w);
    *status = 0;
    memset(ru, 0, sizeof *ru);
    int why = wait_command(child, ctl, timeout_ms, t0, status, ru, run_delay, &t1, NULL);
    sweep(child, killed); /* everything it left running, its group's and the others */
    kill(-child, SIGKILL); /* and a group member that raced the sweep */
    group = 0;
    *exec_errno = 0;
    if (read(err_r, exec_errno, sizeof *exec_errno) != sizeof *exec_errno) *exec_errno = 0;
    close(err_r);
    *wall = t1 - t0;
    return why;
}

/* In a batch nothing has to happen between fork and exec (the counters are inherited, see
 * counters_open), so it starts each command with vfork: the server is suspended until the
 * child has exec'd (or failed to), and shares its memory until then.  That spares copying the
 * server's page tables and the go-pipe hand-over (two wake-ups) of spawn(); on `true` it is
 * most of what perflab's server cost above hyperfine's posix_spawn.  glibc's posix_spawn works this way too (clone with CLONE_VM
 * and CLONE_VFORK); it is written out here because posix_spawn can set neither
 * PR_SET_PDEATHSIG nor the CPU affinity.  The child makes system calls only (no malloc, no
 * stdio), and exec's errno comes back through vfork_errno, which the suspended server reads
 * once the child has exec'd or exited.  The clock starts before vfork, as hyperfine's does
 * before its spawn.  Returns what release_and_wait returns, or -1 when vfork failed. */
static volatile int vfork_errno;

/* The CPUs the server may run on (its affinity at start; launcher_cpus_ok: known).  Around
 * each vfork the server holds itself to the CPU it is on, so the command starts there, and the
 * command takes this whole set back before exec (a --pin command is not held: it takes its
 * pin): from exec on the kernel places it as it would any command.  Why: the kernel places a new task on
 * the least loaded CPU as if its parent went on running, but a vfork parent stops until the
 * exec, so its own CPU is the one about to be free.  Beside two CPU-bound neighbours on 2 CPUs,
 * once they sat one to a CPU, each command of a batch went to the other CPU and waited for that
 * neighbour's time slice (about 3.4 ms a run of `true`; perf sched timehist): 17 of 21 sets
 * of 300 runs after a pause, and 0 of 21 held this way (hyperfine, posix_spawn, is the former;
 * quiet, this costs about 4 us a run; 2026-11-26). */
static cpu_set_t launcher_cpus;
static int launcher_cpus_ok;

static int start_and_wait(const struct spec *s, int ctl, int rep, int out_fd, int err_fd,
                          int *status, struct rusage *ru, long long *wall, long long *run_delay,
                          long long *started, int *exec_errno, pid_t *pid,
                          struct batch_io *io, struct buf *killed) {
    cpu_set_t cpus, here;
    int pin = cpus_parse(s->cpus, &cpus);
    int held = 0; /* the server held to its CPU (not for a --pin, which sets the command's) */
    int cpu = launcher_cpus_ok && !pin ? sched_getcpu() : -1;
    if (cpu >= 0 && cpu < CPU_SETSIZE) {
        CPU_ZERO(&here);
        CPU_SET(cpu, &here);
        held = sched_setaffinity(0, sizeof here, &here) == 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old); /* no server handler may run in the child */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    *started = (long long)rt.tv_sec * 1000000000LL + rt.tv_nsec;
    vfork_errno = 0;
    long long t0 = now_ns(), t1 = 0;
    pid_t child = vfork();
    if (child == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGINT, &dfl, NULL);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the server killed outright: the command too */
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(ctl);
        close(rep);
        if (out_fd >= 0) dup2(out_fd, 1);
        if (err_fd >= 0) dup2(err_fd, 2);
        const cpu_set_t *own = pin ? &cpus : held ? &launcher_cpus : NULL;
        if (own && sched_setaffinity(0, sizeof *own, own) != 0) _exit(126);
        if (s->cwd[0] && chdir(s->cwd) != 0) {
            vfork_errno = errno;
            _exit(127);
        }
        execve(s->path, s->argv, s->envp);
        vfork_errno = errno;
        _exit(127);
    }
    if (child > 0) group = child; /* before the signals: a SIGTERM now takes the group along */
    /* Before the wait, though the clock runs: the command's exit wakes the server, and the
     * kernel may then place it on any CPU of its set, the idle one among them (after the
     * wait it would stay on this one, a neighbour's too, with every command it starts). */
    if (held) sched_setaffinity(0, sizeof launcher_cpus, &launcher_cpus);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (child < 0) return -1;
    *pid = child;
    *exec_errno = vfork_errno;
    *status = 0;
    memset(ru, 0, sizeof *ru);
    int why = wait_command(child, ctl, s->timeout_ms, t0, status, ru, run_delay, &t1, io);
    sweep(child, killed); /* everything it left running, its group's and the others */
    kill(-child, SIGKILL); /* and a group member that raced the sweep */
    group = 0;
    *wall = t1 - t0;
    return why;
}

/* Read the rest of a request's header line ("LEN\n") and its LEN bytes of NUL-terminated
 * fields; NULL when perflab has gone or the request is malformed. */
static char *read_request(int ctl, int rep, char ***fields, size_t *count) {
    char line[64];
    if (read_until(ctl, line, sizeof line, '\n') != 0) return NULL;
    size_t len = 0;
    if (sscanf(line, "%zu", &len) != 1 || len == 0 || len > (64u << 20)) {
        dprintf(rep, "error request length %s\n", line);
        return NULL;
    }
    char *buf = malloc(len + 1);
    if (!buf || read_full(ctl, buf, len) != 0) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == 0;
    char **f = calloc(n + 1, sizeof *f);
    size_t k = 0;
    for (size_t i = 0; i < len && k < n; k++) {
        f[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    *fields = f;
    *count = n;
    return buf;
}

static void write_all(int fd, const char *p, size_t len) {
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        len -= (size_t)n;
    }
}

/* One run: "run LEN\n" (see the top of the file); returns -1 when perflab has gone. */
static int serve_one(int ctl, int rep, char **f, size_t count) {
    struct spec s;
    size_t k = 1;
    /* f[0] is HOLD; then the spec, its environment to the end */
    if (count < 6 || parse_spec(f, count, &k, 0, &s) != 0) {
        dprintf(rep, "error malformed request\n");
        return -1;
    }
    int hold = f[0][0] == '1';
    int go_w, err_r;
    pid_t child = spawn(&s, ctl, rep, &go_w, &err_r);
    int rc = 0;
    if (child < 0) {
        rc = -1;
        goto out;
    }
    if (hold) { /* perflab opens its counters on the held child, then says "g" */
        dprintf(rep, "pid %d\n", (int)child);
        char b = 0;
        ssize_t n;
        do n = read(ctl, &b, 1); while (n < 0 && errno == EINTR);
        if (n != 1 || b != 'g') {
            kill(-child, SIGKILL);
            waitpid(child, NULL, 0);
            group = 0;
            close(go_w);
            close(err_r);
            rc = -1;
            goto out;
        }
    }
    struct run_end run = {.pid = child};
    struct buf killed = {0};
    run.why = release_and_wait(child, go_w, err_r, ctl, s.timeout_ms, &run.status, &run.ru,
                               &run.wall, &run.run_delay, &run.started, &run.exec_errno,
                               &killed);
    if (run.why < 0 || run.why == 2) { /* perflab is gone or gave up on this run: end quietly */
        free(killed.p);
        rc = -1;
        goto out;
    }
    struct buf line = {0};
    run_end_print(&line, "done", &run);
    buf_printf(&line, "\nkilled %zu\n", killed.len); /* then what sweep() killed, as a batch's */
    buf_add(&line, killed.p ? killed.p : "", killed.len);
    write_all(rep, line.p, line.len);
    free(line.p);
    free(killed.p);
out:
    free(s.argv);
    free(s.envp);
    return rc;
}

/* A batch: "batch LEN\n" (see the top of the file); returns -1 when perflab has gone. */
static int serve_batch(int ctl, int rep, char **f, size_t count) {
    static int out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    if (out_p[0] < 0) { /* made once: every batch's commands write to these */
        if (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(err_p, O_CLOEXEC) != 0) return -1;
        fcntl(out_p[0], F_SETFL, O_NONBLOCK);
        fcntl(err_p[0], F_SETFL, O_NONBLOCK);
        fcntl(out_p[1], F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups for big writers */
        fcntl(err_p[1], F_SETPIPE_SZ, 1 << 20);
    }
    size_t k = 0, nspec = count ? (size_t)atol(f[0]) : 0;
    k = 1;
    struct spec *specs = calloc(nspec + 1, sizeof *specs);
    int bad = nspec < 1;
    size_t parsed = 0;
    for (; !bad && parsed < nspec; parsed++)
        if (parse_spec(f, count, &k, 1, &specs[parsed]) != 0) bad = 1;
    struct counters c;
    memset(&c, 0, sizeof c);
    struct region reg;
    memset(&reg, 0, sizeof reg);
    reg.ctl = reg.ack = -1;
    int stop = 0;
    long long chunk_ns = 0; /* CHUNK_MS (optional, 0: none): hand over records this often */
    const char *order = "";
    if (!bad && k + 5 <= count) {
        for (char *tok = f[k], *end; *tok && c.n < MAX_COUNTERS; tok = *end ? end + 1 : end) {
            c.type[c.n] = (int)strtol(tok, &end, 10);
            if (*end != ':') {
                bad = 1;
                break;
            }
            c.config[c.n++] = strtoll(end + 1, &end, 10);
        }
        if (f[k + 1][0]) {
            reg.ctl = open(f[k + 1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
            reg.ack = open(f[k + 2], O_RDWR | O_CLOEXEC);
            if (reg.ctl < 0 || reg.ack < 0) bad = 1;
        }
        stop = f[k + 3][0] == '1';
        order = f[k + 4];
        if (k + 6 <= count) chunk_ns = atoll(f[k + 5]) * 1000000LL;
    } else {
        bad = 1;
    }
    int rc = 0;
    struct buf rec = {0}, out_t = {0}, err_t = {0}, killed = {0};
    if (bad) {
        dprintf(rep, "error malformed batch request\n");
        rc = -1;
        goto done;
    }
    struct batch_io io = {out_p[0], err_p[0], &out_t, &err_t, reg.ctl >= 0 ? &reg : NULL, &c};
    int counter_errno = counters_open(&c); /* once: every run inherits them (above) */
    int runs = 0;
    long long chunk_start = now_ns();
    for (const char *p = order; *p;) {
        char *end;
        long i = strtol(p, &end, 10);
        p = *end ? end + 1 : end;
        if (i < 0 || (size_t)i >= nspec) {
            rc = -1;
            break;
        }
        const struct spec *s = &specs[i];
        drain(out_p[0], &out_t); /* anything late from an earlier run is not this run's */
        drain(err_p[0], &err_t);
        out_t.len = err_t.len = 0;
        if (reg.ctl >= 0) region_reset(&reg);
        struct run_end run = {.pid = -1};
        killed.len = 0;
        struct reading before[MAX_COUNTERS], fin[MAX_COUNTERS];
        counters_read(&c, before);
        int why = start_and_wait(s, ctl, rep, out_p[1], err_p[1], &run.status, &run.ru,
                                 &run.wall, &run.run_delay, &run.started, &run.exec_errno,
                                 &run.pid, &io, &killed);
        run.why = why;
        if (run.pid < 0) { /* vfork failed */
            rc = -1;
            break;
        }
        drain(out_p[0], &out_t);
        drain(err_p[0], &err_t);
        if (reg.ctl >= 0) region_serve(&reg, &c); /* a last word said just before the end */
        counters_read(&c, fin);
        for (int j = 0; j < c.n; j++) { /* this run's counts: what the reads differ by */
            fin[j].value -= before[j].value;
            fin[j].enabled -= before[j].enabled;
            fin[j].running -= before[j].running;
        }
        int nc = c.open ? c.n : 0;
        if (why < 0 || why == 2) { /* perflab is gone: hand over the runs finished so far */
            rc = -1;
            break;
        }
        run_end_print(&rec, "rec", &run);
        int in_region = reg.ctl >= 0;
        struct rec_tail tail = {
            .counter_errno = counter_errno, .nc = nc, .final = fin,
            .region_enables = in_region ? reg.enables : 0, .region_ns = in_region ? reg.ns : 0,
            .region_open = in_region && reg.t_enable >= 0,
            .nsum = in_region && reg.summed ? nc : 0, .region_sum = reg.sum,
            .out = out_t.p, .out_len = out_t.len, .err = err_t.p, .err_len = err_t.len,
            .region_bad = reg.bad_cmd,
            .region_bad_len = in_region && reg.bad ? strlen(reg.bad_cmd) : 0,
            .killed = killed.p, .killed_len = killed.len};
        rec_tail_print(&rec, &tail);
        runs++;
        int failed = run.exec_errno || why == 1 || !WIFEXITED(run.status) ||
                     WEXITSTATUS(run.status) != 0 ||
                     (reg.ctl >= 0 && (reg.t_enable >= 0 || reg.bad));
        if ((stop && failed) || rec.len > BATCH_OUTPUT_CAP) break; /* perflab asks for the rest */
        if (chunk_ns > 0 && *p && now_ns() - chunk_start >= chunk_ns) {
            /* A chunk: perflab stores these runs while the next ones are made, instead of
             * a request (two wake-ups, each waiting for a CPU on a busy machine) per batch. */
            buf_printf(&rec, "more %d\n", runs);
            write_all(rep, rec.p, rec.len);
            rec.len = 0;
            runs = 0;
            chunk_start = now_ns();
        }
    }
    buf_printf(&rec, "end %d\n", runs);
    write_all(rep, rec.p, rec.len); /* one write: perflab wakes once per batch */
done:
    counters_close(&c);
    if (reg.ctl >= 0) close(reg.ctl);
    if (reg.ack >= 0) close(reg.ack);
    for (size_t i = 0; i < parsed; i++) {
        free(specs[i].argv);
        free(specs[i].envp);
    }
    free(specs);
    free(rec.p);
    free(out_t.p);
    free(err_t.p);
    free(killed.p);
    return rc;
}

/* One request; returns -1 when perflab has gone (EOF) or the conversation broke. */
static int serve_request(int ctl, int rep) {
    char line[64];
    /* the verb, up to the space (requests are rare and short) */
    if (read_until(ctl, line, sizeof line, ' ') != 0) return -1;
    int batch = strcmp(line, "batch") == 0;
    if (!batch && strcmp(line, "run") != 0) {
        dprintf(rep, "error request %s\n", line);
        return -1;
    }
    char **f = NULL;
    size_t count = 0;
    char *buf = read_request(ctl, rep, &f, &count);
    if (!buf) return -1;
    int rc = batch ? serve_batch(ctl, rep, f, count) : serve_one(ctl, rep, f, count);
    free(f);
    free(buf);
    return rc;
}

static int server(int ctl, int rep) {
    while (serve_request(ctl, rep) == 0) {
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 || strcmp(argv[1], "--server") != 0) {
        fprintf(stderr, "usage: perflab-launch --server CTL_FD REPORT_FD\n");
        return 127;
    }
    pid_t parent = getppid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = parent_gone;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL); /* a terminal's Ctrl-C reaches us too: take the group along */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) return 127;
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* the commands' orphans are ours to end (sweep) */
    launcher_cpus_ok = sched_getaffinity(0, sizeof launcher_cpus, &launcher_cpus) == 0;
    return server(atoi(argv[2]), atoi(argv[3]));
}
