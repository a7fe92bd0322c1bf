/*
 * perflab-launch: the small parent that starts a measured command.
 *
 * Why it exists: Linux carries the peak RSS of a forked process's old image into ru_maxrss
 * across exec, so forking the measured command straight from the Python interpreter would report
 * the interpreter's size (tens of MiB) as the command's peak memory.  This launcher is tiny; it
 * forks the command, holds it before exec until perflab has opened its perf counters, times it
 * from release to wait4, and reports wait4's rusage.
 *
 * usage: perflab-launch CTL_FD REPORT_FD CPUS PATH ARGV0 [ARGS...]
 *   CPUS: "-" or a comma list of CPU numbers to pin the command to.
 *   REPORT_FD receives "pid N\n" once the command is forked (stopped before exec), then after
 *   one byte arrives on CTL_FD it is released and, when it ends, "done STATUS WALL_NS UTIME_US
 *   STIME_US MAXRSS_KB MINFLT MAJFLT NVCSW NIVCSW EXEC_ERRNO\n".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: perflab-launch CTL_FD REPORT_FD CPUS PATH ARGV0 [ARGS...]\n");
        return 127;
    }
    int ctl = atoi(argv[1]), rep = atoi(argv[2]);
    const char *cpus = argv[3], *path = argv[4];
    int go[2], err[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return 127;
    if (strcmp(cpus, "-") != 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        char *copy = strdup(cpus), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            CPU_SET(atoi(tok), &set);
        free(copy);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            dprintf(rep, "error sched_setaffinity %d\n", errno);
            return 127;
        }
    }
    pid_t child = fork();
    if (child < 0) return 127;
    if (child == 0) {
        char b;
        setpgid(0, 0);
        close(go[1]);
        close(err[0]);
        close(ctl);
        close(rep);
        if (read(go[0], &b, 1) != 1) _exit(127);
        execve(path, argv + 5, environ);
        int e = errno;
        if (write(err[1], &e, sizeof e) < 0) _exit(127);
        _exit(127);
    }
    setpgid(child, child); /* also here: no race with a kill before the child ran */
    close(go[0]);
    close(err[1]);
    dprintf(rep, "pid %d\n", (int)child);
    char b;
    ssize_t n;
    do n = read(ctl, &b, 1); while (n < 0 && errno == EINTR);
    if (n != 1) { /* perflab went away: never run the command */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return 127;
    }
    long long t0 = now_ns();
    if (write(go[1], "g", 1) != 1) return 127;
    close(go[1]);
    int status = 0;
    struct rusage ru;
    pid_t w;
    do w = wait4(child, &status, 0, &ru); while (w < 0 && errno == EINTR);
    long long t1 = now_ns();
    int exec_errno = 0;
    if (read(err[0], &exec_errno, sizeof exec_errno) != sizeof exec_errno) exec_errno = 0;
    dprintf(rep, "done %d %lld %lld %lld %ld %ld %ld %ld %ld %d\n", status, t1 - t0,
            (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
            ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, exec_errno);
    return 0;
}
