package io.kvraft.server.region;

import com.alipay.remoting.Connection;
import com.alipay.sofa.jraft.rpc.RaftRpcServerFactory;
import com.alipay.sofa.jraft.rpc.impl.BoltRpcServer;
import com.alipay.sofa.jraft.rpc.RpcProcessor;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.rpc.impl.ConnectionClosedEventListener;
import com.alipay.sofa.jraft.rpc.impl.core.AppendEntriesRequestProcessor;
import com.alipay.sofa.jraft.util.Endpoint;
import com.alipay.sofa.jraft.util.RpcFactoryHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's Raft RPC server: jraft's processors, with AppendEntries on a small shared pool
 * ({@link SharedAppendEntriesProcessor}) unless {@code appendEntriesThreads} is 0.
 */
final class RaftRpcServers {

    private static final Logger LOG = LoggerFactory.getLogger(RaftRpcServers.class);

    /** The server, and the AppendEntries pool to stop after it (null with jraft's own AppendEntries threads). */
    record Server(RpcServer rpc, SharedAppendEntriesProcessor appendEntries) {
        /** Threads of the AppendEntries pool alive now; -1 with jraft's own threads. */
        int appendEntriesThreads() {
            return appendEntries == null ? -1 : appendEntries.poolThreads();
        }

        /** AppendEntries requests received since start, heartbeats included; -1 with jraft's own threads. */
        long appendEntriesReceived() {
            return appendEntries == null ? -1 : appendEntries.received();
        }

        /** AppendEntries requests waiting for the pool; -1 with jraft's own threads. */
        int appendEntriesQueued() {
            return appendEntries == null ? -1 : appendEntries.queued();
        }

        void shutdown() {
            // bolt shares one worker event loop per JVM and leaves the connections a stopped server accepted
            // open, so peers in the same JVM would go on sending to this stopped node's processors (a node
            // restarted in-process got neither its AppendEntries nor the balancer's serving probes); close them,
            // as a process exit would
            if (rpc instanceof BoltRpcServer bolt && bolt.getServer().getConnectionManager() != null) {
                bolt.getServer().getConnectionManager().getAll().values().forEach(l -> l.forEach(Connection::close));
            }
            rpc.shutdown();
            if (appendEntries != null) {
                appendEntries.shutdown();
            }
        }
    }

    /**
     * System property: microseconds every AppendEntries (heartbeats included) waits on the receiving node before
     * it is handled, to measure replication with a network's round trip on loopback. For benchmarks only.
     */
    static final String DELAY_PROPERTY = "kv.fault.appendEntriesDelayMicros";

    private RaftRpcServers() {
    }

    static Server create(Endpoint endpoint, int appendEntriesThreads) {
        return create(endpoint, appendEntriesThreads, delayMicros(System.getProperty(DELAY_PROPERTY)));
    }

    /** The delay {@code value} of {@link #DELAY_PROPERTY} asks for; 0 when unset. */
    static long delayMicros(String value) {
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            long micros = Long.parseLong(value.trim());
            if (micros >= 0 && micros <= SharedAppendEntriesProcessor.MAX_DELAY_MICROS) {
                return micros;
            }
        } catch (NumberFormatException ignored) {
            // answered below
        }
        throw new IllegalArgumentException("-D" + DELAY_PROPERTY + " must be microseconds from 0 to "
                + SharedAppendEntriesProcessor.MAX_DELAY_MICROS + ", got '" + value + "'");
    }

    static Server create(Endpoint endpoint, int appendEntriesThreads, long delayMicros) {
        if (appendEntriesThreads == 0 && delayMicros > 0) {
            throw new IllegalArgumentException("-D" + DELAY_PROPERTY + " needs raft.appendEntriesThreads above 0");
        }
        RpcServer rpc = RpcFactoryHelper.rpcFactory().createRpcServer(endpoint);
        if (appendEntriesThreads == 0) {
            registerProcessors(rpc, null);
            return new Server(rpc, null);
        }
        if (delayMicros > 0) {
            LOG.warn("every AppendEntries received waits {} us before it is handled (-D{}): for measurements only",
                    delayMicros, DELAY_PROPERTY);
        }
        // bolt must hand each batch of decoded requests on, in order, from the IO thread; by default it passes
        // the batch to its default executor, where two batches of one connection can overtake each other.
        // jraft's own selector asks for this when the first pipelined request arrives; here it is asked up front.
        RpcFactoryHelper.rpcFactory().ensurePipeline();
        SharedAppendEntriesProcessor appendEntries = new SharedAppendEntriesProcessor(appendEntriesThreads,
                delayMicros, "raft-" + endpoint.getPort());
        registerProcessors(rpc, appendEntries);
        return new Server(rpc, appendEntries);
    }

    /**
     * jraft's processors for {@code rpc}, with {@code appendEntries} (null: jraft's own) in place of jraft's
     * AppendEntries processor, and without its connection listener (see {@link AppendEntriesSwap}).
     */
    static void registerProcessors(RpcServer rpc, SharedAppendEntriesProcessor appendEntries) {
        RaftRpcServerFactory.addRaftRequestProcessors(new AppendEntriesSwap(rpc, appendEntries));
    }

    /**
     * Hands jraft's own processor list on to the server, with jraft's AppendEntries processor replaced by the shared
     * one (unless that is null), so whatever else a jraft release registers stays.
     *
     * <p>The AppendEntries processor's connection listener is left out. On a closed connection it drops the pipeline
     * state (request and response sequence numbers) of the connection's (follower, leader) pair in every group, not
     * only in the group that used the connection; but each jraft node has a client and connections of its own. So
     * when one group stopped on a node (a region merged away and retired), every other group led from there lost the
     * answers to its AppendEntries in flight to the same follower: the leader's replicator waited for its RPC timeout
     * (5 s) and writes stalled, on every node at once. Kept, a pair's numbering simply goes on over the next
     * connection: every request numbered gets its answer (sent on its own connection, dropped if that is closed), and
     * jraft still resets a pair whose answers pile up (it closes the connection). What stays is a small record per
     * retired group and pair.
     */
    private record AppendEntriesSwap(RpcServer target, SharedAppendEntriesProcessor shared) implements RpcServer {
        @Override
        public void registerProcessor(RpcProcessor<?> processor) {
            target.registerProcessor(processor instanceof AppendEntriesRequestProcessor && shared != null ? shared : processor);
        }

        @Override
        public void registerConnectionClosedEventListener(ConnectionClosedEventListener listener) {
            if (!(listener instanceof AppendEntriesRequestProcessor)) {
                target.registerConnectionClosedEventListener(listener);
            }
        }

        @Override
        public int boundPort() {
            return target.boundPort();
        }

        @Override
        public boolean init(Void opts) {
            return target.init(opts);
        }

        @Override
        public void shutdown() {
            target.shutdown();
        }
    }
}
