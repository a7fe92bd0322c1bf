// perflab workload memory/csharp: the memory a runtime's code-execution mechanism costs on Mono
// (after dotnet/runtime#1457, which measured CoreCLR's call-counting stubs' committed memory after
// a forced GC).  Mono 6.8 has no tiering and no call counting; the switch it has is how code runs:
// --mode=jit (the JIT with its default optimizations, which include using Debian's precompiled
// mscorlib.dll.so from /usr/lib/mono/aot-cache), jit-noaot (-O=-aot: the same, without the AOT
// image: mscorlib's methods are JIT-compiled too), jit-noopt (-O=-all: no optimizations, no AOT
// image) or interpreter (--interpreter).  The workload calls METHODS distinct generated methods CALLS times each, forces
// a GC (GC.Collect + WaitForPendingFinalizers + GC.GetTotalMemory(true)), and reports what the
// process holds then: the GC heap, the working set and private bytes (Process), RSS, and Mono's
// own counters: methods JIT-compiled, IL bytes compiled, loader heap bytes.
using System;
using System.Diagnostics;
using System.IO;
using System.Threading;
using Perflab;

static class Memory
{
    static volatile int sink;

    static long Run(int methods, long calls)
    {
        int acc = 0;
        long made = 0;
        for (long c = 0; c < calls; c++)
            for (int i = 0; i < methods; i++) { acc += Methods.Call(i, (int)c); made++; }
        sink = acc;
        return made;
    }

    static long RssKiB()
    {
        try
        {
            foreach (string line in File.ReadAllLines("/proc/self/status"))
                if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                    return long.Parse(line.Substring(6).Trim().Split(' ')[0]);
        }
        catch (IOException) { }
        return -1;
    }

    static long Counter(string category, string name)
    {
        try
        {
            using (var pc = new PerformanceCounter(category, name,
                       Process.GetCurrentProcess().Id.ToString(), true))
                return pc.RawValue;
        }
        catch (Exception) { return -1; }
    }

    static int Main(string[] args)
    {
        var f = new Flags("memory/csharp", args);
        string mode = f.Choice("mode", "jit", "jit", "jit-noaot", "jit-noopt", "interpreter");
        int methods = (int)f.Int("methods", Methods.Count, 1, Methods.Count);
        long calls = f.Int("calls", 1000, 1, 100000000L);
        int threads = (int)f.Int("threads", 1, 1, 64);
        long iterations = f.Int("iterations", 0, 0, 1);
        f.RejectUnknown();

        // The mode must be the runtime's, not just a label: the interpreter compiles no method to
        // native code, so the JIT's counter stays near zero (checked after the run).
        long[] made = new long[threads];
        long[] ns = Bench.TimeThreads(threads, "memory", 0, id => Run(methods, calls), made);

        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        long gcTotal = GC.GetTotalMemory(true) / 1024;
        var proc = Process.GetCurrentProcess();
        proc.Refresh();
        long workingSet = proc.WorkingSet64 / 1024;
        long privateBytes = proc.PrivateMemorySize64 / 1024;
        long rss = RssKiB();
        long jitted = Counter(".NET CLR JIT", "# of IL Methods JITted");
        long ilBytes = Counter(".NET CLR JIT", "# of IL Bytes JITted");
        long loader = Counter(".NET CLR Loading", "Bytes in Loader Heap");
        if (mode == "interpreter" && jitted > methods / 2)
            f.Usage("--mode=interpreter but " + jitted + " methods were JIT-compiled; start it through run.sh, which passes --interpreter to mono");
        if (mode != "interpreter" && jitted >= 0 && jitted < methods)
            f.Usage("--mode=" + mode + " but only " + jitted + " methods were JIT-compiled; start it through run.sh");

        long n = methods * calls;
        var p = new Json().Add("mode", mode).Add("methods", (long)methods).Add("calls", calls)
            .Add("threads", (long)threads).Add("iterations", iterations);
        Console.WriteLine(Json.Head("memory/csharp", ns, n, Bench.Sum(made))
            .Add("gc_total_kib", gcTotal).Add("working_set_kib", workingSet)
            .Add("private_kib", privateBytes).AddKnown("rss_after_gc_kib", rss)
            .AddKnown("jitted_methods", jitted).AddKnown("jitted_il_bytes", ilBytes)
            .AddKnown("loader_heap_kib", loader < 0 ? -1 : loader / 1024).Add("result", (long)(uint)sink)  // unsigned: perflab refuses negative metrics
            .Add("parallelism", "threads").Add("runtime", Bench.RuntimeName())
            .Add("params", p).ToString());
        return 0;
    }
}
