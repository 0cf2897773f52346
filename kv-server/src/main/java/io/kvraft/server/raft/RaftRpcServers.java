package io.kvraft.server.raft;

import com.alipay.remoting.Connection;
import com.alipay.remoting.ConnectionEventType;
import com.alipay.sofa.jraft.rpc.RaftRpcServerFactory;
import com.alipay.sofa.jraft.rpc.impl.BoltRpcServer;
import com.alipay.sofa.jraft.rpc.RpcProcessor;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.rpc.impl.ConnectionClosedEventListener;
import com.alipay.sofa.jraft.rpc.impl.core.AppendEntriesRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.InstallSnapshotRequestProcessor;
import com.alipay.sofa.jraft.rpc.impl.core.RequestVoteRequestProcessor;
import com.alipay.sofa.jraft.util.Endpoint;
import com.alipay.sofa.jraft.util.NamedThreadFactory;
import com.alipay.sofa.jraft.util.RpcFactoryHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The node's Raft RPC server: jraft's processors, with AppendEntries on a small shared pool
 * ({@link SharedAppendEntriesProcessor}) unless {@code appendEntriesThreads} is 0, and InstallSnapshot on a pool
 * of its own ({@link #installSnapshotPool}).
 */
public final class RaftRpcServers {

    private static final Logger LOG = LoggerFactory.getLogger(RaftRpcServers.class);

    /** The server, and the AppendEntries pool to stop after it (null with jraft's own AppendEntries threads). */
    public record Server(RpcServer rpc, SharedAppendEntriesProcessor appendEntries, ExecutorService installSnapshot,
                  AtomicBoolean stopped) {

        /** Threads of the AppendEntries pool alive now; -1 with jraft's own threads. */
        public int appendEntriesThreads() {
            return appendEntries == null ? -1 : appendEntries.poolThreads();
        }

        /** AppendEntries requests received since start, heartbeats included; -1 with jraft's own threads. */
        public long appendEntriesReceived() {
            return appendEntries == null ? -1 : appendEntries.received();
        }

        /** AppendEntries requests waiting for the pool; -1 with jraft's own threads. */
        public int appendEntriesQueued() {
            return appendEntries == null ? -1 : appendEntries.queued();
        }

        public void shutdown() {
            stopped.set(true);
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
            installSnapshot.shutdownNow(); // a download still waited for ends as cancelled
        }
    }

    /** Snapshot downloads one node runs at once; more wait in the pool's queue (the leader's RPC waits 5 min). */
    static final int INSTALL_SNAPSHOT_THREADS = 8;

    /**
     * The pool for InstallSnapshot requests. jraft's processor holds its thread until the whole snapshot is
     * downloaded, and by default it runs on bolt's default executor, which is one per JVM (20 threads, and with
     * our deep queue never more) and also hands on every response and timeout of the JVM's bolt clients. A node
     * asked to install 20 snapshots at once (a node whose disk was replaced, with 24 regions) filled all 20
     * threads with waits for file chunks whose responses then queued behind them: the downloads, and every other
     * RPC of the node, hung for good. Here they wait on threads of their own; idle threads end after a minute.
     */
    static ExecutorService installSnapshotPool(String name) {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(INSTALL_SNAPSHOT_THREADS, INSTALL_SNAPSHOT_THREADS, 60,
                TimeUnit.SECONDS, new LinkedBlockingQueue<>(), new NamedThreadFactory(name + "-install-snapshot-", true));
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /**
     * System property: microseconds every AppendEntries (heartbeats included) waits on the receiving node before
     * it is handled, to measure replication with a network's round trip on loopback. For benchmarks only.
     */
    static final String DELAY_PROPERTY = "kv.fault.appendEntriesDelayMicros";

    private RaftRpcServers() {
    }

    public static Server create(Endpoint endpoint, int appendEntriesThreads) {
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

    public static Server create(Endpoint endpoint, int appendEntriesThreads, long delayMicros) {
        if (appendEntriesThreads == 0 && delayMicros > 0) {
            throw new IllegalArgumentException("-D" + DELAY_PROPERTY + " needs raft.appendEntriesThreads above 0");
        }
        RpcServer rpc = RpcFactoryHelper.rpcFactory().createRpcServer(endpoint);
        ExecutorService install = installSnapshotPool("raft-" + endpoint.getPort());
        AtomicBoolean stopped = closeConnectionsAfterStop(rpc);
        if (appendEntriesThreads == 0) {
            registerProcessors(rpc, null, install);
            return new Server(rpc, null, install, stopped);
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
        registerProcessors(rpc, appendEntries, install);
        return new Server(rpc, appendEntries, install, stopped);
    }

    /**
     * bolt adds an accepted connection to the server's connection manager later, on the IO thread: one accepted just
     * before the stop can be added after the stop closed the others, and would go on feeding this stopped node's
     * processors (a peer in the same JVM then retried on it forever). Such a connection is closed when it comes, once
     * the returned flag is set.
     */
    private static AtomicBoolean closeConnectionsAfterStop(RpcServer rpc) {
        AtomicBoolean stopped = new AtomicBoolean();
        if (rpc instanceof BoltRpcServer bolt) {
            bolt.getServer().addConnectionEventProcessor(ConnectionEventType.CONNECT, (remote, conn) -> {
                if (stopped.get()) {
                    conn.close();
                }
            });
        }
        return stopped;
    }

    /**
     * jraft's processors for {@code rpc}, with {@code appendEntries} (null: jraft's own) in place of jraft's
     * AppendEntries processor, and without its connection listener (see {@link ProcessorSwap}), and jraft's
     * InstallSnapshot processor on {@code installSnapshot}.
     */
    static void registerProcessors(RpcServer rpc, SharedAppendEntriesProcessor appendEntries, ExecutorService installSnapshot) {
        RaftRpcServerFactory.addRaftRequestProcessors(new ProcessorSwap(rpc, appendEntries, installSnapshot));
    }

    /**
     * Hands jraft's own processor list on to the server, with jraft's AppendEntries processor replaced by the shared
     * one (unless that is null), its InstallSnapshot processor by one on the given pool, and its RequestVote processor
     * by one that refuses pre-votes while node heartbeats vouch for a live leader ({@link QuietPreVotes}), so whatever
     * else a jraft release registers stays.
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
    private record ProcessorSwap(RpcServer target, SharedAppendEntriesProcessor shared, ExecutorService install)
            implements RpcServer {
        @Override
        public void registerProcessor(RpcProcessor<?> processor) {
            if (processor instanceof AppendEntriesRequestProcessor && shared != null) {
                target.registerProcessor(shared);
            } else if (processor instanceof InstallSnapshotRequestProcessor) {
                target.registerProcessor(new InstallSnapshotRequestProcessor(install));
            } else if (processor instanceof RequestVoteRequestProcessor votes) {
                target.registerProcessor(new QuietPreVotes(votes.executor()));
            } else {
                target.registerProcessor(processor);
            }
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
