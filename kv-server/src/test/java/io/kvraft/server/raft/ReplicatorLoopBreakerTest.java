package io.kvraft.server.raft;

import com.alipay.sofa.jraft.core.Replicator.ReplicatorStateListener.ReplicatorState;
import com.alipay.sofa.jraft.entity.PeerId;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class ReplicatorLoopBreakerTest {

    private final AtomicLong now = new AtomicLong(1_000_000);
    private final AtomicInteger snapshots = new AtomicInteger();
    private final ReplicatorLoopBreaker breaker = new ReplicatorLoopBreaker(7, snapshots::incrementAndGet, now::get);
    private final PeerId follower = PeerId.parsePeer("127.0.0.1:7001");

    private void flap(PeerId peer, int times, long stepMs) {
        for (int i = 0; i < times; i++) {
            breaker.stateChanged(peer, i % 2 == 0 ? ReplicatorState.OFFLINE : ReplicatorState.ONLINE);
            now.addAndGet(stepMs);
        }
    }

    @Test
    void when_aFollowerFlapsFastEnough_then_oneSnapshotIsTaken() {
        flap(follower, ReplicatorLoopBreaker.FLIPS - 1, 5);
        assertThat(snapshots).hasValue(0);
        flap(follower, 1, 5);
        assertThat(snapshots).hasValue(1);
        // still looping right after: the cooldown holds further snapshots back
        flap(follower, 3 * ReplicatorLoopBreaker.FLIPS, 5);
        assertThat(snapshots).hasValue(1);
    }

    @Test
    void when_theLoopGoesOnPastTheCooldown_then_anotherSnapshotIsTaken() {
        flap(follower, ReplicatorLoopBreaker.FLIPS, 5);
        now.addAndGet(ReplicatorLoopBreaker.COOLDOWN_MS);
        flap(follower, ReplicatorLoopBreaker.FLIPS, 5);
        assertThat(snapshots).hasValue(2);
    }

    @Test
    void when_flapsAreSpreadOverTime_then_nothingHappens() {
        // a follower that drops out now and then, e.g. on reconnects: one flip per window
        flap(follower, 10 * ReplicatorLoopBreaker.FLIPS, ReplicatorLoopBreaker.WINDOW_MS / 2 + 1);
        assertThat(snapshots).hasValue(0);
    }

    @Test
    void when_theReplicatorOnlyAlternatesBetweenSnapshotAndReplicate_then_thatCountsToo() {
        // the loop's other shape: install "not newer", append rejected, install again; both states are ONLINE
        for (int i = 0; i < ReplicatorLoopBreaker.FLIPS; i++) {
            breaker.stateChanged(follower, ReplicatorState.ONLINE);
        }
        assertThat(snapshots).hasValue(1);
    }

    @Test
    void when_aReplicatorIsCreatedOrDestroyed_then_thatIsNoFlip() {
        for (int i = 0; i < 10 * ReplicatorLoopBreaker.FLIPS; i++) {
            breaker.stateChanged(follower, ReplicatorState.CREATED);
        }
        assertThat(snapshots).hasValue(0);
    }

    @Test
    void when_flapsAreSplitOverPeers_then_eachPeerIsCountedOnItsOwn() {
        PeerId other = PeerId.parsePeer("127.0.0.1:7002");
        for (int i = 0; i < ReplicatorLoopBreaker.FLIPS - 1; i++) {
            flap(follower, 1, 1);
            flap(other, 1, 1);
        }
        assertThat(snapshots).hasValue(0);
    }

    @Test
    void when_theReplicatorIsDestroyed_then_itsCountStartsOver() {
        flap(follower, ReplicatorLoopBreaker.FLIPS - 1, 1);
        breaker.onDestroyed(follower);
        flap(follower, ReplicatorLoopBreaker.FLIPS - 1, 1);
        assertThat(snapshots).hasValue(0);
    }
}
