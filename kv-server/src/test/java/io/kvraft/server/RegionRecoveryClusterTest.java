package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.client.admin.NodeState;
import io.kvraft.client.admin.RecoveryPlan;
import io.kvraft.client.admin.RecoverySurvey;
import io.kvraft.common.proto.KvProto.RecoverRegionRequest;
import io.kvraft.common.proto.KvProto.RecoverRegionResponse;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.rpc.Transport;
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

import static io.kvraft.client.KvClient.sync;
import static io.kvraft.server.RecoveryTests.applied;
import static io.kvraft.server.RecoveryTests.cli;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
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
                io.kvraft.server.config.RaftConfig.LOG_SHARED,
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
            // placement may still be moving replicas onto the five nodes: the regions the two lost nodes share are
            // read from a layout that has stood still for two seconds (a move takes well under one)
            java.util.concurrent.atomic.AtomicReference<List<List<Integer>>> seen = new java.util.concurrent.atomic.AtomicReference<>();
            await().atMost(60, SECONDS).pollInterval(2, SECONDS).until(() -> {
                List<List<Integer>> layout = new ArrayList<>();
                for (int r = 1; r <= REGIONS; r++) {
                    List<Integer> holders = new ArrayList<>();
                    for (int i = 0; i < nodes.size(); i++) {
                        if (cluster.node(i).host().region(r) != null) {
                            holders.add(i);
                        }
                    }
                    layout.add(holders);
                }
                return layout.equals(seen.getAndSet(layout));
            });
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
                    int first = outside.get(0);
                    lost.add(first);
                    // of the other two, the one sharing more regions with the first: more regions to recover at once
                    lost.add(holders.stream().filter(i -> i != first).max(java.util.Comparator.comparingInt(
                            i -> shared(cluster, List.of(first, i)).size())).orElseThrow());
                    survivor = holders.stream().filter(i -> !lost.contains(i)).findFirst().orElseThrow();
                }
            }
            assertThat(region).as("a region with a voter outside the map's voters").isPositive();
            int id = region;
            // every region the two nodes hold both of loses its majority with them: one is recovered by itself, the
            // others with --all
            List<Integer> broken = shared(cluster, lost);
            assertThat(broken).as("regions the two lost nodes share (round-robin layout)").hasSizeGreaterThan(1);
            // each survivor has applied everything its leader has: no acknowledged write is lost in this test
            for (int r : broken) {
                await().atMost(30, SECONDS).until(() -> applied(cluster, r, false) >= applied(cluster, r, true));
            }
            Region kept = cluster.node(survivor).host().region(id);
            // the map's leader has heard from every node (a plan asks the nodes it lists as live)
            await().atMost(30, SECONDS).until(() -> sync(client.admin().cluster()).nodes().stream()
                    .filter(ClusterInfo.Node::live).count() == nodes.size());

            // a region with a leader is not recovered: by the plan, the CLI, nor by a survivor asked directly
            RecoveryTests.assertRefusedOnceAnswered(() -> sync(client.admin().planRecovery(id)), ErrorCode.INVALID_ARGUMENT,
                    "has a leader");
            RecoveryTests.Run led = cli(cluster, "recover-region", String.valueOf(id), "--yes");
            assertThat(led.code()).isEqualTo(1);
            assertThat(led.err()).startsWith("error: INVALID_ARGUMENT").contains("has a leader");
            assertThat(led.err().lines().count()).isEqualTo(1);
            RecoverRegionResponse direct = raw.<RecoverRegionResponse>call(nodes.get(survivor), RecoverRegionRequest
                    .newBuilder().setRegionId(id).addVoters(nodes.get(survivor)).setConfVer(kept.confVer()).build(),
                    5000).join();
            assertThat(direct.getError().getCode()).isEqualTo(KvProto.ErrorCode.INVALID_ARGUMENT);
            assertThat(kept.peers()).hasSize(3);

            for (int i : lost) {
                cluster.stopNode(i);
            }
            await().atMost(30, SECONDS).until(() -> !kept.isLeader() && kept.leaderHint().isEmpty());
            // the lost voters are not removed yet: they might come back with their copies
            // (a plan is UNAVAILABLE while the map's leader, new if it was on a stopped node, lists no node as live)
            RecoveryTests.assertRefusedOnceAnswered(() -> sync(client.admin().planRecovery(id)), ErrorCode.INVALID_ARGUMENT,
                    "not removed");
            // (UNAVAILABLE while the map still takes the stopped nodes as live: they do not answer)
            await().atMost(30, SECONDS).ignoreExceptions().until(() -> sync(client.admin().surveyRecovery()).refused()
                    .keySet(), ids -> ids.containsAll(broken));
            RecoverySurvey early = sync(client.admin().surveyRecovery());
            assertThat(early.plans()).isEmpty();
            assertThat(early.whole()).isEqualTo(REGIONS - broken.size());
            early.refused().values().forEach(e -> assertThat(e.getMessage()).contains("not removed"));
            RecoveryTests.Run notYet = cli(cluster, "recover-region", "--all", "--yes");
            assertThat(notYet.code()).as(notYet.out() + notYet.err()).isEqualTo(1);
            assertThat(notYet.out()).contains("0 lost a majority of their voters and can be recovered; "
                    + broken.size() + " cannot be recovered now");
            assertThat(notYet.err().lines().filter(l -> l.contains("not removed")).count()).isEqualTo(broken.size());
            assertThat(kept.peers()).hasSize(3);
            for (int i : lost) {
                String node = nodes.get(i);
                await().atMost(60, SECONDS).ignoreExceptions()
                        .until(() -> sync(client.admin().nodeState(node, NodeState.REMOVED, true)) != null);
            }

            RecoveryPlan plan = sync(client.admin().planRecovery(id));
            assertThat(plan.survivors()).containsExactly(nodes.get(survivor));
            assertThat(plan.lost()).containsExactlyInAnyOrder(nodes.get(lost.get(0)), nodes.get(lost.get(1)));
            assertThat(plan.applied()).isPositive();
            // the CLI prints the plan and changes nothing without --yes, then recovers with it
            RecoveryTests.Run dry = cli(cluster, "recover-region", String.valueOf(id));
            assertThat(dry.code()).as(dry.out() + dry.err()).isZero();
            assertThat(dry.out()).contains("region " + id + ": 1 of its 3 voters survive")
                    .contains(nodes.get(survivor) + "  term ").contains("lost (removed from the cluster map)")
                    .contains("nothing changed").contains("--yes");
            assertThat(kept.peers()).as("a plan changes nothing").hasSize(3);

            RecoveryTests.Run done = cli(cluster, "recover-region", String.valueOf(id), "--yes");
            assertThat(done.code()).as(() -> done.out() + done.err() + RecoveryTests.jraftState(kept)).isZero();
            // the survivor leads voters without the lost ones: itself alone, or with a replica placement (every 200 ms
            // here) added already
            List<String> lostNodes = lost.stream().map(nodes::get).toList();
            assertThat(done.out()).contains("region " + id + " recovered: leader " + nodes.get(survivor));
            String votersPrinted = done.out().replaceAll("(?s).*recovered: leader [^,]*, term \\d+, voters ([^;]*);.*",
                    "$1");
            assertThat(votersPrinted.split(",")).contains(nodes.get(survivor)).doesNotContainAnyElementsOf(lostNodes);
            assertThat(kept.isLeader()).isTrue();
            assertThat(kept.peers()).contains(nodes.get(survivor)).doesNotContainAnyElementsOf(lostNodes);
            // the others at once: --all plans them, --all --yes recovers them side by side
            List<Integer> others = broken.stream().filter(r -> r != id).toList();
            await().atMost(30, SECONDS).until(() -> sync(client.admin().surveyRecovery()).plans().stream()
                    .map(RecoveryPlan::regionId).sorted().toList(), others::equals);
            RecoveryTests.Run survey = cli(cluster, "recover-region", "--all");
            assertThat(survey.code()).as(survey.out() + survey.err()).isZero();
            assertThat(survey.out()).contains((REGIONS - others.size()) + " regions have a leader or a live majority; "
                    + others.size() + " lost a majority").contains("nothing changed; to recover regions " + others);
            others.forEach(r -> assertThat(survey.out()).contains("region " + r + ": 1 of its 3 voters survive"));
            RecoveryTests.Run all = cli(cluster, "recover-region", "--all", "--yes");
            assertThat(all.code()).as(all.out() + all.err()).isZero();
            assertThat(all.out()).contains(others.size() + " of " + others.size() + " regions recovered");
            others.forEach(r -> assertThat(all.out()).contains("region " + r + " recovered: leader "));
            // REGION and --all go alone
            assertThat(cli(cluster, "recover-region").code()).isEqualTo(2);
            assertThat(cli(cluster, "recover-region", String.valueOf(id), "--all").err())
                    .contains("give either REGION or --all");

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
            RecoveryTests.assertRefusedOnceAnswered(() -> sync(client.admin().planRecovery(id)), ErrorCode.INVALID_ARGUMENT,
                    "has a leader");
        }
    }

    @Test
    void when_twoOfFourVotersSurvive_then_bothTakeTheNewVoters_theFollowerToo() throws Exception {
        int regions = 2;
        try (InProcessCluster cluster = InProcessCluster.start(6, regions, dir, "memory",
                io.kvraft.server.config.RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(4))
                        .withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(false, 200, 2_000L, null)))) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            for (int i = 0; i < KEYS; i++) {
                KvClient.sync(IdempotentWrites.put(client, SpreadKeys.key(i), value(i)));
            }
            Set<String> mapVoters = new TreeSet<>(await().atMost(30, SECONDS).until(() -> java.util.stream.IntStream
                    .range(0, nodes.size()).mapToObj(cluster::node).filter(n -> n.meta().group().isLeader())
                    .map(n -> n.meta().group().voters()).findFirst().orElse(List.of()), v -> v.size() == 3));
            // region 1 (4 voters on 6 nodes): two of its voters go, at most one of them a voter of the map
            List<Integer> holders = new ArrayList<>();
            for (int i = 0; i < nodes.size(); i++) {
                if (cluster.node(i).host().region(1) != null) {
                    holders.add(i);
                }
            }
            assertThat(holders).hasSize(4);
            List<Integer> lost = holders.stream().sorted(java.util.Comparator.comparing(i -> mapVoters.contains(
                    nodes.get(i)))).limit(2).toList(); // those outside the map's voters first
            assertThat(lost.stream().filter(i -> mapVoters.contains(nodes.get(i))).count()).isLessThanOrEqualTo(1);
            List<String> survivors = holders.stream().filter(i -> !lost.contains(i)).map(nodes::get).sorted().toList();
            await().atMost(30, SECONDS).until(() -> applied(cluster, 1, false) >= applied(cluster, 1, true));

            for (int i : lost) {
                cluster.stopNode(i);
            }
            for (int i : lost) {
                String node = nodes.get(i);
                await().atMost(60, SECONDS).ignoreExceptions()
                        .until(() -> sync(client.admin().nodeState(node, NodeState.REMOVED, true)) != null);
            }
            RecoveryPlan plan = await().atMost(60, SECONDS).ignoreExceptions()
                    .until(() -> sync(client.admin().planRecovery(1)), p -> p != null);
            assertThat(plan.survivors()).isEqualTo(survivors);
            RegionInfo led = sync(client.admin().recoverRegion(plan));
            assertThat(led.peers()).containsExactlyInAnyOrderElementsOf(survivors);

            // both survivors list the new voters, the one that follows too (jraft does not tell it)
            for (String s : survivors) {
                Region r = cluster.node(nodes.indexOf(s)).host().region(1);
                await().atMost(30, SECONDS).until(() -> r.peers().stream().sorted().toList(), survivors::equals);
            }
            for (int i = 0; i < KEYS; i++) {
                assertThat(sync(client.get(SpreadKeys.key(i)))).as("key %d", i).isEqualTo(value(i));
            }
        }
    }

    /** The regions every one of {@code nodes} holds a replica of. */
    private static List<Integer> shared(InProcessCluster cluster, List<Integer> nodes) {
        List<Integer> out = new ArrayList<>();
        for (int r = 1; r <= REGIONS; r++) {
            int rr = r;
            if (nodes.stream().allMatch(i -> cluster.node(i).host().region(rr) != null)) {
                out.add(r);
            }
        }
        return out;
    }
}
