package io.kvraft.server.metrics;

import io.kvraft.common.proto.KvProto.ErrorCode;
import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.Counter;
import io.prometheus.client.Histogram;

/**
 * The KV request handlers' metrics: per operation type, the count of acknowledged operations
 * ({@code kv_ops_total{type}}) and a latency histogram of the requests (batches) that carry that type
 * ({@code kv_request_seconds{type}}); errors by code ({@code kv_errors_total{code}}). One histogram
 * observation per type present in a request, never one per operation.
 */
public final class KvMetrics {

    private static final String[] TYPES = {"put", "delete", "cas", "get", "scan"};

    private final Histogram latency = Histogram.build("kv_request_seconds",
                    "Latency of the KV requests carrying operations of that type, from arrival to answer")
            .labelNames("type").buckets(LatencyBuckets.SECONDS).create();
    private final Counter ops = Counter.build("kv_ops_total", "Acknowledged KV operations by type")
            .labelNames("type").create();
    private final Counter errors = Counter.build("kv_errors_total", "KV requests answered with an error, by code")
            .labelNames("code").create();

    private final Histogram.Child putLatency = latency.labels("put");
    private final Histogram.Child deleteLatency = latency.labels("delete");
    private final Histogram.Child casLatency = latency.labels("cas");
    private final Histogram.Child getLatency = latency.labels("get");
    private final Histogram.Child scanLatency = latency.labels("scan");
    private final Counter.Child puts = ops.labels("put");
    private final Counter.Child deletes = ops.labels("delete");
    private final Counter.Child cas = ops.labels("cas");
    private final Counter.Child gets = ops.labels("get");
    /** Scan page requests answered. */
    private final Counter.Child scans = ops.labels("scan");
    private final Counter scannedPairs = Counter.build("kv_scan_pairs_total", "Pairs returned by scan pages").create();
    private final Counter.Child[] errorsByCode = new Counter.Child[ErrorCode.values().length];

    public KvMetrics() {
        for (String t : TYPES) {
            latency.labels(t);
            ops.labels(t);
        }
        for (ErrorCode c : ErrorCode.values()) {
            if (c != ErrorCode.OK && c != ErrorCode.UNRECOGNIZED) {
                errorsByCode[c.ordinal()] = errors.labels(c.name());
            }
        }
    }

    /** A write request of {@code p} puts, {@code d} deletes and {@code c} compare-and-puts was answered. */
    public void written(long startNanos, int p, int d, int c, ErrorCode error) {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        if (p > 0) {
            putLatency.observe(seconds);
        }
        if (d > 0) {
            deleteLatency.observe(seconds);
        }
        if (c > 0) {
            casLatency.observe(seconds);
        }
        if (error != null) {
            error(error);
            return;
        }
        if (p > 0) {
            puts.inc(p);
        }
        if (d > 0) {
            deletes.inc(d);
        }
        if (c > 0) {
            cas.inc(c);
        }
    }

    /** A read request of {@code keys} keys was answered. */
    public void read(long startNanos, int keys, ErrorCode error) {
        getLatency.observe((System.nanoTime() - startNanos) / 1e9);
        if (error != null) {
            error(error);
        } else {
            gets.inc(keys);
        }
    }

    /** A scan page request that returned {@code pairs} pairs was answered. */
    public void scanned(long startNanos, int pairs, ErrorCode error) {
        scanLatency.observe((System.nanoTime() - startNanos) / 1e9);
        if (error != null) {
            error(error);
        } else {
            scans.inc();
            scannedPairs.inc(pairs);
        }
    }

    private void error(ErrorCode code) {
        int i = code.ordinal();
        if (i < errorsByCode.length && errorsByCode[i] != null) {
            errorsByCode[i].inc();
        }
    }

    void register(CollectorRegistry r) {
        r.register(latency);
        r.register(ops);
        r.register(errors);
        r.register(scannedPairs);
    }
}
