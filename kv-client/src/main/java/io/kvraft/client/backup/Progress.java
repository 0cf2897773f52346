package io.kvraft.client.backup;

import java.io.PrintWriter;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Counts keys, bytes and regions of a backup or restore and prints a line every interval, while it runs. */
final class Progress implements AutoCloseable {

    final AtomicLong keys = new AtomicLong();
    final AtomicLong bytes = new AtomicLong();
    final AtomicInteger regionsDone = new AtomicInteger();
    /** Sequences' and locks' system records restored (a backup counts them in its files only). */
    final AtomicLong systemRecords = new AtomicLong();
    private final String verb;
    private final int regions;
    private final long startNanos = System.nanoTime();
    private final ScheduledExecutorService printer;

    /** @param intervalMs 0 = print nothing */
    Progress(String verb, int regions, PrintWriter out, long intervalMs) {
        this.verb = verb;
        this.regions = regions;
        if (intervalMs > 0 && out != null) {
            printer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "kv-" + verb + "-progress");
                t.setDaemon(true);
                return t;
            });
            printer.scheduleAtFixedRate(() -> out.println(line()), intervalMs, intervalMs, TimeUnit.MILLISECONDS);
        } else {
            printer = null;
        }
    }

    String line() {
        double secs = seconds();
        long records = systemRecords.get();
        return String.format("%s: %d/%d regions, %,d keys, %s%.1f MB, %.1f MB/s, %.0f s", verb, regionsDone.get(),
                regions, keys.get(), records > 0 ? String.format("%,d sequence/lock records, ", records) : "",
                bytes.get() / 1e6, secs > 0 ? bytes.get() / 1e6 / secs : 0, secs);
    }

    double seconds() {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    @Override
    public void close() {
        if (printer != null) {
            printer.shutdownNow();
        }
    }
}
