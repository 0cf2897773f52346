package io.kvraft.benchmark.nemesis;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.NodeState;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The nemesis's join event against a made-up cluster map on a made-up clock: the spare joins, stays a member, is
 * drained and removed by the next event (or left draining, or at the run's end), and what is done to its process.
 */
@Timeout(30)
class JoinEventTest {

    private static final List<String> FIRST = ReplaceEventTest.NODES;
    private static final String SPARE = "10.0.0.4:7001";

    /**
     * Three nodes and the spare: the spare is in the map {@code joinAfterLooks} looks after its process started; while
     * UP, each look finds {@code movesPerLook} more replicas on it, while DRAINING that many fewer. State changes answer
     * with what {@code answers} holds in turn (done when it is empty).
     */
    private static final class FakeAdmin implements DrainEvent.Admin {
        final FakeProcessesOfSpare processes = new FakeProcessesOfSpare();
        final Deque<KvException> answers = new LinkedList<>(); // null: the change is done
        final List<String> asked = new ArrayList<>();
        NodeState state;
        int replicas;
        int movesPerLook = 2;
        int joinAfterLooks = 2;
        int looksSinceStart;

        @Override
        public CompletableFuture<ClusterInfo> cluster() {
            if (processes.running && state == null && ++looksSinceStart >= joinAfterLooks) {
                state = NodeState.UP;
            } else if (state == NodeState.UP) {
                replicas += movesPerLook;
            } else if (state == NodeState.DRAINING) {
                replicas = Math.max(0, replicas - movesPerLook);
            }
            List<ClusterInfo.Node> nodes = new ArrayList<>();
            for (String n : FIRST) {
                nodes.add(new ClusterInfo.Node(n, "id-" + n, NodeState.UP, 0, 0,
                        new ClusterInfo.Status(true, 24, 0, 0, 0, false, 0)));
            }
            List<String> peers = new ArrayList<>(FIRST);
            if (state != null) {
                nodes.add(new ClusterInfo.Node(SPARE, "spare", state, 0, 0,
                        new ClusterInfo.Status(processes.running, replicas, 0, 0, 0, false, 0)));
                if (replicas > 0) {
                    peers.add(SPARE);
                }
            }
            return CompletableFuture.completedFuture(DrainEventTest.cluster(nodes,
                    List.of(DrainEventTest.wholeKeySpace(peers, ""))));
        }

        @Override
        public CompletableFuture<ClusterInfo> nodeState(String endpoint, NodeState to) {
            asked.add(to + " " + endpoint);
            KvException e = answers.pollFirst();
            if (e != null) {
                return CompletableFuture.failedFuture(e);
            }
            state = to;
            return CompletableFuture.completedFuture(DrainEventTest.CHANGED);
        }
    }

    /** The spare's process (index 3), and what was done to it. */
    private static final class FakeProcessesOfSpare implements NodeProcesses {
        final List<String> done = new ArrayList<>();
        boolean running;

        @Override
        public void start(int i) {
            assertThat(i).isEqualTo(3);
            done.add("start");
            running = true;
        }

        @Override
        public void kill(int i) {
            throw new AssertionError("the join event kills nothing");
        }

        @Override
        public void stop(int i) {
            done.add("stop");
            running = false;
        }

        @Override
        public void wipe(int i) {
            done.add("wipe");
        }

        @Override
        public boolean running(int i) {
            return running;
        }
    }

    private static JoinEvent joins(FakeAdmin admin, long holdMs, long startMs) {
        ReplaceEventTest.FakeClock clock = new ReplaceEventTest.FakeClock();
        return new JoinEvent(admin, admin.processes, 3, SPARE, holdMs, startMs, () -> clock.nanos, clock::pause);
    }

    @Test
    void when_theEventsTakeTurns_then_theSpareJoinsAndStays_thenIsDrainedRemovedStoppedAndWiped() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        JoinEvent joins = joins(admin, 10_000, 60_000);

        String joined = joins.run();
        assertThat(joined).isEqualTo("join node 4 (" + SPARE + ") (cluster.join, empty data directory): joined, in the"
                + " map after 1.0 s, 2 replicas after 1.5 s; it stays a member until the next join event drains and"
                + " removes it");
        assertThat(admin.processes.done).containsExactly("wipe", "start");
        assertThat(joins.phase()).isEqualTo(JoinEvent.Phase.IN);

        for (int i = 0; i < 3; i++) {
            admin.cluster(); // placement goes on moving replicas onto it during the faults after the join
        }
        String left = joins.run();
        assertThat(admin.asked).containsExactly("DRAINING " + SPARE, "REMOVED " + SPARE);
        assertThat(left).isEqualTo("drain and remove node 4 (" + SPARE + "): removed, 6 -> 0 replicas in 1.5 s;"
                + " stopped and wiped");
        assertThat(admin.processes.done).containsExactly("wipe", "start", "stop", "wipe");
        assertThat(joins.member()).isFalse();
        assertThat(joins.finish(10_000)).isEmpty();
        assertThat(joins.summary()).isEqualTo("2 asked: 1 joined, 0 empty, 1 removed, 0 draining, 0 refused, 0 failed,"
                + " 0 unknown; node 4 out of the cluster at the end");
    }

    @Test
    void when_theDrainOutlastsTheHold_then_theSpareIsLeftDraining_andTheRunsEndRemovesIt() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.movesPerLook = 1;
        JoinEvent joins = joins(admin, 1_000, 60_000);
        joins.run();
        for (int i = 0; i < 10; i++) {
            admin.cluster();
        }

        String left = joins.run();
        assertThat(left).startsWith("drain and remove node 4 (" + SPARE + "): draining, ");
        assertThat(left).endsWith("left draining for the next join event");
        assertThat(joins.phase()).isEqualTo(JoinEvent.Phase.LEAVING);
        assertThat(joins.summary()).endsWith("; node 4 LEFT DRAINING at the end");

        String end = joins.finish(60_000);
        assertThat(end).startsWith("at the end: drain and remove node 4 (" + SPARE + "): removed, ");
        assertThat(admin.asked).containsExactly("DRAINING " + SPARE, "DRAINING " + SPARE, "REMOVED " + SPARE);
        assertThat(joins.counts()).containsEntry(JoinEvent.Outcome.DRAINING, 1).containsEntry(JoinEvent.Outcome.REMOVED, 1);
        assertThat(joins.summary()).endsWith("; node 4 out of the cluster at the end");
    }

    @Test
    void when_theRemoveIsRefusedToTheEnd_then_theSpareIsUndrainedAndStaysAMember() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        JoinEvent joins = joins(admin, 10_000, 60_000);
        joins.run();
        KvException refused = new KvException(ErrorCode.INVALID_ARGUMENT, "node " + SPARE + " still holds 0 region"
                + " replicas and a voter of the cluster map: drain it first");
        // the drain is taken, the remove refused (a voter of the map still on it)
        admin.answers.add(null);
        admin.answers.add(refused);
        String left = joins.run();
        assertThat(left).startsWith("drain and remove node 4 (" + SPARE + "): drained (").endsWith("), remove refused ("
                + refused.getMessage() + "); left draining for the next join event");
        assertThat(joins.phase()).isEqualTo(JoinEvent.Phase.LEAVING);

        // and again at the run's end: marked UP again, so no node is left draining
        admin.answers.add(null);
        admin.answers.add(refused);
        String end = joins.finish(10_000);
        assertThat(end).endsWith("; undrained, it stays a member");
        assertThat(admin.asked).containsExactly("DRAINING " + SPARE, "REMOVED " + SPARE, "DRAINING " + SPARE,
                "REMOVED " + SPARE, "UP " + SPARE);
        assertThat(admin.state).isEqualTo(NodeState.UP);
        assertThat(admin.processes.running).isTrue();
        assertThat(joins.summary()).isEqualTo("3 asked: 1 joined, 0 empty, 0 removed, 0 draining,"
                + " 2 refused (INVALID_ARGUMENT 2), 0 failed, 0 unknown; node 4 STILL A MEMBER at the end");
    }

    @Test
    void when_theDrainIsRefused_then_theSpareStaysUp() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        JoinEvent joins = joins(admin, 10_000, 60_000);
        joins.run();
        KvException refused = new KvException(ErrorCode.INVALID_ARGUMENT, "draining " + SPARE + " would leave 2 UP nodes");
        admin.answers.add(refused);
        assertThat(joins.run()).isEqualTo("drain and remove node 4 (" + SPARE + "): drain refused ("
                + refused.getMessage() + ")");
        assertThat(joins.phase()).isEqualTo(JoinEvent.Phase.IN);
        assertThat(admin.state).isEqualTo(NodeState.UP);
    }

    @Test
    void when_theSpareNeverJoins_then_itIsStoppedAndWiped_andCountsAsFailed() throws Exception {
        FakeAdmin admin = new FakeAdmin();
        admin.joinAfterLooks = Integer.MAX_VALUE;
        JoinEvent joins = joins(admin, 10_000, 2_000);
        assertThat(joins.run()).endsWith(": failed, not in the map within 2 s; stopped and wiped");
        assertThat(admin.processes.done).containsExactly("wipe", "start", "stop", "wipe");
        assertThat(joins.member()).isFalse();
        assertThat(joins.counts()).containsEntry(JoinEvent.Outcome.FAILED, 1);
    }

    @Test
    void when_joinAndReplaceAreFaults_then_theyAreEventsThatNeedTheirEventObjects_andFaultsSpareTheSpare() {
        assertThat(Nemesis.Fault.NAMES).isEqualTo(String.join(", ", java.util.Arrays.stream(Nemesis.Fault.values())
                .map(Nemesis.Fault::label).toList()));
        assertThat(Nemesis.Fault.KILL_MAJORITY.label()).isEqualTo("kill-majority");
        assertThat(Nemesis.Fault.parse("Kill-Majority")).isEqualTo(Nemesis.Fault.KILL_MAJORITY);
        assertThat(Nemesis.Fault.parse(" join")).isEqualTo(Nemesis.Fault.JOIN);
        assertThat(Nemesis.Fault.parse("Replace")).isEqualTo(Nemesis.Fault.REPLACE);
        assertThat(List.of(Nemesis.Fault.JOIN, Nemesis.Fault.REPLACE)).allMatch(Nemesis.Fault::isEvent)
                .allMatch(Nemesis.Fault::isMembership);
        Nemesis n = new Nemesis(null, null, List.of(), List.of(Nemesis.Fault.KILL, Nemesis.Fault.JOIN), 1000,
                new Random(1), new PrintStream(OutputStream.nullOutputStream()), 0);
        assertThatThrownBy(() -> n.membership(null, null)).hasMessage("join events need a JoinEvent");
        FakeAdmin admin = new FakeAdmin();
        // three first nodes and the spare as the fourth: faults pick among the three
        assertThat(n.membership(joins(admin, 1000, 1000), null).nodes()).isEqualTo(3);
    }
}
