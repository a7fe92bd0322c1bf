import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.MemoryPoolMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;
import perflab.Workload;

/**
 * perflab workload memory/java: the memory a JIT's mechanism costs (after dotnet/runtime#1457,
 * which measured call-counting stubs' committed memory after a forced GC).  It calls METHODS
 * distinct generated methods CALLS times each, forces a GC, and reports what the VM holds then:
 * committed heap, code cache (the CodeHeap pools), metaspace, the VM's own committed total and its
 * Code and Compiler arenas (Native Memory Tracking), the number of the generated methods that are
 * compiled (by tier), and RSS.  The JIT mode (--jit=tiered|c1|interpreter) is a JVM flag, set by
 * run.sh before the JVM starts; this program checks that the VM really runs with it.
 */
public final class Memory {
    static final Pattern NMT_TOTAL = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB");
    static final Pattern NMT_PART = Pattern.compile("-\\s+(\\w[\\w ]*?) \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)");

    static volatile int sink;

    static long run(int methods, long calls) {
        int acc = 0;
        long made = 0;
        for (long c = 0; c < calls; c++) {
            for (int i = 0; i < methods; i++) {
                acc += Methods.call(i, (int) c);
                made++;
            }
        }
        sink = acc;
        return made;
    }

    static long rssKiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            // not Linux: no RSS figure
        }
        return -1;
    }

    /** A figure the VM did not give (negative) is left out of the JSON: a -1 would read as a
     *  measured value, and perflab refuses negative metrics. */
    static String known(String key, long kib) {
        return kib < 0 ? "" : String.format(Locale.ROOT, ", \"%s\": %d", key, kib);
    }

    static String dcmd(String op, String... args) {
        try {
            return (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), op,
                    new Object[] {args}, new String[] {String[].class.getName()});
        } catch (Exception e) {
            return "";
        }
    }

    public static void main(String[] args) throws Exception {
        Workload f = new Workload("memory/java", args);
        String jit = f.choiceFlag("jit", "tiered", "tiered", "c1", "interpreter");
        int methods = (int) f.intFlag("methods", Methods.COUNT, 1, Methods.COUNT);
        long calls = f.intFlag("calls", 3000, 1, 100_000_000L);
        int threads = (int) f.intFlag("threads", 1, 1, 64);
        long iterations = f.intFlag("iterations", 0, 0, 1);
        f.rejectUnknown("jit, methods, calls, threads, iterations");

        // The JIT mode must be the VM's, not just a label: check the flags it started with.
        List<String> vmArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
        boolean xint = vmArgs.contains("-Xint");
        boolean c1 = vmArgs.contains("-XX:TieredStopAtLevel=1");
        boolean ok = jit.equals("interpreter") ? xint : jit.equals("c1") ? c1 && !xint : !xint && !c1;
        if (!ok) {
            f.usage("--jit=" + jit + " but the VM runs with " + vmArgs
                    + "; start it through run.sh, which sets the JIT flags");
        }

        final long[] made = new long[threads];
        final long[] ns = Workload.timeThreads(threads, "memory", 0, id -> run(methods, calls), made);

        // Forced GC, twice (the second collects what finalization released), as the reference did.
        System.gc();
        System.gc();
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long heapCommitted = mem.getHeapMemoryUsage().getCommitted() / 1024;
        long heapUsed = mem.getHeapMemoryUsage().getUsed() / 1024;
        long codeUsed = 0, codeCommitted = 0, metaUsed = 0, metaCommitted = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            String n = p.getName();
            if (n.startsWith("CodeHeap") || n.equals("CodeCache") || n.equals("Code Cache")) {
                codeUsed += p.getUsage().getUsed() / 1024;
                codeCommitted += p.getUsage().getCommitted() / 1024;
            } else if (n.equals("Metaspace")) {
                metaUsed = p.getUsage().getUsed() / 1024;
                metaCommitted = p.getUsage().getCommitted() / 1024;
            }
        }
        // Native Memory Tracking (the manifest starts the VM with -XX:NativeMemoryTracking=summary).
        long nmtTotal = -1, nmtCode = -1, nmtCompiler = -1;
        String nmt = dcmd("vmNativeMemory", "summary");
        Matcher m = NMT_TOTAL.matcher(nmt);
        if (m.find()) {
            nmtTotal = Long.parseLong(m.group(2));
        }
        m = NMT_PART.matcher(nmt);
        while (m.find()) {
            if (m.group(1).trim().equals("Code")) {
                nmtCode = Long.parseLong(m.group(3));
            } else if (m.group(1).trim().equals("Compiler")) {
                nmtCompiler = Long.parseLong(m.group(3));
            }
        }
        // Which generated methods are compiled now, by tier (Compiler.codelist: "id tier ...").
        long[] byTier = new long[5];
        for (String line : dcmd("compilerCodelist").split("\n")) {
            if (line.contains(" Methods.m")) {
                String[] w = line.trim().split("\\s+");
                try {
                    int tier = Integer.parseInt(w[1]);
                    if (tier >= 0 && tier < 5) {
                        byTier[tier]++;
                    }
                } catch (RuntimeException e) {
                    // a line of another shape: not counted
                }
            }
        }
        long compiled = byTier[1] + byTier[2] + byTier[3] + byTier[4];
        long rss = rssKiB();

        long n = (long) methods * calls;
        System.out.println(String.format(Locale.ROOT,
                "{\"workload\": \"memory/java\", \"ops\": %d, \"threads\": %d, "
                        + "\"per_thread_ns\": %s, \"ns_per_op\": %.3f, \"ops_per_s\": %.1f, "
                        + "\"checksum\": %d%s, "
                        + "\"heap_committed_kib\": %d, \"heap_used_kib\": %d, "
                        + "\"code_cache_used_kib\": %d, \"code_cache_committed_kib\": %d, "
                        + "\"metaspace_used_kib\": %d, \"metaspace_committed_kib\": %d, "
                        + "\"compiled_methods\": %d, \"compiled_tier1\": %d, \"compiled_tier2\": %d, "
                        + "\"compiled_tier3\": %d, \"compiled_tier4\": %d, \"result\": %d, "
                        + "\"runtime\": \"%s\", \"parallelism\": \"threads\", "
                        + "\"params\": {\"jit\": \"%s\", \"methods\": %d, \"calls\": %d, "
                        + "\"threads\": %d, \"iterations\": %d}}",
                n * threads, threads, Workload.jsonArray(ns), Workload.nsPerOp(ns, n),
                Workload.opsPerS(ns, n), Workload.sum(made),
                known("rss_after_gc_kib", rss) + known("committed_kib", nmtTotal)
                        + known("nmt_code_kib", nmtCode) + known("nmt_compiler_kib", nmtCompiler),
                heapCommitted, heapUsed, codeUsed, codeCommitted, metaUsed, metaCommitted,
                compiled, byTier[1], byTier[2], byTier[3], byTier[4],
                // unsigned: perflab refuses negative metrics, and the int sum wraps
                Integer.toUnsignedLong(sink),
                System.getProperty("java.vm.version"), jit, methods, calls, threads, iterations));
    }
}
