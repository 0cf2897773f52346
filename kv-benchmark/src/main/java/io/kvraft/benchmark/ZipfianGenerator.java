package io.kvraft.benchmark;

import java.util.SplittableRandom;

/**
 * YCSB's Zipfian generator (Gray et al., "Quickly Generating Billion-Record Synthetic Databases",
 * SIGMOD 1994), as in YCSB's {@code ZipfianGenerator}: item 0 is the most popular, with
 * P(rank k) proportional to 1/k^theta. Immutable; each caller passes its own random source, so one
 * instance serves all threads.
 *
 * <p>Written here rather than taken from Commons Math/RNG: it is YCSB's exact algorithm (so results
 * compare with YCSB's), takes our per-thread {@link SplittableRandom} without an adapter, and is
 * ~40 lines against a 2 MB dependency.
 */
public final class ZipfianGenerator {

    /** YCSB's default Zipfian constant. */
    public static final double YCSB_THETA = 0.99;

    /** Up to this many terms zeta is summed exactly; beyond, the tail uses Euler-Maclaurin. */
    private static final long EXACT_TERMS = 10_000_000L;

    private final long items;
    private final double theta;
    private final double alpha;
    private final double zetan;
    private final double eta;
    private final double half;

    public ZipfianGenerator(long items) {
        this(items, YCSB_THETA);
    }

    public ZipfianGenerator(long items, double theta) {
        if (items < 1) {
            throw new IllegalArgumentException("items must be positive, got " + items);
        }
        if (theta <= 0 || theta >= 1) {
            throw new IllegalArgumentException("theta must be in (0, 1), got " + theta);
        }
        this.items = items;
        this.theta = theta;
        this.alpha = 1.0 / (1.0 - theta);
        this.zetan = zeta(items, theta);
        double zeta2 = zeta(2, theta);
        this.eta = items < 2 ? 0 : (1 - Math.pow(2.0 / items, 1 - theta)) / (1 - zeta2 / zetan);
        this.half = Math.pow(0.5, theta);
    }

    /** An item in [0, items). */
    public long next(SplittableRandom random) {
        double u = random.nextDouble();
        double uz = u * zetan;
        if (uz < 1.0) {
            return 0;
        }
        if (uz < 1.0 + half) {
            return Math.min(1, items - 1);
        }
        long ret = (long) (items * Math.pow(eta * u - eta + 1, alpha));
        return Math.min(Math.max(ret, 0), items - 1);
    }

    public long items() {
        return items;
    }

    public double theta() {
        return theta;
    }

    /** sum over i in [1, n] of 1/i^theta. */
    static double zeta(long n, double theta) {
        long exact = Math.min(n, EXACT_TERMS);
        double sum = 0;
        for (long i = 1; i <= exact; i++) {
            sum += 1.0 / Math.pow(i, theta);
        }
        if (n > exact) {
            // sum over (a, n] of f(i), f(x) = x^-theta: integral + trapezoid ends + first derivative term
            double a = exact;
            double integral = (Math.pow(n, 1 - theta) - Math.pow(a, 1 - theta)) / (1 - theta);
            double fa = Math.pow(a, -theta);
            double fn = Math.pow(n, -theta);
            double dfa = -theta * Math.pow(a, -theta - 1);
            double dfn = -theta * Math.pow(n, -theta - 1);
            sum += integral + (fn - fa) / 2 + (dfn - dfa) / 12;
        }
        return sum;
    }
}
