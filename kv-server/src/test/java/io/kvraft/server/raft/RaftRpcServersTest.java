package io.kvraft.server.raft;

import com.alipay.sofa.jraft.rpc.RaftRpcServerFactory;
import com.alipay.sofa.jraft.rpc.RpcProcessor;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.InstallSnapshotRequest;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.rpc.impl.ConnectionClosedEventListener;
import com.alipay.sofa.jraft.rpc.impl.core.AppendEntriesRequestProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;

import static org.assertj.core.api.Assertions.assertThat;

class RaftRpcServersTest {

    /** Records what is registered, as a bolt server would take it. */
    private static final class Recording implements RpcServer {
        final List<RpcProcessor<?>> processors = new ArrayList<>();
        final List<ConnectionClosedEventListener> listeners = new ArrayList<>();

        @Override
        public void registerConnectionClosedEventListener(ConnectionClosedEventListener listener) {
            listeners.add(listener);
        }

        @Override
        public void registerProcessor(RpcProcessor<?> processor) {
            processors.add(processor);
        }

        @Override
        public int boundPort() {
            return 0;
        }

        @Override
        public boolean init(Void opts) {
            return true;
        }

        @Override
        public void shutdown() {
        }
    }

    private final SharedAppendEntriesProcessor shared = new SharedAppendEntriesProcessor(2, 0, "test");
    private final ExecutorService install = RaftRpcServers.installSnapshotPool("test");

    @AfterEach
    void stop() {
        shared.shutdown();
        install.shutdownNow();
    }

    @Test
    void when_processorsAreRegistered_then_installSnapshotWaitsOnItsOwnPool_notOnBoltsSharedExecutor() {
        Recording jraft = new Recording();
        RaftRpcServerFactory.addRaftRequestProcessors(jraft);
        for (SharedAppendEntriesProcessor appendEntries : java.util.Arrays.asList(shared, null)) {
            Recording ours = new Recording();

            RaftRpcServers.registerProcessors(ours, appendEntries, install);

            // jraft's own would run on bolt's default executor (null here), where a node downloading 20 snapshots
            // at once blocked every thread the downloads' answers needed
            assertThat(jraft.processors).filteredOn(p -> p.interest().equals(InstallSnapshotRequest.class.getName()))
                    .singleElement().extracting(RpcProcessor::executor).isNull();
            assertThat(ours.processors).filteredOn(p -> p.interest().equals(InstallSnapshotRequest.class.getName()))
                    .singleElement().extracting(RpcProcessor::executor).isSameAs(install);
        }
    }

    @Test
    void when_theSharedPoolIsOn_then_jraftsProcessorsAreAllRegistered_withOnlyAppendEntriesReplaced() {
        Recording jraft = new Recording();
        RaftRpcServerFactory.addRaftRequestProcessors(jraft);
        Recording ours = new Recording();

        RaftRpcServers.registerProcessors(ours, shared, install);

        assertThat(ours.processors).extracting(RpcProcessor::interest)
                .containsExactlyElementsOf(jraft.processors.stream().map(RpcProcessor::interest).toList());
        RpcProcessor<?> appendEntries = ours.processors.stream()
                .filter(p -> p.interest().equals(AppendEntriesRequest.class.getName())).findFirst().orElseThrow();
        assertThat(appendEntries).isSameAs(shared);
        assertThat(ours.processors).filteredOn(p -> p instanceof AppendEntriesRequestProcessor && p != shared).isEmpty();
        // its connection listener would reset the AppendEntries pipelines of every group when one group's node stops
        assertThat(ours.listeners).containsExactlyElementsOf(jraft.listeners.stream()
                .filter(l -> !(l instanceof AppendEntriesRequestProcessor)).toList());
    }

    @Test
    void when_jraftsOwnAppendEntriesProcessorServes_then_itIsRegisteredWithoutItsConnectionListener() {
        Recording jraft = new Recording();
        RaftRpcServerFactory.addRaftRequestProcessors(jraft);
        Recording ours = new Recording();

        RaftRpcServers.registerProcessors(ours, null, install);

        assertThat(ours.processors).extracting(RpcProcessor::interest)
                .containsExactlyElementsOf(jraft.processors.stream().map(RpcProcessor::interest).toList());
        assertThat(ours.processors).filteredOn(p -> p instanceof AppendEntriesRequestProcessor).hasSize(1);
        assertThat(jraft.listeners).anyMatch(l -> l instanceof AppendEntriesRequestProcessor);
        assertThat(ours.listeners).noneMatch(l -> l instanceof AppendEntriesRequestProcessor);
    }
}
