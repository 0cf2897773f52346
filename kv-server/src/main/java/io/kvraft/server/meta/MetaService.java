package io.kvraft.server.meta;

import io.kvraft.server.raft.Processors;

import io.kvraft.server.balance.Placement;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterRequest;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.JoinRequest;
import io.kvraft.common.proto.KvProto.JoinResponse;
import io.kvraft.common.proto.KvProto.MapReplicaRequest;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeReport;
import io.kvraft.common.proto.KvProto.NodeReportResponse;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStateRequest;
import io.kvraft.common.proto.KvProto.NodeStateResponse;
import io.kvraft.common.proto.KvProto.NodeStatus;
import io.kvraft.common.proto.KvProto.RecoverMapRequest;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.proto.KvProto.ReplicaMove;
import io.kvraft.common.rpc.Transport;
import io.kvraft.common.RegionViews;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import io.kvraft.common.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The cluster's membership on one node, around its replica of the map's group ({@link MetaGroup}):
 * <ul>
 *   <li>every node registers at start (a node that joins asks to; a removed node, or one of another cluster, is told so
 *       and stops) and then reports its regions to the map's leader once per {@code placement.intervalMs}, in one
 *       message;</li>
 *   <li>on the map's leader: the join, drain, undrain and remove requests; the map's own replicas (every node a
 *       learner, three voters kept on live UP nodes); and placement ({@link Placement}), up to
 *       {@code placement.movesAtOnce} replica moves of different regions at once (a balancing move alone), each asked
 *       of the region's leader like {@code kv-client move-replica}.</li>
 * </ul>
 */
public final class MetaService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MetaService.class);
    static final String CLUSTER_ID_FILE = "CLUSTER_ID";
    private static final long RPC_TIMEOUT_MS = 5_000;
    /** A region whose move failed is left alone this long. */
    private static final long RETRY_AFTER_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int DISK_EVERY_REPORTS = 10;
    /** How long a node waits for the map's leader to answer a route lookup it relays (clients wait 5 s by default). */
    static final long RELAY_TIMEOUT_MS = 1_500;
    /** A new leader of the map answers route lookups once every node had this many intervals to report to it. */
    private static final int LOOKUP_AFTER_INTERVALS = 2;

    /** Moves replicas: the cluster's own client API (region leader found and retried there). */
    public interface Mover {
        CompletableFuture<RegionInfo> move(int regionId, String from, String to);

        /** Rebuilds {@code node}'s replica of the region in place (its data is gone). */
        CompletableFuture<RegionInfo> rebuild(int regionId, String node);

        /** Adds a replica of the region on {@code to}. */
        CompletableFuture<RegionInfo> add(int regionId, String to);
    }

    private record Report(NodeReport report, long atNanos) {
    }

    private record Running(Placement.Move move, long startNanos) {
    }

    /** A move that ended at {@code endNanos}: {@code done} when it made its change. */
    private record Settling(Placement.Move move, long endNanos, boolean done) {
    }

    private final ServerConfig config;
    private final RegionHost host;
    private final Transport peers;
    private final Supplier<Mover> mover;
    private final Executor housekeeping;
    private final Consumer<String> fatal;
    private final String nodeId;
    private final Path dataDir;
    private final MetaGroup group;
    private final MapRecovery recovery;
    private final long intervalNanos;
    private final long downAfterNanos;

    private volatile String clusterId;
    private volatile boolean registered;
    private volatile boolean registering;
    /**
     * Per region whose move ended, when (nanoTime): placement leaves the region alone until every live node reported
     * after it, and balances only once no region is left here (a report from before a move's end shows the region as it
     * was).
     */
    private final Map<Integer, Settling> settling = new ConcurrentHashMap<>();
    private volatile boolean closed;
    /** The map's leader as a NOT_LEADER answer named it (a node that is no replica of the map yet knows no other). */
    private volatile String answeredHint = "";
    private int registerTries;
    private int asked; // round robin over the known nodes, for a node that knows no leader yet
    private int reportsSent;
    private long diskBytes;

    // the map's leader's own state, rebuilt from reports when a node becomes leader
    private final Map<String, Report> reports = new ConcurrentHashMap<>();
    private volatile long leaderSinceNanos;
    /** The moves under way, by region (at most {@code placement.movesAtOnce}). */
    private final Map<Integer, Running> running = new ConcurrentHashMap<>();
    private volatile boolean metaChanging;
    private volatile boolean recording;
    private volatile boolean recordingDown;
    private final Map<Integer, Long> retryAt = new ConcurrentHashMap<>();
    private final AtomicLong movesDone = new AtomicLong();
    /** Voters whose live node reports no replica of their region, since when (nanoTime). */
    private final Map<String, Long> missingSince = new ConcurrentHashMap<>();
    /** How long a voter's replica must stay missing from its node's reports before it is rebuilt. */
    private static final long MISSING_CONFIRM_NANOS = TimeUnit.SECONDS.toNanos(10);

    /**
     * @param fatal called once when the cluster refuses this node for good (removed, or another cluster's): the node
     *              must stop
     */
    public MetaService(ServerConfig config, RegionHost host, RpcServer rpcServer, Transport peers, Supplier<Mover> mover,
                       Executor housekeeping, String nodeId, Consumer<String> fatal) {
        this.config = config;
        this.host = host;
        this.peers = peers;
        this.mover = mover;
        this.housekeeping = housekeeping;
        this.fatal = fatal;
        this.nodeId = nodeId;
        this.dataDir = Path.of(config.dataDir());
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().intervalMs());
        this.downAfterNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().downAfterMs());
        this.clusterId = readClusterId(dataDir);
        // the nodes as this node last knew them: a node started again applies its replica of the map only once a leader
        // of it answers, and finds one (or learns it was removed) by asking these; its YAML may name none that is left
        List<String> known = readKnownNodes(dataDir);
        if (!known.isEmpty()) {
            host.members(known);
        }
        this.group = new MetaGroup(config, rpcServer, this::mapChanged, this::leaderChanged);
        this.recovery = new MapRecovery(group, config.endpoint(), config.raft().startupElectionTimeoutMs());
        rpcServer.registerProcessor(Processors.direct(JoinRequest.class, this::join));
        rpcServer.registerProcessor(Processors.direct(ClusterRequest.class, this::cluster));
        rpcServer.registerProcessor(Processors.direct(NodeStateRequest.class, this::nodeState));
        rpcServer.registerProcessor(Processors.direct(NodeReport.class, this::report));
        rpcServer.registerProcessor(Processors.direct(MapReplicaRequest.class,
                (ctx, req) -> ctx.sendResponse(recovery.replica())));
        rpcServer.registerProcessor(Processors.direct(RecoverMapRequest.class,
                (ctx, req) -> ctx.sendResponse(recovery.recover(req))));
    }

    public void start() {
        group.start();
    }

    public MetaGroup group() {
        return group;
    }

    /** The cluster id this node belongs to, or empty before it first registered. */
    public String clusterId() {
        return clusterId == null ? "" : clusterId;
    }

    public boolean registered() {
        return registered;
    }

    private static String readClusterId(Path dataDir) {
        Path f = dataDir.resolve(CLUSTER_ID_FILE);
        try {
            return Files.exists(f) ? Files.readString(f).trim() : null;
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + f + ": " + e.getMessage(), e);
        }
    }

    static final String KNOWN_NODES_FILE = "KNOWN_NODES";

    private static List<String> readKnownNodes(Path dataDir) {
        Path f = dataDir.resolve(KNOWN_NODES_FILE);
        try {
            return Files.exists(f) ? Files.readAllLines(f).stream().map(String::trim).filter(l -> !l.isEmpty()).toList()
                    : List.of();
        } catch (IOException e) {
            LOG.warn("cannot read {}: {}", f, e.toString());
            return List.of();
        }
    }

    private void writeKnownNodes(List<String> nodes) {
        Path tmp = dataDir.resolve(KNOWN_NODES_FILE + ".tmp");
        try {
            Files.writeString(tmp, String.join("\n", nodes) + "\n");
            Files.move(tmp, dataDir.resolve(KNOWN_NODES_FILE), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            LOG.warn("cannot write {}: {}", dataDir.resolve(KNOWN_NODES_FILE), e.toString());
        }
    }

    private void writeClusterId(String id) throws IOException {
        Path tmp = dataDir.resolve(CLUSTER_ID_FILE + ".tmp");
        Files.writeString(tmp, id + "\n");
        Files.move(tmp, dataDir.resolve(CLUSTER_ID_FILE), StandardCopyOption.ATOMIC_MOVE);
    }

    private void mapChanged(ClusterMap map) {
        List<String> members = new ArrayList<>();
        Set<String> draining = new HashSet<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() != NodeState.REMOVED) {
                members.add(n.getEndpoint());
            }
            if (n.getState() == NodeState.DRAINING) {
                draining.add(n.getEndpoint());
            }
        }
        host.draining(draining);
        if (!members.isEmpty() && !members.equals(host.peers())) {
            host.members(members);
            writeKnownNodes(members);
        }
    }

    /** On the group's thread: a new leader forgets the reports and moves of an earlier term of its own. */
    private void leaderChanged() {
        leaderSinceNanos = System.nanoTime();
        reports.clear();
        retryAt.clear();
        missingSince.clear();
        try {
            housekeeping.execute(group::leaderSeen);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // the node is closing: its housekeeping stopped before the map's group, which now leaves its leadership
        }
    }

    // ---- every node: register, then report -------------------------------------------------------

    /** One step of this node's part: called every {@code placement.intervalMs} on the housekeeping thread. */
    public void tick() {
        if (closed) {
            return;
        }
        try {
            if (!registered) {
                register();
            } else {
                sendReport();
            }
            if (group.isLeader() && recovery.removeLost()) { // a forced recovery's lost voters are removed first
                lead();
            }
        } catch (RuntimeException e) {
            LOG.warn("cluster map: {}", e.toString());
        }
    }

    /** Where to send a request for the map's leader: its hint, or the known nodes in turn. */
    private String target() {
        String hint = group.leaderHint();
        if (!hint.isEmpty()) {
            return hint;
        }
        String answered = answeredHint;
        if (!answered.isEmpty()) {
            answeredHint = ""; // once: if it is wrong, the next try goes round the known nodes
            return answered;
        }
        java.util.LinkedHashSet<String> all = new java.util.LinkedHashSet<>(host.peers());
        all.addAll(config.cluster().joining() ? config.cluster().join() : config.cluster().peers());
        List<String> known = new ArrayList<>(all);
        known.remove(config.endpoint());
        if (known.isEmpty()) {
            return config.endpoint();
        }
        return known.get(Math.floorMod(asked++, known.size()));
    }

    private void register() {
        if (registering) {
            return;
        }
        JoinRequest req = JoinRequest.newBuilder().setEndpoint(config.endpoint()).setNodeId(nodeId)
                .setClusterId(clusterId()).build();
        String to = target();
        CompletableFuture<JoinResponse> f = to.equals(config.endpoint()) && group.isLeader()
                ? handleJoin(req) : peers.call(to, req, RPC_TIMEOUT_MS);
        registering = true;
        f.whenComplete((resp, e) -> housekeeping.execute(() -> {
            registering = false;
            if (e != null) {
                notYet(to, e.toString());
            } else {
                registered(to, resp);
            }
        }));
    }

    private void registered(String to, JoinResponse resp) {
        ErrorCode code = resp.hasError() ? resp.getError().getCode() : ErrorCode.OK;
        if (code == ErrorCode.WRONG_CLUSTER || code == ErrorCode.NODE_REMOVED) {
            refused(resp.getError().getDetail());
            return;
        }
        if (code != ErrorCode.OK) {
            answeredHint = resp.getError().getLeaderHint();
            notYet(to, code + " " + resp.getError().getDetail());
            return;
        }
        String id = resp.getMap().getClusterId();
        if (clusterId == null) {
            try {
                writeClusterId(id);
            } catch (IOException e) {
                LOG.warn("cannot record the cluster id in {}: {}", dataDir, e.toString());
                return;
            }
            clusterId = id;
        }
        host.adoptLayout(resp.getStartEmpty());
        registered = true;
        LOG.info("node {} ({}) is a member of cluster {} ({} nodes){}", config.endpoint(), nodeId, id,
                resp.getMap().getNodesCount(), config.cluster().joining() ? ": joined; replicas move here" : "");
    }

    /** A failed try to register: logged on the 1st, 2nd, 4th, 8th, ... so a node that cannot join says why. */
    private void notYet(String to, String why) {
        if (Integer.bitCount(++registerTries) == 1) {
            LOG.info("node {} is not registered with the cluster yet (try {}, asked {}): {}", config.endpoint(),
                    registerTries, to, why);
        }
    }

    private void refused(String why) {
        if (closed) {
            return;
        }
        closed = true;
        LOG.error("node {} refused by the cluster: {}", config.endpoint(), why);
        fatal.accept(why);
    }

    private void sendReport() {
        if (reportsSent++ % DISK_EVERY_REPORTS == 0) {
            diskBytes = diskBytes(dataDir);
        }
        NodeReport.Builder b = NodeReport.newBuilder().setEndpoint(config.endpoint()).setNodeId(nodeId)
                .setClusterId(clusterId()).setDiskBytes(diskBytes);
        for (Region r : host.regions()) {
            b.addRegions(r.info());
        }
        NodeReport report = b.build();
        if (group.isLeader()) {
            NodeReportResponse resp = handleReport(report);
            if (resp.hasError() && resp.getError().getCode() != ErrorCode.OK) {
                refusedOrNot(resp);
            }
            return;
        }
        String to = target();
        peers.<NodeReportResponse>call(to, report, RPC_TIMEOUT_MS).whenComplete((resp, e) -> {
            if (e == null) {
                refusedOrNot(resp);
            }
        });
    }

    private void refusedOrNot(NodeReportResponse resp) {
        ErrorCode code = resp.hasError() ? resp.getError().getCode() : ErrorCode.OK;
        if (code == ErrorCode.NODE_REMOVED || code == ErrorCode.WRONG_CLUSTER) {
            housekeeping.execute(() -> refused(resp.getError().getDetail()));
        } else if (code == ErrorCode.NOT_LEADER) {
            answeredHint = resp.getError().getLeaderHint();
        }
    }

    private static long diskBytes(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException gone) {
                    return 0;
                }
            }).sum();
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    // ---- requests, answered by the map's leader --------------------------------------------------

    private io.kvraft.common.proto.KvProto.Error notLeader() {
        String hint = group.leaderHint();
        return Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                "node " + config.endpoint() + " does not lead the cluster map" + (hint.isEmpty() ? " and knows no leader"
                        + " (one is elected within seconds while a majority of the map's voters " + group.voters()
                        + " is up; if that majority is lost for good, see kv-client recover-map)" : "; " + hint + " does"));
    }

    /**
     * Whether a node with data directory {@code nodeId} at {@code rec}'s address is refused for good: the map lists it
     * removed, or a forced recovery of the map left it out and has not marked it removed yet.
     */
    private boolean removedForGood(NodeRecord rec, String nodeId) {
        return rec != null && rec.getNodeId().equals(nodeId)
                && (rec.getState() == NodeState.REMOVED || recovery.lost(rec.getEndpoint(), nodeId));
    }

    private static NodeRecord find(ClusterMap map, String endpoint) {
        for (NodeRecord n : map.getNodesList()) {
            if (n.getEndpoint().equals(endpoint)) {
                return n;
            }
        }
        return null;
    }

    private static List<String> endpoints(ClusterMap map) {
        return map.getNodesList().stream().map(NodeRecord::getEndpoint).toList();
    }

    private void join(RpcContext ctx, JoinRequest req) {
        handleJoin(req).whenComplete((resp, e) -> ctx.sendResponse(e == null ? resp : JoinResponse.newBuilder()
                .setError(Errors.of(ErrorCode.INTERNAL, e.getMessage())).build()));
    }

    CompletableFuture<JoinResponse> handleJoin(JoinRequest req) {
        if (!group.isLeader()) {
            return done(JoinResponse.newBuilder().setError(notLeader()).build());
        }
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER,
                    "the cluster map is not made yet; ask again in a moment")).build());
        }
        try {
            io.kvraft.common.config.HostPort.parse(req.getEndpoint());
        } catch (IllegalArgumentException e) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.INVALID_ARGUMENT, e.getMessage()))
                    .build());
        }
        if (!req.getClusterId().isEmpty() && !req.getClusterId().equals(map.getClusterId())) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.WRONG_CLUSTER, "node "
                    + req.getEndpoint() + "'s data directory belongs to cluster " + req.getClusterId() + ", and this is"
                    + " cluster " + map.getClusterId() + ": start it on an empty data directory to join this one"))
                    .build());
        }
        NodeRecord rec = find(map, req.getEndpoint());
        if (removedForGood(rec, req.getNodeId())) {
            return done(JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NODE_REMOVED, "node "
                    + req.getEndpoint() + " (node id " + req.getNodeId() + ") was removed from cluster "
                    + map.getClusterId() + ": it may not come back with its data; start it on an empty data directory"
                    + " to join as a new node")).build());
        }
        if (rec != null && rec.getNodeId().equals(req.getNodeId())) {
            return done(JoinResponse.newBuilder().setMap(map).build()); // a member starting again
        }
        NodeState state = rec == null || rec.getState() == NodeState.REMOVED ? NodeState.UP : rec.getState();
        // a member's address with another data directory: its disk was wiped. It must not vote in its old regions
        // with an empty log; it starts with none, and placement rebuilds each replica (the voter out, then a learner)
        boolean wiped = rec != null && rec.getState() != NodeState.REMOVED && !rec.getNodeId().isEmpty();
        if (wiped) {
            LOG.warn("cluster map: node {} comes back with another data directory (node id {}, was {}): it starts"
                    + " empty and its replicas are rebuilt", req.getEndpoint(), req.getNodeId(), rec.getNodeId());
        }
        NodeRecord joined = NodeRecord.newBuilder().setEndpoint(req.getEndpoint()).setNodeId(req.getNodeId())
                .setState(state).setSinceMs(rec != null && rec.getState() == state ? rec.getSinceMs()
                        : System.currentTimeMillis()).build();
        return group.propose(MetaCommand.newBuilder().setJoin(joined).build()).handle((m, e) -> {
            if (e != null) {
                return JoinResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER, group.leaderHint(),
                        e.getMessage())).build();
            }
            if (rec == null || rec.getState() == NodeState.REMOVED) {
                LOG.info("cluster map: node {} ({}) joined", req.getEndpoint(), req.getNodeId());
            }
            return JoinResponse.newBuilder().setMap(m).setStartEmpty(wiped).build();
        });
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }

    private void report(RpcContext ctx, NodeReport report) {
        ctx.sendResponse(handleReport(report));
    }

    private NodeReportResponse handleReport(NodeReport report) {
        if (!group.isLeader()) {
            return NodeReportResponse.newBuilder().setError(notLeader()).build();
        }
        ClusterMap map = group.map();
        if (!map.getClusterId().isEmpty() && !report.getClusterId().isEmpty()
                && !report.getClusterId().equals(map.getClusterId())) {
            return NodeReportResponse.newBuilder().setError(Errors.of(ErrorCode.WRONG_CLUSTER, "node "
                    + report.getEndpoint() + " belongs to cluster " + report.getClusterId() + ", not "
                    + map.getClusterId())).build();
        }
        NodeRecord rec = find(map, report.getEndpoint());
        if (removedForGood(rec, report.getNodeId())) {
            return NodeReportResponse.newBuilder().setError(Errors.of(ErrorCode.NODE_REMOVED, "node "
                    + report.getEndpoint() + " was removed from cluster " + map.getClusterId())).build();
        }
        reports.put(report.getEndpoint(), new Report(report, System.nanoTime()));
        return NodeReportResponse.getDefaultInstance();
    }

    // ---- route lookups: RegionsRequest{cluster = true}, on any node -------------------------------------

    /**
     * Answers a route lookup from the cluster map ({@code RegionsRequest.cluster}): on the map's leader, every region as
     * the nodes last reported it ({@link #merged}); elsewhere, the leader's answer, relayed (one hop, at most
     * {@link #RELAY_TIMEOUT_MS}). Never a partial list: an error when the map cannot answer for the whole key space, so
     * the client asks the nodes one by one instead.
     */
    public CompletableFuture<RegionsResponse> clusterRegions(RegionsRequest req) {
        if (group.isLeader()) {
            return done(mapRegions());
        }
        String leader = group.leaderHint();
        if (req.getRelayed()) {
            return done(RegionsResponse.newBuilder().setNode(config.endpoint()).setError(notLeader()).build());
        }
        if (leader.isEmpty() || leader.equals(config.endpoint())) {
            return done(fromCopy("it knows no leader of the cluster map"));
        }
        return peers.<RegionsResponse>call(leader, req.toBuilder().setRelayed(true).build(), RELAY_TIMEOUT_MS)
                .handle((resp, e) -> {
                    if (e == null && (!resp.hasError() || resp.getError().getCode() == ErrorCode.OK)) {
                        return resp.toBuilder().setNode(config.endpoint()).build();
                    }
                    String why = e != null ? KvException.unwrap(e).getMessage() : resp.getError().getDetail();
                    return fromCopy("the cluster map's leader " + leader + " did not answer: " + why);
                });
    }

    /**
     * A route lookup answered from this node's own copy of the map's region record, with the regions this node holds
     * over it (they know their leaders): when the map's leader cannot answer. An error when the two do not cover the key
     * space (a map made before regions were recorded, or not made yet).
     */
    private RegionsResponse fromCopy(String why) {
        RegionsResponse.Builder b = RegionsResponse.newBuilder().setNode(config.endpoint());
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return b.setError(Errors.of(ErrorCode.NO_LEADER, "the cluster map is not made yet (node "
                    + config.endpoint() + ": " + why + "); ask again in a moment")).build();
        }
        RegionViews views = new RegionViews();
        views.add(map.getRegionsList());
        views.add(host.regions().stream().map(Region::info).toList());
        if (!views.covers()) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "node " + config.endpoint() + " cannot answer for"
                    + " the cluster map: " + why + ", and its copy of the map's " + map.getRegionsCount()
                    + " regions with its own does not cover the key space; ask the nodes")).build();
        }
        return b.setFromCopy(true).addAllRegions(views.regions()).build();
    }

    /**
     * The map leader's answer to a route lookup: every region, from the map's record with the nodes' reports over it, or
     * an error when they do not tell them all. A new leader with no record yet (a map of an older version) waits for
     * every node to report first.
     */
    private RegionsResponse mapRegions() {
        RegionsResponse.Builder b = RegionsResponse.newBuilder().setNode(config.endpoint());
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            return b.setError(Errors.of(ErrorCode.NO_LEADER, "the cluster map is not made yet; ask again in a"
                    + " moment")).build();
        }
        long leading = System.nanoTime() - leaderSinceNanos;
        if (map.getRegionsCount() == 0 && leading < LOOKUP_AFTER_INTERVALS * intervalNanos) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "node " + config.endpoint() + " leads the cluster"
                    + " map since " + TimeUnit.NANOSECONDS.toMillis(leading) + " ms only: it waits for the nodes'"
                    + " reports; ask the nodes")).build();
        }
        RegionViews views = recordAndReports(map);
        if (!views.covers()) {
            return b.setError(Errors.of(ErrorCode.UNAVAILABLE, "the cluster map's " + map.getRegionsCount()
                    + " recorded regions and the reports of " + reports.size() + " nodes to its leader "
                    + config.endpoint() + " do not cover the key space yet (" + views.regions().size()
                    + " regions); ask the nodes")).build();
        }
        return b.setMapLeader(config.endpoint()).addAllRegions(views.regions()).build();
    }

    /** The map's record of the regions with the nodes' reports over it: a report of a region is newer or as new. */
    private RegionViews recordAndReports(ClusterMap map) {
        RegionViews views = new RegionViews();
        views.add(map.getRegionsList());
        reports.values().forEach(r -> views.add(r.report().getRegionsList()));
        return views;
    }

    /**
     * On the map's leader, every interval: records the regions in the map when the nodes' reports tell of a change (a
     * split, a merge, a region's voters or conf version), so the record survives the leader and any minority of nodes.
     * Only a record that covers the key space is proposed, one proposal at a time.
     */
    private void recordRegions(ClusterMap map) {
        if (recording || reports.isEmpty()) {
            return;
        }
        RegionViews views = recordAndReports(map);
        if (!views.covers()) {
            return;
        }
        List<RegionInfo> record = views.regions().stream().map(MetaService::recordOf).toList();
        if (record.equals(map.getRegionsList())) {
            return;
        }
        recording = true;
        group.propose(MetaCommand.newBuilder().setRegions(io.kvraft.common.proto.KvProto.RegionRecords.newBuilder()
                .addAllRegions(record)).build()).whenComplete((m, e) -> {
                    recording = false;
                    if (e != null) {
                        LOG.debug("cluster map: recording {} regions failed: {}", record.size(), e.toString());
                    }
                });
    }

    /**
     * Records in the map a node found down (silent longer than {@code placement.downAfterMs}), and one that reports again,
     * one proposal at a time: a new leader of the map then treats a node the last one found down as down at once.
     */
    private void recordDown(ClusterMap map, Placement.View view) {
        if (recordingDown) {
            return;
        }
        for (NodeRecord n : map.getNodesList()) {
            boolean down = view.down().contains(n.getEndpoint());
            boolean back = n.getDownSinceMs() != 0 && view.live().contains(n.getEndpoint());
            if (down && n.getDownSinceMs() == 0 || back) {
                long since = back ? 0 : System.currentTimeMillis();
                recordingDown = true;
                group.propose(MetaCommand.newBuilder().setSetDown(NodeRecord.newBuilder().setEndpoint(n.getEndpoint())
                        .setDownSinceMs(since)).build()).whenComplete((m, e) -> {
                            recordingDown = false;
                            if (e == null) {
                                LOG.info(back ? "cluster map: node {} reports again: no longer down"
                                        : "cluster map: node {} is down (silent longer than placement.downAfterMs {} ms):"
                                        + " its replicas are rebuilt on other nodes", n.getEndpoint(),
                                        TimeUnit.NANOSECONDS.toMillis(downAfterNanos));
                            }
                        });
                return;
            }
        }
    }

    /** What the map records of a region: its shape and voters, not who leads it (peers sorted, so records compare). */
    static RegionInfo recordOf(RegionInfo r) {
        return RegionInfo.newBuilder().setId(r.getId()).setStartKey(r.getStartKey()).setEndKey(r.getEndKey())
                .setEpoch(r.getEpoch()).setConfVer(r.getConfVer())
                .addAllPeers(r.getPeersList().stream().sorted().toList()).build();
    }

    /**
     * The nodes' reports merged into one view per region ({@link RegionViews}'s rule): the newest shape (highest epoch)
     * wins, so a report from before a split or merge loses to one after it whoever sent it; at one epoch, the higher
     * conf version (newer voters), then the latest term, then the report of the node that is the region's leader, then
     * one that knows a leader. A region no node
     * reports as its leader thus takes a replica's report of the highest epoch. Regions a newer region overlaps (the
     * report of a node that had not applied a split or merge yet) are left out.
     */
    static RegionViews merged(java.util.Collection<NodeReport> reports) {
        RegionViews views = new RegionViews();
        for (NodeReport r : reports) {
            views.add(r.getRegionsList());
        }
        return views;
    }

    /** A node's state in this node's copy of the cluster map (which may lag its leader's), or null when not listed. */
    public NodeState nodeState(String endpoint) {
        NodeRecord rec = find(group.map(), endpoint);
        return rec == null ? null : rec.getState();
    }

    /** Every region as the nodes last reported it (the leader's own view first), and which nodes are live or down. */
    Placement.View view() {
        return view(false);
    }

    /**
     * @param track whether to record when each missing replica was first seen (placement's tick does, once per
     *              interval; requests that only read the view do not)
     */
    private Placement.View view(boolean track) {
        RegionViews views = merged(reports.values().stream().map(Report::report).toList());
        long now = System.nanoTime();
        Set<String> live = new HashSet<>();
        Set<String> down = new HashSet<>();
        long liveNanos = 3 * intervalNanos + TimeUnit.SECONDS.toNanos(2);
        Map<String, Set<Integer>> held = new java.util.HashMap<>();
        for (NodeRecord n : group.map().getNodesList()) {
            Report r = reports.get(n.getEndpoint());
            long age = r == null ? now - leaderSinceNanos : now - r.atNanos();
            if (r != null && age < liveNanos) {
                live.add(n.getEndpoint());
                Set<Integer> ids = new HashSet<>();
                r.report().getRegionsList().forEach(x -> ids.add(x.getId()));
                held.put(n.getEndpoint(), ids);
            }
            // silent too long, or found so by an earlier leader of the map and not heard from since; not before this
            // leader had time to hear from every live node, so a node back just as the leader changed is not taken down
            boolean recordedDown = n.getDownSinceMs() != 0 && !live.contains(n.getEndpoint())
                    && now - leaderSinceNanos >= liveNanos;
            if ((age >= downAfterNanos || recordedDown) && n.getState() != NodeState.REMOVED) {
                down.add(n.getEndpoint());
            }
        }
        List<RegionInfo> regions = views.regions();
        // a voter on a live node that reports no replica of its region: missing, once it stays so for a while (a
        // replica that has not applied its region's split yet lacks the new region for a moment)
        Set<String> seen = new HashSet<>();
        for (RegionInfo r : regions) {
            for (String v : r.getPeersList()) {
                Set<Integer> ids = held.get(v);
                if (ids != null && !ids.contains(r.getId())) {
                    String key = Placement.missingKey(r.getId(), v);
                    seen.add(key);
                    if (track) {
                        missingSince.putIfAbsent(key, now);
                    }
                }
            }
        }
        if (track) {
            missingSince.keySet().retainAll(seen);
        }
        Set<String> missing = new HashSet<>();
        for (String k : seen) {
            Long since = missingSince.get(k);
            if (since != null && now - since >= MISSING_CONFIRM_NANOS) {
                missing.add(k);
            }
        }
        return new Placement.View(regions, live, down, missing, seen);
    }

    private boolean covers(Placement.View view) {
        RegionViews v = new RegionViews();
        v.add(view.regions());
        return v.covers();
    }

    private void cluster(RpcContext ctx, ClusterRequest req) {
        if (!group.isLeader()) {
            ctx.sendResponse(ClusterResponse.newBuilder().setError(notLeader()).build());
            return;
        }
        ClusterMap map = group.map();
        Placement.View view = view();
        Map<String, Integer> counts = Placement.replicaCounts(view.regions());
        ClusterResponse.Builder b = ClusterResponse.newBuilder().setMap(map).setMetaLeader(config.endpoint())
                .addAllMetaVoters(group.voters()).addAllMetaLearners(group.learners()).setMovesDone(movesDone.get())
                .addAllRegions(view.regions());
        long now = System.nanoTime();
        for (NodeRecord n : map.getNodesList()) {
            Report r = reports.get(n.getEndpoint());
            long leaders = view.regions().stream().filter(x -> x.getLeader().equals(n.getEndpoint())).count();
            b.addStatus(NodeStatus.newBuilder().setEndpoint(n.getEndpoint()).setLive(view.live().contains(n.getEndpoint()))
                    .setDown(view.down().contains(n.getEndpoint()))
                    .setReplicas(counts.getOrDefault(n.getEndpoint(), 0)).setLeaders((int) leaders)
                    .setMissing(view.unheldOn(n.getEndpoint()))
                    .setDiskBytes(r == null ? 0 : r.report().getDiskBytes())
                    .setLastReportMs(r == null ? 0 : TimeUnit.NANOSECONDS.toMillis(now - r.atNanos())));
        }
        for (Running run : new TreeMap<>(running).values()) {
            b.addMoves(ReplicaMove.newBuilder().setRegionId(run.move().regionId()).setFrom(run.move().from())
                    .setTo(run.move().to()).setReason(run.move().reason())
                    .setRunningMs(TimeUnit.NANOSECONDS.toMillis(now - run.startNanos())));
        }
        ctx.sendResponse(b.build());
    }

    private void nodeState(RpcContext ctx, NodeStateRequest req) {
        handleNodeState(req).whenComplete((resp, e) -> ctx.sendResponse(e == null ? resp : NodeStateResponse.newBuilder()
                .setError(Errors.of(ErrorCode.INTERNAL, e.getMessage())).build()));
    }

    private CompletableFuture<NodeStateResponse> handleNodeState(NodeStateRequest req) {
        if (!group.isLeader()) {
            return done(NodeStateResponse.newBuilder().setError(notLeader()).build());
        }
        ClusterMap map = group.map();
        NodeRecord rec = find(map, req.getEndpoint());
        String refused = refusal(map, rec, req);
        if (refused != null) {
            return done(NodeStateResponse.newBuilder().setError(Errors.of(ErrorCode.INVALID_ARGUMENT, refused))
                    .build());
        }
        if (rec.getState() == req.getState()) {
            return done(NodeStateResponse.newBuilder().setMap(map).build());
        }
        NodeRecord changed = rec.toBuilder().setState(req.getState()).setSinceMs(System.currentTimeMillis()).build();
        return group.propose(MetaCommand.newBuilder().setSetState(changed).build()).handle((m, e) -> {
            if (e != null) {
                return NodeStateResponse.newBuilder().setError(Errors.of(ErrorCode.NO_LEADER, group.leaderHint(),
                        e.getMessage())).build();
            }
            LOG.info("cluster map: node {} is {} now (was {})", rec.getEndpoint(), req.getState(), rec.getState());
            return NodeStateResponse.newBuilder().setMap(m).build();
        });
    }

    /** Why the state change is refused (nothing changes), or null. */
    private String refusal(ClusterMap map, NodeRecord rec, NodeStateRequest req) {
        if (rec == null) {
            return "node " + req.getEndpoint() + " is not a node of the cluster " + endpoints(map);
        }
        if (req.getState() == NodeState.UNRECOGNIZED) {
            return "unknown node state";
        }
        if (rec.getState() == NodeState.REMOVED && req.getState() != NodeState.REMOVED) {
            return "node " + rec.getEndpoint() + " was removed for good; a node with an empty data directory may join"
                    + " at its address";
        }
        if (rec.getState() == req.getState()) {
            return null;
        }
        long upAfter = map.getNodesList().stream().filter(n -> n.getState() == NodeState.UP
                && !n.getEndpoint().equals(rec.getEndpoint())).count();
        int factor = map.getFactor();
        if (req.getState() != NodeState.UP && upAfter < factor) {
            return (req.getState() == NodeState.DRAINING ? "draining " : "removing ") + rec.getEndpoint()
                    + " would leave " + upAfter + " UP nodes for replication.factor " + factor
                    + ": every region needs that many; add a node first";
        }
        if (req.getState() == NodeState.REMOVED) {
            Placement.View view = view();
            int held = Placement.replicaCounts(view.regions()).getOrDefault(rec.getEndpoint(), 0);
            boolean live = view.live().contains(rec.getEndpoint());
            boolean metaVoter = group.voters().contains(rec.getEndpoint());
            if ((held > 0 || metaVoter) && !(req.getForce() && !live)) {
                return "node " + rec.getEndpoint() + " still holds " + held + " region replicas"
                        + (metaVoter ? " and a voter of the cluster map" : "") + ": drain it first (node drain "
                        + rec.getEndpoint() + ")" + (live ? "" : ", or remove it with --force (it is down: its replicas"
                        + " are rebuilt on the other nodes)");
            }
        }
        return null;
    }

    // ---- the map's leader: its own replicas, and placement ----------------------------------------

    private void lead() {
        ClusterMap map = group.map();
        if (map.getClusterId().isEmpty()) {
            if (!config.cluster().joining()) {
                init();
            }
            return;
        }
        recordRegions(map);
        Placement.View view = view(true);
        recordDown(map, view);
        if (!metaReplicas(map, view)) {
            return; // this node hands the map's leadership over
        }
        if (config.placement().enabled()) {
            place(map, view);
        }
    }

    private void init() {
        ClusterMap.Builder b = ClusterMap.newBuilder().setClusterId(UUID.randomUUID().toString())
                .setFactor(config.replicationFactor());
        long now = System.currentTimeMillis();
        for (String p : config.cluster().peers()) {
            b.addNodes(NodeRecord.newBuilder().setEndpoint(p).setState(NodeState.UP).setSinceMs(now));
        }
        group.propose(MetaCommand.newBuilder().setInit(b).build()).whenComplete((m, e) -> {
            if (e == null) {
                LOG.info("cluster map made: cluster {} of {}, replication.factor {}", m.getClusterId(),
                        endpoints(m), m.getFactor());
            }
        });
    }

    /** Every node not removed is a learner of the map or one of its voters; the voters stay on live UP nodes. */
    /** @return false when this node hands its leadership of the map to another voter */
    private boolean metaReplicas(ClusterMap map, Placement.View view) {
        if (metaChanging) {
            return true;
        }
        Node node = group.node();
        List<String> voters = group.voters();
        List<String> learners = group.learners();
        List<PeerId> add = new ArrayList<>();
        List<PeerId> drop = new ArrayList<>();
        Set<String> members = new HashSet<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() != NodeState.REMOVED) {
                members.add(n.getEndpoint());
                if (!voters.contains(n.getEndpoint()) && !learners.contains(n.getEndpoint())) {
                    add.add(PeerId.parsePeer(n.getEndpoint()));
                }
            }
        }
        for (String l : learners) {
            if (!members.contains(l)) {
                drop.add(PeerId.parsePeer(l));
            }
        }
        if (!add.isEmpty() || !drop.isEmpty()) {
            metaChanging = true;
            CompletableFuture<Status> f = add.isEmpty() ? done(Status.OK())
                    : MetaGroup.confChange(d -> node.addLearners(add, d));
            f.thenCompose(st -> drop.isEmpty() || !st.isOk() ? done(st) : MetaGroup.confChange(d -> node.removeLearners(drop, d)))
                    .whenComplete((st, e) -> {
                        metaChanging = false;
                        LOG.info("cluster map: learners {}{}: {}", add.isEmpty() ? "" : "+" + add,
                                drop.isEmpty() ? "" : " -" + drop, e != null ? e.toString() : st.isOk() ? "done"
                                        : st.getErrorMsg());
                    });
            return true;
        }
        Optional<Placement.MetaChange> change = Placement.metaVoters(map, voters, view.live(), view.down());
        if (change.isEmpty()) {
            return true;
        }
        Placement.MetaChange c = change.get();
        if (config.endpoint().equals(c.remove())) {
            // this node leaves the voters: another one leads the change
            for (String v : voters) {
                if (!v.equals(config.endpoint()) && view.live().contains(v)) {
                    Status st = node.transferLeadershipTo(PeerId.parsePeer(v));
                    LOG.info("cluster map: this node's voter moves to {}; leadership handed to {}: {}", c.add(), v,
                            st.isOk() ? "started" : st.getErrorMsg());
                    return false;
                }
            }
            return true;
        }
        metaChanging = true;
        PeerId in = PeerId.parsePeer(c.add());
        CompletableFuture<Status> f = learners.contains(c.add())
                ? MetaGroup.confChange(d -> node.removeLearners(List.of(in), d)) : done(Status.OK());
        f.thenCompose(st -> st.isOk() ? MetaGroup.confChange(d -> node.addPeer(in, d)) : done(st))
                .thenCompose(st -> st.isOk() && c.remove() != null
                        ? MetaGroup.confChange(d -> node.removePeer(PeerId.parsePeer(c.remove()), d)) : done(st))
                .whenComplete((st, e) -> {
                    metaChanging = false;
                    LOG.info("cluster map: voter {}{}: {}", c.add(), c.remove() == null ? "" : " in place of " + c.remove(),
                            e != null ? e.toString() : st.isOk() ? "done" : st.getErrorMsg());
                });
        return true;
    }

    private void place(ClusterMap map, Placement.View view) {
        int limit = config.placement().movesAtOnce();
        if (running.size() >= limit) {
            return;
        }
        long now = System.nanoTime();
        if (now - leaderSinceNanos < 3 * intervalNanos) {
            return; // a new leader waits for every node's report (and for a move its predecessor started to end)
        }
        long oldest = now;
        for (String n : view.live()) {
            Report r = reports.get(n);
            if (r == null) {
                return;
            }
            oldest = Math.min(oldest, r.atNanos());
        }
        long oldestReport = oldest;
        settling.values().removeIf(t -> oldestReport - t.endNanos() > 0); // every live node reported after its end
        retryAt.values().removeIf(t -> t - now < 0);
        Set<Integer> skip = new HashSet<>(retryAt.keySet());
        skip.addAll(settling.keySet());
        // the counts of replicas per node take the moves under way and those whose reports are not in yet as done
        List<Placement.Move> under = new ArrayList<>(running.values().stream().map(Running::move).toList());
        settling.values().stream().filter(Settling::done).forEach(t -> under.add(t.move()));
        // balancing waits for the reports after every move's end; a region short of a copy or a drain does not
        boolean balance = covers(view) && settling.isEmpty();
        for (int started = running.size(); started < limit; started++) {
            Optional<Placement.Move> next = Placement.next(map, view, balance, skip, under);
            if (next.isEmpty()) {
                return;
            }
            Placement.Move m = next.get();
            under.add(m); // Placement leaves its region alone and counts its target's replica
            start(m); // after a balancing move the next call finds none: Placement balances with no move under way
        }
    }

    /** Asks the region's leader for the move {@code m}, and counts how it ended. */
    private void start(Placement.Move m) {
        Running run = new Running(m, System.nanoTime());
        running.put(m.regionId(), run);
        LOG.info("placement: region {}: {} -> {} ({}){}", m.regionId(), m.from(), m.to(), m.reason(),
                running.size() > 1 ? ", " + running.size() + " moves at once" : "");
        CompletableFuture<RegionInfo> f;
        try {
            f = m.from().isEmpty() ? mover.get().add(m.regionId(), m.to())
                    : m.from().equals(m.to()) ? mover.get().rebuild(m.regionId(), m.to())
                    : mover.get().move(m.regionId(), m.from(), m.to());
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((r, e) -> {
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - run.startNanos());
            if (e == null) {
                movesDone.incrementAndGet();
                LOG.info("placement: region {}: {} -> {} done in {} ms; replicas on {}", m.regionId(), m.from(), m.to(),
                        ms, r.getPeersList());
            } else {
                retryAt.put(m.regionId(), System.nanoTime() + RETRY_AFTER_NANOS);
                LOG.warn("placement: region {}: {} -> {} failed after {} ms: {}", m.regionId(), m.from(), m.to(), ms,
                        KvException.unwrap(e).getMessage());
            }
            settling.put(m.regionId(), new Settling(m, System.nanoTime(), e == null));
            running.remove(m.regionId(), run);
        });
    }

    @Override
    public void close() {
        closed = true;
        group.close();
    }
}
