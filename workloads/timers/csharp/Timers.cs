// perflab workload timers/csharp: P threads each create a timer and dispose it (after
// dotnet/coreclr#14527, whose subject is exactly System.Threading.Timer create+dispose on P threads).
//
// --queue=global       System.Threading.Timer: Mono 6.8's own timer scheduler, one sorted list
//                      behind one lock for the whole process (the seed's "before").
// --queue=partitioned  NOT the runtime's Timer: a small timer queue written in this file (a binary
//                      heap behind its own lock, with its own firing thread), one instance per
//                      worker thread: the shape of the seed's fix (one queue per CPU), which Mono
//                      does not have.  Dispose locks the queue that owns the timer.
// --queue=shared       the same hand-written queue, ONE instance for all threads: compared with
//                      partitioned it isolates the effect of partitioning from the implementation.
// --cancel=same        the creating thread disposes the timer right away.
// --cancel=other       each worker hands its timers (through a single-producer ring) to its own
//                      disposer thread, which disposes them; the worker's time ends when its
//                      disposer has disposed all of them.
// --fire=N             0: the timers are due in an hour and never fire (the churn case).  N > 0: each
//                      timer is due N microseconds after its creation; the worker creates all of
//                      its timers, waits until they have fired, then they are disposed (same/other
//                      as above).  Both queues wait with millisecond resolution (Monitor.Wait, the
//                      runtime's Timer takes milliseconds): due times are rounded up to whole ms,
//                      lateness is measured against the requested N us.
// checksum = timers disposed; cross_thread_cancels = disposals whose thread is not the creating
// one (compared by ManagedThreadId in the disposer), as in timers/c and timers/java.
using System;
using System.Collections.Generic;
using System.Threading;
using Perflab;

/// <summary>A timer queue of our own: a binary min-heap on the due time behind one lock, and one
/// thread that fires the due entries (started on first use with a finite due time).</summary>
sealed class OwnQueue
{
    public sealed class Entry
    {
        public long DueNs;
        public int Index = -1;      // position in the heap, -1 when not queued
        public TimerCallback Callback;
        public object State;
        public OwnQueue Owner;
    }

    Entry[] heap = new Entry[64];
    int count;
    Thread firer;
    bool stop;
    public long Inserts;            // under the lock: how many timers this queue received

    public Entry Add(long dueNs, TimerCallback cb, object state)
    {
        var e = new Entry { DueNs = dueNs, Callback = cb, State = state, Owner = this };
        lock (this)
        {
            if (count == heap.Length) Array.Resize(ref heap, count * 2);
            heap[count] = e;
            e.Index = count++;
            Up(e.Index);
            Inserts++;
            if (dueNs < long.MaxValue / 2)
            {
                if (firer == null)
                {
                    firer = new Thread(Fire) { IsBackground = true, Name = "ownqueue-firer" };
                    firer.Start();
                }
                if (e.Index == 0) Monitor.Pulse(this);
            }
        }
        return e;
    }

    public static bool Remove(Entry e)
    {
        OwnQueue q = e.Owner;
        lock (q)
        {
            int i = e.Index;
            if (i < 0) return false;
            q.count--;
            Entry last = q.heap[q.count];
            q.heap[q.count] = null;
            e.Index = -1;
            if (i < q.count)
            {
                q.heap[i] = last;
                last.Index = i;
                q.Down(i);
                q.Up(last.Index);
            }
            return true;
        }
    }

    public void Stop()
    {
        lock (this) { stop = true; Monitor.Pulse(this); }
    }

    void Up(int i)
    {
        while (i > 0)
        {
            int p = (i - 1) / 2;
            if (heap[p].DueNs <= heap[i].DueNs) break;
            Swap(i, p);
            i = p;
        }
    }

    void Down(int i)
    {
        while (true)
        {
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < count && heap[l].DueNs < heap[m].DueNs) m = l;
            if (r < count && heap[r].DueNs < heap[m].DueNs) m = r;
            if (m == i) break;
            Swap(i, m);
            i = m;
        }
    }

    void Swap(int a, int b)
    {
        Entry x = heap[a];
        heap[a] = heap[b];
        heap[b] = x;
        heap[a].Index = a;
        heap[b].Index = b;
    }

    void Fire()
    {
        var due = new List<Entry>();
        while (true)
        {
            lock (this)
            {
                while (true)
                {
                    if (stop) return;
                    long now = Bench.NowNs();
                    while (count > 0 && heap[0].DueNs <= now)
                    {
                        Entry e = heap[0];
                        count--;
                        heap[0] = heap[count];
                        heap[count] = null;
                        e.Index = -1;
                        if (count > 0) { heap[0].Index = 0; Down(0); }
                        due.Add(e);
                    }
                    if (due.Count > 0) break;
                    if (count == 0) Monitor.Wait(this);
                    else
                    {
                        long waitNs = heap[0].DueNs - now;
                        // Millisecond resolution, like the runtime's Timer (rounded up).
                        Monitor.Wait(this, (int)Math.Min(int.MaxValue, (waitNs + 999999) / 1000000));
                    }
                }
            }
            foreach (Entry e in due) e.Callback(e.State);
            due.Clear();
        }
    }
}

/// <summary>Single producer, single consumer ring of timers to dispose.</summary>
sealed class Ring
{
    const int Size = 4096;
    readonly object[] buf = new object[Size];
    long head;  // consumer
    long tail;  // producer

    public void Push(object x)
    {
        long t = tail;
        var spin = new SpinWait();
        while (t - Volatile.Read(ref head) == Size) spin.SpinOnce();
        buf[t & (Size - 1)] = x;
        Volatile.Write(ref tail, t + 1);
    }

    public object Pop()
    {
        long h = head;
        var spin = new SpinWait();
        while (h == Volatile.Read(ref tail)) spin.SpinOnce();
        object x = buf[h & (Size - 1)];
        buf[h & (Size - 1)] = null;
        Volatile.Write(ref head, h + 1);
        return x;
    }
}

sealed class Worker
{
    public OwnQueue Queue;          // partitioned/shared: the queue this worker's timers go to
    public Ring Ring;               // cancel=other
    public ManualResetEventSlim Start = new ManualResetEventSlim(false);
    public long Disposed;           // by the disposer thread (cancel=other)
    public int CreatorId;           // ManagedThreadId of the thread that creates this worker's timers
    public long Cross;              // disposals on a thread other than the creator's
    public ManualResetEventSlim DisposerDone = new ManualResetEventSlim(false);
    public long[] Late;             // fire > 0: lateness of each firing, ns
    public long Fired;
}

sealed class FireState
{
    public Worker W;
    public int I;
    public long DeadlineNs;
}

static class Timers
{
    static string queue, cancel;
    static long fireUs;
    static long neverFired;                         // callbacks of timers that should never fire
    static readonly TimerCallback Never = s => Interlocked.Increment(ref neverFired);
    static readonly TimerCallback OnFire = s =>
    {
        var f = (FireState)s;
        f.W.Late[f.I] = Bench.NowNs() - f.DeadlineNs;
        Interlocked.Increment(ref f.W.Fired);
    };
    const long HourMs = 3600L * 1000;

    static object Create(Worker w, long dueUs, TimerCallback cb, object state)
    {
        if (queue == "global")
        {
            long ms = dueUs == 0 ? HourMs : (dueUs + 999) / 1000;
            return new Timer(cb, state, ms, Timeout.Infinite);
        }
        long dueNs = dueUs == 0 ? long.MaxValue : Bench.NowNs() + dueUs * 1000;
        return w.Queue.Add(dueNs, cb, state);
    }

    static bool Dispose(object t)
    {
        var timer = t as Timer;
        if (timer != null) { timer.Dispose(); return true; }
        OwnQueue.Remove((OwnQueue.Entry)t);
        return true;  // removed, or already fired and dequeued: disposed either way
    }

    static void Disposer(Worker w, long n)
    {
        w.Start.Wait();
        int me = Thread.CurrentThread.ManagedThreadId;
        long d = 0, cross = 0;
        for (long i = 0; i < n; i++)
            if (Dispose(w.Ring.Pop()))
            {
                d++;
                if (me != w.CreatorId) cross++;  // cross_thread_cancels: checked, not assumed
            }
        w.Disposed = d;
        w.Cross = cross;
        w.DisposerDone.Set();
    }

    /// <summary>n create+dispose operations on worker w; returns the number disposed.</summary>
    static long Churn(Worker w, long n)
    {
        long disposed = 0;
        w.CreatorId = Thread.CurrentThread.ManagedThreadId;  // before Start.Set (a barrier)
        if (cancel == "other")
        {
            w.Start.Set();
            for (long i = 0; i < n; i++) w.Ring.Push(Create(w, 0, Never, null));
            w.DisposerDone.Wait();
            return w.Disposed;
        }
        for (long i = 0; i < n; i++)
            if (Dispose(Create(w, 0, Never, null))) disposed++;
        return disposed;
    }

    static long FireRun(Worker w, long n)
    {
        var timers = new object[n];
        w.Late = new long[n];
        w.Fired = 0;
        w.CreatorId = Thread.CurrentThread.ManagedThreadId;
        for (int i = 0; i < n; i++)
        {
            var st = new FireState { W = w, I = i, DeadlineNs = Bench.NowNs() + fireUs * 1000 };
            timers[i] = Create(w, fireUs, OnFire, st);
        }
        long give = Bench.NowNs() + 60L * 1000000000;  // never wait more than a minute
        while (Interlocked.Read(ref w.Fired) < n && Bench.NowNs() < give) Thread.Sleep(1);
        if (cancel == "other")
        {
            w.Start.Set();
            foreach (object t in timers) w.Ring.Push(t);
            w.DisposerDone.Wait();
            return w.Disposed;
        }
        long disposed = 0;
        foreach (object t in timers) if (Dispose(t)) disposed++;
        return disposed;
    }

    static Worker[] MakeWorkers(int threads, long n)
    {
        var ws = new Worker[threads];
        OwnQueue shared = queue == "shared" ? new OwnQueue() : null;
        for (int t = 0; t < threads; t++)
        {
            ws[t] = new Worker { Queue = queue == "partitioned" ? new OwnQueue() : shared };
            if (cancel == "other")
            {
                ws[t].Ring = new Ring();
                Worker w = ws[t];
                new Thread(() => Disposer(w, n)) { IsBackground = true, Name = "disposer-" + t }.Start();
            }
        }
        return ws;
    }

    static long Percentile(List<long> sorted, double p)
    {
        if (sorted.Count == 0) return 0;
        int i = (int)Math.Ceiling(p * sorted.Count) - 1;
        return sorted[Math.Max(0, Math.Min(sorted.Count - 1, i))];
    }

    static int Main(string[] args)
    {
        var f = new Flags("timers/csharp", args);
        queue = f.Choice("queue", "global", "global", "partitioned", "shared");
        cancel = f.Choice("cancel", "same", "same", "other");
        fireUs = f.Int("fire", 0, 0, 10000000);
        long live = f.Int("live", 0, 0, 10000000);
        int threads = (int)f.Int("threads", 1, 1, 1024);
        long iterations = f.Int("iterations", 0, 0, 1000000000L);
        long warmup = f.Int("warmup", 20000, 0, 100000000L);
        f.RejectUnknown();

        // Warm-up and calibration on throw-away workers (same queue kind, same thread).
        long warmed, n = iterations;
        {
            var w = MakeWorkers(1, long.MaxValue)[0];
            string savedCancel = cancel;
            cancel = "same";
            warmed = Bench.WarmUp(b => Churn(w, b), fireUs == 0 ? warmup : Math.Min(warmup, 2000));
            if (n == 0)
            {
                // Firing timers: the run lasts at least the due time; 0.5 s of creations at most
                // 200,000 timers a thread (each is alive until it fires).
                n = Bench.Calibrate(b => Churn(w, b), fireUs == 0 ? 50000000L : 200000L);
            }
            cancel = savedCancel;
            if (w.Queue != null) w.Queue.Stop();
        }

        Worker[] ws = MakeWorkers(threads, n);
        // Live timers (due in an hour) give the queues depth: spread over the workers' queues.
        var liveTimers = new List<object>();
        for (long i = 0; i < live; i++) liveTimers.Add(Create(ws[i % threads], 0, Never, null));

        long[] disposed = new long[threads];
        long[] ns = Bench.TimeThreads(threads, "timers", 0,
            id => fireUs == 0 ? Churn(ws[id], n) : FireRun(ws[id], n), disposed);

        long liveDisposed = 0;
        foreach (object t in liveTimers) if (Dispose(t)) liveDisposed++;
        var inserts = new List<long>();
        var seen = new HashSet<OwnQueue>();
        foreach (Worker w in ws)
            if (w.Queue != null && seen.Add(w.Queue)) { inserts.Add(w.Queue.Inserts); w.Queue.Stop(); }

        var p = new Json().Add("threads", (long)threads).Add("queue", queue).Add("cancel", cancel)
            .Add("fire", fireUs).Add("live", live).Add("iterations", iterations);
        Json j = Json.Head("timers/csharp", ns, n, Bench.Sum(disposed))
            .Add("created", n * threads).Add("queues", queue == "global" ? 1L : (long)seen.Count)
            .Add("queue_inserts", inserts.ToArray());
        long cross = 0;
        foreach (Worker w in ws) cross += w.Cross;
        j.Add("cross_thread_cancels", cross);
        if (fireUs > 0)
        {
            var late = new List<long>();
            long fired = 0, maxNs = 0;
            foreach (Worker w in ws)
            {
                fired += w.Fired;
                for (long i = 0; i < w.Fired && i < w.Late.Length; i++) late.Add(w.Late[i]);
            }
            // Only the fired entries hold a lateness (a timer that never fired keeps 0 and is not
            // counted: Fired counts callbacks, the array order is creation order).
            foreach (long x in ns) maxNs = Math.Max(maxNs, x);
            late.Sort();
            j.Add("fired", fired).Add("fire_rate_per_s", maxNs > 0 ? fired * 1e9 / maxNs : 0.0)
             .Add("lateness_p50_ns", Percentile(late, 0.50)).Add("lateness_p99_ns", Percentile(late, 0.99))
             .Add("timer_resolution_us", 1000L);
        }
        else
        {
            j.Add("fired", Interlocked.Read(ref neverFired));
        }
        Console.WriteLine(j.Add("live_disposed", liveDisposed).Add("iterations", n)
            .Add("calibrated", iterations == 0).Add("iterations_per_thread", n)
            .Add("warmup_iterations", warmed).Add("timeout_s", fireUs == 0 ? 3600L : 0L)
            .Add("parallelism", "threads").Add("runtime", Bench.RuntimeName())
            .Add("params", p).ToString());
        return 0;
    }
}
