package io.kvraft.client.admin;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * A region as one node sees it (or as the cluster map records it: then with no leader, term, applied index or role).
 * Equal when every field is, the keys by content; the arrays are not copied.
 *
 * @param id           unique in the cluster, never used again once the region is merged away
 * @param startKey     inclusive; empty = -inf
 * @param endKey       exclusive; empty = +inf
 * @param epoch        bumped by every split and merge of the region
 * @param peers        the voters, host:port
 * @param leader       host:port as the node sees it; empty when unknown
 * @param term         the node's term for the region
 * @param appliedIndex the node's applied index
 * @param role         the node's role: LEADER, FOLLOWER, CANDIDATE, ...; empty in the cluster map's record
 * @param mergingInto  a merge into that region is under way (0: none): this region takes no requests meanwhile
 * @param mergeReady   merging: the node's replica of this region is final and durable
 * @param confVer      bumped by every change of the voters (0: not recorded yet)
 * @param learners     host:port: learners in the node's configuration of the region, the replicas a move catches up
 */
public record RegionInfo(int id, byte[] startKey, byte[] endKey, long epoch, List<String> peers, String leader,
                         long term, long appliedIndex, String role, int mergingInto, boolean mergeReady, long confVer,
                         List<String> learners) {

    public RegionInfo {
        peers = List.copyOf(peers);
        learners = List.copyOf(learners);
    }

    /** This region as led by {@code newLeader}, all else the same. */
    public RegionInfo withLeader(String newLeader) {
        return new RegionInfo(id, startKey, endKey, epoch, peers, newLeader, term, appliedIndex, role, mergingInto,
                mergeReady, confVer, learners);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RegionInfo r && id == r.id && Arrays.equals(startKey, r.startKey)
                && Arrays.equals(endKey, r.endKey) && epoch == r.epoch && peers.equals(r.peers)
                && leader.equals(r.leader) && term == r.term && appliedIndex == r.appliedIndex && role.equals(r.role)
                && mergingInto == r.mergingInto && mergeReady == r.mergeReady && confVer == r.confVer
                && learners.equals(r.learners);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * (31 * id + Arrays.hashCode(startKey)) + Long.hashCode(epoch)) + peers.hashCode();
    }

    @Override
    public String toString() {
        HexFormat hex = HexFormat.of();
        return "RegionInfo{" + id + " [" + (startKey.length == 0 ? "-inf" : hex.formatHex(startKey)) + ", "
                + (endKey.length == 0 ? "+inf" : hex.formatHex(endKey)) + ") epoch " + epoch + ", conf " + confVer
                + ", peers " + peers + (learners.isEmpty() ? "" : ", learners " + learners) + ", leader "
                + (leader.isEmpty() ? "(none)" : leader) + ", term " + term + ", applied " + appliedIndex
                + (role.isEmpty() ? "" : ", " + role) + (mergingInto == 0 ? "" : ", merging into " + mergingInto) + "}";
    }
}
