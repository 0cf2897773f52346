package io.kvraft.server.region;

import io.kvraft.server.host.RaftOptionsFactory;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.RaftGroupService;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.Task;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.rpc.RaftRpcServerFactory;
import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcProcessor;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesResponse;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.RequestVoteResponse;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.util.Endpoint;
import com.alipay.sofa.jraft.util.RpcFactoryHelper;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.config.StoreConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * How many AppendEntries a real jraft leader, set up from our config, keeps outstanding to a follower that
 * never answers them: a fake follower votes for it and answers its heartbeats and probes, but holds every
 * AppendEntries that carries entries. With the pipeline off that must stop at two (jraft's flag alone would
 * let the leader go on to {@code maxReplicatorInflightMsgs + 1}); with it on the leader keeps sending.
 */
class ReplicatorDepthTest {

    private static final String GROUP = "depth-test";

    @TempDir
    Path dir;

    private RpcServer fakeServer;
    private RaftGroupService leaderService;
    private Node leader;

    @AfterEach
    void stop() throws InterruptedException {
        if (leaderService != null) {
            leaderService.shutdown();
            leaderService.join();
        }
        if (fakeServer != null) {
            fakeServer.shutdown();
        }
    }

    @Test
    void when_thePipelineIsOff_then_theLeaderHoldsTwoAppendEntriesOutstanding() throws Exception {
        AtomicInteger held = startLeaderAndFakeFollower(false);
        proposeOneByOne(20);
        await().atMost(60, SECONDS).until(() -> held.get() >= 2);
        // no more come while the two go unanswered (all 20 entries are in the leader's log by now)
        await().during(2, SECONDS).atMost(60, SECONDS).pollInterval(50, MILLISECONDS).until(() -> held.get() == 2);
    }

    @Test
    void when_thePipelineIsOn_then_theLeaderKeepsSendingWithoutAnswers() throws Exception {
        AtomicInteger held = startLeaderAndFakeFollower(true);
        proposeOneByOne(20);
        await().atMost(60, SECONDS).until(() -> held.get() >= 10);
    }

    /** @return AppendEntries with entries that the fake follower has received and not answered */
    private AtomicInteger startLeaderAndFakeFollower(boolean pipeline) throws IOException {
        List<Integer> ports = io.kvraft.server.launch.LocalClusterConfigs.freePorts(2); // two distinct ones
        Endpoint real = new Endpoint("127.0.0.1", ports.get(0));
        Endpoint fake = new Endpoint("127.0.0.1", ports.get(1));
        AtomicInteger held = new AtomicInteger();
        fakeServer = RpcFactoryHelper.rpcFactory().createRpcServer(fake);
        fakeServer.registerProcessor(new FakeVoter());
        fakeServer.registerProcessor(new FakeAppender(held));
        assertThat(fakeServer.init(null)).isTrue();

        List<PeerId> peers = List.of(new PeerId(real, 0), new PeerId(fake, 0));
        RaftConfig raft = new RaftConfig(1000, 500, 5, true, 0, pipeline, 64, 1, 1, 1024, RaftConfig.LOG_PER_REGION, 0, null);
        ServerConfig config = new ServerConfig(real.toString(), dir.toString(),
                new ClusterConfig(peers.stream().map(PeerId::toString).toList(), 1, null),
                new StoreConfig("memory", 8L << 20, 4L << 20, "lz4", null), raft, null,
                new BalanceConfig(false, null, null));
        Path regionDir = Files.createDirectories(dir.resolve("region-1"));
        NodeOptions options = RaftOptionsFactory.nodeOptions(config, peers, regionDir, 1, null);
        options.setRpcDefaultTimeout(60_000); // held requests must not time out and be sent again
        options.setFsm(new StateMachineAdapter() {
            @Override
            public void onApply(com.alipay.sofa.jraft.Iterator iter) {
                while (iter.hasNext()) {
                    iter.next();
                }
            }
        });
        RpcServer realServer = RaftRpcServerFactory.createRaftRpcServer(real);
        leaderService = new RaftGroupService(GROUP, peers.get(0), options, realServer);
        leader = leaderService.start(true);
        await().atMost(60, SECONDS).until(leader::isLeader);
        return held;
    }

    /** Proposes one entry at a time, each once the last is in the leader's log, so each can go out on its own. */
    private void proposeOneByOne(int entries) {
        for (int i = 0; i < entries; i++) {
            long before = leader.getLastLogIndex();
            leader.apply(new Task(ByteBuffer.wrap(new byte[] {(byte) i}), status -> { }));
            await().atMost(60, SECONDS).until(() -> leader.getLastLogIndex() > before);
        }
    }

    /** Grants every pre-vote and vote, so the real node leads. */
    private static final class FakeVoter implements RpcProcessor<RequestVoteRequest> {
        @Override
        public void handleRequest(RpcContext ctx, RequestVoteRequest request) {
            long term = request.getPreVote() ? request.getTerm() - 1 : request.getTerm();
            ctx.sendResponse(RequestVoteResponse.newBuilder().setTerm(term).setGranted(true).build());
        }

        @Override
        public String interest() {
            return RequestVoteRequest.class.getName();
        }
    }

    /** Answers heartbeats and probes as a follower that has everything; holds requests that carry entries. */
    private static final class FakeAppender implements RpcProcessor<AppendEntriesRequest> {
        private final AtomicInteger held;

        FakeAppender(AtomicInteger held) {
            this.held = held;
        }

        @Override
        public void handleRequest(RpcContext ctx, AppendEntriesRequest request) {
            if (request.getEntriesCount() > 0) {
                held.incrementAndGet(); // never answered
                return;
            }
            ctx.sendResponse(AppendEntriesResponse.newBuilder().setTerm(request.getTerm()).setSuccess(true)
                    .setLastLogIndex(request.getPrevLogIndex()).build());
        }

        @Override
        public String interest() {
            return AppendEntriesRequest.class.getName();
        }
    }
}
