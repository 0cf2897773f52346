package io.kvraft.server.metrics;

import com.codahale.metrics.Meter;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import io.kvraft.client.proto.KvProto.ErrorCode;

import java.util.concurrent.TimeUnit;

/**
 * The KV request handlers' metrics: per operation type, the rate of acknowledged operations and the
 * latency of the requests (batches) that carry that type; errors by code. One Timer update per type
 * present in a request, never one per operation.
 */
public final class KvMetrics {

    final Timer putLatency = new Timer();
    final Timer deleteLatency = new Timer();
    final Timer casLatency = new Timer();
    final Timer getLatency = new Timer();
    final Timer scanLatency = new Timer();
    final Meter puts = new Meter();
    final Meter deletes = new Meter();
    final Meter cas = new Meter();
    final Meter gets = new Meter();
    final Meter scannedPairs = new Meter();
    private final Meter[] errors = new Meter[ErrorCode.values().length];

    public KvMetrics() {
        for (int i = 0; i < errors.length; i++) {
            errors[i] = new Meter();
        }
    }

    /** A write request of {@code p} puts, {@code d} deletes and {@code c} compare-and-puts was answered. */
    public void written(long startNanos, int p, int d, int c, ErrorCode error) {
        long nanos = System.nanoTime() - startNanos;
        if (p > 0) {
            putLatency.update(nanos, TimeUnit.NANOSECONDS);
        }
        if (d > 0) {
            deleteLatency.update(nanos, TimeUnit.NANOSECONDS);
        }
        if (c > 0) {
            casLatency.update(nanos, TimeUnit.NANOSECONDS);
        }
        if (error != null) {
            error(error);
            return;
        }
        if (p > 0) {
            puts.mark(p);
        }
        if (d > 0) {
            deletes.mark(d);
        }
        if (c > 0) {
            cas.mark(c);
        }
    }

    /** A read request of {@code keys} keys was answered. */
    public void read(long startNanos, int keys, ErrorCode error) {
        getLatency.update(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
        if (error != null) {
            error(error);
        } else {
            gets.mark(keys);
        }
    }

    /** A scan page request that returned {@code pairs} pairs was answered. */
    public void scanned(long startNanos, int pairs, ErrorCode error) {
        scanLatency.update(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
        if (error != null) {
            error(error);
        } else {
            scannedPairs.mark(pairs);
        }
    }

    private void error(ErrorCode code) {
        int i = code.ordinal();
        if (i < errors.length) {
            errors[i].mark();
        }
    }

    void register(MetricRegistry r) {
        r.register("kv.request.put", putLatency);
        r.register("kv.request.delete", deleteLatency);
        r.register("kv.request.cas", casLatency);
        r.register("kv.request.get", getLatency);
        r.register("kv.request.scan", scanLatency);
        r.register("kv.ops.put", puts);
        r.register("kv.ops.delete", deletes);
        r.register("kv.ops.cas", cas);
        r.register("kv.ops.get", gets);
        r.register("kv.ops.scan.pairs", scannedPairs);
        for (ErrorCode c : ErrorCode.values()) {
            if (c != ErrorCode.OK && c != ErrorCode.UNRECOGNIZED) {
                r.register("kv.errors." + c.name(), errors[c.ordinal()]);
            }
        }
    }
}
