package io.kvraft.benchmark;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * CPU time and peak memory of the local cluster's server processes, so a run reports what it cost
 * the servers: CPU microseconds per operation and peak RSS per node, after the settings they ran with.
 */
final class ServerUsage {

    private final List<Long> pids;
    private final List<String> settings;
    private final Supplier<List<Integer>> leaders;
    private final long cpuNanosAtStart;
    /** Each process's CPU time when the measured window started and ended (the load runner marks both). */
    private volatile long[] cpuNanosAtWindowStart;
    private volatile long[] cpuNanosAtWindowEnd;
    /** The regions each node led as the window started: asked off the load's threads, so it cannot hold them up. */
    private volatile CompletableFuture<List<Integer>> leadersAtWindowStart;

    private ServerUsage(List<Long> pids, List<String> settings, Supplier<List<Integer>> leaders) {
        this.pids = pids;
        this.settings = settings;
        this.leaders = leaders;
        this.cpuNanosAtStart = cpuNanos(pids);
    }

    /**
     * @param settings lines that say how the servers were set up, printed first
     * @param leaders  the regions each node leads now, in node order (asked once, as the window starts)
     */
    static ServerUsage start(List<Long> pids, List<String> settings, Supplier<List<Integer>> leaders) {
        return new ServerUsage(List.copyOf(pids), List.copyOf(settings), leaders);
    }

    /** Marks the measured window's start (the warm-up is over). */
    void windowStarted() {
        cpuNanosAtWindowStart = perProcess(pids);
        leadersAtWindowStart = CompletableFuture.supplyAsync(leaders);
    }

    /** Marks the measured window's end (before the drain). */
    void windowEnded() {
        cpuNanosAtWindowEnd = perProcess(pids);
    }

    /**
     * Prints one block: server CPU per operation in the measured window ({@code measuredOps} in
     * {@code measuredSeconds}) and over the whole run ({@code operations} in {@code seconds}, warm-up included),
     * and each node's peak RSS. The window's figure comes first: it is the steady state's cost, the one the
     * scripts under bench/ read; the whole run's adds the JIT's and the start's.
     */
    void print(PrintStream out, long measuredOps, double measuredSeconds, long operations, double seconds) {
        long cpu = cpuNanos(pids) - cpuNanosAtStart;
        long[] start = cpuNanosAtWindowStart;
        long[] end = cpuNanosAtWindowEnd;
        List<String> perNode = new ArrayList<>();
        long window = 0;
        for (int i = 0; start != null && end != null && i < pids.size(); i++) {
            window += end[i] - start[i];
            perNode.add(String.format(Locale.ROOT, "%.2f", (end[i] - start[i]) / 1e9 / measuredSeconds));
        }
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
        if (!perNode.isEmpty()) {
            out.println("server CPU per node in the window (cores): " + String.join(" / ", perNode)
                    + "; regions led per node as it started: " + leadersText());
        }
        out.println("peak RSS per node (MiB): " + String.join(" / ", rss));
    }

    private String leadersText() {
        CompletableFuture<List<Integer>> f = leadersAtWindowStart;
        try {
            return f == null ? "?" : String.join(" / ", f.get(10, TimeUnit.SECONDS).stream().map(String::valueOf)
                    .toList());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "?";
        } catch (ExecutionException | TimeoutException e) {
            return "?";
        }
    }

    private static long[] perProcess(List<Long> pids) {
        long[] out = new long[pids.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = cpuNanos(List.of(pids.get(i)));
        }
        return out;
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
