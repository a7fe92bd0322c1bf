/*
 * perflab-launch: the small parent that starts a measured command.
 *
 * Why it exists: Linux carries the peak RSS of a forked process's old image into ru_maxrss
 * across exec, so forking the measured command straight from the Python interpreter would report
 * the interpreter's size (tens of MiB) as the command's peak memory.  This launcher is tiny; it
 * forks the command, holds it before exec until perflab has opened its perf counters, times it
 * from release to wait4, and reports wait4's rusage (the command's, not perflab's).
 *
 * usage: perflab-launch --server CTL_FD REPORT_FD
 *   A fork server: it stays alive for a whole measurement and starts each run on request, so a
 *   run costs one fork+exec of the command and one or two exchanges on a pipe, not a Python
 *   Popen of a launcher.  Each request on CTL_FD is "run LEN\n" followed by LEN bytes of
 *   NUL-terminated strings: CPUS ("-" or a comma list to pin the command to), TIMEOUT_MS (0:
 *   none), HOLD ("1" or "0"), CWD ("" for the server's), PATH, ARGC, ARGV..., then the
 *   environment (one K=V string each, to the end).  The command is forked into its own process
 *   group.  With HOLD the server answers "pid N\n" and keeps the command before exec until one
 *   byte "g" arrives on CTL_FD (perflab opens its perf counters on it meanwhile; anything else
 *   kills it unreleased and ends the server); without, it is released at once.  When it ends:
 *   "done STATUS WALL_NS UTIME_US STIME_US MAXRSS_KB MINFLT MAJFLT NVCSW NIVCSW EXEC_ERRNO
 *   TIMED_OUT PID RUN_DELAY_NS\n" (wait4's rusage: the command's own; RUN_DELAY_NS from the
 *   zombie's /proc/PID/schedstat, -1 when it is not there).  Its stdout and stderr are the
 *   server's (perflab rewinds and truncates them between runs).  A timeout kills the command's
 *   whole process group; so does anything arriving on CTL_FD during a run (EOF: perflab closed
 *   the pipe or died), which also ends the server, and so does perflab's death
 *   (PR_SET_PDEATHSIG).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
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

/* perflab died (even by SIGKILL): the kernel sends PR_SET_PDEATHSIG's signal here, and the
 * measured command's whole process group goes with us, so nothing is left running. */
static volatile pid_t group = 0;

static void parent_gone(int sig) {
    (void)sig;
    if (group > 0) kill(-group, SIGKILL);
    _exit(128 + SIGTERM);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin_to(const char *cpus) {
    if (strcmp(cpus, "-") == 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    char *copy = strdup(cpus), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        CPU_SET(atoi(tok), &set);
    free(copy);
    if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
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

static int read_line(int fd, char *buf, size_t cap) {
    size_t i = 0;
    while (i + 1 < cap) {
        ssize_t n = read(fd, buf + i, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        if (buf[i] == '\n') break;
        i++;
    }
    buf[i] = 0;
    return 0;
}

/* Wait for the command, enforcing the timeout and perflab's going away (EOF or a byte on CTL):
 * either kills its whole process group.  Returns 1 on timeout, 2 when perflab went away. */
static int wait_command(pid_t child, int ctl, long timeout_ms, long long t0, int *status,
                        struct rusage *ru, long long *run_delay, long long *t_end) {
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
        struct pollfd p[2] = {{pidfd, POLLIN, 0}, {why ? -1 : ctl, POLLIN, 0}};
        int r = poll(p, 2, wait_ms);
        if (r > 0 && p[1].revents) { /* perflab closed the pipe (Ctrl-C, an error) or said kill */
            why = 2;
            kill(-child, SIGKILL);
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

/* One run of the fork server; returns -1 when perflab has gone (EOF). */
static int serve_one(int ctl, int rep) {
    char line[64];
    if (read_line(ctl, line, sizeof line) != 0) return -1;
    size_t len = 0;
    if (sscanf(line, "run %zu", &len) != 1 || len == 0 || len > (64u << 20)) {
        dprintf(rep, "error request %s\n", line);
        return -1;
    }
    char *buf = malloc(len + 1);
    if (!buf || read_full(ctl, buf, len) != 0) return -1;
    buf[len] = 0;
    /* split the NUL-terminated strings */
    size_t count = 0;
    for (size_t i = 0; i < len; i++) count += buf[i] == 0;
    char **f = calloc(count + 1, sizeof *f);
    size_t k = 0;
    for (size_t i = 0; i < len && k < count; k++) {
        f[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    size_t argc = count >= 6 ? (size_t)atol(f[5]) : 0;
    if (count < 7 || argc < 1 || 6 + argc > count) {
        dprintf(rep, "error malformed request\n");
        free(f);
        free(buf);
        return -1;
    }
    const char *cpus = f[0], *cwd = f[3], *path = f[4];
    long timeout_ms = atol(f[1]);
    int hold = f[2][0] == '1';
    char **argv = calloc(argc + 1, sizeof *argv);
    for (size_t i = 0; i < argc; i++) argv[i] = f[6 + i];
    char **envp = calloc(count - 6 - argc + 1, sizeof *envp);
    for (size_t i = 6 + argc, j = 0; i < count; i++, j++) envp[j] = f[i];

    int go[2], err[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return -1;
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
        pin_to(cpus);
        /* wait until the parent has made us a process-group leader and started the clock */
        if (read(go[0], &b, 1) != 1) _exit(127);
        int e = 0;
        if (cwd[0] && chdir(cwd) != 0) e = errno;
        if (!e) {
            execve(path, argv, envp);
            e = errno;
        }
        if (write(err[1], &e, sizeof e) < 0) _exit(127);
        _exit(127);
    }
    setpgid(child, child); /* also here: no race with a kill before the child ran */
    group = child;
    close(go[0]);
    close(err[1]);
    if (hold) { /* perflab opens its counters on the held child, then says "g" */
        dprintf(rep, "pid %d\n", (int)child);
        char b = 0;
        ssize_t n;
        do n = read(ctl, &b, 1); while (n < 0 && errno == EINTR);
        if (n != 1 || b != 'g') {
            kill(-child, SIGKILL);
            waitpid(child, NULL, 0);
            group = 0;
            close(go[1]);
            close(err[0]);
            free(envp);
            free(argv);
            free(f);
            free(buf);
            return -1;
        }
    }
    long long t0 = now_ns();
    if (write(go[1], "g", 1) != 1) return -1;
    close(go[1]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    long long run_delay = -1, t1 = 0;
    int why = wait_command(child, ctl, timeout_ms, t0, &status, &ru, &run_delay, &t1);
    kill(-child, SIGKILL); /* anything the command left behind in its group */
    group = 0;
    int exec_errno = 0;
    if (read(err[0], &exec_errno, sizeof exec_errno) != sizeof exec_errno) exec_errno = 0;
    close(err[0]);
    free(envp);
    free(argv);
    free(f);
    free(buf);
    if (why == 2) return -1; /* perflab is gone or gave up on this run: end quietly */
    dprintf(rep, "done %d %lld %lld %lld %ld %ld %ld %ld %ld %d %d %d %lld\n", status, t1 - t0,
            (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
            ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, exec_errno, why == 1,
            (int)child, run_delay);
    return 0;
}

static int server(int ctl, int rep) {
    while (serve_one(ctl, rep) == 0) {
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
    return server(atoi(argv[2]), atoi(argv[3]));
}
