package io.kvraft.server.store;

import io.kvraft.server.fs.DurableFiles;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.SstFileWriter;
import org.rocksdb.WriteBatch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static io.kvraft.server.store.RocksStore.MANIFEST_FILE;
import static io.kvraft.server.store.RocksStore.SST_FILE;
import static io.kvraft.server.store.RocksStore.SYSTEM_MANIFEST_FILE;
import static io.kvraft.server.store.RocksStore.SYSTEM_SST_FILE;

/**
 * A region snapshot of the RocksDB store: written from one point in time as an sst file and a manifest per family (the
 * data, the system records), verified in full before a load touches the store, and loaded by range delete and ingest,
 * the applied index recorded last.
 */
final class RocksSnapshots {

    private final RocksHandles handles;
    private final RocksDB db;

    RocksSnapshots(RocksHandles handles) {
        this.handles = handles;
        this.db = handles.db;
    }

    void write(KeyRange range, Path dir) throws IOException {
        // A RocksDB snapshot pins one point in time even if another thread writes meanwhile.
        Snapshot pointInTime = db.getSnapshot();
        try {
            writeSst(handles.dataFamily, range, pointInTime, dir.resolve(SST_FILE), dir.resolve(MANIFEST_FILE));
            writeSst(handles.systemFamily, range, pointInTime, dir.resolve(SYSTEM_SST_FILE),
                    dir.resolve(SYSTEM_MANIFEST_FILE));
            DurableFiles.syncDirectory(dir);
        } catch (RocksDBException e) {
            throw new IOException("cannot write snapshot of " + range + " to " + dir + ": " + e.getMessage(), e);
        } finally {
            db.releaseSnapshot(pointInTime);
        }
    }

    /** One family's part of a region snapshot: an sst (none when the range is empty there) and its manifest. */
    private void writeSst(ColumnFamilyHandle family, KeyRange range, Snapshot pointInTime, Path sstFile, Path manifestFile)
            throws IOException, RocksDBException {
        try (RocksRangeScan scan = new RocksRangeScan(db, family, range, pointInTime, false)) {
            RocksIterator it = scan.iterator();
            long keyCount = 0;
            it.seekToFirst();
            if (it.isValid()) {
                try (EnvOptions envOptions = new EnvOptions();
                     SstFileWriter writer = new SstFileWriter(envOptions, handles.sstOptions)) {
                    writer.open(sstFile.toString());
                    for (; it.isValid(); it.next()) {
                        writer.put(it.key(), it.value());
                        keyCount++;
                    }
                    it.status();
                    writer.finish(); // finish() fsyncs the sst
                }
            } else {
                it.status();
            }
            RocksSnapshotManifest manifest = keyCount == 0
                    ? RocksSnapshotManifest.EMPTY
                    : new RocksSnapshotManifest(keyCount, Files.size(sstFile), SnapshotFiles.crc32c(sstFile));
            manifest.writeDurably(manifestFile);
        }
    }

    void load(int regionId, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
        // Verify everything first: a refused snapshot must leave the store unchanged.
        RocksSnapshotManifest manifest = RocksSnapshotManifest.read(dir.resolve(MANIFEST_FILE));
        Path sstFile = dir.resolve(SST_FILE);
        if (manifest.keyCount() > 0) {
            verifySst(sstFile, manifest, range, handles.sstOptions);
        }
        RocksSnapshotManifest systemManifest = systemManifest(dir);
        Path systemSst = dir.resolve(SYSTEM_SST_FILE);
        if (systemManifest.keyCount() > 0) {
            verifySst(systemSst, systemManifest, range, handles.sstOptions);
        }
        // From here on a crash leaves the old applied index behind, so the state machine reloads the
        // snapshot on restart: the index is recorded last, after the data is complete.
        try {
            deleteRange(handles.dataFamily, range);
            deleteRange(handles.systemFamily, range);
            if (manifest.keyCount() > 0) {
                ingest(handles.dataFamily, sstFile);
            }
            if (systemManifest.keyCount() > 0) {
                ingest(handles.systemFamily, systemSst);
            }
            try (WriteBatch meta = new WriteBatch()) { // the index and the state it goes with: both or neither
                meta.put(handles.metaFamily, RocksStore.appliedKey(regionId), RocksStore.longBytes(appliedIndex));
                if (state != null) {
                    meta.put(handles.metaFamily, RocksStore.stateKey(regionId), state);
                } else {
                    meta.delete(handles.metaFamily, RocksStore.stateKey(regionId));
                }
                db.write(handles.writeOptions, meta);
            }
        } catch (RocksDBException e) {
            throw new IOException("cannot load snapshot " + dir + " into region " + regionId + ": " + e.getMessage(), e);
        }
    }

    private void ingest(ColumnFamilyHandle family, Path sstFile) throws RocksDBException {
        // Copy, not move: the snapshot dir belongs to Raft and must stay intact.
        try (IngestExternalFileOptions ingestOptions = new IngestExternalFileOptions()
                .setMoveFiles(false)
                .setSnapshotConsistency(true)
                .setAllowGlobalSeqNo(true)
                .setAllowBlockingFlush(true)) {
            db.ingestExternalFile(family, List.of(sstFile.toString()), ingestOptions);
        }
    }

    /** Deletes every key of {@code range} in {@code family} in one atomic write. */
    private void deleteRange(ColumnFamilyHandle family, KeyRange range) throws RocksDBException {
        byte[] start = range.start();
        try (WriteBatch deletes = new WriteBatch()) {
            if (range.end().length > 0) {
                if (Arrays.compareUnsigned(start, range.end()) < 0) {
                    deletes.deleteRange(family, start, range.end());
                }
            } else {
                // No finite key sorts above every key (k < k + 0x00), so an unbounded end has no deleteRange
                // limit. Use the range's current last key: delete [start, last) plus last itself. Only this
                // region writes at or above start (it owns the top of the key space), so nothing lands above last.
                byte[] last = RocksRangeScan.lastKey(db, family, range);
                if (last == null) {
                    return;
                }
                if (Arrays.compareUnsigned(start, last) < 0) {
                    deletes.deleteRange(family, start, last);
                }
                deletes.delete(family, last);
            }
            db.write(handles.writeOptions, deletes);
        }
    }

    /** See {@link RocksStore#verifySnapshot}. */
    static void verify(Path dir, KeyRange range) throws IOException {
        RocksSnapshotManifest manifest = RocksSnapshotManifest.read(dir.resolve(MANIFEST_FILE));
        RocksSnapshotManifest systemManifest = systemManifest(dir);
        // the families use the default bytewise comparator, which is all a reader needs
        try (Options options = new Options()) {
            if (manifest.keyCount() > 0) {
                verifySst(dir.resolve(SST_FILE), manifest, range, options);
            }
            if (systemManifest.keyCount() > 0) {
                verifySst(dir.resolve(SYSTEM_SST_FILE), systemManifest, range, options);
            }
        }
    }

    /** The manifest of a snapshot's system records (a missing one is corrupt, as the data's is). */
    private static RocksSnapshotManifest systemManifest(Path dir) throws IOException {
        return RocksSnapshotManifest.read(dir.resolve(SYSTEM_MANIFEST_FILE));
    }

    private static void verifySst(Path sstFile, RocksSnapshotManifest manifest, KeyRange range, Options sstOptions)
            throws IOException {
        if (!Files.exists(sstFile)) {
            throw SnapshotFiles.corrupt(sstFile, "missing, the manifest promises " + manifest.keyCount() + " keys");
        }
        long sstBytes = Files.size(sstFile);
        if (sstBytes != manifest.sstBytes()) {
            throw SnapshotFiles.corrupt(sstFile, "is " + sstBytes + " bytes, the manifest says " + manifest.sstBytes());
        }
        int crc = SnapshotFiles.crc32c(sstFile);
        if (crc != manifest.sstCrc32c()) {
            throw SnapshotFiles.corrupt(sstFile, String.format("CRC32C mismatch: manifest %08x, computed %08x", manifest.sstCrc32c(), crc));
        }
        // The CRC proves the bytes are the ones written; this proves they are the keys the region expects.
        try (SstFileReader reader = new SstFileReader(sstOptions)) {
            reader.open(sstFile.toString());
            long entries = reader.getTableProperties().getNumEntries();
            if (entries != manifest.keyCount()) {
                throw SnapshotFiles.corrupt(sstFile, "holds " + entries + " keys, the manifest says " + manifest.keyCount());
            }
            try (ReadOptions readOptions = new ReadOptions().setFillCache(false);
                 SstFileReaderIterator it = reader.newIterator(readOptions)) {
                it.seekToFirst();
                byte[] first = it.isValid() ? it.key() : null;
                it.seekToLast();
                byte[] last = it.isValid() ? it.key() : null;
                it.status();
                if (first == null || !range.contains(first) || !range.contains(last)) {
                    throw SnapshotFiles.corrupt(sstFile, "holds keys outside the region range " + range);
                }
            }
        } catch (RocksDBException e) {
            CorruptSnapshotException refused = SnapshotFiles.corrupt(sstFile, "unreadable sst: " + e.getMessage());
            refused.initCause(e);
            throw refused;
        }
    }
}
