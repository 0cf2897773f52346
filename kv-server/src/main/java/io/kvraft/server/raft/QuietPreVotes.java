package io.kvraft.server.raft;

import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RaftServerService;
import com.alipay.sofa.jraft.rpc.RpcRequestClosure;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteResponse;
import com.alipay.sofa.jraft.rpc.impl.core.RequestVoteRequestProcessor;
import com.google.protobuf.Message;

import java.util.concurrent.Executor;

/**
 * jraft's RequestVote processor, except that a pre-vote is refused while node heartbeats vouch, within an election
 * timeout, for the leader this replica follows, or (on a leader) for a quorum answering it ({@link QuietRegions}).
 * jraft refuses a pre-vote while it hears its leader; with a quiet region's jraft heartbeats far apart, that is what
 * the node heartbeats tell, so a replica that lost its leader alone (restarted, or cut off) cannot unseat a leader the
 * rest still hear. jraft still handles every pre-vote (a leader asked for one starts a replicator it lacks for the
 * asker); only a granted one is turned into a refusal. Real votes (a term's election, a leadership transfer) are
 * jraft's, unchanged.
 */
final class QuietPreVotes extends RequestVoteRequestProcessor {

    QuietPreVotes(Executor executor) {
        super(executor);
    }

    @Override
    public Message processRequest0(RaftServerService service, RequestVoteRequest request, RpcRequestClosure done) {
        // jraft decides first: a leader asked for a pre-vote also checks that it has a replicator for the asker, and
        // starts one if it failed to (a follower that was down when this node became leader has none until then)
        Message answer = super.processRequest0(service, request, done);
        if (!request.getPreVote() || !(answer instanceof RequestVoteResponse vote) || !vote.getGranted()) {
            return answer;
        }
        PeerId self = new PeerId();
        if (!self.parse(request.getPeerId())) {
            return answer;
        }
        QuietRegions.Replica r = QuietRegions.get(QuietRegions.key(request.getGroupId(), self));
        return r != null && r.leaderAlive(System.nanoTime()) ? vote.toBuilder().setGranted(false).build() : answer;
    }
}
