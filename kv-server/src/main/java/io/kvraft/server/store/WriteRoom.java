package io.kvraft.server.store;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Whether a region may take writes that add data: not while this node's heap ({@link HeapGuard}, MemoryDB) or disk
 * ({@link DiskGuard}) is full, nor while a peer that holds one of the region's replicas says its own is. A follower
 * cannot refuse what its leader appends, so a full node tells the leaders it follows in its answers to their node
 * heartbeats ({@code raft.nodeHeartbeats}), and those leaders refuse for it. A peer's word lasts {@link #PEER_WORD_MS}
 * unless it is said again: a peer that stopped answering is no longer one the region's writes wait for.
 */
public final class WriteRoom {

    static final long PEER_WORD_MS = 3_000;

    private final String self;
    private final HeapGuard heap;
    private final DiskGuard disk;
    private final LongSupplier nanoTime;
    /** Peers that said they are full: why, and when they last said so. */
    private final Map<String, Word> peers = new ConcurrentHashMap<>();

    private record Word(String why, long atNanos) {
    }

    /**
     * @param heap null where there is no heap check (RocksDB)
     * @param disk null where there is no disk check ({@code store.minFreeDiskBytes: 0})
     */
    public WriteRoom(String self, HeapGuard heap, DiskGuard disk, LongSupplier nanoTime) {
        this.self = self;
        this.heap = heap;
        this.disk = disk;
        this.nanoTime = nanoTime;
    }

    /** Reads the heap and the disk again (once a second, on the node's housekeeping thread). */
    public void check() {
        if (heap != null) {
            heap.check();
        }
        if (disk != null) {
            disk.check();
        }
    }

    /** Whether this node itself refuses writes that add data now. */
    public boolean full() {
        return heap != null && heap.full() || disk != null && disk.full();
    }

    /** Why this node refuses writes that add data ("node host:port: disk: ..."), or "" when it takes them. */
    public String localRefusal() {
        if (heap != null && heap.full()) {
            return "node " + self + ": " + heap.why();
        }
        if (disk != null && disk.full()) {
            return "node " + self + ": " + disk.why();
        }
        return "";
    }

    /** A peer's answer to a node heartbeat: why it refuses writes that add data, or "" when it takes them. */
    public void peerSays(String peer, String refusal) {
        if (refusal.isEmpty()) {
            peers.remove(peer);
        } else {
            peers.put(peer, new Word(refusal, nanoTime.getAsLong()));
        }
    }

    /**
     * Why a region with replicas on {@code replicas} (endpoints, this node's among them or not) refuses writes that add
     * data, or null when it takes them. On the write path: two volatile reads when no peer is full.
     */
    public String refusal(Collection<String> replicas) {
        if (full()) {
            return localRefusal() + ": writes that add data are refused, deletes pass";
        }
        if (peers.isEmpty()) {
            return null;
        }
        long now = nanoTime.getAsLong();
        for (String r : replicas) {
            Word w = peers.get(r);
            if (w != null) {
                if (now - w.atNanos() < TimeUnit.MILLISECONDS.toNanos(PEER_WORD_MS)) {
                    return w.why() + " (a replica of this region): writes that add data are refused, deletes pass";
                }
                peers.remove(r, w);
            }
        }
        return null;
    }

    /** The heap check, or null. */
    public HeapGuard heap() {
        return heap;
    }

    /** The disk check, or null. */
    public DiskGuard disk() {
        return disk;
    }
}
