package io.kvraft.client.backup;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.CoordRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The backup files and manifest on their own: what is accepted, and what is refused with which file named. */
class BackupFormatTest {

    @TempDir
    Path dir;

    /** Two regions split at "m": region 1 [-inf, "m"), region 2 ["m", +inf). */
    private static final String SPLIT = HexFormat.of().formatHex("m".getBytes(StandardCharsets.UTF_8));

    private BackupManifest writeBackup(Map<String, String> pairs) throws IOException {
        return writeBackup(pairs, Map.of(), BackupManifest.VERSION, BackupFile.VERSION);
    }

    /** A backup of {@code pairs} and {@code system} records (key to CoordRecord), in the given format versions. */
    private BackupManifest writeBackup(Map<String, String> pairs, Map<String, CoordRecord> system, int manifestVersion,
                                       byte fileVersion) throws IOException {
        TreeMap<String, String> sorted = new TreeMap<>(pairs);
        TreeMap<String, CoordRecord> records = new TreeMap<>(system);
        List<BackupManifest.Region> regions = new ArrayList<>();
        regions.add(region(1, "", SPLIT, sorted.headMap("m"), records.headMap("m"), fileVersion));
        regions.add(region(2, SPLIT, "", sorted.tailMap("m"), records.tailMap("m"), fileVersion));
        long keys = regions.stream().mapToLong(BackupManifest.Region::keys).sum();
        long bytes = regions.stream().mapToLong(BackupManifest.Region::dataBytes).sum();
        Map<String, String> storeIds = Map.of("127.0.0.1:1", "00000000000000aa", "127.0.0.1:2", "00000000000000bb");
        BackupManifest m = new BackupManifest(BackupManifest.FORMAT, manifestVersion, "id-1",
                BackupManifest.clusterId(storeIds), storeIds, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", keys, bytes,
                regions);
        m.write(dir);
        return m;
    }

    private BackupManifest.Region region(int id, String start, String end, Map<String, String> pairs,
                                         Map<String, CoordRecord> system, byte fileVersion) throws IOException {
        Path file = dir.resolve(BackupFile.fileName(id));
        BackupFile.Summary s;
        try (BackupFile.Writer w = new BackupFile.Writer(file, id, 100 + id, fileVersion)) {
            for (Map.Entry<String, String> e : pairs.entrySet()) {
                w.write(bytes(e.getKey()), bytes(e.getValue()));
            }
            for (Map.Entry<String, CoordRecord> e : system.entrySet()) {
                w.writeSystem(bytes(e.getKey()), e.getValue().toByteArray());
            }
            s = w.finish();
        }
        return new BackupManifest.Region(id, start, end, 1, 100 + id, 3, "127.0.0.1:" + id, "00000000000000aa",
                file.getFileName().toString(), s.keys(), s.dataBytes(), s.systemRecords(), s.fileBytes(),
                String.format("%08x", s.crc32c()));
    }

    /** Sequences and locks on both sides of the split, some keys also naming pairs. */
    private static Map<String, CoordRecord> someRecords() {
        Map<String, CoordRecord> records = new TreeMap<>();
        for (int i = 0; i < 40; i++) {
            records.put((char) ('a' + i % 26) + "key" + i, CoordRecord.newBuilder().setNextSequence(1000L * i + 7)
                    .setLockToken(i % 3 == 0 ? i : 0).build());
        }
        records.put("orders", CoordRecord.newBuilder().setNextSequence(123_456).build());
        records.put("zz-lock", CoordRecord.newBuilder().setLockToken(42).setLockHolder(ByteString.copyFromUtf8("h"))
                .setLockCount(1).setLockLeaseMs(1000).setLockExpiresMs(5000).build());
        return records;
    }

    /** Every pair and every system record of the backup in {@code dir}, as read back. */
    private Map<String, String> readBack(BackupManifest m, Map<String, CoordRecord> system) throws IOException {
        Map<String, String> back = new TreeMap<>();
        for (BackupManifest.Region r : m.regions()) {
            BackupFile.read(dir.resolve(r.file()), r, (k, v) -> back.put(new String(k, StandardCharsets.UTF_8),
                    new String(v, StandardCharsets.UTF_8)), (k, v) -> system.put(new String(k, StandardCharsets.UTF_8),
                    CoordRecord.parseFrom(v)));
        }
        return back;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static Map<String, String> somePairs() {
        Map<String, String> pairs = new TreeMap<>();
        for (int i = 0; i < 500; i++) {
            pairs.put((char) ('a' + i % 26) + "key" + i, "value-" + i);
        }
        return pairs;
    }

    @Test
    void when_aBackupIsWrittenAndRead_then_everyPairComesBackInOrderWithTheManifestCounts() throws IOException {
        Map<String, String> pairs = somePairs();
        BackupManifest written = writeBackup(pairs);

        BackupManifest read = BackupManifest.verify(dir);

        assertThat(read).isEqualTo(written);
        assertThat(read.keys()).isEqualTo(pairs.size());
        Map<String, String> back = new TreeMap<>();
        for (BackupManifest.Region r : read.regions()) {
            BackupFile.read(dir.resolve(r.file()), r, (k, v) -> back.put(new String(k, StandardCharsets.UTF_8),
                    new String(v, StandardCharsets.UTF_8)));
        }
        assertThat(back).isEqualTo(pairs);
    }

    @Test
    void when_aBackupWithSystemRecordsIsWrittenAndRead_then_pairsAndRecordsComeBackWithTheManifestCounts()
            throws IOException {
        Map<String, String> pairs = somePairs();
        Map<String, CoordRecord> records = someRecords();
        BackupManifest written = writeBackup(pairs, records, BackupManifest.VERSION, BackupFile.VERSION);

        BackupManifest read = BackupManifest.verify(dir);

        assertThat(read).isEqualTo(written);
        assertThat(read.version()).isEqualTo(2);
        assertThat(read.systemRecords()).isEqualTo(records.size());
        assertThat(read.regions()).extracting(BackupManifest.Region::systemRecords)
                .containsExactly((long) new TreeMap<>(records).headMap("m").size(),
                        (long) new TreeMap<>(records).tailMap("m").size());
        assertThat(Files.readString(dir.resolve(BackupManifest.FILE))).contains("\"systemRecords\"");
        Map<String, CoordRecord> systemBack = new TreeMap<>();
        assertThat(readBack(read, systemBack)).isEqualTo(pairs);
        assertThat(systemBack).isEqualTo(records);
    }

    @Test
    void when_aVersion1BackupIsRead_then_itVerifiesAndItsPairsComeBackWithNoSystemRecords() throws IOException {
        Map<String, String> pairs = somePairs();
        writeBackup(pairs, Map.of(), 1, (byte) 1);
        // a version 1 manifest as the earlier tool wrote it: no systemRecords at all
        Path manifest = dir.resolve(BackupManifest.FILE);
        Files.writeString(manifest, Files.readString(manifest).replaceAll(",\\s*\"systemRecords\" : 0", ""));
        assertThat(Files.readString(manifest)).doesNotContain("systemRecords").contains("\"version\" : 1");
        assertThat(Files.readAllBytes(dir.resolve(BackupFile.fileName(1)))[4]).as("file format version").isEqualTo((byte) 1);

        BackupManifest read = BackupManifest.verify(dir);

        assertThat(read.version()).isEqualTo(1);
        assertThat(read.systemRecords()).isZero();
        Map<String, CoordRecord> systemBack = new TreeMap<>();
        assertThat(readBack(read, systemBack)).isEqualTo(pairs);
        assertThat(systemBack).isEmpty();
    }

    @Test
    void when_aByteOfTheSystemSectionIsFlipped_then_verifyAndReadRefuseItNamingTheFile() throws IOException {
        BackupManifest m = writeBackup(somePairs(), someRecords(), BackupManifest.VERSION, BackupFile.VERSION);
        Path file = dir.resolve(BackupFile.fileName(2));
        byte[] b = Files.readAllBytes(file);
        // the system section: "zz-lock" is region 2's last record, just before the end mark and the count
        int at = indexOf(b, bytes("zz-lock"));
        assertThat(at).isGreaterThan(b.length / 2);
        int tag = at + "zz-lock".length() + Integer.BYTES; // the record's first byte: field 2's tag, 0x12
        assertThat(b[tag]).isEqualTo((byte) 0x12);
        b[tag] ^= 0x15; // now 0x07: a tag of field 0, which no message has
        Files.write(file, b);
        BackupManifest.Region region2 = m.regions().get(1);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("CRC32C mismatch");
        // read skips the CRC (restore checked it first), yet still refuses a record that is not one
        assertThatThrownBy(() -> BackupFile.read(file, region2, (k, v) -> { }, (k, v) -> { }))
                .isInstanceOf(BadBackupException.class).hasMessageContaining(file.toString())
                .hasMessageContaining("not a sequence or lock record");
    }

    @Test
    void when_theManifestCountsOtherSystemRecordsThanTheFileHolds_then_verifyRefusesItNamingTheFile()
            throws IOException {
        BackupManifest m = writeBackup(somePairs(), someRecords(), BackupManifest.VERSION, BackupFile.VERSION);
        List<BackupManifest.Region> regions = new ArrayList<>(m.regions());
        BackupManifest.Region r = regions.get(0);
        regions.set(0, new BackupManifest.Region(r.id(), r.startKey(), r.endKey(), r.epoch(), r.appliedIndex(), r.term(),
                r.node(), r.storeId(), r.file(), r.keys(), r.dataBytes(), r.systemRecords() + 1, r.fileBytes(), r.crc32c()));
        new BackupManifest(m.format(), m.version(), m.backupId(), m.clusterId(), m.storeIds(), m.startedAt(),
                m.finishedAt(), m.keys(), m.dataBytes(), regions).write(dir);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(dir.resolve(r.file()).toString())
                .hasMessageContaining("holds " + r.systemRecords() + " system records")
                .hasMessageContaining("the manifest says " + (r.systemRecords() + 1));
    }

    @Test
    void when_systemRecordsAreWritten_then_theyComeAfterThePairsInAscendingOrder() throws IOException {
        try (BackupFile.Writer w = new BackupFile.Writer(dir.resolve("x.kvb"), 1, 1)) {
            w.write(bytes("a"), bytes("1"));
            w.writeSystem(bytes("b"), CoordRecord.newBuilder().setNextSequence(1).build().toByteArray());
            assertThatThrownBy(() -> w.write(bytes("c"), bytes("2"))).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> w.writeSystem(bytes("a"), new byte[0])).isInstanceOf(IllegalArgumentException.class);
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Test
    void when_aRegionHoldsNoKeys_then_itsFileIsStillWrittenAndVerifies() throws IOException {
        writeBackup(Map.of("a", "1")); // region 2 is empty

        assertThat(BackupManifest.verify(dir).regions()).extracting(BackupManifest.Region::keys).containsExactly(1L, 0L);
    }

    @Test
    void when_oneByteOfARegionFileIsFlipped_then_verifyRefusesItNamingTheFile() throws IOException {
        writeBackup(somePairs());
        Path file = dir.resolve(BackupFile.fileName(2));
        byte[] b = Files.readAllBytes(file);
        b[b.length / 2] ^= 0x01;
        Files.write(file, b);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("CRC32C mismatch");
    }

    @Test
    void when_aRegionFileIsMissing_then_verifyRefusesItNamingTheFile() throws IOException {
        writeBackup(somePairs());
        Path file = dir.resolve(BackupFile.fileName(1));
        Files.delete(file);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("missing");
    }

    @Test
    void when_aRegionFileIsTruncated_then_verifyRefusesItNamingTheFile() throws IOException {
        writeBackup(somePairs());
        Path file = dir.resolve(BackupFile.fileName(1));
        byte[] b = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(b, b.length - 3));

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("truncated");
    }

    @Test
    void when_theManifestIsMissing_then_theBackupIsRefusedAsIncomplete() throws IOException {
        writeBackup(somePairs());
        Files.delete(dir.resolve(BackupManifest.FILE));

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(dir.resolve(BackupManifest.FILE).toString()).hasMessageContaining("incomplete");
    }

    @Test
    void when_theManifestIsOfAnotherFormat_then_itIsRefusedAsForeign() throws IOException {
        Files.writeString(dir.resolve(BackupManifest.FILE), "{\"format\": \"etcd-snapshot\", \"version\": 1}");

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(BackupManifest.FILE).hasMessageContaining("not a kvraft backup manifest");
    }

    @Test
    void when_theManifestHasAnUnknownVersion_then_itIsRefusedNamingTheVersion() throws IOException {
        writeBackup(somePairs());
        Path manifest = dir.resolve(BackupManifest.FILE);
        Files.writeString(manifest, Files.readString(manifest).replace("\"version\" : " + BackupManifest.VERSION,
                "\"version\" : 3"));

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(manifest.toString()).hasMessageContaining("version 3 is unknown");
    }

    @Test
    void when_theManifestIsNotJson_then_itIsRefusedNamingIt() throws IOException {
        Files.writeString(dir.resolve(BackupManifest.FILE), "{\"format\": \"kvraft-backup\", ");

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(BackupManifest.FILE).hasMessageContaining("not JSON");
    }

    @Test
    void when_aFileIsNotABackupFileButItsChecksumMatches_then_itIsRefusedAsForeign() throws IOException {
        BackupManifest m = writeBackup(somePairs());
        Path file = dir.resolve(BackupFile.fileName(1));
        Files.writeString(file, "SQLite format 3\u0000 and so on");
        List<BackupManifest.Region> regions = new ArrayList<>(m.regions());
        BackupManifest.Region r = regions.get(0);
        regions.set(0, new BackupManifest.Region(r.id(), r.startKey(), r.endKey(), r.epoch(), r.appliedIndex(), r.term(),
                r.node(), r.storeId(), r.file(), r.keys(), r.dataBytes(), r.systemRecords(), Files.size(file),
                String.format("%08x", BackupFile.crc32c(file))));
        new BackupManifest(m.format(), m.version(), m.backupId(), m.clusterId(), m.storeIds(), m.startedAt(),
                m.finishedAt(), m.keys(), m.dataBytes(), regions).write(dir);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("not a kvraft backup file");
    }

    @Test
    void when_theManifestLeavesAGapInTheKeySpace_then_itIsRefused() throws IOException {
        BackupManifest m = writeBackup(somePairs());
        new BackupManifest(m.format(), m.version(), m.backupId(), m.clusterId(), m.storeIds(), m.startedAt(),
                m.finishedAt(), m.regions().get(0).keys(), m.regions().get(0).dataBytes(), List.of(m.regions().get(0)))
                .write(dir);

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining("a region is missing");
    }

    @Test
    void when_pairsAreNotInAscendingOrder_then_theWriterRefusesThem() throws IOException {
        try (BackupFile.Writer w = new BackupFile.Writer(dir.resolve("x.kvb"), 1, 1)) {
            w.write(bytes("b"), bytes("1"));
            assertThatThrownBy(() -> w.write(bytes("a"), bytes("2"))).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void when_theStoreIdsDiffer_then_theClusterIdDiffers_andTheOrderOfNodesDoesNotMatter() {
        Map<String, String> a = new TreeMap<>(Map.of("h:1", "01", "h:2", "02"));
        Map<String, String> sameReversed = new java.util.LinkedHashMap<>();
        sameReversed.put("h:2", "02");
        sameReversed.put("h:1", "01");

        assertThat(BackupManifest.clusterId(a)).isEqualTo(BackupManifest.clusterId(sameReversed)).hasSize(16);
        assertThat(BackupManifest.clusterId(Map.of("h:1", "01", "h:2", "03"))).isNotEqualTo(BackupManifest.clusterId(a));
    }

    @Test
    void when_bytesArriveFasterThanTheRate_then_theLimiterMakesThemWait() {
        RateLimiter limiter = new RateLimiter(1_000_000); // 1 MB/s
        long now = 10_000_000_000L;

        // an idle limiter lets up to one second's worth go at once, then makes the next wait its time
        assertThat(limiter.reserve(500_000, now)).isZero();
        assertThat(limiter.reserve(500_000, now)).isZero();
        assertThat(limiter.reserve(500_000, now)).isZero();
        assertThat(limiter.reserve(500_000, now)).isEqualTo(500_000_000L);
        assertThat(new RateLimiter(0).reserve(Long.MAX_VALUE / 2, now)).isZero();
    }
}
