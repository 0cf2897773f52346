package io.kvraft.benchmark;

import picocli.CommandLine.Option;

import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** picocli mixin: the workload options shared by the run and the sweep. */
public final class LoadOptions {

    @Option(names = "--threads", defaultValue = "8", paramLabel = "N",
            description = "Load threads; each keeps up to --inflight operations outstanding (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--inflight", defaultValue = "512", paramLabel = "N",
            description = "Operations in flight per thread at most (default: ${DEFAULT-VALUE}).")
    int inflight;

    @Option(names = "--workload", paramLabel = "NAME", converter = WorkloadPreset.Converter.class,
            completionCandidates = WorkloadPreset.Candidates.class,
            description = "A named mix instead of --read-ratio/--scan-ratio: default (90%% put, 10%% get, the SOFAJRaft"
                    + " reference), a (50%% get, 50%% put: YCSB A), b (95%% get, 5%% put), c (100%% get), e (95%% scan,"
                    + " 5%% put: YCSB E). A put writes a key of the key space; a scan reads up to --scan-length keys"
                    + " from a start key drawn by --key-distribution. Or a coordination workload (no"
                    + " preload): sequence (getSequence(key, --sequence-step) on --keys sequence keys drawn by"
                    + " --key-distribution: calls/s and latency per call), allocator (each thread calls"
                    + " SequenceAllocator.next() in a loop, blocks of --sequence-step, one allocator per sequence key"
                    + " shared by the threads; --inflight does not apply: the 'alloc' row's ops/s is ids/s), lock (each"
                    + " in-flight slot has its own lock key: tryLock with --lock-lease, then unlock; no contention:"
                    + " 'acquire' and 'release' rows) (default: default).")
    WorkloadPreset workload;

    @Option(names = "--read-ratio", paramLabel = "R",
            description = "Share of gets; puts are what gets and scans leave (default: 0.1).")
    Double readRatio;

    @Option(names = "--scan-ratio", paramLabel = "R",
            description = "Share of scans: scan(start, end of key space, --scan-length), the start key drawn as a get's"
                    + " key is (default: 0).")
    Double scanRatio;

    @Option(names = "--append-ratio", paramLabel = "R",
            description = "Share of appends (RheaKV's merge) of a value of --value-size bytes to a key drawn as a"
                    + " put's key is; puts are what gets, scans and appends leave (default: 0).")
    Double appendRatio;

    @Option(names = "--scan-length", defaultValue = "" + WorkloadOptions.DEFAULT_SCAN_LENGTH, paramLabel = "N",
            description = "Keys per scan at most (the scan's limit) (default: ${DEFAULT-VALUE}).")
    int scanLength;

    @Option(names = "--key-size", defaultValue = "16", paramLabel = "BYTES",
            description = "Key size; at least 8 for uniform and zipfian keys (default: ${DEFAULT-VALUE}).")
    int keySize;

    @Option(names = "--value-size", defaultValue = "16", paramLabel = "BYTES",
            description = "Value size (default: ${DEFAULT-VALUE}).")
    int valueSize;

    @Option(names = "--keys", paramLabel = "N",
            description = "Key space size, preloaded with batchPut before measuring so gets hit; for --workload sequence"
                    + " and allocator the number of sequence keys, not preloaded; the lock workload takes one key per"
                    + " in-flight slot instead (default: " + DEFAULT_KEYS + "; " + DEFAULT_SEQUENCE_KEYS
                    + " for sequence and allocator).")
    Long keys;

    /** Key space size unless --keys says otherwise. */
    static final long DEFAULT_KEYS = 100_000;
    /** Sequence keys of the sequence and allocator workloads unless --keys says otherwise: one id generator. */
    static final long DEFAULT_SEQUENCE_KEYS = 1;

    @Option(names = "--sequence-step", paramLabel = "N",
            description = "--workload sequence: numbers per getSequence call; allocator: numbers per block the"
                    + " allocator fetches (default: " + WorkloadOptions.DEFAULT_SEQUENCE_STEP + ").")
    Long sequenceStep;

    @Option(names = "--lock-lease", paramLabel = "TIME", converter = DurationConverter.class,
            description = "--workload lock: the lease of each lock taken (it is released at once, so the watchdog"
                    + " seldom renews): " + DurationConverter.HELP + " (default: "
                    + WorkloadOptions.DEFAULT_LOCK_LEASE_MS / 1000 + "s).")
    Duration lockLease;

    @Option(names = "--key-distribution", defaultValue = "uniform", paramLabel = "DIST",
            converter = KeyDistribution.Converter.class, completionCandidates = KeyDistribution.Candidates.class,
            description = "${COMPLETION-CANDIDATES}; region-start uses only the regions' start keys, as the"
                    + " SOFAJRaft reference benchmark does; hot-region puts every key in the lowest region (one"
                    + " leader serves all) (default: ${DEFAULT-VALUE}).")
    KeyDistribution keyDistribution;

    @Option(names = "--rate", defaultValue = "0", paramLabel = "OPS",
            description = "0: closed loop; above 0: open loop at this total target ops/s, latency measured from each"
                    + " operation's scheduled time (coordinated omission corrected, as wrk2) (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(names = "--read-mode", paramLabel = "MODE",
            description = "How gets and scans read: read_index, leader_lease, follower or stale; overrides the client"
                    + " YAML's readMode (default: the client config's, else read_index).")
    String readMode;

    @Option(names = "--batching", arity = "1", paramLabel = "true|false",
            description = "Turn client batching on or off (default: the client config's batching.enabled, else true).")
    Boolean batching;

    @Option(names = "--max-error-rate", defaultValue = "0.001", paramLabel = "R",
            description = "Exit with code 1 when errors/operations exceeds this (default: ${DEFAULT-VALUE}).")
    double maxErrorRate;

    @Option(names = "--client-id", paramLabel = "ID",
            description = "Names this client's result files (default: hostname-pid).")
    String clientId;

    @Option(names = "--seed", paramLabel = "N",
            description = "Seed of keys, values and the operation mix (default: random; the report shows it).")
    Long seed;

    @Option(names = "--drain-timeout", defaultValue = "35", paramLabel = "TIME", converter = DurationConverter.class,
            description = "After the end, how long to wait for operations still in flight; those left count as"
                    + " UNFINISHED errors: " + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration drainTimeout;

    /** The workload; {@code readMode} and {@code batching} are the client's effective settings. */
    WorkloadOptions toWorkload(double durationSeconds, double warmupSeconds, String effectiveReadMode,
                               Boolean effectiveBatching) {
        if (clientId == null) {
            clientId = defaultClientId();
        }
        if (seed == null) {
            seed = ThreadLocalRandom.current().nextLong();
        }
        if (workload != null && (readRatio != null || scanRatio != null || appendRatio != null)) {
            throw new UsageException("--workload " + workload + " sets the mix: leave out --read-ratio, --scan-ratio"
                    + " and --append-ratio, or --workload");
        }
        WorkloadPreset preset = workload == null ? WorkloadPreset.DEFAULT : workload;
        WorkloadPreset.Kind kind = preset.kind();
        if (sequenceStep != null && kind != WorkloadPreset.Kind.SEQUENCE && kind != WorkloadPreset.Kind.ALLOCATOR) {
            throw new UsageException("--sequence-step applies to --workload sequence and allocator only");
        }
        if (lockLease != null && kind != WorkloadPreset.Kind.LOCK) {
            throw new UsageException("--lock-lease applies to --workload lock only");
        }
        double reads = readRatio != null ? readRatio : preset.readRatio();
        double scans = scanRatio != null ? scanRatio : preset.scanRatio();
        long keyCount = keys != null ? keys
                : kind == WorkloadPreset.Kind.SEQUENCE || kind == WorkloadPreset.Kind.ALLOCATOR ? DEFAULT_SEQUENCE_KEYS
                : DEFAULT_KEYS;
        return new WorkloadOptions(threads, inflight, durationSeconds, warmupSeconds,
                workload == null ? null : workload.cliName(), reads, scans,
                appendRatio != null ? appendRatio : 0, scanLength, keySize, valueSize,
                keyCount, keyDistribution, rate, effectiveReadMode, effectiveBatching, maxErrorRate, clientId, seed,
                DurationConverter.seconds(drainTimeout), sequenceStep,
                lockLease == null ? null : lockLease.toMillis());
    }

    /** Checks the options before any cluster is started (the result is thrown away). */
    void validate(double durationSeconds, double warmupSeconds) {
        toWorkload(durationSeconds, warmupSeconds, readMode, batching);
    }

    static String defaultClientId() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = System.getenv().getOrDefault("HOSTNAME", "localhost");
        }
        return host + "-" + ProcessHandle.current().pid();
    }
}
