package io.kvraft.server.store;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The manifest of a {@code rocksdb} region snapshot: how many keys the sst holds, its size and CRC32C.
 * A count of 0 means there is no sst at all (SstFileWriter cannot finish an empty file).
 *
 * <p>On disk: header (magic, version, engine tag), {@code long keyCount, long sstBytes, int sstCrc32c},
 * then a CRC32C of everything before it, so a flipped byte in the manifest itself is caught too.
 */
record RocksSnapshotManifest(long keyCount, long sstBytes, int sstCrc32c) {

    static final RocksSnapshotManifest EMPTY = new RocksSnapshotManifest(0, 0, 0);

    void writeDurably(Path file) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        SnapshotFiles.writeHeader(out, RocksStore.ENGINE);
        out.writeLong(keyCount);
        out.writeLong(sstBytes);
        out.writeInt(sstCrc32c);
        out.writeInt(SnapshotFiles.crc32c(bytes.toByteArray(), bytes.size()));
        SnapshotFiles.writeDurably(file, bytes.toByteArray());
    }

    /** Reads a manifest, refusing it unless its CRC, framing and engine tag all check out. */
    static RocksSnapshotManifest read(Path file) throws CorruptSnapshotException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw SnapshotFiles.corrupt(file, "missing");
        } catch (IOException e) {
            CorruptSnapshotException refused = SnapshotFiles.corrupt(file, "unreadable: " + e.getMessage());
            refused.initCause(e);
            throw refused;
        }
        int expectedBytes = SnapshotFiles.headerBytes(RocksStore.ENGINE) + 2 * Long.BYTES + Integer.BYTES + SnapshotFiles.CRC_TRAILER_BYTES;
        if (bytes.length != expectedBytes) {
            throw SnapshotFiles.corrupt(file, "is " + bytes.length + " bytes, expected " + expectedBytes);
        }
        int bodyBytes = bytes.length - SnapshotFiles.CRC_TRAILER_BYTES;
        int storedCrc = ByteBuffer.wrap(bytes, bodyBytes, SnapshotFiles.CRC_TRAILER_BYTES).getInt();
        int computedCrc = SnapshotFiles.crc32c(bytes, bodyBytes);
        if (storedCrc != computedCrc) {
            throw SnapshotFiles.corrupt(file, String.format("CRC32C mismatch: stored %08x, computed %08x", storedCrc, computedCrc));
        }
        try {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes, 0, bodyBytes));
            SnapshotFiles.readHeader(in, RocksStore.ENGINE, file);
            RocksSnapshotManifest manifest = new RocksSnapshotManifest(in.readLong(), in.readLong(), in.readInt());
            if (manifest.keyCount < 0 || manifest.sstBytes < 0 || (manifest.keyCount == 0) != (manifest.sstBytes == 0)) {
                throw SnapshotFiles.corrupt(file, "inconsistent " + manifest);
            }
            return manifest;
        } catch (EOFException e) {
            throw SnapshotFiles.truncated(file, e);
        } catch (CorruptSnapshotException e) {
            throw e;
        } catch (IOException e) {
            throw new IllegalStateException("reading a byte array cannot fail", e);
        }
    }
}
