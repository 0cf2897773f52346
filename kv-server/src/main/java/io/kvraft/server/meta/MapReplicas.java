package io.kvraft.server.meta;

import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.server.balance.Placement;
import io.kvraft.server.config.ServerConfig;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * On the map's leader: the map's own replicas. Every node not removed is a learner of the map's group or one of its
 * voters, and three voters stay on live UP nodes ({@link Placement#metaVoters}); one configuration change at a time.
 */
final class MapReplicas {

    private static final Logger LOG = LoggerFactory.getLogger(MapReplicas.class);

    private final ServerConfig config;
    private final MetaGroup group;
    private volatile boolean changing;

    MapReplicas(ServerConfig config, MetaGroup group) {
        this.config = config;
        this.group = group;
    }

    /**
     * Starts the next change of the map's learners or voters, if one is due and none runs.
     *
     * @return false when this node hands its leadership of the map to another voter (its own voter moves)
     */
    boolean adjust(ClusterMap map, Placement.View view) {
        if (changing) {
            return true;
        }
        Node node = group.node();
        List<String> voters = group.voters();
        List<String> learners = group.learners();
        List<PeerId> add = new ArrayList<>();
        List<PeerId> drop = new ArrayList<>();
        Set<String> members = new HashSet<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() != NodeState.REMOVED) {
                members.add(n.getEndpoint());
                if (!voters.contains(n.getEndpoint()) && !learners.contains(n.getEndpoint())) {
                    add.add(PeerId.parsePeer(n.getEndpoint()));
                }
            }
        }
        for (String l : learners) {
            if (!members.contains(l)) {
                drop.add(PeerId.parsePeer(l));
            }
        }
        if (!add.isEmpty() || !drop.isEmpty()) {
            changeLearners(node, add, drop);
            return true;
        }
        Optional<Placement.MetaChange> change = Placement.metaVoters(map, voters, view.live(), view.down());
        if (change.isEmpty()) {
            return true;
        }
        Placement.MetaChange c = change.get();
        if (config.endpoint().equals(c.remove())) {
            // this node leaves the voters: another one leads the change
            for (String v : voters) {
                if (!v.equals(config.endpoint()) && view.live().contains(v)) {
                    Status st = node.transferLeadershipTo(PeerId.parsePeer(v));
                    LOG.info("cluster map: this node's voter moves to {}; leadership handed to {}: {}", c.add(), v,
                            st.isOk() ? "started" : st.getErrorMsg());
                    return false;
                }
            }
            return true;
        }
        changeVoter(node, learners, c);
        return true;
    }

    /** Adds the members that are neither voters nor learners as learners, then drops the learners no longer members. */
    private void changeLearners(Node node, List<PeerId> add, List<PeerId> drop) {
        changing = true;
        CompletableFuture<Status> f = add.isEmpty() ? done(Status.OK())
                : MetaGroup.confChange(d -> node.addLearners(add, d));
        f.thenCompose(st -> drop.isEmpty() || !st.isOk() ? done(st) : MetaGroup.confChange(d -> node.removeLearners(drop, d)))
                .whenComplete((st, e) -> {
                    changing = false;
                    LOG.info("cluster map: learners {}{}: {}", add.isEmpty() ? "" : "+" + add,
                            drop.isEmpty() ? "" : " -" + drop, e != null ? e.toString() : st.isOk() ? "done"
                                    : st.getErrorMsg());
                });
    }

    /** Makes {@code c.add()} a voter (out of the learners first), then takes {@code c.remove()} out, if any. */
    private void changeVoter(Node node, List<String> learners, Placement.MetaChange c) {
        changing = true;
        PeerId in = PeerId.parsePeer(c.add());
        CompletableFuture<Status> f = learners.contains(c.add())
                ? MetaGroup.confChange(d -> node.removeLearners(List.of(in), d)) : done(Status.OK());
        f.thenCompose(st -> st.isOk() ? MetaGroup.confChange(d -> node.addPeer(in, d)) : done(st))
                .thenCompose(st -> st.isOk() && c.remove() != null
                        ? MetaGroup.confChange(d -> node.removePeer(PeerId.parsePeer(c.remove()), d)) : done(st))
                .whenComplete((st, e) -> {
                    changing = false;
                    LOG.info("cluster map: voter {}{}: {}", c.add(), c.remove() == null ? "" : " in place of " + c.remove(),
                            e != null ? e.toString() : st.isOk() ? "done" : st.getErrorMsg());
                });
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }
}
