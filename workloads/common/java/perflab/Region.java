package perflab;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Announce a workload's timed region to perflab (same protocol as include/perflab_region.h).
 *
 * <p>perflab sets PERFLAB_CTL_FIFO / PERFLAB_ACK_FIFO to two named pipes; {@link #begin()} writes
 * "enable\n" to the control fifo and waits for one line on the ack fifo, {@link #end()} does the
 * same with "disable\n". Without the variables both are no-ops. Call them from one thread, around
 * the barrier-released region of all threads.
 */
public final class Region {
    private static boolean opened;
    private static FileOutputStream ctl;
    private static FileInputStream ack;

    private Region() {}

    private static void open() {
        opened = true;
        String c = System.getenv("PERFLAB_CTL_FIFO");
        String a = System.getenv("PERFLAB_ACK_FIFO");
        if (c == null || a == null || c.isEmpty() || a.isEmpty()) {
            return;
        }
        try {
            // Same order as the C header: the writer side first, then the reader side.
            ctl = new FileOutputStream(c);
            ack = new FileInputStream(a);
        } catch (IOException e) {
            System.err.println("perflab_region: cannot open the control fifos (" + c + ", " + a
                    + "); counting the whole process");
            ctl = null;
            ack = null;
        }
    }

    private static synchronized void send(String cmd) {
        if (!opened) {
            open();
        }
        if (ctl == null) {
            return;
        }
        try {
            ctl.write(cmd.getBytes(StandardCharsets.US_ASCII));
            ctl.flush();
            // Read up to and including the newline of "ack\n".
            for (int i = 0; i < 64; i++) {
                int b = ack.read();
                if (b < 0 || b == '\n') {
                    break;
                }
            }
        } catch (IOException e) {
            // Counting the whole process is the fallback; never fail the workload over it.
        }
    }

    /** Start of the timed region: counters on (blocks until perflab acknowledges). */
    public static void begin() {
        send("enable\n");
    }

    /** End of the timed region: counters off. */
    public static void end() {
        send("disable\n");
    }
}
