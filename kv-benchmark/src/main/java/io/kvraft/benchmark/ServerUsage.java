package io.kvraft.benchmark;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * CPU time and peak memory of the local cluster's server processes, so a run reports what it cost
 * the servers: CPU microseconds per operation and peak RSS per node, after the settings they ran with.
 */
final class ServerUsage {

    private final List<Long> pids;
    private final List<String> settings;
    private final long cpuNanosAtStart;
    /** The processes' CPU time when the measured window started and ended (the load runner marks both). */
    private volatile long cpuNanosAtWindowStart;
    private volatile long cpuNanosAtWindowEnd;

    private ServerUsage(List<Long> pids, List<String> settings) {
        this.pids = pids;
        this.settings = settings;
        this.cpuNanosAtStart = cpuNanos(pids);
    }

    /** @param settings lines that say how the servers were set up, printed first */
    static ServerUsage start(List<Long> pids, List<String> settings) {
        return new ServerUsage(List.copyOf(pids), List.copyOf(settings));
    }

    /** Marks the measured window's start (the warm-up is over). */
    void windowStarted() {
        cpuNanosAtWindowStart = cpuNanos(pids);
    }

    /** Marks the measured window's end (before the drain). */
    void windowEnded() {
        cpuNanosAtWindowEnd = cpuNanos(pids);
    }

    /**
     * Prints one block: server CPU per operation in the measured window ({@code measuredOps} in
     * {@code measuredSeconds}) and over the whole run ({@code operations} in {@code seconds}, warm-up included),
     * and each node's peak RSS. The window's figure comes first: it is the steady state's cost, the one the
     * scripts under bench/ read; the whole run's adds the JIT's and the start's.
     */
    void print(PrintStream out, long measuredOps, double measuredSeconds, long operations, double seconds) {
        long cpu = cpuNanos(pids) - cpuNanosAtStart;
        long window = cpuNanosAtWindowEnd - cpuNanosAtWindowStart;
        List<String> rss = new ArrayList<>();
        for (long pid : pids) {
            long kb = peakRssKb(pid);
            rss.add(kb < 0 ? "?" : String.format(Locale.ROOT, "%.0f", kb / 1024.0));
        }
        out.println();
        out.println("-- Servers (local cluster) " + "-".repeat(53));
        settings.forEach(out::println);
        out.printf(Locale.ROOT, "server CPU: %.1f us per operation in the measured %.0f s (%.2f cores); "
                        + "%.1f us with the warm-up (%.2f cores on average)%n",
                perOp(window, measuredOps), measuredSeconds, window / 1e9 / measuredSeconds,
                perOp(cpu, operations), cpu / 1e9 / seconds);
        out.println("peak RSS per node (MiB): " + String.join(" / ", rss));
    }

    private static double perOp(long cpuNanos, long operations) {
        return operations == 0 ? 0.0 : cpuNanos / 1000.0 / operations;
    }

    /** The processes' CPU time so far, user and system, all threads (the sweep reads it per step). */
    static long cpuNanos(List<Long> pids) {
        long total = 0;
        for (long pid : pids) {
            total += ProcessHandle.of(pid).flatMap(h -> h.info().totalCpuDuration()).map(Duration::toNanos).orElse(0L);
        }
        return total;
    }

    /** VmHWM from /proc (Linux); -1 elsewhere. */
    private static long peakRssKb(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
