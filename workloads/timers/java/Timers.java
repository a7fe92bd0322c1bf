import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import perflab.Workload;

/**
 * perflab workload timers/java: T platform threads schedule tasks on ScheduledThreadPoolExecutors
 * and cancel them, as dotnet/coreclr#14527 measured .NET's timers.
 *
 * <p>An executor's DelayedWorkQueue is a heap behind one ReentrantLock, served by the executor's
 * one core thread (the firing thread). {@code --queue=global}: ONE executor shared by all threads
 * (the single global lock the reference PR removed from .NET: its "before");
 * {@code --queue=partitioned}: one executor per thread (its per-core "after").
 *
 * <p>{@code --cancel=same}: the creating thread cancels its task; {@code --cancel=other}: it hands
 * the future to a partner thread (one per creating thread, through an ArrayBlockingQueue) that
 * cancels it; a thread's time ends when its partner has cancelled all of its tasks.
 * {@code --fire=N}: tasks due N microseconds after scheduling, not cancelled; each measures its
 * lateness (System.nanoTime() - due) when it runs. With remove_on_cancel=false (the JDK default)
 * a cancelled task stays in the heap until its hour is up, so the queue grows with every
 * operation; with true, cancel() removes it (an O(log n) sift under the same lock).
 * checksum = tasks cancelled (fire=0) or fired (fire&gt;0).
 */
public final class Timers {
    static final AtomicLong NEVER_FIRED = new AtomicLong();
    static final Runnable TASK = NEVER_FIRED::incrementAndGet; // an hour away: never expected to run

    /** One executor (queue + lock + firing thread) and what the timed region did with it. */
    static final class Queue {
        final ScheduledThreadPoolExecutor ex;
        final AtomicLong scheduled = new AtomicLong();
        // Written only by this executor's single firing thread; read after the owners saw their
        // fired counts (an AtomicLong increment after the write: happens-before).
        long[] late = new long[4096];
        int nlate;

        Queue(boolean removeOnCancel) {
            ex = new ScheduledThreadPoolExecutor(1);
            ex.setRemoveOnCancelPolicy(removeOnCancel);
            ex.prestartAllCoreThreads();
        }

        void record(long ns) {
            if (nlate == late.length) {
                late = Arrays.copyOf(late, nlate * 2);
            }
            late[nlate++] = ns;
        }
    }

    /** A task that fires: the callback measures how late it runs. */
    static final class FireTask implements Runnable {
        final long due;
        final Worker owner;

        FireTask(long due, Worker owner) {
            this.due = due;
            this.owner = owner;
        }

        @Override
        public void run() {
            owner.queue.record(System.nanoTime() - due);
            owner.fired.incrementAndGet();
        }
    }

    record Handed(ScheduledFuture<?> future, Thread creator) { }

    /** A creating thread's queue, its partner (--cancel=other) and its counters. */
    static final class Worker {
        final Queue queue;
        final ArrayBlockingQueue<Handed> handoff;
        final AtomicLong done = new AtomicLong();
        final AtomicLong cancelled = new AtomicLong();
        final AtomicLong cross = new AtomicLong();
        final AtomicLong fired = new AtomicLong();

        Worker(Queue queue, boolean other, String name) {
            this.queue = queue;
            this.handoff = other ? new ArrayBlockingQueue<>(1024) : null;
            if (other) {
                Thread partner = new Thread(this::partner, name + "-partner");
                partner.setDaemon(true);
                partner.start();
            }
        }

        private void partner() {
            Thread self = Thread.currentThread();
            try {
                while (true) {
                    Handed h = handoff.take();
                    if (h.future().cancel(false)) {
                        cancelled.incrementAndGet();
                        if (h.creator() != self) {
                            cross.incrementAndGet();
                        }
                    }
                    done.incrementAndGet();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static long fireUs;

    static long run(Worker w, long n) {
        ScheduledThreadPoolExecutor ex = w.queue.ex;
        if (fireUs > 0) {
            long f0 = w.fired.get();
            for (long i = 0; i < n; i++) {
                ex.schedule(new FireTask(System.nanoTime() + fireUs * 1000, w), fireUs,
                        TimeUnit.MICROSECONDS);
                w.queue.scheduled.incrementAndGet();
            }
            while (w.fired.get() < f0 + n) {
                LockSupport.parkNanos(10_000);
            }
            return w.fired.get() - f0;
        }
        if (w.handoff != null) {
            long c0 = w.cancelled.get();
            long target = w.done.get() + n;
            Thread self = Thread.currentThread();
            for (long i = 0; i < n; i++) {
                ScheduledFuture<?> f = ex.schedule(TASK, 1, TimeUnit.HOURS);
                w.queue.scheduled.incrementAndGet();
                try {
                    w.handoff.put(new Handed(f, self));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
            while (w.done.get() < target) {
                LockSupport.parkNanos(10_000);
            }
            return w.cancelled.get() - c0;
        }
        long cancelled = 0;
        for (long i = 0; i < n; i++) {
            ScheduledFuture<?> f = ex.schedule(TASK, 1, TimeUnit.HOURS);
            w.queue.scheduled.incrementAndGet();
            if (f.cancel(false)) {
                cancelled++;
            }
        }
        return cancelled;
    }

    /** Nearest-rank percentile of sorted xs. */
    static long pct(long[] xs, double p) {
        if (xs.length == 0) {
            return 0;
        }
        int k = (int) Math.ceil(p / 100.0 * xs.length);
        return xs[Math.max(1, Math.min(xs.length, k)) - 1];
    }

    public static void main(String[] args) throws Exception {
        Workload f = new Workload("timers/java", args);
        int threads = (int) f.intFlag("threads", 1, 1, 1024);
        long iterations = f.intFlag("iterations", 0, 0, 1_000_000_000L);
        long live = f.intFlag("live", 0, 0, 10_000_000L);
        long warmup = f.intFlag("warmup", 20000, 0, 100_000_000L);
        boolean removeOnCancel = f.boolFlag("remove_on_cancel", false);
        String cancel = f.choiceFlag("cancel", "same", "same", "other");
        fireUs = f.intFlag("fire", 0, 0, 1_000_000L);
        String queueMode = f.choiceFlag("queue", "global", "global", "partitioned");
        f.rejectUnknown("threads, live, remove_on_cancel, cancel, fire, queue, iterations, warmup");
        boolean other = cancel.equals("other");
        if (fireUs > 0 && other) {
            f.usage("--fire=" + fireUs + ": a firing task is not cancelled; --cancel=other applies "
                    + "to never-firing tasks (--fire=0)");
        }

        Queue[] queues = new Queue[queueMode.equals("partitioned") ? threads : 1];
        for (int i = 0; i < queues.length; i++) {
            queues[i] = new Queue(removeOnCancel);
        }
        // The main thread warms up and calibrates on queue 0 through its own partner.
        Worker warm = new Worker(queues[0], other, "warmup");

        // Warm-up (C2 compiles schedule/cancel and the heap code), then calibration.
        long t0 = System.nanoTime();
        long warmed = 0;
        while (warmed < warmup && System.nanoTime() - t0 < 1_000_000_000L) {
            long b = Math.min(1000, warmup - warmed);
            run(warm, b);
            warmed += b;
        }
        long n = iterations;
        if (n == 0) {
            for (long b = 100; ; b *= 2) {
                long s = System.nanoTime();
                run(warm, b);
                long el = System.nanoTime() - s;
                if (el >= 50_000_000L || b >= 1_000_000_000L) {
                    n = Math.max(100, Math.min(50_000_000L,
                            (long) (5e8 / Math.max((double) el / b, 0.1))));
                    break;
                }
            }
        }
        // Start the timed run from empty queues and zero counts: drop what warm-up left behind.
        for (Queue q : queues) {
            q.ex.purge();
            q.scheduled.set(0);
            q.nlate = 0;
        }

        List<ScheduledFuture<?>> liveTasks = new ArrayList<>();
        for (long i = 0; i < live; i++) {
            liveTasks.add(queues[(int) (i % queues.length)].ex.schedule(TASK, 1, TimeUnit.HOURS));
        }

        final Worker[] workers = new Worker[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker(queues[i % queues.length], other, "timers-" + i);
        }
        final long iters = n;
        final long[] counts = new long[threads];
        final long[] ns = Workload.timeThreads(threads, "timers", 0,
                id -> run(workers[id], iters), counts);
        long slowest = Arrays.stream(ns).max().orElse(0); // every timer fired within it

        // Queue size now: live tasks plus, without remove-on-cancel, every cancelled one.
        int queueSize = 0;
        int used = 0;
        for (Queue q : queues) {
            queueSize += q.ex.getQueue().size();
            used += q.scheduled.get() > 0 ? 1 : 0;
        }
        long cross = 0;
        long fired = 0;
        for (Worker w : workers) {
            cross += w.cross.get();
            fired += w.fired.get();
        }
        int nlate = 0;
        for (Queue q : queues) {
            nlate += q.nlate;
        }
        long[] late = new long[nlate];
        int k = 0;
        for (Queue q : queues) {
            System.arraycopy(q.late, 0, late, k, q.nlate);
            k += q.nlate;
        }
        Arrays.sort(late);
        long liveCancelled = 0;
        for (ScheduledFuture<?> lt : liveTasks) {
            if (lt.cancel(false)) {
                liveCancelled++;
            }
        }
        for (Queue q : queues) {
            q.ex.shutdownNow();
        }

        long ops = n * threads;
        String fireKeys = fireUs == 0 ? "" : String.format(Locale.ROOT,
                "\"fire_rate_per_s\": %.1f, \"lateness_p50_ns\": %d, \"lateness_p99_ns\": %d, "
                        + "\"lateness_max_ns\": %d, ",
                slowest > 0 ? fired * 1e9 / slowest : 0.0, pct(late, 50), pct(late, 99),
                late.length > 0 ? late[late.length - 1] : 0);
        System.out.println(String.format(Locale.ROOT,
                "{\"workload\": \"timers/java\", \"ops\": %d, \"threads\": %d, "
                        + "\"per_thread_ns\": %s, \"ns_per_op\": %.3f, \"ops_per_s\": %.1f, "
                        + "\"checksum\": %d, \"created\": %d, \"fired\": %d, %s"
                        + "\"cross_thread_cancels\": %d, \"queues\": %d, \"queues_made\": %d, "
                        + "\"firing_threads\": %d, "
                        + "\"queue_size\": %d, \"live_cancelled\": %d, "
                        + "\"iterations\": %d, \"calibrated\": %b, \"iterations_per_thread\": %d, "
                        + "\"warmup_iterations\": %d, "
                        + "\"timeout_s\": %s, \"parallelism\": \"threads\", \"runtime\": \"%s\", "
                        + "\"params\": {\"threads\": %d, \"live\": %d, "
                        + "\"remove_on_cancel\": %b, \"cancel\": \"%s\", \"fire\": %d, "
                        + "\"queue\": \"%s\", \"iterations\": %d}}",
                ops, threads, Workload.jsonArray(ns), Workload.nsPerOp(ns, n),
                Workload.opsPerS(ns, n), Workload.sum(counts),
                ops, fireUs > 0 ? fired : NEVER_FIRED.get(), fireKeys, cross, used, queues.length,
                queues.length, queueSize, liveCancelled, n, iterations == 0, n, warmed,
                fireUs > 0 ? "null" : "3600", System.getProperty("java.vm.version"), threads,
                live, removeOnCancel, cancel, fireUs, queueMode, iterations));
    }
}
