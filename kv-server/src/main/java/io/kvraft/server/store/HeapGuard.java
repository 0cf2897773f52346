package io.kvraft.server.store;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Whether a MemoryDB node has heap left for more pairs ({@code store.maxHeapFraction}). MemoryDB keeps every pair on the
 * heap, and its replicas hold the same pairs: writes that go on until one node runs out of heap take its replicas
 * down next. So a region leader here refuses writes that add data (STORE_FULL) once the heap's old generation is
 * fuller than the limit after a collection, and takes them again once it is 0.05 below.
 *
 * <p>The measure is the old generation's occupancy after its last collection (the JVM's collection usage), the live
 * data as the collector last saw it: the occupancy now includes garbage, which a busy node has plenty of. While the
 * heap is full, a collection is asked for every {@link #RECHECK_NANOS} so that deletes show (a node that takes only
 * deletes allocates too little for the collector to run by itself).
 */
public final class HeapGuard {

    private static final Logger LOG = LoggerFactory.getLogger(HeapGuard.class);
    /** How far under the limit the heap must come before writes are taken again. */
    static final double RESUME_MARGIN = 0.05;
    static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** The old generation as the JVM reports it. */
    interface Heap {
        /** Bytes in use after the last collection of the old generation; 0 before its first. */
        long usedAfterCollection();

        /** The old generation's maximum in bytes. */
        long max();

        /** Asks for a full collection, so that the next reading is fresh. */
        void collect();
    }

    private final double limit;
    private final Heap heap;
    private final LongSupplier nanoTime;
    private volatile boolean full;
    private volatile double fraction;
    private long lastCollect;

    /** @param limit {@code store.maxHeapFraction}; 1 never refuses */
    public static HeapGuard ofJvm(double limit) {
        return new HeapGuard(limit, jvmHeap(), System::nanoTime);
    }

    HeapGuard(double limit, Heap heap, LongSupplier nanoTime) {
        this.limit = limit;
        this.heap = heap;
        this.nanoTime = nanoTime;
        this.lastCollect = nanoTime.getAsLong();
    }

    /** Whether writes that add data are refused now. One volatile read: the write path asks it for every request. */
    public boolean full() {
        return full;
    }

    /** The old generation's occupancy after its last collection, as a fraction of its maximum (at the last check). */
    public double fraction() {
        return fraction;
    }

    public double limit() {
        return limit;
    }

    /** The refusal's words, for a client's STORE_FULL and the node's peers. */
    public String why() {
        return "heap " + pct(fraction) + "% full after a collection, over store.maxHeapFraction " + pct(limit) + "%";
    }

    /** Reads the heap again (once a second, on the node's housekeeping thread) and turns the refusal on or off. */
    public void check() {
        long max = heap.max();
        if (max <= 0 || limit >= 1) {
            return;
        }
        double f = (double) heap.usedAfterCollection() / max;
        fraction = f;
        if (!full && f > limit) {
            full = true;
            LOG.warn("heap {}% full after a collection (store.maxHeapFraction {}%): refusing writes that add data"
                    + " (STORE_FULL) until deletes bring it under {}%; deletes pass", pct(f), pct(limit),
                    pct(limit - RESUME_MARGIN));
        } else if (full && f < limit - RESUME_MARGIN) {
            full = false;
            LOG.info("heap {}% full after a collection: taking writes again", pct(f));
        }
        long now = nanoTime.getAsLong();
        if (full && now - lastCollect >= RECHECK_NANOS) {
            lastCollect = now;
            heap.collect(); // read at the next check
        }
    }

    private static long pct(double f) {
        return Math.round(f * 100);
    }

    /**
     * The heap pools that keep objects for long: those of the heap that support a usage threshold (the old generation
     * of each of the JDK's collectors; eden and the survivor spaces do not).
     */
    static Heap jvmHeap() {
        List<MemoryPoolMXBean> old = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP && p.isUsageThresholdSupported()
                        && p.isCollectionUsageThresholdSupported())
                .toList();
        return new Heap() {
            @Override
            public long usedAfterCollection() {
                long used = 0;
                for (MemoryPoolMXBean p : old) {
                    MemoryUsage u = p.getCollectionUsage();
                    used += u == null ? 0 : u.getUsed();
                }
                return used;
            }

            @Override
            public long max() {
                long max = 0;
                for (MemoryPoolMXBean p : old) {
                    long m = p.getUsage().getMax();
                    if (m < 0) {
                        return Runtime.getRuntime().maxMemory();
                    }
                    max += m;
                }
                return max;
            }

            @Override
            public void collect() {
                System.gc(); // -XX:+DisableExplicitGC makes this a no-op: the collector's own runs then update the reading
            }
        };
    }
}
