package io.kvraft.server.backup;

import com.google.protobuf.ByteString;
import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.LockHandle;
import io.kvraft.client.LockInfo;
import io.kvraft.client.admin.RegionCapture;
import io.kvraft.client.backup.Backup;
import io.kvraft.client.backup.BackupManifest;
import io.kvraft.client.backup.Restore;
import io.kvraft.client.backup.TargetNotEmptyException;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.common.proto.KvProto.CoordRecord;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteResponse;
import io.kvraft.server.InProcessCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Backup and restore between two in-process clusters of different shape: the source has three MemoryDB nodes
 * and 6 regions and keeps taking writes while it is backed up; the target has one RocksDB node and 5 regions.
 * Every write acknowledged before the backup started must be in the restored cluster, with its value or a
 * later one; sequences and locks' fencing tokens carry on past the backup's values in a fresh cluster. The CLI
 * verbs run against the same clusters.
 */
@Timeout(value = 300, unit = SECONDS)
class BackupRestoreClusterTest {

    @TempDir
    static Path dir;

    static InProcessCluster source;
    static InProcessCluster target;
    static KvClient sourceClient;
    static KvClient targetClient;

    @BeforeAll
    static void start() throws Exception {
        source = InProcessCluster.start(3, 6, dir.resolve("source"), "memory");
        target = InProcessCluster.start(1, 5, dir.resolve("target"), "rocksdb");
        source.awaitBalanced(60);
        target.awaitBalanced(60);
        sourceClient = source.client();
        targetClient = target.client();
    }

    @AfterAll
    static void stop() {
        if (source != null) {
            source.close();
        }
        if (target != null) {
            target.close();
        }
    }

    static byte[] key(int i) {
        // spread over the whole byte range, so every region of either layout gets keys
        return String.format("%c%c-key-%06d", (char) ('!' + (i * 7919) % 90), (char) ('!' + i % 90), i)
                .getBytes(StandardCharsets.UTF_8);
    }

    /** Values carry a version, so "its value or a later one" can be checked. */
    static byte[] value(int version) {
        return String.format("v%09d", version).getBytes(StandardCharsets.UTF_8);
    }

    static int version(byte[] value) {
        return Integer.parseInt(new String(value, StandardCharsets.UTF_8).substring(1));
    }

    @Test
    void when_backedUpUnderWrites_then_aClusterOfAnotherShapeAndEngineGetsEveryWriteAckedBeforeTheBackup() throws Exception {
        int preloaded = 3000;
        List<KeyValue> initial = new ArrayList<>();
        for (int i = 0; i < preloaded; i++) {
            initial.add(new KeyValue(key(i), value(1)));
        }
        sync(sourceClient.batchPut(initial));
        // the writers: fresh keys and overwrites with growing versions; acked = key -> highest acknowledged version.
        // Each writer overwrites keys of its own (even or odd): two puts of one key in flight at once may apply in
        // either order, and then the higher acknowledged version is not the one kept
        Map<Integer, Integer> acked = new ConcurrentHashMap<>();
        for (int i = 0; i < preloaded; i++) {
            acked.put(i, 1);
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger nextKey = new AtomicInteger(preloaded);
        AtomicInteger nextVersion = new AtomicInteger(2);
        List<Thread> writers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            int own = w;
            Thread t = new Thread(() -> {
                java.util.Random rnd = new java.util.Random();
                while (!stop.get()) {
                    int k = rnd.nextBoolean() ? nextKey.getAndIncrement() : rnd.nextInt(preloaded / 2) * 2 + own;
                    int v = nextVersion.getAndIncrement();
                    try {
                        sync(sourceClient.put(key(k), value(v)));
                        acked.merge(k, v, Math::max);
                    } catch (RuntimeException e) {
                        // an unacknowledged write promises nothing
                    }
                }
            }, "test-writer-" + w);
            t.start();
            writers.add(t);
        }
        Map<Integer, Integer> ackedBeforeBackup;
        Path backupDir = dir.resolve("backup-under-load");
        Backup.Result result;
        try { // the writers stop however this ends: left running they would write into the other tests' source
            await().atMost(120, SECONDS).until(() -> acked.size() > preloaded + 500);
            ackedBeforeBackup = new HashMap<>(acked);
            result = Backup.run(sourceClient, backupDir, new Backup.Options(0, 2, 100, 0, 3), null);
            await().atMost(120, SECONDS).until(() -> acked.size() > ackedBeforeBackup.size() + 200); // writes went on
        } finally {
            stop.set(true);
            for (Thread t : writers) {
                t.join();
            }
        }

        BackupManifest m = result.manifest();
        assertThat(m.regions()).hasSize(6);
        assertThat(m.storeIds()).hasSize(3);
        assertThat(m.keys()).isGreaterThanOrEqualTo(ackedBeforeBackup.size());
        assertThat(BackupManifest.verify(backupDir)).isEqualTo(m);
        assertThat(Files.list(backupDir).map(p -> p.getFileName().toString()))
                .noneMatch(n -> n.endsWith(".tmp")).contains(BackupManifest.FILE);

        sync(targetClient.deleteRange(null, null)); // the CLI test may have filled it
        Restore.Result restored = Restore.run(targetClient, backupDir, Restore.Options.defaults(), null);

        assertThat(restored.manifest().keys()).isEqualTo(m.keys());
        List<KeyValue> all = sync(targetClient.scan(null, null, Integer.MAX_VALUE, false));
        assertThat((long) all.size()).isEqualTo(m.keys());
        List<String> lost = new ArrayList<>();
        for (Map.Entry<Integer, Integer> e : ackedBeforeBackup.entrySet()) {
            byte[] v = sync(targetClient.get(key(e.getKey())));
            if (v == null || version(v) < e.getValue()) {
                lost.add(e.getKey() + " (acked v" + e.getValue() + ", restored " + (v == null ? "none" : version(v)) + ")");
            }
        }
        assertThat(lost).as("writes acknowledged before the backup and missing after the restore").isEmpty();

        // a second restore finds the cluster full and is refused unless forced
        assertThatThrownBy(() -> Restore.run(targetClient, backupDir, Restore.Options.defaults(), null))
                .isInstanceOf(TargetNotEmptyException.class).hasMessageContaining("--force");
        Restore.Options forced = new Restore.Options(0, true, 500, 4, 0);
        assertThat(Restore.run(targetClient, backupDir, forced, null).manifest().keys()).isEqualTo(m.keys());
    }

    @Test
    void when_aRegionIsCaptured_then_itsPagesShowTheStateAtTheCaptureNotLaterWrites() throws Exception {
        byte[] before = "~capture-before".getBytes(StandardCharsets.UTF_8);
        byte[] after = "~capture-after".getBytes(StandardCharsets.UTF_8);
        sync(sourceClient.put(before, value(1)));

        try (RegionCapture capture = sync(sourceClient.admin().captureRegion(before))) {
            sync(sourceClient.put(after, value(2)));
            sync(sourceClient.put(before, value(3)));

            Map<String, Integer> seen = new HashMap<>();
            byte[] from = capture.startKey();
            while (true) {
                RegionCapture.Page page = sync(capture.page(from, 7));
                page.pairs().stream().filter(kv -> kv.key()[0] == '~') // other tests' keys may share the region
                        .forEach(kv -> seen.put(new String(kv.key(), StandardCharsets.UTF_8), version(kv.value())));
                if (!page.more()) {
                    break;
                }
                byte[] last = page.pairs().get(page.pairs().size() - 1).key();
                from = java.util.Arrays.copyOf(last, last.length + 1);
            }
            assertThat(seen).containsEntry("~capture-before", 1).doesNotContainKey("~capture-after");
            RegionInfo now = sync(sourceClient.admin().regions()).stream().filter(r -> r.id() == capture.regionId())
                    .findFirst().orElseThrow();
            assertThat(capture.appliedIndex()).isPositive().isLessThan(now.appliedIndex());
        }
    }

    @Test
    void when_aRegionsSessionIsLostMidBackup_then_thatRegionIsTakenAgainAndTheBackupIsWhole() throws Exception {
        List<KeyValue> pairs = new ArrayList<>();
        for (int i = 0; i < 4000; i++) {
            pairs.add(new KeyValue(("lost-session-" + i).getBytes(StandardCharsets.UTF_8), new byte[100]));
        }
        sync(sourceClient.batchPut(pairs));
        long keys = sync(sourceClient.scan(null, null, Integer.MAX_VALUE, true)).size();
        Path backupDir = dir.resolve("backup-lost-session");
        // slow enough (0.2 MB/s, pages of 50) that the sessions are still open when the test ends them
        var backup = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return Backup.run(sourceClient, backupDir, new Backup.Options(0.2, 2, 50, 0, 3), null);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        await().atMost(60, SECONDS).until(() -> openSessions() > 0);
        int ended = 0;
        for (int i = 0; i < source.size(); i++) { // as a node restart would: the client finds them gone
            for (long id : source.node(i).backups().ids()) {
                source.node(i).backups().close(id);
                ended++;
            }
        }

        BackupManifest m = backup.get(120, SECONDS).manifest();

        assertThat(ended).isPositive();
        assertThat(m.keys()).isEqualTo(keys);
        assertThat(BackupManifest.verify(backupDir).keys()).isEqualTo(keys);
        await().atMost(10, SECONDS).until(() -> openSessions() == 0); // every session ended by the client
    }

    @Test
    void when_sequencesAndLocksAreBackedUp_then_aFreshClusterContinuesThemPastTheBackupAndEveryLockIsFree()
            throws Exception {
        byte[] sequence = "~coord/orders".getBytes(StandardCharsets.UTF_8);
        byte[] released = "~coord/released-lock".getBytes(StandardCharsets.UTF_8);
        byte[] held = "~coord/held-lock".getBytes(StandardCharsets.UTF_8);
        sync(sourceClient.getSequence(sequence, 1000));
        sync(sourceClient.getSequence(sequence, 234));
        long next = sync(sourceClient.getLatestSequence(sequence));
        LockHandle first = sync(sourceClient.tryLock(released, 30_000, 0));
        sync(first.unlock());
        LockHandle second = sync(sourceClient.tryLock(released, 30_000, 0)); // a later token: T
        long releasedToken = second.token();
        sync(second.unlock());
        LockHandle holding = sync(sourceClient.tryLock(held, 60_000, 0)); // held while the backup runs
        Path backupDir = dir.resolve("backup-coord");

        BackupManifest m;
        try {
            m = Backup.run(sourceClient, backupDir, new Backup.Options(0, 2, 100, 0, 3), null).manifest();
        } finally {
            sync(holding.unlock());
        }

        assertThat(next).isEqualTo(1234);
        assertThat(releasedToken).isGreaterThan(first.token());
        assertThat(m.version()).isEqualTo(BackupManifest.VERSION);
        assertThat(m.systemRecords()).isGreaterThanOrEqualTo(3);
        assertThat(BackupManifest.verify(backupDir).systemRecords()).isEqualTo(m.systemRecords());

        try (InProcessCluster fresh = InProcessCluster.start(1, 3, dir.resolve("fresh-coord"), "rocksdb")) {
            fresh.awaitBalanced(60);
            KvClient client = fresh.client();
            assertThat(sync(client.getLatestSequence(sequence))).as("a fresh cluster").isZero();

            Restore.run(client, backupDir, Restore.Options.defaults(), null);

            assertThat(sync(client.getSequence(sequence, 10)).start()).as("continues at N, not 0").isEqualTo(next);
            LockInfo heldThen = sync(client.lockInfo(held));
            assertThat(heldThen.holder()).as("a lock held at the backup is free after the restore").isEmpty();
            assertThat(heldThen.token()).isEqualTo(holding.token());
            LockHandle again = sync(client.tryLock(released, 30_000, 0));
            LockHandle taken = sync(client.tryLock(held, 30_000, 0));
            assertThat(again).isNotNull();
            assertThat(again.token()).isGreaterThan(releasedToken);
            assertThat(taken).as("free, so taken at once").isNotNull();
            assertThat(taken.token()).isGreaterThan(holding.token());

            // restored again (forced, as a retried restore would): nothing moves back, the holdings stay
            Restore.run(client, backupDir, new Restore.Options(0, true, 500, 4, 0), null);

            assertThat(sync(client.getSequence(sequence, 1)).start()).isEqualTo(next + 10);
            assertThat(again.isHeld()).isTrue();
            assertThat(sync(client.lockInfo(released)).token()).isEqualTo(again.token());
            sync(again.unlock());
            sync(taken.unlock());
            LockHandle third = sync(client.tryLock(released, 30_000, 0));
            assertThat(third.token()).isEqualTo(again.token() + 1);
            sync(third.unlock());
        }
    }

    @Test
    void when_aSystemRecordToRestoreIsBad_then_itIsRefusedAsInvalidAndNothingChanges() {
        byte[] key = "~coord/bad-restore".getBytes(StandardCharsets.UTF_8);
        sync(sourceClient.getSequence(key, 5));

        assertThatThrownBy(() -> sync(sourceClient.admin().restoreSystemRecord(new byte[0], CoordRecord.getDefaultInstance().toByteArray())))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThatThrownBy(() -> sync(sourceClient.admin().restoreSystemRecord(new byte[5000], CoordRecord.getDefaultInstance().toByteArray())))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThatThrownBy(() -> sync(sourceClient.admin().restoreSystemRecord(key,
                CoordRecord.newBuilder().setNextSequence(-1).build().toByteArray())))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                .hasMessageContaining("2^63");
        // 'n' (0x6e) is a tag of wire type 6, which protobuf does not have
        WriteResponse notARecord = send(key, WriteOp.newBuilder().setType(WriteOpType.RESTORE_COORD)
                .setKey(ByteString.copyFrom(key)).setValue(ByteString.copyFromUtf8("not a record")).build());
        assertThat(notARecord.getError().getCode()).isEqualTo(KvProto.ErrorCode.INVALID_ARGUMENT);
        assertThat(notARecord.getError().getDetail()).contains("CoordRecord");

        assertThat(sync(sourceClient.getLatestSequence(key))).isEqualTo(5);
        sync(sourceClient.admin().restoreSystemRecord(key, CoordRecord.newBuilder().setNextSequence(3).build().toByteArray()));
        assertThat(sync(sourceClient.getLatestSequence(key))).as("never back").isEqualTo(5);
        sync(sourceClient.admin().restoreSystemRecord(key, CoordRecord.newBuilder().setNextSequence(9).build().toByteArray()));
        assertThat(sync(sourceClient.getLatestSequence(key))).isEqualTo(9);
    }

    /** One write op straight to the leader of the key's region, past the client's checks. */
    private static WriteResponse send(byte[] key, WriteOp op) {
        return source.writeToLeader(source.regionOf(key), op);
    }

    private static int openSessions() {
        int n = 0;
        for (int i = 0; i < source.size(); i++) {
            n += source.node(i).backups().size();
        }
        return n;
    }

    // ---- the CLI -----------------------------------------------------------------------------------

    record Run(int code, String out, String err) {
    }

    static Run cli(InProcessCluster cluster, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        List<String> all = new ArrayList<>();
        if (cluster != null) {
            all.add("--servers");
            all.add(String.join(",", cluster.endpoints()));
        }
        all.addAll(List.of(args));
        int code = KvCtl.run(all.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void when_theCliBacksUpVerifiesAndRestores_then_exitCodesAndOneLineErrorsFollowTheHouseRules() throws Exception {
        sync(sourceClient.put("cli-key".getBytes(StandardCharsets.UTF_8), value(5)));
        Path backupDir = dir.resolve("cli-backup");

        Run backup = cli(source, "backup", backupDir.toString(), "--rate-limit", "50", "--quiet");
        Run again = cli(source, "backup", backupDir.toString());
        Run verify = cli(null, "backup", "verify", backupDir.toString());
        Run noDir = cli(source, "backup");

        assertThat(backup.code()).as(backup.err()).isZero();
        assertThat(backup.out()).contains("6 regions").contains("cluster ");
        assertThat(again.code()).isEqualTo(2);
        assertThat(again.err()).contains("not empty").hasLineCount(1);
        assertThat(verify.code()).as(verify.err()).isZero();
        assertThat(verify.out()).contains("OK").contains(BackupManifest.read(backupDir).clusterId());
        assertThat(noDir.code()).isEqualTo(2);

        // one flipped byte: verify and restore both refuse it, naming the file, and restore writes nothing
        Path copy = dir.resolve("cli-backup-corrupt");
        copyDir(backupDir, copy);
        BackupManifest.Region biggest = BackupManifest.read(copy).regions().stream()
                .max(java.util.Comparator.comparingLong(BackupManifest.Region::fileBytes)).orElseThrow();
        Path file = copy.resolve(biggest.file());
        byte[] b = Files.readAllBytes(file);
        b[b.length - 20] ^= 0x40;
        Files.write(file, b);
        sync(targetClient.deleteRange(null, null));

        Run verifyCorrupt = cli(null, "backup", "verify", copy.toString());
        Run restoreCorrupt = cli(target, "restore", copy.toString());

        assertThat(verifyCorrupt.code()).isEqualTo(1);
        assertThat(verifyCorrupt.err()).contains(file.toString()).contains("CRC32C").hasLineCount(1);
        assertThat(restoreCorrupt.code()).isEqualTo(1);
        assertThat(restoreCorrupt.err()).contains(file.toString()).contains("CRC32C").hasLineCount(1);
        assertThat(sync(targetClient.scan(null, null, 1, true))).isEmpty();

        // an incomplete backup (no manifest) is refused as such
        Path incomplete = dir.resolve("cli-backup-incomplete");
        copyDir(backupDir, incomplete);
        Files.delete(incomplete.resolve(BackupManifest.FILE));
        Run verifyIncomplete = cli(null, "backup", "verify", incomplete.toString());
        assertThat(verifyIncomplete.code()).isEqualTo(1);
        assertThat(verifyIncomplete.err()).contains("incomplete");

        // restore: into the empty target, then refused there (not empty), then forced
        Run restore = cli(target, "restore", backupDir.toString(), "--quiet");
        Run refused = cli(target, "restore", backupDir.toString(), "--quiet");
        Run forced = cli(target, "restore", backupDir.toString(), "--force", "--rate-limit", "20", "--quiet");

        assertThat(restore.code()).as(restore.err()).isZero();
        assertThat(restore.out()).contains("restored").contains(BackupManifest.read(backupDir).clusterId());
        assertThat(version(sync(targetClient.get("cli-key".getBytes(StandardCharsets.UTF_8))))).isEqualTo(5);
        assertThat(refused.code()).isEqualTo(1);
        assertThat(refused.err()).contains("not empty").contains("--force").hasLineCount(1);
        assertThat(forced.code()).as(forced.err()).isZero();

        // no server answers: exit 3
        Run down = cli(null, "--servers", "127.0.0.1:" + InProcessCluster.freePort(), "backup",
                dir.resolve("never").toString());
        assertThat(down.code()).as(down.err()).isEqualTo(3);
    }

    private static void copyDir(Path from, Path to) throws java.io.IOException {
        Files.createDirectories(to);
        try (var files = Files.list(from)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Files.copy(p, to.resolve(p.getFileName()));
            }
        }
    }
}
