package io.kvraft.server.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class DiskGuardTest {

    private static final long MIB = 1 << 20;
    private final AtomicLong free = new AtomicLong();

    @Test
    void when_theRoomLeftFallsUnderTheLimit_then_writesAreRefusedUntilAQuarterMoreIsFree() {
        DiskGuard guard = new DiskGuard(Path.of("/data"), 100 * MIB, free::get);
        free.set(100 * MIB);
        guard.check();
        assertThat(guard.full()).as("at the limit, not under it").isFalse();

        free.set(100 * MIB - 1);
        guard.check();
        assertThat(guard.full()).isTrue();
        assertThat(guard.why()).isEqualTo("disk: 99 MiB free in /data (store.minFreeDiskBytes 100 MiB; taken again at 125 MiB)");

        free.set(124 * MIB); // over the limit, but not by a quarter
        guard.check();
        assertThat(guard.full()).isTrue();

        free.set(125 * MIB);
        guard.check();
        assertThat(guard.full()).isFalse();
        assertThat(guard.freeBytes()).isEqualTo(125 * MIB);
    }

    @Test
    void when_theRaftLogHasTables_then_theirSizeIsKeptFreeOnTopOfTheSetting() {
        DiskGuard guard = new DiskGuard(Path.of("/data"), 100 * MIB, free::get);
        AtomicLong tables = new AtomicLong(40 * MIB);
        guard.reserveForCompaction(tables::get);
        free.set(139 * MIB); // over the setting, under the setting and what a compaction of the log may write
        guard.check();
        assertThat(guard.full()).isTrue();
        assertThat(guard.limit()).isEqualTo(140 * MIB);
        assertThat(guard.why()).isEqualTo("disk: 139 MiB free in /data (store.minFreeDiskBytes 100 MiB"
                + " + 40 MiB for compactions; taken again at 165 MiB)");

        tables.set(10 * MIB); // a compaction dropped what the truncated log no longer holds
        free.set(134 * MIB);
        guard.check();
        assertThat(guard.full()).as("taken again at 100 + 10 + 25 MiB").isTrue();
        free.set(135 * MIB);
        guard.check();
        assertThat(guard.full()).isFalse();

        tables.set(-1); // RocksDB could not tell: no reserve below zero
        free.set(99 * MIB);
        guard.check();
        assertThat(guard.limit()).isEqualTo(100 * MIB);
        assertThat(guard.full()).isTrue();
    }

    @Test
    void when_theRoomCannotBeRead_then_theLastReadingStands() {
        boolean[] failing = {false};
        DiskGuard guard = new DiskGuard(Path.of("/data"), 100 * MIB, () -> {
            if (failing[0]) {
                throw new IOException("Input/output error");
            }
            return free.get();
        });
        free.set(MIB);
        guard.check();
        assertThat(guard.full()).isTrue();
        failing[0] = true;
        free.set(1000 * MIB);
        guard.check();
        assertThat(guard.full()).isTrue();
        assertThat(guard.freeBytes()).isEqualTo(MIB);
        failing[0] = false;
        guard.check();
        assertThat(guard.full()).isFalse();
    }

    @Test
    void when_theLimitIsZero_then_nothingIsRefusedButTheRoomIsStillRead() {
        DiskGuard guard = new DiskGuard(Path.of("/data"), 0, free::get);
        free.set(0);
        guard.check();
        assertThat(guard.full()).isFalse();
        assertThat(guard.freeBytes()).isZero();
    }

    @Test
    void when_readFromARealDirectory_then_itsFileSystemsRoomIsReported(@TempDir Path dir) throws IOException {
        DiskGuard guard = DiskGuard.of(dir, 1);
        assertThat(guard.freeBytes()).as("before the first check").isEqualTo(-1);
        guard.check();
        assertThat(guard.freeBytes()).isCloseTo(dir.toFile().getUsableSpace(), org.assertj.core.data.Offset.offset(64 * MIB));
        assertThat(guard.full()).isFalse();
    }
}
