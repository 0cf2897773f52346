package io.kvraft.benchmark.nemesis;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.NodeState;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The nemesis's replace event against made-up cluster maps on a made-up clock: when the cluster can afford to lose a
 * node's data, what it does to the node's process, and how it tells a rebuilt node from one still being rebuilt (a
 * map that still shows the old process's report is no rebuild).
 */
@Timeout(30)
class ReplaceEventTest {

    static final List<String> NODES = List.of("10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.3:7001");

    /** A map of three nodes, factor 3: node ids, liveness, replicas each node reports, and two regions' peers. */
    static final class Map3 {
        final String[] ids = {"a", "b", "c"};
        final boolean[] live = {true, true, true};
        final int[] replicas = {2, 2, 2};
        final int[] missing = {0, 0, 0};
        final List<List<String>> peers = new ArrayList<>(List.of(NODES, NODES));
        final List<ClusterInfo.Move> moves = new ArrayList<>();
        boolean gap;

        Map3 id(int i, String id) {
            ids[i] = id;
            return this;
        }

        Map3 replicas(int i, int n) {
            replicas[i] = n;
            return this;
        }

        Map3 missing(int i, int n) {
            missing[i] = n;
            return this;
        }

        Map3 peers(int region, List<String> p) {
            peers.set(region, p);
            return this;
        }

        ClusterInfo build() {
            List<ClusterInfo.Node> nodes = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                nodes.add(new ClusterInfo.Node(NODES.get(i), ids[i], NodeState.UP, 0, 0,
                        new ClusterInfo.Status(live[i], replicas[i], 0, 0, 0, false, missing[i])));
            }
            // two regions: [, m) and [m, +inf), or [n, +inf) with a gap before it
            List<RegionInfo> regions = List.of(
                    new RegionInfo(1, new byte[0], "m".getBytes(StandardCharsets.UTF_8), 1, peers.get(0), "", 0, 0, "", 0, false, 0, List.of()),
                    new RegionInfo(2, (gap ? "n" : "m").getBytes(StandardCharsets.UTF_8), new byte[0], 1, peers.get(1), "", 0, 0, "", 0, false, 0,
                            List.of()));
            return new ClusterInfo("c", 3, 0, nodes, "", List.of(), List.of(), moves, 0, regions);
        }
    }

    /** Answers the first look with {@code first}, the later ones with {@code later} in turn, the last one repeated. */
    static class ScriptedAdmin implements DrainEvent.Admin {
        final ClusterInfo first;
        final LinkedList<ClusterInfo> later = new LinkedList<>();
        int looks;

        ScriptedAdmin(ClusterInfo first, ClusterInfo... later) {
            this.first = first;
            this.later.addAll(List.of(later));
        }

        @Override
        public CompletableFuture<ClusterInfo> cluster() {
            if (looks++ == 0) {
                return CompletableFuture.completedFuture(first);
            }
            return CompletableFuture.completedFuture(later.size() > 1 ? later.removeFirst() : later.getFirst());
        }

        @Override
        public CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state) {
            throw new AssertionError("a replace changes no node state");
        }
    }

    /** The replaced node's own regions at each look in turn (ids), the last one repeated; none before the first. */
    static final class ScriptedOwn implements ReplaceEvent.OwnRegions {
        final LinkedList<List<Integer>> held = new LinkedList<>();

        @SafeVarargs
        ScriptedOwn(List<Integer>... held) {
            this.held.addAll(List.of(held));
        }

        @Override
        public List<KvProto.RegionInfo> of(String node) {
            List<Integer> ids = held.isEmpty() ? List.of() : held.size() > 1 ? held.removeFirst() : held.getFirst();
            return ids.stream().map(id -> KvProto.RegionInfo.newBuilder().setId(id).build()).toList();
        }
    }

    private static List<KvProto.RegionInfo> regions(Integer... ids) {
        return new ScriptedOwn(List.of(ids)).of("any");
    }

    /** Records what was done to which process (1-based, as the lines name nodes). */
    static final class FakeProcesses implements NodeProcesses {
        final List<String> done = new ArrayList<>();
        final boolean[] running = {true, true, true, false, false};

        @Override
        public void start(int i) {
            done.add("start " + (i + 1));
            running[i] = true;
        }

        @Override
        public void kill(int i) {
            done.add("kill " + (i + 1));
            running[i] = false;
        }

        @Override
        public void stop(int i) {
            done.add("stop " + (i + 1));
            running[i] = false;
        }

        @Override
        public void wipe(int i) {
            done.add("wipe " + (i + 1));
        }

        @Override
        public boolean running(int i) {
            return running[i];
        }
    }

    /** A clock that moves only when the event pauses. */
    static final class FakeClock {
        long nanos = 1_000_000_000L;

        void pause(long ms) {
            nanos += TimeUnit.MILLISECONDS.toNanos(ms);
        }
    }

    private static ReplaceEvent replaces(ScriptedAdmin admin, ScriptedOwn own, FakeProcesses p, long holdMs,
                                         long startMs) {
        FakeClock clock = new FakeClock();
        return new ReplaceEvent(admin, own, p, NODES, holdMs, startMs, new Random(1), () -> clock.nanos, clock::pause);
    }

    @Test
    void when_everyRegionHasItsReplicasOnLiveNodes_then_theClusterCanAffordAReplace() {
        assertThat(ReplaceEvent.unaffordable(new Map3().build())).isNull();
        assertThat(ReplaceEvent.unaffordable(new Map3().peers(1, NODES.subList(0, 2)).build()))
                .isEqualTo("region 2 has 2 of 3 replicas");
        Map3 down = new Map3();
        down.live[2] = false;
        assertThat(ReplaceEvent.unaffordable(down.build())).isEqualTo("region 1's replica on 10.0.0.3:7001 is not live");
        Map3 rebuilding = new Map3();
        rebuilding.moves.add(new ClusterInfo.Move(2, NODES.get(1), NODES.get(1), "rebuild", 0));
        assertThat(ReplaceEvent.unaffordable(rebuilding.build())).isEqualTo("region 2 is being given a replica (rebuild)");
        assertThat(ReplaceEvent.unaffordable(new Map3().missing(1, 1).build()))
                .as("a node replaced before, one of its replicas not rebuilt yet, no move running at this moment")
                .isEqualTo("node 10.0.0.2:7001 lacks 1 of the 2 replicas the map lists on it (a rebuild is under way)");
        assertThat(ReplaceEvent.unaffordable(new Map3().replicas(1, 3).build())).as("one more: a move's target").isNull();
        Map3 gap = new Map3();
        gap.gap = true;
        assertThat(ReplaceEvent.unaffordable(gap.build())).isEqualTo("the map's regions do not cover the key space yet");
    }

    @Test
    void when_theReplacedNodeHoldsEveryRegionTheMapListsOnIt_then_itIsRebuilt() {
        String node = NODES.get(0);
        assertThat(ReplaceEvent.rebuilt(new Map3().build(), node, regions(1, 2))).isTrue();
        assertThat(ReplaceEvent.rebuilt(new Map3().build(), node, regions()))
                .as("the map still lists it everywhere, and it holds nothing: just restarted").isFalse();
        assertThat(ReplaceEvent.rebuilt(new Map3().build(), node, regions(2))).as("one of two rebuilt").isFalse();
        assertThat(ReplaceEvent.rebuilt(new Map3().peers(1, NODES.subList(1, 3)).build(), node, regions(1)))
                .as("its voter out of region 2, not back yet").isFalse();
        assertThat(ReplaceEvent.progress(new Map3().build(), node, regions(2)))
                .isEqualTo("it holds 1 of the 2 regions the map lists on it, 0 regions short of replicas");
    }

    @Test
    void when_theNewNodeJoinsAndItsReplicasComeBack_then_itIsRebuilt_notWhileTheMapStillListsItsOldReplicas()
            throws Exception {
        // node 1 picked by the seed: old id "a" until the new process joins as "a2"; the map first still lists it in
        // every region, as before the wipe, while it holds none: no rebuild yet
        List<String> without = NODES.subList(1, 3);
        ScriptedAdmin admin = new ScriptedAdmin(new Map3().build(),
                new Map3().build(),                                   // not joined yet
                new Map3().id(0, "a2").build(),                       // joined
                new Map3().id(0, "a2").build(),                       // the hold's looks: listed everywhere still
                new Map3().id(0, "a2").peers(0, without).peers(1, without).build(), // voters out
                new Map3().id(0, "a2").peers(1, without).build(),     // one back
                new Map3().id(0, "a2").build());                      // both back
        ScriptedOwn own = new ScriptedOwn(List.of(), List.of(), List.of(1), List.of(1, 2));
        FakeProcesses p = new FakeProcesses();
        ReplaceEvent replaces = replaces(admin, own, p, 10_000, 60_000);

        String line = replaces.run();

        String node = replaces.lastNode();
        int i = NODES.indexOf(node) + 1;
        assertThat(p.done).containsExactly("kill " + i, "wipe " + i, "start " + i);
        assertThat(line).startsWith("replace node " + i + " (" + node + ", 2 replicas): kill -9, data wiped, started"
                + " empty: rebuilt, joined after 1.0 s, rebuilt after 3.0 s");
        assertThat(replaces.summary()).isEqualTo("1 asked: 1 rebuilt, 0 partly, 0 skipped, 0 failed");
    }

    @Test
    void when_theHoldPassesBeforeTheRebuild_then_itCountsAsPartly_andTheNextIsSkippedWhileARegionIsShort()
            throws Exception {
        ClusterInfo shortOne = new Map3().id(0, "a2").id(1, "b2").id(2, "c2").replicas(0, 0).replicas(1, 0)
                .replicas(2, 0).peers(0, NODES.subList(0, 2)).peers(1, NODES.subList(1, 3)).build();
        ScriptedAdmin admin = new ScriptedAdmin(new Map3().build(), shortOne);
        FakeProcesses p = new FakeProcesses();
        ReplaceEvent replaces = replaces(admin, new ScriptedOwn(), p, 2_000, 60_000);

        String line = replaces.run();
        int listed = replaces.lastNode().equals(NODES.get(1)) ? 2 : 1; // region 1 on nodes 1-2, region 2 on nodes 2-3
        assertThat(line).endsWith(": partly, joined after 0.5 s, it holds 0 of the " + listed + " regions the map lists"
                + " on it, 2 regions short of replicas after 2.5 s");
        assertThat(p.done).hasSize(3);

        // the next one finds the rebuild under way: nothing is done to any process
        ScriptedAdmin next = new ScriptedAdmin(shortOne, shortOne);
        ReplaceEvent again = new ReplaceEvent(next, new ScriptedOwn(), p, NODES, 2_000, 60_000, new Random(2), () -> 0L,
                ms -> { });
        assertThat(again.run()).isEqualTo("replace: skipped, the cluster cannot afford it now (region 1 has 2 of 3"
                + " replicas)");
        assertThat(p.done).hasSize(3);
        assertThat(again.summary()).isEqualTo("1 asked: 0 rebuilt, 0 partly, 1 skipped, 0 failed");
    }

    @Test
    void when_theNewNodeNeverJoins_then_itFails_andNoMapMeansSkipped() throws Exception {
        ScriptedAdmin admin = new ScriptedAdmin(new Map3().build(), new Map3().build());
        FakeProcesses p = new FakeProcesses();
        ReplaceEvent replaces = replaces(admin, new ScriptedOwn(), p, 2_000, 3_000);
        assertThat(replaces.run()).contains(": failed, the new node did not join the map within 3 s");
        assertThat(replaces.counts().get(ReplaceEvent.Outcome.FAILED)).isEqualTo(1);

        DrainEvent.Admin noMap = new ScriptedAdmin(null) {
            @Override
            public CompletableFuture<ClusterInfo> cluster() {
                return CompletableFuture.failedFuture(new KvException(ErrorCode.NO_LEADER, "no map leader"));
            }
        };
        ReplaceEvent none = new ReplaceEvent(noMap, new ScriptedOwn(), p, NODES, 2_000, 3_000, new Random(1), () -> 0L,
                ms -> { });
        assertThat(none.run()).startsWith("replace: no cluster map");
        assertThat(none.summary()).isEqualTo("1 asked: 0 rebuilt, 0 partly, 1 skipped (NO_LEADER 1), 0 failed");
    }
}
