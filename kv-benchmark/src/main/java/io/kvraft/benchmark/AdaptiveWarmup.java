package io.kvraft.benchmark;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Optional;

/**
 * Decides when a warm-up has reached the steady state: fresh JVMs keep speeding up for a minute or
 * more (JIT, the servers' pools growing), so a fixed warm-up undersells the system. Fed the throughput
 * of each progress second, it ends the warm-up once the last {@code windowSeconds} are stable: the mean
 * of their second half within {@code tolerance} of the mean of their first half (by default the last
 * 10 s within 5% of the 10 s before: halves that long smooth the second-to-second noise of a loaded
 * machine, which shorter ones took for a plateau while the JIT was still speeding things up). It gives
 * up at {@code maxSeconds}. Not thread-safe: the load's ticker thread feeds it.
 */
final class AdaptiveWarmup {

    static final double WINDOW_SECONDS = 20;
    static final double TOLERANCE = 0.05;
    static final double MAX_SECONDS = 120;

    private final int window;
    private final double tolerance;
    private final double maxSeconds;
    private final Deque<Double> lastSeconds = new ArrayDeque<>();

    AdaptiveWarmup(double windowSeconds, double tolerance, double maxSeconds) {
        if (windowSeconds < 2 || tolerance <= 0 || maxSeconds < windowSeconds) {
            throw new IllegalArgumentException("window >= 2 s, tolerance > 0 and max >= window, got " + windowSeconds
                    + ", " + tolerance + ", " + maxSeconds);
        }
        this.window = (int) Math.round(windowSeconds);
        this.tolerance = tolerance;
        this.maxSeconds = maxSeconds;
    }

    static AdaptiveWarmup defaults() {
        return new AdaptiveWarmup(WINDOW_SECONDS, TOLERANCE, MAX_SECONDS);
    }

    double maxSeconds() {
        return maxSeconds;
    }

    /**
     * One progress second: {@code opsPerSecond} completed in the second that ended {@code elapsedSeconds}
     * after the load started. Returns why the warm-up ends now, or empty to go on.
     */
    Optional<String> observe(double elapsedSeconds, double opsPerSecond) {
        lastSeconds.addLast(opsPerSecond);
        if (lastSeconds.size() > window) {
            lastSeconds.removeFirst();
        }
        if (lastSeconds.size() == window) {
            int half = window / 2;
            double first = 0;
            double second = 0;
            int i = 0;
            for (double v : lastSeconds) {
                if (i++ < window - half) {
                    first += v;
                } else {
                    second += v;
                }
            }
            first /= window - half;
            second /= half;
            double change = first > 0 ? (second - first) / first : Double.POSITIVE_INFINITY;
            String rates = String.format(Locale.ROOT, "last %d s %,.0f ops/s, the %d s before %,.0f ops/s, %+.1f%%",
                    half, second, window - half, first, change * 100);
            if (second > 0 && Math.abs(change) <= tolerance) {
                return Optional.of(String.format(Locale.ROOT, "throughput stable, the last %d s within %.0f%% of the %d s before (%s)",
                        half, tolerance * 100, window - half, rates));
            }
            if (elapsedSeconds >= maxSeconds) {
                return Optional.of(String.format(Locale.ROOT, "the %.0f s cap, throughput not yet stable within %.0f%% (%s)",
                        maxSeconds, tolerance * 100, rates));
            }
        } else if (elapsedSeconds >= maxSeconds) {
            return Optional.of(String.format(Locale.ROOT, "the %.0f s cap", maxSeconds));
        }
        return Optional.empty();
    }
}
