package io.kvraft.benchmark;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.Map;

/**
 * The {@code result-<client-id>.json} file of one client, and of a merge ({@code clients > 1}).
 * Latencies in milliseconds; errors by ErrorCode name.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"clientId", "clients", "clientIds", "startTime", "endTime", "durationSeconds", "config", "ops",
        "errors", "errorCount", "errorRate", "warmupOps", "unfinished", "unsent", "clientCpuMsPer1kOps"})
public record ResultJson(
        String clientId,
        int clients,
        List<String> clientIds,
        String startTime,
        String endTime,
        double durationSeconds,
        WorkloadOptions config,
        Map<String, OpStats> ops,
        Map<String, Long> errors,
        long errorCount,
        double errorRate,
        long warmupOps,
        long unfinished,
        long unsent,
        Double clientCpuMsPer1kOps) {

    /**
     * Figures of one operation type ({@code put}, {@code get}, {@code scan}, {@code total}). {@code hits} and
     * {@code misses} (gets that found a value or none) are set for gets, {@code keys} (returned in all),
     * {@code keysPerSec} and {@code keysPerScan} for scans; null otherwise, and absent from the file.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"count", "errors", "opsPerSec", "mean", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max",
            "hits", "misses", "keys", "keysPerSec", "keysPerScan"})
    public record OpStats(
            long count,
            long errors,
            double opsPerSec,
            @JsonProperty("mean") double meanMs,
            @JsonProperty("p50") double p50Ms,
            @JsonProperty("p90") double p90Ms,
            @JsonProperty("p95") double p95Ms,
            @JsonProperty("p99") double p99Ms,
            @JsonProperty("p99.9") double p999Ms,
            @JsonProperty("p99.99") double p9999Ms,
            @JsonProperty("max") double maxMs,
            Long hits,
            Long misses,
            Long keys,
            Double keysPerSec,
            Double keysPerScan) {

        /** Stats of successful operations whose latencies (microseconds) are in {@code h}. */
        public static OpStats of(Histogram h, long errors, double opsPerSec) {
            double mean = h.getTotalCount() == 0 ? 0 : h.getMean() / 1000.0;
            return new OpStats(h.getTotalCount(), errors, round(opsPerSec, 2), round(mean, 3),
                    ReportPrinter.ms(h, 50), ReportPrinter.ms(h, 90), ReportPrinter.ms(h, 95), ReportPrinter.ms(h, 99),
                    ReportPrinter.ms(h, 99.9), ReportPrinter.ms(h, 99.99), ReportPrinter.maxMs(h),
                    null, null, null, null, null);
        }

        /** These stats with a get's hits and misses. */
        public OpStats withHits(long hitCount, long missCount) {
            return new OpStats(count, errors, opsPerSec, meanMs, p50Ms, p90Ms, p95Ms, p99Ms, p999Ms, p9999Ms, maxMs,
                    hitCount, missCount, keys, keysPerSec, keysPerScan);
        }

        /** These stats with the keys scans returned in all, at {@code perSec} keys per second. */
        public OpStats withKeys(long keyCount, double perSec) {
            return new OpStats(count, errors, opsPerSec, meanMs, p50Ms, p90Ms, p95Ms, p99Ms, p999Ms, p9999Ms, maxMs,
                    hits, misses, keyCount, round(perSec, 2), count == 0 ? 0.0 : round((double) keyCount / count, 2));
        }

        private static double round(double v, int decimals) {
            double f = Math.pow(10, decimals);
            return Math.round(v * f) / f;
        }
    }

    public OpStats op(String name) {
        return ops.get(name);
    }
}
