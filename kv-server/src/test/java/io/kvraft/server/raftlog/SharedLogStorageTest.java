package io.kvraft.server.raftlog;

import com.alipay.sofa.jraft.conf.ConfigurationManager;
import com.alipay.sofa.jraft.entity.EnumOutter.EntryType;
import com.alipay.sofa.jraft.entity.LogEntry;
import com.alipay.sofa.jraft.entity.LogId;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.codec.v2.LogEntryV2CodecFactory;
import com.alipay.sofa.jraft.option.LogStorageOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** jraft's LogStorage contract, as its RocksDBLogStorage keeps it, over one group's range of the shared log. */
class SharedLogStorageTest {

    @TempDir
    Path dir;

    private static LogEntry data(long index, long term) {
        return data("v" + index, index, term);
    }

    private static LogEntry data(String payload, long index, long term) {
        LogEntry e = new LogEntry(EntryType.ENTRY_TYPE_DATA);
        e.setId(new LogId(index, term));
        e.setData(ByteBuffer.wrap(payload.getBytes(StandardCharsets.UTF_8)));
        return e;
    }

    /** Entries whose payloads name their group, so reading another group's entry shows. */
    private static List<LogEntry> groupRange(int group, long from, long to, long term) {
        List<LogEntry> list = new ArrayList<>();
        for (long i = from; i <= to; i++) {
            list.add(data(payload(group, i), i, term));
        }
        return list;
    }

    private static String payload(int group, long index) {
        return "group" + group + "-v" + index;
    }

    /** Every entry of {@code s} from 1 to {@code last}: its own group's payload and term. */
    private static void assertOwnEntries(SharedLogStorage s, int group, long last, long term) {
        assertThat(s.getLastLogIndex()).isEqualTo(last);
        for (long i = 1; i <= last; i++) {
            assertThat(dataOf(s.getEntry(i))).as("group %d entry %d", group, i).isEqualTo(payload(group, i));
            assertThat(s.getTerm(i)).as("group %d term at %d", group, i).isEqualTo(term);
        }
        assertThat(s.getEntry(last + 1)).as("group %d past its end", group).isNull();
    }

    private static LogEntry conf(long index, long term) {
        LogEntry e = new LogEntry(EntryType.ENTRY_TYPE_CONFIGURATION);
        e.setId(new LogId(index, term));
        e.setPeers(List.of(PeerId.parsePeer("127.0.0.1:1"), PeerId.parsePeer("127.0.0.1:2")));
        return e;
    }

    private static List<LogEntry> range(long from, long to, long term) {
        List<LogEntry> list = new ArrayList<>();
        for (long i = from; i <= to; i++) {
            list.add(data(i, term));
        }
        return list;
    }

    private static SharedLogStorage open(SharedRaftLog log, int group, ConfigurationManager confs) {
        SharedLogStorage s = new SharedLogStorage(log, group);
        LogStorageOptions o = new LogStorageOptions();
        o.setGroupId("region-" + group);
        o.setConfigurationManager(confs);
        o.setLogEntryCodecFactory(LogEntryV2CodecFactory.getInstance());
        assertThat(s.init(o)).isTrue();
        return s;
    }

    private static String dataOf(LogEntry e) {
        return StandardCharsets.UTF_8.decode(e.getData().duplicate()).toString();
    }

    @Test
    void when_empty_then_firstIsOneAndLastIsZero() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 1, new ConfigurationManager());
            assertThat(s.getFirstLogIndex()).isEqualTo(1);
            assertThat(s.getLastLogIndex()).isZero();
            assertThat(s.getEntry(1)).isNull();
            assertThat(s.getTerm(1)).isZero();
        }
    }

    @Test
    void when_entriesAreAppended_then_theyReadBackAndSurviveAReopen() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 1, new ConfigurationManager());
            assertThat(s.appendEntry(conf(1, 1))).isTrue();
            assertThat(s.appendEntries(range(2, 10, 2))).isEqualTo(9);
            assertThat(s.getLastLogIndex()).isEqualTo(10);
            assertThat(dataOf(s.getEntry(5))).isEqualTo("v5");
            assertThat(s.getTerm(10)).isEqualTo(2);
            assertThat(s.getTerm(1)).isEqualTo(1);
            assertThat(s.getEntry(11)).isNull();
            assertThat(log.tableBytes()).as("all in the memtable still").isZero();
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            assertThat(log.tableBytes()).as("the entries replayed from the WAL are flushed at open").isPositive();
            ConfigurationManager confs = new ConfigurationManager();
            SharedLogStorage s = open(log, 1, confs);
            assertThat(s.getFirstLogIndex()).isEqualTo(1);
            assertThat(s.getLastLogIndex()).isEqualTo(10);
            assertThat(s.getTerm(10)).isEqualTo(2);
            assertThat(dataOf(s.getEntry(7))).isEqualTo("v7");
            // configuration entries are handed back to jraft at start
            assertThat(confs.getLastConfiguration().getId()).isEqualTo(new LogId(1, 1));
            assertThat(confs.getLastConfiguration().getConf().getPeers()).hasSize(2);
        }
    }

    @Test
    void when_thePrefixIsTruncated_then_earlierEntriesAreGoneAlsoAfterAReopen() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 3, new ConfigurationManager());
            s.appendEntries(range(1, 10, 1));
            assertThat(s.truncatePrefix(6)).isTrue();
            assertThat(s.getFirstLogIndex()).isEqualTo(6);
            assertThat(s.getEntry(5)).isNull();
            assertThat(dataOf(s.getEntry(6))).isEqualTo("v6");
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 3, new ConfigurationManager());
            assertThat(s.getFirstLogIndex()).isEqualTo(6);
            assertThat(s.getLastLogIndex()).isEqualTo(10);
            assertThat(log.firstStoredIndex(3)).isEqualTo(6);
        }
    }

    @Test
    void when_thePrefixIsTruncatedPastTheEnd_then_theLogIsEmptyAndAppendsContinueThere() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 3, new ConfigurationManager());
            s.appendEntries(range(1, 10, 1));
            s.truncatePrefix(21);
            assertThat(s.getFirstLogIndex()).isEqualTo(21);
            assertThat(s.getLastLogIndex()).isZero();
            s.appendEntries(range(21, 22, 3));
            assertThat(s.getLastLogIndex()).isEqualTo(22);
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 3, new ConfigurationManager());
            assertThat(s.getFirstLogIndex()).isEqualTo(21);
            assertThat(s.getLastLogIndex()).isEqualTo(22);
        }
    }

    @Test
    void when_theSuffixIsTruncated_then_laterEntriesAreGoneAndNewOnesReplaceThem() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 2, new ConfigurationManager());
            s.appendEntries(range(1, 10, 1));
            assertThat(s.truncateSuffix(7)).isTrue();
            assertThat(s.getLastLogIndex()).isEqualTo(7);
            assertThat(s.getEntry(8)).isNull();
            assertThat(s.getTerm(7)).isEqualTo(1);
            s.appendEntries(range(8, 8, 5));
            assertThat(s.getTerm(8)).isEqualTo(5);
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 2, new ConfigurationManager());
            assertThat(s.getLastLogIndex()).isEqualTo(8);
            assertThat(s.getTerm(8)).isEqualTo(5);
        }
    }

    @Test
    void when_entriesWereAppendedLast_then_theyAreReadFromMemoryAndATruncationForgetsThem() throws Exception {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 4, new ConfigurationManager());
            s.appendEntries(range(1, 10, 1));
            // take the group's entries out of RocksDB behind the storage's back: only the kept ones remain readable
            log.write(batch -> log.deleteRange(batch, 4, 1, 11));
            long firstKept = 10 - SharedLogStorage.RECENT + 1;
            for (long i = firstKept; i <= 10; i++) {
                assertThat(dataOf(s.getEntry(i))).as("entry %d", i).isEqualTo("v" + i);
            }
            assertThat(s.getEntry(firstKept - 1)).as("an older entry is read from RocksDB").isNull();

            // a truncated suffix is forgotten, and an entry appended again at its index replaces it
            assertThat(s.truncateSuffix(8)).isTrue();
            s.appendEntries(List.of(data("again", 9, 5)));
            assertThat(s.getEntry(9).getId()).isEqualTo(new LogId(9, 5));
            assertThat(dataOf(s.getEntry(9))).isEqualTo("again");
            assertThat(s.getEntry(10)).isNull();

            // an entry larger than the ring takes is not kept
            String big = "x".repeat(SharedLogStorage.RECENT_MAX_DATA_BYTES + 1);
            s.appendEntries(List.of(data(big, 10, 5)));
            assertThat(dataOf(s.getEntry(10))).isEqualTo(big);
            log.write(batch -> log.deleteRange(batch, 4, 10, 11));
            assertThat(s.getEntry(10)).isNull();
        }
    }

    @Test
    void when_aTableFileHasAFlippedByte_then_theLogRefusesToOpen_namingTheFile() throws IOException {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 1, new ConfigurationManager());
            assertThat(s.appendEntries(range(1, 500, 1))).isEqualTo(500);
        }
        new SharedRaftLog(dir, true).close(); // the entries replayed from the WAL are flushed to a table file at open
        Path table;
        try (Stream<Path> files = Files.list(dir)) {
            table = files.filter(f -> f.toString().endsWith(".sst"))
                    .max(Comparator.comparingLong(f -> f.toFile().length())).orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(table);
        bytes[bytes.length / 2] ^= (byte) 0xFF;
        Files.write(table, bytes);

        assertThatThrownBy(() -> new SharedRaftLog(dir, true))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is damaged")
                .hasMessageContaining(table.getFileName().toString());
    }

    @Test
    void when_aTableFileIsDamagedWhileOpen_then_theReadFailsAndTheLogSaysWhichFile() throws IOException {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 1, new ConfigurationManager());
            assertThat(s.appendEntries(range(1, 500, 1))).isEqualTo(500);
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) { // the reopen flushed the entries to a table file
            SharedLogStorage s = open(log, 1, new ConfigurationManager());
            Path table;
            try (Stream<Path> files = Files.list(dir)) {
                table = files.filter(f -> f.toString().endsWith(".sst"))
                        .max(Comparator.comparingLong(f -> f.toFile().length())).orElseThrow();
            }
            try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(table.toFile(), "rw")) {
                f.seek(f.length() / 2);
                int b = f.read();
                f.seek(f.length() / 2);
                f.write(b ^ 0xFF);
            }
            assertThat(log.readFailure()).isNull();
            long unreadable = java.util.stream.LongStream.rangeClosed(1, 500).filter(i -> s.getEntry(i) == null).count();

            assertThat(unreadable).isPositive();
            assertThat(log.readFailure()).contains("cannot read group 1's entry").contains(table.getFileName().toString());
        }
    }

    @Test
    void when_theLogIsClosed_then_callsFailInsteadOfReachingTheFreedDatabase() {
        SharedRaftLog log = new SharedRaftLog(dir, true);
        SharedLogStorage s = open(log, 3, new ConfigurationManager());
        s.appendEntries(groupRange(3, 1, 5, 1));
        log.close();
        log.close(); // idempotent
        assertThat(log.tableBytes()).isZero();

        // a group that outlived the close (a replica dropped on a worker thread) gets failures, not a SIGSEGV
        assertThat(s.appendEntries(groupRange(3, 6, 6, 1))).isZero();
        assertThat(s.truncatePrefix(3)).isFalse();
        assertThat(s.reset(10)).isFalse();
        assertThatThrownBy(() -> log.dropGroup(3)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> log.hasGroup(3)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> log.get(3, 1)).isInstanceOf(org.rocksdb.RocksDBException.class).hasMessageContaining("closed");

        try (SharedRaftLog again = new SharedRaftLog(dir, true)) {
            assertOwnEntries(open(again, 3, new ConfigurationManager()), 3, 5, 1);
        }
    }

    @Test
    void when_reset_then_onlyTheNextIndexRemains() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 2, new ConfigurationManager());
            s.appendEntries(range(1, 10, 1));
            assertThat(s.reset(50)).isTrue();
            assertThat(s.getFirstLogIndex()).isEqualTo(50);
            assertThat(s.getLastLogIndex()).isEqualTo(50);
            assertThat(s.getEntry(50).getType()).isEqualTo(EntryType.ENTRY_TYPE_NO_OP);
            assertThat(s.getEntry(5)).isNull();
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage s = open(log, 2, new ConfigurationManager());
            assertThat(s.getFirstLogIndex()).isEqualTo(50);
            assertThat(s.getLastLogIndex()).isEqualTo(50);
        }
    }

    @Test
    void when_groupsShareTheLog_then_eachSeesOnlyItsOwnEntriesAndOneCanBeDropped() {
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            SharedLogStorage a = open(log, 1, new ConfigurationManager());
            SharedLogStorage b = open(log, 2, new ConfigurationManager());
            SharedLogStorage c = open(log, 3, new ConfigurationManager());
            // the same indexes in every group, with each group's own payloads and terms
            a.appendEntries(groupRange(1, 1, 5, 11));
            b.appendEntries(groupRange(2, 1, 3, 12));
            c.appendEntries(groupRange(3, 1, 4, 13));
            b.truncateSuffix(1);
            assertOwnEntries(a, 1, 5, 11);
            assertOwnEntries(b, 2, 1, 12);
            assertOwnEntries(c, 3, 4, 13);
            c.truncatePrefix(3);
            assertThat(dataOf(a.getEntry(2))).isEqualTo(payload(1, 2));
            assertThat(dataOf(b.getEntry(1))).isEqualTo(payload(2, 1));
            log.dropGroup(1);
            assertThat(log.hasGroup(1)).isFalse();
            assertThat(log.hasGroup(3)).isTrue();
        }
        try (SharedRaftLog log = new SharedRaftLog(dir, true)) {
            assertThat(open(log, 1, new ConfigurationManager()).getLastLogIndex()).isZero();
            assertOwnEntries(open(log, 2, new ConfigurationManager()), 2, 1, 12);
            SharedLogStorage c = open(log, 3, new ConfigurationManager());
            assertThat(c.getFirstLogIndex()).isEqualTo(3);
            assertThat(c.getEntry(2)).isNull();
            assertThat(dataOf(c.getEntry(3))).isEqualTo(payload(3, 3));
            assertThat(dataOf(c.getEntry(4))).isEqualTo(payload(3, 4));
            assertThat(c.getLastLogIndex()).isEqualTo(4);
        }
    }
}
