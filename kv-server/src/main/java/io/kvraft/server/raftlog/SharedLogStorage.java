package io.kvraft.server.raftlog;

import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.conf.ConfigurationEntry;
import com.alipay.sofa.jraft.conf.ConfigurationManager;
import com.alipay.sofa.jraft.entity.EnumOutter.EntryType;
import com.alipay.sofa.jraft.entity.LogEntry;
import com.alipay.sofa.jraft.entity.LogId;
import com.alipay.sofa.jraft.entity.codec.LogEntryDecoder;
import com.alipay.sofa.jraft.entity.codec.LogEntryEncoder;
import com.alipay.sofa.jraft.option.LogStorageOptions;
import com.alipay.sofa.jraft.storage.LogStorage;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * One region group's view of the node's {@link SharedRaftLog}: jraft's {@link LogStorage} contract
 * (the same one its RocksDBLogStorage keeps) over the group's key range.
 *
 * <p>jraft calls the mutators from the group's single log thread and the readers from any thread;
 * first and last index are kept in memory (volatile) so readers never scan.
 *
 * <p>The last {@value #RECENT} entries appended are kept in memory too: once jraft has applied an entry it drops it
 * from its own memory, and then asks for it again on every AppendEntries it sends or takes and every read-index round,
 * only for its term (jraft's {@code LogManagerImpl.getTerm} reads the whole entry from here): a RocksDB read and a
 * decode each time otherwise.
 */
public final class SharedLogStorage implements LogStorage {

    private static final Logger LOG = LoggerFactory.getLogger(SharedLogStorage.class);

    /** How many of the last appended entries are kept in memory (a power of two). */
    static final int RECENT = 4;
    /** An entry with more data than this is not kept: the ring holds small, frequent entries only. */
    static final int RECENT_MAX_DATA_BYTES = 64 * 1024;

    private final SharedRaftLog log;
    private final int group;
    /** The last entries appended, at {@code index & (RECENT - 1)}; written by the log thread only. */
    private final AtomicReferenceArray<LogEntry> recent = new AtomicReferenceArray<>(RECENT);
    private LogEntryEncoder encoder;
    private LogEntryDecoder decoder;
    /** First index kept; 1 for a group that never truncated. */
    private volatile long firstIndex = 1;
    /** Last stored index, 0 when the group has no entries (jraft's convention). */
    private volatile long lastIndex;

    public SharedLogStorage(SharedRaftLog log, int group) {
        this.log = log;
        this.group = group;
    }

    @Override
    public boolean init(LogStorageOptions opts) {
        encoder = opts.getLogEntryCodecFactory().encoder();
        decoder = opts.getLogEntryCodecFactory().decoder();
        try {
            loadConfigurations(opts.getConfigurationManager());
            long saved = log.savedFirstIndex(group);
            long storedFirst = log.firstStoredIndex(group);
            firstIndex = saved > 0 ? saved : storedFirst > 0 ? storedFirst : 1;
            long storedLast = log.lastStoredIndex(group);
            lastIndex = Math.max(storedLast, 0);
            if (saved > 0 && storedFirst > 0 && storedFirst < saved) {
                // a prefix truncation recorded its new first index but the deletion did not finish
                truncatePrefix(saved);
            }
            return true;
        } catch (RocksDBException | RuntimeException e) {
            LOG.error("group {}: cannot load its Raft log from {}: {}", group, log.dir(), e.toString());
            return false;
        }
    }

    private void loadConfigurations(ConfigurationManager confManager) {
        if (confManager == null) {
            return;
        }
        log.forEachConf(group, bytes -> {
            LogEntry entry = decoder.decode(bytes);
            if (entry == null) {
                throw new IllegalStateException("undecodable configuration entry in group " + group);
            }
            ConfigurationEntry confEntry = new ConfigurationEntry();
            confEntry.setId(new LogId(entry.getId().getIndex(), entry.getId().getTerm()));
            confEntry.setConf(new Configuration(entry.getPeers(), entry.getLearners()));
            if (entry.getOldPeers() != null) {
                confEntry.setOldConf(new Configuration(entry.getOldPeers(), entry.getOldLearners()));
            }
            confManager.add(confEntry);
        });
    }

    @Override
    public void shutdown() {
        // the shared log is closed by its owner, after every group has stopped
    }

    @Override
    public long getFirstLogIndex() {
        return firstIndex;
    }

    @Override
    public long getLastLogIndex() {
        return lastIndex;
    }

    @Override
    public LogEntry getEntry(long index) {
        if (index < firstIndex || index > lastIndex) {
            return null;
        }
        LogEntry kept = recent.get(slot(index));
        if (kept != null && kept.getId().getIndex() == index) {
            return kept;
        }
        try {
            byte[] bytes = log.get(group, index);
            if (bytes == null) {
                return null;
            }
            LogEntry entry = decoder.decode(bytes);
            if (entry == null) {
                LOG.error("group {}: undecodable log entry at index {}", group, index);
            }
            return entry;
        } catch (RocksDBException e) {
            LOG.error("group {}: cannot read log entry {}: {}", group, index, e.getMessage());
            return null;
        }
    }

    @Override
    @Deprecated
    public long getTerm(long index) {
        LogEntry entry = getEntry(index);
        return entry == null ? 0 : entry.getId().getTerm();
    }

    @Override
    public boolean appendEntry(LogEntry entry) {
        return appendEntries(List.of(entry)) == 1;
    }

    @Override
    public int appendEntries(List<LogEntry> entries) {
        if (entries == null || entries.isEmpty()) {
            return 0;
        }
        try {
            log.write(batch -> {
                for (LogEntry entry : entries) {
                    put(batch, entry);
                }
            });
        } catch (RocksDBException e) {
            LOG.error("group {}: cannot append {} log entries: {}", group, entries.size(), e.getMessage());
            return 0;
        }
        for (LogEntry entry : entries) {
            ByteBuffer data = entry.getData();
            recent.set(slot(entry.getId().getIndex()),
                    data == null || data.remaining() <= RECENT_MAX_DATA_BYTES ? entry : null);
        }
        LogEntry last = entries.get(entries.size() - 1);
        lastIndex = Math.max(lastIndex, last.getId().getIndex());
        if (firstIndex > last.getId().getIndex()) {
            firstIndex = entries.get(0).getId().getIndex(); // the first append after a reset or into an empty log
        }
        return entries.size();
    }

    private static int slot(long index) {
        return (int) (index & (RECENT - 1));
    }

    /** Forgets the kept entries with an index in [from, to]. */
    private void forgetRecent(long from, long to) {
        for (int i = 0; i < RECENT; i++) {
            LogEntry kept = recent.get(i);
            if (kept != null && kept.getId().getIndex() >= from && kept.getId().getIndex() <= to) {
                recent.compareAndSet(i, kept, null);
            }
        }
    }

    /** Adds {@code entry} to the batch; configuration entries also go to the conf family, read back at start. */
    private void put(WriteBatch batch, LogEntry entry) throws RocksDBException {
        byte[] key = SharedRaftLog.key(group, entry.getId().getIndex());
        byte[] value = encoder.encode(entry);
        batch.put(log.logFamily(), key, value);
        if (entry.getType() == EntryType.ENTRY_TYPE_CONFIGURATION) {
            batch.put(log.confFamily(), key, value);
        }
    }

    @Override
    public boolean truncatePrefix(long firstIndexKept) {
        long from = firstIndex;
        forgetRecent(Long.MIN_VALUE, firstIndexKept - 1);
        try {
            log.write(batch -> {
                log.putFirstIndex(batch, group, firstIndexKept);
                log.deleteRange(batch, group, Math.min(from, firstIndexKept), firstIndexKept);
            });
        } catch (RocksDBException e) {
            LOG.error("group {}: cannot truncate its log before {}: {}", group, firstIndexKept, e.getMessage());
            return false;
        }
        firstIndex = firstIndexKept;
        if (lastIndex < firstIndexKept) {
            lastIndex = 0; // nothing left, as jraft's own storage reports it
        }
        return true;
    }

    @Override
    public boolean truncateSuffix(long lastIndexKept) {
        forgetRecent(lastIndexKept + 1, Long.MAX_VALUE); // before the deletion: a reader must not find them after it
        long last = lastIndex;
        try {
            log.write(batch -> log.deleteRange(batch, group, lastIndexKept + 1, Math.max(last, lastIndexKept) + 1));
        } catch (RocksDBException e) {
            LOG.error("group {}: cannot truncate its log after {}: {}", group, lastIndexKept, e.getMessage());
            return false;
        }
        long stored = log.lastStoredIndex(group);
        lastIndex = Math.max(stored, 0);
        return true;
    }

    @Override
    public boolean reset(long nextLogIndex) {
        if (nextLogIndex <= 0) {
            throw new IllegalArgumentException("Invalid next log index " + nextLogIndex);
        }
        LogEntry entry = getEntry(nextLogIndex);
        if (entry == null) {
            entry = new LogEntry();
            entry.setType(EntryType.ENTRY_TYPE_NO_OP);
            entry.setId(new LogId(nextLogIndex, 0));
        }
        forgetRecent(Long.MIN_VALUE, Long.MAX_VALUE);
        LogEntry first = entry;
        try {
            log.write(batch -> {
                log.deleteRange(batch, group, 0, Long.MAX_VALUE);
                log.putFirstIndex(batch, group, nextLogIndex);
                put(batch, first);
            });
        } catch (RocksDBException e) {
            LOG.error("group {}: cannot reset its log to {}: {}", group, nextLogIndex, e.getMessage());
            return false;
        }
        firstIndex = nextLogIndex;
        lastIndex = nextLogIndex;
        return true;
    }
}
