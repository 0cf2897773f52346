package io.kvraft.server.raft;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RaftServerService;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteResponse;
import com.google.protobuf.Message;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class QuietPreVotesTest {

    private static final String GROUP = "region-7";
    private static final String SELF = "10.0.0.2:8181";
    private static final String LEADER = "10.0.0.1:8181";

    private final FakeRegionView view = new FakeRegionView(4, LEADER);
    private final QuietRegions.Replica replica = new QuietRegions.Replica(QuietRegions.key(GROUP, PeerId.parsePeer(SELF)),
            view, 2000, 200, System::nanoTime);
    /** What reached jraft's node: "pre-vote" or "vote". */
    private final List<String> toJraft = new ArrayList<>();
    private final RaftServerService jraft = (RaftServerService) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {RaftServerService.class}, (proxy, method, args) -> {
                toJraft.add(method.getName().equals("handlePreVoteRequest") ? "pre-vote" : "vote");
                return RequestVoteResponse.newBuilder().setTerm(9).setGranted(true).build();
            });
    private final QuietPreVotes votes = new QuietPreVotes(Runnable::run);

    @AfterEach
    void unregister() {
        QuietRegions.unregister(replica);
    }

    private static RequestVoteRequest request(boolean preVote) {
        return RequestVoteRequest.newBuilder().setGroupId(GROUP).setServerId("10.0.0.3:8181").setPeerId(SELF)
                .setTerm(4).setLastLogIndex(10).setLastLogTerm(4).setPreVote(preVote).build();
    }

    @Test
    void when_nodeHeartbeatsVouchForTheFollowedLeader_then_aPreVoteJraftGrantsIsRefused() {
        QuietRegions.register(replica);
        replica.vouched(LEADER, 4, System.nanoTime());

        Message answer = votes.processRequest0(jraft, request(true), null);

        assertThat(toJraft).containsExactly("pre-vote"); // jraft saw it (a leader checks its replicators there)
        assertThat(((RequestVoteResponse) answer).getGranted()).isFalse();
        assertThat(((RequestVoteResponse) answer).getTerm()).isEqualTo(9); // jraft's term
    }

    @Test
    void when_aQuorumAnswersThisLeader_then_aPreVoteIsRefusedHere() {
        QuietRegions.register(replica);
        view.leader = true;
        replica.leading(List.of("10.0.0.1:8181", "10.0.0.3:8181"), true, 10, System.nanoTime());
        replica.acked("10.0.0.1:8181", System.nanoTime());

        Message answer = votes.processRequest0(jraft, request(true), null);

        assertThat(toJraft).containsExactly("pre-vote");
        assertThat(((RequestVoteResponse) answer).getGranted()).isFalse();
    }

    @Test
    void when_nothingVouchesForALeader_then_jraftDecidesThePreVote() {
        QuietRegions.register(replica);
        view.leaderHint = "";

        Message answer = votes.processRequest0(jraft, request(true), null);

        assertThat(toJraft).containsExactly("pre-vote");
        assertThat(((RequestVoteResponse) answer).getGranted()).isTrue();
    }

    @Test
    void when_aRealVoteComes_then_jraftDecidesItEvenWhileTheLeaderIsVouchedFor() {
        QuietRegions.register(replica);
        replica.vouched(LEADER, 4, System.nanoTime());

        votes.processRequest0(jraft, request(false), null);

        assertThat(toJraft).containsExactly("vote");
    }

    @Test
    void when_theReplicaIsNotRegistered_then_jraftDecides() {
        votes.processRequest0(jraft, request(true), null);

        assertThat(toJraft).containsExactly("pre-vote");
    }
}
