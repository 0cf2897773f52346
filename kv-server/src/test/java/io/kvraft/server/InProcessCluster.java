package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.config.StoreConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.store.KvStore;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.awaitility.Awaitility.await;

/**
 * Three (or n) servers in this JVM on free loopback ports with temp data dirs. Closing stops all
 * of them and, if asked, prints each node's view of the regions first (for failing tests).
 */
public final class InProcessCluster implements AutoCloseable {

    private final List<ServerConfig> configs = new ArrayList<>();
    private final KvServer[] servers;
    private final List<KvClient> clients = new ArrayList<>();

    /** Clusters started and not closed yet: {@link ClusterStateOnFailure} prints them when a test fails or hangs. */
    private static final java.util.Set<InProcessCluster> OPEN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private InProcessCluster(List<ServerConfig> configs) {
        this.configs.addAll(configs);
        this.servers = new KvServer[configs.size()];
        OPEN.add(this);
    }

    static List<InProcessCluster> open() {
        return List.copyOf(OPEN);
    }

    public static InProcessCluster start(int nodes, int regions, Path dir, String engine) throws IOException {
        return start(nodes, regions, dir, engine, RaftConfig.LOG_SHARED);
    }

    /** @param logStorage raft.logStorage: shared or per-region */
    public static InProcessCluster start(int nodes, int regions, Path dir, String engine, String logStorage) throws IOException {
        return start(nodes, regions, dir, engine, logStorage, UnaryOperator.identity());
    }

    /** @param tweak changes each node's configuration before it starts */
    public static InProcessCluster start(int nodes, int regions, Path dir, String engine, String logStorage,
                                         UnaryOperator<ServerConfig> tweak) throws IOException {
        return start(nodes, regions, dir, engine, logStorage, tweak, UnaryOperator.identity());
    }

    /** @param storeWrapper wraps each node's store as the nodes start, in their order */
    public static InProcessCluster start(int nodes, int regions, Path dir, String engine, String logStorage,
                                         UnaryOperator<ServerConfig> tweak, UnaryOperator<KvStore> storeWrapper)
            throws IOException {
        List<String> peers = new ArrayList<>();
        for (int port : io.kvraft.server.launch.LocalClusterConfigs.freePorts(nodes)) {
            peers.add("127.0.0.1:" + port);
        }
        // 2 s: a test JVM runs three nodes on two cores, often beside other builds; with 1 s, a few seconds of CPU
        // starvation made leaders step down ("majority of the group dies") and left writes with unknown outcomes
        RaftConfig raft = new RaftConfig(2000, 500, 10, true, 0, true, 256, 2, 4096, 1024, logStorage, 2, null);
        List<ServerConfig> configs = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            configs.add(tweak.apply(new ServerConfig(peers.get(i), dir.resolve("node" + (i + 1)).toString(),
                    new ClusterConfig(peers, regions, null), new StoreConfig(engine, 8L << 20, 4L << 20, "lz4", null),
                    raft, null, new BalanceConfig(true, 200, 600))));
        }
        InProcessCluster c = new InProcessCluster(configs);
        try {
            for (int i = 0; i < nodes; i++) {
                c.startNode(i, storeWrapper);
            }
            // new data directories make their regions once the cluster map answers (a second or so): tests start
            // from a cluster whose nodes have them
            await().atMost(60, SECONDS).until(() -> java.util.Arrays.stream(c.servers)
                    .allMatch(s -> s == null || !s.host().layoutPending()));
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    public static int freePort() {
        return io.kvraft.server.launch.LocalClusterConfigs.freePort();
    }

    public void startNode(int i) throws IOException {
        startNode(i, UnaryOperator.identity());
    }

    public void startNode(int i, UnaryOperator<KvStore> storeWrapper) throws IOException {
        servers[i] = KvServer.start(configs.get(i), storeWrapper);
    }

    public void stopNode(int i) {
        if (servers[i] != null) {
            servers[i].close();
            servers[i] = null;
        }
    }

    /** Node {@code i}'s data directory (its YAML's dataDir). */
    public Path dataDir(int i) {
        return Path.of(configs.get(i).dataDir());
    }

    public KvServer node(int i) {
        return servers[i];
    }

    public int size() {
        return servers.length;
    }

    public List<String> endpoints() {
        return configs.stream().map(ServerConfig::endpoint).toList();
    }

    public KvClient client() {
        return client(ClientConfig.of(endpoints()));
    }

    public KvClient client(ClientConfig config) {
        KvClient c = KvClients.connect(config);
        clients.add(c);
        return c;
    }

    /** The id of the region whose range holds {@code key}, as the first running node has it. */
    public int regionOf(byte[] key) {
        for (KvServer s : servers) {
            if (s != null) {
                for (Region r : s.host().regions()) {
                    if (r.range().contains(key)) {
                        return r.id();
                    }
                }
            }
        }
        throw new AssertionError("no region holds the key");
    }

    /** The index of the running node that leads {@code region}, waiting up to 30 s for one. */
    public int leaderOf(int region) {
        // the index seen, not a second look: the leadership may have moved on in between (-1 then)
        return await().atMost(30, SECONDS).until(() -> leaderIndex(region), i -> i >= 0);
    }

    private int leaderIndex(int region) {
        for (int i = 0; i < servers.length; i++) {
            Region r = servers[i] == null ? null : servers[i].host().region(region);
            if (r != null && r.isLeader()) {
                return i;
            }
        }
        return -1;
    }

    /** The highest term of {@code region} among the running nodes. */
    public long term(int region) {
        long term = 0;
        for (KvServer s : servers) {
            Region r = s == null ? null : s.host().region(region);
            if (r != null) {
                term = Math.max(term, r.info().getTerm());
            }
        }
        return term;
    }

    /**
     * Waits until a running node is in a later term of {@code region} than {@code termBefore} and every region is
     * led: a leader change happened. Terms only grow, so this holds even if the balancer hands the leadership back.
     */
    public void awaitNewTerm(int region, long termBefore) {
        await().atMost(30, SECONDS).until(() -> allRegionsLed() && term(region) > termBefore);
    }

    /** Leaders per running node, as each node itself reports. */
    public Map<String, Long> leaderCounts() {
        Map<String, Long> counts = new HashMap<>();
        for (KvServer s : servers) {
            if (s != null) {
                counts.put(s.config().endpoint(), s.leaderCount());
            }
        }
        return counts;
    }

    /** True when every region has exactly one leader among the running nodes. */
    public boolean allRegionsLed() {
        int regions = regionCount();
        long led = 0;
        for (KvServer s : servers) {
            if (s != null) {
                led += s.leaderCount();
            }
        }
        return led == regions;
    }

    /** The regions the running nodes host now, each counted once (the configured count until regions split). */
    public int regionCount() {
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        for (KvServer s : servers) {
            if (s != null) {
                s.host().regions().forEach(r -> ids.add(r.id()));
            }
        }
        return ids.isEmpty() ? configs.get(0).cluster().regionCount() : ids.size();
    }

    /** The endpoints of the running nodes that host {@code region}. */
    public java.util.Set<String> hostsOf(int region) {
        java.util.Set<String> hosts = new java.util.TreeSet<>();
        for (KvServer s : servers) {
            if (s != null && s.host().region(region) != null) {
                hosts.add(s.config().endpoint());
            }
        }
        return hosts;
    }

    public void awaitBalanced(int timeoutSecs) {
        int regions = regionCount();
        long running = java.util.Arrays.stream(servers).filter(java.util.Objects::nonNull).count();
        long share = regions / running;
        try {
            await().atMost(timeoutSecs, SECONDS).pollInterval(java.time.Duration.ofMillis(100)).until(() ->
                    allRegionsLed() && leaderCounts().values().stream().allMatch(c -> c >= share && c <= share + 1));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("leaders not balanced (" + share + " or " + (share + 1) + " per node) within "
                    + timeoutSecs + " s: " + leaderCounts() + "\n" + describe(), e);
        }
    }

    public String describe() {
        StringBuilder sb = new StringBuilder();
        for (KvServer s : servers) {
            if (s == null) {
                continue;
            }
            sb.append(s.config().endpoint()).append(": ")
                    .append(s.host().regions().stream().map(r -> r.id() + (r.isLeader() ? "L" : "") + "@" + r.leaderHint())
                            .collect(Collectors.joining(" "))).append('\n');
        }
        return sb.toString();
    }

    @Override
    public void close() {
        OPEN.remove(this);
        for (KvClient c : clients) {
            c.close();
        }
        for (int i = 0; i < servers.length; i++) {
            stopNode(i);
        }
    }

    /**
     * One request of {@code ops} straight to the leader of {@code region}, past the client (its checks, retries and
     * holder id). The leader and its epoch are looked up on each try: a leadership that moves in between is answered
     * NOT_LEADER (nothing proposed), and the next try asks whoever leads then; any other answer is returned.
     */
    public io.kvraft.common.proto.KvProto.WriteResponse writeToLeader(int region,
            io.kvraft.common.proto.KvProto.WriteOp... ops) {
        java.util.Set<io.kvraft.common.proto.KvProto.ErrorCode> moved = java.util.EnumSet.of(
                io.kvraft.common.proto.KvProto.ErrorCode.NOT_LEADER, io.kvraft.common.proto.KvProto.ErrorCode.NO_LEADER,
                io.kvraft.common.proto.KvProto.ErrorCode.STALE_EPOCH);
        try (io.kvraft.common.rpc.Transport transport = new io.kvraft.common.rpc.Transport()) {
            return await().atMost(60, SECONDS).until(() -> {
                KvServer leader;
                Region r;
                try {
                    leader = node(leaderOf(region));
                    r = leader.host().region(region);
                } catch (RuntimeException noLeaderYet) {
                    return null;
                }
                if (r == null) {
                    return null;
                }
                io.kvraft.common.proto.KvProto.WriteRequest req = io.kvraft.common.proto.KvProto.WriteRequest.newBuilder()
                        .setRegionId(region).setRegionEpoch(r.epoch()).addAllOps(java.util.List.of(ops)).build();
                // a call that fails (a timeout: its outcome is unknown) fails the caller, never tried again
                return transport.<io.kvraft.common.proto.KvProto.WriteResponse>call(leader.config().endpoint(), req,
                        10_000).join();
            }, resp -> resp != null && (!resp.hasError() || !moved.contains(resp.getError().getCode())));
        }
    }
}
