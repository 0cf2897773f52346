package io.kvraft.client.config;

import io.kvraft.common.config.TlsConfig;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.config.YamlConfig;
import io.kvraft.common.config.ConfigException;
import java.nio.file.Path;
import java.util.List;

import static java.util.Objects.requireNonNullElse;

/**
 * The client's YAML ({@code conf/client.yaml}).
 *
 * @param servers            seed servers, host:port; the route table is learnt from them
 * @param requestTimeoutMs   the wait for one RPC's answer
 * @param operationTimeoutMs the deadline of one operation across all its retries
 * @param readMode           the default of reads: {@code read_index} (linearizable, default), {@code leader_lease}
 *                           (linearizable on the leader's lease), {@code follower} (linearizable, any replica
 *                           serves after the leader's ReadIndex) or {@code stale} (any replica, no round, may be
 *                           stale); a {@code KvClient.withReadMode} view overrides it per call
 * @param batching           per-region coalescing of operations into batch RPCs
 * @param tls                mutual TLS to the servers (off by default)
 */
public record ClientConfig(
        List<String> servers,
        Long requestTimeoutMs,
        Long operationTimeoutMs,
        String readMode,
        Batching batching,
        TlsConfig tls) {

    public ClientConfig {
        servers = List.copyOf(requireNonNullElse(servers, List.of()));
        requestTimeoutMs = requireNonNullElse(requestTimeoutMs, 5_000L);
        operationTimeoutMs = requireNonNullElse(operationTimeoutMs, 30_000L);
        readMode = requireNonNullElse(readMode, "read_index");
        batching = requireNonNullElse(batching, Batching.DEFAULT);
        tls = requireNonNullElse(tls, TlsConfig.OFF);
        for (String s : servers) {
            HostPort.parse(s);
        }
        if (requestTimeoutMs <= 0) {
            throw new IllegalArgumentException("requestTimeoutMs must be positive, got " + requestTimeoutMs);
        }
        if (operationTimeoutMs < requestTimeoutMs) {
            throw new IllegalArgumentException("operationTimeoutMs (" + operationTimeoutMs
                    + ") must be at least requestTimeoutMs (" + requestTimeoutMs + ")");
        }
        if (!READ_MODES.contains(readMode)) {
            throw new IllegalArgumentException("readMode must be one of " + String.join(", ", READ_MODES) + ", got "
                    + readMode);
        }
    }

    /** The values of {@code readMode}; {@code io.kvraft.client.ReadMode.of} reads one. */
    public static final List<String> READ_MODES = List.of("read_index", "leader_lease", "follower", "stale");

    /** Without TLS. */
    public ClientConfig(List<String> servers, Long requestTimeoutMs, Long operationTimeoutMs, String readMode,
                        Batching batching) {
        this(servers, requestTimeoutMs, operationTimeoutMs, readMode, batching, null);
    }

    public static ClientConfig load(Path file) {
        ClientConfig c = YamlConfig.load(file, ClientConfig.class);
        if (c.servers().isEmpty()) {
            throw new ConfigException(file + ": key 'servers': at least one host:port is required");
        }
        return c;
    }

    public static ClientConfig of(List<String> servers) {
        return new ClientConfig(servers, null, null, null, null);
    }

    public ClientConfig withServers(List<String> newServers) {
        return new ClientConfig(newServers, requestTimeoutMs, operationTimeoutMs, readMode, batching, tls);
    }

    public ClientConfig withTls(TlsConfig newTls) {
        return new ClientConfig(servers, requestTimeoutMs, operationTimeoutMs, readMode, batching, newTls);
    }

    public ClientConfig withBatching(Batching newBatching) {
        return new ClientConfig(servers, requestTimeoutMs, operationTimeoutMs, readMode, newBatching, tls);
    }

    public ClientConfig withReadMode(String newReadMode) {
        return new ClientConfig(servers, requestTimeoutMs, operationTimeoutMs, newReadMode, batching, tls);
    }

    /**
     * @param enabled              on: one batch RPC per region carries many operations; off: one RPC per operation
     * @param maxBatchSize         operations per batch RPC at most
     * @param maxBatchBytes        key and value bytes per batch RPC at most
     * @param maxInflightPerRegion batch RPCs in flight per region and kind (writes with the gets that ride on them,
     *                             other reads); the next batch
     *                             leaves as soon as one returns, so no timer delays a batch
     * @param maxPendingPerRegion  operations queued per region before callers get BUSY (back-pressure)
     * @param readsWithWrites      on (with batching): a read_index get joins its region's write queue and leaves
     *                             with the next write batch, answered once that batch's log entry is applied, so a
     *                             mixed load takes one Raft round per batch instead of a write round and a
     *                             ReadIndex round; with no write batch in flight it leaves at once; off: gets
     *                             always have batches of their own
     */
    public record Batching(
            Boolean enabled,
            Integer maxBatchSize,
            Integer maxBatchBytes,
            Integer maxInflightPerRegion,
            Integer maxPendingPerRegion,
            Boolean readsWithWrites) {

        public static final Batching DEFAULT = new Batching(null, null, null, null, null, null);

        public Batching {
            enabled = requireNonNullElse(enabled, true);
            maxBatchSize = requireNonNullElse(maxBatchSize, 4096);
            maxBatchBytes = requireNonNullElse(maxBatchBytes, 1 << 20);
            maxInflightPerRegion = requireNonNullElse(maxInflightPerRegion, 1);
            maxPendingPerRegion = requireNonNullElse(maxPendingPerRegion, 100_000);
            readsWithWrites = requireNonNullElse(readsWithWrites, true);
            if (maxBatchSize < 1 || maxBatchBytes < 1 || maxInflightPerRegion < 1 || maxPendingPerRegion < 1) {
                throw new IllegalArgumentException("batching limits must be positive");
            }
        }

        public Batching withEnabled(boolean on) {
            return new Batching(on, maxBatchSize, maxBatchBytes, maxInflightPerRegion, maxPendingPerRegion,
                    readsWithWrites);
        }

        public Batching withReadsWithWrites(boolean on) {
            return new Batching(enabled, maxBatchSize, maxBatchBytes, maxInflightPerRegion, maxPendingPerRegion, on);
        }
    }
}
