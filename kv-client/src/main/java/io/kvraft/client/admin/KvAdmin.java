package io.kvraft.client.admin;

import io.kvraft.common.KvException;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The cluster's admin operations: its regions and their shape (split, merge, replica moves), the cluster map and its
 * nodes, forced recovery after lost majorities, and what backups and restores need. Get one from
 * {@code KvClient.admin()} (sharing the client's connections and routes) or {@code KvClients.admin(config)}. Every
 * call is asynchronous and completes exceptionally with a {@link KvException} carrying its
 * {@link io.kvraft.common.ErrorCode}; {@code KvClient.sync} waits for one.
 */
public interface KvAdmin extends AutoCloseable {

    /**
     * The cluster's regions as one server sees them now: range, epoch, peers, a replica move's learners, leader, term,
     * applied index.
     */
    CompletableFuture<List<RegionInfo>> regions();

    /**
     * Every region as the cluster map knows it, asked of any one server: the map's record of the regions with the
     * nodes' reports over it (once per {@code placement.intervalMs}, so up to that old) from the map's leader, named by
     * the answer's {@link MapRegions#mapLeader}; or, when that leader does not answer, the asked server's own copy of
     * the record ({@link MapRegions#fromCopy}: leaders only of the regions it holds). Fails with the server's error
     * (NO_LEADER, UNAVAILABLE) when neither covers the whole key space, or UNAVAILABLE from servers that predate such
     * lookups.
     */
    CompletableFuture<MapRegions> mapRegions();

    /**
     * Captures the region holding {@code key} for a backup: its leader freezes the region's data at a log entry
     * it proposes now (so the capture holds every write acknowledged before this call) and keeps it as a session
     * to read with {@link RegionCapture#page}. Retried like a read until the operation's deadline.
     */
    CompletableFuture<RegionCapture> captureRegion(byte[] key);

    /**
     * Splits region {@code regionId} at {@code atKey} (null or empty: about its middle key), on its leader: the
     * region keeps the keys below the split key and a new region, on the same nodes, takes the rest; both get a new
     * epoch, and no data moves. Returns the two regions as they are right after the split (the new one still
     * electing its leader). Fails with INVALID_ARGUMENT when the key is not strictly inside the region (or it has
     * too few keys to split at its middle), REGION_NOT_FOUND for an unknown region, BUSY while a split of the
     * region is under way, STALE_EPOCH when the region changed before the split applied.
     */
    CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey);

    /**
     * Merges region {@code rightId} into region {@code leftId}, on the left region's leader: the left region must end
     * where the right one starts, on the same nodes. The left region takes the union of both ranges with a new epoch;
     * the right one's group is stopped and its files removed on every node, and its id is never used again. No data
     * moves. Returns the merged region. A merge happens whole or not at all: one that cannot finish (a replica of the
     * right region that does not get its final data in time, a leader change, a node crash) is rolled back, and the
     * call fails with the reason. Fails with INVALID_ARGUMENT for regions that are not adjacent (or the same) or not on
     * the same nodes, REGION_NOT_FOUND for an unknown region, BUSY while either region is in another merge,
     * STALE_EPOCH when a region changed before the merge applied, UNAVAILABLE when the merge was rolled back.
     */
    CompletableFuture<RegionInfo> merge(int leftId, int rightId);

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
    CompletableFuture<RegionInfo> moveReplica(int regionId, String from, String to);

    /**
     * Rebuilds region {@code regionId}'s replica on {@code node}, a voter of the region whose node lost its data (a
     * wiped disk started again at the same address): that voter is taken out of the region's configuration, then it
     * joins again by the steps of {@link #moveReplica}. Refused with INVALID_ARGUMENT when {@code node} is no voter of
     * the region or still holds a replica of it, UNAVAILABLE when the others are not a majority on their own.
     */
    CompletableFuture<RegionInfo> rebuildReplica(int regionId, String node);

    /**
     * Adds a replica of region {@code regionId} on node {@code to} by the steps of {@link #moveReplica}, dropping none:
     * for a region left with fewer replicas than {@code replication.factor}.
     */
    CompletableFuture<RegionInfo> addReplica(int regionId, String to);

    /**
     * Checks whether region {@code regionId} can be recovered by force, and how: its replicas on the live nodes (asked
     * directly) must know no leader, be fewer than a majority of its voters, and its other voters must be on nodes the
     * cluster map lists as removed ({@code node remove NODE --force}). Changes nothing. Fails with INVALID_ARGUMENT
     * naming the reason otherwise, REGION_NOT_FOUND when no live node holds a replica of it.
     */
    CompletableFuture<RecoveryPlan> planRecovery(int regionId);

    /**
     * {@link #planRecovery} for every region of the cluster map at once, from one answer of each live node. Changes
     * nothing. Fails with UNAVAILABLE when a live node does not list its regions (its replicas could make a region
     * whole).
     */
    CompletableFuture<RecoverySurvey> surveyRecovery();

    /**
     * Recovers a region by force, as {@code plan} says: each survivor takes the survivors as the region's voters
     * (jraft's resetPeers), they elect a leader among themselves, and the cluster map's placement then adds replicas
     * until the region has {@code replication.factor} again. Writes that reached only the lost replicas are gone,
     * acknowledged ones among them. Completes with the new leader's view of the region once one leads voters without
     * the lost ones (placement may have added one already) (within
     * {@code operationTimeoutMs}); each survivor checks the plan's conditions again and refuses, nothing changed, when
     * one no longer holds (INVALID_ARGUMENT).
     */
    CompletableFuture<RegionInfo> recoverRegion(RecoveryPlan plan);

    /**
     * Checks whether the cluster map's own group can be recovered by force, and how: every node this client can reach
     * (its servers, the nodes their answers name) is asked for its replica of the group, which needs no leader. Refused
     * (INVALID_ARGUMENT, naming the reason) while a replica knows a leader, when no answering node is a voter, or
     * while the live voters are a majority; UNAVAILABLE when no node answers. Changes nothing.
     */
    CompletableFuture<MapRecoveryPlan> planMapRecovery();

    /**
     * Recovers the cluster map's group by force, as {@code plan} says: each survivor takes the survivors as the group's
     * voters (jraft's resetPeers), they elect a leader among themselves, and that leader marks every lost voter's node
     * REMOVED before anything else (so a node that comes back with its old copy is refused and stops); placement then
     * adds voters on the live nodes. Map changes only the lost voters had are gone. Completes with the map's answer
     * ({@link #cluster}) once a survivor leads and the lost nodes are removed (within {@code operationTimeoutMs}). Each
     * survivor checks the plan's conditions again and refuses, nothing changed, when one no longer holds. Regions that
     * lost their majority with those nodes are recovered after it ({@link #surveyRecovery}).
     */
    CompletableFuture<ClusterInfo> recoverMap(MapRecoveryPlan plan);

    /** Each reachable node's store id (the random id of its data directory), by host:port. */
    CompletableFuture<Map<String, String>> storeIds();

    /**
     * The cluster map as its leader (the leader of the {@code kv-meta} Raft group) holds it: the cluster id, the
     * replication factor and each node's state (UP, DRAINING, REMOVED); with that leader's view of each node (live, its
     * replicas and leaders, disk use), the map group's voters and learners, the replica moves in progress and the
     * regions. Asked of the configured servers and the route table's nodes in turn, following NOT_LEADER hints and
     * retrying while no node knows a leader, until the operation's deadline (see
     * {@link io.kvraft.client.route.MapLeaderCalls}). Fails with UNAVAILABLE or NO_LEADER, naming the nodes asked, when
     * no map leader answered in time (e.g. servers without a cluster map).
     */
    CompletableFuture<ClusterInfo> cluster();

    /**
     * Sets node {@code endpoint}'s state in the cluster map, on the map's leader (found as {@link #cluster} finds it):
     * DRAINING moves its replicas (and its map voter) to the other nodes and gives it no new ones; UP undoes a drain;
     * REMOVED takes it out for good, and a node that starts with its data directory is refused. Completes with the map
     * after the change (at once, unchanged, when the node has that state already): its id, factor, version and nodes,
     * with no leader's view of them ({@link ClusterInfo.Node#status} null) and no map group, moves or regions. Fails
     * with INVALID_ARGUMENT, nothing changed, for an endpoint that is not host:port or not a node of the cluster, a
     * removed node, a drain or remove that would leave fewer UP nodes than the replication factor, or a remove while
     * the node still holds replicas or a map voter, unless {@code force} and the node is down (its replicas are then
     * rebuilt on the other nodes).
     */
    CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state, boolean force);

    /**
     * For restoring a backup (see {@code Restore}): moves the sequence and lock counters of {@code key} forward to
     * those of {@code record}, the key's system record as a backup holds it (the value of a pair of
     * {@link RegionCapture#systemPage}), never back: the sequence's next number becomes the larger of both, and the
     * lock's fencing tokens carry on above the record's. Nothing else is taken: a lock held in the backup is not
     * restored (its lease was on the old leaders' clocks), and a lock held now stays held by its holder under its
     * token. Routed and batched like writes; retried when its outcome is unknown, since applying it again changes
     * nothing. Fails with INVALID_ARGUMENT for an empty or oversized key, a record that is not one, or a counter of
     * 2^63 or more.
     */
    CompletableFuture<Void> restoreSystemRecord(byte[] key, byte[] record);

    /**
     * Closes the connections this view uses: those of {@code KvClients.admin}'s own, or the client's for
     * {@code KvClient.admin()} (closing it closes the client, as closing a read-mode view does).
     */
    @Override
    void close();
}
