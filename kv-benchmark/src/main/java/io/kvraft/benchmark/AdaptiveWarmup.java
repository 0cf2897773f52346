package io.kvraft.benchmark;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Optional;

/**
 * Decides when a warm-up has reached the steady state: fresh JVMs keep speeding up for a minute or
 * more (JIT, the servers' pools growing), so a fixed warm-up undersells the system. Fed the throughput
 * of each progress second, it ends the warm-up once the last {@code windowSeconds} are stable. The
 * window is three equal blocks (by default three of 10 s, 30 s in all), and it is stable when the mean of
 * the last block is within {@code tolerance} of the mean of EACH of the two blocks before it: the last
 * 10 s within 5% of the 10 s before and within 5% of the 10 s before that. Blocks that long smooth the
 * second-to-second noise of a loaded machine, which shorter ones took for a plateau while the JIT was
 * still speeding things up.
 * <p>
 * Why three blocks and not two: on a slow 2-core machine the JIT climb is slow, under 5% per 10 s, so
 * comparing the last 10 s with the 10 s before alone would end the warm-up during the climb. The same climb
 * shows over the 20 s before the last block: at 4% per 10 s, the last block is 8% above the oldest, so the
 * climb does not end the warm-up.
 * <p>
 * When it is also told the CPU of the JIT compiler threads ({@link CompilerActivity}: the benchmark's and the local
 * servers' JVMs), a stable throughput ends the warm-up only once the compilers used at most {@code compilerShare} of
 * those JVMs' CPU over the last block: a fresh cluster JIT-compiles a large share of its CPU for a minute or more, and
 * its throughput may stay flat for a while then rise again.
 * <p>
 * It gives up at {@code maxSeconds}. Not thread-safe: the load's ticker thread feeds it.
 */
final class AdaptiveWarmup {

    /** Three blocks of 10 s. */
    static final double WINDOW_SECONDS = 30;
    static final double TOLERANCE = 0.05;
    static final double MAX_SECONDS = 120;
    /** The compilers' largest share of the JVMs' CPU over the last block for the warm-up to end. */
    static final double COMPILER_SHARE = 0.10;

    /** Seconds in one block: a third of the window. */
    private final int block;
    private final int window;
    private final double tolerance;
    private final double maxSeconds;
    private final double compilerShare;
    private final Deque<Double> lastSeconds = new ArrayDeque<>();
    /** The compilers' samples of the last block's seconds and the one before them ({@link #NONE}: not known). */
    private final Deque<CompilerActivity.Sample> lastSamples = new ArrayDeque<>();

    /**
     * @param windowSeconds the seconds compared, three blocks of {@code windowSeconds / 3}: a whole number of
     *                      seconds, a multiple of 3, at least 3 (blocks of at least 1 s)
     */
    AdaptiveWarmup(double windowSeconds, double tolerance, double maxSeconds) {
        this(windowSeconds, tolerance, maxSeconds, COMPILER_SHARE);
    }

    AdaptiveWarmup(double windowSeconds, double tolerance, double maxSeconds, double compilerShare) {
        if (!(windowSeconds >= 3) || windowSeconds != Math.rint(windowSeconds) || windowSeconds % 3 != 0
                || !(tolerance > 0) || !(maxSeconds >= windowSeconds)) {
            throw new IllegalArgumentException("window of 3 blocks of whole seconds >= 1 s (a multiple of 3, >= 3 s),"
                    + " tolerance > 0 and max >= window, got " + windowSeconds + ", " + tolerance + ", " + maxSeconds);
        }
        this.window = (int) windowSeconds;
        this.block = window / 3;
        this.tolerance = tolerance;
        this.maxSeconds = maxSeconds;
        this.compilerShare = compilerShare;
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
        return observe(elapsedSeconds, opsPerSecond, null);
    }

    /**
     * As {@link #observe(double, double)}, with the JIT compilers' CPU so far ({@code null}: not known, then the
     * throughput alone decides).
     */
    Optional<String> observe(double elapsedSeconds, double opsPerSecond, CompilerActivity.Sample compilers) {
        lastSamples.addLast(compilers == null ? NONE : compilers);
        if (lastSamples.size() > block + 1) {
            lastSamples.removeFirst();
        }
        lastSeconds.addLast(opsPerSecond);
        if (lastSeconds.size() > window) {
            lastSeconds.removeFirst();
        }
        if (lastSeconds.size() == window) {
            double[] means = new double[3]; // oldest, middle, last
            int i = 0;
            for (double v : lastSeconds) {
                means[i++ / block] += v;
            }
            double oldest = means[0] / block;
            double middle = means[1] / block;
            double last = means[2] / block;
            double vsMiddle = change(last, middle);
            double vsOldest = change(last, oldest);
            String rates = String.format(Locale.ROOT,
                    "last %d s %,.0f ops/s, the %d s before %,.0f ops/s (%+.1f%%), the %d s before that %,.0f ops/s (%+.1f%%)",
                    block, last, block, middle, vsMiddle * 100, block, oldest, vsOldest * 100);
            double share = compilerShare();
            String jit = Double.isNaN(share) ? "" : String.format(Locale.ROOT,
                    "; the JIT compilers used %.1f%% of the JVMs' CPU in the last %d s", share * 100, block);
            boolean stable = last > 0 && Math.abs(vsMiddle) <= tolerance && Math.abs(vsOldest) <= tolerance;
            if (stable && !(share > compilerShare)) {
                return Optional.of(String.format(Locale.ROOT,
                        "throughput stable, the last %d s within %.0f%% of each of the two %d s blocks before (%s)%s",
                        block, tolerance * 100, block, rates, jit));
            }
            if (elapsedSeconds >= maxSeconds) {
                return Optional.of(String.format(Locale.ROOT, "the %.0f s cap, %s (%s)%s", maxSeconds, stable
                        ? String.format(Locale.ROOT, "throughput stable within %.0f%% but the JIT compilers still busy"
                        + " (over %.0f%%)", tolerance * 100, compilerShare * 100)
                        : String.format(Locale.ROOT, "throughput not yet stable within %.0f%%", tolerance * 100),
                        rates, jit));
            }
        } else if (elapsedSeconds >= maxSeconds) {
            return Optional.of(String.format(Locale.ROOT, "the %.0f s cap", maxSeconds));
        }
        return Optional.empty();
    }

    private static final CompilerActivity.Sample NONE = new CompilerActivity.Sample(-1, -1);

    /** The compilers' share of the JVMs' CPU over the last block, or NaN when not known for all of it. */
    private double compilerShare() {
        if (lastSamples.size() <= block) {
            return Double.NaN;
        }
        CompilerActivity.Sample first = lastSamples.peekFirst();
        CompilerActivity.Sample now = lastSamples.peekLast();
        if (first == NONE || now == NONE || now.totalTicks() <= first.totalTicks()) {
            return Double.NaN;
        }
        return (double) (now.compilerTicks() - first.compilerTicks()) / (now.totalTicks() - first.totalTicks());
    }

    /** The last block's change against an earlier one, as a fraction; infinite against nothing completed. */
    private static double change(double last, double earlier) {
        return earlier > 0 ? (last - earlier) / earlier : Double.POSITIVE_INFINITY;
    }
}
