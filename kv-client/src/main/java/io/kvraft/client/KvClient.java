package io.kvraft.client;

import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.RegionInfo;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The asynchronous API of the store. Every call routes its keys to the leaders of their regions,
 * retries retriable errors until the operation's deadline, and completes exceptionally with a
 * {@link KvException} carrying an {@link io.kvraft.common.proto.KvProto.ErrorCode} otherwise.
 * Callers who want to block wrap a call in {@link #sync}: {@code byte[] v = KvClient.sync(client.get(k));}.
 *
 * <p>Keys are ordered as unsigned bytes. In a range, a null or empty start is the lowest key and a
 * null or empty end is past the highest. Operations on several keys or a range are carried out region by
 * region: atomic and linearizable within a region, neither across regions (one exception:
 * {@link #compareAndPutAll}, which takes only keys of one region). Reads use the client's read mode
 * ({@code readMode} in its YAML) unless made through a {@link #withReadMode} view.
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

    // ---- restore ----------------------------------------------------------------------------------

    /**
     * For restoring a backup (see {@code Restore}): moves the sequence and lock counters of {@code key} forward to
     * those of {@code record}, the key's system record as a backup holds it, never back: the sequence's next number
     * becomes the larger of both, and the lock's fencing tokens carry on above the record's. Nothing else is taken:
     * a lock held in the backup is not restored (its lease was on the old leaders' clocks), and a lock held now
     * stays held by its holder under its token. Routed and batched like writes; retried when its outcome is unknown,
     * since applying it again changes nothing. Fails with INVALID_ARGUMENT for an empty or oversized key, or a
     * counter of 2^63 or more.
     */
    CompletableFuture<Void> restoreSystemRecord(byte[] key, io.kvraft.common.proto.KvProto.CoordRecord record);

    /**
     * The cluster's regions as one server sees them now: range, epoch, peers, a replica move's learners, leader, term,
     * applied index.
     */
    CompletableFuture<List<RegionInfo>> regions();

    /**
     * Every region as the cluster map knows it, asked of any one server: the map's record of the regions with the
     * nodes' reports over it (once per {@code placement.intervalMs}, so up to that old) from the map's leader, named by
     * the answer's {@code map_leader}; or, when that leader does not answer, the asked server's own copy of the record
     * ({@code from_copy}: leaders only of the regions it holds). Fails with the server's error (NO_LEADER, UNAVAILABLE)
     * when neither covers the whole key space, or UNAVAILABLE from servers that predate such lookups.
     */
    default CompletableFuture<io.kvraft.common.proto.KvProto.RegionsResponse> mapRegions() {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot ask the cluster map"));
    }

    /**
     * Captures the region holding {@code key} for a backup: its leader freezes the region's data at a log entry
     * it proposes now (so the capture holds every write acknowledged before this call) and keeps it as a session
     * to read with {@link RegionCapture#page}. Retried like a read until the operation's deadline.
     */
    default CompletableFuture<RegionCapture> captureRegion(byte[] key) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot take backups"));
    }

    /**
     * Splits region {@code regionId} at {@code atKey} (null or empty: about its middle key), on its leader: the
     * region keeps the keys below the split key and a new region, on the same nodes, takes the rest; both get a new
     * epoch, and no data moves. Returns the two regions as they are right after the split (the new one still
     * electing its leader). Fails with INVALID_ARGUMENT when the key is not strictly inside the region (or it has
     * too few keys to split at its middle), REGION_NOT_FOUND for an unknown region, BUSY while a split of the
     * region is under way, STALE_EPOCH when the region changed before the split applied.
     */
    default CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot split regions"));
    }

    /**
     * Merges region {@code rightId} into region {@code leftId}, on the left region's leader: the left region must end
     * where the right one starts, on the same nodes. The left region takes the union of both ranges with a new epoch;
     * the right one's group is stopped and its files removed on every node, and its id is never used again. No data
     * moves. Returns the merged region. A merge happens whole or not at all: one that cannot finish (a replica of the
     * right region that does not get its final data in time, a leader change, a node crash) is rolled back, and the
     * call fails with the reason. Fails with INVALID_ARGUMENT for regions that are not adjacent (or the same),
     * REGION_NOT_FOUND for an unknown region, BUSY while either region is in another merge, STALE_EPOCH when a
     * region changed before the merge applied, UNAVAILABLE when the merge was rolled back.
     */
    default CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot merge regions"));
    }

    /**
     * Moves region {@code regionId}'s replica on node {@code from} to node {@code to} (host:port of cluster nodes), on
     * the region's leader, by jraft's steps: {@code to} joins as a learner and catches up from a snapshot and the log,
     * then one configuration change makes it a voter and takes {@code from} out, and {@code from} drops its replica.
     * Returns the region as it is after the move. Fails with INVALID_ARGUMENT when {@code from} holds no replica of it,
     * {@code to} holds one already or is not a node of the cluster, REGION_NOT_FOUND for an unknown region, BUSY while
     * the region splits, merges or moves another replica, UNAVAILABLE when the move would leave the region without a
     * majority or {@code to} did not catch up in time (then nothing changed), or when the leader changed during the
     * configuration change (then its outcome is unknown: {@link #regions} shows the replicas). Fails with NO_LEADER
     * or NOT_LEADER (and the nodes it asked, in the message) when no leader of the region takes it within
     * {@code operationTimeoutMs}: a region that lost a majority of its replicas has none. The move itself may take up
     * to 10 minutes (a large region's snapshot).
     */
    default CompletableFuture<RegionInfo> moveReplica(int regionId, String from, String to) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot move replicas"));
    }

    /**
     * Rebuilds region {@code regionId}'s replica on {@code node}, a voter of the region whose node lost its data (a
     * wiped disk started again at the same address): that voter is taken out of the region's configuration, then it
     * joins again by the steps of {@link #moveReplica}. Refused with INVALID_ARGUMENT when {@code node} is no voter of
     * the region or still holds a replica of it, UNAVAILABLE when the others are not a majority on their own.
     */
    default CompletableFuture<RegionInfo> rebuildReplica(int regionId, String node) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot rebuild replicas"));
    }

    /**
     * Adds a replica of region {@code regionId} on node {@code to} by the steps of {@link #moveReplica}, dropping none:
     * for a region left with fewer replicas than {@code replication.factor}.
     */
    default CompletableFuture<RegionInfo> addReplica(int regionId, String to) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot add replicas"));
    }

    /**
     * A forced recovery of a region, as {@link #planRecovery} found it.
     *
     * @param confVer   the conf version of the survivors' configuration
     * @param voters    the region's voters in it, sorted
     * @param survivors the voters whose node is live and holds a replica of it at that conf version, sorted: fewer
     *                  than a majority of the voters; they become the region's voters
     * @param lost      the other voters, each on a node the cluster map lists as removed
     * @param applied   the highest applied index among the survivors: writes acknowledged after it may be lost
     * @param replicas  each survivor's replica as its node reported it
     */
    record RecoveryPlan(int regionId, long confVer, List<String> voters, List<String> survivors, List<String> lost,
                        long applied, java.util.Map<String, RegionInfo> replicas) {
    }

    /**
     * Checks whether region {@code regionId} can be recovered by force, and how: its replicas on the live nodes (asked
     * directly) must know no leader, be fewer than a majority of its voters, and its other voters must be on nodes the
     * cluster map lists as removed ({@code node remove NODE --force}). Changes nothing. Fails with INVALID_ARGUMENT
     * naming the reason otherwise, REGION_NOT_FOUND when no live node holds a replica of it.
     */
    default CompletableFuture<RecoveryPlan> planRecovery(int regionId) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot recover regions"));
    }

    /**
     * What {@link #surveyRecovery} found over every region of the cluster map.
     *
     * @param plans    a plan for each region that lost a majority of its voters and can be recovered now
     * @param refused  each region that lost its majority but cannot be recovered now, by id, with why (as
     *                 {@link #planRecovery} would refuse it: a lost voter's node not removed yet, no live replica)
     * @param whole    how many regions need nothing: a replica knows a leader, or a majority of the voters is live
     */
    record RecoverySurvey(List<RecoveryPlan> plans, java.util.Map<Integer, KvException> refused, int whole) {
    }

    /**
     * {@link #planRecovery} for every region of the cluster map at once, from one answer of each live node. Changes
     * nothing. Fails with UNAVAILABLE when a live node does not list its regions (its replicas could make a region
     * whole).
     */
    default CompletableFuture<RecoverySurvey> surveyRecovery() {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot recover regions"));
    }

    /**
     * Recovers a region by force, as {@code plan} says: each survivor takes the survivors as the region's voters
     * (jraft's resetPeers), they elect a leader among themselves, and the cluster map's placement then adds replicas
     * until the region has {@code replication.factor} again. Writes that reached only the lost replicas are gone,
     * acknowledged ones among them. Completes with the new leader's view of the region once one leads voters without
     * the lost ones (placement may have added one already) (within
     * {@code operationTimeoutMs}); each survivor checks the plan's conditions again and refuses, nothing changed, when
     * one no longer holds (INVALID_ARGUMENT).
     */
    default CompletableFuture<RegionInfo> recoverRegion(RecoveryPlan plan) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot recover regions"));
    }

    /**
     * A forced recovery of the cluster map's own group, as {@link #planMapRecovery} found it.
     *
     * @param voters       the group's voters, sorted, as the surviving voter with the longest log has them
     * @param survivors    the voters whose node answered, sorted: fewer than a majority; they become the voters
     * @param lost         the other voters: their nodes are marked removed in the map once a survivor leads it
     * @param lastLogIndex the longest survivor log's last index: map changes after it may be lost
     * @param replicas     each survivor's replica of the group as its node answered
     */
    record MapRecoveryPlan(List<String> voters, List<String> survivors, List<String> lost, long lastLogIndex,
                           java.util.Map<String, io.kvraft.common.proto.KvProto.MapReplicaResponse> replicas) {
    }

    /**
     * Checks whether the cluster map's own group can be recovered by force, and how: every node this client can reach
     * (its servers, the nodes their answers name) is asked for its replica of the group, which needs no leader. Refused
     * (INVALID_ARGUMENT, naming the reason) while a replica knows a leader, when no answering node is a voter, or
     * while the live voters are a majority; UNAVAILABLE when no node answers. Changes nothing.
     */
    default CompletableFuture<MapRecoveryPlan> planMapRecovery() {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot recover the cluster map"));
    }

    /**
     * Recovers the cluster map's group by force, as {@code plan} says: each survivor takes the survivors as the group's
     * voters (jraft's resetPeers), they elect a leader among themselves, and that leader marks every lost voter's node
     * REMOVED before anything else (so a node that comes back with its old copy is refused and stops); placement then
     * adds voters on the live nodes. Map changes only the lost voters had are gone. Completes with the map's answer
     * ({@link #cluster}) once a survivor leads and the lost nodes are removed (within {@code operationTimeoutMs}). Each
     * survivor checks the plan's conditions again and refuses, nothing changed, when one no longer holds. Regions that
     * lost their majority with those nodes are recovered after it ({@link #surveyRecovery}).
     */
    default CompletableFuture<io.kvraft.common.proto.KvProto.ClusterResponse> recoverMap(MapRecoveryPlan plan) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot recover the cluster map"));
    }

    /** Each reachable node's store id (the random id of its data directory), by host:port. */
    default CompletableFuture<java.util.Map<String, String>> storeIds() {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot list store ids"));
    }

    /**
     * The cluster map as its leader (the leader of the {@code kv-meta} Raft group) holds it: the cluster id, the
     * replication factor and each node's state (UP, DRAINING, REMOVED); with that leader's view of each node (live, its
     * replicas and leaders, disk use), the map group's voters and learners, the replica moves in progress and the
     * regions. Asked of the configured servers and the route table's nodes in turn, following NOT_LEADER hints and
     * retrying while no node knows a leader, until the operation's deadline (see {@link io.kvraft.client.route.MapLeaderCalls}). Fails with
     * UNAVAILABLE or NO_LEADER, naming the nodes asked, when no map leader answered in time (e.g. servers without a
     * cluster map).
     */
    default CompletableFuture<io.kvraft.common.proto.KvProto.ClusterResponse> cluster() {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot read the cluster map"));
    }

    /**
     * Sets node {@code endpoint}'s state in the cluster map, on the map's leader (found as {@link #cluster} finds it):
     * DRAINING moves its replicas (and its map voter) to the other nodes and gives it no new ones; UP undoes a drain;
     * REMOVED takes it out for good, and a node that starts with its data directory is refused. Completes with the map
     * after the change (at once, unchanged, when the node has that state already). Fails with INVALID_ARGUMENT, nothing
     * changed, for an endpoint that is not host:port or not a node of the cluster, a removed node, a drain or remove that
     * would leave fewer UP nodes than the replication factor, or a remove while the node still holds replicas or a map
     * voter, unless {@code force} and the node is down (its replicas are then rebuilt on the other nodes).
     */
    default CompletableFuture<io.kvraft.common.proto.KvProto.NodeStateResponse> nodeState(
            String endpoint, io.kvraft.common.proto.KvProto.NodeState state, boolean force) {
        return CompletableFuture.failedFuture(new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                "this client cannot change node states"));
    }

    @Override
    void close();
}
