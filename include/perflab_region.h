/*
 * perflab_region.h - announce a workload's timed region to perflab.
 *
 * perflab counts hardware/software events (and valgrind instructions) for the whole process by
 * default.  A workload that calls perflab_region_begin() just before its timed loop and
 * perflab_region_end() just after it gets counters that cover only that loop, excluding process
 * start-up, JIT warm-up and result printing.
 *
 * Protocol (the same as `perf stat --control fifo:CTL,ACK`, so perf itself can drive it too):
 *   - perflab sets PERFLAB_CTL_FIFO and PERFLAB_ACK_FIFO to the paths of two named pipes;
 *   - begin: write "enable\n" to CTL, then read one line ("ack\n") from ACK;
 *   - end:   write "disable\n" to CTL, then read one line from ACK.
 * The acknowledgement makes the switch synchronous: no counted instruction runs before the
 * counters are on.  When the variables are absent every call is a no-op, so workloads run
 * unchanged outside perflab.
 *
 * Under callgrind, when perflab sets PERFLAB_CALLGRIND_REGION=1 (it then runs callgrind with
 * --collect-atstart=no), the same calls toggle callgrind's collection through its client
 * requests, when <valgrind/callgrind.h> was available at compile time.  Those toggle the
 * calling thread only: multi-threaded workloads should rather name the function holding their
 * timed loop (manifest `region_symbol`, callgrind --toggle-collect).
 *
 * Header-only; C99 and C++.  Not thread-safe: call from one thread, around the barrier-released
 * region of all threads.
 */
#ifndef PERFLAB_REGION_H
#define PERFLAB_REGION_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PERFLAB_HAVE_CALLGRIND 1
#endif
#endif

static int perflab__ctl_fd = -2; /* -2: not yet opened, -1: disabled */
static int perflab__ack_fd = -2;

static void perflab__open(void) {
    if (perflab__ctl_fd != -2) return;
    const char *ctl = getenv("PERFLAB_CTL_FIFO");
    const char *ack = getenv("PERFLAB_ACK_FIFO");
    perflab__ctl_fd = perflab__ack_fd = -1;
    if (!ctl || !ack || !*ctl || !*ack) return;
    perflab__ctl_fd = open(ctl, O_WRONLY | O_CLOEXEC);
    perflab__ack_fd = open(ack, O_RDONLY | O_CLOEXEC);
    if (perflab__ctl_fd < 0 || perflab__ack_fd < 0) {
        fprintf(stderr, "perflab_region: cannot open the control fifos (%s, %s); counting the whole process\n", ctl, ack);
        perflab__ctl_fd = perflab__ack_fd = -1;
    }
}

static void perflab__send(const char *cmd) {
    perflab__open();
    if (perflab__ctl_fd < 0) return;
    if (write(perflab__ctl_fd, cmd, strlen(cmd)) < 0) return;
    char buf[16];
    /* Read up to and including the newline of "ack\n". */
    for (size_t i = 0; i < sizeof buf; i++) {
        if (read(perflab__ack_fd, buf + i, 1) != 1 || buf[i] == '\n') break;
    }
}

static inline int perflab__callgrind_region(void) {
    const char *v = getenv("PERFLAB_CALLGRIND_REGION");
    return v && v[0] == '1';
}

static inline void perflab_region_begin(void) {
#ifdef PERFLAB_HAVE_CALLGRIND
    if (perflab__callgrind_region()) CALLGRIND_TOGGLE_COLLECT;
#endif
    perflab__send("enable\n");
}

static inline void perflab_region_end(void) {
    perflab__send("disable\n");
#ifdef PERFLAB_HAVE_CALLGRIND
    if (perflab__callgrind_region()) CALLGRIND_TOGGLE_COLLECT;
#endif
}

#endif /* PERFLAB_REGION_H */
