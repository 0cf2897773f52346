package io.kvraft.client;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.common.KvException;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The asynchronous API of the store. Every call routes its keys to the leaders of their regions,
 * retries retriable errors until the operation's deadline, and completes exceptionally with a
 * {@link KvException} carrying an {@link io.kvraft.common.ErrorCode} otherwise.
 * Callers who want to block wrap a call in {@link #sync}: {@code byte[] v = KvClient.sync(client.get(k));}.
 *
 * <p>Keys are ordered as unsigned bytes. In a range, a null or empty start is the lowest key and a
 * null or empty end is past the highest. Operations on several keys or a range are carried out region by
 * region: atomic and linearizable within a region, neither across regions (one exception:
 * {@link #compareAndPutAll}, which takes only keys of one region). Reads use the client's read mode
 * ({@code readMode} in its YAML) unless made through a {@link #withReadMode} view. The cluster's admin operations
 * (regions, splits, replica moves, the cluster map, recovery, backups) are on {@link #admin}.
 */
public interface KvClient extends AutoCloseable {

    /**
     * Waits for {@code call} and returns its result; a failure is thrown as the {@link KvException} it
     * carries (not wrapped in a CompletionException). The call's own deadline bounds the wait.
     */
    static <T> T sync(CompletableFuture<T> call) {
        try {
            return call.join();
        } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
            throw KvException.unwrap(e);
        }
    }

    /**
     * A view of this client whose reads (gets, scans, iterators, containsKey) use {@code mode}; it shares the
     * client's connections, routes and batching, and closing it closes the client.
     * <ul>
     * <li>READ_INDEX: linearizable; the region leader confirms it still leads (a ReadIndex round, or the log
     * entry in flight). The default.</li>
     * <li>LEADER_LEASE: linearizable while server clocks drift less than the lease; no round.</li>
     * <li>FOLLOWER: linearizable, served by any replica in turn once the leader confirms its ReadIndex and the
     * replica has applied up to it: spreads reads over all nodes.</li>
     * <li>STALE: any replica's applied state, no round: cheapest, but may miss recent acknowledged writes.</li>
     * </ul>
     */
    KvClient withReadMode(ReadMode mode);

    /** The read mode of this client or view. */
    ReadMode readMode();

    /** Stores {@code value} under {@code key}; completes once a majority has it in the log and it is applied. */
    CompletableFuture<Void> put(byte[] key, byte[] value);

    /** Reads {@code key} (linearizable by default, see {@link #withReadMode}); completes with {@code null} when absent. */
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

    /** Whether {@code key} has a value (a read, in this client's read mode). */
    CompletableFuture<Boolean> containsKey(byte[] key);

    /** Stores {@code value} under {@code key}; completes with the value it replaced, or null when there was none. */
    CompletableFuture<byte[]> getAndPut(byte[] key, byte[] value);

    /** Stores {@code value} only when {@code key} is absent; completes with null when it did, else with the existing value. */
    CompletableFuture<byte[]> putIfAbsent(byte[] key, byte[] value);

    /**
     * Appends {@code value} to the value of {@code key} (RheaKV's {@code merge}, without its ',' between the parts);
     * a key without a value takes {@code value} as it is. Fails with INVALID_ARGUMENT, changing nothing, when the
     * result would be longer than the server's {@code limits.maxValueBytes}. Like every write, an append whose fate
     * is unknown is never retried.
     */
    CompletableFuture<Void> append(byte[] key, byte[] value);

    /** Removes many keys, possibly in many regions; not atomic: on failure some may have been removed. */
    CompletableFuture<Void> deleteBatch(List<byte[]> keys);

    /**
     * Every compare-and-put in {@code entries} takes effect, or none does; completes with which. All keys must
     * be in one region and distinct (at most 1,000 entries): otherwise it fails with INVALID_ARGUMENT naming
     * the keys outside the first key's region, and changes nothing.
     */
    CompletableFuture<Boolean> compareAndPutAll(List<CasEntry> entries);

    /**
     * The pairs of [startKey, endKey) in ascending key order, at most {@code limit} (1 or more); values are
     * null when {@code keysOnly}. Each region's part is read as a get is (this client's read mode); the parts
     * are read one after the other, so the whole is not one snapshot. Use {@link #iterator} for ranges too
     * large to hold.
     */
    CompletableFuture<List<KeyValue>> scan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly);

    /** As {@link #scan}, in descending key order from just below endKey. */
    CompletableFuture<List<KeyValue>> reverseScan(byte[] startKey, byte[] endKey, int limit, boolean keysOnly);

    /**
     * The pairs of [startKey, endKey) in ascending order, fetched lazily {@code pageSize} at a time (a server
     * may return fewer per page: {@code limits.maxScanBytes}). Each page goes on from the last key returned,
     * so the iterator keeps working while regions split or move. See {@link KvIterator}.
     */
    KvIterator iterator(byte[] startKey, byte[] endKey, int pageSize);

    /** As {@link #iterator}, in descending order. */
    KvIterator reverseIterator(byte[] startKey, byte[] endKey, int pageSize);

    /**
     * Removes every key in [startKey, endKey): one log entry per region the range touches (no per-key
     * tombstones), linearizable per region, not atomic across regions. Like every write it is not retried
     * when its outcome is unknown; then some regions' parts may be done and others not.
     */
    CompletableFuture<Void> deleteRange(byte[] startKey, byte[] endKey);

    // ---- sequences ------------------------------------------------------------------------------

    /**
     * Takes {@code step} numbers from the sequence named {@code seqKey}: completes with [start, end), end - start =
     * step, numbers no other call, before or after, ever gets (across leader changes, restarts and snapshot
     * installs), unless the sequence is reset. A fresh sequence starts at 0. Sequences live apart from the pairs:
     * a key may name a value and a sequence, and scans and deletes never see sequences. Concurrent calls on one
     * key are batched into one log entry like writes. A call whose answer was lost is retried; its range is then
     * skipped, never handed out. Fails with INVALID_ARGUMENT when step is below 1 or above 2^40, or when the
     * range would pass {@link Long#MAX_VALUE}.
     */
    CompletableFuture<SequenceRange> getSequence(byte[] seqKey, long step);

    /** The next number {@code seqKey} would hand out (0 for a fresh sequence), taking none. One log entry, as RheaKV's. */
    CompletableFuture<Long> getLatestSequence(byte[] seqKey);

    /**
     * Starts the sequence again at 0; completes with whether it had handed out any number. Numbers handed out
     * before are handed out again afterwards: an operator's tool, not for running code. Never retried when its
     * outcome is unknown.
     */
    CompletableFuture<Boolean> resetSequence(byte[] seqKey);

    // ---- locks ----------------------------------------------------------------------------------

    /**
     * Tries to take the distributed lock {@code key} for {@code leaseMs}, polling with a growing pause (5 ms to
     * 0.5 s, never past the holder's lease) for up to {@code waitMs} while another holder has it; completes with
     * a {@link LockHandle}, or null when the wait ran out. The holder is this client: taking a key it holds
     * already is re-entrant (counted; the lease extended; the same fencing token). While held, a watchdog
     * renews the lease every third of it; see {@link LockHandle} for when a lock counts as lost.
     *
     * <p>Expiry is decided by the servers on their leader's monotonic clock, stamped into the log, never a
     * follower's; a leader change gives every held lock a full lease again (as etcd does), so a lease only
     * ever lasts longer on the servers than the holder believes. Fails with INVALID_ARGUMENT for an empty key,
     * a lease outside 1 ms to 1 day or a negative wait; an acquire whose outcome is unknown (TIMEOUT) is not
     * retried, and a lock it may have taken runs out after its lease. Locks live apart from the pairs.
     */
    CompletableFuture<LockHandle> tryLock(byte[] key, long leaseMs, long waitMs);

    /** As {@link #tryLock} with no end to the wait (until the client closes). */
    CompletableFuture<LockHandle> lock(byte[] key, long leaseMs);

    /**
     * The locks whose keys start with {@code prefix} (null or empty: all), free ones included (they keep their
     * last fencing token), as each region's leader sees them now: holder, token, count and lease left.
     */
    CompletableFuture<List<LockInfo>> locks(byte[] prefix);

    /** The lock {@code key} as its region's leader sees it now, or null when it was never taken. */
    CompletableFuture<LockInfo> lockInfo(byte[] key);

    // ---- admin ----------------------------------------------------------------------------------

    /**
     * The admin view of this client (regions, splits and merges, replica moves, the cluster map and its nodes, forced
     * recovery, backups): it shares the client's connections and routes; closing it closes the client.
     */
    KvAdmin admin();

    /** Closes the client; a read-mode view or the admin view closes the client it was made from. */
    @Override
    void close();
}
