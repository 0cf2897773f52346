package io.kvraft.client.cli;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.ClusterResponse;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.NodeStatus;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.ReplicaMove;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class NodeCommandsTest {

    private static final String N1 = "10.0.0.1:8181";
    private static final String N2 = "10.0.0.2:8181";
    private static final String N3 = "10.0.0.3:8181";
    private static final String N4 = "10.0.0.4:8181";

    private static NodeRecord node(String endpoint, NodeState state) {
        return NodeRecord.newBuilder().setEndpoint(endpoint).setNodeId("id-" + endpoint).setState(state).build();
    }

    private static NodeStatus status(String endpoint, boolean live, int replicas, int leaders, long disk) {
        return NodeStatus.newBuilder().setEndpoint(endpoint).setLive(live).setReplicas(replicas).setLeaders(leaders)
                .setDiskBytes(disk).setLastReportMs(500).build();
    }

    /** Two regions, [-inf, m) and [m, +inf), on {@code peers}. */
    private static List<RegionInfo> regions(String... peers) {
        return List.of(RegionInfo.newBuilder().setId(1).setEndKey(ByteString.copyFromUtf8("m")).addAllPeers(List.of(peers))
                        .build(),
                RegionInfo.newBuilder().setId(2).setStartKey(ByteString.copyFromUtf8("m")).addAllPeers(List.of(peers))
                        .build());
    }

    private static ClusterResponse.Builder cluster() {
        return ClusterResponse.newBuilder()
                .setMap(ClusterMap.newBuilder().setClusterId("c0ffee").setFactor(3).setVersion(7)
                        .addNodes(node(N2, NodeState.UP)).addNodes(node(N1, NodeState.UP))
                        .addNodes(node(N3, NodeState.DRAINING)).addNodes(node(N4, NodeState.REMOVED)))
                .addStatus(status(N1, true, 2, 1, 3L << 30)).addStatus(status(N2, true, 2, 1, 1536))
                .addStatus(status(N3, true, 1, 0, 20L << 20)).addStatus(status(N4, false, 0, 0, 0))
                .setMetaLeader(N1).addAllMetaVoters(List.of(N1, N2, N3)).addMetaLearners(N4)
                .addAllRegions(regions(N1, N2, N3));
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
        ClusterResponse c = cluster().setStatus(1, status(N2, true, 2, 0, 1536).toBuilder().setMissing(2).build())
                .build();
        StringWriter s = new StringWriter();

        assertThat(NodeCommands.printList(c, new PrintWriter(s, true))).isZero();
        assertThat(s.toString().lines()).endsWith(
                "cluster c0ffee: 3 nodes, replication.factor 3, map leader 10.0.0.1:8181",
                "node 10.0.0.2:8181 lacks 2 of the 2 replicas the map lists on it (a wiped disk, being rebuilt): those"
                        + " regions have one copy fewer until then; replace no other node meanwhile");
    }

    @Test
    void when_aNodeIsDown_then_exit1() {
        ClusterResponse c = cluster().setStatus(1, status(N2, false, 2, 0, 1536)).build();

        assertThat(NodeCommands.printList(c, new PrintWriter(new StringWriter(), true))).isEqualTo(1);
    }

    @Test
    void when_anUpNodeIsSilentPastDownAfter_then_itsStateReadsDown_andADrainingOneStaysDraining() {
        ClusterResponse c = cluster().setStatus(1, status(N2, false, 2, 0, 1536).toBuilder().setDown(true).build())
                .setStatus(2, status(N3, false, 1, 0, 1).toBuilder().setDown(true).build()).build();
        StringWriter s = new StringWriter();

        assertThat(NodeCommands.printList(c, new PrintWriter(s, true))).isEqualTo(1);
        assertThat(s.toString().lines()).contains(
                "10.0.0.2:8181         down     no          2        0    1.5 KiB voter",
                "10.0.0.3:8181         draining no          1        0        1 B voter");
    }

    @Test
    void when_replicasMove_then_oneLinePerMove_andTheMovesDone() {
        ClusterResponse c = cluster().addMoves(ReplicaMove.newBuilder().setRegionId(2).setFrom(N3).setTo(N2)
                .setReason("drain").setRunningMs(4_700)).setMovesDone(5).build();

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

    private static Drain watch(long timeoutS, ClusterResponse... answers) {
        Deque<ClusterResponse> left = new ArrayDeque<>(List.of(answers));
        AtomicLong clock = new AtomicLong();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = NodeCommands.watchDrain(N3, () -> left.size() > 1 ? left.poll() : left.peek(),
                TimeUnit.SECONDS.toNanos(timeoutS), clock::get, ms -> clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms)),
                new PrintWriter(out, true), new PrintWriter(err, true));
        return new Drain(code, out.toString(), err.toString(), TimeUnit.NANOSECONDS.toMillis(clock.get()));
    }

    /** N3 draining with {@code replicas} left (the regions' replicas agree); a voter of the map unless told. */
    private static ClusterResponse draining(int replicas, long movesDone, boolean voter) {
        ClusterResponse.Builder b = cluster().setStatus(2, status(N3, true, replicas, 0, 1)).setMovesDone(movesDone)
                .clearRegions().addAllRegions(replicas > 0 ? regions(N1, N2, N3) : regions(N1, N2, N4));
        if (!voter) {
            b.clearMetaVoters().addAllMetaVoters(List.of(N1, N2, N4));
        }
        return b.build();
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
        ClusterResponse unknown = draining(0, 0, false).toBuilder().clearRegions().build(); // a new map leader
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
        ClusterResponse up = draining(2, 0, true).toBuilder().setMap(cluster().getMap().toBuilder()
                .setNodes(2, node(N3, NodeState.UP))).build();
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
