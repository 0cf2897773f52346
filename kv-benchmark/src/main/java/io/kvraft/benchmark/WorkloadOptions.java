package io.kvraft.benchmark;

import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.ReadMode;

/**
 * Everything one measured run needs; the CLI builds it from its options and the result JSON carries
 * it as {@code config}. Times are in seconds. Invalid values throw {@link UsageException} with a
 * one-line message naming the option.
 *
 * @param threads            load threads; closed loop: each keeps {@code inflight} operations outstanding
 * @param inflight           operations in flight per thread at most
 * @param durationSeconds    measured time, after the warm-up
 * @param warmupSeconds      time before the measurement whose operations are not counted
 * @param workload           the --workload preset that set the ratios, or null when they were given (or defaulted)
 * @param readRatio          share of gets
 * @param scanRatio          share of scans
 * @param appendRatio        share of appends (RheaKV's merge) to a key of the key space; puts are the rest
 * @param scanLength         keys per scan at most (the scan's limit); null: 100
 * @param keySize            bytes per key
 * @param valueSize          bytes per value
 * @param keys               key space size (preloaded before the run)
 * @param keyDistribution    how keys are chosen
 * @param rate               0: closed loop; above 0: open loop at this total target ops/s
 * @param readMode           read_index, leader_lease, follower, stale, or null to keep the client config's
 * @param batching           client batching on/off, or null to keep the client config's
 * @param maxErrorRate       errors/(operations) above this fail the run (exit code 1)
 * @param clientId           names the result files of this client
 * @param seed               seed of the key, value and op-type choices
 * @param drainTimeoutSeconds how long to wait after the end for operations still in flight
 * @param sequenceStep       numbers per getSequence call (sequence), per allocator block (allocator); null: 1000
 * @param lockLeaseMs        the lease of each lock the lock workload takes; null: 10,000 ms
 */
public record WorkloadOptions(
        int threads,
        int inflight,
        double durationSeconds,
        double warmupSeconds,
        String workload,
        double readRatio,
        double scanRatio,
        double appendRatio,
        Integer scanLength,
        int keySize,
        int valueSize,
        long keys,
        KeyDistribution keyDistribution,
        double rate,
        String readMode,
        Boolean batching,
        double maxErrorRate,
        String clientId,
        long seed,
        double drainTimeoutSeconds,
        Long sequenceStep,
        Long lockLeaseMs) {

    /** Keys per scan unless --scan-length says otherwise. */
    public static final int DEFAULT_SCAN_LENGTH = 100;
    /** Numbers per getSequence call or allocator block unless --sequence-step says otherwise. */
    public static final long DEFAULT_SEQUENCE_STEP = 1000;
    /** The lock workload's lease unless --lock-lease says otherwise. */
    public static final long DEFAULT_LOCK_LEASE_MS = 10_000;
    /** The client's and the servers' bounds (a step of 2^40 at most, a lease of a day at most). */
    static final long MAX_SEQUENCE_STEP = 1L << 40;
    static final long MAX_LOCK_LEASE_MS = 86_400_000L;

    public WorkloadOptions {
        scanLength = java.util.Objects.requireNonNullElse(scanLength, DEFAULT_SCAN_LENGTH);
        sequenceStep = java.util.Objects.requireNonNullElse(sequenceStep, DEFAULT_SEQUENCE_STEP);
        lockLeaseMs = java.util.Objects.requireNonNullElse(lockLeaseMs, DEFAULT_LOCK_LEASE_MS);
        require(sequenceStep >= 1 && sequenceStep <= MAX_SEQUENCE_STEP,
                "--sequence-step must be 1 to " + MAX_SEQUENCE_STEP + ", got " + sequenceStep);
        require(lockLeaseMs >= 1 && lockLeaseMs <= MAX_LOCK_LEASE_MS,
                "--lock-lease must be 1 ms to 1 day, got " + lockLeaseMs + " ms");
        require(threads >= 1, "--threads must be at least 1, got " + threads);
        require(inflight >= 1, "--inflight must be at least 1, got " + inflight);
        require(durationSeconds > 0 && Double.isFinite(durationSeconds), "--duration must be positive, got " + durationSeconds);
        require(warmupSeconds >= 0 && Double.isFinite(warmupSeconds), "--warmup must be 0 or more, got " + warmupSeconds);
        require(readRatio >= 0 && readRatio <= 1, "--read-ratio must be between 0 and 1, got " + readRatio);
        require(scanRatio >= 0 && scanRatio <= 1, "--scan-ratio must be between 0 and 1, got " + scanRatio);
        require(appendRatio >= 0 && appendRatio <= 1, "--append-ratio must be between 0 and 1, got " + appendRatio);
        require(readRatio + scanRatio + appendRatio <= 1 + 1e-9, "--read-ratio " + fmt(readRatio) + ", --scan-ratio "
                + fmt(scanRatio) + " and --append-ratio " + fmt(appendRatio) + " add up to "
                + fmt(round(readRatio + scanRatio + appendRatio)) + ", over 1 (puts take the rest)");
        require(scanLength >= 1, "--scan-length must be at least 1, got " + scanLength);
        require(keySize >= 1, "--key-size must be at least 1, got " + keySize);
        require(valueSize >= 1, "--value-size must be at least 1, got " + valueSize);
        require(keys >= 1, "--keys must be at least 1, got " + keys);
        require(keyDistribution != null, "--key-distribution is required");
        require(keyDistribution == KeyDistribution.REGION_START || keySize >= KeyGenerator.MIN_MIXED_KEY_SIZE,
                "--key-size must be at least " + KeyGenerator.MIN_MIXED_KEY_SIZE + " for " + keyDistribution
                        + " keys (their first 8 bytes spread them over all regions), got " + keySize);
        require(rate >= 0 && Double.isFinite(rate), "--rate must be 0 (closed loop) or a positive ops/s, got " + rate);
        require(readMode == null || ClientConfig.READ_MODES.contains(readMode),
                "--read-mode must be one of " + String.join(", ", ClientConfig.READ_MODES) + "; got '" + readMode + "'");
        require(maxErrorRate >= 0 && maxErrorRate <= 1, "--max-error-rate must be between 0 and 1, got " + maxErrorRate);
        require(clientId != null && !clientId.isBlank(), "--client-id must not be empty");
        require(drainTimeoutSeconds > 0, "--drain-timeout must be positive, got " + drainTimeoutSeconds);
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new UsageException(message);
        }
    }

    /** Share of puts: what gets, scans and appends leave. */
    public double putRatio() {
        return Math.max(0, 1 - readRatio - scanRatio - appendRatio);
    }

    /** The read mode as the client API's enum; null when the client config's is kept. */
    public ReadMode readModeValue() {
        return readMode == null ? null : ReadMode.of(readMode);
    }

    /** What the operations are: a put/get/scan mix, or one of the coordination workloads. */
    public WorkloadPreset.Kind kind() {
        return WorkloadPreset.kindOf(workload);
    }

    /** Whether the run preloads the key space (the mixes do; sequences and locks live apart from the pairs). */
    public boolean preloads() {
        return kind() == WorkloadPreset.Kind.MIX;
    }

    /**
     * The mix in words, e.g. {@code put 0.05, scan 0.95}: only the types with a share; for the coordination
     * workloads the call and its parameter, e.g. {@code getSequence step 1000}.
     */
    public String mix() {
        switch (kind()) {
            case SEQUENCE:
                return "getSequence step " + sequenceStep;
            case ALLOCATOR:
                return "SequenceAllocator.next, blocks of " + sequenceStep;
            case LOCK:
                return "tryLock then unlock, lease " + lockLeaseMs + " ms";
            default:
                break;
        }
        StringBuilder b = new StringBuilder();
        double[] shares = {putRatio(), readRatio, scanRatio, appendRatio};
        OpType[] types = {OpType.PUT, OpType.GET, OpType.SCAN, OpType.APPEND};
        for (int i = 0; i < types.length; i++) {
            if (shares[i] > 0) {
                b.append(b.isEmpty() ? "" : ", ").append(types[i].label()).append(' ').append(fmt(round(shares[i])));
            }
        }
        return b.toString();
    }

    private static double round(double d) {
        return Math.round(d * 1e6) / 1e6;
    }

    public boolean openLoop() {
        return rate > 0;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder().threads(threads).inflight(inflight).durationSeconds(durationSeconds)
                .warmupSeconds(warmupSeconds).workload(workload).readRatio(readRatio).scanRatio(scanRatio).appendRatio(appendRatio)
                .scanLength(scanLength).keySize(keySize).valueSize(valueSize)
                .keys(keys).keyDistribution(keyDistribution).rate(rate).readMode(readMode).batching(batching)
                .maxErrorRate(maxErrorRate).clientId(clientId).seed(seed).drainTimeoutSeconds(drainTimeoutSeconds)
                .sequenceStep(sequenceStep).lockLeaseMs(lockLeaseMs);
    }

    public WorkloadOptions withThreads(int n) {
        return toBuilder().threads(n).build();
    }

    public WorkloadOptions withRate(double r) {
        return toBuilder().rate(r).build();
    }

    public WorkloadOptions withTimes(double duration, double warmup) {
        return toBuilder().durationSeconds(duration).warmupSeconds(warmup).build();
    }

    /** One line for humans: the workload in CLI terms. */
    public String describe() {
        return "threads=" + threads + " inflight=" + inflight + " duration=" + fmt(durationSeconds) + "s warmup="
                + fmt(warmupSeconds) + "s " + (workload == null ? "" : "workload=" + workload + " ") + "mix=("
                + mix() + ")" + (scanRatio > 0 ? " scan-length=" + scanLength : "") + " key-size=" + keySize + " value-size="
                + valueSize + " keys=" + keys + " key-distribution=" + keyDistribution + " "
                + (openLoop() ? "rate=" + fmt(rate) + " ops/s (open loop)" : "closed loop")
                + (readMode == null ? "" : " read-mode=" + readMode)
                + (batching == null ? "" : " batching=" + batching) + " client-id=" + clientId + " seed=" + seed;
    }

    private static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }

    /** Defaults as in the CLI. */
    public static final class Builder {
        private int threads = 8;
        private int inflight = 32;
        private double durationSeconds = 30;
        private double warmupSeconds = 5;
        private String workload;
        private double readRatio = 0.1;
        private double scanRatio = 0;
        private double appendRatio = 0;
        private Integer scanLength;
        private int keySize = 16;
        private int valueSize = 16;
        private long keys = 100_000;
        private KeyDistribution keyDistribution = KeyDistribution.UNIFORM;
        private double rate = 0;
        private String readMode;
        private Boolean batching;
        private double maxErrorRate = 0.001;
        private String clientId = "client";
        private long seed = 1;
        private double drainTimeoutSeconds = 35;
        private Long sequenceStep;
        private Long lockLeaseMs;

        public Builder threads(int v) { threads = v; return this; }
        public Builder inflight(int v) { inflight = v; return this; }
        public Builder durationSeconds(double v) { durationSeconds = v; return this; }
        public Builder warmupSeconds(double v) { warmupSeconds = v; return this; }
        public Builder workload(String v) { workload = v; return this; }
        public Builder readRatio(double v) { readRatio = v; return this; }
        public Builder scanRatio(double v) { scanRatio = v; return this; }
        public Builder appendRatio(double v) { appendRatio = v; return this; }
        public Builder scanLength(Integer v) { scanLength = v; return this; }
        public Builder keySize(int v) { keySize = v; return this; }
        public Builder valueSize(int v) { valueSize = v; return this; }
        public Builder keys(long v) { keys = v; return this; }
        public Builder keyDistribution(KeyDistribution v) { keyDistribution = v; return this; }
        public Builder rate(double v) { rate = v; return this; }
        public Builder readMode(String v) { readMode = v; return this; }
        public Builder batching(Boolean v) { batching = v; return this; }
        public Builder maxErrorRate(double v) { maxErrorRate = v; return this; }
        public Builder clientId(String v) { clientId = v; return this; }
        public Builder seed(long v) { seed = v; return this; }
        public Builder drainTimeoutSeconds(double v) { drainTimeoutSeconds = v; return this; }
        public Builder sequenceStep(Long v) { sequenceStep = v; return this; }
        public Builder lockLeaseMs(Long v) { lockLeaseMs = v; return this; }

        public WorkloadOptions build() {
            return new WorkloadOptions(threads, inflight, durationSeconds, warmupSeconds, workload, readRatio,
                    scanRatio, appendRatio, scanLength, keySize,
                    valueSize, keys, keyDistribution, rate, readMode, batching, maxErrorRate, clientId, seed,
                    drainTimeoutSeconds, sequenceStep, lockLeaseMs);
        }
    }
}
