package io.kvraft.client.backup;

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
        TreeMap<String, String> sorted = new TreeMap<>(pairs);
        List<BackupManifest.Region> regions = new ArrayList<>();
        regions.add(region(1, "", SPLIT, sorted.headMap("m")));
        regions.add(region(2, SPLIT, "", sorted.tailMap("m")));
        long keys = regions.stream().mapToLong(BackupManifest.Region::keys).sum();
        long bytes = regions.stream().mapToLong(BackupManifest.Region::dataBytes).sum();
        Map<String, String> storeIds = Map.of("127.0.0.1:1", "00000000000000aa", "127.0.0.1:2", "00000000000000bb");
        BackupManifest m = new BackupManifest(BackupManifest.FORMAT, BackupManifest.VERSION, "id-1",
                BackupManifest.clusterId(storeIds), storeIds, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", keys, bytes,
                regions);
        m.write(dir);
        return m;
    }

    private BackupManifest.Region region(int id, String start, String end, Map<String, String> pairs) throws IOException {
        Path file = dir.resolve(BackupFile.fileName(id));
        BackupFile.Summary s;
        try (BackupFile.Writer w = new BackupFile.Writer(file, id, 100 + id)) {
            for (Map.Entry<String, String> e : pairs.entrySet()) {
                w.write(bytes(e.getKey()), bytes(e.getValue()));
            }
            s = w.finish();
        }
        return new BackupManifest.Region(id, start, end, 1, 100 + id, 3, "127.0.0.1:" + id, "00000000000000aa",
                file.getFileName().toString(), s.keys(), s.dataBytes(), s.fileBytes(), String.format("%08x", s.crc32c()));
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
        Files.writeString(manifest, Files.readString(manifest).replace("\"version\" : 1", "\"version\" : 2"));

        assertThatThrownBy(() -> BackupManifest.verify(dir)).isInstanceOf(BadBackupException.class)
                .hasMessageContaining(manifest.toString()).hasMessageContaining("version 2 is unknown");
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
                r.node(), r.storeId(), r.file(), r.keys(), r.dataBytes(), Files.size(file),
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
