package io.kvraft.server.host;

import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.JRaftUtils;
import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.NodeImpl;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.rpc.RpcRequests.TimeoutNowRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.TimeoutNowResponse;
import com.alipay.sofa.jraft.rpc.RpcResponseClosureAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A new region's first election, started as soon as it can win. After a split every replica of the new region has the
 * same log, and the replica on the node that led the parent campaigns first (after a short timeout). Its first
 * campaign often came before another replica had made its group (that node applies the split later), so it failed
 * and the region waited one more timeout, then a pre-vote round, while every request to its keys waited.
 * <p>
 * Now a replica that starts its group while the region has no leader yet tells the first campaigner so with jraft's
 * TimeoutNow request (the one a leader sends in a leadership transfer): a follower that receives it in the same term
 * campaigns at once, without a pre-vote. The replica that sent it can vote for it, so the two make a majority of three.
 * It is a hint only: a campaigner that already campaigns, leads or is in another term refuses it, and the timeouts
 * elect a leader as before. Raft's safety does not depend on who starts an election.
 */
final class FirstCampaign {

    private static final Logger LOG = LoggerFactory.getLogger(FirstCampaign.class);
    private static final int TIMEOUT_MS = 1_000;
    /** The pause before asking again a candidate that has no replica of the region yet. */
    static final long RETRY_MS = 20;
    /** Asks at most this often: beyond, the candidate's own election timeout has come. */
    static final int ATTEMPTS = 10;
    /**
     * The term every replica of a new region starts in (jraft's bootstrap). A campaigner that has moved past it refuses
     * the request, and then an election is under way already.
     */
    private static final long BOOTSTRAP_TERM = 1;

    private FirstCampaign() {
    }

    /**
     * Asks {@code candidate} (host:port) to campaign now for region {@code regionId}, whose replica here is
     * {@code replica}, just started and without a leader. Does nothing when the replica knows a leader already. When
     * the candidate has not made its group yet (it applies the split later), asks again every {@link #RETRY_MS} for
     * at most {@link #ATTEMPTS} times, on {@code timer}.
     */
    static void ask(int regionId, Node replica, PeerId self, String candidate, ScheduledExecutorService timer) {
        ask(regionId, replica, self, candidate, timer, ATTEMPTS);
    }

    private static void ask(int regionId, Node replica, PeerId self, String candidate, ScheduledExecutorService timer,
                            int attemptsLeft) {
        if (!(replica instanceof NodeImpl impl) || impl.getLeaderId() != null && !impl.getLeaderId().isEmpty()
                || !impl.getNodeState().isActive()) {
            return;
        }
        PeerId target = new PeerId();
        if (!target.parse(candidate) || target.equals(self)) {
            return;
        }
        TimeoutNowRequest request = TimeoutNowRequest.newBuilder()
                .setGroupId(Region.groupId(regionId))
                .setServerId(self.toString())
                .setPeerId(target.toString())
                .setTerm(BOOTSTRAP_TERM)
                .build();
        impl.getRpcService().timeoutNow(JRaftUtils.getEndPoint(candidate), request, TIMEOUT_MS,
                new RpcResponseClosureAdapter<TimeoutNowResponse>() {
                    @Override
                    public void run(Status status) {
                        TimeoutNowResponse resp = getResponse();
                        LOG.debug("region {}: asked {} to campaign: {}", regionId, candidate,
                                !status.isOk() ? status : resp != null && resp.getSuccess() ? "it campaigns" : "refused");
                        if (status.getRaftError() == RaftError.ENOENT && attemptsLeft > 1) {
                            try {
                                timer.schedule(() -> ask(regionId, replica, self, candidate, timer, attemptsLeft - 1),
                                        RETRY_MS, TimeUnit.MILLISECONDS);
                            } catch (RejectedExecutionException stopping) {
                                // the node stops
                            }
                        }
                    }
                });
    }
}
