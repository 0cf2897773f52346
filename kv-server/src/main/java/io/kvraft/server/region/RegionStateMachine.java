package io.kvraft.server.region;

import com.alipay.sofa.jraft.Iterator;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.entity.LeaderChangeContext;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.error.RaftException;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotReader;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotWriter;
import com.alipay.sofa.jraft.Closure;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.client.proto.KvProto.WriteBatch;
import io.kvraft.client.proto.KvProto.WriteOp;
import io.kvraft.client.proto.KvProto.WriteOpType;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.StoreBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Applies a region's log entries to the node's store: each entry is a batch of writes, applied
 * atomically together with the entry's index. Runs on the region's jraft FSM thread.
 */
final class RegionStateMachine extends StateMachineAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(RegionStateMachine.class);
    /** Our files inside a jraft snapshot directory. */
    static final String SNAPSHOT_DIR = "kv";

    private final Region region;
    private final KvStore store;
    private volatile long term;
    /**
     * The index the store's data for this region corresponds to. A persistent store starts at the index
     * it recorded last (atomically with the data), which may be ahead of what jraft replays: entries up
     * to it are already in the store and are skipped, and a snapshot at or below it is not loaded.
     */
    private volatile long storeIndex;
    /** The last data entry jraft handed us, or the snapshot it loaded: where jraft's replay is. */
    private volatile long raftIndex;

    RegionStateMachine(Region region, KvStore store) {
        this.region = region;
        this.store = store;
        this.storeIndex = store.appliedIndex(region.id());
    }

    long term() {
        return term;
    }

    /** The index the region's data in the store corresponds to. */
    long appliedIndex() {
        return storeIndex;
    }

    @Override
    public void onApply(Iterator iter) {
        while (iter.hasNext()) {
            long index = iter.getIndex();
            Closure done = iter.done();
            BatchClosure closure = done instanceof BatchClosure b ? b : null;
            WriteBatch batch;
            if (closure != null) {
                batch = closure.batch;
            } else {
                try {
                    batch = WriteBatch.parseFrom(iter.getData());
                } catch (InvalidProtocolBufferException e) {
                    // a bad entry must stop the state machine, never be skipped
                    iter.setErrorAndRollback(1, new Status(RaftError.ESTATEMACHINE,
                            "region %d: undecodable log entry at index %d: %s", region.id(), index, e.getMessage()));
                    return;
                }
            }
            boolean[] results = new boolean[batch.getOpsCount()];
            if (index > storeIndex) {
                long start = System.nanoTime();
                store.apply(region.id(), index, toStoreBatch(batch, results));
                region.metrics().applied(start);
                storeIndex = index;
            }
            // else: replay of an entry a persistent store already holds; applying it again could change the
            // outcome of a compare-and-put, so it is skipped. Only entries of an earlier run get here, and they
            // have no closure (closures exist only for entries proposed by this process).
            raftIndex = index;
            if (closure != null) {
                closure.results = results;
                closure.run(Status.OK());
            } else if (done != null) {
                done.run(Status.OK());
            }
            iter.next();
        }
    }

    /** Turns the ops into plain puts and deletes; reads the store only for CAS and delete results. */
    private StoreBatch toStoreBatch(WriteBatch batch, boolean[] results) {
        StoreBatch out = new StoreBatch(batch.getOpsCount());
        Map<String, byte[]> overlay = null; // values written earlier in this batch, for later reads in it
        for (int i = 0; i < batch.getOpsCount(); i++) {
            WriteOp op = batch.getOps(i);
            byte[] key = op.getKey().toByteArray();
            switch (op.getType()) {
                case PUT -> {
                    byte[] value = op.getValue().toByteArray();
                    out.put(key, value);
                    results[i] = true;
                    if (overlay != null) {
                        overlay.put(mapKey(key), value);
                    }
                }
                case DELETE, COMPARE_AND_PUT -> {
                    if (overlay == null) {
                        overlay = overlayOf(out);
                    }
                    String mk = mapKey(key);
                    byte[] current = overlay.containsKey(mk) ? overlay.get(mk) : store.get(key);
                    if (op.getType() == WriteOpType.DELETE) {
                        results[i] = current != null;
                        out.delete(key);
                        overlay.put(mk, null);
                    } else {
                        boolean matches = op.getExpectAbsent() ? current == null
                                : current != null && Arrays.equals(current, op.getExpect().toByteArray());
                        results[i] = matches;
                        if (matches) {
                            byte[] value = op.getValue().toByteArray();
                            out.put(key, value);
                            overlay.put(mk, value);
                        }
                    }
                }
                default -> throw new IllegalStateException("unknown op type " + op.getType());
            }
        }
        return out;
    }

    private static Map<String, byte[]> overlayOf(StoreBatch batch) {
        Map<String, byte[]> overlay = new HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            overlay.put(mapKey(batch.key(i)), batch.value(i));
        }
        return overlay;
    }

    private static String mapKey(byte[] key) {
        return new String(key, java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    @Override
    public void onSnapshotSave(SnapshotWriter writer, Closure done) {
        // jraft labels the snapshot with its own applied index. While it is still replaying entries that the
        // persistent store already holds, the store is ahead of that label: a follower installing such a
        // snapshot would apply those entries a second time on top of it, which is wrong for compare-and-put.
        // Refuse (EBUSY; EIO would stop the group); the next snapshot, after the replay, goes through.
        // (raftIndex counts data entries only, but storeIndex is always a data entry's index or a snapshot's
        // that jraft loaded, so storeIndex > raftIndex exactly while the replay has not reached it.)
        long replayedTo = raftIndex;
        if (storeIndex > replayedTo) {
            LOG.info("region {}: snapshot skipped, the store is at index {} and the log replay at {}",
                    region.id(), storeIndex, replayedTo);
            done.run(new Status(RaftError.EBUSY, "region %d: store at index %d is ahead of the replay at %d",
                    region.id(), storeIndex, replayedTo));
            return;
        }
        Path dir = Path.of(writer.getPath(), SNAPSHOT_DIR);
        try {
            Files.createDirectories(dir);
            store.writeSnapshot(region.range(), dir);
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    if (!writer.addFile(SNAPSHOT_DIR + File.separator + f.getFileName())) {
                        throw new IOException("snapshot writer refused " + f);
                    }
                }
            }
            LOG.info("region {}: snapshot saved, last entry applied {}", region.id(), replayedTo);
            region.metrics().snapshot(replayedTo);
            done.run(Status.OK());
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot save failed: {}", region.id(), e.toString());
            done.run(new Status(RaftError.EIO, "snapshot save failed: %s", e.getMessage()));
        }
    }

    @Override
    public boolean onSnapshotLoad(SnapshotReader reader) {
        long index = reader.load().getLastIncludedIndex();
        // jraft never loads a snapshot below its own applied index (ESTALE), and the store is never behind
        // jraft. So a snapshot at or below storeIndex can only come from a persistent store that is ahead:
        // its data is the state after a later prefix of the same committed log, and the entries between the
        // snapshot and storeIndex are skipped on replay. Loading it would move the store back in time while
        // those entries are still skipped.
        if (index <= storeIndex) {
            LOG.info("region {}: store is at index {}, snapshot at {} not loaded", region.id(), storeIndex, index);
            region.metrics().snapshot(index);
            raftIndex = index;
            return true;
        }
        try {
            store.loadSnapshot(region.id(), index, region.range(), Path.of(reader.getPath(), SNAPSHOT_DIR));
            storeIndex = index;
            raftIndex = index;
            LOG.info("region {}: snapshot loaded at index {}", region.id(), index);
            region.metrics().snapshot(index);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot at index {} refused: {}", region.id(), index, e.getMessage());
            return false;
        }
    }

    @Override
    public void onLeaderStart(long term) {
        this.term = term;
        LOG.info("region {}: leader now, term {}", region.id(), term);
        region.onLeadershipChange();
    }

    @Override
    public void onLeaderStop(Status status) {
        LOG.info("region {}: no longer leader: {}", region.id(), status.getErrorMsg());
        region.onLeadershipChange();
    }

    @Override
    public void onStartFollowing(LeaderChangeContext ctx) {
        this.term = ctx.getTerm();
        LOG.info("region {}: following {}, term {}", region.id(), ctx.getLeaderId().getEndpoint(), ctx.getTerm());
        region.onLeadershipChange();
    }

    @Override
    public void onError(RaftException e) {
        LOG.error("region {}: state machine stopped: {}", region.id(), e.getStatus());
    }
}
