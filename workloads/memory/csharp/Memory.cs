// perflab workload memory/csharp: the memory a runtime's code-execution mechanism costs, on Mono or
// CoreCLR (after dotnet/runtime#1457, which measured CoreCLR's call-counting stubs' committed memory
// after a forced GC).  On CoreCLR 3.1 the switches are its knobs (tiered compilation, quick JIT for
// loops, ReadyToRun), set by the launcher; the methods it jitted, by tier, and its stubs are
// counted from the perf map the runtime writes (COMPlus_PerfMapEnabled=1, set by run.sh), and the
// GC heap comes from GC.GetGCMemoryInfo.  Mono 6.8 has no tiering and no call counting; the switch
// it has is how code runs:
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

    /// <summary>The number on a line of /proc/self/status ("VmData:  1234 kB" in KiB,
    /// "Threads:  9"), or -1.</summary>
    static long StatusKiB(string key)
    {
        try
        {
            foreach (string line in File.ReadAllLines("/proc/self/status"))
                if (line.StartsWith(key + ":", StringComparison.Ordinal))
                    return long.Parse(line.Substring(key.Length + 1).Trim().Split(' ')[0]);
        }
        catch (IOException) { }
        return -1;
    }

    /// <summary>CoreCLR's GC heap after the last GC (GC.GetGCMemoryInfo().HeapSizeBytes, looked
    /// up by name: Mono's profile, which mcs builds against, has no such method), or -1.</summary>
    static long GcHeapKiB()
    {
        var m = typeof(GC).GetMethod("GetGCMemoryInfo", Type.EmptyTypes);
        if (m == null) return -1;
        object info = m.Invoke(null, null);
        var p = info.GetType().GetProperty("HeapSizeBytes");
        return p == null ? -1 : (long)p.GetValue(info, null) / 1024;
    }

    /// <summary>What CoreCLR's perf map (/tmp/perf-PID.map, written as code is made) lists:
    /// methods jitted by tier ([QuickJitted] = tier 0, [OptimizedTier1], [Optimized] = fully
    /// optimized at once) and stubs; all -1 when the runtime writes no map.</summary>
    static long[] PerfMapCounts(bool remove)
    {
        long[] c = { -1, -1, -1, -1, -1 };  // jitted, tier0, tier1, optimized, stubs
        string path = "/tmp/perf-" + Process.GetCurrentProcess().Id + ".map";
        if (!File.Exists(path)) return c;
        for (int i = 0; i < c.Length; i++) c[i] = 0;
        using (var fs = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite))
        using (var r = new StreamReader(fs))
        {
            string line;
            while ((line = r.ReadLine()) != null)
            {
                if (line.EndsWith("[QuickJitted]", StringComparison.Ordinal)) { c[0]++; c[1]++; }
                else if (line.EndsWith("[OptimizedTier1]", StringComparison.Ordinal)) { c[0]++; c[2]++; }
                else if (line.EndsWith("[Optimized]", StringComparison.Ordinal)) { c[0]++; c[3]++; }
                else if (line.IndexOf(" stub<", StringComparison.Ordinal) > 0) c[4]++;
            }
        }
        if (remove)
        {
            File.Delete(path);
            File.Delete("/tmp/perfinfo-" + Process.GetCurrentProcess().Id + ".map");
        }
        return c;
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
        long committed = -1, gcHeap = -1, tier0 = -1, tier1 = -1, optimized = -1, stubs = -1;
        long jitted, ilBytes, loader;
        bool coreclr = Bench.OnCoreClr();
        if (coreclr)
        {
            // Committed memory, Linux's way: private writable mappings (VmData + VmStk); what
            // CoreCLR only reserves (PROT_NONE) is not in it.
            committed = StatusKiB("VmData") + StatusKiB("VmStk");
            gcHeap = GcHeapKiB();
            long[] pm = PerfMapCounts(
                Environment.GetEnvironmentVariable("PERFLAB_REMOVE_PERF_MAP") == "1");
            jitted = pm[0]; tier0 = pm[1]; tier1 = pm[2]; optimized = pm[3]; stubs = pm[4];
            ilBytes = -1;
            loader = -1;
            if (mode != "jit")
                f.Usage("--mode=" + mode + " is Mono's; CoreCLR runs --mode=jit with its knobs");
        }
        else
        {
            jitted = Counter(".NET CLR JIT", "# of IL Methods JITted");
            ilBytes = Counter(".NET CLR JIT", "# of IL Bytes JITted");
            loader = Counter(".NET CLR Loading", "Bytes in Loader Heap");
        }
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
            .AddKnown("loader_heap_kib", loader < 0 ? -1 : loader / 1024)
            .AddKnown("committed_kib", committed).AddKnown("gc_heap_kib", gcHeap)
            .AddKnown("jitted_tier0", tier0).AddKnown("jitted_tier1", tier1)
            .AddKnown("jitted_optimized", optimized).AddKnown("stubs", stubs)
            .AddKnown("os_threads", StatusKiB("Threads"))
            .Add("gc_server", System.Runtime.GCSettings.IsServerGC)
            .Add("result", (long)(uint)sink)  // unsigned: perflab refuses negative metrics
            .Add("parallelism", "threads").Add("runtime", Bench.RuntimeName())
            .Add("params", p).ToString());
        return 0;
    }
}
