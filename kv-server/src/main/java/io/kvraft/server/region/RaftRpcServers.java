package io.kvraft.server.region;

import com.alipay.sofa.jraft.rpc.RaftRpcServerFactory;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.rpc.impl.cli.AddLearnersRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.AddPeerRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.ChangePeersRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.GetLeaderRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.GetPeersRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.RemoveLearnersRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.RemovePeerRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.ResetLearnersRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.ResetPeerRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.SnapshotRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.cli.TransferLeaderRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.GetFileRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.InstallSnapshotRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.ReadIndexRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.RequestVoteRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.TimeoutNowRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.PingRequestProcessor;
import com.alipay.sofa.jraft.util.Endpoint;
import com.alipay.sofa.jraft.util.RpcFactoryHelper;

/**
 * The node's Raft RPC server: jraft's processors, with AppendEntries on a small shared pool
 * ({@link SharedAppendEntriesProcessor}) unless {@code appendEntriesThreads} is 0.
 */
final class RaftRpcServers {

    /** The server, and the AppendEntries pool to stop after it (null with jraft's own AppendEntries threads). */
    record Server(RpcServer rpc, SharedAppendEntriesProcessor appendEntries) {
        /** Threads of the AppendEntries pool alive now; -1 with jraft's own threads. */
        int appendEntriesThreads() {
            return appendEntries == null ? -1 : appendEntries.poolThreads();
        }

        /** AppendEntries requests waiting for the pool; -1 with jraft's own threads. */
        int appendEntriesQueued() {
            return appendEntries == null ? -1 : appendEntries.queued();
        }

        void shutdown() {
            rpc.shutdown();
            if (appendEntries != null) {
                appendEntries.shutdown();
            }
        }
    }

    private RaftRpcServers() {
    }

    static Server create(Endpoint endpoint, int appendEntriesThreads) {
        if (appendEntriesThreads == 0) {
            return new Server(RaftRpcServerFactory.createRaftRpcServer(endpoint), null);
        }
        // bolt must hand each batch of decoded requests on, in order, from the IO thread; by default it passes
        // the batch to its default executor, where two batches of one connection can overtake each other.
        // jraft's own selector asks for this when the first pipelined request arrives; here it is asked up front.
        RpcFactoryHelper.rpcFactory().ensurePipeline();
        RpcServer rpc = RpcFactoryHelper.rpcFactory().createRpcServer(endpoint);
        // the list of RaftRpcServerFactory.addRaftRequestProcessors (jraft 1.3.15), but for AppendEntries
        SharedAppendEntriesProcessor appendEntries = new SharedAppendEntriesProcessor(appendEntriesThreads,
                "raft-" + endpoint.getPort());
        rpc.registerConnectionClosedEventListener(appendEntries);
        rpc.registerProcessor(appendEntries);
        rpc.registerProcessor(new GetFileRequestProcessor(null));
        rpc.registerProcessor(new InstallSnapshotRequestProcessor(null));
        rpc.registerProcessor(new RequestVoteRequestProcessor(null));
        rpc.registerProcessor(new PingRequestProcessor(null));
        rpc.registerProcessor(new TimeoutNowRequestProcessor(null));
        rpc.registerProcessor(new ReadIndexRequestProcessor(null));
        rpc.registerProcessor(new AddPeerRequestProcessor(null));
        rpc.registerProcessor(new RemovePeerRequestProcessor(null));
        rpc.registerProcessor(new ResetPeerRequestProcessor(null));
        rpc.registerProcessor(new ChangePeersRequestProcessor(null));
        rpc.registerProcessor(new GetLeaderRequestProcessor(null));
        rpc.registerProcessor(new SnapshotRequestProcessor(null));
        rpc.registerProcessor(new TransferLeaderRequestProcessor(null));
        rpc.registerProcessor(new GetPeersRequestProcessor(null));
        rpc.registerProcessor(new AddLearnersRequestProcessor(null));
        rpc.registerProcessor(new RemoveLearnersRequestProcessor(null));
        rpc.registerProcessor(new ResetLearnersRequestProcessor(null));
        return new Server(rpc, appendEntries);
    }
}
