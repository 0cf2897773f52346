package io.kvraft.benchmark;

import com.codahale.metrics.Clock;
import com.codahale.metrics.Meter;
import com.codahale.metrics.Reservoir;
import com.codahale.metrics.Snapshot;
import com.codahale.metrics.Timer;
import org.HdrHistogram.Histogram;

import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A Dropwizard {@link Timer} built after the run from the run's data, so the Dropwizard block needs
 * no Dropwizard calls on the hot path and agrees with the HdrHistogram figures: the snapshot is the
 * HdrHistogram itself (not a decaying sample), and the meter's mean and 1/5/15-minute rates are
 * replayed from the once-a-second completion counts on a manual clock, as a live meter would have
 * ticked them.
 */
final class HdrTimer extends Timer {

    private final Meter meter;
    private final Snapshot snapshot;

    private HdrTimer(Meter meter, Snapshot snapshot, Clock clock) {
        super(meter, new com.codahale.metrics.Histogram(new FixedReservoir(snapshot)), clock);
        this.meter = meter;
        this.snapshot = snapshot;
    }

    /**
     * @param latencyMicros the latencies, microseconds
     * @param counts        completions per interval: {@code [i][0]} the interval's end in nanoseconds
     *                      from the window start, {@code [i][1]} the count
     * @param windowNanos   the measurement window's length
     */
    static HdrTimer of(Histogram latencyMicros, List<long[]> counts, long windowNanos) {
        ManualClock clock = new ManualClock();
        Meter meter = new Meter(clock);
        long marked = 0;
        for (long[] c : counts) {
            clock.tick = Math.max(clock.tick, Math.min(c[0], windowNanos));
            meter.mark(c[1]);
            marked += c[1];
        }
        long rest = latencyMicros.getTotalCount() - marked;
        clock.tick = windowNanos;
        if (rest > 0) {
            meter.mark(rest);
        }
        return new HdrTimer(meter, new HdrSnapshot(latencyMicros), clock);
    }

    @Override
    public long getCount() {
        return meter.getCount();
    }

    @Override
    public Snapshot getSnapshot() {
        return snapshot;
    }

    private static final class ManualClock extends Clock {
        long tick;

        @Override
        public long getTick() {
            return tick;
        }
    }

    private static final class FixedReservoir implements Reservoir {
        private final Snapshot snapshot;

        FixedReservoir(Snapshot snapshot) {
            this.snapshot = snapshot;
        }

        @Override
        public int size() {
            return snapshot.size();
        }

        @Override
        public void update(long value) {
            throw new UnsupportedOperationException("a finished run's timer");
        }

        @Override
        public Snapshot getSnapshot() {
            return snapshot;
        }
    }

    /** A Dropwizard snapshot over an HdrHistogram in microseconds, reporting nanoseconds as timers do. */
    static final class HdrSnapshot extends Snapshot {
        private final Histogram h;

        HdrSnapshot(Histogram micros) {
            this.h = micros;
        }

        @Override
        public double getValue(double quantile) {
            if (quantile < 0 || quantile > 1 || Double.isNaN(quantile)) {
                throw new IllegalArgumentException(quantile + " is not in [0..1]");
            }
            return h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(quantile * 100) * 1000.0;
        }

        /** Not the raw values (there may be millions): one value per distinct recorded bucket. */
        @Override
        public long[] getValues() {
            long[] v = new long[(int) Math.min(Integer.MAX_VALUE - 8, countDistinct())];
            int i = 0;
            for (var x : h.recordedValues()) {
                if (i == v.length) {
                    break;
                }
                v[i++] = h.highestEquivalentValue(x.getValueIteratedTo()) * 1000;
            }
            return v;
        }

        private long countDistinct() {
            long n = 0;
            for (var ignored : h.recordedValues()) {
                n++;
            }
            return n;
        }

        @Override
        public int size() {
            return (int) Math.min(Integer.MAX_VALUE, h.getTotalCount());
        }

        @Override
        public long getMax() {
            return h.getTotalCount() == 0 ? 0 : h.getMaxValue() * 1000;
        }

        @Override
        public double getMean() {
            return h.getTotalCount() == 0 ? 0 : h.getMean() * 1000;
        }

        @Override
        public long getMin() {
            return h.getTotalCount() == 0 ? 0 : h.getMinValue() * 1000;
        }

        @Override
        public double getStdDev() {
            return h.getTotalCount() == 0 ? 0 : h.getStdDeviation() * 1000;
        }

        @Override
        public void dump(OutputStream output) {
            try (PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(output, StandardCharsets.UTF_8))) {
                for (long v : getValues()) {
                    out.printf("%d%n", v);
                }
            }
        }
    }
}
