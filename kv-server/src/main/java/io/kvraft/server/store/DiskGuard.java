package io.kvraft.server.store;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * Whether the file system of a node's data directory has room for more data ({@code store.minFreeDiskBytes}). Both
 * engines append every write to the Raft log there, RocksDB also writes its store there and MemoryDB its snapshots;
 * a Raft log that cannot append stops the node (exit code 5), and a follower fills as fast as its leader. So once the
 * room left is under the limit, region leaders refuse writes that add data (STORE_FULL) and take them again once the
 * room is a quarter of the setting over the limit: what is left is kept for the entries in flight, deletes, snapshots and
 * compactions. The limit is the setting plus the room the node's compactions may take at once
 * ({@link #reserveForCompaction}: the shared Raft log's table files, the RocksDB store's memtables and the levels
 * its next compaction merges), which a fixed setting cannot foresee: both write a compaction's output in full before
 * they delete what it replaces, and the shared log holds every group's entries in one key space, so its compactions
 * rewrite most of it.
 */
public final class DiskGuard {

    private static final Logger LOG = LoggerFactory.getLogger(DiskGuard.class);

    /** The file system's room, as the JDK reports it. */
    interface Disk {
        /** Bytes this process may still write. */
        long usableBytes() throws IOException;
    }

    private final Path dir;
    private final long minFree;
    private final Disk disk;
    private volatile boolean full;
    private volatile long freeBytes = -1;
    private volatile long compactionBytes;
    private volatile LongSupplier compaction = () -> 0;
    private boolean failing;

    /** @param minFree {@code store.minFreeDiskBytes}; 0 never refuses */
    public static DiskGuard of(Path dir, long minFree) throws IOException {
        FileStore fs = Files.getFileStore(dir);
        return new DiskGuard(dir, minFree, fs::getUsableSpace);
    }

    DiskGuard(Path dir, long minFree, Disk disk) {
        this.dir = dir;
        this.minFree = minFree;
        this.disk = disk;
    }

    /** Whether writes that add data are refused now. One volatile read: the write path asks it for every request. */
    public boolean full() {
        return full;
    }

    /** The room left at the last check, in bytes; -1 before the first or when it could not be read. */
    public long freeBytes() {
        return freeBytes;
    }

    public long minFree() {
        return minFree;
    }

    /** Counts {@code bytes} (read at every check) as room to keep on top of {@code store.minFreeDiskBytes}. */
    public void reserveForCompaction(LongSupplier bytes) {
        this.compaction = bytes;
    }

    /** The room kept free at the last check: the setting plus the compaction reserve. */
    public long limit() {
        return minFree + compactionBytes;
    }

    /** The refusal's words, for a client's STORE_FULL and the node's peers. */
    public String why() {
        long reserve = compactionBytes;
        return "disk: " + mib(freeBytes) + " MiB free in " + dir + " (store.minFreeDiskBytes " + mib(minFree) + " MiB"
                + (reserve > 0 ? " + " + mib(reserve) + " MiB for compactions" : "")
                + "; taken again at " + mib(resumeAt()) + " MiB)";
    }

    /** Reads the room left again (once a second, on the node's housekeeping thread) and turns the refusal on or off. */
    public void check() {
        long free;
        try {
            free = disk.usableBytes();
        } catch (IOException | RuntimeException e) {
            if (!failing) {
                LOG.warn("cannot read the free space of {}: {}; the last reading stands", dir, e.toString());
                failing = true;
            }
            return;
        }
        failing = false;
        if (minFree <= 0) {
            freeBytes = free;
            return;
        }
        long reserve;
        try {
            reserve = Math.max(0, compaction.getAsLong());
        } catch (RuntimeException e) {
            reserve = compactionBytes; // the last reading stands
        }
        compactionBytes = reserve;
        freeBytes = free;
        if (!full && free < limit()) {
            full = true;
            LOG.warn("{} MiB free in {} (store.minFreeDiskBytes {} MiB + {} MiB for compactions):"
                    + " refusing writes that add data (STORE_FULL) until {} MiB are free; deletes pass",
                    mib(free), dir, mib(minFree), mib(reserve), mib(resumeAt()));
        } else if (full && free >= resumeAt()) {
            full = false;
            LOG.info("{} MiB free in {}: taking writes again", mib(free), dir);
        }
    }

    private long resumeAt() {
        return limit() + minFree / 4;
    }

    private static long mib(long bytes) {
        return bytes < 0 ? bytes : bytes >> 20;
    }
}
