package io.kvraft.client;

import io.kvraft.client.proto.KvProto.RegionInfo;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The asynchronous API of the store. Every call routes its keys to the leaders of their regions,
 * retries retriable errors until the operation's deadline, and completes exceptionally with a
 * {@link KvException} carrying an {@link io.kvraft.client.proto.KvProto.ErrorCode} otherwise.
 * Callers who want to block call {@code join()}.
 */
public interface KvClient extends AutoCloseable {

    /** Stores {@code value} under {@code key}; completes once a majority has it in the log and it is applied. */
    CompletableFuture<Void> put(byte[] key, byte[] value);

    /** A linearizable read (ReadIndex by default); completes with {@code null} when the key is absent. */
    CompletableFuture<byte[]> get(byte[] key);

    /** Removes {@code key}; completes with whether it existed. */
    CompletableFuture<Boolean> delete(byte[] key);

    /** Reads many keys, possibly in many regions; the values come back in the order of {@code keys}, null for absent. */
    CompletableFuture<List<byte[]>> multiGet(List<byte[]> keys);

    /** Writes many pairs, possibly in many regions; not atomic: on failure some pairs may have been written. */
    CompletableFuture<Void> batchPut(List<KeyValue> entries);

    /**
     * Puts {@code update} if the current value equals {@code expect} ({@code null} expects the key absent);
     * completes with whether it took effect. Like every write, a CAS whose fate is unknown (timeout, lost
     * connection after sending) is never retried: it fails with TIMEOUT or UNAVAILABLE.
     */
    CompletableFuture<Boolean> compareAndPut(byte[] key, byte[] expect, byte[] update);

    /** The cluster's regions as one server sees them now: range, epoch, peers, leader, term, applied index. */
    CompletableFuture<List<RegionInfo>> regions();

    @Override
    void close();
}
