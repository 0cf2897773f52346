package io.kvraft.server.store;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;

/**
 * One file of a MemoryDB region snapshot ({@link MemoryStore#SNAPSHOT_FILE}, {@link MemoryStore#SYSTEM_SNAPSHOT_FILE}):
 * header (magic, version, engine tag), pair count, then per pair {@code int keyLength, key, int valueLength, value},
 * then a CRC32C of everything before it. Read back whole and verified before anything is loaded.
 */
final class MemorySnapshotFile {

    private static final int IO_BUFFER_BYTES = 64 * 1024;
    /** The smallest pair on disk: two empty length prefixes. */
    private static final int MIN_PAIR_BYTES = 2 * Integer.BYTES;

    private MemorySnapshotFile() {
    }

    /** Writes {@code pairs} to {@code file} and fsyncs it. */
    static void write(List<Map.Entry<byte[], byte[]>> pairs, Path file) throws IOException {
        try (FileOutputStream fileOut = new FileOutputStream(file.toFile())) {
            CheckedOutputStream checked = new CheckedOutputStream(new BufferedOutputStream(fileOut, IO_BUFFER_BYTES), new CRC32C());
            DataOutputStream out = new DataOutputStream(checked);
            SnapshotFiles.writeHeader(out, MemoryStore.ENGINE);
            out.writeLong(pairs.size());
            for (Map.Entry<byte[], byte[]> pair : pairs) {
                out.writeInt(pair.getKey().length);
                out.write(pair.getKey());
                out.writeInt(pair.getValue().length);
                out.write(pair.getValue());
            }
            out.writeInt((int) checked.getChecksum().getValue());
            out.flush();
            fileOut.getChannel().force(true);
        }
    }

    /** Keys and values alternating, after checking framing, range and CRC. */
    static List<byte[]> read(Path file, KeyRange range) throws IOException {
        long fileBytes;
        try {
            fileBytes = Files.size(file);
        } catch (NoSuchFileException e) {
            throw SnapshotFiles.corrupt(file, "missing");
        }
        try (CheckedInputStream checked = new CheckedInputStream(
                new BufferedInputStream(Files.newInputStream(file), IO_BUFFER_BYTES), new CRC32C())) {
            DataInputStream in = new DataInputStream(checked);
            SnapshotFiles.readHeader(in, MemoryStore.ENGINE, file);
            long remainingBytes = fileBytes - SnapshotFiles.headerBytes(MemoryStore.ENGINE) - Long.BYTES - SnapshotFiles.CRC_TRAILER_BYTES;
            long count = in.readLong();
            if (count < 0 || count > remainingBytes / MIN_PAIR_BYTES) {
                throw SnapshotFiles.corrupt(file, "pair count " + count + " does not fit in " + fileBytes + " bytes");
            }
            List<byte[]> pairs = new ArrayList<>((int) Math.min(2 * count, 1024));
            for (long i = 0; i < count; i++) {
                byte[] key = readChunk(in, file, remainingBytes);
                remainingBytes -= Integer.BYTES + key.length;
                byte[] value = readChunk(in, file, remainingBytes);
                remainingBytes -= Integer.BYTES + value.length;
                pairs.add(key);
                pairs.add(value);
            }
            int computedCrc = (int) checked.getChecksum().getValue();
            int storedCrc = in.readInt();
            if (computedCrc != storedCrc) {
                throw SnapshotFiles.corrupt(file, String.format("CRC32C mismatch: stored %08x, computed %08x", storedCrc, computedCrc));
            }
            if (in.read() != -1) {
                throw SnapshotFiles.corrupt(file, "trailing bytes after the checksum");
            }
            // Checked after the CRC so that a flipped bit is reported as such, not as a stray key.
            for (int i = 0; i < pairs.size(); i += 2) {
                if (!range.contains(pairs.get(i))) {
                    throw SnapshotFiles.corrupt(file, "holds a key outside the region range " + range);
                }
            }
            return pairs;
        } catch (EOFException e) {
            throw SnapshotFiles.truncated(file, e);
        }
    }

    /** A length-prefixed chunk whose length is checked against the bytes left, so a bad length cannot exhaust memory. */
    private static byte[] readChunk(DataInputStream in, Path file, long remainingBytes) throws IOException {
        int length = in.readInt();
        if (length < 0 || length > remainingBytes - Integer.BYTES) {
            throw SnapshotFiles.corrupt(file, "chunk length " + length + " exceeds the " + remainingBytes + " bytes left (truncated or corrupt)");
        }
        byte[] chunk = new byte[length];
        in.readFully(chunk);
        return chunk;
    }
}
