package io.kvraft.server.metrics;

/**
 * The bucket bounds, in seconds, of every latency histogram a node exports: 100 µs to 10 s, about
 * three per decade, so a cluster-wide p99 ({@code histogram_quantile} over the nodes' summed buckets)
 * is resolved from a loopback write (sub-millisecond) to a failover (seconds).
 */
final class LatencyBuckets {

    static final double[] SECONDS = {
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

    private LatencyBuckets() {
    }
}
