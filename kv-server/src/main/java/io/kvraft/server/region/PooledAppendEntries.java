package io.kvraft.server.region;

import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcProcessor;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequestHeader;
import com.alipay.sofa.jraft.rpc.RpcServer;
import com.alipay.sofa.jraft.rpc.impl.ConnectionClosedEventListener;
import com.alipay.sofa.jraft.util.NamedThreadFactory;
import com.alipay.sofa.jraft.util.Utils;
import com.alipay.sofa.jraft.util.concurrent.MpscSingleThreadExecutor;
import com.alipay.sofa.jraft.util.concurrent.SingleThreadExecutor;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * With {@code raft.replicatorPipeline} on, jraft's follower side runs each (group, leader) pair's
 * AppendEntries on a thread of its own, so a node following 16 regions wakes 16 threads per
 * replication round. This decorator is handed to {@code RaftRpcServerFactory.addRaftRequestProcessors}
 * and swaps only the AppendEntries processor's executor choice: every pair still maps to one
 * single-thread executor (so each pair's requests keep their order, which the pipeline needs), but the
 * pairs share {@code threads} of them. jraft's processor itself (sequencing, responses) is unchanged.
 * Without the pipeline jraft picks no per-pair executor and the request goes to bolt's pool as before.
 */
final class PooledAppendEntries implements RpcServer {

    private final RpcServer target;
    private final SingleThreadExecutor[] executors;
    /** The same executors, counting what waits in them (kv_node_append_entries_queued). */
    private final Executor[] counted;
    private final AtomicInteger queued = new AtomicInteger();

    /**
     * @param target  the real server, which gets every processor
     * @param threads how many single-thread executors all (group, leader) pairs share
     */
    PooledAppendEntries(RpcServer target, int threads) {
        this.target = Objects.requireNonNull(target, "target");
        var factory = new NamedThreadFactory("kv-append-entries-", true);
        this.executors = new SingleThreadExecutor[threads];
        for (int i = 0; i < threads; i++) {
            // jraft's own executor type and queue bound for this job; its thread starts on the first task
            executors[i] = new MpscSingleThreadExecutor(Utils.MAX_APPEND_ENTRIES_TASKS_PER_THREAD, factory);
        }
        this.counted = new Executor[threads];
        for (int i = 0; i < threads; i++) {
            SingleThreadExecutor e = executors[i];
            counted[i] = task -> {
                queued.incrementAndGet();
                try {
                    e.execute(() -> {
                        queued.decrementAndGet();
                        task.run();
                    });
                } catch (RuntimeException rejected) {
                    queued.decrementAndGet();
                    throw rejected;
                }
            };
        }
    }

    /** AppendEntries requests received and not yet started. */
    int queued() {
        return queued.get();
    }

    /** Stops the shared executors once the RPC server has stopped. */
    void stopExecutors() {
        for (SingleThreadExecutor e : executors) {
            e.shutdownGracefully();
        }
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public void registerProcessor(RpcProcessor<?> processor) {
        if (!AppendEntriesRequest.class.getName().equals(processor.interest()) || processor.executorSelector() == null) {
            target.registerProcessor(processor);
            return;
        }
        target.registerProcessor(new Pooled((RpcProcessor) processor));
    }

    @Override
    public void registerConnectionClosedEventListener(ConnectionClosedEventListener listener) {
        target.registerConnectionClosedEventListener(listener);
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

    private final class Pooled implements RpcProcessor<Object> {
        private final RpcProcessor<Object> jraft;
        private final ExecutorSelector jraftSelector;

        Pooled(RpcProcessor<Object> jraft) {
            this.jraft = jraft;
            this.jraftSelector = jraft.executorSelector();
        }

        @Override
        public void handleRequest(RpcContext rpcCtx, Object request) {
            jraft.handleRequest(rpcCtx, request);
        }

        @Override
        public String interest() {
            return jraft.interest();
        }

        @Override
        public Executor executor() {
            return jraft.executor();
        }

        @Override
        public ExecutorSelector executorSelector() {
            return (reqClass, reqHeader) -> {
                // jraft's choice also sets up the pair's sequencing state; its per-pair thread starts only
                // when something is run on it, which from here on nothing is
                Executor perPair = jraftSelector.select(reqClass, reqHeader);
                if (perPair == null || perPair == jraft.executor()
                        || !(reqHeader instanceof AppendEntriesRequestHeader h)) {
                    return perPair;
                }
                int hash = (31 * h.getGroupId().hashCode() + h.getPeerId().hashCode()) * 31 + h.getServerId().hashCode();
                return counted[Math.floorMod(hash, counted.length)];
            };
        }
    }
}
