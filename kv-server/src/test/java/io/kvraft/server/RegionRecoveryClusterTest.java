package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvException;
import io.kvraft.client.proto.KvProto.ErrorCode;
import io.kvraft.client.proto.KvProto.NodeState;
import io.kvraft.client.proto.KvProto.RecoverRegionRequest;
import io.kvraft.client.proto.KvProto.RecoverRegionResponse;
import io.kvraft.client.rpc.Transport;
import io.kvraft.server.config.ServerConfig.PlacementConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Forced recovery ({@code recover-region}) of a region that lost two of its three replicas for good, on five nodes
 * (factor 3): refused while the region has a leader and while the lost voters are not removed from the cluster map;
 * then the survivor becomes the only voter, leads, keeps every write it had, and placement brings the region back to
 * three replicas on the live nodes.
 */
@Timeout(value = 300, unit = SECONDS)
class RegionRecoveryClusterTest {

    private static final int REGIONS = 4;
    private static final int KEYS = 200;

    @TempDir
    Path dir;

    private static byte[] value(int i) {
        return ("v" + i).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void when_aRegionLosesTwoOfThreeReplicas_then_itIsRecoveredFromTheThird_onceTheLostNodesAreRemoved()
            throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(5, REGIONS, dir, "memory",
                io.kvraft.server.config.ServerConfig.RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(3))
                        .withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(true, 200, 2_000L, null)));
             Transport raw = new Transport()) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (int i = 0; i < KEYS; i++) {
                puts.add(IdempotentWrites.put(client, SpreadKeys.key(i), value(i)));
            }
            puts.forEach(KvClient::sync);

            // a region with a node outside the map's voters among its own: losing it and one more keeps the map's
            // majority
            Set<String> mapVoters = new TreeSet<>(await().atMost(30, SECONDS).until(() -> java.util.stream.IntStream
                    .range(0, nodes.size()).mapToObj(cluster::node).filter(n -> n.meta().group().isLeader())
                    .map(n -> n.meta().group().voters()).findFirst().orElse(List.of()), v -> v.size() == 3));
            int region = -1;
            List<Integer> lost = new ArrayList<>();
            int survivor = -1;
            for (int r = 1; r <= REGIONS && region < 0; r++) {
                List<Integer> holders = new ArrayList<>();
                for (int i = 0; i < nodes.size(); i++) {
                    if (cluster.node(i).host().region(r) != null) {
                        holders.add(i);
                    }
                }
                List<Integer> outside = holders.stream().filter(i -> !mapVoters.contains(nodes.get(i))).toList();
                if (holders.size() == 3 && !outside.isEmpty()) {
                    region = r;
                    lost.add(outside.get(0));
                    lost.add(holders.stream().filter(i -> !i.equals(outside.get(0))).findFirst().orElseThrow());
                    survivor = holders.stream().filter(i -> !lost.contains(i)).findFirst().orElseThrow();
                }
            }
            assertThat(region).as("a region with a voter outside the map's voters").isPositive();
            int id = region;
            // every region the two nodes hold both of loses its majority with them: each is recovered in turn
            List<Integer> broken = new ArrayList<>();
            for (int r = 1; r <= REGIONS; r++) {
                int rr = r;
                if (lost.stream().allMatch(i -> cluster.node(i).host().region(rr) != null)) {
                    broken.add(r);
                }
            }
            // each survivor has applied everything its leader has: no acknowledged write is lost in this test
            for (int r : broken) {
                await().atMost(30, SECONDS).until(() -> applied(cluster, r, false) >= applied(cluster, r, true));
            }
            Region kept = cluster.node(survivor).host().region(id);

            // a region with a leader is not recovered: by the plan, the CLI, nor by a survivor asked directly
            assertRefused(() -> sync(client.planRecovery(id)), ErrorCode.INVALID_ARGUMENT, "has a leader");
            Run led = cli(cluster, "recover-region", String.valueOf(id), "--yes");
            assertThat(led.code()).isEqualTo(1);
            assertThat(led.err()).startsWith("error: INVALID_ARGUMENT").contains("has a leader");
            assertThat(led.err().lines().count()).isEqualTo(1);
            RecoverRegionResponse direct = raw.<RecoverRegionResponse>call(nodes.get(survivor), RecoverRegionRequest
                    .newBuilder().setRegionId(id).addVoters(nodes.get(survivor)).setConfVer(kept.confVer()).build(),
                    5000).join();
            assertThat(direct.getError().getCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(kept.peers()).hasSize(3);

            for (int i : lost) {
                cluster.stopNode(i);
            }
            await().atMost(30, SECONDS).until(() -> !kept.isLeader() && kept.leaderHint().isEmpty());
            // the lost voters are not removed yet: they might come back with their copies
            assertRefused(() -> sync(client.planRecovery(id)), ErrorCode.INVALID_ARGUMENT, "not removed");
            for (int i : lost) {
                String node = nodes.get(i);
                await().atMost(60, SECONDS).ignoreExceptions()
                        .until(() -> sync(client.nodeState(node, NodeState.REMOVED, true)) != null);
            }

            KvClient.RecoveryPlan plan = sync(client.planRecovery(id));
            assertThat(plan.survivors()).containsExactly(nodes.get(survivor));
            assertThat(plan.lost()).containsExactlyInAnyOrder(nodes.get(lost.get(0)), nodes.get(lost.get(1)));
            assertThat(plan.applied()).isPositive();
            // the CLI prints the plan and changes nothing without --yes, then recovers with it
            Run dry = cli(cluster, "recover-region", String.valueOf(id));
            assertThat(dry.code()).as(dry.out() + dry.err()).isZero();
            assertThat(dry.out()).contains("region " + id + ": 1 of its 3 voters survive")
                    .contains(nodes.get(survivor) + "  term ").contains("lost (removed from the cluster map)")
                    .contains("nothing changed").contains("--yes");
            assertThat(kept.peers()).as("a plan changes nothing").hasSize(3);

            Run done = cli(cluster, "recover-region", String.valueOf(id), "--yes");
            assertThat(done.code()).as(done.out() + done.err()).isZero();
            assertThat(done.out()).contains("region " + id + " recovered: leader " + nodes.get(survivor))
                    .contains("voters " + nodes.get(survivor) + ";");
            assertThat(kept.isLeader()).isTrue();
            assertThat(kept.peers()).containsExactly(nodes.get(survivor));
            for (int r : broken) {
                if (r != id) {
                    await().atMost(60, SECONDS).ignoreExceptions()
                            .until(() -> sync(client.recoverRegion(sync(client.planRecovery(r)))) != null);
                }
            }

            // placement gives each three replicas again, on live nodes; every write is there
            List<String> live = new ArrayList<>(nodes);
            lost.forEach(i -> live.remove(nodes.get(i)));
            for (int r : broken) {
                await().atMost(120, SECONDS).until(() -> {
                    Region x = cluster.node(cluster.leaderOf(r)).host().region(r);
                    return x != null && x.peers().size() == 3 && live.containsAll(x.peers());
                });
            }
            for (int i = 0; i < KEYS; i++) {
                assertThat(sync(client.get(SpreadKeys.key(i)))).as("key %d", i).isEqualTo(value(i));
            }
            // and it is led normally now: a second recovery is refused
            assertRefused(() -> sync(client.planRecovery(id)), ErrorCode.INVALID_ARGUMENT, "has a leader");
        }
    }

    /** The highest applied index of region {@code r} among its replicas ({@code max}), or the lowest. */
    private static long applied(InProcessCluster cluster, int r, boolean max) {
        long out = max ? 0 : Long.MAX_VALUE;
        for (int i = 0; i < cluster.size(); i++) {
            Region x = cluster.node(i) == null ? null : cluster.node(i).host().region(r);
            if (x != null) {
                out = max ? Math.max(out, x.info().getAppliedIndex()) : Math.min(out, x.info().getAppliedIndex());
            }
        }
        return out;
    }

    private record Run(int code, String out, String err) {
    }

    private static Run cli(InProcessCluster cluster, String... args) {
        List<String> a = new ArrayList<>();
        for (int i = 0; i < cluster.size(); i++) {
            if (cluster.node(i) != null) {
                a.add(cluster.endpoints().get(i));
            }
        }
        List<String> all = new ArrayList<>(List.of("--servers", String.join(",", a)));
        all.addAll(List.of(args));
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int code = io.kvraft.client.cli.KvCtl.run(all.toArray(String[]::new), new java.io.PrintWriter(out, true),
                new java.io.PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    private static void assertRefused(Runnable call, ErrorCode code, String words) {
        assertThatThrownBy(call::run).satisfies(e -> {
            KvException k = KvException.unwrap(e instanceof CompletionException ? e : new CompletionException(e));
            assertThat(k.code()).isEqualTo(code);
            assertThat(k.getMessage()).contains(words);
        });
    }
}
