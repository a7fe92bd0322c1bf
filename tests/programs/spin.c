/* A CPU loop whose work is known: spin N [FAULT_PAGES] [EXIT_CODE].
 * The loop runs inside the announced timed region; FAULT_PAGES pages are touched outside it.
 * Prints {"ops": N, "sum": ...} as a workload would. */
#include "perflab_region.h"
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned long perflab_timed_region(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000000;
    long pages = argc > 2 ? atol(argv[2]) : 0;
    int code = argc > 3 ? atoi(argv[3]) : 0;
    if (pages > 0) {
        volatile char *p = malloc(pages * 4096 + 4096);
        for (long i = 0; i < pages; i++) p[i * 4096] = 1;
    }
    perflab_region_begin();
    unsigned long x = perflab_timed_region(n);
    perflab_region_end();
    printf("{\"ops\": %lu, \"sum\": %lu}\n", n, x % 1000);
    return code;
}
