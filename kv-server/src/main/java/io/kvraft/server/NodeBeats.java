package io.kvraft.server;

import io.kvraft.server.raft.Processors;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.raft.HeartbeatBursts;
import io.kvraft.server.raft.QuietRegions;
import io.kvraft.server.region.Region;
import io.kvraft.server.store.WriteRoom;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcServer;
import io.kvraft.common.proto.KvProto.NodeBeatRequest;
import io.kvraft.common.proto.KvProto.NodeBeatResponse;
import io.kvraft.common.proto.KvProto.RegionTerm;
import io.kvraft.common.rpc.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Node heartbeats ({@code raft.nodeHeartbeats}): once per heartbeat interval this node sends each peer node one
 * message listing the regions it leads that the peer holds a replica of, with their terms; a peer whose replica
 * follows this node in that term records it ({@link QuietRegions.Replica#vouched}) and says so in its answer, which
 * this node records per follower ({@link QuietRegions.Replica#acked}). That keeps every region two nodes share alive
 * with one message per interval, where jraft sends one per region and follower; jraft's own heartbeats of a region
 * that is quiet then go {@link QuietRegions#QUIET_STRETCH} times less often.
 * <p>
 * What jraft's heartbeats carried is sent on purpose instead: when a quiet leader's committed index moved since the
 * last round, and when a follower did not answer as its follower (restarted, or behind by a term), the leader sends its
 * waiting jraft heartbeats of that region at once ({@link HeartbeatBursts#sendNow}): they carry its term and committed
 * index, and jraft probes a follower whose answer shows it behind. A peer whose heap or disk is full says so in its
 * answer ({@link WriteRoom}): it cannot refuse what its leaders append, so they refuse writes that add data for it.
 * Written by hand: jraft has no coalesced heartbeats.
 */
public final class NodeBeats implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(NodeBeats.class);

    private final RegionHost host;
    private final Transport transport;
    private final long intervalMs;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kv-node-beats");
        t.setDaemon(true);
        return t;
    });
    /** Regions (by id) whose followers did not all answer as followers in the last round: nudged in the next. */
    private final Set<Integer> unanswered = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final WriteRoom room;

    /** @param room told of the peers whose heap or disk is full, which tell it in their answers */
    public NodeBeats(RegionHost host, Transport transport, long intervalMs, WriteRoom room) {
        this.host = host;
        this.transport = transport;
        this.intervalMs = intervalMs;
        this.room = room;
    }

    /** Registers the receiving side on the node's RPC server. */
    public void register(RpcServer server) {
        server.registerProcessor(Processors.direct(NodeBeatRequest.class, this::handle));
    }

    /** Starts the rounds, on the heartbeat grid of the guards' put-off timers ({@link QuietRegions#onGrid}). */
    public void start() {
        long interval = TimeUnit.MILLISECONDS.toNanos(intervalMs);
        timer.scheduleAtFixedRate(() -> {
            try {
                round();
            } catch (RuntimeException e) {
                LOG.warn("node heartbeat round failed: {}", e.toString());
            }
        }, QuietRegions.onGrid(System.nanoTime(), interval, interval), interval, TimeUnit.NANOSECONDS);
    }

    /** One round: a message to each peer node that holds a replica of a region this node leads. */
    void round() {
        String self = host.endpoint();
        Map<String, NodeBeatRequest.Builder> out = new HashMap<>();
        long now = System.nanoTime();
        for (Region r : host.regions()) {
            QuietRegions.Replica q = r.quiet();
            Node n = r.node();
            if (q == null || n == null) {
                continue;
            }
            if (!r.isLeader()) {
                q.notLeading();
                continue;
            }
            List<String> others = new ArrayList<>();
            for (PeerId p : n.listPeers()) {
                String ep = p.getEndpoint().toString();
                if (!ep.equals(self)) {
                    others.add(ep);
                }
            }
            boolean replicated = r.replicators().containsAll(others);
            for (PeerId p : n.listLearners()) {
                replicated &= r.replicators().contains(p.getEndpoint().toString());
            }
            boolean committedMoved = q.leading(others, replicated, n.getLastCommittedIndex(), now);
            if (committedMoved || unanswered.remove(r.id())) {
                q.sendHeartbeatsNow();
            }
            RegionTerm rt = RegionTerm.newBuilder().setRegion(r.id()).setTerm(r.term()).build();
            for (String ep : others) {
                out.computeIfAbsent(ep, e -> NodeBeatRequest.newBuilder().setFrom(self)).addRegions(rt);
            }
        }
        for (Map.Entry<String, NodeBeatRequest.Builder> e : out.entrySet()) {
            send(e.getKey(), e.getValue().build());
        }
    }

    private void send(String peer, NodeBeatRequest beat) {
        long sent = System.nanoTime();
        transport.<NodeBeatResponse>call(peer, beat, Math.max(1, intervalMs)).whenComplete((resp, err) -> {
            if (err != null) {
                return; // the peer's acks age; the guards then let jraft decide
            }
            room.peerSays(peer, resp.getStoreFull());
            Set<Integer> followed = new HashSet<>(resp.getFollowedList());
            for (RegionTerm rt : beat.getRegionsList()) {
                Region r = host.region(rt.getRegion());
                QuietRegions.Replica q = r == null ? null : r.quiet();
                if (q == null) {
                    continue;
                }
                if (followed.contains(rt.getRegion())) {
                    q.acked(peer, sent);
                } else {
                    unanswered.add(rt.getRegion());
                }
            }
        });
    }

    /** A peer's beat: each region whose replica here follows the sender in the beat's term is vouched for. */
    private void handle(RpcContext ctx, NodeBeatRequest beat) {
        NodeBeatResponse.Builder resp = NodeBeatResponse.newBuilder().setStoreFull(room.localRefusal());
        long now = System.nanoTime();
        for (RegionTerm rt : beat.getRegionsList()) {
            Region r = host.region(rt.getRegion());
            QuietRegions.Replica q = r == null ? null : r.quiet();
            if (q == null || r.isLeader() || r.term() != rt.getTerm() || !beat.getFrom().equals(r.leaderHint())) {
                continue;
            }
            q.vouched(beat.getFrom(), rt.getTerm(), now);
            resp.addFollowed(rt.getRegion());
        }
        ctx.sendResponse(resp.build());
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
