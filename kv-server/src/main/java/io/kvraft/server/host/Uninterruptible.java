package io.kvraft.server.host;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Waits that run to their end on an interrupted thread too, and set the interrupt again for the caller. Close paths
 * use them: a group or a task left running over a closed RocksDB takes the JVM down. (Guava's {@code Uninterruptibles}
 * does this; the server does not otherwise depend on Guava.)
 */
public final class Uninterruptible {

    private Uninterruptible() {
    }

    /** A wait that may be interrupted. */
    public interface Wait {
        void run() throws InterruptedException;
    }

    /** Runs {@code wait} to its end, again after each interrupt, which it then sets again. */
    public static void run(Wait wait) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    wait.run();
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Waits up to {@code timeout} for {@code executor}, already shut down, to finish its tasks; whether it did. */
    public static boolean awaitTermination(ExecutorService executor, long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        boolean[] done = new boolean[1];
        run(() -> done[0] = executor.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
        return done[0];
    }
}
