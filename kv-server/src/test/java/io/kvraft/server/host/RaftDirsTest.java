package io.kvraft.server.host;

import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionStateMachine;

import com.alipay.sofa.jraft.Status;
import io.kvraft.client.KvClient;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.server.IdempotentWrites;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.MemoryStore;
import io.kvraft.server.store.RocksStore;
import io.kvraft.server.store.StoreBatch;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The checks RaftDirs runs on a region's directories before its group starts, against real jraft
 * snapshots (made by a one-node cluster) damaged in the ways a disk damages files.
 */
class RaftDirsTest {

    @TempDir
    Path dir;

    /** A one-node cluster with two regions, three keys each, snapshotted; returns region 1's directory. */
    private Fixture makeSnapshot(String engine) throws Exception {
        Path data;
        List<RegionInfo> regions;
        try (InProcessCluster cluster = InProcessCluster.start(1, 2, dir.resolve("cluster"), engine, RaftConfig.LOG_PER_REGION)) {
            cluster.awaitBalanced(120);
            KvClient c = cluster.client();
            regions = c.admin().regions().join();
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (RegionInfo r : regions) {
                for (String s : List.of("a", "b", "c")) {
                    puts.add(IdempotentWrites.put(c, key(r, s), ("v-" + s).getBytes(StandardCharsets.UTF_8)));
                }
            }
            CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
            for (Region r : cluster.node(0).host().regions()) {
                CompletableFuture<Status> done = new CompletableFuture<>();
                r.node().snapshot(done::complete);
                assertThat(done.get(30, TimeUnit.SECONDS).isOk()).isTrue();
            }
            data = Path.of(cluster.node(0).config().dataDir());
        }
        return new Fixture(engine, data, regions);
    }

    private record Fixture(String engine, Path data, List<RegionInfo> regions) {
        Path regionDir(int id) {
            return data.resolve("raft").resolve("region-" + id);
        }

        KeyRange range(int id) {
            RegionInfo r = regions.get(id - 1);
            return new KeyRange(r.startKey(), r.endKey());
        }

        Path snapshotRoot() {
            return regionDir(1).resolve(RaftDirs.SNAPSHOT_DIR);
        }
    }

    private static byte[] key(RegionInfo r, String suffix) {
        byte[] start = r.startKey();
        byte[] k = java.util.Arrays.copyOf(start, start.length + suffix.length());
        System.arraycopy(suffix.getBytes(StandardCharsets.US_ASCII), 0, k, start.length, suffix.length());
        return k;
    }

    private static Path latest(Path snapshotRoot) throws Exception {
        try (Stream<Path> s = Files.list(snapshotRoot)) {
            return s.filter(p -> p.getFileName().toString().startsWith("snapshot_"))
                    .max(Comparator.comparing(p -> Long.parseLong(p.getFileName().toString().substring(9)))).orElseThrow();
        }
    }

    /** Applies {@code damage} to a copy of region 1's snapshot root and returns what RaftDirs says about it. */
    private String problemAfter(Fixture f, Consumer<Path> damage) throws Exception {
        Path copy = dir.resolve("copy-" + System.nanoTime());
        copyTree(f.snapshotRoot(), copy);
        damage.accept(latest(copy));
        return RaftDirs.snapshotProblem(f.range(1), copy, f.engine());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_aSnapshotIsDamaged_then_theCheckSaysWhatIsWrong(String engine) throws Exception {
        Fixture f = makeSnapshot(engine);
        String dataFile = engine.equals("memory") ? MemoryStore.SNAPSHOT_FILE : RocksStore.SST_FILE;

        assertThat(RaftDirs.snapshotProblem(f.range(1), f.snapshotRoot(), engine)).isNull();
        assertThat(RaftDirs.snapshotProblem(f.range(1), f.regionDir(1).resolve("no-such-dir"), engine)).isNull();
        // region 2's snapshot checked against region 1's range: the keys are out of range
        assertThat(RaftDirs.snapshotProblem(f.range(1), f.regionDir(2).resolve(RaftDirs.SNAPSHOT_DIR), engine))
                .contains("outside the region range");

        assertThat(problemAfter(f, s -> flip(s.resolve("kv").resolve(dataFile), -1))).contains("corrupt snapshot file").contains(dataFile);
        assertThat(problemAfter(f, s -> truncate(s.resolve("kv").resolve(dataFile)))).containsAnyOf("truncated", "bytes");
        assertThat(problemAfter(f, s -> delete(s.resolve("kv").resolve(dataFile)))).contains("missing");
        if (engine.equals("rocksdb")) {
            assertThat(problemAfter(f, s -> flip(s.resolve("kv").resolve(RocksStore.MANIFEST_FILE), -1)))
                    .contains("manifest").contains("CRC32C mismatch");
        }
        // the region state has no checksum of its own: the one in the snapshot meta names it
        assertThat(problemAfter(f, s -> flip(s.resolve(RegionStateMachine.STATE_FILE), -1)))
                .contains("corrupt snapshot file").contains(RegionStateMachine.STATE_FILE).contains("CRC32C mismatch with the snapshot meta");
        String meta = "__raft_snapshot_meta";
        // a flipped length prefix must not make the check allocate gigabytes
        assertThat(problemAfter(f, s -> flip(s.resolve(meta), 0))).contains("snapshot meta").contains("truncated or damaged");
        assertThat(problemAfter(f, s -> truncate(s.resolve(meta)))).contains("snapshot meta");
        assertThat(problemAfter(f, s -> delete(s.resolve(meta)))).contains("snapshot meta").contains("missing");
        assertThat(problemAfter(f, s -> rename(s, s.resolveSibling("snapshot_999999")))).contains("says index");
        assertThat(problemAfter(f, s -> mkdir(s.resolveSibling("snapshot_x1")))).contains("unexpected entry");
        // jraft ignores other names and deletes "temp" itself
        assertThat(problemAfter(f, s -> mkdir(s.resolveSibling("temp")))).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory", "rocksdb"})
    void when_theLatestSnapshotIsCorrupt_then_snapshotAndLogMoveAsideAndTheRangeIsCleared(String engine) throws Exception {
        Fixture f = makeSnapshot(engine);
        flip(latest(f.snapshotRoot()).resolve("kv").resolve(engine.equals("memory") ? MemoryStore.SNAPSHOT_FILE : RocksStore.SST_FILE), -1);
        Path regionDir = f.regionDir(1);
        byte[] metaBefore = Files.readAllBytes(regionDir.resolve("meta").resolve("raft_meta"));

        try (KvStore store = engine.equals("memory") ? new MemoryStore()
                : RocksStore.open(f.data().resolve("store"), 8 << 20, 4 << 20, "lz4")) {
            if (engine.equals("memory")) { // a memory store is empty after a restart; give it something to clear
                for (int id = 1; id <= 2; id++) {
                    StoreBatch b = new StoreBatch(1);
                    b.put(key(f.regions().get(id - 1), "a"), "x".getBytes(StandardCharsets.UTF_8));
                    store.apply(id, 7, b);
                }
            }
            long region2Index = store.appliedIndex(2);
            assertThat(store.appliedIndex(1)).isPositive();
            assertThat(store.get(key(f.regions().get(0), "a"))).isNotNull();

            RaftDirs.checkBeforeStart(1, f.range(1), regionDir, store, 3);

            assertThat(store.appliedIndex(1)).isZero();
            assertThat(store.get(key(f.regions().get(0), "a"))).isNull();
            assertThat(store.approximateCount(f.range(1))).isZero();
            // the other region is untouched
            assertThat(store.appliedIndex(2)).isEqualTo(region2Index);
            assertThat(store.get(key(f.regions().get(1), "a"))).isNotNull();
        }
        try (Stream<Path> s = Files.list(regionDir)) {
            List<String> names = s.map(p -> p.getFileName().toString()).sorted().toList();
            assertThat(names).hasSize(3).contains("meta")
                    .anyMatch(n -> n.startsWith("log.corrupt-")).anyMatch(n -> n.startsWith("snapshot.corrupt-"));
        }
        assertThat(Files.readAllBytes(regionDir.resolve("meta").resolve("raft_meta"))).isEqualTo(metaBefore);
        // region 2 is left alone
        assertThat(RaftDirs.snapshotProblem(f.range(2), f.regionDir(2).resolve(RaftDirs.SNAPSHOT_DIR), engine)).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory"})
    void when_theOnlyReplicaHasACorruptSnapshot_then_theStartIsRefusedAndNothingMoves(String engine) throws Exception {
        Fixture f = makeSnapshot(engine);
        Path snap = latest(f.snapshotRoot());
        flip(snap.resolve("kv").resolve(MemoryStore.SNAPSHOT_FILE), -1);

        try (KvStore store = new MemoryStore()) {
            assertThatThrownBy(() -> RaftDirs.checkBeforeStart(1, f.range(1), f.regionDir(1), store, 1))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("region 1: local snapshot refused")
                    .hasMessageContaining("only replica")
                    .hasMessageNotContaining("\n");
        }
        assertThat(snap).isDirectory();
        assertThat(f.regionDir(1).resolve("log")).isDirectory();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"memory"})
    void when_theRaftMetaIsDamaged_then_theStartIsRefusedInOneLine(String engine) throws Exception {
        Fixture f = makeSnapshot(engine);
        Path meta = f.regionDir(1).resolve("meta").resolve("raft_meta");
        // (a flipped byte inside the term or the vote may still parse: jraft has no checksum there either)
        for (Consumer<Path> damage : List.<Consumer<Path>>of(p -> flip(p, 0), RaftDirsTest::truncate, p -> flip(p, 6))) {
            byte[] good = Files.readAllBytes(meta);
            damage.accept(meta);
            try (KvStore store = new MemoryStore()) {
                assertThatThrownBy(() -> RaftDirs.checkBeforeStart(1, f.range(1), f.regionDir(1), store, 3))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("region 1: raft meta " + meta + " is unreadable")
                        .hasMessageContaining("refusing to start")
                        .hasMessageNotContaining("\n");
            }
            Files.write(meta, good);
        }
        try (KvStore store = new MemoryStore()) {
            RaftDirs.checkBeforeStart(1, f.range(1), f.regionDir(1), store, 3); // intact again
        }
    }

    // ---- damage ---------------------------------------------------------------------------------

    /** XORs 4 bytes at {@code at}, or in the middle when {@code at} is negative. */
    private static void flip(Path file, int at) {
        try {
            byte[] b = Files.readAllBytes(file);
            int from = at >= 0 ? at : b.length / 2;
            for (int i = from; i < Math.min(b.length, from + 4); i++) {
                b[i] ^= (byte) 0x5A;
            }
            Files.write(file, b);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void truncate(Path file) {
        try {
            byte[] b = Files.readAllBytes(file);
            Files.write(file, java.util.Arrays.copyOf(b, b.length / 2));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void delete(Path file) {
        try {
            Files.delete(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void rename(Path from, Path to) {
        try {
            Files.move(from, to);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void mkdir(Path p) {
        try {
            Files.createDirectories(p);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void copyTree(Path from, Path to) throws Exception {
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }

    @org.junit.jupiter.api.Test
    void when_theLogLayoutDiffersFromTheConfiguredOne_then_theStartIsRefused() throws Exception {
        Path raft = dir.resolve("layout").resolve("raft");
        RaftDirs.checkLogLayout(raft, true); // nothing there yet: fine either way
        Files.createDirectories(raft.resolve("region-1").resolve("log"));
        RaftDirs.checkLogLayout(raft, false);
        assertThatThrownBy(() -> RaftDirs.checkLogLayout(raft, true))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("per-region Raft logs").hasMessageContaining("raft.logStorage: per-region");

        Path raft2 = dir.resolve("layout2").resolve("raft");
        Files.createDirectories(raft2.resolve(RaftDirs.SHARED_LOG_DIR));
        RaftDirs.checkLogLayout(raft2, true);
        assertThatThrownBy(() -> RaftDirs.checkLogLayout(raft2, false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("shared Raft log").hasMessageContaining("raft.logStorage: shared");
    }
}
