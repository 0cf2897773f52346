package io.kvraft.benchmark.nemesis;

import io.kvraft.server.launch.ProcessCluster;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Recovery after a heal: every region led again, and the last error seen after the heal; within {@code limitSeconds}
 * or not.
 */
record Recovery(double ledAfterSeconds, double lastErrorAfterSeconds, boolean recovered, double limitSeconds) {

    double seconds() {
        return Math.max(ledAfterSeconds, lastErrorAfterSeconds);
    }

    /**
     * Between a heal and the next fault: seconds until every region is led and no operation fails any more,
     * or NaN if that did not happen before {@code untilNs} (errors in its last second count as not yet).
     */
    static double watch(ProcessCluster cluster, RegisterWorkload load, long healNs, long untilNs)
            throws InterruptedException {
        long ledNs = -1;
        while (System.nanoTime() < untilNs) {
            if (ledNs < 0 && cluster.unled() == null) {
                ledNs = System.nanoTime();
            }
            Thread.sleep(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(untilNs - System.nanoTime())))); // poll
        }
        long lastErr = load.lastErrorNs.get();
        if (ledNs < 0 || untilNs - lastErr < TimeUnit.SECONDS.toNanos(1)) {
            return Double.NaN;
        }
        return Math.max(0, Math.max(ledNs, lastErr) - healNs) / 1e9;
    }

    /** Polls until every region is led, then runs on until 10 s pass without an error (at most {@code timeout}). */
    static Recovery await(ProcessCluster cluster, RegisterWorkload load, long healNs, Duration timeout)
            throws InterruptedException {
        long limit = healNs + timeout.toNanos();
        double limitSeconds = timeout.toMillis() / 1e3;
        long ledNs = -1;
        while (System.nanoTime() < limit) {
            if (ledNs < 0 && cluster.unled() == null) {
                ledNs = System.nanoTime();
            }
            long lastErr = load.lastErrorNs.get();
            long quietSince = Math.max(lastErr, healNs);
            if (ledNs >= 0 && System.nanoTime() - Math.max(quietSince, ledNs) > TimeUnit.SECONDS.toNanos(10)) {
                return new Recovery((ledNs - healNs) / 1e9, Math.max(0, lastErr - healNs) / 1e9, true, limitSeconds);
            }
            Thread.sleep(200); // polling interval
        }
        long lastErr = load.lastErrorNs.get();
        return new Recovery(ledNs < 0 ? Double.NaN : (ledNs - healNs) / 1e9, Math.max(0, lastErr - healNs) / 1e9, false,
                limitSeconds);
    }
}
