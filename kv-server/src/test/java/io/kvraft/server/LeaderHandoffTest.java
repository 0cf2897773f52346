package io.kvraft.server;

import com.alipay.sofa.jraft.core.State;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;

import static org.assertj.core.api.Assertions.assertThat;

class LeaderHandoffTest {

    @Test
    void when_aRegionIsACandidateOnTheStoppingNode_then_theHandoffWaitsForIt_asForALeader() {
        // a transfer a peer started just before the shutdown makes this node a candidate, then the leader
        EnumSet<State> waitedFor = EnumSet.noneOf(State.class);
        for (State s : State.values()) {
            if (LeaderHandoff.mayLeadHere(s)) {
                waitedFor.add(s);
            }
        }
        assertThat(waitedFor).containsExactlyInAnyOrder(State.STATE_LEADER, State.STATE_TRANSFERRING, State.STATE_CANDIDATE);
    }
}
