import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * perflab workload timers/java: T platform threads each schedule a task an hour away on ONE shared
 * ScheduledThreadPoolExecutor and cancel it (after dotnet/coreclr#14527).
 *
 * <p>The executor's DelayedWorkQueue is a heap behind one ReentrantLock: the single global lock
 * the reference PR removed from .NET. With remove_on_cancel=false (the JDK default) a cancelled
 * task stays in the heap until its hour is up, so the queue grows with every operation; with
 * true, cancel() removes it (an O(log n) sift under the same lock). checksum = tasks cancelled.
 */
public final class Timers {
    static final AtomicLong FIRED = new AtomicLong();
    static final Runnable TASK = FIRED::incrementAndGet; // never expected to run

    static long churn(ScheduledThreadPoolExecutor ex, long n) {
        long cancelled = 0;
        for (long i = 0; i < n; i++) {
            ScheduledFuture<?> f = ex.schedule(TASK, 1, TimeUnit.HOURS);
            if (f.cancel(false)) {
                cancelled++;
            }
        }
        return cancelled;
    }

    static void usage(String msg) {
        System.err.println("timers/java: " + msg);
        System.exit(2);
    }

    static long intFlag(Map<String, String> f, String name, long def, long min, long max) {
        String v = f.remove(name);
        if (v == null) {
            return def;
        }
        long x = 0;
        try {
            x = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            usage("--" + name + "=" + v + " is not a whole number; give one in [" + min + ", "
                    + max + "]");
        }
        if (x < min || x > max) {
            usage("--" + name + "=" + v + " is out of range; give a value in [" + min + ", "
                    + max + "]");
        }
        return x;
    }

    static boolean boolFlag(Map<String, String> f, String name, boolean def) {
        String v = f.remove(name);
        if (v == null) {
            return def;
        }
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true": case "1": case "yes": return true;
            case "false": case "0": case "no": return false;
            default:
                usage("--" + name + "=" + v + " is not a boolean; use true or false");
                return def;
        }
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> f = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || a.length() < 3) {
                usage("unexpected argument '" + a + "'; parameters are --name=value");
            }
            String body = a.substring(2);
            int eq = body.indexOf('=');
            if (eq >= 0) {
                f.put(body.substring(0, eq), body.substring(eq + 1));
            } else if (i + 1 < args.length) {
                f.put(body, args[++i]);
            } else {
                usage("--" + body + " needs a value; write --" + body + "=VALUE");
            }
        }
        return f;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> f = parse(args);
        int threads = (int) intFlag(f, "threads", 1, 1, 1024);
        long iterations = intFlag(f, "iterations", 0, 0, 1_000_000_000L);
        long live = intFlag(f, "live", 0, 0, 10_000_000L);
        long warmup = intFlag(f, "warmup", 20000, 0, 100_000_000L);
        boolean removeOnCancel = boolFlag(f, "remove_on_cancel", false);
        if (!f.isEmpty()) {
            usage("unknown parameter --" + f.keySet().iterator().next()
                    + "; known: threads, live, remove_on_cancel, iterations, warmup");
        }

        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1);
        ex.setRemoveOnCancelPolicy(removeOnCancel);
        ex.prestartAllCoreThreads();

        // Warm-up (C2 compiles schedule/cancel and the heap code), then calibration.
        long t0 = System.nanoTime();
        long warmed = 0;
        while (warmed < warmup && System.nanoTime() - t0 < 1_000_000_000L) {
            long b = Math.min(1000, warmup - warmed);
            churn(ex, b);
            warmed += b;
        }
        long n = iterations;
        if (n == 0) {
            for (long b = 100; ; b *= 2) {
                long s = System.nanoTime();
                churn(ex, b);
                long el = System.nanoTime() - s;
                if (el >= 50_000_000L || b >= 1_000_000_000L) {
                    n = Math.max(100, Math.min(50_000_000L,
                            (long) (5e8 / Math.max((double) el / b, 0.1))));
                    break;
                }
            }
        }
        // Start the timed run from an empty queue: drop what warm-up left behind.
        ex.purge();

        List<ScheduledFuture<?>> liveTasks = new ArrayList<>();
        for (long i = 0; i < live; i++) {
            liveTasks.add(ex.schedule(TASK, 1, TimeUnit.HOURS));
        }

        final long iters = n;
        final long[] ns = new long[threads];
        final long[] cancelled = new long[threads];
        final CyclicBarrier ready = new CyclicBarrier(threads + 1);
        final CyclicBarrier go = new CyclicBarrier(threads + 1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int id = t;
            Thread th = new Thread(() -> {
                try {
                    ready.await();
                    go.await();
                    long s = System.nanoTime();
                    long c = churn(ex, iters);
                    ns[id] = System.nanoTime() - s;
                    cancelled[id] = c;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "timers-" + t);
            th.start();
            ts.add(th);
        }
        ready.await();
        perflab.Region.begin();
        go.await();
        for (Thread th : ts) {
            th.join();
        }
        perflab.Region.end();

        // Queue size now: live tasks plus, without remove-on-cancel, every cancelled one.
        int queueSize = ex.getQueue().size();
        long liveCancelled = 0;
        for (ScheduledFuture<?> lt : liveTasks) {
            if (lt.cancel(false)) {
                liveCancelled++;
            }
        }
        ex.shutdownNow();

        long checksum = 0;
        long maxNs = 0;
        double sum = 0;
        StringBuilder per = new StringBuilder("[");
        for (int t = 0; t < threads; t++) {
            checksum += cancelled[t];
            sum += (double) ns[t] / n;
            maxNs = Math.max(maxNs, ns[t]);
            per.append(t == 0 ? "" : ", ").append(ns[t]);
        }
        per.append(']');
        long ops = n * threads;
        System.out.println(String.format(Locale.ROOT,
                "{\"workload\": \"timers/java\", \"ops\": %d, \"threads\": %d, "
                        + "\"per_thread_ns\": %s, \"ns_per_op\": %.3f, \"ops_per_s\": %.1f, "
                        + "\"checksum\": %d, \"created\": %d, \"fired\": %d, "
                        + "\"queue_size\": %d, \"live_cancelled\": %d, "
                        + "\"iterations\": %d, \"calibrated\": %b, \"iterations_per_thread\": %d, "
                        + "\"warmup_iterations\": %d, "
                        + "\"timeout_s\": 3600, \"parallelism\": \"threads\", \"runtime\": \"%s\", "
                        + "\"params\": {\"threads\": %d, \"live\": %d, "
                        + "\"remove_on_cancel\": %b, \"iterations\": %d}}",
                ops, threads, per, sum / threads, maxNs > 0 ? ops * 1e9 / maxNs : 0.0, checksum,
                ops, FIRED.get(), queueSize, liveCancelled, n, iterations == 0, n, warmed,
                System.getProperty("java.vm.version"), threads, live, removeOnCancel, iterations));
    }
}
