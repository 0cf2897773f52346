package io.kvraft.client.cli;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.NodeState;
import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class NodeCommandsTest {

    private static final String N1 = "10.0.0.1:8181";
    private static final String N2 = "10.0.0.2:8181";
    private static final String N3 = "10.0.0.3:8181";
    private static final String N4 = "10.0.0.4:8181";

    private static ClusterInfo.Status status(boolean live, int replicas, int leaders, long disk) {
        return new ClusterInfo.Status(live, replicas, leaders, disk, 500, false, 0);
    }

    private static ClusterInfo.Status down(int replicas, long disk) {
        return new ClusterInfo.Status(false, replicas, 0, disk, 500, true, 0);
    }

    private static RegionInfo region(int id, String start, String end, String... peers) {
        return new RegionInfo(id, start.getBytes(StandardCharsets.UTF_8), end.getBytes(StandardCharsets.UTF_8), 0,
                List.of(peers), "", 0, 0, "", 0, false, 0, List.of());
    }

    /** Two regions, [-inf, m) and [m, +inf), on {@code peers}. */
    private static List<RegionInfo> regions(String... peers) {
        return List.of(region(1, "", "m", peers), region(2, "m", "", peers));
    }

    /** The cluster the tests look at, each changing what it needs: four nodes, N1 leading the map. */
    private static final class Cluster {
        final Map<String, NodeState> states = new LinkedHashMap<>(); // in the map's order
        final Map<String, ClusterInfo.Status> status = new HashMap<>();
        List<String> voters = List.of(N1, N2, N3);
        List<RegionInfo> regions = regions(N1, N2, N3);
        final List<ClusterInfo.Move> moves = new ArrayList<>();
        long movesDone;

        Cluster() {
            states.put(N2, NodeState.UP);
            states.put(N1, NodeState.UP);
            states.put(N3, NodeState.DRAINING);
            states.put(N4, NodeState.REMOVED);
            status.put(N1, NodeCommandsTest.status(true, 2, 1, 3L << 30));
            status.put(N2, NodeCommandsTest.status(true, 2, 1, 1536));
            status.put(N3, NodeCommandsTest.status(true, 1, 0, 20L << 20));
            status.put(N4, NodeCommandsTest.status(false, 0, 0, 0));
        }

        Cluster status(String node, ClusterInfo.Status s) {
            status.put(node, s);
            return this;
        }

        ClusterInfo build() {
            List<ClusterInfo.Node> nodes = new ArrayList<>();
            states.forEach((n, st) -> nodes.add(new ClusterInfo.Node(n, "id-" + n, st, 0, 0, status.get(n))));
            return new ClusterInfo("c0ffee", 3, 7, nodes, N1, voters, List.of(N4), moves, movesDone, regions);
        }
    }

    private static Cluster cluster() {
        return new Cluster();
    }

    @Test
    void when_everyNodeNotRemovedIsLive_then_theTableAndSummary_andExit0() {
        StringWriter s = new StringWriter();

        int code = NodeCommands.printList(cluster().build(), new PrintWriter(s, true));

        assertThat(code).isZero();
        assertThat(s.toString().lines()).containsExactly(
                "NODE                  STATE    LIVE REPLICAS  LEADERS       DISK MAP",
                "10.0.0.1:8181         up       yes         2        1    3.0 GiB leader",
                "10.0.0.2:8181         up       yes         2        1    1.5 KiB voter",
                "10.0.0.3:8181         draining yes         1        0   20.0 MiB voter",
                "10.0.0.4:8181         removed  no          0        0        0 B learner",
                "cluster c0ffee: 3 nodes, replication.factor 3, map leader 10.0.0.1:8181");
    }

    @Test
    void when_aNodeLacksReplicasTheMapListsOnIt_then_aLineSaysSo() {
        ClusterInfo c = cluster().status(N2, new ClusterInfo.Status(true, 2, 0, 1536, 500, false, 2)).build();
        StringWriter s = new StringWriter();

        assertThat(NodeCommands.printList(c, new PrintWriter(s, true))).isZero();
        assertThat(s.toString().lines()).endsWith(
                "cluster c0ffee: 3 nodes, replication.factor 3, map leader 10.0.0.1:8181",
                "node 10.0.0.2:8181 lacks 2 of the 2 replicas the map lists on it (a wiped disk, being rebuilt): those"
                        + " regions have one copy fewer until then; replace no other node meanwhile");
    }

    @Test
    void when_aNodeIsDown_then_exit1() {
        ClusterInfo c = cluster().status(N2, status(false, 2, 0, 1536)).build();

        assertThat(NodeCommands.printList(c, new PrintWriter(new StringWriter(), true))).isEqualTo(1);
    }

    @Test
    void when_anUpNodeIsSilentPastDownAfter_then_itsStateReadsDown_andADrainingOneStaysDraining() {
        ClusterInfo c = cluster().status(N2, down(2, 1536)).status(N3, down(1, 1)).build();
        StringWriter s = new StringWriter();

        assertThat(NodeCommands.printList(c, new PrintWriter(s, true))).isEqualTo(1);
        assertThat(s.toString().lines()).contains(
                "10.0.0.2:8181         down     no          2        0    1.5 KiB voter",
                "10.0.0.3:8181         draining no          1        0        1 B voter");
    }

    @Test
    void when_replicasMove_then_oneLinePerMove_andTheMovesDone() {
        Cluster b = cluster();
        b.moves.add(new ClusterInfo.Move(2, N3, N2, "drain", 4_700));
        b.movesDone = 5;
        ClusterInfo c = b.build();

        assertThat(NodeCommands.summary(c)).containsExactly(
                "cluster c0ffee: 3 nodes, replication.factor 3, map leader 10.0.0.1:8181",
                "moving region 2: 10.0.0.3:8181 -> 10.0.0.2:8181 (drain, running 4 s)",
                "moves done by this map leader: 5");
    }

    @Test
    void when_bytesGrow_then_humanUnits() {
        assertThat(NodeCommands.human(0)).isEqualTo("0 B");
        assertThat(NodeCommands.human(1023)).isEqualTo("1023 B");
        assertThat(NodeCommands.human(1024)).isEqualTo("1.0 KiB");
        assertThat(NodeCommands.human(5L << 20)).isEqualTo("5.0 MiB");
        assertThat(NodeCommands.human(3L << 40)).isEqualTo("3.0 TiB");
    }

    /** The drain's polls answer these in turn (the last one again); each pause moves the clock on. */
    private record Drain(int code, String out, String err, long pausedMs) {
    }

    private static Drain watch(long timeoutS, ClusterInfo... answers) {
        Deque<ClusterInfo> left = new ArrayDeque<>(List.of(answers));
        AtomicLong clock = new AtomicLong();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = NodeCommands.watchDrain(N3, () -> left.size() > 1 ? left.poll() : left.peek(),
                TimeUnit.SECONDS.toNanos(timeoutS), clock::get, ms -> clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms)),
                new PrintWriter(out, true), new PrintWriter(err, true));
        return new Drain(code, out.toString(), err.toString(), TimeUnit.NANOSECONDS.toMillis(clock.get()));
    }

    /** N3 draining with {@code replicas} left (the regions' replicas agree); a voter of the map unless told. */
    private static ClusterInfo draining(int replicas, long movesDone, boolean voter) {
        return drainingCluster(replicas, movesDone, voter).build();
    }

    private static Cluster drainingCluster(int replicas, long movesDone, boolean voter) {
        Cluster b = cluster().status(N3, status(true, replicas, 0, 1));
        b.movesDone = movesDone;
        b.regions = replicas > 0 ? regions(N1, N2, N3) : regions(N1, N2, N4);
        if (!voter) {
            b.voters = List.of(N1, N2, N4);
        }
        return b;
    }

    @Test
    void when_theReplicasLeave_then_aLinePerChange_andDrainedWithTheCommandToRemoveIt() {
        Drain d = watch(60, draining(2, 0, true), draining(2, 0, true), draining(1, 1, true), draining(0, 2, true),
                draining(0, 2, false));

        assertThat(d.code()).isZero();
        assertThat(d.out().lines()).containsExactly(
                "node 10.0.0.3:8181: 2 replicas left (moves done: 0)",
                "node 10.0.0.3:8181: 1 replicas left (moves done: 1)",
                "node 10.0.0.3:8181: 0 replicas left (moves done: 2); still a voter of the cluster map",
                "node 10.0.0.3:8181: 0 replicas left (moves done: 2)",
                "node 10.0.0.3:8181 drained: holds no replica (took 4 s); remove it for good with: node remove "
                        + "10.0.0.3:8181");
        assertThat(d.pausedMs()).isEqualTo(4 * NodeCommands.POLL_MS);
    }

    @Test
    void when_theRegionsDoNotCoverTheKeySpaceYet_then_zeroReplicasIsNotTrusted() {
        Cluster noRegions = drainingCluster(0, 0, false);
        noRegions.regions = List.of(); // a new map leader
        ClusterInfo unknown = noRegions.build();
        Drain d = watch(60, unknown, draining(0, 3, false));

        assertThat(d.code()).isZero();
        assertThat(d.pausedMs()).isEqualTo(NodeCommands.POLL_MS);
    }

    @Test
    void when_theTimeoutRunsOut_then_exit1_sayingWhatIsLeft() {
        Drain d = watch(3, draining(2, 0, true));

        assertThat(d.code()).isEqualTo(1);
        assertThat(d.err()).contains("node 10.0.0.3:8181 still holds 2 replicas and a voter of the cluster map after 3 s");
        assertThat(d.pausedMs()).isEqualTo(3 * NodeCommands.POLL_MS);
    }

    @Test
    void when_theNodeIsUndrainedMeanwhile_then_exit1() {
        Cluster undrained = drainingCluster(2, 0, true);
        undrained.states.put(N3, NodeState.UP);
        ClusterInfo up = undrained.build();
        Drain d = watch(60, draining(2, 0, true), up);

        assertThat(d.code()).isEqualTo(1);
        assertThat(d.err()).contains("node 10.0.0.3:8181 is up now, no longer draining");
    }

    private static int run(StringWriter err, String... args) {
        return KvCtl.run(args, new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
    }

    @Test
    void when_theNodeIsNotHostPort_then_usageError_beforeAnyConnection() {
        for (String cmd : List.of("drain", "undrain", "remove")) {
            StringWriter err = new StringWriter();
            assertThat(run(err, "--servers", "127.0.0.1:1", "node", cmd, "nohost")).as(cmd).isEqualTo(2);
            assertThat(err.toString()).contains("expected host:port, got 'nohost'");
        }
    }

    @Test
    void when_noSubcommandOrNode_then_usageError() {
        StringWriter err = new StringWriter();
        assertThat(run(err, "--servers", "127.0.0.1:1", "node")).isEqualTo(2);
        assertThat(err.toString()).contains("list, drain NODE, undrain NODE or remove NODE");
        assertThat(run(new StringWriter(), "--servers", "127.0.0.1:1", "node", "remove")).isEqualTo(2);
    }
}
