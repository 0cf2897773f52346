package io.kvraft.server.meta;

import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.JoinRequest;
import io.kvraft.common.proto.KvProto.JoinResponse;
import io.kvraft.common.proto.KvProto.NodeReport;
import io.kvraft.common.proto.KvProto.NodeReportResponse;
import io.kvraft.common.rpc.Transport;
import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Every node's part: it registers with the map's leader at start (a node that joins asks to; a removed node, or one of
 * another cluster, is told so and stops), then reports its regions to it once per {@code placement.intervalMs}, in one
 * message. The cluster id it registered with is kept in {@value #CLUSTER_ID_FILE}.
 */
final class Registration {

    private static final Logger LOG = LoggerFactory.getLogger(Registration.class);
    static final String CLUSTER_ID_FILE = "CLUSTER_ID";
    private static final long RPC_TIMEOUT_MS = 5_000;
    /** The first tries to register follow each other {@link #QUICK_RETRY_MS} apart, not a step apart. */
    private static final int QUICK_TRIES = 20;
    private static final long QUICK_RETRY_MS = 100;
    private static final int DISK_EVERY_REPORTS = 10;

    private final ServerConfig config;
    private final RegionHost host;
    private final MetaGroup group;
    private final Transport peers;
    private final Executor housekeeping;
    private final Executor quickRetry;
    private final Consumer<String> fatal;
    private final String nodeId;
    private final Path dataDir;
    private final Membership membership;
    private final NodeReports reports;

    private volatile String clusterId;
    private volatile boolean registered;
    private volatile boolean registering;
    private volatile boolean closed;
    /** The map's leader as a NOT_LEADER answer named it (a node that is no replica of the map yet knows no other). */
    private volatile String answeredHint = "";
    private int registerTries;
    private int asked; // round robin over the known nodes, for a node that knows no leader yet
    private int reportsSent;
    private long diskBytes;

    /**
     * @param clusterId the id {@link #readClusterId} found, or null
     * @param fatal     called once when the cluster refuses this node for good (removed, or another cluster's): the node
     *                  must stop
     */
    Registration(ServerConfig config, RegionHost host, MetaGroup group, Transport peers, Executor housekeeping,
                 String nodeId, String clusterId, Consumer<String> fatal, Membership membership, NodeReports reports) {
        this.config = config;
        this.host = host;
        this.group = group;
        this.peers = peers;
        this.housekeeping = housekeeping;
        this.quickRetry = CompletableFuture.delayedExecutor(QUICK_RETRY_MS, TimeUnit.MILLISECONDS, housekeeping);
        this.fatal = fatal;
        this.nodeId = nodeId;
        this.dataDir = Path.of(config.dataDir());
        this.clusterId = clusterId;
        this.membership = membership;
        this.reports = reports;
    }

    /** The cluster id this node registered with before, or null. */
    static String readClusterId(Path dataDir) {
        Path f = dataDir.resolve(CLUSTER_ID_FILE);
        try {
            return Files.exists(f) ? Files.readString(f).trim() : null;
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + f + ": " + e.getMessage(), e);
        }
    }

    private void writeClusterId(String id) throws IOException {
        DurableFiles.replace(dataDir.resolve(CLUSTER_ID_FILE), id + "\n");
    }

    /** The cluster id this node belongs to, or empty before it first registered. */
    String clusterId() {
        return clusterId == null ? "" : clusterId;
    }

    boolean registered() {
        return registered;
    }

    /** Whether this node's part is over: the node closes, or the cluster refused it. */
    boolean stopped() {
        return closed;
    }

    void stop() {
        closed = true;
    }

    /** One step, on the housekeeping thread: registers until the map's leader answers, then reports. */
    void step() {
        if (!registered) {
            register();
        } else {
            sendReport();
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
                ? membership.handleJoin(req) : peers.call(to, req, RPC_TIMEOUT_MS);
        registering = true;
        f.whenComplete((resp, e) -> housekeeping.execute(() -> {
            registering = false;
            if (e != null) {
                notYet(to, e.toString());
            } else {
                registered(to, resp);
            }
            if (!registered && !closed && registerTries <= QUICK_TRIES) {
                // at a cluster's start the map is made, and the other nodes come up, within moments: try again
                // soon rather than at the next step, a placement interval (1 s) later
                quickRetry.execute(() -> {
                    if (!registered && !closed) {
                        register();
                    }
                });
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
            NodeReportResponse resp = reports.handle(report);
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
}
