package io.kvraft.client.backup;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * {@value #FILE} of a backup directory, JSON: what was backed up (the source cluster, every region with its
 * range, epoch, applied index, key, byte and system record counts, and its file's size and CRC32C). It is
 * written last, after every region file is complete, so a directory without it is an incomplete backup.
 *
 * @param format    always {@value #FORMAT}: anything else is not one of our backups
 * @param version   the manifest and file format version; this tool writes {@value #VERSION} and reads 1 (backups
 *                  without sequences and locks, whose regions have no {@code systemRecords}) to {@value #VERSION}
 * @param clusterId the source cluster: a digest of its nodes' store ids (see {@link #clusterId})
 * @param storeIds  the source nodes' store ids by host:port, as far as they answered
 */
public record BackupManifest(String format, int version, String backupId, String clusterId,
                             Map<String, String> storeIds, String startedAt, String finishedAt, long keys,
                             long dataBytes, List<Region> regions) {

    public static final String FILE = "manifest.json";
    public static final String FORMAT = "kvraft-backup";
    public static final int VERSION = 2;

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final HexFormat HEX = HexFormat.of();

    /**
     * One region's part of the backup.
     *
     * @param startKey     hex, "" = -inf
     * @param endKey       hex, "" = +inf
     * @param appliedIndex the region's log index whose state the file holds
     * @param node         host:port of the node that captured it (the region's leader then)
     * @param dataBytes    bytes of keys and values
     * @param systemRecords the region's system records (sequences, locks) in the file; absent (0) in version 1
     * @param crc32c       of the whole file, 8 hex digits
     */
    public record Region(int id, String startKey, String endKey, long epoch, long appliedIndex, long term, String node,
                         String storeId, String file, long keys, long dataBytes, long systemRecords, long fileBytes,
                         String crc32c) {

        byte[] startKeyBytes() {
            return HEX.parseHex(startKey);
        }

        byte[] endKeyBytes() {
            return HEX.parseHex(endKey);
        }

        int crc() {
            return Integer.parseUnsignedInt(crc32c, 16);
        }
    }

    /**
     * The id of a cluster: the first 16 hex digits of the SHA-256 of its nodes' "host:port=storeId", sorted.
     * A store id is made at random when a data directory is first used, so a new cluster on the same
     * addresses has another id; it changes too when a node's data directory is replaced.
     */
    public static String clusterId(Map<String, String> storeIds) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            storeIds.entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .forEach(e -> sha.update((e.getKey() + "=" + e.getValue() + "\n").getBytes(StandardCharsets.UTF_8)));
            return HEX.formatHex(sha.digest()).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The system records (sequences, locks) of every region. */
    @JsonIgnore
    public long systemRecords() {
        return regions == null ? 0 : regions.stream().mapToLong(Region::systemRecords).sum();
    }

    /** Writes the manifest into {@code dir} durably: a temp file forced to disk, then renamed. */
    public void write(Path dir) throws IOException {
        Path tmp = dir.resolve(FILE + ".tmp");
        try (FileOutputStream out = new FileOutputStream(tmp.toFile())) {
            out.write(JSON.writeValueAsBytes(this));
            out.getChannel().force(true);
        }
        Files.move(tmp, dir.resolve(FILE), StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Reads and checks the manifest of {@code dir}: present (else the backup is incomplete), ours, of a known
     * version, and its regions tile the whole key space. Does not read the region files ({@link #verify} does).
     */
    public static BackupManifest read(Path dir) throws IOException {
        Path file = dir.resolve(FILE);
        if (!Files.isDirectory(dir)) {
            throw new BadBackupException(dir + ": no such backup directory");
        }
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new BadBackupException(file + ": missing, so the backup in " + dir
                    + " is incomplete (interrupted before it finished?) or not a backup at all");
        }
        Map<?, ?> raw;
        try {
            raw = JSON.readValue(bytes, Map.class);
        } catch (JsonProcessingException e) {
            throw new BadBackupException(file + ": not JSON (corrupt?): " + e.getOriginalMessage());
        }
        if (!FORMAT.equals(raw.get("format"))) {
            throw new BadBackupException(file + ": not a kvraft backup manifest (format " + raw.get("format") + ")");
        }
        if (!(raw.get("version") instanceof Integer v) || v < 1 || v > VERSION) {
            throw new BadBackupException(file + ": backup format version " + raw.get("version")
                    + " is unknown to this tool (it reads 1 to " + VERSION + ")");
        }
        BackupManifest m;
        try {
            m = JSON.readValue(bytes, BackupManifest.class);
        } catch (JsonProcessingException e) {
            throw new BadBackupException(file + ": malformed manifest: " + e.getOriginalMessage());
        }
        m.checkRegions(file);
        return m;
    }

    /** The regions, sorted by start key, must cover the key space once: no gap, no overlap. */
    private void checkRegions(Path file) throws BadBackupException {
        if (regions == null || regions.isEmpty()) {
            throw new BadBackupException(file + ": lists no regions");
        }
        List<Region> sorted = new ArrayList<>(regions);
        try {
            sorted.sort((a, b) -> Arrays.compareUnsigned(a.startKeyBytes(), b.startKeyBytes()));
        } catch (IllegalArgumentException e) {
            throw new BadBackupException(file + ": a region's key is not hex: " + e.getMessage());
        }
        String expectedStart = "";
        long total = 0;
        for (Region r : sorted) {
            if (!r.startKey().equals(expectedStart)) {
                throw new BadBackupException(file + ": region " + r.id() + " starts at '" + r.startKey()
                        + "', but the key space goes on from '" + expectedStart + "' (a gap or an overlap)");
            }
            if (r.file() == null || !r.file().equals(BackupFile.fileName(r.id()))) {
                throw new BadBackupException(file + ": region " + r.id() + " names file '" + r.file() + "', expected '"
                        + BackupFile.fileName(r.id()) + "'");
            }
            if (r.crc32c() == null || !r.crc32c().matches("[0-9a-f]{8}")) {
                throw new BadBackupException(file + ": region " + r.id() + " has no valid crc32c");
            }
            if (r.systemRecords() < 0 || (version < BackupFile.SYSTEM_VERSION && r.systemRecords() != 0)) {
                throw new BadBackupException(file + ": region " + r.id() + " has " + r.systemRecords()
                        + " system records, impossible in version " + version);
            }
            expectedStart = r.endKey();
            total += r.keys();
            if (expectedStart.isEmpty()) {
                if (r != sorted.get(sorted.size() - 1)) {
                    throw new BadBackupException(file + ": region " + r.id() + " ends at +inf but is not the last");
                }
            }
        }
        if (!expectedStart.isEmpty()) {
            throw new BadBackupException(file + ": the regions end at '" + expectedStart + "', not at +inf (a region is missing)");
        }
        if (total != keys) {
            throw new BadBackupException(file + ": the regions hold " + total + " keys, the total says " + keys);
        }
    }

    /** Checks the manifest and every region file (sizes, CRC32C, framing, ranges, counts); no cluster needed. */
    public static BackupManifest verify(Path dir) throws IOException {
        BackupManifest m = read(dir);
        for (Region r : m.regions) {
            BackupFile.verify(dir.resolve(r.file()), r);
        }
        return m;
    }

    static String hex(byte[] b) {
        return HEX.formatHex(b);
    }
}
