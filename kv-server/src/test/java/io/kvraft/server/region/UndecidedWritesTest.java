package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** How a write whose leader stepped down is answered, for each order in which its fate and its closure arrive. */
@Timeout(value = 60, unit = SECONDS)
class UndecidedWritesTest {

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    /** Records how it was answered. */
    private static final class Answer implements UndecidedWrites.Write {
        volatile UndecidedWrites.Early applied;
        volatile Error error;
        int answers;

        @Override
        public synchronized void applied(UndecidedWrites.Early results) {
            applied = results;
            answers++;
        }

        @Override
        public synchronized void answer(Error err) {
            error = err;
            answers++;
        }

        boolean answered() {
            return applied != null || error != null;
        }
    }

    private UndecidedWrites writes(long waitMs) {
        return new UndecidedWrites(7, timer, waitMs,
                () -> Error.newBuilder().setCode(ErrorCode.NOT_LEADER).setDetail("not applied").build(),
                why -> Error.newBuilder().setCode(ErrorCode.TIMEOUT).setDetail(why).build());
    }

    private static UndecidedWrites.Early results() {
        return new UndecidedWrites.Early(new boolean[] {true}, new byte[1][], null, null);
    }

    @Test
    void when_theEntryAppliesAfterItsClosureWaits_then_theWaitingWritesAreHandedToTheStateMachine() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        Answer a = new Answer();
        u.park(a, 5, 11);
        assertThat(a.answered()).isFalse();
        assertThat(u.adopt(5, 10)).as("another entry of the term").isNull();
        assertThat(u.adopt(5, 11)).isSameAs(a);
        assertThat(u.adopt(6, 12)).as("taken once").isNull();
        assertThat(a.answered()).as("the state machine answers it, not the adoption").isFalse();
    }

    @Test
    void when_aLaterTermsEntryAppliesFirst_then_theWaitingWritesAreAnsweredNotApplied() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        Answer a = new Answer();
        u.park(a, 5, 11);
        assertThat(u.adopt(6, 1)).isNull();
        assertThat(a.error.getCode()).isEqualTo(ErrorCode.NOT_LEADER);
        assertThat(a.answers).isEqualTo(1);
    }

    @Test
    void when_theEntryAppliedBeforeItsClosureCame_then_theClosureGetsTheResultsKeptForIt() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        assertThat(u.adopt(5, 11)).isNull();
        assertThat(u.proposedHere(5, 11)).isTrue();
        UndecidedWrites.Early kept = results();
        u.appliedEarly(5, 11, kept);
        assertThat(u.adopt(6, 3)).as("a later term applies before the closure comes").isNull();
        Answer a = new Answer();
        u.park(a, 5, 11);
        assertThat(a.applied).isSameAs(kept);
        assertThat(a.error).isNull();
    }

    /**
     * The state machine looks for a waiting closure before it applies an entry and keeps the results after; a failed
     * closure that comes to wait in between must still get them. Before, it waited beside its own results until a
     * later term's entry answered it NOT_LEADER, and the client wrote again what had been applied (a nemesis run saw a
     * range delete applied twice, after a put it had preceded).
     */
    @Test
    void when_theClosureComesWhileItsEntryApplies_then_itGetsTheResultsAndNeverNotApplied() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        assertThat(u.adopt(5, 11)).as("the entry starts to apply: no closure waits yet").isNull();
        Answer a = new Answer();
        u.park(a, 5, 11);
        UndecidedWrites.Early kept = results();
        u.appliedEarly(5, 11, kept);
        assertThat(a.applied).isSameAs(kept);
        u.adopt(6, 1);
        assertThat(a.error).as("a later term's entry must not call it lost").isNull();
        assertThat(a.answers).isEqualTo(1);
        Answer other = new Answer();
        u.park(other, 5, 11);
        assertThat(other.applied).as("the results were handed over once").isNull();
    }

    @Test
    void when_theClosureComesAfterALaterTermAppliedWithoutIt_then_itIsAnsweredNotApplied() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        u.adopt(6, 1);
        Answer a = new Answer();
        u.park(a, 5, 11);
        assertThat(a.error.getCode()).isEqualTo(ErrorCode.NOT_LEADER);
    }

    @Test
    void when_onlyTermsLedElsewhereApply_then_noEntryCountsAsProposedHere() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        assertThat(u.proposedHere(4, 11)).isFalse();
        assertThat(u.proposedHere(5, 0)).as("entries without a proposal id").isFalse();
    }

    @Test
    void when_noLaterEntryAppliesInTime_then_theOutcomeIsAnsweredUnknown() {
        UndecidedWrites u = writes(50);
        Answer a = new Answer();
        u.park(a, 5, 11);
        await().atMost(30, SECONDS).until(a::answered);
        assertThat(a.error.getCode()).isEqualTo(ErrorCode.TIMEOUT);
        assertThat(u.adopt(5, 11)).as("gone once answered").isNull();
    }

    @Test
    void when_aSnapshotReplacesTheLog_then_waitingAndLaterClosuresAreAnsweredUnknownNeverNotApplied() {
        UndecidedWrites u = writes(60_000);
        u.leading(5);
        Answer waiting = new Answer();
        u.park(waiting, 5, 11);
        u.appliedEarly(5, 12, results());
        u.giveUp("a snapshot replaced this replica's log");
        assertThat(waiting.error.getCode()).isEqualTo(ErrorCode.TIMEOUT);
        u.adopt(6, 1);
        Answer late = new Answer();
        u.park(late, 5, 12); // its early results went with the snapshot: it may well have applied
        assertThat(late.error.getCode()).isEqualTo(ErrorCode.TIMEOUT);
    }

    @Test
    void when_theTimerIsStopped_then_aClosureIsAnsweredAtOnce() {
        UndecidedWrites u = writes(60_000);
        timer.shutdownNow();
        Answer a = new Answer();
        u.park(a, 5, 11);
        assertThat(a.error.getCode()).isEqualTo(ErrorCode.TIMEOUT);
    }
}
