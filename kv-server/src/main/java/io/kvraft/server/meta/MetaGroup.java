package io.kvraft.server.meta;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.RaftGroupService;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.core.NodeImpl;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.Task;
import com.alipay.sofa.jraft.option.NodeOptions;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.host.RaftOptionsFactory;
import io.kvraft.server.host.Uninterruptible;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * This node's replica of the cluster map's Raft group ({@value #GROUP_ID}): a voter on the nodes that hold the map (the
 * first three of {@code cluster.peers} when the cluster starts; the map's leader moves them off nodes that drain or are
 * down), a learner everywhere else, so that every node has the map. Its log is jraft's own (a small RocksDB under
 * {@code raft/kv-meta}), apart from the regions' shared log: the map changes seldom.
 */
public final class MetaGroup implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MetaGroup.class);
    public static final String GROUP_ID = "kv-meta";
    static final String DIR = "kv-meta";

    private final MetaStateMachine fsm;
    private final RaftGroupService service;
    private final int electionTimeoutMs;
    private volatile Node node;

    /**
     * @param onChange       called with the map after every change, on the group's apply thread (keep it short)
     * @param onLeaderChange called when this replica becomes or stops being the leader, or follows a new one
     * @param storageFailed  called when jraft stopped the group for its storage (log, snapshot or Raft meta)
     */
    public MetaGroup(ServerConfig config, RpcServer rpcServer, Consumer<ClusterMap> onChange, Runnable onLeaderChange,
                     Consumer<String> storageFailed) {
        Path dir = Path.of(config.dataDir(), "raft", DIR);
        try {
            DurableFiles.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir, e);
        }
        this.fsm = new MetaStateMachine(onChange, onLeaderChange, storageFailed);
        List<PeerId> voters = config.cluster().metaVoters().stream().map(PeerId::parsePeer).toList();
        PeerId self = PeerId.parsePeer(config.endpoint());
        // a node not among the first voters starts with no configuration: it never campaigns, and becomes a learner
        // (then perhaps a voter) when the map's leader adds it
        NodeOptions options = RaftOptionsFactory.nodeOptions(config, voters.contains(self) ? voters : List.of(), dir, 0,
                null);
        if (!voters.contains(self)) {
            options.setInitialConf(new Configuration());
        }
        options.setFsm(fsm);
        // the map's log fsynced whatever raft.sync says: a map that lost its entries in a power cut of every node
        // was made anew, with a new cluster id that refused every node; it takes a few entries an hour
        options.getRaftOptions().setSync(true);
        options.setSnapshotIntervalSecs(3600); // a few hundred bytes of state; the log grows by a few entries an hour
        this.electionTimeoutMs = config.raft().electionTimeoutMs();
        this.service = new RaftGroupService(GROUP_ID, self, options, rpcServer, true);
    }

    public void start() {
        node = service.start(false);
        if (node == null) {
            throw new IllegalStateException("the cluster map's Raft group failed to start (see the log above)");
        }
    }

    /** The map as this replica has applied it (a follower's or learner's may lag by a moment). */
    public ClusterMap map() {
        return fsm.map();
    }

    public boolean isLeader() {
        Node n = node;
        return n != null && n.isLeader() && fsm.isLeader();
    }

    /** The map's leader as this replica knows it, host:port, or empty. */
    public String leaderHint() {
        Node n = node;
        PeerId leader = n == null ? null : n.getLeaderId();
        return leader == null || leader.isEmpty() ? "" : leader.getEndpoint().toString();
    }

    public Node node() {
        return node;
    }

    /** The voters of the map's group in this replica's configuration (on any replica, not only the leader). */
    public List<String> voters() {
        Configuration conf = currentConf();
        return conf == null ? List.of() : conf.getPeers().stream().map(p -> p.getEndpoint().toString()).toList();
    }

    /** The learners of the map's group in this replica's configuration. */
    public List<String> learners() {
        Configuration conf = currentConf();
        return conf == null ? List.of() : conf.getLearners().stream().map(p -> p.getEndpoint().toString()).toList();
    }

    /** jraft's Node lists peers on the leader only; its NodeImpl gives any replica's current configuration. */
    private Configuration currentConf() {
        Node n = node;
        if (n instanceof NodeImpl impl) {
            return impl.getCurrentConf();
        }
        return n == null || !n.isLeader() ? null : new Configuration(n.listPeers(), n.listLearners());
    }

    /** Once this replica has seen a leader, the configured (longer) election timeout keeps the group quiet. */
    void leaderSeen() {
        Node n = node;
        if (n != null && n.getOptions().getElectionTimeoutMs() != electionTimeoutMs) {
            n.resetElectionTimeoutMs(electionTimeoutMs);
        }
    }

    /**
     * The error a node that does not lead the map answers with: the leader this replica knows, or, knowing none, how one
     * comes back.
     */
    Error notLeader(String self) {
        String hint = leaderHint();
        return Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                "node " + self + " does not lead the cluster map" + (hint.isEmpty() ? " and knows no leader"
                        + " (one is elected within seconds while a majority of the map's voters " + voters()
                        + " is up; if that majority is lost for good, see kv-client recover-map)" : "; " + hint + " does"));
    }

    /** Proposes {@code cmd} on this node (the leader); completes with the map once applied here, or fails. */
    public CompletableFuture<ClusterMap> propose(MetaCommand cmd) {
        CompletableFuture<ClusterMap> f = new CompletableFuture<>();
        Node n = node;
        if (n == null || !n.isLeader()) {
            f.completeExceptionally(new IllegalStateException("this node does not lead the cluster map"));
            return f;
        }
        Task task = new Task();
        task.setData(ByteBuffer.wrap(cmd.toByteArray()));
        task.setDone(st -> {
            if (st.isOk()) {
                f.complete(fsm.map());
            } else {
                f.completeExceptionally(new IllegalStateException("cluster map change failed: " + st.getErrorMsg()));
            }
        });
        n.apply(task);
        return f;
    }

    /** Runs one of jraft's configuration calls and completes with its status. */
    static CompletableFuture<Status> confChange(Consumer<com.alipay.sofa.jraft.Closure> call) {
        CompletableFuture<Status> f = new CompletableFuture<>();
        call.accept(f::complete);
        return f;
    }

    @Override
    public void close() {
        service.shutdown();
        // also on an interrupted thread: its log is a RocksDB, and a process that exits with it still open can crash
        Uninterruptible.run(service::join);
        LOG.info("cluster map group stopped");
    }
}
