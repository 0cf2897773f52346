package io.kvraft.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The behaviour every {@link KvStore} engine must share; subclasses only say how to open a store. */
abstract class KvStoreContractTest {

    private static final int REGION = 1;
    private static final int OTHER_REGION = 2;

    @TempDir
    Path tempDir;

    private final List<KvStore> openStores = new ArrayList<>();
    /** Every key any helper wrote, in unsigned order: the universe {@link #dump} reads back. */
    private final NavigableSet<byte[]> writtenKeys = new TreeSet<>(Arrays::compareUnsigned);
    private int dirCounter;

    /** Opens a store keeping its files (if any) in {@code dir}, which may not exist yet. */
    protected abstract KvStore openStore(Path dir) throws IOException;

    @AfterEach
    void closeStores() throws IOException {
        for (KvStore store : openStores) {
            store.close();
        }
    }

    protected KvStore newStore() throws IOException {
        KvStore store = openStore(newDir("store"));
        openStores.add(store);
        return store;
    }

    protected Path newDir(String prefix) {
        return tempDir.resolve(prefix + "-" + dirCounter++);
    }

    protected Path newSnapshotDir() throws IOException {
        return Files.createDirectories(newDir("snapshot"));
    }

    @Test
    void when_keyIsAbsent_then_getReturnsNull() throws IOException {
        KvStore store = newStore();

        assertThat(store.get(bytes("missing"))).isNull();
    }

    @Test
    void when_putOverwrittenThenDeleted_then_getFollowsTheLastWrite() throws IOException {
        KvStore store = newStore();

        put(store, 1, "k", "v1");
        assertThat(store.get(bytes("k"))).isEqualTo(bytes("v1"));
        put(store, 2, "k", "v2");
        assertThat(store.get(bytes("k"))).isEqualTo(bytes("v2"));
        delete(store, 3, "k");
        assertThat(store.get(bytes("k"))).isNull();
    }

    @Test
    void when_batchPutsThenDeletesSameKey_then_keyIsAbsent() throws IOException {
        KvStore store = newStore();
        put(store, 1, "k", "old");

        StoreBatch batch = new StoreBatch(2);
        batch.put(bytes("k"), bytes("new"));
        batch.delete(bytes("k"));
        store.apply(REGION, 2, batch);

        assertThat(store.get(bytes("k"))).isNull();
    }

    @Test
    void when_batchDeletesThenPutsSameKey_then_keyIsPresent() throws IOException {
        KvStore store = newStore();
        put(store, 1, "k", "old");

        StoreBatch batch = new StoreBatch(2);
        batch.delete(bytes("k"));
        batch.put(bytes("k"), bytes("new"));
        store.apply(REGION, 2, batch);

        assertThat(store.get(bytes("k"))).isEqualTo(bytes("new"));
    }

    @Test
    void when_batchWritesManyKeys_then_allAreVisibleTogether() throws IOException {
        KvStore store = newStore();

        StoreBatch batch = new StoreBatch(3);
        batch.put(bytes("a"), bytes("1"));
        batch.put(bytes("b"), bytes("2"));
        batch.put(bytes("a"), bytes("3"));
        store.apply(REGION, 7, batch);

        assertThat(store.get(bytes("a"))).isEqualTo(bytes("3"));
        assertThat(store.get(bytes("b"))).isEqualTo(bytes("2"));
        assertThat(store.appliedIndex(REGION)).isEqualTo(7);
    }

    @Test
    void when_keysDifferInTheHighBit_then_rangesUseUnsignedOrder() throws IOException {
        KvStore store = newStore();
        for (String hex : List.of("01", "7f", "80", "ff", "ff00")) {
            putRaw(store, hex);
        }

        assertThat(store.approximateCount(range("7f", "80"))).isEqualTo(1);
        assertThat(store.approximateCount(range("", "80"))).isEqualTo(2);
        assertThat(store.approximateCount(range("80", ""))).isEqualTo(3);
        assertThat(store.approximateCount(range("80", "ff"))).isEqualTo(1);
        assertThat(store.approximateCount(range("ff", ""))).isEqualTo(2);

        Path snapshot = newSnapshotDir();
        store.writeSnapshot(range("80", ""), snapshot);
        KvStore target = newStore();
        target.loadSnapshot(REGION, 9, range("80", ""), snapshot);
        assertThat(dump(target)).containsOnlyKeys("80", "ff", "ff00");
    }

    @Test
    void when_applied_then_appliedIndexIsRecordedPerRegion() throws IOException {
        KvStore store = newStore();
        assertThat(store.appliedIndex(REGION)).isZero();

        store.apply(REGION, 5, new StoreBatch(0));
        put(store, OTHER_REGION, 9, "x", "y");

        assertThat(store.appliedIndex(REGION)).isEqualTo(5);
        assertThat(store.appliedIndex(OTHER_REGION)).isEqualTo(9);
        assertThat(store.appliedIndex(3)).isZero();
    }

    @Test
    void when_snapshotLoaded_then_onlyThatRangeIsReplaced() throws IOException {
        KvStore source = newStore();
        putAll(source, "a", "b1", "c1", "d", "z");
        KeyRange range = new KeyRange(bytes("b"), bytes("d"));
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(range, snapshot);

        KvStore target = newStore();
        putAll(target, "a-target", "b1-stale", "bb-stale", "c9-stale", "d-target", "y-target");
        target.loadSnapshot(REGION, 42, range, snapshot);

        Map<String, String> contents = dump(target);
        assertThat(contents).containsExactlyEntriesOf(new TreeMap<>(Map.of(
                hex("a-target"), "v:a-target",
                hex("b1"), "v:b1",
                hex("c1"), "v:c1",
                hex("d-target"), "v:d-target",
                hex("y-target"), "v:y-target")));
        assertThat(target.appliedIndex(REGION)).isEqualTo(42);
        assertThat(target.appliedIndex(OTHER_REGION)).isZero();
    }

    @Test
    void when_snapshotLoadedTwiceFromSameDir_then_dirStaysUsable() throws IOException {
        KvStore source = newStore();
        putAll(source, "a", "b");
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(KeyRange.ALL, snapshot);
        List<Path> filesBefore = files(snapshot);

        newStore().loadSnapshot(REGION, 3, KeyRange.ALL, snapshot);
        KvStore second = newStore();
        second.loadSnapshot(REGION, 3, KeyRange.ALL, snapshot);

        assertThat(files(snapshot)).isEqualTo(filesBefore);
        assertThat(dump(second)).containsOnlyKeys(hex("a"), hex("b"));
    }

    @Test
    void when_rangeIsEmpty_then_snapshotRoundTripsAndClearsTheTargetRange() throws IOException {
        KvStore source = newStore();
        putAll(source, "a", "z");
        KeyRange range = new KeyRange(bytes("m"), bytes("n"));
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(range, snapshot);

        KvStore target = newStore();
        putAll(target, "a", "m1", "m2", "z");
        target.loadSnapshot(REGION, 11, range, snapshot);

        assertThat(dump(target)).containsOnlyKeys(hex("a"), hex("z"));
        assertThat(target.appliedIndex(REGION)).isEqualTo(11);
    }

    @Test
    void when_rangeHasUnboundedStart_then_snapshotCoversEveryLowerKey() throws IOException {
        KvStore source = newStore();
        putRaw(source, "");
        putRaw(source, "00");
        putRaw(source, "6000");
        putRaw(source, "80");
        KeyRange range = range("", "80");
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(range, snapshot);

        KvStore target = newStore();
        putRaw(target, "0000");
        putRaw(target, "90");
        target.loadSnapshot(REGION, 4, range, snapshot);

        assertThat(dump(target)).containsOnlyKeys("", "00", "6000", "90");
    }

    @Test
    void when_rangeHasUnboundedEnd_then_snapshotCoversEveryHigherKey() throws IOException {
        KvStore source = newStore();
        putRaw(source, "10");
        putRaw(source, "80");
        putRaw(source, "ffffffff");
        KeyRange range = range("80", "");
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(range, snapshot);

        KvStore target = newStore();
        putRaw(target, "10ff");
        putRaw(target, "80");
        putRaw(target, "ff");
        putRaw(target, "ffffffffffff");
        target.loadSnapshot(REGION, 4, range, snapshot);

        assertThat(dump(target)).containsOnlyKeys("10ff", "80", "ffffffff");
    }

    @Test
    void when_wholeKeySpaceIsSnapshotted_then_targetEqualsSource() throws IOException {
        KvStore source = newStore();
        putAll(source, "a", "b", "c");
        putRaw(source, "ff");
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(KeyRange.ALL, snapshot);

        KvStore target = newStore();
        putAll(target, "stale");
        target.loadSnapshot(REGION, 8, KeyRange.ALL, snapshot);

        assertThat(dump(target)).isEqualTo(dump(source));
    }

    @Test
    void when_snapshotIsCorrupt_then_loadIsRefusedAndStoreUnchanged() throws IOException {
        Path snapshot = snapshotOfSomeKeys();
        KvStore target = storeWithOwnKeys();
        Map<String, String> before = dump(target);

        for (Path file : files(snapshot)) {
            long size = Files.size(file);
            for (long position : List.of(0L, size / 2, size - 1)) {
                Path copy = copyOf(snapshot);
                flipByte(copy.resolve(file.getFileName()), position);

                assertThatThrownBy(() -> target.loadSnapshot(REGION, 99, KeyRange.ALL, copy))
                        .as("byte %d of %s flipped", position, file.getFileName())
                        .isInstanceOf(CorruptSnapshotException.class)
                        .hasMessageContaining(copy.toString());
                assertUnchanged(target, before);
            }
        }
    }

    @Test
    void when_snapshotIsTruncated_then_loadIsRefusedAndStoreUnchanged() throws IOException {
        Path snapshot = snapshotOfSomeKeys();
        KvStore target = storeWithOwnKeys();
        Map<String, String> before = dump(target);

        for (Path file : files(snapshot)) {
            long size = Files.size(file);
            for (long newSize : List.of(0L, size / 2, size - 1)) {
                Path copy = copyOf(snapshot);
                try (RandomAccessFile raf = new RandomAccessFile(copy.resolve(file.getFileName()).toFile(), "rw")) {
                    raf.setLength(newSize);
                }

                assertThatThrownBy(() -> target.loadSnapshot(REGION, 99, KeyRange.ALL, copy))
                        .as("%s truncated to %d bytes", file.getFileName(), newSize)
                        .isInstanceOf(CorruptSnapshotException.class);
                assertUnchanged(target, before);
            }
        }
    }

    @Test
    void when_snapshotFileIsMissing_then_loadIsRefusedAndStoreUnchanged() throws IOException {
        Path snapshot = snapshotOfSomeKeys();
        KvStore target = storeWithOwnKeys();
        Map<String, String> before = dump(target);

        for (Path file : files(snapshot)) {
            Path copy = copyOf(snapshot);
            Files.delete(copy.resolve(file.getFileName()));

            assertThatThrownBy(() -> target.loadSnapshot(REGION, 99, KeyRange.ALL, copy))
                    .as("%s deleted", file.getFileName())
                    .isInstanceOf(CorruptSnapshotException.class);
            assertUnchanged(target, before);
        }
    }

    @Test
    void when_snapshotHoldsKeysOutsideTheTargetRange_then_loadIsRefusedAndStoreUnchanged() throws IOException {
        Path snapshot = snapshotOfSomeKeys();
        KvStore target = storeWithOwnKeys();
        Map<String, String> before = dump(target);

        assertThatThrownBy(() -> target.loadSnapshot(REGION, 99, new KeyRange(bytes("a"), bytes("b")), snapshot))
                .isInstanceOf(CorruptSnapshotException.class)
                .hasMessageContaining("outside");
        assertUnchanged(target, before);
    }

    @Test
    void when_keysInserted_then_approximateCountMatchesEachRange() throws IOException {
        KvStore store = newStore();
        assertThat(store.approximateCount(KeyRange.ALL)).isZero();
        for (int i = 0; i < 100; i++) {
            putAll(store, String.format("k%03d", i));
        }

        assertThat(store.approximateCount(KeyRange.ALL)).isEqualTo(100);
        assertThat(store.approximateCount(new KeyRange(bytes("k010"), bytes("k020")))).isEqualTo(10);
        assertThat(store.approximateCount(new KeyRange(bytes("k090"), new byte[0]))).isEqualTo(10);
        assertThat(store.approximateCount(new KeyRange(new byte[0], bytes("k005")))).isEqualTo(5);
        assertThat(store.approximateCount(new KeyRange(bytes("x"), bytes("y")))).isZero();
    }

    // --- helpers ---

    private Path snapshotOfSomeKeys() throws IOException {
        KvStore source = newStore();
        for (int i = 0; i < 50; i++) {
            putAll(source, String.format("snap%03d", i));
        }
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(KeyRange.ALL, snapshot);
        assertThat(files(snapshot)).isNotEmpty();
        return snapshot;
    }

    private KvStore storeWithOwnKeys() throws IOException {
        KvStore target = newStore();
        putAll(target, "own1", "own2", "snap000");
        target.apply(REGION, 7, new StoreBatch(0));
        return target;
    }

    private void assertUnchanged(KvStore store, Map<String, String> before) {
        assertThat(dump(store)).isEqualTo(before);
        assertThat(store.appliedIndex(REGION)).isEqualTo(7);
    }

    private Path copyOf(Path snapshot) throws IOException {
        Path copy = newSnapshotDir();
        for (Path file : files(snapshot)) {
            Files.copy(file, copy.resolve(file.getFileName()));
        }
        return copy;
    }

    // ---- scans and range deletes -----------------------------------------------------------------

    @Test
    void when_scanned_then_keysComeInUnsignedOrderWithinBounds() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("00", "10", "7f", "80", "ff", "ff00")) {
            putRaw(store, k);
        }

        assertThat(keys(store.scan(REGION, range("10", "ff"), false, page(100)))).containsExactly("10", "7f", "80");
        assertThat(keys(store.scan(REGION, range("", ""), false, page(100)))).containsExactly("00", "10", "7f", "80", "ff", "ff00");
        assertThat(keys(store.scan(REGION, range("80", ""), false, page(100)))).containsExactly("80", "ff", "ff00");
        assertThat(keys(store.scan(REGION, range("", "10"), false, page(100)))).containsExactly("00");
    }

    @Test
    void when_scannedInReverse_then_keysComeDescendingWithinBounds() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("00", "10", "7f", "80", "ff", "ff00")) {
            putRaw(store, k);
        }

        assertThat(keys(store.scan(REGION, range("10", "ff"), true, page(100)))).containsExactly("80", "7f", "10");
        assertThat(keys(store.scan(REGION, range("", ""), true, page(2)))).containsExactly("ff00", "ff");
        assertThat(keys(store.scan(REGION, range("", "80"), true, page(100)))).containsExactly("7f", "10", "00");
    }

    @Test
    void when_aRangeIsCaptured_then_laterWritesDoNotShowInItsPages_andPagesGoOnFromAnyKey() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("01", "02", "03", "04", "10")) {
            putRaw(store, k);
        }

        RangeCapture capture = store.capture(REGION, range("", "10"));
        StoreBatch later = new StoreBatch(3);
        later.put(bytes("\u0005"), bytes("new"));
        later.delete(HexFormat.of().parseHex("02"));
        later.deleteRange(HexFormat.of().parseHex("03"), HexFormat.of().parseHex("04"));
        store.apply(REGION, 2, later);

        ScanPage first = capture.page(new byte[0], page(2));
        ScanPage rest = capture.page(HexFormat.of().parseHex("0201"), page(10)); // between keys: from the next one
        ScanPage again = capture.page(new byte[0], page(2));

        assertThat(keys(first)).containsExactly("01", "02");
        assertThat(first.more()).isTrue();
        assertThat(keys(rest)).containsExactly("03", "04"); // "10" is past the captured range
        assertThat(rest.more()).isFalse();
        assertThat(keys(again)).isEqualTo(keys(first));
        assertThat(store.get(HexFormat.of().parseHex("02"))).isNull();
        capture.close();
        capture.close();
        assertThatThrownBy(() -> capture.page(new byte[0], page(1))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void when_aRangeIsCaptured_then_itsSystemRecordsArePagedAsOfTheCapture_apartFromThePairs() throws IOException {
        KvStore store = newStore();
        StoreBatch before = new StoreBatch(1);
        before.put(bytes("a"), bytes("pair-a"));
        before.putSystem(bytes("a"), bytes("seq-a-1"));
        before.putSystem(bytes("b"), bytes("lock-b-1"));
        before.putSystem(bytes("c"), bytes("seq-c-1"));
        before.putSystem(bytes("x"), bytes("outside")); // past the captured range
        store.apply(REGION, 1, before);

        RangeCapture capture = store.capture(REGION, new KeyRange(bytes("a"), bytes("d")));
        StoreBatch later = new StoreBatch(0);
        later.putSystem(bytes("a"), bytes("seq-a-2"));
        later.putSystem(bytes("b"), null);
        later.putSystem(bytes("bb"), bytes("new"));
        store.apply(REGION, 2, later);

        ScanPage first = capture.systemPage(new byte[0], page(2));
        ScanPage rest = capture.systemPage(bytes("b\u0000"), page(10)); // from just after "b"
        ScanPage pairs = capture.page(new byte[0], page(10));

        assertThat(first.keys()).extracting(k -> new String(k, StandardCharsets.UTF_8)).containsExactly("a", "b");
        assertThat(first.values()).extracting(v -> new String(v, StandardCharsets.UTF_8))
                .containsExactly("seq-a-1", "lock-b-1");
        assertThat(first.more()).isTrue();
        assertThat(rest.keys()).extracting(k -> new String(k, StandardCharsets.UTF_8)).containsExactly("c");
        assertThat(rest.more()).isFalse();
        assertThat(pairs.keys()).extracting(k -> new String(k, StandardCharsets.UTF_8)).containsExactly("a");
        assertThat(store.getSystem(bytes("a"))).isEqualTo(bytes("seq-a-2"));
        capture.close();
        assertThatThrownBy(() -> capture.systemPage(new byte[0], page(1))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void when_theStoreClosesWithACaptureOpen_then_itClosesCleanly_andTheCaptureIsClosedWithIt() throws IOException {
        KvStore store = openStore(newDir("store"));
        putRaw(store, "01");
        RangeCapture capture = store.capture(REGION, KeyRange.ALL);

        store.close();

        assertThatThrownBy(() -> capture.page(new byte[0], page(1))).isInstanceOf(IllegalStateException.class);
        capture.close(); // after the store: harmless
    }

    @Test
    void when_pageFillsByCountOrBytes_then_moreIsSetOnlyWhenKeysRemain() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("01", "02", "03")) {
            putRaw(store, k);
        }

        ScanPage two = store.scan(REGION, KeyRange.ALL, false, page(2));
        assertThat(keys(two)).containsExactly("01", "02");
        assertThat(two.more()).isTrue();
        ScanPage three = store.scan(REGION, KeyRange.ALL, false, page(3));
        assertThat(three.more()).as("exactly the remaining keys fill the page").isFalse();
        // every pair is 1 + 5 bytes ("v:01"... is 4 bytes + key 1): a 1-byte budget still returns one pair
        ScanPage byBytes = store.scan(REGION, KeyRange.ALL, false, new ScanPage.Builder(100, 1, false));
        assertThat(keys(byBytes)).containsExactly("01");
        assertThat(byBytes.more()).isTrue();
        assertThat(new String(byBytes.values().get(0), StandardCharsets.UTF_8)).isEqualTo("v:01");
    }

    @Test
    void when_keysOnly_then_valuesAreEmpty() throws IOException {
        KvStore store = newStore();
        putRaw(store, "01");

        ScanPage page = store.scan(REGION, KeyRange.ALL, false, new ScanPage.Builder(10, 1 << 20, true));

        assertThat(keys(page)).containsExactly("01");
        assertThat(page.values().get(0)).isEmpty();
    }

    @Test
    void when_deletedKeysExist_then_scanNeverReturnsThem() throws IOException {
        KvStore store = newStore();
        putAll(store, "a", "b", "c");
        delete(store, 2, "b");

        assertThat(keys(store.scan(REGION, KeyRange.ALL, false, page(10)))).containsExactly(hex("a"), hex("c"));
        assertThat(keys(store.scan(REGION, KeyRange.ALL, true, page(10)))).containsExactly(hex("c"), hex("a"));
    }

    @Test
    void when_rangeDeleted_then_onlyKeysInsideAreGone() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("00", "10", "7f", "80", "ff")) {
            putRaw(store, k);
        }
        StoreBatch batch = new StoreBatch(1);
        batch.deleteRange(HexFormat.of().parseHex("10"), HexFormat.of().parseHex("80"));
        store.apply(REGION, 5, batch);

        assertThat(keys(store.scan(REGION, KeyRange.ALL, false, page(10)))).containsExactly("00", "80", "ff");
        assertThat(dump(store)).containsOnlyKeys("00", "80", "ff");
        assertThat(store.appliedIndex(REGION)).isIn(0L, 5L);
    }

    @Test
    void when_rangeWithUnboundedEndDeleted_then_everyHigherKeyIsGoneIncludingOnesPutEarlierInTheBatch() throws IOException {
        KvStore store = newStore();
        for (String k : List.of("00", "10", "ff", "ffff")) {
            putRaw(store, k);
        }
        StoreBatch batch = new StoreBatch(3);
        batch.put(remember(HexFormat.of().parseHex("ffffff01")), bytes("in batch"));
        batch.deleteRange(HexFormat.of().parseHex("10"), new byte[0]);
        batch.put(remember(HexFormat.of().parseHex("20")), bytes("after the range delete"));
        store.apply(REGION, 2, batch);

        assertThat(keys(store.scan(REGION, KeyRange.ALL, false, page(10)))).containsExactly("00", "20");
        assertThat(store.get(HexFormat.of().parseHex("20"))).isEqualTo(bytes("after the range delete"));
    }

    @Test
    void when_rangeDeleteIsFollowedByPutOfAKeyInIt_then_thePutSurvives() throws IOException {
        KvStore store = newStore();
        putAll(store, "a", "b");
        StoreBatch batch = new StoreBatch(2);
        batch.deleteRange(bytes("a"), bytes("c"));
        batch.put(remember(bytes("b")), bytes("again"));
        store.apply(REGION, 3, batch);

        assertThat(dump(store)).containsExactly(Map.entry(hex("b"), "again"));
    }

    @Test
    void when_regionsHoldDisjointRanges_then_scanOfOneSeesOnlyItsRange() throws IOException {
        KvStore store = newStore();
        put(store, REGION, 1, "a", "1");
        put(store, OTHER_REGION, 1, "m", "2");

        assertThat(keys(store.scan(REGION, new KeyRange(bytes("a"), bytes("m")), false, page(10)))).containsExactly(hex("a"));
        assertThat(keys(store.scan(OTHER_REGION, new KeyRange(bytes("m"), new byte[0]), false, page(10))))
                .containsExactly(hex("m"));
    }

    @Test
    void when_readThroughRegion_then_itMatchesGet() throws IOException {
        KvStore store = newStore();
        put(store, 1, "k", "v");

        assertThat(store.read(REGION, bytes("k"))).isEqualTo(bytes("v"));
        assertThat(store.read(REGION, bytes("absent"))).isNull();
    }

    private static ScanPage.Builder page(int limit) {
        return new ScanPage.Builder(limit, 1 << 20, false);
    }

    private static List<String> keys(ScanPage page) {
        return page.keys().stream().map(HexFormat.of()::formatHex).toList();
    }

    private static void flipByte(Path file, long position) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ 0xff);
        }
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> listing = Files.list(dir)) {
            return listing.sorted().toList();
        }
    }

    @Test
    void when_systemRecordsAreWritten_then_pairScansDeletesAndCountsNeverSeeThem() throws IOException {
        KvStore store = newStore();
        StoreBatch batch = new StoreBatch(2);
        batch.put(remember(bytes("k")), bytes("v:k"));
        batch.putSystem(bytes("k"), bytes("seq"));
        batch.putSystem(bytes("only-system"), bytes("lock"));
        store.apply(REGION, 1, batch);

        ScanPage page = store.scan(REGION, KeyRange.ALL, false, new ScanPage.Builder(100, 1 << 20, false));
        assertThat(page.keys()).extracting(k -> new String(k, StandardCharsets.UTF_8)).containsExactly("k");
        assertThat(dump(store)).containsOnlyKeys(hex("k"));

        StoreBatch wipe = new StoreBatch(1);
        wipe.deleteRange(new byte[0], new byte[0]);
        store.apply(REGION, 2, wipe);
        assertThat(store.get(bytes("k"))).isNull();
        assertThat(store.getSystem(bytes("k"))).isEqualTo(bytes("seq"));
        assertThat(store.getSystem(bytes("only-system"))).isEqualTo(bytes("lock"));
        assertThat(store.appliedIndex(REGION)).isEqualTo(2);

        StoreBatch forget = new StoreBatch(1);
        forget.putSystem(bytes("k"), null);
        store.apply(REGION, 3, forget);
        assertThat(store.getSystem(bytes("k"))).isNull();
        ScanPage system = store.scanSystem(REGION, KeyRange.ALL, new ScanPage.Builder(100, 1 << 20, false));
        assertThat(system.keys()).extracting(k -> new String(k, StandardCharsets.UTF_8)).containsExactly("only-system");
    }

    @Test
    void when_snapshotLoaded_then_theRangesSystemRecordsAreReplacedAndOthersKept() throws IOException {
        KvStore source = newStore();
        StoreBatch batch = new StoreBatch(0);
        batch.putSystem(bytes("a"), bytes("source-a"));
        batch.putSystem(bytes("b1"), bytes("source-b1"));
        batch.putSystem(bytes("z"), bytes("source-z"));
        source.apply(REGION, 1, batch);
        KeyRange range = new KeyRange(bytes("b"), bytes("d"));
        Path snapshot = newSnapshotDir();
        source.writeSnapshot(range, snapshot);

        KvStore target = newStore();
        StoreBatch stale = new StoreBatch(0);
        stale.putSystem(bytes("a"), bytes("target-a"));
        stale.putSystem(bytes("b1"), bytes("target-b1"));
        stale.putSystem(bytes("c"), bytes("target-c"));
        target.apply(REGION, 1, stale);
        target.loadSnapshot(REGION, 9, range, snapshot);

        assertThat(target.getSystem(bytes("a"))).isEqualTo(bytes("target-a"));
        assertThat(target.getSystem(bytes("b1"))).isEqualTo(bytes("source-b1"));
        assertThat(target.getSystem(bytes("c"))).as("in the range, absent from the snapshot").isNull();
        assertThat(target.getSystem(bytes("z"))).isNull();
        assertThat(target.appliedIndex(REGION)).isEqualTo(9);
    }

    @Test
    void when_aLoadBringsNoRegionState_then_theStateRecordedBeforeIsForgotten() throws IOException {
        KvStore store = newStore();
        StoreBatch recorded = new StoreBatch(0);
        recorded.regionMeta(REGION, 7, bytes("state-at-7"));
        store.apply(REGION, 7, recorded);
        assertThat(store.regionState(REGION)).isEqualTo(bytes("state-at-7"));
        Path empty = newSnapshotDir();
        newStore().writeSnapshot(KeyRange.ALL, empty);

        store.loadSnapshot(REGION, 9, KeyRange.ALL, empty, bytes("state-at-9"));
        assertThat(store.regionState(REGION)).isEqualTo(bytes("state-at-9"));
        store.loadSnapshot(REGION, 0, KeyRange.ALL, empty); // the range cleared, as for a replica dropped here

        assertThat(store.regionState(REGION)).as("a state that went with the replaced data").isNull();
        assertThat(store.appliedIndex(REGION)).isZero();
    }

    /** Writes key -> "v:" + key for each key, one batch per key. */
    private void putAll(KvStore store, String... keys) {
        for (String key : keys) {
            put(store, REGION, 1, key, "v:" + key);
        }
    }

    private void put(KvStore store, long index, String key, String value) {
        put(store, REGION, index, key, value);
    }

    private void put(KvStore store, int regionId, long index, String key, String value) {
        StoreBatch batch = new StoreBatch(1);
        batch.put(remember(bytes(key)), bytes(value));
        store.apply(regionId, index, batch);
    }

    private void delete(KvStore store, long index, String key) {
        StoreBatch batch = new StoreBatch(1);
        batch.delete(remember(bytes(key)));
        store.apply(REGION, index, batch);
    }

    /** Writes a key given in hex, with the value "v:" + hex. */
    private void putRaw(KvStore store, String hexKey) {
        StoreBatch batch = new StoreBatch(1);
        batch.put(remember(HexFormat.of().parseHex(hexKey)), bytes("v:" + hexKey));
        store.apply(REGION, 1, batch);
    }

    private byte[] remember(byte[] key) {
        writtenKeys.add(key);
        return key;
    }

    /**
     * Every pair of the store as hex key -> value, in key order. The interface has no scan, so it reads
     * back every key this test ever wrote and checks the store's count to prove there is nothing else.
     */
    private Map<String, String> dump(KvStore store) {
        Map<String, String> contents = new LinkedHashMap<>();
        for (byte[] key : writtenKeys) {
            byte[] value = store.get(key);
            if (value != null) {
                contents.put(HexFormat.of().formatHex(key), new String(value, StandardCharsets.UTF_8));
            }
        }
        assertThat(store.approximateCount(KeyRange.ALL)).as("keys in store").isEqualTo(contents.size());
        return contents;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String hex(String s) {
        return HexFormat.of().formatHex(bytes(s));
    }

    private static KeyRange range(String startHex, String endHex) {
        return new KeyRange(HexFormat.of().parseHex(startHex), HexFormat.of().parseHex(endHex));
    }
}
