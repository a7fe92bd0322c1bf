import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.IntUnaryOperator;
import perflab.Workload;

/**
 * perflab workload eh/java: the cost of throwing and catching a Java exception through DEPTH
 * non-inlined frames (after dotnet/runtime#77568).
 *
 * <p>Kinds: software (new exception with a stack trace), notrace (writableStackTrace=false),
 * prealloc (one preallocated exception), hardware (an implicit NullPointerException from a real
 * null dereference: compiled code takes the SIGSEGV path), error (an error code returned through
 * the same frames: the baseline). The manifest runs the JVM with -XX:-OmitStackTraceInFastThrow
 * (so C2 does not swap a hot implicit NPE for a preallocated, trace-less one) and
 * -XX:CompileCommand=dontinline on the chain, so every frame is real.
 *
 * <p>mode=async: the same kinds through a chain of CompletableFuture stages. Level n composes
 * level n-1 ({@code thenCompose}) and handles its outcome ({@code handle}): an exception is
 * rethrown (as Node's async levels do with {@code catch (e) { throw e; }}), an error value is
 * passed on; the leaf throws (or returns the error) inside a stage ({@code thenApply}), and the
 * loop's {@code join()} throws the CompletionException that is caught. Every stage is already
 * complete when composed, so the chain runs on the calling thread: depth costs are the stage
 * machinery and the exception, not executor hand-offs. async_stages counts the handle stages the
 * failure passed through in one operation: depth (depth 0 = the leaf stage alone).
 */
public final class Eh {
    static final String[] KINDS = {"software", "notrace", "prealloc", "hardware", "error"};

    /** An ordinary exception: the constructor walks the stack (fillInStackTrace). */
    static final class TraceEx extends RuntimeException {
        TraceEx(String msg) {
            super(msg);
        }
    }

    /** No stack trace, no suppression: the cheapest exception a library can make. */
    static final class NoTraceEx extends RuntimeException {
        NoTraceEx(String msg) {
            super(msg, null, false, false);
        }
    }

    static final class Holder {
        int value = 1;
    }

    static final NoTraceEx PREALLOCATED = new NoTraceEx("preallocated");
    // Written by every catch so the exception object escapes: escape analysis cannot remove the
    // allocation and turn the throw into a plain branch.
    static volatile Object sink;

    interface Op {
        /** One throw+catch through depth frames; returns 1 when something was caught, which it
         * leaves in {@link #sink} (the probe reads its stack trace there). */
        int once(int depth, Holder h);
    }

    // ---- the chains: one method per kind so each call site stays monomorphic ----
    static int chainSoftware(int n) {
        if (n <= 1) {
            throw new TraceEx("depth");
        }
        return chainSoftware(n - 1) + 1;
    }

    static int chainNoTrace(int n) {
        if (n <= 1) {
            throw new NoTraceEx("depth");
        }
        return chainNoTrace(n - 1) + 1;
    }

    static int chainPrealloc(int n) {
        if (n <= 1) {
            throw PREALLOCATED;
        }
        return chainPrealloc(n - 1) + 1;
    }

    static int chainHardware(int n, Holder h) {
        if (n <= 1) {
            return h.value; // h is null: an implicit NullPointerException
        }
        return chainHardware(n - 1, h) + 1;
    }

    static int chainError(int n, int fail) {
        if (n <= 1) {
            return fail != 0 ? -1 : 0;
        }
        int r = chainError(n - 1, fail);
        if (r < 0) {
            return r; // propagate the error value, as a caller checking a result would
        }
        return r + 1;
    }

    static final class Software implements Op {
        public int once(int depth, Holder h) {
            try {
                if (depth == 0) {
                    throw new TraceEx("depth");
                }
                chainSoftware(depth);
                return 0;
            } catch (TraceEx e) {
                sink = e;
                return 1;
            }
        }
    }

    static final class NoTrace implements Op {
        public int once(int depth, Holder h) {
            try {
                if (depth == 0) {
                    throw new NoTraceEx("depth");
                }
                chainNoTrace(depth);
                return 0;
            } catch (NoTraceEx e) {
                sink = e;
                return 1;
            }
        }
    }

    static final class Prealloc implements Op {
        public int once(int depth, Holder h) {
            try {
                if (depth == 0) {
                    throw PREALLOCATED;
                }
                chainPrealloc(depth);
                return 0;
            } catch (NoTraceEx e) {
                sink = e;
                return 1;
            }
        }
    }

    static final class Hardware implements Op {
        public int once(int depth, Holder h) {
            try {
                if (depth == 0) {
                    return h.value;
                }
                chainHardware(depth, h);
                return 0;
            } catch (NullPointerException e) {
                sink = e;
                return 1;
            }
        }
    }

    static final class ErrorValue implements Op {
        public int once(int depth, Holder h) {
            int r = depth == 0 ? failFlag : chainError(depth, failFlag);
            if (r < 0) {
                sink = h;
                return 1;
            }
            return 0;
        }
    }

    // ---- the async chains (mode=async) ----
    static int leafSoftware(int x) {
        throw new TraceEx("depth");
    }

    static int leafNoTrace(int x) {
        throw new NoTraceEx("depth");
    }

    static int leafPrealloc(int x) {
        throw PREALLOCATED;
    }

    static int leafHardware(int x) {
        return NULL_HOLDER.value; // an implicit NullPointerException inside the stage
    }

    static int leafError(int x) {
        return failFlag;
    }

    /** The leaf: a stage that throws (or returns the error value). */
    static CompletableFuture<Integer> chainAsyncLeaf(int n, IntUnaryOperator leaf) {
        return CompletableFuture.completedFuture(n).thenApply(leaf::applyAsInt);
    }

    /** Level n composes level n-1 and handles what it completed with; level 0 is the leaf, so
     *  depth n has n handle levels above it, as eh/cpp has n coroutines and eh/csharp n awaits. */
    static CompletableFuture<Integer> chainAsync(int n, IntUnaryOperator leaf, long[] stages) {
        if (n <= 0) {
            return chainAsyncLeaf(n, leaf);
        }
        return CompletableFuture.completedFuture(n - 1)
                .thenCompose(m -> chainAsync(m, leaf, stages))
                .handle((r, e) -> chainAsyncLevel(r, e, stages));
    }

    static Integer chainAsyncLevel(Integer r, Throwable e, long[] stages) {
        if (e != null) {
            stages[0]++;
            throw e instanceof CompletionException ce ? ce : new CompletionException(e);
        }
        if (r < 0) {
            stages[0]++;
            return r; // the error value, passed on as a caller checking a result would
        }
        return r + 1;
    }

    static final ThreadLocal<long[]> STAGES = ThreadLocal.withInitial(() -> new long[1]);

    static final class Async implements Op {
        final IntUnaryOperator leaf;
        final Class<? extends Throwable> expected; // null: the error-value kind

        Async(String kind) {
            switch (kind) {
                case "software": leaf = Eh::leafSoftware; expected = TraceEx.class; break;
                case "notrace": leaf = Eh::leafNoTrace; expected = NoTraceEx.class; break;
                case "prealloc": leaf = Eh::leafPrealloc; expected = NoTraceEx.class; break;
                case "hardware":
                    leaf = Eh::leafHardware;
                    expected = NullPointerException.class;
                    break;
                default: leaf = Eh::leafError; expected = null; break;
            }
        }

        CompletableFuture<Integer> start(int depth) {
            return chainAsync(depth, leaf, STAGES.get());
        }

        public int once(int depth, Holder h) {
            try {
                int r = start(depth).join();
                if (r < 0 && expected == null) {
                    sink = h;
                    return 1;
                }
                return 0;
            } catch (CompletionException e) {
                if (expected != null && expected.isInstance(e.getCause())) {
                    sink = e;
                    return 1;
                }
                throw e;
            }
        }
    }

    // Not final and not a constant: the JIT must load them every time.
    static Holder NULL_HOLDER = null;
    static int failFlag = -1;

    static Op opFor(String kind) {
        switch (kind) {
            case "software": return new Software();
            case "notrace": return new NoTrace();
            case "prealloc": return new Prealloc();
            case "hardware": return new Hardware();
            default: return new ErrorValue();
        }
    }

    static long loop(Op op, int depth, long n) {
        long caught = 0;
        Holder h = NULL_HOLDER;
        for (long i = 0; i < n; i++) {
            caught += op.once(depth, h);
        }
        return caught;
    }

    public static void main(String[] args) throws Exception {
        Workload f = new Workload("eh/java", args);
        int depth = (int) f.intFlag("depth", 0, 0, 100000);
        int threads = (int) f.intFlag("threads", 1, 1, 1024);
        long iterations = f.intFlag("iterations", 0, 0, 1_000_000_000L);
        long warmup = f.intFlag("warmup", 20000, 0, 100_000_000L);
        String kind = f.choiceFlag("kind", "software", KINDS);
        String mode = f.choiceFlag("mode", "sync", "sync", "async");
        f.rejectUnknown("depth, kind, mode, threads, iterations, warmup");
        // Deep stacks need room: 100000 frames do not fit a default 1 MiB thread stack.
        long stackBytes = Math.max(8L << 20, (long) depth * 256L + (1L << 20));

        final Op op = mode.equals("async") ? new Async(kind) : opFor(kind);
        final int d = depth;
        // Warm-up: enough calls for C2 to compile the loop and the chain, capped at one second
        // so a deep, slow variant does not spend a minute warming up.
        long[] warmRes = new long[2];
        Thread warm = new Thread(null, () -> {
            long t0 = System.nanoTime();
            long done = 0;
            while (done < warmup && System.nanoTime() - t0 < 1_000_000_000L) {
                long batch = Math.min(1000, warmup - done);
                loop(op, d, batch);
                done += batch;
            }
            warmRes[0] = done;
            // Calibration: grow a batch until it lasts 50 ms, then scale to about 0.5 s.
            if (iterations == 0) {
                long n = 100;
                while (true) {
                    long s = System.nanoTime();
                    loop(op, d, n);
                    long el = System.nanoTime() - s;
                    if (el >= 50_000_000L || n >= 1_000_000_000L) {
                        double per = (double) el / n;
                        warmRes[1] = Math.max(100, Math.min(50_000_000L,
                                (long) (500_000_000.0 / Math.max(per, 0.1))));
                        break;
                    }
                    n *= 2;
                }
            }
        }, "warmup", stackBytes);
        warm.start();
        warm.join();
        final long n = iterations == 0 ? warmRes[1] : iterations;

        final long[] caught = new long[threads];
        final long[] ns = Workload.timeThreads(threads, "eh", stackBytes, id -> loop(op, d, n),
                caught);

        // One more failure on a thread of its own, outside the timed region: the frames in its
        // stack trace (0 for the trace-less kinds and the error value) and, in async mode, the
        // handle stages it passed through.  once() stands where the loop calls it from, so the
        // trace holds the same frames as in the timed loop.
        int[] frames = new int[1];
        long[] stages = new long[1];
        Thread probe = new Thread(null, () -> {
            long[] st = STAGES.get();
            long before = st[0];
            sink = null;
            op.once(d, NULL_HOLDER);
            stages[0] = st[0] - before;
            Object failure = sink instanceof CompletionException c ? c.getCause() : sink;
            frames[0] = failure instanceof Throwable t ? t.getStackTrace().length : 0;
        }, "probe", stackBytes);
        probe.start();
        probe.join();

        long ops = n * threads;
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("depth", depth);
        params.put("kind", kind);
        params.put("mode", mode);
        params.put("threads", threads);
        params.put("iterations", iterations);
        StringBuilder ps = new StringBuilder("{");
        for (Map.Entry<String, Object> e : params.entrySet()) {
            ps.append(ps.length() > 1 ? ", " : "").append('"').append(e.getKey()).append("\": ");
            Object v = e.getValue();
            ps.append(v instanceof String ? "\"" + v + "\"" : String.valueOf(v));
        }
        ps.append('}');
        System.out.println(String.format(Locale.ROOT,
                "{\"workload\": \"eh/java\", \"ops\": %d, \"threads\": %d, \"per_thread_ns\": %s, "
                        + "\"ns_per_op\": %.3f, \"ops_per_s\": %.1f, \"checksum\": %d, "
                        + "\"iterations\": %d, \"calibrated\": %b, \"iterations_per_thread\": %d, "
                        + "\"warmup_iterations\": %d, "
                        + "\"trace_frames\": %d, \"async_stages\": %d, "
                        + "\"parallelism\": \"threads\", "
                        + "\"runtime\": \"%s\", \"params\": %s}",
                ops, threads, Workload.jsonArray(ns), Workload.nsPerOp(ns, n),
                Workload.opsPerS(ns, n), Workload.sum(caught), n, iterations == 0, n,
                warmRes[0],
                frames[0], stages[0], System.getProperty("java.vm.version"), ps));
    }
}
