// Shared scaffolding of perflab's C# workloads (Mono's `mcs`, the `mono` runtime): --name=value
// flags (every error prints one line "prog: message" and exits 2), the timed-region protocol over
// perflab's control fifo (same protocol as include/perflab_region.h), barrier-released timed
// threads, calibration to about 0.5 s and the JSON line's first keys.  Compile it with the
// workload: `mcs -out:build/x.exe X.cs ../../common/csharp/Perflab.cs`.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Text;
using System.Threading;

namespace Perflab
{
    /// <summary>Announce the timed region: "enable\n"/"disable\n" on $PERFLAB_CTL_FIFO, then one
    /// line read from $PERFLAB_ACK_FIFO; no-ops when the variables are unset.  Call from one
    /// thread, around the barrier-released region of all threads.</summary>
    public static class Region
    {
        static bool opened;
        static FileStream ctl;
        static FileStream ack;
        static readonly object gate = new object();

        static void Open()
        {
            opened = true;
            string c = Environment.GetEnvironmentVariable("PERFLAB_CTL_FIFO");
            string a = Environment.GetEnvironmentVariable("PERFLAB_ACK_FIFO");
            if (string.IsNullOrEmpty(c) || string.IsNullOrEmpty(a)) return;
            try
            {
                // Same order as the C header: the writer side first, then the reader side.
                ctl = new FileStream(c, FileMode.Open, FileAccess.Write, FileShare.ReadWrite, 1);
                ack = new FileStream(a, FileMode.Open, FileAccess.Read, FileShare.ReadWrite, 1);
            }
            catch (Exception)
            {
                Console.Error.WriteLine("perflab_region: cannot open the control fifos (" + c + ", "
                                        + a + "); counting the whole process");
                ctl = null;
                ack = null;
            }
        }

        static void Send(string cmd)
        {
            lock (gate)
            {
                if (!opened) Open();
                if (ctl == null) return;
                try
                {
                    byte[] b = Encoding.ASCII.GetBytes(cmd);
                    ctl.Write(b, 0, b.Length);
                    ctl.Flush();
                    for (int i = 0; i < 64; i++)
                    {
                        int x = ack.ReadByte();
                        if (x < 0 || x == '\n') break;
                    }
                }
                catch (IOException)
                {
                    // Counting the whole process is the fallback; never fail the workload over it.
                }
            }
        }

        /// <summary>Start of the timed region (blocks until perflab acknowledges).</summary>
        public static void Begin() { Send("enable\n"); }

        /// <summary>End of the timed region.</summary>
        public static void End() { Send("disable\n"); }
    }

    /// <summary>--name=value / --name value flags; every mistake is one line and exit 2.</summary>
    public sealed class Flags
    {
        readonly string prog;
        readonly Dictionary<string, string> flags = new Dictionary<string, string>();
        readonly List<string> known = new List<string>();

        public Flags(string prog, string[] args)
        {
            this.prog = prog;
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                if (!a.StartsWith("--", StringComparison.Ordinal) || a.Length < 3)
                    Usage("unexpected argument '" + a + "'; parameters are --name=value");
                string body = a.Substring(2);
                int eq = body.IndexOf('=');
                if (eq >= 0) flags[body.Substring(0, eq)] = body.Substring(eq + 1);
                else if (i + 1 < args.Length) flags[body] = args[++i];
                else Usage("--" + body + " needs a value; write --" + body + "=VALUE");
            }
        }

        public string Prog { get { return prog; } }

        /// <summary>One line on stderr, exit 2.</summary>
        public void Usage(string msg)
        {
            Console.Error.WriteLine(prog + ": " + msg);
            Environment.Exit(2);
        }

        string Take(string name)
        {
            known.Add(name);
            string v;
            if (!flags.TryGetValue(name, out v)) return null;
            flags.Remove(name);
            return v;
        }

        public long Int(string name, long def, long min, long max)
        {
            string v = Take(name);
            if (v == null) return def;
            long x;
            if (!long.TryParse(v.Trim(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out x))
                Usage("--" + name + "=" + v + " is not a whole number; give one in [" + min + ", " + max + "]");
            if (x < min || x > max)
                Usage("--" + name + "=" + v + " is out of range; give a value in [" + min + ", " + max + "]");
            return x;
        }

        public bool Bool(string name, bool def)
        {
            string v = Take(name);
            if (v == null) return def;
            switch (v.Trim().ToLowerInvariant())
            {
                case "true": case "1": case "yes": case "on": return true;
                case "false": case "0": case "no": case "off": return false;
            }
            Usage("--" + name + "=" + v + " is not a boolean; use true or false");
            return def;
        }

        public string Choice(string name, string def, params string[] choices)
        {
            string v = Take(name) ?? def;
            if (Array.IndexOf(choices, v) < 0)
                Usage("--" + name + "=" + v + " is unknown; choose one of " + string.Join(", ", choices));
            return v;
        }

        /// <summary>Exit 2 naming the first parameter nobody read.</summary>
        public void RejectUnknown()
        {
            foreach (string k in flags.Keys)
                Usage("unknown parameter --" + k + "; known: " + string.Join(", ", known.ToArray()));
        }
    }

    /// <summary>Timing helpers: the monotonic clock, barrier-released threads, calibration.</summary>
    public static class Bench
    {
        /// <summary>Monotonic nanoseconds (Stopwatch: CLOCK_MONOTONIC in Mono on Linux).</summary>
        public static long NowNs()
        {
            long t = Stopwatch.GetTimestamp();
            return (long)(t * (1e9 / Stopwatch.Frequency));
        }

        /// <summary>Runs work(id) on `threads` threads, all released from one barrier inside the
        /// timed region; counts[id] gets what work returns.  Returns each thread's elapsed ns.
        /// stackBytes 0 = the default stack.</summary>
        public static long[] TimeThreads(int threads, string name, int stackBytes,
                                         Func<int, long> work, long[] counts)
        {
            long[] ns = new long[threads];
            Exception[] failed = new Exception[threads];
            var ready = new CountdownEvent(threads);
            var go = new ManualResetEventSlim(false);
            var ts = new List<Thread>();
            for (int t = 0; t < threads; t++)
            {
                int id = t;
                ThreadStart body = () =>
                {
                    try
                    {
                        ready.Signal();
                        go.Wait();
                        long s = NowNs();
                        long c = work(id);
                        ns[id] = NowNs() - s;
                        counts[id] = c;
                    }
                    catch (Exception e)
                    {
                        failed[id] = e;
                    }
                };
                Thread th = stackBytes > 0 ? new Thread(body, stackBytes) : new Thread(body);
                th.Name = name + "-" + t;
                th.IsBackground = true;
                th.Start();
                ts.Add(th);
            }
            ready.Wait();
            Region.Begin();
            go.Set();
            foreach (Thread th in ts) th.Join();
            Region.End();
            foreach (Exception e in failed)
                if (e != null) throw new Exception("a timed thread failed", e);
            return ns;
        }

        /// <summary>Warm up with batch(k) (runs k operations) for `warmup` operations at most one
        /// second, returning how many ran.</summary>
        public static long WarmUp(Func<long, long> batch, long warmup)
        {
            long t0 = NowNs(), done = 0;
            while (done < warmup && NowNs() - t0 < 1000000000L)
            {
                long b = Math.Min(1000, warmup - done);
                batch(b);
                done += b;
            }
            return done;
        }

        /// <summary>Operations per thread for about 0.5 s (doubling batches until one takes 50 ms),
        /// clamped to [100, max].</summary>
        public static long Calibrate(Func<long, long> batch, long max)
        {
            for (long b = 100; ; b *= 2)
            {
                long s = NowNs();
                batch(b);
                long el = NowNs() - s;
                if (el >= 50000000L || b >= max)
                {
                    double per = Math.Max((double)el / b, 0.1);
                    return Math.Max(100, Math.Min(max, (long)(5e8 / per)));
                }
            }
        }

        /// <summary>"mono 6.8.0.105 (...)" on Mono, ".NET Core 3.1.23" on CoreCLR: the runtime's
        /// display name (Environment.Version is the framework's 4.0.30319.42000 on every Mono).
        /// perflab keeps it as the run's runtime in the result's environment.</summary>
        public static string RuntimeName()
        {
            Type t = Type.GetType("Mono.Runtime");
            if (t != null)
            {
                var m = t.GetMethod("GetDisplayName", System.Reflection.BindingFlags.NonPublic
                                    | System.Reflection.BindingFlags.Static);
                if (m != null) return "mono " + (string)m.Invoke(null, null);
            }
            // Looked up by name: mcs builds against Mono's profile, which has no reference to it.
            Type ri = Type.GetType("System.Runtime.InteropServices.RuntimeInformation, "
                                   + "System.Runtime.InteropServices.RuntimeInformation");
            var p = ri == null ? null : ri.GetProperty("FrameworkDescription");
            if (p != null) return ((string)p.GetValue(null, null)).Trim();
            return ".NET " + Environment.Version;
        }

        /// <summary>True on CoreCLR (no Mono.Runtime type).</summary>
        public static bool OnCoreClr()
        {
            return Type.GetType("Mono.Runtime") == null;
        }

        public static long Sum(long[] xs)
        {
            long s = 0;
            foreach (long x in xs) s += x;
            return s;
        }

        /// <summary>Mean over the threads of each thread's ns per operation (n each).</summary>
        public static double NsPerOp(long[] ns, long n)
        {
            double sum = 0;
            foreach (long x in ns) sum += (double)x / n;
            return sum / ns.Length;
        }

        /// <summary>Operations of all threads per second of the slowest thread.</summary>
        public static double OpsPerS(long[] ns, long n)
        {
            long max = 0;
            foreach (long x in ns) max = Math.Max(max, x);
            return max > 0 ? n * ns.Length * 1e9 / max : 0.0;
        }
    }

    /// <summary>Builds the one-line JSON object (invariant culture, keys in insertion order).</summary>
    public sealed class Json
    {
        readonly StringBuilder b = new StringBuilder("{");
        bool first = true;

        Json Key(string k)
        {
            if (!first) b.Append(", ");
            first = false;
            b.Append('"').Append(k).Append("\": ");
            return this;
        }

        public Json Add(string k, long v) { Key(k).b.Append(v.ToString(CultureInfo.InvariantCulture)); return this; }
        /// <summary>A figure the runtime did not give (negative) is left out: a -1 would read as
        /// a measured value, and perflab refuses negative metrics.</summary>
        public Json AddKnown(string k, long v) { return v < 0 ? this : Add(k, v); }
        public Json Add(string k, double v)
        {
            Key(k);
            if (double.IsNaN(v) || double.IsInfinity(v)) b.Append("null");
            else b.Append(v.ToString("0.###", CultureInfo.InvariantCulture));
            return this;
        }
        public Json Add(string k, bool v) { Key(k).b.Append(v ? "true" : "false"); return this; }
        public Json Add(string k, string v) { Key(k).b.Append('"').Append(Escape(v)).Append('"'); return this; }
        public Json Add(string k, long[] xs)
        {
            Key(k).b.Append('[');
            for (int i = 0; i < xs.Length; i++) b.Append(i == 0 ? "" : ", ").Append(xs[i].ToString(CultureInfo.InvariantCulture));
            b.Append(']');
            return this;
        }
        public Json Add(string k, Json inner) { Key(k).b.Append(inner.ToString()); return this; }

        /// <summary>ops, threads, per_thread_ns, ns_per_op, ops_per_s, checksum: the contract's head.</summary>
        public static Json Head(string workload, long[] ns, long n, long checksum)
        {
            return new Json().Add("workload", workload).Add("ops", n * ns.Length)
                .Add("threads", (long)ns.Length).Add("per_thread_ns", ns)
                .Add("ns_per_op", Bench.NsPerOp(ns, n)).Add("ops_per_s", Bench.OpsPerS(ns, n))
                .Add("checksum", checksum);
        }

        static string Escape(string s)
        {
            var o = new StringBuilder();
            foreach (char c in s)
            {
                if (c == '"' || c == '\\') o.Append('\\').Append(c);
                else if (c < 0x20) o.Append("\\u").Append(((int)c).ToString("x4"));
                else o.Append(c);
            }
            return o.ToString();
        }

        public override string ToString() { return b.ToString() + "}"; }
    }
}
