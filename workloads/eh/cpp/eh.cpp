// eh/cpp: the cost of a C++ throw/catch through `depth` real frames (after dotnet/runtime#77568).
//   kind=software  throw a small struct (--exception=struct) or a std::exception subclass (=std)
//   kind=hardware  a real SIGSEGV turned into a C++ exception (-fnon-call-exceptions, eh_hw.cpp)
//   kind=error     the baseline: an error code returned through the same frames
// depth 0 = the throw is inside the try block; depth N = N perflab_frame calls between them.
// mode=async: the same through a chain of N C++20 coroutines, each co_awaiting the next
// (eh_async.cpp); kind=software and error.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>

#include "eh.h"
#include "perflab_workload.h"

namespace {

struct SmallError {
    int code;
};

struct StdError : std::exception {
    const char *what() const noexcept override { return "perflab eh"; }
};

enum Kind { SOFTWARE, HARDWARE, ERROR };

struct Config {
    Kind kind;
    bool std_exception;
    bool async;
    int depth;
};

thread_local unsigned long long t_thrown;
std::atomic<unsigned long long> g_thrown{0}, g_signals{0}, g_frames{0}, g_stored{0};
std::atomic<bool> g_mismatch{false};

}  // namespace

// One frame between catch and throw.  Not static: a visible symbol for the depth tests.
template <class E>
EH_NOINLINE void perflab_frame(int depth) {
    if (depth <= 1) {
        t_thrown++;
        throw E();
    }
    perflab_frame<E>(depth - 1);
    EH_BARRIER();
}

EH_NOINLINE int perflab_frame_error(int depth) {
    if (depth <= 1) {
        t_thrown++;
        return -1;
    }
    int rc = perflab_frame_error(depth - 1);
    EH_BARRIER();
    if (rc != 0) return rc;  // how error codes propagate: every frame checks
    return 0;
}

// The sync chains for eh_throw_loop / eh_error_loop (eh.h).
struct SyncChain {
    static void count() { t_thrown++; }
    template <class E>
    static void run(int depth) { perflab_frame<E>(depth); }
    static int run_error(int depth) { return perflab_frame_error(depth); }
    static int fail() {
        static volatile int fail = -1;  // depth 0: the "error" is a value the compiler cannot fold
        return fail;
    }
};

static unsigned long long eh_loop(long long n, void *arg) {
    const Config *c = static_cast<const Config *>(arg);
    unsigned long long before = t_thrown, caught = 0, signals = 0;
    if (c->async) {
        EhAsyncCounts counts{};
        caught = eh_async_loop(n, c->depth, c->kind == ERROR ? EH_ASYNC_ERROR : EH_ASYNC_SOFTWARE,
                               c->std_exception, &counts);
        t_thrown += counts.thrown;
        g_frames += counts.frames;
        g_stored += counts.stored;
    } else switch (c->kind) {
    case SOFTWARE:
        caught = c->std_exception
                     ? eh_throw_loop<SyncChain, StdError, std::exception>(n, c->depth)
                     : eh_throw_loop<SyncChain, SmallError, SmallError>(n, c->depth);
        break;
    case ERROR:
        caught = eh_error_loop<SyncChain>(n, c->depth);
        break;
    case HARDWARE:
        caught = eh_hw_loop(n, c->depth, &signals);
        t_thrown += signals;  // each fault is one throw (from the signal handler)
        break;
    }
    unsigned long long thrown = t_thrown - before;
    if (thrown != caught || caught != (unsigned long long)n) g_mismatch = true;  // one per op
    g_thrown += thrown;
    g_signals += signals;
    return caught;
}

static void eh_init(void *arg) {
    if (static_cast<const Config *>(arg)->kind == HARDWARE) eh_hw_thread_init();
}

static void eh_reset(void *) {
    g_thrown = 0;  // count only the timed region
    g_signals = 0;
    g_frames = 0;
    g_stored = 0;
}

int main(int argc, char **argv) {
    pw_param ps[] = {
        PW_INT("depth", 0, 0, 100000),
        PW_STR("kind", "software", "software|hardware|error"),
        PW_STR("exception", "struct", "struct|std"),
        PW_STR("mode", "sync", "sync|async"),
    };
    pw_parse(argc, argv, ps, PW_COUNT(ps));
    Config c{};
    const char *kind = pw_str(ps, PW_COUNT(ps), "kind");
    c.kind = !strcmp(kind, "hardware") ? HARDWARE : !strcmp(kind, "error") ? ERROR : SOFTWARE;
    c.std_exception = !strcmp(pw_str(ps, PW_COUNT(ps), "exception"), "std");
    c.depth = (int)pw_int(ps, PW_COUNT(ps), "depth");
    c.async = !strcmp(pw_str(ps, PW_COUNT(ps), "mode"), "async");
    if (c.async && c.kind == HARDWARE) {
        fprintf(stderr, "eh: --mode=async supports --kind=software and --kind=error (the SIGSEGV "
                        "path is built for the sync chain only); use --mode=sync\n");
        return 2;
    }
    if (c.kind == HARDWARE && !eh_hw_supported()) {
        fprintf(stderr, "eh: --kind=hardware needs GCC on x86-64 (-fnon-call-exceptions); "
                        "use --kind=software or --kind=error\n");
        return 2;
    }
    if (c.kind == HARDWARE && c.std_exception) {
        fprintf(stderr, "eh: --exception applies to --kind=software only; drop it\n");
        return 2;
    }

    pw_result r;
    pw_run_ex(eh_loop, eh_init, eh_reset, &c, &r);
    if (g_mismatch || g_thrown != r.checksum ||
        (c.kind == HARDWARE && g_signals != r.checksum)) {
        fprintf(stderr, "eh: thrown %llu, caught %llu, signals %llu: the counts disagree\n",
                (unsigned long long)g_thrown, r.checksum, (unsigned long long)g_signals);
        return 1;
    }
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"thrown\":%llu,\"signals\":%llu,\"coroutine_frames\":%llu,"
             "\"async_rethrows\":%llu,\"compiler\":\"g++ %d.%d\"",
             (unsigned long long)g_thrown, (unsigned long long)g_signals,
             (unsigned long long)g_frames, (unsigned long long)g_stored, __GNUC__, __GNUC_MINOR__);
    pw_print_json(&r, ps, PW_COUNT(ps), extra);
    return 0;
}
