package io.kvraft.server.meta;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.Iterator;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.StateMachineAdapter;
import com.alipay.sofa.jraft.entity.EnumOutter;
import com.alipay.sofa.jraft.error.RaftException;
import com.alipay.sofa.jraft.error.RaftError;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotReader;
import com.alipay.sofa.jraft.storage.snapshot.SnapshotWriter;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * The cluster map's state machine: the map is small (one record per node and per region), so it is kept whole in memory and a
 * snapshot is its protobuf bytes in one file. Every replica (voter or learner) applies the same commands in log order;
 * the checks that can refuse a command run on the leader before it proposes one, so applying never fails.
 */
final class MetaStateMachine extends StateMachineAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(MetaStateMachine.class);
    static final String SNAPSHOT_FILE = "cluster-map.pb";

    private volatile ClusterMap map = ClusterMap.getDefaultInstance();
    private volatile long leaderTerm = -1;
    private final Consumer<ClusterMap> onChange;
    private final Runnable onLeaderChange;
    private final Consumer<String> storageFailed;

    MetaStateMachine(Consumer<ClusterMap> onChange, Runnable onLeaderChange, Consumer<String> storageFailed) {
        this.onChange = onChange;
        this.onLeaderChange = onLeaderChange;
        this.storageFailed = storageFailed;
    }

    ClusterMap map() {
        return map;
    }

    boolean isLeader() {
        return leaderTerm > 0;
    }

    @Override
    public void onApply(Iterator iter) {
        while (iter.hasNext()) {
            Closure done = iter.done();
            try {
                MetaCommand cmd = MetaCommand.parseFrom(iter.getData());
                map = apply(map, cmd, iter.getIndex());
                onChange.accept(map);
                if (done != null) {
                    done.run(Status.OK());
                }
            } catch (InvalidProtocolBufferException e) {
                // a command this version cannot read: skipping it would let replicas differ; stop the group instead
                iter.setErrorAndRollback(1, new Status(RaftError.EINVAL, "cluster map entry %d unreadable: %s",
                        iter.getIndex(), e.getMessage()));
                return;
            }
            iter.next();
        }
    }

    /** The map after {@code cmd}; a pure function of the two, so every replica reaches the same map. */
    static ClusterMap apply(ClusterMap map, MetaCommand cmd, long index) {
        switch (cmd.getOpCase()) {
            case INIT -> {
                if (!map.getClusterId().isEmpty()) {
                    return map; // two first leaders each proposed one: the first applied wins
                }
                return cmd.getInit().toBuilder().setVersion(1).build();
            }
            case JOIN, SET_STATE -> {
                NodeRecord rec = cmd.getOpCase() == MetaCommand.OpCase.JOIN ? cmd.getJoin() : cmd.getSetState();
                ClusterMap.Builder b = map.toBuilder().setVersion(map.getVersion() + 1);
                int i = indexOf(b, rec.getEndpoint());
                if (i >= 0) {
                    NodeRecord.Builder nb = b.getNodes(i).toBuilder().setState(rec.getState())
                            .setSinceMs(rec.getSinceMs());
                    if (cmd.getOpCase() == MetaCommand.OpCase.JOIN) {
                        nb.setNodeId(rec.getNodeId());
                    }
                    return b.setNodes(i, nb).build();
                }
                if (cmd.getOpCase() == MetaCommand.OpCase.SET_STATE) {
                    return map; // checked on the leader: not reached
                }
                return b.addNodes(rec).build();
            }
            case SET_DOWN -> {
                NodeRecord rec = cmd.getSetDown();
                ClusterMap.Builder b = map.toBuilder();
                int i = indexOf(b, rec.getEndpoint());
                if (i < 0 || b.getNodes(i).getDownSinceMs() == rec.getDownSinceMs()) {
                    return map; // a node the map does not know, or one already recorded so: nothing to record
                }
                return b.setNodes(i, b.getNodes(i).toBuilder().setDownSinceMs(rec.getDownSinceMs()))
                        .setVersion(map.getVersion() + 1).build();
            }
            case REGIONS -> {
                if (map.getRegionsList().equals(cmd.getRegions().getRegionsList())) {
                    return map; // two proposals of one change
                }
                return map.toBuilder().setVersion(map.getVersion() + 1).clearRegions()
                        .addAllRegions(cmd.getRegions().getRegionsList()).build();
            }
            default -> {
                LOG.warn("cluster map entry {} has no command this version knows ({}); skipped", index, cmd.getOpCase());
                return map;
            }
        }
    }

    /** The position of the node at {@code endpoint} in {@code b}'s node list, or -1. */
    private static int indexOf(ClusterMap.Builder b, String endpoint) {
        for (int i = 0; i < b.getNodesCount(); i++) {
            if (b.getNodes(i).getEndpoint().equals(endpoint)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public void onSnapshotSave(SnapshotWriter writer, Closure done) {
        try {
            Files.write(Path.of(writer.getPath(), SNAPSHOT_FILE), map.toByteArray());
            done.run(writer.addFile(SNAPSHOT_FILE) ? Status.OK()
                    : new Status(RaftError.EIO, "cannot add %s to the cluster map's snapshot", SNAPSHOT_FILE));
        } catch (IOException e) {
            done.run(new Status(RaftError.EIO, "cannot write the cluster map's snapshot: %s", e.getMessage()));
        }
    }

    @Override
    public boolean onSnapshotLoad(SnapshotReader reader) {
        try {
            map = ClusterMap.parseFrom(Files.readAllBytes(Path.of(reader.getPath(), SNAPSHOT_FILE)));
            onChange.accept(map);
            return true;
        } catch (IOException e) {
            LOG.error("cluster map snapshot in {} unreadable: {}", reader.getPath(), e.toString());
            return false;
        }
    }

    @Override
    public void onLeaderStart(long term) {
        leaderTerm = term;
        LOG.info("cluster map: leader now, term {}", term);
        onLeaderChange.run();
    }

    @Override
    public void onLeaderStop(Status status) {
        leaderTerm = -1;
        LOG.info("cluster map: no longer leader: {}", status.getErrorMsg());
        onLeaderChange.run();
    }

    @Override
    public void onStartFollowing(com.alipay.sofa.jraft.entity.LeaderChangeContext ctx) {
        onLeaderChange.run();
    }

    /**
     * jraft stopped the group. For its storage (a log, snapshot or Raft meta write or sync that failed) the node must
     * stop: what that log said it wrote may be lost. An entry that cannot be applied fails alike on every replica.
     */
    @Override
    public void onError(RaftException e) {
        LOG.error("cluster map: state machine stopped: {} ({})", e.getStatus(), e.getType());
        if (e.getType() != EnumOutter.ErrorType.ERROR_TYPE_STATE_MACHINE) {
            storageFailed.accept(e.getType() + ": " + e.getStatus());
        }
    }
}
