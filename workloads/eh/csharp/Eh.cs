// perflab workload eh/csharp: the cost of throwing and catching a .NET exception through DEPTH
// non-inlined frames on Mono (after dotnet/runtime#77568, whose figures are CoreCLR's).
//
// Kinds: software (throw new exception), hardware (NullReferenceException from a real null
// dereference: Mono's JIT code faults with SIGSEGV and the signal handler turns it into the
// exception), divide (DivideByZeroException from an integer division by a zero divisor),
// error (an error code returned through the same frames: the baseline).
// Modes: sync (plain methods) or async (async Task<int> methods: each level awaits the next, the
// exception is captured into the faulted Task and rethrown by every level's await, so it crosses
// DEPTH async frames, as in the reference's async case).
// Every chain method is [MethodImpl(NoInlining)] and adds 1 to its callee's result, so no frame is
// inlined or turned into a tail call; checksum = exceptions caught (error: error values seen).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;
using Perflab;

sealed class DepthException : Exception
{
    public DepthException(string msg) : base(msg) { }
}

sealed class Holder
{
    public int Value = 1;
}

static class Eh
{
    static readonly string[] Kinds = { "software", "hardware", "divide", "error" };
    // Written by every catch so the exception object escapes.
    public static volatile object Sink;
    // Read at run time so the JIT cannot fold the null or the zero divisor.
    public static volatile Holder NullHolder;
    public static volatile int Zero;
    // Frames on the real stack at the throw point, recorded once outside the timed loop.
    public static int StackFramesAtThrow;
    [ThreadStatic] public static bool RecordStack;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Fail(int kind, Holder h, int zero)
    {
        if (RecordStack) StackFramesAtThrow = new StackTrace(false).FrameCount;
        switch (kind)
        {
            case 0: throw new DepthException("depth");
            case 1: return h.Value;                 // h is null: a real null dereference
            default: return 100 / zero;             // zero is 0: DivideByZeroException
        }
    }

    // ---- sync ---------------------------------------------------------------------------------
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Chain(int n, int kind, Holder h, int zero)
    {
        if (n <= 1) return Fail(kind, h, zero);
        return Chain(n - 1, kind, h, zero) + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int ChainError(int n, int fail)
    {
        if (n <= 1)
        {
            if (RecordStack) StackFramesAtThrow = new StackTrace(false).FrameCount;
            return fail != 0 ? -1 : 0;
        }
        int r = ChainError(n - 1, fail);
        if (r < 0) return r;                        // propagate the error value
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int OnceSync(int depth, int kind, out Exception caught)
    {
        caught = null;
        if (kind == 3)
        {
            int r = depth == 0 ? -1 : ChainError(depth, 1);
            return r < 0 ? 1 : 0;
        }
        try
        {
            if (depth == 0) Fail(kind, NullHolder, Zero);
            else Chain(depth, kind, NullHolder, Zero);
            return 0;
        }
        catch (DepthException e) { Sink = e; caught = e; return 1; }
        catch (NullReferenceException e) { Sink = e; caught = e; return 1; }
        catch (DivideByZeroException e) { Sink = e; caught = e; return 1; }
    }

    // ---- async --------------------------------------------------------------------------------
    [MethodImpl(MethodImplOptions.NoInlining)]
    static async Task<int> ChainAsync(int n, int kind, Holder h, int zero)
    {
        if (n <= 1) return Fail(kind, h, zero);
        int r = await ChainAsync(n - 1, kind, h, zero);
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static async Task<int> ChainErrorAsync(int n, int fail)
    {
        if (n <= 1)
        {
            if (RecordStack) StackFramesAtThrow = new StackTrace(false).FrameCount;
            return fail != 0 ? -1 : 0;
        }
        int r = await ChainErrorAsync(n - 1, fail);
        if (r < 0) return r;
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static async Task<int> TopAsync(int depth, int kind, Exception[] caught)
    {
        if (kind == 3)
        {
            int r = depth == 0 ? -1 : await ChainErrorAsync(depth, 1);
            return r < 0 ? 1 : 0;
        }
        try
        {
            if (depth == 0) Fail(kind, NullHolder, Zero);
            else await ChainAsync(depth, kind, NullHolder, Zero);
            return 0;
        }
        catch (DepthException e) { Sink = e; caught[0] = e; return 1; }
        catch (NullReferenceException e) { Sink = e; caught[0] = e; return 1; }
        catch (DivideByZeroException e) { Sink = e; caught[0] = e; return 1; }
    }

    static int OnceAsync(int depth, int kind, Exception[] caught)
    {
        // Every level completes synchronously (nothing yields), so the chain runs on this thread;
        // GetResult() of the already completed top task never blocks.
        return TopAsync(depth, kind, caught).GetAwaiter().GetResult();
    }

    static long Loop(long n, int depth, int kind, bool async)
    {
        long c = 0;
        Exception e;
        var box = new Exception[1];
        for (long i = 0; i < n; i++)
            c += async ? OnceAsync(depth, kind, box) : OnceSync(depth, kind, out e);
        return c;
    }

    static int Main(string[] args)
    {
        var f = new Flags("eh/csharp", args);
        long depth = f.Int("depth", 0, 0, 100000);
        string kindName = f.Choice("kind", "software", Kinds);
        string mode = f.Choice("mode", "sync", "sync", "async");
        int threads = (int)f.Int("threads", 1, 1, 1024);
        long iterations = f.Int("iterations", 0, 0, 1000000000L);
        long warmup = f.Int("warmup", 20000, 0, 100000000L);
        f.RejectUnknown();
        int kind = Array.IndexOf(Kinds, kindName);
        bool async = mode == "async";
        int d = (int)depth;
        // Deep chains need stack: 16 MiB threads (depth 100000 x a few hundred bytes a frame).
        int stack = 16 << 20;

        // One exception outside the timed loop: its stack trace and the real stack at the throw.
        int traceFrames = 0, stackFrames = 0;
        var t0 = new System.Threading.Thread(() =>
        {
            RecordStack = true;
            Exception e = null;
            var box = new Exception[1];
            if (async) { OnceAsync(d, kind, box); e = box[0]; } else OnceSync(d, kind, out e);
            RecordStack = false;
            traceFrames = e == null ? 0 : new StackTrace(e, false).FrameCount;
            stackFrames = StackFramesAtThrow;
        }, stack);
        t0.Start();
        t0.Join();

        long warmed = Bench.WarmUp(b => Loop(b, d, kind, async), warmup);
        long n = iterations;
        if (n == 0) n = Bench.Calibrate(b => Loop(b, d, kind, async), 50000000L);
        long[] caught = new long[threads];
        long[] ns = Bench.TimeThreads(threads, "eh", stack, id => Loop(n, d, kind, async), caught);

        var p = new Json().Add("depth", depth).Add("kind", kindName).Add("mode", mode)
            .Add("threads", (long)threads).Add("iterations", iterations);
        Console.WriteLine(Json.Head("eh/csharp", ns, n, Bench.Sum(caught))
            .Add("trace_frames", (long)traceFrames).Add("stack_frames_at_throw", (long)stackFrames)
            .Add("iterations", n).Add("calibrated", iterations == 0)
            .Add("iterations_per_thread", n).Add("warmup_iterations", warmed)
            .Add("parallelism", "threads").Add("runtime", Bench.RuntimeName())
            .Add("params", p).ToString());
        return 0;
    }
}
