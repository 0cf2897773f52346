package io.kvraft.benchmark.nemesis;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.NodeState;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The nemesis's drain event against a made-up cluster map on a made-up clock: which node it drains, how long it waits,
 * that it always undrains, and how it counts the outcomes and the replicas moved (a drain refused, failed or of unknown
 * outcome is counted, never thrown).
 */
@Timeout(30)
class DrainEventTest {

    private static final List<String> NODES = List.of("10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.3:7001", "10.0.0.4:7001");

    /** One region over the whole key space, on {@code peers}. */
    static RegionInfo wholeKeySpace(List<String> peers, String leader) {
        return new RegionInfo(1, new byte[0], new byte[0], 1, peers, leader, 0, 0, "", 0, false, 0, List.of());
    }

    /** A map of {@code nodes} and {@code regions}, led by the first node, with nothing else. */
    static ClusterInfo cluster(List<ClusterInfo.Node> nodes, List<RegionInfo> regions) {
        return new ClusterInfo("c", 3, 1, nodes, NODES.get(0), List.of(), List.of(), List.of(), 0, regions);
    }

    /** What a state change answers; the event does not read it. */
    static final ClusterInfo CHANGED = cluster(List.of(), List.of());

    /**
     * A cluster map of four nodes, factor 3: node states, which nodes are live, replicas and leaders per node. While a
     * node is DRAINING each look at the map finds {@code movesPerLook} more of its replicas moved to the other nodes.
     * State changes answer, in turn, with what {@code answers} holds (a change done when it is empty); it records what
     * was asked.
     */
    private static class FakeAdmin implements DrainEvent.Admin {
        final Map<String, NodeState> states = new LinkedHashMap<>();
        final Set<String> live = new HashSet<>(NODES);
        final Map<String, Integer> replicas = new LinkedHashMap<>();
        final Deque<KvException> answers = new LinkedList<>(); // null: the change is done
        final List<String> asked = new ArrayList<>();
        int movesPerLook = 6;
        int looks;
        KvException mapDown;

        FakeAdmin() {
            for (String n : NODES) {
                states.put(n, NodeState.UP);
                replicas.put(n, 18);
            }
        }

        @Override
        public CompletableFuture<ClusterInfo> cluster() {
            looks++;
            if (mapDown != null) {
                return CompletableFuture.failedFuture(mapDown);
            }
            states.forEach((n, s) -> {
                if (s == NodeState.DRAINING) {
                    replicas.put(n, Math.max(0, replicas.get(n) - movesPerLook));
                }
            });
            List<ClusterInfo.Node> nodes = new ArrayList<>();
            List<String> holders = new ArrayList<>();
            for (String n : NODES) {
                nodes.add(new ClusterInfo.Node(n, "id-" + n, states.get(n), 0, 0, new ClusterInfo.Status(live.contains(n),
                        replicas.get(n), replicas.get(n) / 3, 0, 0, false, 0)));
                if (replicas.get(n) > 0) {
                    holders.add(n);
                }
            }
            // one region over the whole key space, on every node that still holds replicas
            return CompletableFuture.completedFuture(new ClusterInfo("c", 3, looks, nodes, NODES.get(0), List.of(),
                    List.of(), List.of(), 0, List.of(wholeKeySpace(holders, NODES.get(0)))));
        }

        @Override
        public CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState state) {
            asked.add(state + " " + endpoint);
            KvException e = answers.pollFirst();
            if (e != null) {
                return CompletableFuture.failedFuture(e);
            }
            states.put(endpoint, state);
            return CompletableFuture.completedFuture(CHANGED);
        }
    }

    /** A clock that moves only when the event pauses. */
    private static final class FakeClock {
        long nanos = 1_000_000_000L;
        final List<Long> pauses = new ArrayList<>();

        void pause(long ms) {
            pauses.add(ms);
            nanos += TimeUnit.MILLISECONDS.toNanos(ms);
        }
    }

    private static DrainEvent drains(FakeAdmin admin, FakeClock clock, long holdMs, long seed) {
        return new DrainEvent(admin, NODES, holdMs, new Random(seed), () -> clock.nanos, clock::pause);
    }

    @Test
    void when_theNodeHoldsNoReplicaBeforeTheHoldPasses_then_itIsDrainedThenUndrained_andItsMovesCounted() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        FakeClock clock = new FakeClock();
        DrainEvent drains = drains(admin, clock, 4000, 1);

        String line = drains.run();

        String node = drains.lastNode();
        assertThat(admin.asked).containsExactly("DRAINING " + node, "UP " + node);
        assertThat(admin.states.get(node)).isEqualTo(NodeState.UP);
        // 18 replicas, 6 moved per look at the map: none left at the third look, 1.5 s in
        assertThat(line).isEqualTo("drain node " + (NODES.indexOf(node) + 1) + " (" + node + ") (18 replicas, 6 leaders;"
                + " 4 of 4 nodes UP, factor 3): drained, 18 -> 0 replicas in 1.5 s (18 moved off), undrained");
        assertThat(clock.pauses).containsExactly(500L, 500L, 500L);
        assertThat(drains.attempts).singleElement().satisfies(a -> {
            assertThat(a.outcome()).isEqualTo(DrainEvent.Outcome.DRAINED);
            assertThat(a.before()).isEqualTo(18);
            assertThat(a.after()).isZero();
            assertThat(a.moved()).isEqualTo(18);
            assertThat(a.undrained()).isTrue();
        });
        assertThat(drains.summary()).isEqualTo("1 asked: 1 drained, 0 partly, 0 refused, 0 failed, 0 unknown;"
                + " 18 replicas moved off the drained nodes, every node undrained");
    }

    @Test
    void when_theHoldPassesFirst_then_itIsUndrainedWithReplicasLeft_andCountedAsPartly() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.movesPerLook = 1;
        FakeClock clock = new FakeClock();
        DrainEvent drains = drains(admin, clock, 1200, 2);

        String line = drains.run();

        String node = drains.lastNode();
        assertThat(admin.asked).containsExactly("DRAINING " + node, "UP " + node);
        // looks at 0.5 s and 1.0 s, the last pause cut to what is left of the hold
        assertThat(clock.pauses).containsExactly(500L, 500L, 200L);
        assertThat(line).endsWith(": partly, 18 -> 15 replicas in 1.2 s (3 moved off), undrained");
        assertThat(drains.moved()).isEqualTo(3);
        // a drain that ran out of time is no error: no code in the summary
        assertThat(drains.summary()).isEqualTo("1 asked: 0 drained, 1 partly, 0 refused, 0 failed, 0 unknown;"
                + " 3 replicas moved off the drained nodes, every node undrained");
    }

    @Test
    void when_nodesAreDrainingDownOrNotLive_then_onlyAnUpLiveNodeIsDrained() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.states.put(NODES.get(0), NodeState.REMOVED);
        admin.states.put(NODES.get(1), NodeState.DRAINING);
        admin.movesPerLook = 0;
        admin.replicas.put(NODES.get(1), 5);
        admin.live.remove(NODES.get(2));
        FakeClock clock = new FakeClock();
        DrainEvent drains = drains(admin, clock, 500, 3);
        for (int i = 0; i < 10; i++) {
            drains.run();
        }
        assertThat(admin.asked).containsOnly("DRAINING " + NODES.get(3), "UP " + NODES.get(3)).hasSize(20);
        assertThat(drains.attempts).allSatisfy(a -> assertThat(a.node()).isEqualTo(NODES.get(3)));
    }

    @Test
    void when_severalNodesAreUpAndLive_then_eachMayBeDrained() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.movesPerLook = 0;
        DrainEvent drains = drains(admin, new FakeClock(), 500, 4);
        for (int i = 0; i < 40; i++) {
            drains.run();
        }
        assertThat(drains.attempts).extracting(DrainEvent.Attempt::node).containsAll(NODES);
    }

    @Test
    void when_theDrainIsRefused_then_nothingIsUndrainedAndItCountsAsRefused() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.answers.add(new KvException(ErrorCode.INVALID_ARGUMENT,
                "draining 10.0.0.2:7001 would leave 2 UP nodes, fewer than replication.factor 3"));
        FakeClock clock = new FakeClock();
        DrainEvent drains = drains(admin, clock, 4000, 5);

        String line = drains.run();

        assertThat(admin.asked).singleElement().asString().startsWith("DRAINING ");
        assertThat(line).endsWith(": refused (INVALID_ARGUMENT: draining 10.0.0.2:7001 would leave 2 UP nodes, fewer"
                + " than replication.factor 3)");
        assertThat(clock.pauses).isEmpty();
        assertThat(drains.summary()).isEqualTo("1 asked: 0 drained, 0 partly, 1 refused (INVALID_ARGUMENT 1),"
                + " 0 failed, 0 unknown; 0 replicas moved off the drained nodes, every node undrained");
    }

    @Test
    void when_drainsFailOrTimeOut_then_eachOutcomeIsCountedByCode_andOneThatMayHaveBeenTakenIsUndrained()
            throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.answers.add(new KvException(ErrorCode.NO_LEADER, "no map leader", "", false));
        admin.answers.add(new KvException(ErrorCode.UNAVAILABLE, "connection refused", "", true)); // never sent
        admin.answers.add(new KvException(ErrorCode.TIMEOUT, "no answer", "", false));          // may have been taken
        admin.answers.add(null);                                                                  // its undrain
        admin.answers.add(new KvException(ErrorCode.UNAVAILABLE, "connection lost", "", false));
        admin.answers.add(null);
        DrainEvent drains = drains(admin, new FakeClock(), 4000, 6);
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            lines.add(drains.run());
        }
        assertThat(drains.attempts).extracting(DrainEvent.Attempt::outcome).containsExactly(DrainEvent.Outcome.FAILED,
                DrainEvent.Outcome.FAILED, DrainEvent.Outcome.UNKNOWN, DrainEvent.Outcome.UNKNOWN);
        assertThat(lines.get(0)).endsWith(": failed (NO_LEADER: no map leader)");
        assertThat(lines.get(2)).endsWith(": unknown (TIMEOUT: no answer), undrained");
        // an undrain follows each drain that may have been taken, none follows one that was not
        assertThat(admin.asked).filteredOn(a -> a.startsWith("UP ")).containsExactly(
                "UP " + drains.attempts.get(2).node(), "UP " + drains.attempts.get(3).node());
        assertThat(admin.states.values()).containsOnly(NodeState.UP);
        assertThat(drains.summary()).isEqualTo("4 asked: 0 drained, 0 partly, 0 refused,"
                + " 2 failed (NO_LEADER 1, UNAVAILABLE 1), 2 unknown (TIMEOUT 1, UNAVAILABLE 1);"
                + " 0 replicas moved off the drained nodes, every node undrained");
    }

    @Test
    void when_theUndrainFails_then_itIsTriedAgainBeforeTheNextDrainAndAtTheEnd() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.movesPerLook = 0;
        DrainEvent drains = drains(admin, new FakeClock(), 1000, 7);
        admin.answers.add(null); // the drain is taken
        admin.answers.add(new KvException(ErrorCode.NO_LEADER, "no map leader"));

        String first = drains.run();

        String node = drains.lastNode();
        assertThat(first).endsWith(", undrain FAILED (NO_LEADER: no map leader; tried again later)");
        assertThat(admin.states.get(node)).isEqualTo(NodeState.DRAINING);
        assertThat(drains.leftDraining()).containsExactly(node);
        assertThat(drains.summary()).endsWith("LEFT DRAINING: " + node);
        assertThat(drains.attempts.get(0).undrained()).isFalse();

        String second = drains.run();

        assertThat(second).startsWith("undrain node " + (NODES.indexOf(node) + 1) + " (" + node + "): done; drain ");
        assertThat(drains.leftDraining()).isEmpty();
        assertThat(admin.states.values()).containsOnly(NodeState.UP);
        assertThat(drains.undrainAll()).isEmpty();
    }

    @Test
    void when_theMapCannotBeHadOrNoNodeIsUpAndLive_then_nothingIsAskedAndItCountsAsFailed() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.mapDown = new KvException(ErrorCode.NO_LEADER, "no map leader");
        DrainEvent drains = drains(admin, new FakeClock(), 4000, 8);
        assertThat(drains.run()).isEqualTo("drain: no cluster map (NO_LEADER: no map leader), nothing asked");
        admin.mapDown = null;
        admin.live.clear();
        assertThat(drains.run()).isEqualTo("drain: no node is UP and live in the cluster map (4 UP), nothing asked");
        assertThat(admin.asked).isEmpty();
        assertThat(drains.lastNode()).isEmpty();
        assertThat(drains.summary()).startsWith("2 asked: 0 drained, 0 partly, 0 refused,"
                + " 2 failed (NO_LEADER 1, UNAVAILABLE 1), 0 unknown");
    }

    @Test
    void when_aLookAtTheMapFailsWhileDraining_then_itLooksAgain() throws Exception {
        FakeAdmin admin = new FakeAdmin() {
            @Override
            public CompletableFuture<ClusterInfo> cluster() {
                if (looks == 1) { // the second look: the map's leader is moving
                    looks++;
                    return CompletableFuture.failedFuture(new KvException(ErrorCode.NO_LEADER, "electing"));
                }
                return super.cluster();
            }
        };
        FakeClock clock = new FakeClock();
        DrainEvent drains = drains(admin, clock, 4000, 9);
        assertThat(drains.run()).contains(": drained, 18 -> 0 replicas in 2.0 s (18 moved off), undrained");
    }

    @Test
    void when_theRegionsDoNotCoverTheKeySpace_then_aNodeReportingNoneIsNotDrainedYet() {
        List<ClusterInfo.Node> reportsNone = List.of(new ClusterInfo.Node(NODES.get(1), "id", NodeState.DRAINING, 0, 0,
                new ClusterInfo.Status(true, 0, 0, 0, 0, false, 0)));
        ClusterInfo noRegions = cluster(reportsNone, List.of());
        assertThat(DrainEvent.drained(noRegions, NODES.get(1))).isFalse();
        ClusterInfo named = cluster(reportsNone, List.of(wholeKeySpace(List.of(NODES.get(1)), "")));
        assertThat(DrainEvent.drained(named, NODES.get(1))).isFalse();
        ClusterInfo noStatus = cluster(List.of(new ClusterInfo.Node(NODES.get(1), "id", NodeState.DRAINING, 0, 0, null)),
                named.regions());
        assertThat(noStatus.replicas(NODES.get(1))).isEqualTo(1);
        ClusterInfo gone = cluster(reportsNone, List.of(wholeKeySpace(List.of(NODES.get(0)), "")));
        assertThat(DrainEvent.drained(gone, NODES.get(1))).isTrue();
    }

    @Test
    void when_theNemesisTakesItsDrainTurn_then_itIsAnEventAtTheDrainedNode_andTheReportHasADrainsLine()
            throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.answers.add(null);
        admin.answers.add(null);
        admin.answers.add(new KvException(ErrorCode.INVALID_ARGUMENT, "too few UP nodes"));
        DrainEvent drains = drains(admin, new FakeClock(), 4000, 10);
        Nemesis nemesis = new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.DRAIN), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), System.nanoTime(), null, null, drains);
        assertThat(nemesis.cycle(0, false)).isEqualTo(Nemesis.Fault.DRAIN);
        assertThat(nemesis.cycle(1, true)).isEqualTo(Nemesis.Fault.DRAIN);
        assertThat(nemesis.counts()).containsExactly(Map.entry(Nemesis.Fault.DRAIN, 2));
        assertThat(nemesis.events).extracting(Nemesis.Event::node).containsExactly(
                NODES.indexOf(drains.attempts.get(0).node()), NODES.indexOf(drains.attempts.get(1).node()));
        assertThat(nemesis.events.get(0).detail()).contains(": drained, 18 -> 0 replicas", "(18 moved off), undrained");
        assertThat(nemesis.events.get(1).detail()).contains(": refused (INVALID_ARGUMENT: too few UP nodes)");
        assertThat(Nemesis.Fault.parse(" drain ")).isEqualTo(Nemesis.Fault.DRAIN);
        assertThat(Nemesis.Fault.DRAIN.isEvent()).isTrue();
        assertThat(Nemesis.Fault.DRAIN.needsNetwork()).isFalse();

        RegionMapCheck.Result map = new RegionMapCheck.Result(List.of(), 4, 24, 0.1, 3);
        RegisterWorkload load = new RegisterWorkload(null, List.of(new byte[]{1}), List.of(), 1, 1, 1, 0);
        String text = new Report("60s", "memory", List.of(Nemesis.Fault.DRAIN), 20, load, nemesis,
                HistoryCheck.check(new ArrayList<>(), RegisterCheckerTest.NO_BUDGET), new long[]{0, 0, 0}, 0,
                new Recovery(1, 1, true, 60), Map.of(), new Histogram(3), new Histogram(3), 0, 24, map)
                .text();
        assertThat(text).contains("(3 replicas per region), 24 regions at the start",
                "faults          2 injected: drain 2\n",
                "drains          2 asked: 1 drained, 0 partly, 1 refused (INVALID_ARGUMENT 1), 0 failed, 0 unknown;"
                        + " 18 replicas moved off the drained nodes, every node undrained\n",
                "region map      4 nodes agree on 24 regions tiling the key space, 3 replicas each (after 0.1 s)",
                "result          PASS");
    }

    @Test
    void when_drainEventsAreWantedWithoutADrainEvent_then_theNemesisRefusesToStart() {
        assertThatThrownBy(() -> new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.DRAIN), 500, new Random(1),
                new PrintStream(OutputStream.nullOutputStream()), 0, null, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DrainEvent");
    }
}
