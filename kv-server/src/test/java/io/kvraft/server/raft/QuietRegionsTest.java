package io.kvraft.server.raft;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class QuietRegionsTest {

    private static final long MS = 1_000_000L;

    private final FakeRegionView view = new FakeRegionView(5, "10.0.0.1:8181");
    private final AtomicLong clock = new AtomicLong(1_000_000 * MS);
    // a 2 s election timeout (lease 1.8 s), 200 ms heartbeats
    private final QuietRegions.Replica replica = new QuietRegions.Replica("<region-1/10.0.0.2:8181>", view, 2000, 200,
            clock::get);

    @Test
    void when_nothingVouchedForTheLeader_then_theElectionTimerRuns() {
        assertThat(replica.electionPutOffNanos(clock.get())).isZero();
        assertThat(replica.leaderAlive(clock.get())).isFalse();
    }

    @Test
    void when_theLeadersNodeVouchedInTheFollowedTerm_then_theElectionWaitsAnElectionTimeoutFromThenPlusAtMostAHeartbeat() {
        long at = clock.get();
        replica.vouched("10.0.0.1:8181", 5, at);

        long now = at + 500 * MS;
        long putOff = replica.electionPutOffNanos(now);

        assertThat(putOff).isBetween(1500 * MS, 1700 * MS);
        assertThat((now + putOff) % (200 * MS)).isZero(); // on the 200 ms grid
        assertThat(replica.leaderAlive(now)).isTrue();
        assertThat(replica.electionPutOffNanos(at + 2000 * MS)).isZero();
    }

    @Test
    void when_aPutOffIsRoundedToTheGrid_then_itEndsOnTheNextMultipleOfTheGrid() {
        assertThat(QuietRegions.onGrid(1_050, 100, 200)).isEqualTo(150); // due 1150 -> 1200
        assertThat(QuietRegions.onGrid(1_000, 200, 200)).isEqualTo(200); // due 1200, on the grid already
        assertThat(QuietRegions.onGrid(-350, 100, 200)).isEqualTo(150);  // nanoTime may be negative: due -250 -> -200
        assertThat(QuietRegions.onGrid(1_000, 77, 0)).isEqualTo(77);
    }

    @Test
    void when_theReplicaMovedOnToAnotherTermOrLeader_then_anOldVouchDoesNotHoldItsElection() {
        replica.vouched("10.0.0.1:8181", 5, clock.get());

        view.term = 6;
        assertThat(replica.electionPutOffNanos(clock.get())).isZero();

        view.term = 5;
        view.leaderHint = "";
        assertThat(replica.electionPutOffNanos(clock.get())).isZero();

        view.leaderHint = "10.0.0.3:8181";
        assertThat(replica.electionPutOffNanos(clock.get())).isZero();
        assertThat(replica.leaderAlive(clock.get())).isFalse();
    }

    @Test
    void when_aQuorumAnsweredWithinTheLease_then_theLeadersStepDownCheckIsPutOff() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        assertThat(replica.stepDownPutOff(clock.get())).isFalse();

        long sent = clock.get();
        replica.acked("a:1", sent);

        assertThat(replica.stepDownPutOff(sent + 1800 * MS)).isTrue();
        assertThat(replica.leaderAlive(sent + 1800 * MS)).isTrue();
        assertThat(replica.stepDownPutOff(sent + 1801 * MS)).isFalse();
        assertThat(replica.answeredWithin(sent + 1000 * MS)).containsExactly("a:1");
    }

    @Test
    void when_theLeaderLacksAReplicatorForAPeer_then_jraftsStepDownCheckRunsToStartIt() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), false, 10, clock.get());
        replica.acked("a:1", clock.get());
        replica.acked("b:1", clock.get());

        assertThat(replica.stepDownPutOff(clock.get())).isFalse();
        clock.addAndGet(400 * MS);
        assertThat(replica.heartbeatStretch()).isEqualTo(1);

        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        assertThat(replica.stepDownPutOff(clock.get())).isTrue();
    }

    @Test
    void when_fiveReplicasAndOneFollowerAnswered_then_thatIsNoQuorum() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1", "c:1", "d:1"), true, 10, clock.get());
        long sent = clock.get();
        replica.acked("a:1", sent);
        assertThat(replica.stepDownPutOff(sent)).isFalse();

        replica.acked("c:1", sent - 100 * MS);

        assertThat(replica.stepDownPutOff(sent + 1700 * MS)).isTrue();
        assertThat(replica.stepDownPutOff(sent + 1750 * MS)).isFalse(); // the older of the two answers counts
    }

    @Test
    void when_thisReplicaIsNoLongerLeader_then_earlierAnswersVouchForNothing() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        replica.acked("a:1", clock.get());

        view.leader = false;

        assertThat(replica.stepDownPutOff(clock.get())).isFalse();
        replica.notLeading();
        view.leader = true;
        assertThat(replica.stepDownPutOff(clock.get())).isFalse();
    }

    @Test
    void when_everyVoterAnswersAndNothingCommittedForTwoHeartbeats_then_jraftsHeartbeatsAreStretched() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        replica.acked("a:1", clock.get());
        replica.acked("b:1", clock.get());
        assertThat(replica.heartbeatStretch()).isEqualTo(1); // committed just now (the first round)
        assertThat(replica.quiet(clock.get())).isFalse();

        clock.addAndGet(400 * MS);
        replica.acked("b:1", clock.get());
        assertThat(replica.heartbeatStretch()).isEqualTo(QuietRegions.QUIET_STRETCH);
        assertThat(replica.quiet(clock.get())).isTrue(); // what the kv_node_regions_quiet gauge counts

        // a write: the leader tells its followers the new index at once, since a stretched heartbeat is pending
        assertThat(replica.leading(List.of("a:1", "b:1"), true, 11, clock.get())).isTrue();
        assertThat(replica.heartbeatStretch()).isEqualTo(1);
        assertThat(replica.quiet(clock.get())).isFalse();
        // further writes while no stretched heartbeat was scheduled since
        clock.addAndGet(31 * 200 * MS);
        replica.acked("a:1", clock.get());
        replica.acked("b:1", clock.get());
        assertThat(replica.leading(List.of("a:1", "b:1"), true, 12, clock.get())).isFalse();
    }

    @Test
    void when_oneFollowerDoesNotAnswer_then_jraftsHeartbeatsKeepTheirIntervalThoughAQuorumAnswers() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        clock.addAndGet(400 * MS);
        replica.acked("a:1", clock.get());

        assertThat(replica.stepDownPutOff(clock.get())).isTrue();
        assertThat(replica.heartbeatStretch()).isEqualTo(1);
    }

    @Test
    void when_aMoveOrMergeIsUnderWay_then_jraftsHeartbeatsKeepTheirInterval() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        clock.addAndGet(400 * MS);
        replica.acked("a:1", clock.get());
        replica.acked("b:1", clock.get());
        view.changing = true;

        assertThat(replica.heartbeatStretch()).isEqualTo(1);
        view.changing = false;
        assertThat(replica.heartbeatStretch()).isEqualTo(QuietRegions.QUIET_STRETCH);
    }

    @Test
    void when_noQuorumAnswers_then_jraftsHeartbeatsKeepTheirInterval() {
        view.leader = true;
        replica.leading(List.of("a:1", "b:1"), true, 10, clock.get());
        clock.addAndGet(5000 * MS);

        assertThat(replica.heartbeatStretch()).isEqualTo(1);
    }

    @Test
    void when_aRegionHasOneReplica_then_itIsItsOwnQuorum() {
        view.leader = true;
        replica.leading(List.of(), true, 10, clock.get());

        assertThat(replica.stepDownPutOff(clock.get())).isTrue();
    }
}
