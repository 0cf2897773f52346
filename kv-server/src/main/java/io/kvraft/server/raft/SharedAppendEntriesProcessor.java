package io.kvraft.server.raft;

import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequestHeader;
import com.alipay.sofa.jraft.rpc.impl.core.AppendEntriesRequestProcessor;
import com.alipay.sofa.jraft.util.NamedThreadFactory;
import com.alipay.sofa.jraft.util.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * jraft's AppendEntries handling on a follower, on a few threads shared by all groups instead of a thread per
 * group and leader.
 *
 * <p>With {@code replicatorPipeline} on, jraft runs each (group, leader) pair's AppendEntries on a thread of
 * its own so that they are handled in the order they arrived: 48 threads per node with 24 groups, and every
 * request wakes the one thread it belongs to. On two cores those wake-ups were a large part of the cost of a
 * pipelined round. Here every pair has a queue of its own, run in order by one thread at a time (so the pair's
 * requests keep their order), and the pairs share a small pool: a thread that is awake takes the requests of
 * many pairs in a row.
 *
 * <p>A pair that blocks (jraft's handler can wait on its node's locks or on a full log queue) holds one pool
 * thread, not the others. If queued pairs have waited {@code stallMillis} without any pair starting, the pool
 * takes one more thread, up to {@link #MAX_THREADS}; it goes back to its size once nothing waits. With fixed
 * stripes instead, one stuck group would stall every group on its stripe.
 *
 * <p>For measurements only, every request can be held for a fixed time before it is queued
 * ({@code delayMicros}): a replication round trip as across a network, which loopback does not have and this
 * kernel cannot add (no netem). One timer thread holds them; requests of a pair keep their order.
 *
 * <p>Written here because neither jraft nor bolt offers a shared, order-keeping executor for this; the request
 * handling itself is jraft's, unchanged.
 */
final class SharedAppendEntriesProcessor extends AppendEntriesRequestProcessor {

    private static final Logger LOG = LoggerFactory.getLogger(SharedAppendEntriesProcessor.class);

    /** The pool never grows past this: jraft's own design would use one thread per pair (48 here). */
    static final int MAX_THREADS = 64;
    /** The longest simulated round trip: a second. */
    static final long MAX_DELAY_MICROS = 1_000_000;
    /** Tasks a pair runs before it lets the other pairs in. */
    private static final int FAIR_SHARE = 64;

    private final int threads;
    private final long stallNanos;
    private final ThreadPoolExecutor pool;
    private final ConcurrentHashMap<PairKey, PairQueue> pairs = new ConcurrentHashMap<>();
    /** AppendEntries requests received (heartbeats and probes included): bolt selects an executor once per request. */
    private final LongAdder received = new LongAdder();
    /** When a pair last started running (System.nanoTime()); volatile writes only, once per run. */
    private volatile long lastStart = System.nanoTime();
    private final long delayNanos;
    /** Holds requests for {@link #delayNanos}; null without a delay. */
    private final ScheduledThreadPoolExecutor delayer;

    /**
     * @param threads     pool threads that serve AppendEntries for all groups of the node while none blocks
     * @param stallMillis how long queued pairs may wait without any pair starting before the pool grows
     * @param idleMillis  how long a thread beyond {@code threads} stays idle before it leaves
     * @param delayMicros how long every request is held before it is queued (a simulated network round trip);
     *                    0 for none
     */
    SharedAppendEntriesProcessor(int threads, long stallMillis, long idleMillis, long delayMicros, String name) {
        super(null);
        if (threads < 1 || threads > MAX_THREADS) {
            throw new IllegalArgumentException("threads must be 1 to " + MAX_THREADS + ", got " + threads);
        }
        if (delayMicros < 0 || delayMicros > MAX_DELAY_MICROS) {
            throw new IllegalArgumentException("AppendEntries delay must be 0 to " + MAX_DELAY_MICROS + " us, got " + delayMicros);
        }
        this.delayNanos = TimeUnit.MICROSECONDS.toNanos(delayMicros);
        this.delayer = delayMicros == 0 ? null
                : new ScheduledThreadPoolExecutor(1, new NamedThreadFactory(name + "-append-entries-delay-", true));
        this.threads = threads;
        this.stallNanos = TimeUnit.MILLISECONDS.toNanos(stallMillis);
        this.pool = new ThreadPoolExecutor(threads, MAX_THREADS, idleMillis, TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(), new NamedThreadFactory(name + "-append-entries-", true));
    }

    SharedAppendEntriesProcessor(int threads, long delayMicros, String name) {
        this(threads, 200, 10_000, delayMicros, name);
    }

    @Override
    public ExecutorSelector executorSelector() {
        return this::select;
    }

    private Executor select(String reqClass, Object reqHeader) {
        received.increment();
        PairKey key = reqHeader instanceof AppendEntriesRequestHeader h
                ? new PairKey(h.getGroupId(), h.getPeerId(), h.getServerId()) : PairKey.NONE;
        return pairs.computeIfAbsent(key, k -> new PairQueue());
    }

    /** A group, the follower it is on and the leader that sends (the header's strings cache their hashes). */
    private record PairKey(String group, String peer, String leader) {
        static final PairKey NONE = new PairKey("", "", "");
    }

    /** Pool threads alive right now: more than configured only after pairs held every thread. */
    int poolThreads() {
        return pool.getPoolSize();
    }

    /** AppendEntries requests received since start, over all pairs, heartbeats and probes included. */
    long received() {
        return received.sum();
    }

    /** AppendEntries requests received and not started yet, over all pairs. */
    int queued() {
        int n = 0;
        for (PairQueue q : pairs.values()) {
            n += q.size.get();
        }
        return n;
    }

    /**
     * Lets the pool's threads leave once idle, without refusing work: requests that reach this processor after
     * the node stopped (on a connection not closed yet) go, through jraft's handler, to whichever node now runs
     * the group in this JVM, as with jraft's own per-pair executors, which it never stops. Refusing them left a
     * node restarted in the same JVM behind.
     */
    void shutdown() {
        pool.allowCoreThreadTimeOut(true);
        if (delayer != null) {
            delayer.setCorePoolSize(0); // its thread leaves once the requests it holds are queued
        }
    }

    /**
     * Called on every request: grows the pool by a thread when queued pairs have waited a stall period with
     * no pair starting (the threads are all held), and shrinks it back once nothing waits.
     */
    private void adjustPool() {
        int core = pool.getCorePoolSize();
        // the pair at the head of the pool's queue has waited since it was queued (or since a pair last started,
        // if later): on an idle node the last start is long ago, but a pair just queued has not waited at all
        if (pool.getQueue().peek() instanceof PairQueue head) {
            long now = System.nanoTime();
            if (now - Math.max(lastStart, head.queuedAt) > stallNanos && core < MAX_THREADS) {
                pool.setCorePoolSize(core + 1); // starts a thread for the queued pairs
                lastStart = now; // one more thread per stall period at most
                LOG.info("AppendEntries pool: {} threads (queued groups waited over {} ms with every thread held)",
                        core + 1, TimeUnit.NANOSECONDS.toMillis(stallNanos));
            }
        } else if (core > threads) {
            pool.setCorePoolSize(threads); // the extra threads leave once idle for idleMillis
        }
    }

    /** One (group, leader) pair's requests, run in arrival order by one pool thread at a time. */
    private final class PairQueue implements Executor, Runnable {
        private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        private final AtomicInteger size = new AtomicInteger();
        private final AtomicBoolean scheduled = new AtomicBoolean();
        private final Runnable drain = this;
        /** When this pair last went into the pool's queue (System.nanoTime()). */
        private volatile long queuedAt;

        @Override
        public void execute(Runnable task) {
            if (size.incrementAndGet() > Utils.MAX_APPEND_ENTRIES_TASKS_PER_THREAD) {
                size.decrementAndGet();
                throw new RejectedExecutionException("AppendEntries queue of a group and leader is full");
            }
            if (delayer == null) {
                enqueue(task);
            } else {
                // equal delays leave the timer in the order they entered it, so the pair's order holds
                delayer.schedule(() -> enqueue(task), delayNanos, TimeUnit.NANOSECONDS);
            }
        }

        private void enqueue(Runnable task) {
            tasks.add(task);
            adjustPool();
            if (scheduled.compareAndSet(false, true)) {
                queuedAt = System.nanoTime();
                pool.execute(drain); // never refused: the queue is unbounded and the pool never shut down
            }
        }

        @Override
        public void run() {
            lastStart = System.nanoTime();
            for (int i = 0; i < FAIR_SHARE; i++) {
                Runnable task = tasks.poll();
                if (task == null) {
                    break;
                }
                size.decrementAndGet();
                try {
                    task.run();
                } catch (Throwable t) {
                    LOG.warn("AppendEntries task failed", t);
                }
            }
            scheduled.set(false);
            if (!tasks.isEmpty() && scheduled.compareAndSet(false, true)) {
                queuedAt = System.nanoTime();
                pool.execute(drain);
            }
        }
    }
}
