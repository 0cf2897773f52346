package io.kvraft.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RocksStoreTest extends KvStoreContractTest {

    private static final long BLOCK_CACHE_BYTES = 8L << 20;
    private static final long WRITE_BUFFER_BYTES = 4L << 20;

    @Override
    protected KvStore openStore(Path dir) {
        return RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "lz4");
    }

    @Test
    void when_reopened_then_dataAndAppliedIndexSurvive() {
        Path dir = newDir("rocks");
        try (RocksStore store = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "zstd")) {
            StoreBatch batch = new StoreBatch(2);
            batch.put(bytes("k1"), bytes("v1"));
            batch.put(bytes("k2"), bytes("v2"));
            store.apply(3, 17, batch);
            StoreBatch deletion = new StoreBatch(1);
            deletion.delete(bytes("k2"));
            store.apply(3, 18, deletion);
        }

        try (RocksStore reopened = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "zstd")) {
            assertThat(reopened.get(bytes("k1"))).isEqualTo(bytes("v1"));
            assertThat(reopened.get(bytes("k2"))).isNull();
            assertThat(reopened.appliedIndex(3)).isEqualTo(18);
        }
    }

    @Test
    void when_snapshotLoaded_then_itsAppliedIndexSurvivesReopen() throws IOException {
        Path snapshot = Files.createDirectories(newDir("snapshot"));
        try (RocksStore source = RocksStore.open(newDir("rocks"), BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "lz4")) {
            StoreBatch batch = new StoreBatch(1);
            batch.put(bytes("k"), bytes("v"));
            source.apply(1, 5, batch);
            source.writeSnapshot(KeyRange.ALL, snapshot);
        }
        Path dir = newDir("rocks");
        try (RocksStore target = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "lz4")) {
            target.loadSnapshot(1, 40, KeyRange.ALL, snapshot);
        }

        try (RocksStore reopened = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "lz4")) {
            assertThat(reopened.get(bytes("k"))).isEqualTo(bytes("v"));
            assertThat(reopened.appliedIndex(1)).isEqualTo(40);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "lz4", "zstd", "snappy"})
    void when_compressionIsSupported_then_storeOpensAndServesWrites(String compression) {
        try (RocksStore store = RocksStore.open(newDir("rocks"), BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, compression)) {
            StoreBatch batch = new StoreBatch(1);
            batch.put(bytes("k"), bytes("v"));
            store.apply(1, 1, batch);

            assertThat(store.get(bytes("k"))).isEqualTo(bytes("v"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "gzip", "LZ4", "zlib"})
    void when_compressionIsUnknown_then_openIsRejected(String compression) {
        Path dir = newDir("rocks");

        assertThatThrownBy(() -> RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, compression))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("compression");
        assertThat(dir).doesNotExist();
    }

    @Test
    void when_compressionIsNull_then_openIsRejected() {
        assertThatThrownBy(() -> RocksStore.open(newDir("rocks"), BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void when_dataIsWritten_then_theRoomItsFlushOrCompactionMayTakeIsCounted_inMemtablesAndThenInFiles() {
        Path dir = newDir("rocks");
        byte[] value = new byte[1024];
        new java.util.Random(7).nextBytes(value); // incompressible: the files hold about what was written
        try (RocksStore store = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none")) {
            long empty = store.compactionBytes();
            StoreBatch batch = new StoreBatch(2048);
            for (int i = 0; i < 2048; i++) {
                batch.put(bytes("k" + i), value);
            }
            store.apply(1, 1, batch);
            assertThat(store.compactionBytes()).isGreaterThan(empty + (2L << 20)); // 2 MiB in the memtable
        }
        RocksStore reopened = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none");
        assertThat(reopened.compactionBytes()).isGreaterThan(2L << 20); // the log replayed: a level-0 file or a memtable
        reopened.close();
        assertThat(reopened.compactionBytes()).isZero();
    }

    @Test
    void when_aTableFileHasAFlippedByte_then_theStoreRefusesToOpen_namingTheFile() throws IOException {
        Path dir = newDir("rocks");
        byte[] value = new byte[1024];
        new java.util.Random(7).nextBytes(value);
        try (RocksStore store = RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none")) {
            StoreBatch batch = new StoreBatch(1024);
            for (int i = 0; i < 1024; i++) {
                batch.put(bytes("k" + i), value);
            }
            store.apply(1, 1, batch);
        }
        RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none").close(); // the WAL flushed to a table file
        Path table;
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            table = files.filter(f -> f.toString().endsWith(".sst"))
                    .max(java.util.Comparator.comparingLong(f -> f.toFile().length())).orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(table);
        bytes[bytes.length / 2] ^= (byte) 0xFF;
        Files.write(table, bytes);

        assertThatThrownBy(() -> RocksStore.open(dir, BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none"))
                .isInstanceOf(java.io.UncheckedIOException.class)
                .hasMessageContaining("damaged")
                .hasMessageContaining(table.getFileName().toString());
    }

    @Test
    void when_closed_then_furtherUseFailsCleanlyAndCloseIsIdempotent() {
        RocksStore store = RocksStore.open(newDir("rocks"), BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none");
        store.close();

        assertThatThrownBy(() -> store.get(bytes("k"))).isInstanceOf(IllegalStateException.class);
        store.close();
    }

    @Test
    void when_snapshotComesFromTheMemoryEngine_then_loadIsRefused() throws IOException {
        Path snapshot = Files.createDirectories(newDir("snapshot"));
        try (MemoryStore memory = new MemoryStore()) {
            StoreBatch batch = new StoreBatch(1);
            batch.put(bytes("k"), bytes("v"));
            memory.apply(1, 1, batch);
            memory.writeSnapshot(KeyRange.ALL, snapshot);
        }
        try (RocksStore store = RocksStore.open(newDir("rocks"), BLOCK_CACHE_BYTES, WRITE_BUFFER_BYTES, "none")) {
            assertThatThrownBy(() -> store.loadSnapshot(1, 2, KeyRange.ALL, snapshot))
                    .isInstanceOf(CorruptSnapshotException.class);
            assertThat(store.get(bytes("k"))).isNull();
            assertThat(store.appliedIndex(1)).isZero();
        }
    }
}
