import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import perflab.Workload;

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

    public static void main(String[] args) throws Exception {
        Workload f = new Workload("timers/java", args);
        int threads = (int) f.intFlag("threads", 1, 1, 1024);
        long iterations = f.intFlag("iterations", 0, 0, 1_000_000_000L);
        long live = f.intFlag("live", 0, 0, 10_000_000L);
        long warmup = f.intFlag("warmup", 20000, 0, 100_000_000L);
        boolean removeOnCancel = f.boolFlag("remove_on_cancel", false);
        f.rejectUnknown("threads, live, remove_on_cancel, iterations, warmup");

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
        final long[] cancelled = new long[threads];
        final long[] ns = Workload.timeThreads(threads, "timers", 0, id -> churn(ex, iters),
                cancelled);

        // Queue size now: live tasks plus, without remove-on-cancel, every cancelled one.
        int queueSize = ex.getQueue().size();
        long liveCancelled = 0;
        for (ScheduledFuture<?> lt : liveTasks) {
            if (lt.cancel(false)) {
                liveCancelled++;
            }
        }
        ex.shutdownNow();

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
                ops, threads, Workload.jsonArray(ns), Workload.nsPerOp(ns, n),
                Workload.opsPerS(ns, n), Workload.sum(cancelled),
                ops, FIRED.get(), queueSize, liveCancelled, n, iterations == 0, n, warmed,
                System.getProperty("java.vm.version"), threads, live, removeOnCancel, iterations));
    }
}
