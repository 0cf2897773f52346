package io.kvraft.client;

import io.kvraft.client.config.ClientConfig;

import java.util.Locale;

/**
 * How a read (a get, a scan, an iterator page, containsKey) is served; a client's default is its YAML's
 * {@code readMode}, and {@link KvClient#withReadMode} makes a view with another.
 */
public enum ReadMode {
    /** Linearizable: the region leader confirms it still leads (a ReadIndex round, or the log entry in flight). */
    READ_INDEX,
    /** Linearizable while server clocks drift less than the lease; no round. */
    LEADER_LEASE,
    /** Linearizable, served by any replica in turn once the leader confirms its ReadIndex and the replica applied it. */
    FOLLOWER,
    /** Any replica's applied state, no round: cheapest, but may miss recent acknowledged writes. */
    STALE;

    /**
     * The mode a {@code readMode} value of the client's YAML names ({@code read_index} is READ_INDEX, ...).
     *
     * @throws IllegalArgumentException for a name not in {@link ClientConfig#READ_MODES}, listing them
     */
    public static ReadMode of(String name) {
        if (!ClientConfig.READ_MODES.contains(name)) {
            throw new IllegalArgumentException("readMode must be one of " + String.join(", ", ClientConfig.READ_MODES)
                    + ", got " + name);
        }
        return valueOf(name.toUpperCase(Locale.ROOT));
    }
}
