package perflab;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.function.IntToLongFunction;

/**
 * Shared scaffolding of perflab's Java workloads: {@code --name=value} flags (every error prints
 * one line "prog: message" and exits 2), the barrier-released timed threads and the per-thread
 * figures of the JSON line. Compile it with the workload ({@code -sourcepath ../../common/java}).
 */
public final class Workload {
    private final String prog;
    private final Map<String, String> flags = new HashMap<>();

    /** Parses {@code --name=value} and {@code --name value}; anything else exits 2. */
    public Workload(String prog, String[] args) {
        this.prog = prog;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || a.length() < 3) {
                usage("unexpected argument '" + a + "'; parameters are --name=value");
            }
            String body = a.substring(2);
            int eq = body.indexOf('=');
            if (eq >= 0) {
                flags.put(body.substring(0, eq), body.substring(eq + 1));
            } else if (i + 1 < args.length) {
                flags.put(body, args[++i]);
            } else {
                usage("--" + body + " needs a value; write --" + body + "=VALUE");
            }
        }
    }

    /** One line on stderr, exit 2. */
    public void usage(String msg) {
        System.err.println(prog + ": " + msg);
        System.exit(2);
    }

    public long intFlag(String name, long def, long min, long max) {
        String v = flags.remove(name);
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

    public boolean boolFlag(String name, boolean def) {
        String v = flags.remove(name);
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

    /** The value as given (no check), or def. */
    public String stringFlag(String name, String def) {
        String v = flags.remove(name);
        return v == null ? def : v;
    }

    public String choiceFlag(String name, String def, String... choices) {
        String v = stringFlag(name, def);
        if (!List.of(choices).contains(v)) {
            usage("--" + name + "=" + v + " is unknown; choose one of " + String.join(", ", choices));
        }
        return v;
    }

    /** Exit 2 naming the first parameter nobody read; {@code known} lists the accepted ones. */
    public void rejectUnknown(String known) {
        if (!flags.isEmpty()) {
            usage("unknown parameter --" + flags.keySet().iterator().next() + "; known: " + known);
        }
    }

    /**
     * Runs {@code work} on {@code threads} threads ("name-0", ...; stackBytes 0 = the default),
     * all released from one barrier inside the timed region. Thread {@code id} stores what
     * {@code work.applyAsLong(id)} returns in {@code counts[id]}; returns each thread's elapsed ns.
     */
    public static long[] timeThreads(int threads, String name, long stackBytes,
            IntToLongFunction work, long[] counts) throws Exception {
        final long[] ns = new long[threads];
        final CyclicBarrier ready = new CyclicBarrier(threads + 1);
        final CyclicBarrier go = new CyclicBarrier(threads + 1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int id = t;
            Thread th = new Thread(null, () -> {
                try {
                    ready.await();
                    go.await();
                    long s = System.nanoTime();
                    long c = work.applyAsLong(id);
                    ns[id] = System.nanoTime() - s;
                    counts[id] = c;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, name + "-" + t, stackBytes);
            th.start();
            ts.add(th);
        }
        ready.await();
        Region.begin();
        go.await();
        for (Thread th : ts) {
            th.join();
        }
        Region.end();
        return ns;
    }

    /** Sum of the per-thread counts (the checksum). */
    public static long sum(long[] xs) {
        long s = 0;
        for (long x : xs) {
            s += x;
        }
        return s;
    }

    /** Mean over the threads of each thread's ns per operation (n operations each). */
    public static double nsPerOp(long[] ns, long n) {
        double sum = 0;
        for (long x : ns) {
            sum += (double) x / n;
        }
        return sum / ns.length;
    }

    /** Operations of all threads per second of the slowest thread (0 if it took no time). */
    public static double opsPerS(long[] ns, long n) {
        long maxNs = 0;
        for (long x : ns) {
            maxNs = Math.max(maxNs, x);
        }
        return maxNs > 0 ? n * ns.length * 1e9 / maxNs : 0.0;
    }

    /** A JSON array of the values: "[1, 2]". */
    public static String jsonArray(long[] xs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < xs.length; i++) {
            b.append(i == 0 ? "" : ", ").append(xs[i]);
        }
        return b.append(']').toString();
    }
}
