package io.kvraft.server.host;

import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionStateMachine;
import io.kvraft.server.region.SnapshotChecksums;

import com.alipay.sofa.jraft.entity.LocalStorageOutter;
import com.alipay.sofa.jraft.entity.LocalStorageOutter.LocalSnapshotPbMeta;
import com.alipay.sofa.jraft.entity.LocalStorageOutter.StablePBMeta;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.RaftOutter.SnapshotMeta;
import com.alipay.sofa.jraft.storage.snapshot.Snapshot;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.MemoryStore;
import io.kvraft.server.store.RocksStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Checks a region's Raft directories before its group starts, so that bad disk state gives one clear
 * line instead of a failed jraft init (which would stop the whole server) or, worse, wrong data.
 *
 * <p>Layout (jraft's, per region): {@code meta/raft_meta} (term and vote), {@code log/} (the log's
 * RocksDB), {@code snapshot/snapshot_<index>/} with {@code __raft_snapshot_meta} and our {@code kv/} files.
 *
 * <ul>
 *   <li>An unreadable raft meta refuses the start: without it the node might vote twice in one term.</li>
 *   <li>An unusable latest snapshot (meta unreadable or not matching its directory, a listed file missing,
 *       or our files failing their checksums) is never loaded. The region's snapshot and log directories
 *       are moved aside to {@code *.corrupt-<millis>} (the log is useless without the snapshot it starts
 *       after), the region's range in the store is cleared, and the group starts empty, so its leader
 *       sends it a snapshot. The raft meta is kept, so term and vote survive.</li>
 * </ul>
 *
 * <p>Why clear the store: a {@code rocksdb} store holds the region's data up to the index it recorded,
 * usually beyond the snapshot. That state is self-consistent (data and index are written in one batch)
 * and keeping it would be correct too, since the state machine skips snapshots and entries at or below
 * the store's index. But the disk just proved unreliable, and nothing local can be cross-checked any
 * more (the log that produced the data is gone), so the region is treated as empty: everything it will
 * hold then comes from the leader, checksummed. The cost is one snapshot transfer.
 *
 * <p>Raft caveat: a replica that forgets its log may forget entries it acknowledged. This is safe as long
 * as the region's other replicas are intact, i.e. the same assumption as replacing a failed disk: with an
 * empty log this node cannot win an election against any replica that has data, and it votes for them.
 * It is not safe if a majority of a region's replicas start empty at the same time (two empty replicas
 * of three can elect each other); that needs two corrupt copies of one region's snapshot at once, which
 * no node can see locally. A region with a single replica is never reset: the start is refused. Term and
 * vote are kept, so the node never votes twice in a term.
 */
final class RaftDirs {

    private static final Logger LOG = LoggerFactory.getLogger(RaftDirs.class);

    static final String LOG_DIR = "log";
    /** Under {@code raft/}: the node's shared Raft log (raft.logStorage: shared). */
    static final String SHARED_LOG_DIR = "log";
    static final String META_DIR = "meta";
    static final String SNAPSHOT_DIR = "snapshot";
    static final String RAFT_META_FILE = "raft_meta";
    static final String CORRUPT_SUFFIX = ".corrupt-";
    /** jraft's meta files hold a term and a vote, or a snapshot's index, peers and file names: a few KB at most. */
    private static final long MAX_PB_FILE_BYTES = 16L << 20;

    private RaftDirs() {
    }

    /**
     * Call before the region's state machine is created (it reads the store's applied index).
     *
     * @throws IllegalStateException with a one-line message when the region must not start
     */
    static void checkBeforeStart(int regionId, KeyRange range, Path regionDir, KvStore store, int replicas) {
        checkBeforeStart(regionId, range, regionDir, store, replicas, null);
    }

    /**
     * @param dropSharedLog forgets the region's entries in the node's shared log, or null when the
     *                      region keeps its log in its own {@code log/} directory
     */
    static void checkBeforeStart(int regionId, KeyRange range, Path regionDir, KvStore store, int replicas,
                                 Runnable dropSharedLog) {
        checkBeforeStart(regionId, range, range, regionDir, store, replicas, dropSharedLog);
    }

    /**
     * @param widest the widest range the region ever had (the one it was made with: splits only narrow it), which
     *               its snapshots lie in
     * @param range  the region's range now, which is cleared when its snapshot is refused
     */
    static void checkBeforeStart(int regionId, KeyRange widest, KeyRange range, Path regionDir, KvStore store,
                                 int replicas, Runnable dropSharedLog) {
        checkRaftMeta(regionId, regionDir.resolve(META_DIR).resolve(RAFT_META_FILE));
        String problem = snapshotProblem(widest, regionDir.resolve(SNAPSHOT_DIR), store.engine());
        if (problem == null) {
            return;
        }
        if (replicas < 2) {
            // alone, an empty region would elect itself and serve nothing where data was: refuse instead
            throw new IllegalStateException("region " + regionId + ": local snapshot refused: " + problem
                    + "; this node is the region's only replica, so no peer can send it a good one: refusing to start."
                    + " Restore " + regionDir.resolve(SNAPSHOT_DIR) + " from a backup");
        }
        long millis = System.currentTimeMillis();
        LOG.error("region {}: local snapshot refused: {}; its snapshot and log are moved aside to *{}{}, "
                + "the region starts empty and gets a snapshot from its leader", regionId, problem, CORRUPT_SUFFIX, millis);
        // Order matters for a crash in between: clear the store first, then the log, then the snapshot, so a
        // restart either finds the bad snapshot again (and redoes all of it) or an empty region.
        clearRange(regionId, range, regionDir, store, millis);
        if (dropSharedLog != null) {
            dropSharedLog.run();
        } else {
            moveAside(regionDir.resolve(LOG_DIR), millis);
        }
        moveAside(regionDir.resolve(SNAPSHOT_DIR), millis);
        syncDirectory(regionDir);
    }

    /**
     * Whether {@code raftRoot} holds any region group's files or a shared log: a data directory from before region
     * catalogs existed holds them without a catalog, and is no new one.
     */
    static boolean holdsGroups(Path raftRoot) {
        if (!Files.isDirectory(raftRoot)) {
            return false;
        }
        try (Stream<Path> dirs = Files.list(raftRoot)) {
            return dirs.map(d -> d.getFileName().toString())
                    .anyMatch(n -> n.startsWith("region-") || n.equals(SHARED_LOG_DIR));
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + raftRoot + ": " + oneLine(e));
        }
    }

    /**
     * Refuses a data directory whose Raft logs were written in the other layout: starting on it would
     * silently lose every region's log tail beyond its snapshot.
     */
    static void checkLogLayout(Path raftRoot, boolean shared) {
        if (!Files.isDirectory(raftRoot)) {
            return;
        }
        List<Path> perRegionLogs;
        try (Stream<Path> dirs = Files.list(raftRoot)) {
            perRegionLogs = dirs.filter(d -> d.getFileName().toString().startsWith("region-"))
                    .map(d -> d.resolve(LOG_DIR))
                    .filter(Files::isDirectory)
                    .toList();
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + raftRoot + ": " + oneLine(e));
        }
        if (shared && !perRegionLogs.isEmpty()) {
            throw new IllegalStateException(raftRoot + " holds per-region Raft logs (e.g. " + perRegionLogs.get(0)
                    + ") but raft.logStorage is 'shared': set raft.logStorage: per-region for this data directory,"
                    + " or start the node on an empty one");
        }
        if (!shared && Files.isDirectory(raftRoot.resolve(SHARED_LOG_DIR))) {
            throw new IllegalStateException(raftRoot + " holds a shared Raft log (" + raftRoot.resolve(SHARED_LOG_DIR)
                    + ") but raft.logStorage is 'per-region': set raft.logStorage: shared for this data directory,"
                    + " or start the node on an empty one");
        }
    }

    /** jraft's own load fails on a raft_meta it cannot parse; say which file and why, in one line. */
    private static void checkRaftMeta(int regionId, Path file) {
        Path metaDir = file.getParent();
        if (Files.exists(metaDir) && !Files.isDirectory(metaDir)) {
            throw new IllegalStateException("region " + regionId + ": " + metaDir + " is not a directory; refusing to start");
        }
        if (!Files.exists(file)) {
            return;
        }
        try {
            StablePBMeta meta = readPbFile(file, StablePBMeta.getDescriptor().getFullName(), StablePBMeta.parser());
            if (meta.getTerm() < 0 || (!meta.getVotedfor().isEmpty() && !new PeerId().parse(meta.getVotedfor()))) {
                throw new IOException("term " + meta.getTerm() + ", vote '" + meta.getVotedfor() + "'");
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("region " + regionId + ": raft meta " + file + " is unreadable (" + oneLine(e)
                    + "); refusing to start: without its term and vote the node could vote twice in a term. Restore the "
                    + "file, or, only if the region's other replicas are healthy, remove " + metaDir.getParent()
                    + " so the region rejoins empty");
        }
    }

    /**
     * Reads a file in jraft's ProtoBufFile format ({@code int nameLength, name, int messageLength, message},
     * big-endian) with every length checked against the file size first: jraft's own reader allocates
     * whatever length it finds, so one flipped bit there can ask for gigabytes.
     */
    static <T extends Message> T readPbFile(Path file, String expectedName, Parser<T> parser) throws IOException {
        long size = Files.size(file);
        if (size > MAX_PB_FILE_BYTES) {
            throw new IOException("is " + size + " bytes, too large");
        }
        ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(file));
        if (buf.remaining() < Integer.BYTES) {
            throw new IOException("is truncated");
        }
        int nameLength = buf.getInt();
        if (nameLength <= 0 || nameLength > buf.remaining() - Integer.BYTES) {
            throw new IOException("is truncated or damaged: a name of " + nameLength + " bytes, " + buf.remaining() + " bytes follow");
        }
        byte[] name = new byte[nameLength];
        buf.get(name);
        if (!expectedName.equals(new String(name, StandardCharsets.US_ASCII))) {
            throw new IOException("holds a '" + new String(name, StandardCharsets.US_ASCII).replaceAll("[^ -~]", "?")
                    + "', expected a '" + expectedName + "'");
        }
        int messageLength = buf.getInt();
        if (messageLength != buf.remaining()) {
            throw new IOException("says " + messageLength + " message bytes, has " + buf.remaining());
        }
        return parser.parseFrom(buf);
    }

    /** Whether {@code snapshotRoot} holds a snapshot jraft finished (it renames one into place when it is whole). */
    static boolean hasSnapshot(Path snapshotRoot) {
        if (!Files.isDirectory(snapshotRoot)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(snapshotRoot)) {
            return entries.anyMatch(p -> p.getFileName().toString().startsWith(Snapshot.JRAFT_SNAPSHOT_PREFIX)
                    && Files.isDirectory(p));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + snapshotRoot, e);
        }
    }

    /** null when the latest local snapshot (if any) is usable, else what is wrong with it. */
    static String snapshotProblem(KeyRange range, Path snapshotRoot, String engine) {
        if (!Files.exists(snapshotRoot)) {
            return null;
        }
        if (!Files.isDirectory(snapshotRoot)) {
            return snapshotRoot + " is not a directory";
        }
        long latest = -1;
        try (Stream<Path> entries = Files.list(snapshotRoot)) {
            for (Path p : (Iterable<Path>) entries::iterator) {
                String name = p.getFileName().toString();
                if (!name.startsWith(Snapshot.JRAFT_SNAPSHOT_PREFIX)) {
                    continue; // jraft ignores (and deletes "temp", an unfinished snapshot)
                }
                String digits = name.substring(Snapshot.JRAFT_SNAPSHOT_PREFIX.length());
                if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(Character::isDigit)) {
                    return "unexpected entry " + p; // jraft would fail to parse the index and not start
                }
                latest = Math.max(latest, Long.parseLong(digits));
            }
        } catch (IOException | UncheckedIOException e) {
            return snapshotRoot + " is unreadable: " + oneLine(e);
        }
        if (latest < 0) {
            return null;
        }
        Path dir = snapshotRoot.resolve(Snapshot.JRAFT_SNAPSHOT_PREFIX + latest);
        try {
            verifySnapshot(dir, latest, range, engine);
            return null;
        } catch (IOException | RuntimeException e) {
            return oneLine(e);
        }
    }

    /** Everything jraft and our state machine would check when loading {@code dir}, without loading it. */
    static void verifySnapshot(Path dir, long index, KeyRange range, String engine) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException(dir + " is not a directory");
        }
        Path metaFile = dir.resolve(Snapshot.JRAFT_SNAPSHOT_META_FILE);
        if (!Files.isRegularFile(metaFile)) {
            throw new IOException("snapshot meta " + metaFile + " is missing");
        }
        LocalSnapshotPbMeta pb;
        try {
            pb = readPbFile(metaFile, LocalSnapshotPbMeta.getDescriptor().getFullName(), LocalSnapshotPbMeta.parser());
        } catch (IOException | RuntimeException e) {
            throw new IOException("snapshot meta " + metaFile + " is unreadable (" + oneLine(e) + ")", e);
        }
        if (!pb.hasMeta() || !pb.getMeta().isInitialized()) {
            throw new IOException("snapshot meta " + metaFile + " has no index and term");
        }
        SnapshotMeta meta = pb.getMeta();
        if (meta.getLastIncludedIndex() != index) {
            throw new IOException("snapshot meta " + metaFile + " says index " + meta.getLastIncludedIndex()
                    + ", its directory says " + index);
        }
        if (meta.getPeersCount() == 0) {
            throw new IOException("snapshot meta " + metaFile + " lists no peers");
        }
        for (String peer : meta.getPeersList()) {
            if (!new PeerId().parse(peer)) {
                throw new IOException("snapshot meta " + metaFile + " lists a bad peer '" + peer + "'");
            }
        }
        for (LocalStorageOutter.LocalSnapshotPbMeta.File file : pb.getFilesList()) {
            Path f = dir.resolve(file.getName()).normalize();
            if (!f.startsWith(dir) || !Files.isRegularFile(f)) {
                throw new IOException("snapshot file " + f + " listed in " + metaFile + " is missing");
            }
        }
        Path kv = dir.resolve(RegionStateMachine.SNAPSHOT_DIR);
        // the region state is a bare protobuf: only its checksum in the meta tells a flipped byte from a state
        for (LocalStorageOutter.LocalSnapshotPbMeta.File file : pb.getFilesList()) {
            if (file.getName().equals(RegionStateMachine.STATE_FILE)) {
                SnapshotChecksums.verify(dir.resolve(file.getName()), file.getMeta());
            }
        }
        io.kvraft.common.proto.KvProto.RegionState state;
        try {
            state = RegionStateMachine.readState(dir);
        } catch (IOException | RuntimeException e) {
            throw new IOException("snapshot region state " + dir.resolve(RegionStateMachine.STATE_FILE) + " is unreadable ("
                    + oneLine(e) + ")", e);
        }
        if (state != null) {
            // the region's range when the snapshot was taken: splits only narrow a region's range
            KeyRange taken = Region.Shape.of(state).range();
            if (!range.covers(taken)) {
                throw new IOException("snapshot of region " + state.getId() + " " + taken + " lies outside the region range "
                        + range);
            }
            range = taken;
        }
        switch (engine) {
            case MemoryStore.ENGINE -> MemoryStore.verifySnapshot(kv, range);
            case RocksStore.ENGINE -> RocksStore.verifySnapshot(kv, range);
            default -> throw new IOException("unknown store engine '" + engine + "'");
        }
        // after the engine's own checks, which say more about their files: any file's checksum in the meta
        for (LocalStorageOutter.LocalSnapshotPbMeta.File file : pb.getFilesList()) {
            SnapshotChecksums.verify(dir.resolve(file.getName()), file.getMeta());
        }
    }

    /**
     * Empties the region's range in the store and records applied index 0 and no region state (a replica made here
     * again later starts from its catalog entry, as a new one does), through the store's own snapshot load
     * (all-or-nothing): an empty snapshot, taken of an empty range, loaded over the range. For a replica dropped from
     * this node, or one whose snapshot was refused.
     */
    static void clearRange(int regionId, KeyRange range, Path regionDir, KvStore store) {
        clearRange(regionId, range, regionDir, store, System.currentTimeMillis());
    }

    private static void clearRange(int regionId, KeyRange range, Path regionDir, KvStore store, long millis) {
        Path scratch = regionDir.resolve("reset-" + millis);
        try {
            Files.createDirectories(scratch);
            byte[] any = {0};
            store.writeSnapshot(new KeyRange(any, any), scratch); // [x, x) holds no key
            store.loadSnapshot(regionId, 0, range, scratch);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("region " + regionId + ": cannot clear its range in the store after "
                    + "refusing its snapshot: " + oneLine(e));
        } finally {
            deleteQuietly(scratch);
        }
    }

    private static void moveAside(Path p, long millis) {
        if (!Files.exists(p)) {
            return;
        }
        Path target = p.resolveSibling(p.getFileName() + CORRUPT_SUFFIX + millis);
        try {
            Files.move(p, target);
        } catch (IOException e) {
            throw new IllegalStateException("cannot move " + p + " aside to " + target + ": " + oneLine(e));
        }
    }

    private static void syncDirectory(Path dir) {
        try {
            DurableFiles.syncDirectory(dir);
        } catch (IOException e) {
            LOG.warn("cannot fsync {}: {}", dir, e.toString());
        }
    }

    private static void deleteQuietly(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            LOG.warn("cannot delete {}: {}", dir, e.toString());
        }
    }

    static String oneLine(Throwable e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }
}
