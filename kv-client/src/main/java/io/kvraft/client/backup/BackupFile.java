package io.kvraft.client.backup;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.common.proto.KvProto.CoordRecord;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;
import java.util.zip.CheckedOutputStream;

/**
 * One region's data in a backup, in a portable format that no engine owns:
 * <pre>
 *   int magic "KVBK", byte version 2, int regionId, long appliedIndex
 *   per pair, keys ascending: int keyLength (1 or more), key, int valueLength, value
 *   int -1, long pairCount
 *   per system record (a sequence's or lock's state), keys ascending: int keyLength (1 or more), key,
 *     int recordLength, record (a CoordRecord)
 *   int -1, long recordCount
 * </pre>
 * (big-endian). Version 1 files end after the pairs (no system section) and are still read. The manifest holds
 * the file's CRC32C, size, key, byte and system record counts; {@link #verify} checks them all, plus the
 * framing, the order of keys and that they lie in the region's range.
 */
public final class BackupFile {

    /** "KVBK" in ASCII. */
    static final int MAGIC = 0x4B56424B;
    static final byte VERSION = 2;
    /** The first version with a system section. */
    static final byte SYSTEM_VERSION = 2;
    static final String SUFFIX = ".kvb";
    private static final int END_MARK = -1;
    private static final int IO_BUFFER_BYTES = 256 * 1024;
    /** A frame longer than this is corruption, not data (the server's limits are far below). */
    private static final int MAX_CHUNK_BYTES = 64 << 20;

    private BackupFile() {
    }

    /** The file name of a region's data. */
    public static String fileName(int regionId) {
        return "region-" + regionId + SUFFIX;
    }

    /** What a finished file holds, for the manifest: pairs, their bytes, system records, and the file's size and CRC. */
    public record Summary(long keys, long dataBytes, long systemRecords, long fileBytes, int crc32c) {
    }

    /** Writes one region's pairs, then its system records, each in ascending key order, to a file. */
    public static final class Writer implements AutoCloseable {
        private final Path file;
        private final byte version;
        private final FileOutputStream fileOut;
        private final CheckedOutputStream checked;
        private final DataOutputStream out;
        private long keys;
        private long dataBytes;
        private byte[] lastKey;
        private boolean pairsEnded;
        private long systemRecords;
        private byte[] lastSystemKey;

        public Writer(Path file, int regionId, long appliedIndex) throws IOException {
            this(file, regionId, appliedIndex, VERSION);
        }

        /** A file of an older {@code version} (tests: files earlier tools wrote). */
        Writer(Path file, int regionId, long appliedIndex, byte version) throws IOException {
            this.file = file;
            this.version = version;
            this.fileOut = new FileOutputStream(file.toFile());
            this.checked = new CheckedOutputStream(new BufferedOutputStream(fileOut, IO_BUFFER_BYTES), new CRC32C());
            this.out = new DataOutputStream(checked);
            out.writeInt(MAGIC);
            out.writeByte(version);
            out.writeInt(regionId);
            out.writeLong(appliedIndex);
        }

        public void write(byte[] key, byte[] value) throws IOException {
            if (pairsEnded) {
                throw new IllegalStateException("backup pairs must come before the system records");
            }
            if (key.length == 0 || (lastKey != null && Arrays.compareUnsigned(lastKey, key) >= 0)) {
                throw new IllegalArgumentException("backup pairs must come with non-empty keys in ascending order");
            }
            out.writeInt(key.length);
            out.write(key);
            out.writeInt(value.length);
            out.write(value);
            keys++;
            dataBytes += key.length + value.length;
            lastKey = key;
        }

        /** A system record (a CoordRecord's bytes), after every pair; ends the pairs on the first call. */
        public void writeSystem(byte[] key, byte[] record) throws IOException {
            if (version < SYSTEM_VERSION) {
                throw new IllegalStateException("backup file format version " + version + " holds no system records");
            }
            if (key.length == 0 || (lastSystemKey != null && Arrays.compareUnsigned(lastSystemKey, key) >= 0)) {
                throw new IllegalArgumentException("backup system records must come with non-empty keys in ascending order");
            }
            endPairs();
            out.writeInt(key.length);
            out.write(key);
            out.writeInt(record.length);
            out.write(record);
            systemRecords++;
            lastSystemKey = key;
        }

        private void endPairs() throws IOException {
            if (!pairsEnded) {
                out.writeInt(END_MARK);
                out.writeLong(keys);
                pairsEnded = true;
            }
        }

        /** Pairs written so far. */
        public long keys() {
            return keys;
        }

        /** System records written so far. */
        public long systemRecords() {
            return systemRecords;
        }

        /** Ends the file and forces it to disk. */
        public Summary finish() throws IOException {
            endPairs();
            if (version >= SYSTEM_VERSION) {
                out.writeInt(END_MARK);
                out.writeLong(systemRecords);
            }
            out.flush();
            fileOut.getChannel().force(true);
            int crc = (int) checked.getChecksum().getValue();
            long size = fileOut.getChannel().size();
            close();
            return new Summary(keys, dataBytes, systemRecords, size, crc);
        }

        @Override
        public void close() throws IOException {
            fileOut.close();
        }

        public Path file() {
            return file;
        }
    }

    /** Receives the pairs of a file as it is read. */
    @FunctionalInterface
    public interface PairSink {
        void accept(byte[] key, byte[] value) throws IOException;
    }

    /**
     * Checks {@code file} against its manifest entry: size and CRC32C first (so a flipped bit is reported as
     * such), then header, framing, key order, range and counts. Throws {@link BadBackupException} naming the file.
     */
    public static void verify(Path file, BackupManifest.Region expected) throws IOException {
        long size;
        try {
            size = Files.size(file);
        } catch (NoSuchFileException e) {
            throw bad(file, "missing (the manifest lists it)");
        }
        if (size != expected.fileBytes()) {
            throw bad(file, "is " + size + " bytes, the manifest says " + expected.fileBytes() + " (truncated or replaced)");
        }
        int crc = crc32c(file);
        if (crc != expected.crc()) {
            throw bad(file, String.format("CRC32C mismatch: manifest %08x, file %08x (corrupt)", expected.crc(), crc));
        }
        read(file, expected, (k, v) -> { }, (k, v) -> { });
    }

    /** Reads every pair of {@code file} into {@code sink}, checking it against {@code expected} as {@link #verify} does, but the CRC. */
    public static void read(Path file, BackupManifest.Region expected, PairSink sink) throws IOException {
        read(file, expected, sink, (k, v) -> { });
    }

    /**
     * As {@link #read(Path, BackupManifest.Region, PairSink)}, and then every system record into {@code systemSink}
     * (key, CoordRecord bytes); a version 1 file has none.
     */
    public static void read(Path file, BackupManifest.Region expected, PairSink sink, PairSink systemSink)
            throws IOException {
        try (InputStream raw = Files.newInputStream(file)) {
            DataInputStream in = new DataInputStream(new BufferedInputStream(raw, IO_BUFFER_BYTES));
            int magic = in.readInt();
            if (magic != MAGIC) {
                throw bad(file, String.format("not a kvraft backup file (magic 0x%08x)", magic));
            }
            byte version = in.readByte();
            if (version < 1 || version > VERSION) {
                throw bad(file, "backup file format version " + version + " is unknown to this tool (it reads 1 to "
                        + VERSION + ")");
            }
            int regionId = in.readInt();
            long appliedIndex = in.readLong();
            if (regionId != expected.id() || appliedIndex != expected.appliedIndex()) {
                throw bad(file, "holds region " + regionId + " at index " + appliedIndex + ", the manifest says region "
                        + expected.id() + " at index " + expected.appliedIndex());
            }
            byte[] start = expected.startKeyBytes();
            byte[] end = expected.endKeyBytes();
            byte[] last = null;
            long keys = 0;
            long dataBytes = 0;
            for (int keyLength = in.readInt(); keyLength != END_MARK; keyLength = in.readInt()) {
                byte[] key = chunk(in, keyLength, file);
                byte[] value = chunk(in, in.readInt(), file);
                if (key.length == 0 || (last != null && Arrays.compareUnsigned(last, key) >= 0)) {
                    throw bad(file, "pair " + keys + ": keys are not in ascending order");
                }
                if (Arrays.compareUnsigned(key, start) < 0 || (end.length > 0 && Arrays.compareUnsigned(key, end) >= 0)) {
                    throw bad(file, "pair " + keys + ": key is outside the region's range in the manifest");
                }
                sink.accept(key, value);
                last = key;
                keys++;
                dataBytes += key.length + value.length;
            }
            long count = in.readLong();
            if (count != keys || keys != expected.keys() || dataBytes != expected.dataBytes()) {
                throw bad(file, "holds " + keys + " pairs of " + dataBytes + " bytes (its trailer says " + count
                        + " pairs), the manifest says " + expected.keys() + " pairs of " + expected.dataBytes() + " bytes");
            }
            long records = version >= SYSTEM_VERSION ? readSystem(in, file, start, end, systemSink) : 0;
            if (records != expected.systemRecords()) {
                throw bad(file, "holds " + records + " system records" + (version < SYSTEM_VERSION
                        ? " (format version " + version + " has none)" : "") + ", the manifest says "
                        + expected.systemRecords());
            }
            if (in.read() != -1) {
                throw bad(file, "has bytes after its end");
            }
        } catch (EOFException e) {
            throw bad(file, "truncated");
        } catch (NoSuchFileException e) {
            throw bad(file, "missing (the manifest lists it)");
        }
    }

    /** The system section: records in ascending key order inside the range, each a CoordRecord; returns their count. */
    private static long readSystem(DataInputStream in, Path file, byte[] start, byte[] end, PairSink sink)
            throws IOException {
        byte[] last = null;
        long records = 0;
        for (int keyLength = in.readInt(); keyLength != END_MARK; keyLength = in.readInt()) {
            byte[] key = chunk(in, keyLength, file);
            byte[] record = chunk(in, in.readInt(), file);
            if (key.length == 0 || (last != null && Arrays.compareUnsigned(last, key) >= 0)) {
                throw bad(file, "system record " + records + ": keys are not in ascending order");
            }
            if (Arrays.compareUnsigned(key, start) < 0 || (end.length > 0 && Arrays.compareUnsigned(key, end) >= 0)) {
                throw bad(file, "system record " + records + ": key is outside the region's range in the manifest");
            }
            try {
                CoordRecord.parseFrom(record);
            } catch (InvalidProtocolBufferException e) {
                throw bad(file, "system record " + records + " is not a sequence or lock record (corrupt)");
            }
            sink.accept(key, record);
            last = key;
            records++;
        }
        long count = in.readLong();
        if (count != records) {
            throw bad(file, "holds " + records + " system records, its trailer says " + count);
        }
        return records;
    }

    private static byte[] chunk(DataInputStream in, int length, Path file) throws IOException {
        if (length < 0 || length > MAX_CHUNK_BYTES) {
            throw bad(file, "frame length " + length + " is impossible (corrupt)");
        }
        byte[] b = new byte[length];
        in.readFully(b);
        return b;
    }

    /** CRC32C of a whole file, streamed. */
    static int crc32c(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        byte[] buffer = new byte[IO_BUFFER_BYTES];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                crc.update(buffer, 0, n);
            }
        }
        return (int) crc.getValue();
    }

    static BadBackupException bad(Path file, String why) {
        return new BadBackupException(file + ": " + why);
    }
}
