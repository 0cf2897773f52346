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
    private static final String SNAPSHOT_DIR = "kv";

    private final Region region;
    private final KvStore store;
    private volatile long term;
    private volatile long appliedIndex;
    /** Entries up to this index are already in a persistent store and are skipped on replay. */
    private final long persistedIndex;

    RegionStateMachine(Region region, KvStore store) {
        this.region = region;
        this.store = store;
        this.persistedIndex = store.appliedIndex(region.id());
        this.appliedIndex = persistedIndex;
    }

    long term() {
        return term;
    }

    long appliedIndex() {
        return appliedIndex;
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
            if (index > persistedIndex) {
                store.apply(region.id(), index, toStoreBatch(batch, results));
            }
            appliedIndex = index;
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
            LOG.info("region {}: snapshot saved at index {}", region.id(), appliedIndex);
            done.run(Status.OK());
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot save failed: {}", region.id(), e.toString());
            done.run(new Status(RaftError.EIO, "snapshot save failed: %s", e.getMessage()));
        }
    }

    @Override
    public boolean onSnapshotLoad(SnapshotReader reader) {
        long index = reader.load().getLastIncludedIndex();
        if (index <= persistedIndex && appliedIndex == persistedIndex) {
            // the persistent store already holds this state or a later one; loading would only go back
            LOG.info("region {}: store is at index {}, snapshot at {} not loaded", region.id(), persistedIndex, index);
            return true;
        }
        try {
            store.loadSnapshot(region.id(), index, region.range(), Path.of(reader.getPath(), SNAPSHOT_DIR));
            appliedIndex = index;
            LOG.info("region {}: snapshot loaded at index {}", region.id(), index);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.error("region {}: snapshot at index {} refused: {}", region.id(), index, e.getMessage());
            return false;
        }
    }

    @Override
    public void onLeaderStart(long term) {
        this.term = term;
        region.onLeadershipChange();
    }

    @Override
    public void onLeaderStop(Status status) {
        region.onLeadershipChange();
    }

    @Override
    public void onStartFollowing(LeaderChangeContext ctx) {
        this.term = ctx.getTerm();
        region.onLeadershipChange();
    }

    @Override
    public void onError(RaftException e) {
        LOG.error("region {}: state machine stopped: {}", region.id(), e.getStatus());
    }
}
