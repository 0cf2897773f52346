package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.conf.Configuration;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.common.proto.KvProto.RecoverRegionRequest;
import io.kvraft.common.proto.KvProto.RecoverRegionResponse;
import io.kvraft.common.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Forced recovery of a region that lost a majority of its voters for good (two of three disks gone): on a surviving
 * replica, sets the region's voters to the survivors with jraft's {@link Node#resetPeers}, which takes them in memory
 * and steps down with the term up by one; the survivors then elect a leader among themselves, and its first entry
 * records the new voters in the log. The cluster map's placement then adds replicas until the region has
 * replication.factor again. Entries that only the lost replicas had are gone, acknowledged writes among them: the
 * operator asks for it ({@code recover-region --yes}) once the lost nodes are removed from the cluster map, so that
 * none can come back with its old copy and elect a leader of the old voters.
 *
 * <p>Refused with nothing changed unless every condition of {@link RecoverRegionRequest} holds: this is the one
 * operation that may lose acknowledged writes, so it never runs on a region that could still elect a leader.
 */
public final class RegionRecovery {

    private static final Logger LOG = LoggerFactory.getLogger(RegionRecovery.class);

    private final RegionHost host;
    private final Function<String, NodeState> mapState;
    private final int startupElectionTimeoutMs;

    /**
     * @param mapState                 a node's state in this node's copy of the cluster map, or null when the map does
     *                                 not list it
     * @param startupElectionTimeoutMs the election timeout a survivor campaigns after ({@link Region#campaignSoon})
     */
    public RegionRecovery(RegionHost host, Function<String, NodeState> mapState, int startupElectionTimeoutMs) {
        this.host = host;
        this.mapState = mapState;
        this.startupElectionTimeoutMs = startupElectionTimeoutMs;
    }

    public RecoverRegionResponse recover(RecoverRegionRequest req) {
        int id = req.getRegionId();
        Region region = host.region(id);
        if (region == null) {
            return failed(ErrorCode.REGION_NOT_FOUND, "no replica of region " + id + " on " + host.endpoint());
        }
        Node node = region.node();
        if (node == null) {
            return failed(ErrorCode.UNAVAILABLE, "region " + id + "'s group is not running on " + host.endpoint());
        }
        TreeSet<String> voters;
        try {
            voters = voters(req.getVotersList());
        } catch (IllegalArgumentException e) {
            return failed(ErrorCode.INVALID_ARGUMENT, e.getMessage());
        }
        String refused = refusal(region, voters, req.getConfVer());
        if (refused != null) {
            return failed(ErrorCode.INVALID_ARGUMENT, "region " + id + " not recovered: " + refused);
        }
        String notRemoved = notRemoved(region, voters);
        if (notRemoved != null) { // this node's copy of the map may lag its leader's by a moment: asked again
            return failed(ErrorCode.UNAVAILABLE, "region " + id + " not recovered: " + notRemoved);
        }
        List<String> before = new ArrayList<>(region.peers());
        Status st = node.resetPeers(new Configuration(voters.stream().map(PeerId::parsePeer).toList()));
        if (!st.isOk()) {
            return failed(ErrorCode.UNAVAILABLE, "region " + id + ": jraft did not reset its voters on "
                    + host.endpoint() + ": " + st.getErrorMsg());
        }
        // jraft tells a state machine of a configuration only through joint changes, and of this one never: a survivor
        // that ends up a follower would list the old voters until the region's next change of replicas
        region.peersCommitted(List.copyOf(voters));
        region.campaignSoon(startupElectionTimeoutMs);
        io.kvraft.common.proto.KvProto.RegionInfo now = region.info();
        LOG.warn("region {}: FORCED RECOVERY on {}: voters reset from {} to {} (term now {}, applied index {}); entries"
                + " only the lost replicas had are gone", id, host.endpoint(), before, voters, now.getTerm(),
                now.getAppliedIndex());
        return RecoverRegionResponse.newBuilder().setRegion(now).build();
    }

    /** A forced recovery's voters (host:port each), sorted; IllegalArgumentException naming a malformed one. */
    public static TreeSet<String> voters(List<String> endpoints) {
        TreeSet<String> voters = new TreeSet<>();
        for (String v : endpoints) {
            HostPort.parse(v);
            voters.add(v);
        }
        return voters;
    }

    /** Why the recovery is refused, or null. */
    private String refusal(Region region, TreeSet<String> voters, long confVer) {
        String self = host.endpoint();
        if (!voters.contains(self)) {
            return "the voters " + voters + " do not name this node " + self + ", which is asked to take them";
        }
        if (region.isLeader()) {
            return "this replica on " + self + " leads it: nothing to recover";
        }
        String leader = region.leaderHint();
        if (!leader.isEmpty()) {
            return "it has a leader, " + leader + ": nothing to recover";
        }
        if (region.mergingInto() != 0) {
            return "it is merging into region " + region.mergingInto();
        }
        if (confVer != region.confVer()) {
            return "this replica is at conf version " + region.confVer() + ", not " + confVer
                    + " as asked: its voters changed since; look again";
        }
        List<String> current = region.peers();
        for (String v : voters) {
            if (!current.contains(v)) {
                return v + " is no voter of it (its voters are " + current + ")";
            }
        }
        int majority = current.size() / 2 + 1;
        if (voters.size() >= majority) {
            return voters.size() + " of its " + current.size() + " voters " + voters + " are a majority: they elect a"
                    + " leader by themselves once they hear from each other";
        }
        return null;
    }

    /** The first voter left out whose node this node's copy of the cluster map does not list as removed, or null. */
    private String notRemoved(Region region, TreeSet<String> voters) {
        for (String lost : region.peers()) {
            if (voters.contains(lost)) {
                continue;
            }
            NodeState s = mapState.apply(lost);
            if (s != NodeState.REMOVED) {
                return "its voter " + lost + " is on a node " + host.endpoint() + "'s copy of the cluster map lists as "
                        + (s == null ? "unknown" : s.name().toLowerCase(java.util.Locale.ROOT))
                        + ", not removed: remove it first (node remove " + lost + " --force), so that it cannot come"
                        + " back with its copy and elect a leader of the old voters";
            }
        }
        return null;
    }

    private static RecoverRegionResponse failed(ErrorCode code, String detail) {
        return RecoverRegionResponse.newBuilder().setError(Errors.of(code, detail)).build();
    }
}
